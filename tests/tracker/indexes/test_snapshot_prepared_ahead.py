"""The snapshot after an ingest's adds is prepared while its last write goes to Redis
(``tracker.indexes.snapshot_adds.prepare_ahead``): the take then only names it; the
files are those a copy read back from Redis makes, and nothing is left behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textgen import work

import tracker.indexes.snapshot as snapshot
import tracker.indexes.snapshot_adds as snapshot_adds
from tracker.config import Settings
from tracker.indexes.snapshot import take_snapshot
from tracker.library import Document, Library


def _library(tmp_path: Path, share: float = 0.0) -> Library:
    return Library.open(
        Settings(data_dir=tmp_path / "data", snapshot_min_postings=0, snapshot_refresh_share=share)
    )


def _docs(prefix: str, seeds: range) -> dict[str, str]:
    return {f"{prefix}{i}": work(seed, 30) for i, seed in enumerate(seeds)}


def test_the_snapshot_after_adds_is_the_one_prepared_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _docs("a", range(400, 405))
    second = _docs("b", range(500, 503))
    prepared: list[int] = []
    real_write = snapshot_adds.write_rows

    def counted(*args: Any) -> Any:
        prepared.append(1)
        return real_write(*args)

    def merged_at_take(*args: Any) -> Any:
        raise AssertionError("the take merged the adds itself")

    with _library(tmp_path) as lib:
        lib.ingest(Document(id=k, title=k, text=v) for k, v in first.items())
        monkeypatch.setattr(snapshot_adds, "write_rows", counted)
        monkeypatch.setattr(snapshot, "rows_with_adds", merged_at_take)
        report = lib.ingest(Document(id=k, title=k, text=v) for k, v in second.items())
        assert prepared == [1] and report.snapshot_seconds > 0
        eng = lib.engine()
        folder = lib.settings.snapshots_path
        taken = eng.snapshots.current(eng.index)  # type: ignore[attr-defined]
        assert taken is not None
        full = take_snapshot(eng.index, tmp_path / "full", incremental=False)
        for name in ("ident.npy", "seq.npy", "dir.npy"):
            assert np.array_equal(np.load(taken.path / name), np.load(full.path / name)), name
        assert not list(folder.glob(".tmp-*"))  # the prepared folder was renamed into place
        suspects = [first["a1"][200:1400], second["b2"][100:1300], work(999, 20)]
        got = [sorted(m.mother_id for m in lib.check_text(s).matches) for s in suspects]
        assert got == [["a1"], ["b2"], []]


def test_no_snapshot_is_prepared_when_no_take_follows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An add touching no more than ``snapshot_refresh_share`` of the buckets leaves the
    snapshot as it is (Redis answers those buckets): nothing is prepared for it."""
    prepared: list[int] = []
    real_write = snapshot_adds.write_rows

    def counted(*args: Any) -> Any:
        prepared.append(1)
        return real_write(*args)

    with _library(tmp_path, share=0.99) as lib:
        lib.ingest(Document(id=k, title=k, text=v) for k, v in _docs("a", range(400, 405)).items())
        lib.snapshot_index()
        monkeypatch.setattr(snapshot_adds, "write_rows", counted)
        report = lib.ingest([Document(id="b0", title="b0", text=work(600, 2))])
        assert report.ingested == 1 and report.snapshot_seconds == 0
        assert prepared == []
        assert not list(lib.settings.snapshots_path.glob(".tmp-*"))


def test_a_failed_ingest_leaves_no_prepared_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store and the index keep what was written before the failure; the files
    prepared for a snapshot no take uses are deleted."""
    import tracker.indexes.writer as writer

    with _library(tmp_path) as lib:
        lib.ingest(Document(id=k, title=k, text=v) for k, v in _docs("a", range(400, 405)).items())
        real_close = writer.IndexWriter.close

        def failing_close(self: writer.IndexWriter) -> None:
            real_close(self)
            raise RuntimeError("disk gone")

        monkeypatch.setattr(writer.IndexWriter, "close", failing_close)
        with pytest.raises(RuntimeError, match="disk gone"):
            lib.ingest(
                Document(id=k, title=k, text=v) for k, v in _docs("b", range(500, 503)).items()
            )
        assert not list(lib.settings.snapshots_path.glob(".tmp-*"))
