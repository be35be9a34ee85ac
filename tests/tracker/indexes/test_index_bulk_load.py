"""Bulk loading of the Redis inverted index (``RedisInvertedIndex.load``, ``BulkLoader``):
the same index, bucket by bucket and byte for byte, as adding the same postings in seq
order, on a single server and on a real 3-master Redis Cluster; into an empty index (whole
buckets written at once), into existing buckets (the merge path), with identity
collisions and fields of every size (1, 2, 3..16 seqs, a stop marker past ``stop_df``);
and the library's rebuild and ingest through it agree with incremental indexes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from indexkit import unmix
from repo import REPO

from tracker.indexes import bulk
from tracker.indexes.bulk import BulkLoader
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.keys import IDENTITY_BITS, bits_for, mix64

ROOT = REPO
LIBRARY = ROOT / "examples" / "library.jsonl"
SUSPECTS = ROOT / "examples" / "suspects.jsonl"


def _colliding(n: int, seed: int) -> np.ndarray:
    """Pairs of distinct fingerprints sharing an identity (top 41 bits of the mix): the
    inverse of splitmix64 of two mixes that differ in their low bits only."""
    rng = np.random.default_rng(seed)
    mixed = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    other = mixed ^ np.uint64(1)  # same top 41 bits
    return np.stack([unmix(mixed), unmix(other)], axis=1)


def _items(seed: int = 3, mothers: int = 60, stop_df: int = 16) -> list[tuple[int, np.ndarray]]:
    """Mothers (in seq order) whose fingerprints make fields of 1, 2, 3..stop_df and more
    seqs, identity collisions within a mother and across mothers, and seqs of every
    decimal length."""
    rng = np.random.default_rng(seed)
    shared = rng.integers(0, 2**64 - 1, size=stop_df + 6, dtype=np.uint64)
    pairs = _colliding(8, seed)
    seqs = [1, 9, 10, 99, 100, 12345, 999_999, 1_000_000, 123_456_789, 4_294_967_295]
    seqs += [int(s) for s in rng.choice(np.arange(2, 5_000_000), mothers - len(seqs), False)]
    seqs = sorted(set(seqs))
    items = []
    for i, seq in enumerate(seqs):
        own = rng.integers(0, 2**64 - 1, size=int(rng.integers(50, 400)), dtype=np.uint64)
        # fingerprint k is held by the first k + 2 mothers: fields of 2 .. stop_df + 7
        common = shared[max(0, i - 1) :] if i else shared
        extra = [pairs[i % 8, 0]] if i % 3 else [pairs[i % 8, 1]]  # collisions across
        if i == 5:
            extra += list(pairs[7])  # both of a colliding pair in one mother
        items.append((seq, np.unique(np.concatenate([own, common, np.array(extra)]))))
    return items


def _contents(redis: Any, prefix: str) -> dict[bytes, dict[bytes, bytes]]:
    out = {}
    for key in redis.scan_iter(match=f"{prefix}:b*", count=1000):
        out[key] = redis.hgetall(key)
    return out


def _same(redis: Any, a: str, b: str) -> None:
    ca = {k[len(a) :]: v for k, v in _contents(redis, a).items()}
    cb = {k[len(b) :]: v for k, v in _contents(redis, b).items()}
    assert ca.keys() == cb.keys()
    for key in ca:
        assert ca[key] == cb[key], key
    la, lb = redis.hgetall(f"{a}:layout"), redis.hgetall(f"{b}:layout")
    assert la == lb


def _index(redis: Any, prefix: str, bits: int | None = None, stop_df: int = 16) -> Any:
    return RedisInvertedIndex(redis, prefix, bucket_bits=bits, stop_df=stop_df)


@pytest.mark.parametrize("stop_df", [16, 4])
def test_load_equals_add_single_server(redis_client: Any, stop_df: int) -> None:
    items = _items(stop_df=stop_df)
    ident = np.concatenate([mix64(f) >> np.uint64(64 - IDENTITY_BITS) for _, f in items])
    bits = bits_for(np.unique(ident).size)
    added = _index(redis_client, "t:add", bits, stop_df).add(items)
    loaded = bulk.load(_index(redis_client, "t:load", None, stop_df), items)
    assert loaded == added
    _same(redis_client, "t:add", "t:load")
    values = [v for h in _contents(redis_client, "t:load").values() for v in h.values()]
    stops = [v for v in values if v[0] == 0 and len(v) % 4 == 1]
    assert stops and all(len(v) == 1 + 4 * min(4, stop_df) for v in stops)
    assert any(len(v) == 9 and v[0] == 1 for v in values)
    assert any(len(v) >= 12 for v in values)


def test_load_merges_into_existing_buckets(redis_client: Any) -> None:
    """A non-empty index: some postings added first (buckets exist, fields of one or more
    seqs), the rest loaded; the same as adding everything, and a reload changes nothing."""
    items = _items(seed=5)
    first, rest = items[::2], items[1::2]
    ref = _index(redis_client, "t:ref", 8)
    ref.add(first)
    new = ref.add(rest)
    idx = _index(redis_client, "t:mix", 8)
    idx.add(first)
    assert bulk.load(idx, rest) == new
    _same(redis_client, "t:ref", "t:mix")
    assert bulk.load(idx, items) == 0  # idempotent
    _same(redis_client, "t:ref", "t:mix")


@pytest.mark.parametrize("spill", [True, False])
def test_bulk_loader_spills_and_sizes(
    redis_client: Any, tmp_path: Path, spill: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Partition files (a tiny memory budget) or partitions in memory, sized once from
    the distinct identities, then equal to adds; mothers taken back by identity remove
    exactly their postings."""
    from tracker.indexes import bulk

    monkeypatch.setattr(bulk, "IN_MEMORY_PARTS", 100)
    items = _items(seed=7, mothers=80)
    ref = _index(redis_client, "t:ref")
    idx = _index(redis_client, "t:bulk")
    loader = BulkLoader(idx, tmp_path / "bulk", memory_pairs=500 if spill else 10**9)
    for a in range(0, len(items), 7):
        loader.extend(items[a : a + 7])
    assert (tmp_path / "bulk").exists() == spill
    loader.finish()
    bulk.size_for(ref, loader.distinct)
    ref.add(items)
    _same(redis_client, "t:ref", "t:bulk")
    gone = {items[3][0], items[10][0]}
    assert loader.take_back(gone) > 0
    loader.close()
    assert not (tmp_path / "bulk").exists()
    ref.remove([it for it in items if it[0] in gone])
    _same(redis_client, "t:ref", "t:bulk")


