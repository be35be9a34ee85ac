"""Tail segments (``tracker.indexes.tail``) under faults and races: a lookup while a merge
ends, a load that dies before its segment joins the lookups (its keys reclaimed by the
next merge, a live load's never), and what the next lookups find meanwhile."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textgen import work

from tracker.indexes import bulk, tail
from tracker.indexes.bulk import BulkLoader
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.snapshot import SnapshotFolder, take_snapshot


def _mothers(seed: int, first_seq: int, n: int) -> list[tuple[int, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [
        (first_seq + i, np.unique(rng.integers(0, 2**63, 200, dtype=np.uint64))) for i in range(n)
    ]


def _with_segment(
    redis: Any, tmp_path: Path
) -> tuple[RedisInvertedIndex, RedisInvertedIndex, list[Any]]:
    """An index holding mothers 1-4 and a segment of it holding mothers 101-104."""
    main = RedisInvertedIndex(redis, "m", bucket_bits=10)
    old, new = _mothers(1, 1, 4), _mothers(2, 101, 4)
    main.add(old)
    segment = main.tail(tail.new_number(main))
    loader = BulkLoader(main, tmp_path / "spill", into=segment)
    loader.extend(new)
    loader.finish()
    loader.close()
    assert [t.prefix for t in main.tails()] == [segment.prefix]
    return main, segment, new


def _merge_when_read(main: RedisInvertedIndex, segment: RedisInvertedIndex, new: list[Any]) -> None:
    """The last adds of a merge and the segment's drop, just after a lookup read the
    index and the set of segments, before it reads the segment."""
    real = main.tail
    done: list[int] = []

    def tail_of(number: int) -> RedisInvertedIndex:
        if not done:
            done.append(number)
            main.add(new)  # (the merge's adds: the index holds them now)
            tail.drop(main, segment)  # (then the segment goes)
        return real(number)

    main.tail = tail_of  # type: ignore[method-assign]


def test_a_lookup_while_a_merge_ends_finds_the_merged_mothers(
    index_redis: Any, tmp_path: Path
) -> None:
    main, segment, new = _with_segment(index_redis, tmp_path)
    fps = new[0][1]
    _merge_when_read(main, segment, new)
    at, seqs, _ = main.lookup(fps)
    assert main.tails() == []  # (merged meanwhile)
    # Every fingerprint of mother 101 found: in the segment or in the index.
    assert set(at.tolist()) == set(range(fps.size)) and set(seqs.tolist()) == {101}


def test_a_lookup_from_snapshots_while_a_merge_ends_finds_the_merged_mothers(
    index_redis: Any, tmp_path: Path
) -> None:
    main, segment, new = _with_segment(index_redis, tmp_path)
    folder = tmp_path / "snapshots"
    take_snapshot(main, folder)
    take_snapshot(segment, folder)
    snaps = SnapshotFolder(folder)
    fps = new[0][1]
    _merge_when_read(main, segment, new)
    got = snaps.lookup(main, fps)
    if got is None:  # (no local answer: the caller asks Redis)
        got = main.lookup(fps)
    at, seqs, _ = got
    assert set(at.tolist()) == set(range(fps.size)) and set(seqs.tolist()) == {101}


def test_stop_word_holders_read_while_a_merge_ends_are_all_there(
    index_redis: Any, tmp_path: Path
) -> None:
    """20 fingerprints held by mother 1 in the index and by mothers 101 and 102 in a
    segment: stop words (``stop_df`` 2) together, whose holders are read while the
    merge ends."""
    shared = np.unique(np.random.default_rng(9).integers(0, 2**63, 20, dtype=np.uint64))
    main = RedisInvertedIndex(index_redis, "m", bucket_bits=10, stop_df=2)
    main.add([(1, shared)])
    segment = main.tail(tail.new_number(main))
    new = [(101, shared), (102, shared)]
    loader = BulkLoader(main, tmp_path / "spill", into=segment)
    loader.extend(new)
    loader.finish()
    loader.close()
    mask = np.zeros(shared.size, dtype=bool)
    assert main.lookup(shared, stop_mask=mask)[2] == shared.size
    _merge_when_read(main, segment, new)
    at, seqs = main.stop_samples(shared)
    assert main.tails() == []  # (merged meanwhile)
    assert set(at.tolist()) == set(range(shared.size)) and set(seqs.tolist()) == {1, 101}


def _keys(redis: Any, segment: RedisInvertedIndex) -> list[bytes]:
    """Every key of a segment: under its prefix, and in its version's slot."""
    return [
        *redis.scan_iter(match=f"{segment.prefix}:*"),
        *redis.scan_iter(match=f"{{{segment.prefix}:*"),
    ]


