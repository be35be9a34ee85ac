"""URL normalisation, trap rules and the Redis frontier (politeness, leases, restarts)."""

from __future__ import annotations

import pytest

from tracker.discovery.frontier import Frontier, FrontierItem
from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.urls import TrapDetector, host_of, normalize_url, url_pattern


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "HTTP://Example.COM:80/a/../b/./c.html?utm_source=x&b=2&a=1&PHPSESSID=abc#frag",
            "http://example.com/b/c.html?a=1&b=2",
        ),
        ("http://x.cn/a;jsessionid=ABC?z=1&sid=9", "http://x.cn/a?z=1"),
        ("http://x.cn/r?id=3&s=0123456789abcdef0123456789abcdef", "http://x.cn/r?id=3"),
        ("http://x.cn/r?spm=a.b.c&id=3&fbclid=zz", "http://x.cn/r?id=3"),
        ("http://x.cn", "http://x.cn/"),
        # A GBK-encoded query keeps its bytes (courlan alone would re-read them as UTF-8).
        (
            "http://x.cn/search.php?searchkey=%C7%E0%CA%AF&searchtype=articlename",
            "http://x.cn/search.php?searchkey=%C7%E0%CA%AF&searchtype=articlename",
        ),
    ],
)
def test_normalize_url(raw, expected):
    assert normalize_url(raw) == expected


def test_normalize_url_refuses_what_is_not_http():
    for bad in ("ftp://x.cn/a", "javascript:alert(1)", "http:///nohost"):
        with pytest.raises(ValueError, match="not an http"):
            normalize_url(bad)


def test_pattern_and_host():
    assert url_pattern("http://x.cn/book/12/345.html?page=2") == "x.cn/book/N/N.html?page=*"
    assert host_of("http://X.cn:8080/a") == "x.cn:8080"
    assert host_of("https://x.cn/a") == "x.cn"


def test_trap_rules():
    det = TrapDetector(max_chain=3, max_per_pattern=100)
    cal = "http://x.cn/cal?m=5"
    assert not det.judge(cal, parent="http://x.cn/cal?m=4", parent_chain=2, pattern_count=3).trap
    verdict = det.judge(cal, parent="http://x.cn/cal?m=4", parent_chain=3, pattern_count=3)
    assert verdict.trap and "chain of 4" in verdict.reason
    # A chapter found from its index starts a chain afresh, however many chapters there are.
    ok = det.judge("http://x.cn/b/1/99.html", parent="http://x.cn/b/1/", parent_chain=0,
                   pattern_count=99)  # fmt: skip
    assert not ok.trap and ok.chain == 0
    assert det.judge("http://x.cn/b/1/100.html", parent="http://x.cn/b/1/", parent_chain=0,
                     pattern_count=100).trap  # fmt: skip
    loop = "http://x.cn/a/b/a/b/a/b/a/b.html"
    assert "repeats" in det.judge(loop, parent=None, parent_chain=0, pattern_count=0).reason
    long_url = "http://x.cn/" + "x" * 500
    assert det.judge(long_url, parent=None, parent_chain=0, pattern_count=0).trap


def _drain(frontier: Frontier) -> list[str]:
    import time

    out = []
    while True:
        claim = frontier.claim()
        if claim.item is not None:
            out.append(claim.item.url)
            frontier.done(claim.item)
            continue
        if claim.empty:
            return out
        time.sleep(claim.wait)


