"""Bad input never sinks a discovery run: hostile and broken pages, redirect loops, huge
pages, wrong charsets, answers that are not JSON, providers that fail or throttle, a site
whose layout changed, and URLs the SSRF guard refuses. Each is one clear error in the
run's summary; the copy among them is still found."""

from __future__ import annotations

import pytest
from discokit import FakePirateSite, FakeSearxng, LocalServer
from textgen import work

from tracker.crawler import Crawler, CrawlerConfig
from tracker.discovery.providers import BraveProvider, SearxngProvider
from tracker.discovery.run import DiscoveryRun, RunOptions
from tracker.discovery.sites import SiteRegistry, find_search, load_profiles
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings

TEXT = work(404, 60)


def _page(body: str, charset: str = "utf-8", declared: str | None = None) -> bytes:
    head = f"<meta charset='{declared or charset}'>"
    return f"<html><head>{head}</head><body><article>{body}</article></body></html>".encode(charset)


@pytest.mark.slow
def test_a_run_survives_every_kind_of_bad_input(tmp_path):
    good = "".join(f"<p>{s}。</p>" for s in TEXT[:1500].split("。") if s)
    pages = {
        "/good.html": (200, {"Content-Type": "text/html"}, _page(good)),
        "/loop": (302, {"Location": "/loop2"}, b""),
        "/loop2": (302, {"Location": "/loop"}, b""),
        "/huge.html": (200, {"Content-Type": "text/html"}, b"<p>" + "大".encode() * 400_000),
        "/binary.html": (200, {"Content-Type": "text/html"}, bytes(range(256)) * 200),
        "/nested.html": (200, {"Content-Type": "text/html"}, b"<div>" * 100_000),
        "/gone.html": (404, {}, b"gone"),
        # GBK bytes declared as UTF-8: decoded by what they are, or an error, never a crash.
        "/wrong-charset.html": (
            200,
            {"Content-Type": "text/html; charset=utf-8"},
            _page(good, "gbk", declared="utf-8"),
        ),
    }

    def route(path: str):
        return pages.get(path, (404, {}, b"not found"))

    def brave_route(path: str):
        return 503, {}, b"unavailable"

    with (
        LocalServer(route) as web,
        LocalServer(brave_route) as brave_srv,
        FakeSearxng() as searx,
        FakePirateSite({"坏站书名": ["无关。" * 40]}) as pirate,
    ):
        ports = {web.port, searx.server.port, pirate.server.port}
        config = CrawlerConfig(
            allow_address=lambda ip, port: str(ip) == "127.0.0.1" and port in ports,
            max_bytes=512 * 1024,
            min_interval=0.0,
            total_timeout=10,
            retries=0,
        )
        crawler = Crawler(config)
        urls = [
            "ftp://x.test/file",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.1.2.3/internal.html",
        ] + [web.base + p for p in pages if p != "/loop2"]  # 10: what one answer holds
        searx.index = [(u, "t", TEXT[:200]) for u in urls]
        settings = Settings.from_env(tmp_path / "data")
        with Library.open(settings) as lib:
            lib.ingest([Document(id="w", title="坏站书名", text=TEXT)])
            SiteRegistry(lib.store).add(find_search(crawler, pirate.base + "/", load_profiles()))
            pirate.layout_changed = True
            providers = [
                SearxngProvider(searx.url),
                BraveProvider("key", f"{brave_srv.base}/res/v1/web/search"),
            ]
            run = DiscoveryRun(
                lib,
                RunOptions(max_queries=2, interval=0.0, concurrency=3),
                providers=providers,
                crawler=crawler,
            )
            report = run.run()
    errors = "\n".join(report.errors)
    summary = "\n".join(report.summary_lines())
    # The copy is still found, once (the wrong-charset copy is the same page: a duplicate).
    assert {m["url"] for m in report.matches} >= {web.base + "/good.html"}
    assert report.source("searxng").matched >= 1
    # One clear error per bad input, naming it.
    assert "brave: HTTP 503" in errors
    assert "redirect" in errors.lower() and "/loop" in errors
    assert "/huge.html" in errors
    assert "/gone.html" in errors and "404" in errors
    assert "169.254.169.254" in errors and "10.1.2.3" in errors
    assert "not an http(s) URL: 'ftp://x.test/file'" in errors
    assert "profile no" in errors and "longer matches" in errors
    assert "error:" in summary
    # Nothing was fetched from the refused addresses, and no exception escaped.
    assert report.finished_at
    assert "/wrong-charset.html" in web.paths()