def test_concurrent_add_during_load_loses_nothing(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adds landing in buckets while a load writes them (between its calls): everything
    of both is there, as if added one after the other."""
    items = _items(seed=9, mothers=70)
    a, b = items[:35], items[35:]
    ref = _index(redis_client, "t:ref", 9)
    ref.add(items)
    idx = _index(redis_client, "t:race", 9)
    other = _index(redis_client, "t:race", 9)
    real = bulk.fill_direct
    calls: list[int] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        if not calls:
            other.add(a)  # lands before the load's first write
        calls.append(1)
        return real(*args, per_call=64)

    monkeypatch.setattr(bulk, "fill_direct", racing)
    bulk.load(idx, b, size=False)
    assert len(calls) == 1
    got = {k: v for k, v in _contents(redis_client, "t:race").items()}
    want = {k.replace(b"t:ref", b"t:race"): v for k, v in _contents(redis_client, "t:ref").items()}
    assert got.keys() == want.keys()
    for key in got:  # a's seqs were first in every field they share: the same values
        assert got[key] == want[key]


def test_load_equals_add_on_cluster(cluster: Any) -> None:
    from tracker.indexes.redis_client import connect_url

    client = connect_url(cluster.url)
    try:
        client.flushall()
        items = _items(seed=11)
        first, rest = items[:20], items[20:]
        add = _index(client, "t:add", 8)
        add.add(items)
        load = _index(client, "t:load")
        assert bulk.load(load, first) > 0  # sized from empty
        assert load.bucket_bits == bits_for(
            np.unique(
                np.concatenate([mix64(f) >> np.uint64(64 - IDENTITY_BITS) for _, f in first])
            ).size
        )
        load.reshard(8)
        bulk.load(load, rest)  # merge path into existing buckets
        _same(client, "t:add", "t:load")
        assert load.fields_estimate() == add.fields_estimate()
    finally:
        client.flushall()
        client.close()


# -- the library: rebuild and ingest through bulk loads --------------------------------
def _cli(data: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _index_dump(data: Path) -> dict[bytes, dict[bytes, bytes]]:
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    with Library.open(Settings.from_env(data)) as lib:
        idx = lib.engine("daguan").index  # type: ignore[attr-defined]
        out = _contents(lib.redis, idx.prefix)
        out[b"layout"] = {
            k: v for k, v in lib.redis.hgetall(idx.layout_key).items() if k != b"version"
        }
        return out


@pytest.mark.slow
def test_ingest_empty_then_slow_path_then_rebuild_agree(tmp_path: Path) -> None:
    """One library ingested in two steps (bulk into the empty index, then the add path)
    and rebuilt (bulk), and a second library built by adds only, via the engine: the
    same buckets and the same ``check --json``."""
    lines = LIBRARY.read_text(encoding="utf-8").splitlines()
    half = len(lines) // 2
    (tmp_path / "a.jsonl").write_text("\n".join(lines[:half]) + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("\n".join(lines[half:]) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    _cli(data, "ingest", str(tmp_path / "a.jsonl"))
    _cli(data, "ingest", str(tmp_path / "b.jsonl"))
    before = _cli(data, "check", "--json", str(SUSPECTS))
    ingested = _index_dump(data)
    _cli(data, "index", "rebuild")
    rebuilt = _index_dump(data)
    after = _cli(data, "check", "--json", str(SUSPECTS))
    assert json.loads("[" + ",".join(before.splitlines()) + "]") == json.loads(
        "[" + ",".join(after.splitlines()) + "]"
    )
    assert any(json.loads(line)["matches"] for line in after.splitlines())
    assert ingested.keys() == rebuilt.keys()
    for key in ingested:
        if key != b"layout":
            assert ingested[key] == rebuilt[key], key
    assert ingested[b"layout"].get(b"fields") == rebuilt[b"layout"].get(b"fields")
    # The reference: the same mothers added incrementally (the add path throughout).
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    with Library.open(Settings.from_env(data)) as lib:
        idx = lib.engine("daguan").index  # type: ignore[attr-defined]
        ref = RedisInvertedIndex(lib.redis, "t:incr", bucket_bits=idx.bucket_bits)
        seqs = []
        for seq, blob in lib.store.iter_fingerprints("daguan"):
            assert blob is not None
            seqs.append(seq)
            ref.add([(seq, np.frombuffer(blob, dtype=np.uint64))])
        _same(lib.redis, idx.prefix, "t:incr")
        ref.clear()
        assert seqs == sorted(seqs)


def test_a_loader_whose_index_filled_meanwhile_grows_it_and_merges(
    redis_client: Any, tmp_path: Path
) -> None:
    """Another writer added to the (then empty) index while the loader gathered: the load
    keeps that layout, lets ``grow`` reshard it for the extra fields, and merges."""
    items = _items(seed=13, mothers=60)
    mine, theirs = items[1::2], items[::2]
    idx = _index(redis_client, "t:late")
    loader = BulkLoader(idx, tmp_path / "late")
    loader.extend(mine)
    _index(redis_client, "t:late").add(theirs)  # lands first, at the smallest layout
    grown: list[int] = []

    def grow(fields: int) -> None:
        grown.append(fields)
        idx.reshard(bits_for(idx.fields_estimate() + fields))

    loader.finish(grow=grow)
    loader.close()
    assert grown == [loader.distinct]
    ref = _index(redis_client, "t:ref", idx.bucket_bits)
    ref.add(theirs)
    ref.add(mine)
    _same(redis_client, "t:ref", "t:late")


_KILLED_LOAD = """
import sys, time
import numpy as np
import redis
from tracker.indexes.bulk import load
from tracker.indexes.inverted import RedisInvertedIndex

r = redis.Redis(unix_socket_path=sys.argv[1])
rng = np.random.default_rng(11)
items = [(s, rng.integers(0, 2**63, 300, dtype=np.uint64)) for s in range(1, 40)]
idx = RedisInvertedIndex(r, "t:kill")

def settle(**kwargs):
    print("written", flush=True)  # every temporary bucket is in Redis, none settled
    time.sleep(3600)

idx._settle = settle
load(idx, items)
"""


def _temporary(redis: Any, prefix: str) -> list[bytes]:
    return list(redis.scan_iter(match=f"{prefix}:bt*", count=1000))


def test_a_killed_load_leaves_no_temporary_keys_for_the_next(redis_client: Any) -> None:
    """Issue 25: ``kill -9`` during a bulk load left ``:bt*`` keys that made the empty index
    look non-empty and survived a full re-run; the next load's start deletes them."""
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_LOAD, redis_client.socket_file],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "written"
        left = _temporary(redis_client, "t:kill")
        assert len(left) > 1  # the buckets and the load's lease
        idx = _index(redis_client, "t:kill")
        # While the loader lives its keys are its own: nobody sweeps them.
        assert not idx.is_empty() and len(_temporary(redis_client, "t:kill")) == len(left)
        child.kill()  # SIGKILL
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    idx = _index(redis_client, "t:kill")
    assert idx.is_empty()  # the dead load's keys are gone
    assert _temporary(redis_client, "t:kill") == []
    rng = np.random.default_rng(11)
    items = [(s, rng.integers(0, 2**63, 300, dtype=np.uint64)) for s in range(1, 40)]
    bulk.load(idx, items)
    ref = _index(redis_client, "t:kref", idx.bucket_bits)
    ref.add(items)
    _same(redis_client, "t:kref", "t:kill")


def test_a_live_load_elsewhere_keeps_its_keys(redis_client: Any) -> None:
    """A lease of a load on another host (not expired) protects its temporary keys; once
    the lease is gone they are swept."""
    from tracker.indexes.lock import Owner
    from tracker.indexes.temporary import sweep_temporary

    redis_client.hset("t:live:btabc:3", mapping={b"f": b"1"})
    redis_client.set("t:live:btabc:live", Owner("far-host", 7, "abc").id, px=60_000)
    idx = _index(redis_client, "t:live")
    assert sweep_temporary(idx.redis, idx.prefix) == 0 and not idx.is_empty()
    redis_client.delete("t:live:btabc:live")  # expired
    assert sweep_temporary(idx.redis, idx.prefix) == 1 and idx.is_empty()
