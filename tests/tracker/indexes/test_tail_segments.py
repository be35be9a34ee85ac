"""Tail segments (``tracker.indexes.tail``): a big ingest into a non-empty index is
loaded in bulk into a segment beside it, and the index with its segments answers every
lookup exactly as one index holding all the adds does: postings, stop words made by the
union (past ``stop_df`` only together), stop markers of either part and the holders they
keep, edition groups, removes; from Redis and from the local snapshots alike. Merged
into the index (``yinji index merge-tails``, an ingest that finds them due), the
segments are gone and the answers stay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from textgen import work

from tracker.cli import main as cli
from tracker.documents.readers import Document
from tracker.indexes import tail
from tracker.indexes.bulk import BulkLoader
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.snapshot import SnapshotFolder, take_snapshot

STOP_DF = 4


def _mothers(seed: int, first_seq: int, n: int, shared: dict[str, np.ndarray]) -> list[Any]:
    """``n`` mothers of random fingerprints, each holding some of the ``shared`` groups
    (boilerplate that stop words are made of)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        own = rng.integers(0, 2**63, 300, dtype=np.uint64)
        held = [fps for name, fps in shared.items() if int(name.split(":")[1]) > i]
        out.append((first_seq + i, np.unique(np.concatenate([own, *held]))))
    return out


def _answers(index: RedisInvertedIndex, fps: np.ndarray) -> tuple[Any, ...]:
    mask = np.zeros(fps.size, dtype=bool)
    at, seqs, stopped = index.lookup(fps, stop_mask=mask)
    per = {int(f): sorted(seqs[at == f].tolist()) for f in np.unique(at)}
    s_at, s_seqs = index.stop_samples(fps[mask])
    samples = {int(f): sorted(s_seqs[s_at == f].tolist()) for f in np.unique(s_at)}
    return per, mask.tolist(), stopped, samples


def _data() -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(5)
    # "group:k": held by the first k mothers of a batch. Across the two batches of 6:
    # 3 + 3 (stopped only together), 5 + 0 (stopped in the index), 0 + 5 (stopped in
    # the segment), 2 + 2 (not stopped), 1 + 0 and 0 + 1.
    first = {f"a:{k}": rng.integers(0, 2**63, 20, dtype=np.uint64) for k in (3, 5, 2, 1)}
    second = {
        "a:3": first["a:3"],
        "b:5": rng.integers(0, 2**63, 20, dtype=np.uint64),
        "a:2": first["a:2"],
        "c:1": rng.integers(0, 2**63, 20, dtype=np.uint64),
    }
    batch1 = _mothers(1, 1, 6, first)
    batch2 = _mothers(2, 101, 6, second)
    batch2.append((200, batch1[0][1].copy()))  # an edition of mother 1 (identical)
    return batch1, batch2


