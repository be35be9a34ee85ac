"""A discovery crawl killed with SIGKILL after pages arrived but before they were
checked, and restarted: the stored pages are checked, none is fetched again, and no
frontier entry is lost. The crawl runs in a subprocess whose check blocks, so the
pages it fetched wait (in Redis) exactly where a kill would catch them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from discokit import LocalServer
from textgen import work

from tracker.discovery.frontier import Frontier, FrontierItem
from tracker.discovery.keys import DiscoveryKeys
from tracker.library import Library
from tracker.plumbing.config import Settings

CRAWL = r"""
import sys, time
from tracker.plumbing.config import Settings
from tracker.crawler import Crawler, CrawlerConfig
from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.run import DiscoveryRun, RunOptions
from tracker.library import Library

with Library.open(Settings.from_env()) as lib:
    if sys.argv[1] == "block":  # the check never ends: fetched pages wait to be checked
        lib.check_page = lambda *a, **k: time.sleep(600)
    crawler = Crawler(CrawlerConfig(allow_private=True, min_interval=0.0, retries=0))
    run = DiscoveryRun(lib, RunOptions(max_pages=100, concurrency=4, interval=0.0,
        search=False, sites=False), providers=[], crawler=crawler,
        keys=DiscoveryKeys(lib.settings.redis_prefix, "kill"),
        on_page=lambda r: print("page", r.url, r.checked, flush=True))
    run.crawl()
    print("done", run.report.fetched, run.report.checked, flush=True)
"""


def _page(n: int) -> bytes:
    text = work(900 + n, 12)
    paras = "".join(f"<p>{p}。</p>" for p in text.split("。") if p)
    head = f"<head><meta charset='utf-8'><title>第{n}章</title></head>"
    return f"<html>{head}<body>{paras}</body></html>".encode()


def _route(path: str) -> tuple[int, dict[str, str], bytes]:
    if path == "/robots.txt":
        return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n"
    if path.startswith("/p/"):
        return 200, {"Content-Type": "text/html; charset=utf-8"}, _page(int(path[3:-5]))
    return 404, {}, b""


@pytest.mark.slow
def test_killed_crawl_checks_stored_pages_and_fetches_nothing_twice(tmp_path, data_dir):
    env = dict(os.environ, YINJI_DATA_DIR=str(data_dir), YINJI_SCREENSHOTS="off")
    servers = [LocalServer(_route).__enter__() for _ in range(4)]
    try:
        with Library.open(Settings.from_env(data_dir)) as lib:  # owns the embedded Redis
            frontier = Frontier(lib.redis, DiscoveryKeys(lib.settings.redis_prefix, "kill"))
            urls = [f"{s.base}/p/{n}.html" for n, s in enumerate(servers)]
            for url in urls:
                assert frontier.add(FrontierItem(url=url, source="test", priority=0))
            first = subprocess.Popen(
                [sys.executable, "-c", CRAWL, "block"],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            try:
                deadline = time.monotonic() + 60
                while frontier.stats()["stored"] < len(urls):  # every body arrived
                    assert first.poll() is None, "the crawl ended before the kill"
                    assert time.monotonic() < deadline, frontier.stats()
                    time.sleep(0.05)
            finally:
                os.killpg(first.pid, signal.SIGKILL)
                first.wait(10)
            at_kill = frontier.stats()
            assert at_kill["leased"] == len(urls) and at_kill.get("done", 0) == 0
            fetched_before = sum(len(s.paths()) for s in servers)
            # The dead worker's leases run out (5 minutes by default: moved to now).
            leased = lib.redis.zrange(frontier.k("leased"), 0, -1)
            lib.redis.zadd(frontier.k("leased"), dict.fromkeys(leased, 0))
            second = subprocess.run(
                [sys.executable, "-c", CRAWL, "check"],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert second.returncode == 0, second.stderr
            checked = {
                line.split()[1] for line in second.stdout.splitlines() if line.endswith(" True")
            }
            after = frontier.stats()
    finally:
        for s in servers:
            s.__exit__(None, None, None)
    assert checked == set(urls), second.stdout  # every stored page was checked
    pages = [p for s in servers for p in s.paths() if p != "/robots.txt"]
    assert (
        len(pages)
        == len(urls)
        == len(set((s.port, p) for s in servers for p in s.paths() if p != "/robots.txt"))
    )
    assert sum(len(s.paths()) for s in servers) == fetched_before  # nothing fetched again
    assert after["stored"] == 0 and after["leased"] == 0 and after["queued"] == 0
    assert after.get("recovered", 0) == len(urls)
