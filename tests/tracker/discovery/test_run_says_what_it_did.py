"""A discovery run that says what it did (#38): failures grouped by kind with counts,
each source's error count equal to its lines; a run that does nothing says why;
providers that dribble, nest 100,000 deep or hold a lone surrogate are one error line
each; refused URLs spend no page; a page of 100,000 links is read within bounds; a
Legado site that keeps failing is disabled, and enabled again by hand."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from discokit import FakePirateSite, LocalServer
from legadokit import json_source
from textgen import work

from tracker.crawler import Crawler, CrawlerConfig
from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.legado.importer import import_text
from tracker.discovery.providers import Searcher, SearxngProvider
from tracker.discovery.report import RunReport, error_kind
from tracker.discovery.run import LINK_FARM, MAX_LINKS, DiscoveryRun, RunOptions, read_to_check
from tracker.discovery.sites import DISABLE_AFTER, SiteRegistry, find_search, load_profiles
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings

TEXT = work(505, 60)


def test_errors_are_grouped_by_kind_with_counts():
    report = RunReport(id="r", started_at="t")
    for i in range(30):
        report.fail("searxng", f"result is not an http(s) URL: 'ftp://x{i}.test/file'")
    report.fail("site:a.test", "http://a.test/s?q=1: HTTP 500 Internal Server Error")
    report.fail("brave", "HTTP 503")
    lines = report.summary_lines()
    errors = [line for line in lines if line.startswith("  error")]
    assert len(errors) == 3  # one line per kind, the useful two still in sight
    assert errors[0].startswith("  error (×30, e.g.): searxng: result is not an http(s) URL")
    assert any("HTTP 500" in line for line in errors) and any("503" in line for line in errors)
    assert report.sources["searxng"].errors == 30  # a source's count is its lines
    assert error_kind("x: 'ftp://a/1' 《书》 12") == error_kind("x: 'ftp://b/2' 《别》 7")
    merged = RunReport.from_dict(report.to_dict())
    merged.add(report)
    assert merged.error_groups()[0].count == 60 and merged.sources["searxng"].errors == 60


def test_a_page_of_100000_links_is_read_within_bounds():
    html = "<html><body>" + "".join(f'<a href="/p/{i}.html">第{i}章</a>' for i in range(100_000))
    page = read_to_check(html.encode(), "text/html", "text/html", "http://x.test/")
    assert len(page.links or []) == MAX_LINKS and page.text == ""  # a list of links
    few = "<html><body><article>" + "他在灯下翻看旧信。" * 30 + "</article></body></html>"
    assert LINK_FARM > 0 and read_to_check(few.encode(), None, "text/html", "http://x/").text


class _Raw:
    """A server answering every request with ``answer(handler)`` (raw socket writes)."""

    def __init__(self, answer) -> None:  # type: ignore[no-untyped-def]
        self.answer = answer

    def __enter__(self) -> _Raw:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()

        def serve() -> None:
            self.sock.settimeout(0.2)
            while not self.stop.is_set():
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    continue
                threading.Thread(target=self._one, args=(conn,), daemon=True).start()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        return self

    def _one(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)
            self.answer(conn, self.stop)
        except OSError:
            pass
        finally:
            conn.close()

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(timeout=5)


def _dribble(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
    for byte in b'{"results": [' + b" " * 1000:
        if stop.is_set():
            return
        conn.sendall(bytes([byte]))
        time.sleep(0.2)


def _json_answer(body: bytes):  # type: ignore[no-untyped-def]
    def answer(conn: socket.socket, stop: threading.Event) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        conn.sendall(head.encode() + b"\r\n\r\n" + body)

    return answer


@pytest.mark.slow
def test_hostile_provider_answers_are_one_error_line_each(tmp_path):
    deep = b"[" * 100_000 + b"]" * 100_000
    surrogate = b'{"results": [{"url": "http://a.test/\\ud800", "title": "x", "content": ""}]}'
    with (
        _Raw(_dribble) as slow,
        _Raw(_json_answer(deep)) as nested,
        _Raw(_json_answer(surrogate)) as lone,
        Library.open(Settings.from_env(tmp_path / "data")) as lib,
    ):
        dribbler = SearxngProvider(f"http://127.0.0.1:{slow.port}/s", timeout=1.0)
        searcher = Searcher([dribbler], lib.redis, DiscoveryKeys("t"), quotas={"searxng": 99})
        started = time.monotonic()
        out = searcher.search(dribbler, "q")
        # the whole request, not each read (the dribble lasts 200 s; a margin for load)
        assert time.monotonic() - started < 20
        assert "no answer within 1 s" in out.error or "no whole answer" in out.error
        for server, why in ((nested, "nested too deep"), (lone, "lone surrogate")):
            provider = SearxngProvider(f"http://127.0.0.1:{server.port}/s", timeout=5.0)
            outcome = searcher.search(provider, f"q{server.port}")
            assert why in outcome.error and outcome.hits == []


@pytest.mark.slow
def test_refused_urls_spend_no_page_and_a_second_run_says_why_it_did_nothing(tmp_path):
    good = "".join(f"<p>{s}。</p>" for s in TEXT[:1500].split("。") if s)
    page = f"<html><head><meta charset='utf-8'></head><body><article>{good}</article></body></html>"

    def route(path: str):  # type: ignore[no-untyped-def]
        return 200, {"Content-Type": "text/html; charset=utf-8"}, page.encode()

    with LocalServer(route) as web, FakePirateSite({"坏站书名": ["无关。" * 40]}) as pirate:
        ports = {web.port, pirate.server.port}
        crawler = Crawler(
            CrawlerConfig(
                allow_address=lambda ip, port: str(ip) == "127.0.0.1" and port in ports,
                min_interval=0.0,
                retries=0,
            )
        )

        class Hits:
            name = "fake"

            def search(self, query: str, *, count: int = 10):  # type: ignore[no-untyped-def]
                from tracker.discovery.providers import SearchHit

                urls = [f"http://10.0.0.{i}/x.html" for i in range(1, 6)]
                urls.append(f"{web.base}/copy.html")
                return [SearchHit(u, "t", "", "fake", query) for u in urls]

        with Library.open(Settings.from_env(tmp_path / "data")) as lib:
            lib.ingest([Document(id="w", title="坏站书名", text=TEXT)])
            SiteRegistry(lib.store).add(find_search(crawler, pirate.base + "/", load_profiles()))
            options = RunOptions(max_queries=1, max_pages=2, interval=0.0, read_processes=0)
            first = DiscoveryRun(lib, options, providers=[Hits()], crawler=crawler).run()
            second = DiscoveryRun(lib, options, providers=[Hits()], crawler=crawler).run()
    # Five refused URLs, then the copy and the site search within a budget of two pages.
    assert first.refused == 5 and first.fetched == 2
    assert {m["url"] for m in first.matches} == {f"{web.base}/copy.html"}
    assert "10.0.0.1" in "\n".join(first.errors)
    # The same day again: nothing to do, and why.
    assert second.fetched == 0
    assert "today's query budget is spent" in second.idle
    assert "site searches were already made" in second.idle
    assert any(line.startswith("  did nothing: ") for line in second.summary_lines())


@pytest.mark.slow
def test_a_legado_site_that_keeps_failing_is_disabled_then_enabled_again(tmp_path):
    state = {"down": True}

    def route(path: str):  # type: ignore[no-untyped-def]
        if state["down"]:
            return 500, {"Content-Type": "text/plain"}, b"down"
        return 200, {"Content-Type": "application/json"}, b'{"data": {"list": []}}'

    with LocalServer(route) as down:
        crawler = Crawler(
            CrawlerConfig(
                allow_address=lambda ip, port: str(ip) == "127.0.0.1" and port == down.port,
                min_interval=0.0,
                retries=0,
                respect_robots=False,
            )
        )
        with Library.open(Settings.from_env(tmp_path / "data")) as lib:
            docs = [
                Document(id=f"b{i}", title=f"《书{i}》第一章", text=work(600 + i, 20))
                for i in range(DISABLE_AFTER + 1)
            ]
            lib.ingest(docs)
            import_text(lib, f"[{__import__('json').dumps(json_source(down.base))}]", "f.json")
            report = DiscoveryRun(
                lib,
                RunOptions(interval=0.0, read_processes=0, search=False, max_pages=50),
                providers=[],
                crawler=crawler,
            ).run()
            registry = SiteRegistry(lib.store)
            site = registry.list()[0]
            assert site.disabled and site.health["failures"] == DISABLE_AFTER
            assert "HTTP 500" in site.health["error"]
            # The fourth book was not searched: the site was disabled after three.
            assert sum("search for" in e for e in report.errors) == DISABLE_AFTER
            # The next run tries it on one book; it answers again: enabled by the success.
            state["down"] = False
            DiscoveryRun(
                lib,
                RunOptions(interval=0.0, read_processes=0, search=False, max_pages=50),
                providers=[],
                crawler=crawler,
            ).run()
            again = SiteRegistry(lib.store).list()[0]
            assert not again.disabled and again.health["ok"] is True
            assert again.health["failures"] == 0
            registry.set_enabled(site.host, False)  # by hand: no run tries it
            assert registry.list()[0].health["by_hand"] is True
            registry.set_enabled(site.host, True)
            assert not registry.list()[0].disabled


@pytest.mark.slow
def test_a_crawl_that_ends_with_urls_leased_elsewhere_says_so(tmp_path):
    from tracker.discovery.frontier import FrontierItem

    with Library.open(Settings.from_env(tmp_path / "data")) as lib:
        lib.ingest([Document(id="w", title="坏站书名", text=TEXT)])
        notes: list[str] = []
        run = DiscoveryRun(
            lib,
            RunOptions(interval=0.0, read_processes=0),
            providers=[],
            crawler=Crawler(CrawlerConfig(retries=0, total_timeout=2)),
            on_note=notes.append,
        )
        run.frontier.lease = 4.0  # a killed process's lease, short for the test
        run.frontier.add(FrontierItem(url="http://elsewhere.invalid/p.html", source="crawl"))
        assert run.frontier.claim().item is not None  # the other (killed) process held it
        run.crawl()
        report = run.finish()
    assert len(notes) == 1 and "leased by another crawl process" in notes[0]
    assert any("note: waiting up to" in line for line in report.summary_lines())
    assert "elsewhere.invalid" in "\n".join(report.errors)  # fetched once the lease ran out


def test_imported_sites_take_at_most_their_share_of_the_page_budget():
    from tracker.discovery.fetcher import PageBudget
    from tracker.discovery.legado.stage import ShareOfBudget

    run_budget = PageBudget(10)
    share = ShareOfBudget(run_budget, 5)
    assert [share.take() for _ in range(7)] == [True] * 5 + [False] * 2
    share.give_back()  # a refused URL: its page back to both
    assert share.take() and not share.take()
    assert [run_budget.take() for _ in range(6)] == [True] * 5 + [False]  # the crawl's half
