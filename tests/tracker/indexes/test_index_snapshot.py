"""Local copies of the inverted index (tracker/indexes/snapshot.py): they answer exactly
as Redis does, and only while the index is at the version they were taken at."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from indexkit import filled_index as _filled_index
from indexkit import same_lookup as _same
from textgen import random_edits, work

from tracker.cli import main
from tracker.indexes.bulk import load, load_pairs
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.snapshot import SnapshotFolder, take_snapshot
from tracker.library import Library
from tracker.plumbing.config import Settings


def test_a_snapshot_answers_exactly_as_redis(redis_client: Any, tmp_path: Path) -> None:
    idx, query = _filled_index(redis_client)
    from_redis = idx.lookup(query)
    assert from_redis[2] > 0  # stop markers among them
    assert np.bincount(from_redis[0]).max() >= 3  # fields of several mothers
    info = take_snapshot(idx, tmp_path)
    assert info.postings == idx.stats()["postings"]
    assert info.stopped == idx.stats()["stop_fingerprints"]
    snaps = SnapshotFolder(tmp_path)
    got = snaps.lookup(idx, query)
    assert got is not None and _same(got, from_redis)
    # Which fingerprints are stop words, too (long runs of them propose their holders).
    mask_redis, mask_snap = np.zeros(query.size, bool), np.zeros(query.size, bool)
    idx.lookup(query, stop_mask=mask_redis)
    snaps.lookup(idx, query, stop_mask=mask_snap)
    assert mask_redis.sum() == from_redis[2] and np.array_equal(mask_redis, mask_snap)
    # Every stored fingerprint, one at a time and all at once.
    assert _same(snaps.lookup(idx, query[:1]), idx.lookup(query[:1]))  # type: ignore[arg-type]
    empty = snaps.lookup(idx, np.zeros(0, np.uint64))
    assert empty is not None and empty[0].size == 0


def test_after_a_write_the_snapshot_answers_what_was_not_written_since(
    redis_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx, query = _filled_index(redis_client)
    take_snapshot(idx, tmp_path)
    snaps = SnapshotFolder(tmp_path)
    assert snaps.current(idx) is not None
    found = snaps.answering(idx)
    assert found is not None and found[1] is None  # nothing written since
    before = idx.version()
    # An add that changes nothing still counts as a write, and marks no bucket.
    idx.add([(3, np.zeros(0, np.uint64))])
    assert idx.version() != before and snaps.current(idx) is None
    found = snaps.answering(idx)
    assert found is not None and idx.overlay_state().dirty_buckets() == 0
    # Adds of new and held fingerprints (one field passes stop_df: its holders become a
    # stop marker), and a remove: the overlay answers as Redis, asking Redis only for
    # the fingerprints of the buckets written.
    rng = np.random.default_rng(8)
    new_fps = rng.integers(0, 2**63, 30, dtype=np.uint64)
    idx.add([(40, np.concatenate([new_fps, query[:6]])), (41, query[6:8])])
    idx.remove([(5, query[8:12])])
    asked: list[int] = []
    real_lookup = idx.lookup

    def counted(fps: np.ndarray, **kw: Any) -> Any:
        asked.append(int(np.asarray(fps).size))
        return real_lookup(fps, **kw)

    monkeypatch.setattr(idx, "lookup", counted)
    everything = np.unique(np.concatenate([query, new_fps]))
    mask_snap = np.zeros(everything.size, bool)
    got = snaps.lookup(idx, everything, stop_mask=mask_snap)
    assert got is not None and len(asked) == 1 and 0 < asked[0] < everything.size
    monkeypatch.undo()
    mask_redis = np.zeros(everything.size, bool)
    assert _same(got, idx.lookup(everything, stop_mask=mask_redis))
    assert np.array_equal(mask_snap, mask_redis)
    state = snaps.state(idx)
    assert state["state"] == "current" and state["buckets_written_since"] > 0
    # A take after writes copies only the buckets written since: the same files as a
    # copy of everything.
    info = take_snapshot(idx, tmp_path)
    full = take_snapshot(idx, tmp_path / "full", incremental=False)
    for name in ("ident.npy", "seq.npy", "dir.npy"):
        assert np.array_equal(np.load(info.path / name), np.load(full.path / name)), name
    assert (info.postings, info.stopped) == (full.postings, full.stopped)
    kept = [p.name for p in tmp_path.iterdir() if p.name != "full" and p.name[0] != "."]
    assert kept == [info.path.name]  # the older one deleted
    assert snaps.current(idx) is not None
    # A reshard or a bulk load may touch any bucket: lookups go to Redis until the next.
    new_fp = np.array([12345], dtype=np.uint64)
    idx.add([(99, new_fp)])
    assert snaps.lookup(idx, new_fp) is None  # its one bucket was written: Redis
    assert snaps.lookup(idx, query) is not None
    idx.reshard(8)
    assert snaps.answering(idx) is None and snaps.lookup(idx, query) is None
    assert snaps.state(idx)["state"] == "stale"
    take_snapshot(idx, tmp_path)
    load_pairs(idx, idx.identities(np.array([777], np.uint64)), np.array([98], np.uint32))
    assert snaps.answering(idx) is None


def test_an_index_cleared_and_written_again_never_matches_an_old_copy(
    redis_client: Any, tmp_path: Path
) -> None:
    idx = RedisInvertedIndex(redis_client, "t:snap2", bucket_bits=6)
    assert idx.version() is None
    idx.add([(1, np.array([1, 2, 3], dtype=np.uint64))])
    old = take_snapshot(idx, tmp_path)
    idx.clear()
    assert idx.version() is None
    idx.add([(2, np.array([4, 5, 6], dtype=np.uint64))])
    # The same count of writes since the start, another epoch.
    assert idx.version() is not None and idx.version() != old.version
    assert idx.version().split("/")[1] == old.version.split("/")[1]  # type: ignore[union-attr]
    assert SnapshotFolder(tmp_path).current(idx) is None
    with pytest.raises(ValueError, match="holds nothing"):
        take_snapshot(RedisInvertedIndex(redis_client, "t:none"), tmp_path)


def test_a_write_during_the_copy_is_noticed(
    redis_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracker.indexes.snapshot as snapshot

    idx, _ = _filled_index(redis_client)
    real_copy = snapshot._copy
    calls = []

    def copy_racing_a_write(index: RedisInvertedIndex, batch: int) -> Any:
        got = real_copy(index, batch)
        calls.append(1)
        if len(calls) == 1:  # a writer lands after the buckets were read
            index.add([(77, np.array([424242], dtype=np.uint64))])
        return got

    monkeypatch.setattr(snapshot, "_copy", copy_racing_a_write)
    info = take_snapshot(idx, tmp_path)
    assert len(calls) == 2 and info.version == idx.version()
    got = SnapshotFolder(tmp_path).lookup(idx, np.array([424242], dtype=np.uint64))
    assert got is not None and got[1].tolist() == [77]

    monkeypatch.setattr(
        snapshot,
        "_copy",
        lambda index, batch: (index.add([(78, np.array([1], np.uint64))]), real_copy(index, batch))[
            1
        ],
    )
    with pytest.raises(RuntimeError, match="written to during"):
        take_snapshot(idx, tmp_path / "other")


def _match(m: Any) -> dict[str, Any]:
    """What a match says, without when it was made."""
    d = dataclasses.asdict(m)
    return {k: v for k, v in d.items() if k not in ("created_at", "updated_at")}


def _library(tmp_path: Path) -> Library:
    return Library.open(Settings(data_dir=tmp_path / "data"))


def test_checks_answer_the_same_from_a_snapshot_and_use_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracker.library import Document

    works = {f"w{i}": work(100 + i, 30) for i in range(6)}
    suspects = [
        works["w1"][200:1400],
        "外面的话。" + random_edits(works["w4"][100:900], 0.05) + "不相干的结尾。",
        work(999, 20),
    ]
    with _library(tmp_path) as lib:
        lib.ingest(Document(id=k, title=k, text=v) for k, v in works.items())
        from_redis = [lib.check_text(s).matches for s in suspects]
        assert {m.mother_id for m in from_redis[0]} == {"w1"}
        info = lib.snapshot_index()
        assert info.info.postings > 0 and Path(info.info.path).is_dir()
        stats = lib.index_stats()["engines"]["daguan"]["snapshot"]
        assert stats["state"] == "current" and stats["postings"] == info.info.postings
        eng = lib.engine()

        def no_redis(fps: Any) -> Any:
            raise AssertionError("looked up in Redis while a current snapshot exists")

        monkeypatch.setattr(eng.index, "lookup", no_redis)  # type: ignore[attr-defined]
        from_snapshot = [lib.check_text(s).matches for s in suspects]
        assert [[_match(m) for m in r] for r in from_snapshot] == [
            [_match(m) for m in r] for r in from_redis
        ]
        monkeypatch.undo()
        # A work ingested after the snapshot is found: the buckets it was written to
        # are answered by Redis, the others still by the snapshot.
        # (not retaken after it: an index once copied is kept fresh by ingests)
        lib.ingest([Document(id="late", title="late", text=work(555, 30))], refresh_snapshots=False)
        state = lib.index_stats()["engines"]["daguan"]["snapshot"]
        assert state["state"] == "current" and state["buckets_written_since"] > 0
        found = lib.check_text(work(555, 30)[300:1500]).matches
        assert [m.mother_id for m in found] == ["late"]


def test_refresh_takes_a_snapshot_only_when_big_enough_and_changed(tmp_path: Path) -> None:
    from tracker.library import Document

    with _library(tmp_path) as lib:
        lib.ingest([Document(id="a", title="a", text=work(1, 30))])
        (skipped,) = lib.refresh_snapshots()
        # below YINJI_SNAPSHOT_MIN_CHARS: the library's characters, counted
        assert skipped["skipped"] == f"{len(work(1, 30)):,} characters < 6,000,000"
        (taken,) = lib.refresh_snapshots(min_chars=0)
        assert taken["postings"] > 0
        (again,) = lib.refresh_snapshots(min_chars=0)
        assert again == {"engine": "daguan", "skipped": "the snapshot is current"}


def test_cli_snapshot_and_stats(tmp_path: Path) -> None:
    lib_file = tmp_path / "lib.jsonl"
    lib_file.write_text(
        json.dumps({"id": "w", "title": "作品", "text": work(7, 30)}, ensure_ascii=False),
        encoding="utf-8",
    )
    data = ["--data-dir", str(tmp_path / "data")]
    runner = CliRunner()
    assert runner.invoke(main, [*data, "ingest", str(lib_file)]).exit_code == 0
    stats = json.loads(runner.invoke(main, [*data, "index", "stats"]).stdout)
    assert stats["engines"]["daguan"]["snapshot"]["state"] == "none"
    out = runner.invoke(main, [*data, "index", "snapshot"])
    assert out.exit_code == 0, out.output
    info = json.loads(out.stdout)
    assert info["engine"] == "daguan" and info["postings"] > 0
    assert "索引快照已建立" in out.stderr
    stats = json.loads(runner.invoke(main, [*data, "index", "stats"]).stdout)
    assert stats["engines"]["daguan"]["snapshot"]["state"] == "current"
    out = runner.invoke(main, [*data, "index", "snapshot", "--engine", "simhash"])
    assert out.exit_code != 0 and "no local copies" in out.output


def test_beat_refreshes_snapshots_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import timedelta

    from workers.schedule import beat_schedule

    entry = beat_schedule()["refresh-snapshots"]
    assert entry["task"] == "yinji.index.refresh_snapshots"
    assert entry["schedule"] == timedelta(minutes=10)
    monkeypatch.setenv("YINJI_SNAPSHOT_MINUTES", "0")
    assert "refresh-snapshots" not in beat_schedule()


def test_an_ingest_into_a_big_index_leaves_a_current_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracker.library import Document

    works = {f"w{i}": work(300 + i, 30) for i in range(4)}
    # "Big" here: any size (YINJI_SNAPSHOT_MIN_CHARS 0); retaken past half the buckets.
    settings = Settings(
        data_dir=tmp_path / "data", snapshot_min_chars=0, snapshot_refresh_share=0.5
    )
    with Library.open(settings) as lib:
        report = lib.ingest(Document(id=k, title=k, text=v) for k, v in works.items())
        assert report.snapshot_seconds > 0
        state = lib.index_stats()["engines"]["daguan"]["snapshot"]
        assert state["state"] == "current" and state["buckets_written_since"] == 0
        eng = lib.engine()
        real_lookup = eng.index.lookup  # type: ignore[attr-defined]

        def no_redis(fps: Any, **kw: Any) -> Any:
            raise AssertionError("looked up in Redis right after the ingest")

        monkeypatch.setattr(eng.index, "lookup", no_redis)  # type: ignore[attr-defined]
        found = lib.check_text(works["w2"][100:1300]).matches
        assert [m.mother_id for m in found] == ["w2"]
        monkeypatch.undo()
        # A small ingest (a short work: few buckets) keeps the snapshot, and the overlay
        # answers the new work from Redis.
        late = work(777, 2)
        report = lib.ingest([Document(id="late", title="late", text=late)])
        state = lib.index_stats()["engines"]["daguan"]["snapshot"]
        assert report.snapshot_seconds == 0
        assert state["state"] == "current" and 0 < state["written_fraction"] <= 0.5
        asked: list[int] = []

        def counted(fps: Any, **kw: Any) -> Any:
            asked.append(len(fps))
            return real_lookup(fps, **kw)

        monkeypatch.setattr(eng.index, "lookup", counted)  # type: ignore[attr-defined]
        assert [m.mother_id for m in lib.check_text(late).matches] == ["late"]
        assert asked  # the late work's buckets from Redis


def test_a_bulk_load_leaves_its_rows_for_the_snapshot(
    redis_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ingest into an empty index: the snapshot is written from the rows the load
    wrote (fields of one and several seqs, a seq twice in a field, stop markers), the
    same files as a copy read back from Redis; any other write spoils the rows."""
    import tracker.indexes.snapshot as snapshot
    from tracker.indexes.bulk import BulkLoader

    def build(prefix: str) -> tuple[RedisInvertedIndex, list[tuple[int, np.ndarray]]]:
        idx = RedisInvertedIndex(redis_client, prefix, stop_df=4)
        rng = np.random.default_rng(9)
        shared = rng.integers(0, 2**63, 12, dtype=np.uint64)
        items = []
        for seq in range(1, 21):
            own = rng.integers(0, 2**63, 400, dtype=np.uint64)
            items.append(
                (seq, np.concatenate([own, shared[[i for i in range(12) if seq % (i + 1) == 0]]]))
            )
        # A mother given twice (its seq twice in the same fields): one row each.
        items.append((1, items[0][1][:50]))
        return idx, items

    real_copy = snapshot._copy
    copies: list[int] = []

    def counted(index: RedisInvertedIndex, batch: int) -> Any:
        copies.append(1)
        return real_copy(index, batch)

    monkeypatch.setattr(snapshot, "_copy", counted)
    idx, items = build("t:rec")
    idx.start_recording()
    loader = BulkLoader(idx, tmp_path / "bulk", memory_pairs=3000)  # spilled: partitions
    loader.extend(items)
    loader.finish()
    loader.close()
    info = take_snapshot(idx, tmp_path / "snaps")
    assert copies == [] and idx.recording is None  # written from the rows, read nothing
    full = take_snapshot(idx, tmp_path / "full", incremental=False)
    assert copies == [1] and info.stopped > 0
    for name in ("ident.npy", "seq.npy", "dir.npy"):
        assert np.array_equal(np.load(info.path / name), np.load(full.path / name)), name
    # A write that is not the load's (here an add after it): the rows are not used.
    idx2, items2 = build("t:rec2")
    idx2.start_recording()
    load(idx2, items2[:10])
    idx2.add(items2[10:])
    take_snapshot(idx2, tmp_path / "snaps2")
    assert copies == [1, 1]