def test_frontier_queues_once_by_priority_and_spaces_hosts(redis_client):
    import time

    # b.test is claimed between a.test's first two only if the test's next claim comes
    # within the interval: 1 s leaves room for a loaded machine's pauses (GC, scheduling).
    f = Frontier(redis_client, DiscoveryKeys("t"), interval=1.0)
    for i in (3, 1, 2):
        assert f.add(FrontierItem(url=f"http://a.test/{i}.html", source="s", priority=i))
    assert not f.add(FrontierItem(url="http://A.test/1.html?utm_source=q", source="s"))
    f.add(FrontierItem(url="http://b.test/1.html", source="s", priority=5))
    times: dict[str, list[float]] = {}
    start = time.monotonic()
    order = []
    while True:
        claim = f.claim()
        if claim.item is None:
            if claim.empty:
                break
            time.sleep(claim.wait)
            continue
        order.append(claim.item.url)
        times.setdefault(host_of(claim.item.url), []).append(time.monotonic() - start)
        f.done(claim.item)
    assert [u for u in order if "a.test" in u] == [f"http://a.test/{i}.html" for i in (1, 2, 3)]
    gaps = [b - a for a, b in zip(times["a.test"], times["a.test"][1:], strict=False)]
    assert all(g >= 0.9 for g in gaps), gaps  # never faster than the host's interval
    assert order.index("http://b.test/1.html") == 1  # another host is not held up
    stats = f.stats()
    assert stats["added"] == 4 and stats["duplicates"] == 1 and stats["done"] == 4


def test_frontier_survives_a_dead_worker(redis_client):
    keys = DiscoveryKeys("t")
    worker = Frontier(redis_client, keys, interval=0.0, lease=0.2)
    for i in range(3):
        worker.add(FrontierItem(url=f"http://a.test/{i}", source="s", priority=i))
    lost = worker.claim().item  # the worker dies with this lease
    assert lost is not None and lost.url == "http://a.test/0"
    import time

    time.sleep(0.25)
    restarted = Frontier(redis_client, keys, interval=0.0, lease=60)
    urls = _drain(restarted)
    assert sorted(urls) == ["http://a.test/0", "http://a.test/1", "http://a.test/2"]
    assert restarted.stats()["lease_expired"] == 1
    assert _drain(restarted) == []  # done stays done


def test_add_link_counts_chain_and_stops_traps(redis_client):
    f = Frontier(redis_client, DiscoveryKeys("t"), traps=TrapDetector(max_chain=2))
    f.add(FrontierItem(url="http://x.test/cal?m=1", source="crawl"))
    parent = FrontierItem(url="http://x.test/cal?m=1", source="crawl")
    verdicts = []
    for m in range(2, 6):
        verdicts.append(f.add_link(parent, f"http://x.test/cal?m={m}", priority=1))
        parent = FrontierItem(url=f"http://x.test/cal?m={m}", source="crawl",
                              chain=parent.chain + 1)  # fmt: skip
    assert verdicts[:2] == ["queued", "queued"]
    assert all(v.startswith("trap:") for v in verdicts[2:])
    assert f.add_link(parent, "http://x.test/cal?m=2", priority=1) == "seen"
    assert f.add_link(parent, "mailto:x@y", priority=1) == "invalid"


def test_revisit_brings_a_page_back(redis_client):
    f = Frontier(redis_client, DiscoveryKeys("t"), interval=0.0)
    f.add(FrontierItem(url="http://a.test/1", source="s"))
    item = f.claim().item
    assert item is not None
    f.done(item)
    f.schedule_revisit(item, 0)
    assert f.requeue_due() == 1
    assert _drain(f) == ["http://a.test/1"]


def test_one_request_in_flight_per_host(redis_client):
    f = Frontier(redis_client, DiscoveryKeys("t"), interval=0.0)
    for i in range(2):
        f.add(FrontierItem(url=f"http://a.test/{i}", source="s", priority=i))
    f.add(FrontierItem(url="http://b.test/0", source="s", priority=5))
    first = f.claim().item
    second = f.claim().item
    assert first is not None and first.url == "http://a.test/0"
    assert second is not None and second.url == "http://b.test/0"  # a.test is busy
    third = f.claim()
    assert third.item is None and not third.empty and third.wait > 0  # a.test still busy
    f.done(first)
    again = f.claim().item
    assert again is not None and again.url == "http://a.test/1"  # free once done
