"""The discovery frontier on a real Redis Cluster (three masters): every key under one
hash tag, the Lua scripts (which build the per-host queue keys from that tag) run on
its slot, and claims, leases and politeness work as on one server."""

from __future__ import annotations

import os

import pytest
from redis_cluster import RedisClusterNodes

from tracker.discovery.frontier import Frontier, FrontierItem, Link
from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.run import NearDuplicates


@pytest.mark.slow
def test_frontier_on_a_redis_cluster(cluster: RedisClusterNodes) -> None:
    from tracker.indexes.redis_client import connect
    from tracker.plumbing.config import Settings

    client = connect(Settings(redis_url=cluster.url))
    keys = DiscoveryKeys("c", f"disc{os.getpid()}")
    f = Frontier(client, keys, interval=0.0)
    urls = [f"http://h{i % 3}.test/{i}" for i in range(9)]
    for i, url in enumerate(urls):
        assert f.add(FrontierItem(url=url, source="s", priority=i))
    assert not f.add(FrontierItem(url=urls[0], source="s"))
    claimed = []
    while True:
        claim = f.claim()
        if claim.item is None:
            if claim.empty:
                break
            continue
        claimed.append(claim.item.url)
        if len(claimed) % 2:  # half of them as a crawl does: recorded on arrival first
            f.fetched(claim.item, '{"page": "stored"}')
        f.done(claim.item)
    assert sorted(claimed) == sorted(urls)
    stats = f.stats()
    assert stats["done"] == 9 and stats["queued"] == 0 and stats["duplicates"] == 1
    assert stats["stored"] == 0 and stats["leased"] == 0
    # The links of a page in one batch, and the SimHash bands, on the tag's slot too.
    parent = FrontierItem(url=urls[0], source="s")
    verdicts = f.add_links(parent, [Link("http://h0.test/new", 1.0), Link(urls[1], 1.0)])
    assert verdicts == ["queued", "seen"]
    near = NearDuplicates(client, keys)
    near.add(0xFFFF0000FFFF0000, "suspect-1")
    assert near.find(0xFFFF0000FFFF0001) == "suspect-1"
    # Every key of the frontier lives on one slot: the tag's.
    slots = {
        client.keyslot(k) for k in (keys.key("seen"), keys.key("hosts"), keys.key("q:h0.test"))
    }
    assert len(slots) == 1
