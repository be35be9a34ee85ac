"""Exports of match lists: CSV (UTF-8 with BOM, so Excel reads the Chinese) and JSON.

CSV cells that a spreadsheet would run as a formula are neutralised: a pirate page's
title must not become one (CSV injection).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from tracker.common.records import JSONObject, Match
from tracker.common.timefmt import iso_utc

LIST_FORMATS = ("csv", "json")

# Columns of the CSV export, in order (the JSON export uses the same keys).
LIST_COLUMNS = (
    "match_id",
    "verdict",
    "score",
    "coverage",
    "mother_coverage",
    "mother_id",
    "mother_title",
    "suspect_id",
    "suspect_title",
    "suspect_url",
    "domain",
    "passages",
    "engine",
    "created_at",
    "updated_at",
    "note",
    # The book the work is a chapter of (issue #36; empty for a work in no book), as
    # ``check --json`` names it: set on ``Match.book`` by whoever exports.
    "book_id",
    "book_title",
    "chapter",
    "chapter_index",
)


def match_row(m: Match) -> JSONObject:
    """One match as a flat row of the list exports (the keys are ``LIST_COLUMNS``)."""
    return {
        "match_id": m.id,
        "verdict": m.verdict,
        "score": round(float(m.score), 4),
        "coverage": round(float(m.coverage), 4),
        "mother_coverage": round(float(m.mother_coverage), 4),
        "mother_id": m.mother_id,
        "mother_title": m.mother_title,
        "suspect_id": m.suspect_id,
        "suspect_title": m.suspect_title,
        "suspect_url": m.suspect_url,
        "domain": m.domain,
        "passages": len(m.passages),
        "engine": m.engine,
        "created_at": iso_utc(m.created_at),
        "updated_at": iso_utc(m.updated_at),
        "note": m.note,
        "book_id": m.book.book_id if m.book is not None else "",
        "book_title": m.book.book_title if m.book is not None else "",
        "chapter": m.book.chapter if m.book is not None else "",
        "chapter_index": m.book.chapter_index if m.book is not None else None,
    }


def _csv_cell(value: Any) -> Any:
    # A cell starting with = + - @ (or tab/CR) runs as a formula in Excel/LibreOffice:
    # a pirate page title must not become one (CSV injection).
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def render_match_list(matches: Iterable[Match], fmt: str) -> bytes:
    """A (filtered) list of matches as ``csv`` (UTF-8 with BOM, so Excel reads the
    Chinese) or ``json`` bytes."""
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\r\n")
        writer.writerow(LIST_COLUMNS)
        for m in matches:
            row = match_row(m)
            writer.writerow([_csv_cell(row[c]) for c in LIST_COLUMNS])
        return ("\ufeff" + buf.getvalue()).encode("utf-8", errors="replace")
    if fmt == "json":
        rows = [match_row(m) for m in matches]
        doc = {"generated_at": iso_utc(datetime.now(UTC)), "count": len(rows), "matches": rows}
        return json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8", errors="replace")
    raise ValueError(f"list format must be one of {', '.join(LIST_FORMATS)}, got {fmt!r}")
