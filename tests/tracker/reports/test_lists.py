"""The match-list exports (tracker.reports.lists)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tracker.library import Library
from tracker.reports import render_match_list
from tracker.store import MatchQuery, Suspect

from .helpers import HOSTILE, MOTHER


def test_match_list_csv_and_json(library: Library, match_id: str) -> None:
    library.check_suspect(
        Suspect(
            id="formula", text=MOTHER[:800], title="=cmd|' /C calc'!A0", url="http://f.example/"
        )
    )
    matches = [
        m
        for m in library.store.query_matches(MatchQuery(limit=100))
        if m.suspect_id in ("pirate-1", "formula")
    ]
    body = render_match_list(matches, "csv")
    assert body.startswith("\ufeff".encode())
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))
    assert {r["suspect_id"] for r in rows} == {"pirate-1", "formula"}
    formula = next(r for r in rows if r["suspect_id"] == "formula")
    assert formula["suspect_title"].startswith("'=")
    hostile = next(r for r in rows if r["suspect_id"] == "pirate-1")
    assert hostile["verdict"] == "confirmed" and hostile["suspect_title"] == f"盗版{HOSTILE}"
    data = json.loads(render_match_list(matches, "json"))
    assert data["count"] == len(matches) and data["matches"][0]["match_id"]
    with pytest.raises(ValueError):
        render_match_list(matches, "xml")
