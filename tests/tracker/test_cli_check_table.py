"""`yinji check URL` (issue #23 leftovers): each result is headed by the page's URL and
title, not a 40-hex suspect id; a refused private address names the switch that allows
it (YINJI_ALLOW_PRIVATE_URLS)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from casekit import PageServer, html
from click.testing import CliRunner
from textgen import work

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings

TEXT = work(5150, 30)


@pytest.mark.slow
def test_check_url_table_is_headed_by_url_and_title(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracker.cli import main

    data = tmp_path / "d"
    with Library.open(Settings(data_dir=data)) as lib:
        lib.ingest([Document(id="w1", text=TEXT, title="原作")])
    monkeypatch.setenv("YINJI_CRAWL_MIN_INTERVAL", "0")
    with PageServer() as server:
        server.pages["/p.html"] = (200, html("盗版第一章", TEXT[:800]), "text/html")
        url = server.url("/p.html")
        refused = CliRunner().invoke(main, ["--data-dir", str(data), "check", url])
        assert "YINJI_ALLOW_PRIVATE_URLS=1" in refused.output
        monkeypatch.setenv("YINJI_ALLOW_PRIVATE_URLS", "1")
        r = CliRunner().invoke(main, ["--data-dir", str(data), "check", url])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{url} — 盗版第一章: 1 match(es)"), lines[0]
    assert not re.match(r"^[0-9a-f]{40}", lines[0])
    assert re.match(r"^  suspect id: [0-9a-f]{40}$", lines[1])


def test_a_mistyped_data_dir_creates_nothing(tmp_path: Path) -> None:
    from tracker.cli import main

    typo = tmp_path / "yinji-dat"
    for args in (["case", "list"], ["case", "show", "c1"], ["index", "stats"], ["list"]):
        r = CliRunner().invoke(main, ["--data-dir", str(typo), *args])
        assert r.exit_code != 0 and "no data folder at" in r.output, (args, r.output)
        assert not typo.exists(), args