def _failing_load(
    main: RedisInvertedIndex,
    segment: RedisInvertedIndex,
    spill: Path,
    first: int,
    monkeypatch: pytest.MonkeyPatch,
) -> BulkLoader:
    """A load of four mothers from ``first`` into ``segment`` that fails after its
    buckets are written (Redis gone); the loader, not yet closed."""
    real = bulk.load_pairs

    def written_then_failed(*a: Any, **kw: Any) -> int:
        real(*a, **kw)
        raise ConnectionError("Redis went away")

    monkeypatch.setattr(bulk, "load_pairs", written_then_failed)
    loader = BulkLoader(main, spill, into=segment)
    loader.extend(_mothers(first, first, 4))
    with pytest.raises(ConnectionError):
        loader.finish()
    return loader


def test_a_load_that_fails_leaves_no_segment_keys(
    index_redis: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = RedisInvertedIndex(index_redis, "m", bucket_bits=10)
    main.add(_mothers(1, 1, 4))
    segment = main.tail(tail.new_number(main))
    loader = _failing_load(main, segment, tmp_path / "spill", 101, monkeypatch)
    assert _keys(index_redis, segment)  # (written before it failed)
    loader.close()  # (as the ingest does after a failure)
    assert _keys(index_redis, segment) == [] and main.tails() == []
    assert index_redis.smembers(tail.pending_key(main)) == set()


def _drop_dies_then_reclaimed(
    main: RedisInvertedIndex,
    segment: RedisInvertedIndex,
    redis: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A drop of ``segment`` killed after it left the set, before its keys went: no
    lookup reads it, its keys stay, and the next ``reclaim`` deletes them."""

    def killed() -> int:
        raise SystemExit("killed")

    monkeypatch.setattr(segment, "drop_keys", killed)
    with pytest.raises(SystemExit):
        tail.drop(main, segment)
    monkeypatch.undo()
    assert main.tails() == [] and _keys(redis, segment)
    assert tail.reclaim(main) == [tail.number_of(segment)]
    assert _keys(redis, segment) == []


def test_a_merge_that_dies_dropping_a_segment_leaves_it_to_the_next(
    index_redis: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, segment, new = _with_segment(index_redis, tmp_path)
    main.add(new)  # (the merge's adds)
    _drop_dies_then_reclaimed(main, segment, index_redis, monkeypatch)
    at, seqs, _ = main.lookup(new[0][1])
    assert at.size == new[0][1].size and set(seqs.tolist()) == {101}


_CHILD = """
import sys, numpy as np, redis
from tracker.indexes import bulk, lock, tail
from tracker.indexes.inverted import RedisInvertedIndex

socket, first, spill, beat = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
lock.BEAT_TTL_MS, lock.BEAT_EVERY_S = int(beat * 1000), beat / 5
main = RedisInvertedIndex(redis.Redis(unix_socket_path=socket), "m", bucket_bits=10)
rng = np.random.default_rng(first)
items = [(first + i, np.unique(rng.integers(0, 2**63, 200, dtype=np.uint64))) for i in range(4)]
real = tail.Lease.commit

def paused(self, seqs):
    print("loaded", tail.number_of(self.segment), flush=True)
    sys.stdin.readline()
    real(self, seqs)

tail.Lease.commit = paused
loader = bulk.BulkLoader(main, spill, into=main.tail(tail.new_number(main)))
loader.extend(items)
try:
    loader.finish()
except tail.SegmentLost:
    print("lost", flush=True)
else:
    print("committed", flush=True)
loader.close()
"""


@pytest.mark.slow
def test_a_killed_load_is_reclaimed_and_a_live_one_is_not(index_redis: Any, tmp_path: Path) -> None:
    """Three loads in processes of their own, each stopped with its segment written and
    not committed: one killed (``kill -9``), one frozen past its heartbeat's TTL, one
    alive. ``reclaim`` deletes the dead one's keys at once, the frozen one's once its
    heartbeat lapsed (its commit is then refused, its keys gone), never the live one's,
    which commits and is read."""
    main = RedisInvertedIndex(index_redis, "m", bucket_bits=10)
    main.add(_mothers(1, 1, 4))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    socket = index_redis.socket_file

    def child(first: int, beat: float) -> subprocess.Popen[str]:
        args = [socket, str(first), str(tmp_path / f"spill-{first}"), str(beat)]
        return subprocess.Popen(
            [sys.executable, "-c", _CHILD, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    procs = {
        name: child(first, beat)
        for name, first, beat in (("killed", 101, 15.0), ("frozen", 201, 1.0), ("live", 301, 15.0))
    }
    try:
        number = {}
        for name, proc in procs.items():
            assert proc.stdout is not None
            said = proc.stdout.readline().split()
            assert said[0] == "loaded", said
            number[name] = int(said[1])
        segments = {name: main.tail(n) for name, n in number.items()}
        assert all(_keys(index_redis, s) for s in segments.values())
        assert tail.reclaim(main) == []  # all three alive

        procs["killed"].kill()
        procs["killed"].wait(timeout=30)
        os.kill(procs["frozen"].pid, signal.SIGSTOP)
        assert tail.reclaim(main) == [number["killed"]]
        assert _keys(index_redis, segments["killed"]) == []
        time.sleep(2.5)  # (the frozen one's heartbeat lapses: 1 s)
        assert tail.reclaim(main) == [number["frozen"]]
        assert _keys(index_redis, segments["frozen"]) == []
        assert _keys(index_redis, segments["live"])  # untouched

        os.kill(procs["frozen"].pid, signal.SIGCONT)
        for name in ("frozen", "live"):
            out, _ = procs[name].communicate("\n", timeout=60)
            assert out.split() == [{"frozen": "lost", "live": "committed"}[name]]
        assert main.tails() == [segments["live"]]
        assert _keys(index_redis, segments["frozen"]) == []  # (not committed half deleted)
        assert index_redis.smembers(tail.pending_key(main)) == set()
        # The live load's works are read; the others' never were (their ingests fail
        # and the next check re-adds their stored works).
        rng = np.random.default_rng(301)
        fps = np.unique(rng.integers(0, 2**63, 200, dtype=np.uint64))
        at, seqs, _ = main.lookup(fps)
        assert at.size == fps.size and set(seqs.tolist()) == {301}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait(timeout=30)


@pytest.mark.slow
def test_segment_leases_commits_drops_and_reclaims_on_redis_cluster(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a real 3-master Redis Cluster: every script of a load's lease, its commit, a
    drop and a reclaim names keys of one slot."""
    from tracker.indexes.redis_client import connect_url

    client = connect_url(cluster.url)
    try:
        client.flushall()
        main = RedisInvertedIndex(client, "c:m", bucket_bits=10)
        main.add(_mothers(1, 1, 4))
        loaded = main.tail(tail.new_number(main))
        loader = BulkLoader(main, tmp_path / "a", into=loaded)
        loader.extend(_mothers(2, 101, 4))
        loader.finish()
        loader.close()
        assert main.tails() == [loaded]
        # A load that fails: given up, its keys gone.
        failed = main.tail(tail.new_number(main))
        _failing_load(main, failed, tmp_path / "b", 201, monkeypatch).close()
        monkeypatch.undo()
        assert _keys(client, failed) == []
        # A drop that dies after the segment left the set: reclaimed next.
        main.add(_mothers(2, 101, 4))
        _drop_dies_then_reclaimed(main, loaded, client, monkeypatch)
        assert client.smembers(tail.pending_key(main)) == set()
    finally:
        client.close()


@pytest.fixture()
def library(index_redis: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A library (prefix ``rf``) whose index holds 4 works and a tail segment 4 more,
    each with its local copy."""
    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.plumbing.config import Settings
    from tracker.store import open_store

    monkeypatch.setattr(tail, "MIN_TAIL_CHARS", 15_000)
    settings = Settings(data_dir=tmp_path / "data", redis_prefix="rf", snapshot_min_chars=0)
    lib = Library(settings, open_store(settings), index_redis)
    try:
        docs = [Document(id=f"w{i}", title=f"篇{i}", text=work(700 + i, 150)) for i in range(8)]
        lib.ingest(docs[:4], expected_chars=60_000)
        lib.ingest(docs[4:], expected_chars=60_000)
        assert len(lib.engines.get("daguan").index.tails()) == 1
        assert _copies(lib) == ["rf_daguan", "rf_daguan_t1"]
        yield lib
    finally:
        lib.store.close()


def _copies(lib: Any) -> list[str]:
    """The indexes with local copies."""
    folder = lib.settings.snapshots_path
    return sorted({p.name.partition("-")[0] for p in folder.iterdir() if p.is_dir()})


def test_a_refresh_meeting_a_segment_merged_meanwhile_skips_it(
    library: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers' refresh (or an ingest's) copies a segment that a merge in another
    process drops meanwhile: no error, and no copy of the dropped segment left."""
    eng = library.engines.get("daguan")
    (segment,) = eng.index.tails()
    assert library.delete_mother("w5")  # (the segment written since its copy: copied again)
    admin = library.indexes
    real = admin.snapshot

    def merged_first(*a: Any, **kw: Any) -> Any:
        if kw.get("index") is segment:
            admin.merge_tails(refresh=False)  # (the other process's merge)
        return real(*a, **kw)

    monkeypatch.setattr(admin, "snapshot", merged_first)
    admin.refresh_snapshots(wait=False)
    assert eng.index.tails() == []
    assert _copies(library) == ["rf_daguan"]


def test_a_merge_that_dies_before_deleting_a_copy_leaves_it_to_the_next(
    library: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = library.engines.get("daguan")
    admin = library.indexes
    monkeypatch.setattr(
        "tracker.indexes.admin_copies.drop_snapshots",
        lambda *a: (_ for _ in ()).throw(SystemExit("killed")),
    )
    with pytest.raises(SystemExit):
        admin.merge_tails()
    monkeypatch.undo()
    assert eng.index.tails() == [] and _copies(library) == ["rf_daguan", "rf_daguan_t1"]
    admin.merge_tails()
    assert _copies(library) == ["rf_daguan"]


_INGEST = """
import sys, time, redis
from pathlib import Path
from textgen import work
from tracker.documents.readers import Document
from tracker.indexes import tail
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import open_store

socket, data = sys.argv[1], Path(sys.argv[2])
tail.MIN_TAIL_CHARS, tail.MAX_TAIL_SHARE = 15_000, 10.0  # (segment 1 kept)
settings = Settings(data_dir=data, redis_prefix="rf", snapshot_min_chars=0)
lib = Library(settings, open_store(settings), redis.Redis(unix_socket_path=socket))

def killed_here(self, seqs):
    print("loaded", tail.number_of(self.segment), flush=True)
    time.sleep(600)

tail.Lease.commit = killed_here
docs = [Document(id=f"w{i}", title=f"篇{i}", text=work(700 + i, 150)) for i in range(8, 12)]
lib.ingest(docs, expected_chars=60_000)
"""


@pytest.mark.slow
def test_an_ingest_killed_while_it_loads_a_segment(library: Any, index_redis: Any) -> None:
    """``kill -9`` of an ingest whose segment is written and not yet read: the next check
    finds its works all the same (the index repaired from the store), and the next merge
    deletes what the load wrote."""
    support = Path(__file__).resolve().parents[2] / "support"
    env = {**os.environ, "PYTHONPATH": f"{Path(__file__).resolve().parents[3]}:{support}"}
    args = [index_redis.socket_file, str(library.settings.data_dir)]
    proc = subprocess.Popen(
        [sys.executable, "-c", _INGEST, *args], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        said = proc.stdout.readline().split()
        assert said[:1] == ["loaded"], said
    finally:
        proc.kill()
        proc.wait(timeout=30)
    eng = library.engines.get("daguan")
    segment = eng.index.tail(int(said[1]))
    assert _keys(index_redis, segment) and len(eng.index.tails()) == 1
    library.indexes.verified.clear()  # (the next check verifies the index)
    assert library.ensure_index("daguan").state == "partial"  # (and repaired)
    for i in (1, 5, 9, 11):
        fps = np.unique(eng.mother_fingerprints(work(700 + i, 150)))
        at, seqs, _ = eng.index.lookup(fps)
        seq = library.store.get_mother(f"w{i}").seq
        assert np.unique(at[seqs == seq]).size > 0.9 * fps.size, i
    done = library.indexes.merge_tails()
    assert done.segments == 1  # (the one the first ingests made)
    assert _keys(index_redis, segment) == []
    assert any("tail segment load(s)" in r for r in library.indexes.repairs)