def test_adds_to_an_index_with_a_current_snapshot_leave_their_rows(
    redis_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adds after a snapshot: the next one is the old snapshot with what they added
    (appended to fields, fields passing stop_df, adds to stop markers, a seq a field
    already holds), the same files as a copy read back from Redis; a remove meanwhile
    and the take copies."""
    import tracker.indexes.snapshot as snapshot

    real_copy = snapshot._copy
    copies: list[int] = []

    def counted(index: RedisInvertedIndex, batch: int) -> Any:
        copies.append(1)
        return real_copy(index, batch)

    idx, query = _filled_index(redis_client)  # stop_df 4: stop markers among them
    take_snapshot(idx, tmp_path / "snaps")
    monkeypatch.setattr(snapshot, "_copy", counted)
    rng = np.random.default_rng(12)
    new_fps = rng.integers(0, 2**63, 300, dtype=np.uint64)
    idx.start_recording(adds=True)
    idx.add([(50, np.concatenate([new_fps, query[:40]])), (51, query[20:60])])
    idx.add([(52, np.concatenate([new_fps[:10], query[:5]])), (50, query[:3])])
    info = take_snapshot(idx, tmp_path / "snaps")
    assert copies == [] and idx.recording is None
    full = take_snapshot(idx, tmp_path / "full", incremental=False)
    assert copies == [1]
    for name in ("ident.npy", "seq.npy", "dir.npy"):
        assert np.array_equal(np.load(info.path / name), np.load(full.path / name)), name
    got = SnapshotFolder(tmp_path / "snaps").lookup(idx, np.concatenate([query, new_fps]))
    assert got is not None and _same(got, idx.lookup(np.concatenate([query, new_fps])))
    # A remove among the adds: not recorded, so the take reads the buckets back.
    idx.start_recording(adds=True)
    idx.add([(53, new_fps[50:80])])
    idx.remove([(50, new_fps[:5])])
    real_over = snapshot._copy_over
    read_back: list[int] = []

    def over(*args: Any) -> Any:
        read_back.append(1)
        return real_over(*args)

    monkeypatch.setattr(snapshot, "_copy_over", over)
    take_snapshot(idx, tmp_path / "snaps")
    assert read_back == [1]  # only the buckets written since, read back
    assert SnapshotFolder(tmp_path / "snaps").current(idx) is not None


def test_ingests_leave_a_current_snapshot_without_reading_the_index_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first ingest (a bulk load) and the next (adds) write their snapshots from
    what they wrote; checks after each answer from it, as Redis does."""
    import tracker.indexes.snapshot as snapshot
    from tracker.library import Document

    def no_copy(*args: Any) -> Any:
        raise AssertionError("the index was read back for a snapshot")

    monkeypatch.setattr(snapshot, "_copy", no_copy)
    monkeypatch.setattr(snapshot, "_copy_over", no_copy)
    settings = Settings(
        data_dir=tmp_path / "data", snapshot_min_chars=0, snapshot_refresh_share=0.0
    )
    first = {f"a{i}": work(400 + i, 30) for i in range(5)}
    second = {f"b{i}": work(500 + i, 30) for i in range(3)}
    with Library.open(settings) as lib:
        lib.ingest(Document(id=k, title=k, text=v) for k, v in first.items())
        report = lib.ingest(Document(id=k, title=k, text=v) for k, v in second.items())
        assert report.snapshot_seconds > 0
        assert lib.index_stats()["engines"]["daguan"]["snapshot"]["buckets_written_since"] == 0
        suspects = [first["a1"][200:1400], second["b2"][100:1300], work(999, 20)]
        from_snapshot = [sorted(m.mother_id for m in lib.check_text(s).matches) for s in suspects]
        lib.engine().snapshots = None  # type: ignore[attr-defined]
        from_redis = [sorted(m.mother_id for m in lib.check_text(s).matches) for s in suspects]
        assert from_snapshot == from_redis == [["a1"], ["b2"], []]


def test_an_ingest_skips_the_snapshot_another_process_is_taking(tmp_path: Path) -> None:
    """One take per index and snapshot folder at a time (a file lock): an ingest that
    finds one running skips its own (checks ask Redis for the buckets it wrote), and says
    so in the refresh result; `yinji index snapshot` would wait instead."""
    from tracker.indexes.snapshot import TakeBusy, folder_name, taking
    from tracker.library import Document

    settings = Settings(
        data_dir=tmp_path / "data", snapshot_min_chars=0, snapshot_refresh_share=0.0
    )
    with Library.open(settings) as lib:
        lib.ingest([Document(id="a", title="a", text=work(61, 30))])
        folder = settings.snapshots_path
        with taking(folder, lib.engine().index.prefix):  # type: ignore[attr-defined]
            report = lib.ingest([Document(id="b", title="b", text=work(62, 30))])
            assert report.snapshot_seconds == 0
            (skipped,) = lib.indexes.refresh_snapshots(wait=False)
            assert skipped.to_dict()["skipped"] == "another process is taking one"
            with pytest.raises(TakeBusy):
                take_snapshot(lib.engine().index, folder, wait=False)  # type: ignore[attr-defined]
        assert (folder / f".{folder_name(lib.engine().index.prefix)}.lock").exists()  # type: ignore[attr-defined]
        found = lib.check_text(work(62, 30)[100:1300]).matches
        assert [m.mother_id for m in found] == ["b"]


def test_the_snapshot_floor_counts_characters_whatever_the_script(tmp_path: Path) -> None:
    from tracker.library import Document

    rng = random.Random(7)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6)) for _ in range(900)
    ]
    english = " ".join(rng.choice(words) for _ in range(3000))
    chinese = work(21, 30)
    for name, text in (("en", english), ("zh", chinese)):
        # One character short of the floor: no copy, at the ingest's end or after.
        below = Settings(data_dir=tmp_path / f"{name}-below", snapshot_min_chars=len(text) + 1)
        with Library.open(below) as lib:
            assert lib.ingest([Document(id="a", title="a", text=text)]).snapshot_seconds == 0
            (skipped,) = lib.refresh_snapshots()
            assert skipped["skipped"] == f"{len(text):,} characters < {len(text) + 1:,}"
        # At the floor: the ingest (a bulk load into an empty index) leaves a copy.
        at = Settings(data_dir=tmp_path / f"{name}-at", snapshot_min_chars=len(text))
        with Library.open(at) as lib:
            assert lib.ingest([Document(id="a", title="a", text=text)]).snapshot_seconds > 0
            assert lib.index_stats()["engines"]["daguan"]["snapshot"]["state"] == "current"


def test_the_library_characters_follow_ingests_replacements_and_deletions(
    tmp_path: Path,
) -> None:
    from tracker.library import Document

    with _library(tmp_path) as lib:
        chars = lib.indexes.chars

        def stored() -> int:
            return sum(m.chars for m in lib.store.list_mothers(limit=1000, with_text=False))

        steps = [
            lambda: lib.ingest([Document(id="a", title="a", text=work(1, 10))]),
            lambda: lib.ingest([Document(id="b", title="b", text=work(2, 20))]),
            lambda: lib.ingest([Document(id="a", title="a", text=work(3, 5))]),  # replaced
            lambda: lib.delete_mother("b"),
            lambda: lib.ingest([Document(id="c", title="c", text=work(4, 7))]),
        ]
        for step in steps:
            step()
            assert chars.count(up_to=10**9) == stored() > 0
        # Counted up to a bound only: at least that bound, without listing further.
        assert chars.count(up_to=1) >= 1