def test_a_tail_segment_answers_as_one_index(index_redis: Any, tmp_path: Path) -> None:
    batch1, batch2 = _data()
    one = RedisInvertedIndex(index_redis, "one", stop_df=STOP_DF, editions=True)
    one.add(batch1)
    one.add(batch2)
    # (4,096 buckets: a remove leaves most of them as the snapshot has them)
    two = RedisInvertedIndex(index_redis, "two", stop_df=STOP_DF, editions=True, bucket_bits=12)
    two.add(batch1)
    segment = two.tail(tail.new_number(two))
    loader = BulkLoader(two, tmp_path / "spill", into=segment)
    loader.extend(batch2)
    loader.finish()
    assert [t.prefix for t in two.tails()] == ["two:t1"]
    assert tail.loaded_seqs(two, segment) == [s for s, _ in batch2]
    # The edition joined mother 1's group, found by a lookup of the index.
    assert two.members([1]) == one.members([1]) == {1: [1, 200]}
    fps = np.unique(np.concatenate([f for _, f in batch1 + batch2]))
    expected = _answers(one, fps)
    assert _answers(two, fps) == expected
    per, mask, stopped, samples = expected
    assert stopped == 20 * 3  # 3 + 3, 5 + 0 and 0 + 5
    assert len(samples) == 60 and all(len(s) == 4 for s in samples.values())

    # From local snapshots of the index and of its segment: the same answers.
    folder = tmp_path / "snapshots"
    take_snapshot(two, folder)
    take_snapshot(segment, folder)
    snaps = SnapshotFolder(folder)
    calls: list[int] = []
    real = RedisInvertedIndex.lookup

    def counted(self: RedisInvertedIndex, *a: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(self, *a, **kw)

    RedisInvertedIndex.lookup = counted  # type: ignore[method-assign]
    try:
        mask_snap = np.zeros(fps.size, dtype=bool)
        at, seqs, n_stopped = snaps.lookup(two, fps, stop_mask=mask_snap)  # type: ignore[misc]
    finally:
        RedisInvertedIndex.lookup = real  # type: ignore[method-assign]
    assert calls == []  # nothing asked of Redis
    assert {int(f): sorted(seqs[at == f].tolist()) for f in np.unique(at)} == per
    assert (mask_snap.tolist(), n_stopped) == (mask, stopped)

    # A remove reaches the segment (its mother's postings are there) and the index.
    for index in (one, two):
        index.remove([batch2[3], batch1[4]])
    assert _answers(two, fps) == _answers(one, fps)
    # The snapshots answer the buckets not written since; Redis the others.
    mask_snap = np.zeros(fps.size, dtype=bool)
    got = snaps.lookup(two, fps, stop_mask=mask_snap)
    mask_one = np.zeros(fps.size, dtype=bool)
    want = one.lookup(fps, stop_mask=mask_one)
    assert got is not None and np.array_equal(mask_snap, mask_one)
    assert sorted(zip(got[0].tolist(), got[1].tolist(), strict=True)) == sorted(
        zip(want[0].tolist(), want[1].tolist(), strict=True)
    )

    # A segment dropped (after a merge) leaves no key behind.
    tail.drop(two, segment)
    assert two.tails() == []
    assert list(index_redis.scan_iter(match="two:t1*")) == []
    assert list(index_redis.scan_iter(match="{two:t1*")) == []

    # Clearing the index (a rebuild) clears its segments, read or not.
    orphan = two.tail(tail.new_number(two))
    orphan.add([(7, batch1[0][1])])
    two.clear()
    assert two.tails() == [] and two.is_empty()
    assert list(index_redis.scan_iter(match="two:t*")) == []
    assert list(index_redis.scan_iter(match="{two:t*")) == []


@pytest.mark.slow
def test_a_tail_segment_on_redis_cluster_answers_as_one_index(cluster: Any, tmp_path: Path) -> None:
    """On a real 3-master Redis Cluster: every segment key one key of one slot (the
    lookups pipelined per bucket, the segments' set read with them)."""
    from tracker.indexes.redis_client import connect_url

    client = connect_url(cluster.url)
    try:
        client.flushall()
        batch1, batch2 = _data()
        one = RedisInvertedIndex(client, "{c}one", stop_df=STOP_DF, editions=True)
        one.add(batch1)
        one.add(batch2)
        two = RedisInvertedIndex(client, "c:two", stop_df=STOP_DF, editions=True)
        two.add(batch1)
        loader = BulkLoader(two, tmp_path / "spill", into=two.tail(tail.new_number(two)))
        loader.extend(batch2)
        loader.finish()
        fps = np.unique(np.concatenate([f for _, f in batch1 + batch2]))
        assert _answers(two, fps) == _answers(one, fps)
        for index in (one, two):
            index.remove([batch2[3], batch1[4]])
        assert _answers(two, fps) == _answers(one, fps)
        two.clear()
        assert two.tails() == [] and two.is_empty()
    finally:
        client.close()


def test_merge_is_due_at_max_tails_or_past_the_share() -> None:
    assert not tail.merge_due(1000, [])
    assert not tail.merge_due(1000, [100] * (tail.MAX_TAILS - 1))
    assert tail.merge_due(1000, [10] * tail.MAX_TAILS)
    assert tail.merge_due(1000, [int(1000 * tail.MAX_TAIL_SHARE) + 1])


def _docs(first: int, last: int) -> list[Document]:
    return [
        Document(id=f"t{i}", title=f"篇{i}", text=work(700 + i, 150)) for i in range(first, last)
    ]


def test_a_library_ingests_into_a_tail_and_merges_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded default, as a person runs it: ``yinji ingest`` of a big file into a
    library makes a tail segment (stats say so, checks find its works, from the local
    copies), a second one; ``yinji index merge-tails`` merges them; a third ingest past
    ``MAX_TAILS`` merges by itself."""
    monkeypatch.setattr(tail, "MIN_TAIL_CHARS", 15_000)
    monkeypatch.setattr(tail, "MAX_TAILS", 2)
    monkeypatch.setattr(tail, "MAX_TAIL_SHARE", 10.0)  # (the share: the test above)
    data = tmp_path / "data"
    monkeypatch.setenv("YINJI_SNAPSHOT_MIN_CHARS", "0")
    runner = CliRunner()

    def ingest(first: int, last: int) -> str:
        path = tmp_path / f"works-{first}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for d in _docs(first, last):
                fh.write(json.dumps({"id": d.id, "title": d.title, "text": d.text}) + "\n")
        got = runner.invoke(cli, ["--data-dir", str(data), "ingest", str(path)])
        assert got.exit_code == 0, got.output
        return got.output

    def stats() -> dict[str, Any]:
        got = runner.invoke(cli, ["--data-dir", str(data), "index", "stats"])
        assert got.exit_code == 0, got.output
        out: dict[str, Any] = json.loads(got.stdout)["engines"]["daguan"]
        return out

    def found(i: int) -> list[str]:
        probe = tmp_path / "probe.txt"
        probe.write_text(work(700 + i, 150)[400:1400], encoding="utf-8")
        got = runner.invoke(cli, ["--data-dir", str(data), "check", str(probe), "--json"])
        assert got.exit_code == 0, got.output
        return [m["mother_id"] for m in json.loads(got.stdout)["matches"]]

    ingest(0, 4)  # into the empty index: loaded as the index itself
    assert "tail_segments" not in stats()
    ingest(4, 8)
    ingest(8, 12)
    st = stats()
    assert st["tail_segments"] == 2 and st["tail_postings"] > 0
    assert st["snapshot"]["state"] == "current"
    snapshots = sorted(p.name for p in (data / "snapshots").iterdir() if p.is_dir())
    assert [n.split("-")[0] for n in snapshots] == [
        "yinji_daguan",
        "yinji_daguan_t1",
        "yinji_daguan_t2",
    ]
    assert [found(i) for i in (1, 5, 10)] == [["t1"], ["t5"], ["t10"]]

    got = runner.invoke(cli, ["--data-dir", str(data), "index", "merge-tails"])
    assert got.exit_code == 0, got.output
    done = json.loads(got.stdout)
    assert (done["segments"], done["mothers"]) == (2, 8)
    assert "tail_segments" not in stats()
    left = sorted(p.name.split("-")[0] for p in (data / "snapshots").iterdir())
    assert left == [".yinji_daguan.lock", "yinji_daguan"]
    assert [found(i) for i in (1, 5, 10)] == [["t1"], ["t5"], ["t10"]]

    # Two more segments, then an ingest that finds MAX_TAILS merges them first.
    ingest(12, 16)
    ingest(16, 20)
    assert stats()["tail_segments"] == 2
    said = ingest(20, 24)
    assert "merged 2 tail segment(s) of the daguan index into it first" in said
    assert stats()["tail_segments"] == 1
    assert [found(i) for i in (13, 17, 22)] == [["t13"], ["t17"], ["t22"]]

    # A work held by a segment is deleted like any other.
    got = runner.invoke(cli, ["--data-dir", str(data), "delete", "t22"])
    assert got.exit_code == 0, got.output
    assert found(22) == [] and found(21) == ["t21"]
