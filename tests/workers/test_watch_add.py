"""`yinji watch add URL [--book]` crawls once at once (a local pirate site) and says
when the next crawl runs and what runs it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from casekit import PageServer, html
from click.testing import CliRunner
from textgen import work

from tracker.cases.watching import next_daily_run
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings

CH = {n: work(700 + n, 30) for n in (1, 2)}


def test_next_daily_run() -> None:
    now = datetime(2026, 11, 26, 20, 0, tzinfo=UTC)
    assert next_daily_run((3, 0), "UTC", now) == datetime(2026, 11, 27, 3, 0, tzinfo=UTC)
    assert next_daily_run((21, 30), "UTC", now) == datetime(2026, 11, 26, 21, 30, tzinfo=UTC)
    # 03:00 in Shanghai (UTC+8) is 19:00 UTC: already past at 20:00 UTC.
    assert next_daily_run((3, 0), "Asia/Shanghai", now) == datetime(2026, 11, 27, 19, 0, tzinfo=UTC)


@pytest.mark.slow
def test_watch_add_book_crawls_now_and_says_when_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracker.cli import main

    data = tmp_path / "d"
    with Library.open(Settings(data_dir=data)) as lib:
        lib.ingest([Document(id=f"ch-{n}", text=t, title=f"第{n}章") for n, t in CH.items()])
    monkeypatch.setenv("YINJI_ALLOW_PRIVATE_URLS", "1")
    monkeypatch.setenv("YINJI_CRAWL_MIN_INTERVAL", "0")
    monkeypatch.setenv("YINJI_RECRAWL_AT", "03:00")
    base = ["--data-dir", str(data)]
    with PageServer() as server:
        links = "".join(f"<a href='/b/{n}.html'>第{n}章</a>" for n in (2, 1))
        server.pages["/b/index.html"] = (200, html("书", "目录", extra=links), "text/html")
        for n, text in CH.items():
            server.pages[f"/b/{n}.html"] = (200, html(f"第{n}章", text), "text/html")
        server.pages["/page.html"] = (200, html("一页", CH[1][:500]), "text/html")
        r = CliRunner().invoke(main, [*base, "watch", "add", "--book", server.url("/b/index.html")])
        assert r.exit_code == 0, r.output
        assert "crawled now: 3 page(s), 2 match(es); case c" in r.output
        assert "next crawl:" in r.output and "03:00 UTC" in r.output and "yinji beat" in r.output
        page = CliRunner().invoke(main, [*base, "watch", "add", server.url("/page.html")])
        assert page.exit_code == 0 and "crawled now: 1 page(s), 1 match(es)" in page.output
        gone = CliRunner().invoke(main, [*base, "watch", "add", server.url("/nothing.html")])
        assert gone.exit_code == 0 and "not fetched:" in gone.output and "404" in gone.output
    listed = CliRunner().invoke(main, [*base, "watch", "list", "--json"])
    rows = {json.loads(line)["url"]: json.loads(line) for line in listed.stdout.splitlines()}
    assert rows[server.url("/b/index.html")]["last_crawled_at"] is not None
    assert rows[server.url("/nothing.html")]["last_crawled_at"] is None
    cases = CliRunner().invoke(main, [*base, "case", "list", "--json", "--no-sync"])
    (book_case,) = json.loads(cases.stdout)
    assert book_case["kind"] == "book" and len(book_case["urls"]) == 2
