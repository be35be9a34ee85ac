"""Local read-only copies (snapshots) of the Redis inverted index, for fast checks.

A check looks up ~1,500 distinct fingerprints of a 2,000-character suspect. In Redis that
is one Lua call of ~1,500 HGETs, each a scan of a compact bucket: ~7 ms at 100 M
characters, half of a whole check (docs/BENCHMARKS.md). A snapshot holds the same
postings as sorted arrays on disk that every checking process memory-maps (the page
cache shares them between processes), so a lookup is two numpy binary searches.

**When a snapshot answers.** It is taken at one version of the index
(``RedisInvertedIndex.version``: raised before and after every write, see
``tracker.indexes.inverted``) and becomes the *base* of the overlay: every write since
marks the buckets it touches in a bitmap beside the version (``lua/mark.lua``; a write
that may touch any bucket, a bulk load or a reshard, ends the overlay). A lookup reads
the version, the base and the bitmap in one call (``lua/overlay.lua``) and answers the
fingerprints of unmarked buckets from the snapshot, those of marked buckets from Redis:
the same answers as Redis. That rule lives here, in ``SnapshotFolder.answering``, and
nowhere else. Snapshots are taken by ``yinji index snapshot``, after an ingest into a big
index and by the workers' periodic task (``IndexAdmin.refresh_snapshots``): from the
rows a bulk load or adds recorded (``tracker.indexes.recording``) when nothing else was
written, else by reading back only the buckets marked since the base; a take that saw a
write meanwhile tries again, and the base moves only if the version is still the one
copied (``lua/rebase.lua``).

**Files.** ``{folder}/{index}-{epoch}-{n}/``: ``ident.npy`` (uint64 identities, the top
``ident_bits`` of a fingerprint's mix as the index computes them, sorted, one row a
posting), ``seq.npy`` (uint32 mother seqs, ``STOP_SEQ`` for a stop marker: a
fingerprint held by more than ``stop_df`` mothers), ``dir.npy`` (where each range of
identities starts, ~8 rows apart: a lookup searches a few rows, not the whole array) and
``meta.json``. ~12.5 bytes a posting (~180 MB at 100 M characters, ~1.8 GB at 1 B).
A new snapshot is written to a temporary folder and renamed into place, then older ones
of the same index are deleted (a process still reading one keeps its mapping until it
moves on).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from threading import Lock
from typing import Any

import numpy as np

from tracker.indexes.codec import parse_many
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.keys import unpack_fields
from tracker.indexes.layout import OverlayState
from tracker.indexes.recording import STOP_SEQ
from tracker.indexes.snapshot_adds import rows_with_adds
from tracker.indexes.snapshot_files import (
    Snapshot,
    finish,
    folder_name,
    snapshot_path,
    write_rows,
)
from tracker.indexes.tail import union


@dataclass
class SnapshotInfo:
    """What ``take_snapshot`` wrote."""

    path: Path
    version: str
    postings: int
    stopped: int
    bytes: int
    seconds: float

    def to_dict(self) -> dict[str, str | int | float]:
        return {
            "path": str(self.path),
            "version": self.version,
            "postings": self.postings,
            "stop_fingerprints": self.stopped,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
        }


class TakeBusy(RuntimeError):
    """Another process is taking a snapshot of this index into the same folder."""


@contextlib.contextmanager
def taking(folder: Path, prefix: str, *, wait: bool = True) -> Iterator[None]:
    """One take of an index's snapshot at a time per folder (a file lock: processes
    sharing ``YINJI_SNAPSHOT_DIR`` take turns); ``wait`` False: ``TakeBusy`` at once."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f".{folder_name(prefix)}.lock").open("a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise TakeBusy(f"a snapshot of {prefix} is being taken by another process") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def take_snapshot(
    index: RedisInvertedIndex,
    folder: Path,
    *,
    batch: int = 1024,
    attempts: int = 3,
    incremental: bool = True,
    wait: bool = True,
) -> SnapshotInfo:
    """Copy the index into ``folder`` at its current version (``attempts`` tries when
    writes come meanwhile) and make it the overlay's base; older snapshots of this index
    are deleted. ``incremental``: when the overlay's base snapshot is here, only the
    buckets written since it are read from Redis, the rest is copied from it. One take
    per index and folder at a time (``taking``; ``wait`` False: ``TakeBusy``)."""
    with taking(folder, index.prefix, wait=wait):
        return _take(index, folder, batch, attempts, incremental)


def _take(
    index: RedisInvertedIndex, folder: Path, batch: int, attempts: int, incremental: bool
) -> SnapshotInfo:
    started = time.perf_counter()
    for _ in range(attempts):
        index.wait_for_move()
        index.refresh()
        state = index.overlay_state()
        before = state.version
        if before is None:
            if not index.redis.exists(index.layout_key):
                raise ValueError(f"index {index.prefix} holds nothing yet: no snapshot to take")
            index._bump_version()  # written before versions were kept: its first one
            continue
        layout = index.layout
        final = snapshot_path(folder, index.prefix, before)
        recording, index.recording = index.recording, None
        epoch, n = before.split("/")
        if recording is not None and recording.holds_at(int(n)):
            # A bulk load's own rows, or the snapshot before the adds with what they
            # added: the index as they wrote it, nothing read back.
            base = f"{epoch}/{recording.start}"
            rows = (
                rows_with_adds(folder, index, base, recording)
                if recording.adds
                else recording.chunks()
            )
            if rows is not None:
                if not final.is_dir():
                    _write(final, folder, index, before, layout, *rows)
                if index.rebase(before, layout):
                    break
                continue
        old = _base(folder, index, state, layout) if incremental else None
        if old is not None and old.version == before:
            # Nothing written since the base: it is the snapshot (made the base again
            # if it was taken before the overlay).
            if state.base == before or index.rebase(before, layout):
                info = _info(final, old.meta, started)
                _drop_others(folder, index.prefix, final)
                return info
            continue
        if old is not None:
            idents, seqs = _copy_over(old, index, state.dirty, batch)
        else:
            idents, seqs = _copy(index, batch)
        if index.version() != before:
            continue
        wrote = not final.is_dir()
        if wrote:
            _write(final, folder, index, before, layout, idents, seqs)
        if index.rebase(before, layout):
            break
        if wrote:  # a write came after the copy: a copy of an older version, not kept
            shutil.rmtree(final, ignore_errors=True)
    else:
        raise RuntimeError(
            f"index {index.prefix} was written to during each of {attempts} snapshots: "
            "take one when ingests are done"
        )
    _drop_others(folder, index.prefix, final)
    meta = json.loads((final / "meta.json").read_text(encoding="utf-8"))
    return _info(final, meta, started)


def _info(final: Path, meta: dict[str, Any], started: float) -> SnapshotInfo:
    size = sum(f.stat().st_size for f in final.iterdir())
    return SnapshotInfo(
        final,
        meta["version"],
        int(meta["postings"]),
        int(meta["stop_fingerprints"]),
        size,
        time.perf_counter() - started,
    )


def drop_snapshots(folder: Path, prefix: str) -> None:
    """Every snapshot of index ``prefix`` deleted, and its lock file (a tail segment
    merged and dropped)."""
    _drop_others(Path(folder), prefix, None)
    (Path(folder) / f".{folder_name(prefix)}.lock").unlink(missing_ok=True)


def segment_snapshots(folder: Path, prefix: str) -> set[int]:
    """The tail segments of index ``prefix`` (``tracker.indexes.tail``) that have
    snapshots in ``folder``."""
    base = f"{folder_name(prefix)}_t"
    numbers = (p.name[len(base) :].partition("-")[0] for p in Path(folder).glob(f"{base}*"))
    return {int(n) for n in numbers if n.isdigit()}


def _drop_others(folder: Path, prefix: str, final: Path | None) -> None:
    """Snapshots of the index but ``final`` deleted (a process reading one keeps its
    mapping)."""
    for old in folder.glob(f"{folder_name(prefix)}-*"):
        if old != final and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)


def _base(
    folder: Path, index: RedisInvertedIndex, state: OverlayState, layout: str
) -> Snapshot | None:
    """The snapshot an incremental take starts from: the one at the current version,
    else the overlay's base in the current layout; None: copy everything."""
    for version in (state.version, state.base):
        if version is None:
            continue
        path = snapshot_path(folder, index.prefix, version)
        try:
            snap = Snapshot(path)
        except (OSError, ValueError, KeyError):
            continue
        if version == state.version or (
            snap.layout == layout == state.base_layout and snap.bucket_bits is not None
        ):
            return snap
    return None


def _write(
    final: Path,
    folder: Path,
    index: RedisInvertedIndex,
    version: str,
    layout: str,
    idents: list[np.ndarray],
    seqs: list[np.ndarray],
) -> None:
    """The snapshot files, written to a temporary folder and renamed into place."""
    files = write_rows(folder, index.ident_bits, idents, seqs)
    finish(files, final, index, version, layout)


def _copy(index: RedisInvertedIndex, batch: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every posting of the index as (identity, seq) rows, in chunks sorted by identity
    one after the other (a field's seqs in their stored order); a stop marker is one row
    with ``STOP_SEQ``. Buckets are read ``batch`` at a time (pipelined HGETALLs): the
    bucket is an identity's top bits, so each batch is a range of identities."""
    idents: list[np.ndarray] = []
    seqs: list[np.ndarray] = []
    every = np.arange(1 << index.bucket_bits, dtype=np.int64)
    for a in range(0, every.size, batch):
        ident, seq = _read_buckets(index, every[a : a + batch])
        if ident.size:
            idents.append(ident)
            seqs.append(seq)
    return idents, seqs


def _copy_over(
    old: Snapshot, index: RedisInvertedIndex, dirty: bytes, batch: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``_copy`` from the base snapshot ``old`` (same layout) for the buckets that
    ``dirty`` does not mark, from Redis for those it marks."""
    bits = index.bucket_bits
    marks = np.unpackbits(np.frombuffer(dirty, dtype=np.uint8))[: 1 << bits].astype(bool)
    written = np.flatnonzero(marks)
    bounds = old.bucket_bounds()
    shift = np.uint64(index.ident_bits - bits)
    idents: list[np.ndarray] = []
    seqs: list[np.ndarray] = []
    done = 0  # buckets before this one are in the chunks

    def kept(upto: int) -> None:
        a, z = int(bounds[done]), int(bounds[upto])
        if z > a:
            idents.append(np.asarray(old.ident[a:z]))
            seqs.append(np.asarray(old.seq[a:z]))

    for a in range(0, written.size, batch):
        part = written[a : a + batch]
        ident, seq = _read_buckets(index, part)
        row_bucket = (ident >> shift).astype(np.int64)
        lo = np.searchsorted(row_bucket, part, side="left")
        hi = np.searchsorted(row_bucket, part, side="right")
        pieces_i: list[np.ndarray] = []
        pieces_s: list[np.ndarray] = []
        for b, x, y in zip(part.tolist(), lo.tolist(), hi.tolist(), strict=True):
            if b > done:
                ra, rz = int(bounds[done]), int(bounds[b])
                pieces_i.append(old.ident[ra:rz])
                pieces_s.append(old.seq[ra:rz])
            pieces_i.append(ident[x:y])
            pieces_s.append(seq[x:y])
            done = b + 1
        idents.append(np.concatenate(pieces_i).astype(np.uint64, copy=False))
        seqs.append(np.concatenate(pieces_s).astype(np.uint32, copy=False))
    kept(1 << bits)
    return idents, seqs


def _read_buckets(index: RedisInvertedIndex, buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The postings of ``buckets`` (increasing) as (identity, seq) rows sorted by
    identity (a field's seqs in their stored order); a stop marker is one row with
    ``STOP_SEQ``. One pipeline of HGETALLs."""
    bits, ident_bits, fmt, fw = index.bucket_bits, index.ident_bits, index.fmt, index.field_bytes
    pipe = index.redis.pipeline(transaction=False)
    for b in buckets.tolist():
        pipe.hgetall(index.bucket_key(b))
    heads: list[np.ndarray] = []
    values: list[bytes] = []
    for b, content in zip(buckets.tolist(), pipe.execute(), strict=True):
        if not content:
            continue
        raw = np.frombuffer(b"".join(content.keys()), dtype=np.uint8)
        heads.append(
            (np.uint64(b) << np.uint64(ident_bits - bits)) | unpack_fields(raw.reshape(-1, fw))
        )
        values.extend(content.values())
    if not values:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint32)
    ident = np.concatenate(heads)
    fp_index, got, stop = parse_many(values, fmt)
    stops = np.flatnonzero(stop)
    rows = np.concatenate([ident[fp_index], ident[stops]])
    order = np.argsort(rows, kind="stable")
    seq = np.concatenate([got, np.full(stops.size, STOP_SEQ, dtype=np.uint32)])
    return rows[order], seq.astype(np.uint32)[order]


class SnapshotFolder:
    """The snapshots a process may answer lookups from (``YINJI_SNAPSHOT_DIR``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._open: dict[str, Snapshot] = {}
        self._lock = Lock()

    def _opened(self, index: RedisInvertedIndex, version: str) -> Snapshot | None:
        with self._lock:
            snap = self._open.get(index.prefix)
            if snap is not None and snap.version == version:
                return snap
            path = snapshot_path(self.folder, index.prefix, version)
            if not path.is_dir():
                return None
            try:
                snap = Snapshot(path)
            except (OSError, ValueError, KeyError):
                return None  # deleted meanwhile or unreadable: Redis answers
            self._open[index.prefix] = snap
            return snap

    def answering(
        self, index: RedisInvertedIndex, state: OverlayState | None = None
    ) -> tuple[Snapshot, bytes | None] | None:
        """The snapshot that may answer lookups of ``index`` and the dirty buckets it
        must leave to Redis (None: none, it is at the index's version), or None: the one
        rule for when a snapshot may answer. ``state`` is read now unless given."""
        if state is None:
            state = index.overlay_state()
        if state.version is None:
            return None
        snap = self._opened(index, state.version)
        if snap is not None:
            return snap, None
        if state.base is None:
            return None
        snap = self._opened(index, state.base)
        if snap is None or snap.layout is None or snap.layout != state.base_layout:
            return None
        return snap, state.dirty

    def current(self, index: RedisInvertedIndex, version: str | None = None) -> Snapshot | None:
        """The snapshot of ``index`` at exactly its current version (nothing written
        since; read now unless given), or None."""
        if version is None:
            version = index.version()
        if version is None:
            return None
        return self._opened(index, version)

    def lookup(
        self, index: RedisInvertedIndex, fps: np.ndarray, *, stop_mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, int] | None:
        """``index.lookup(fps)``: from the snapshot for the fingerprints of buckets not
        written since it was taken, from Redis for the others; None when no snapshot
        may answer (the caller asks Redis). With tail segments (``tracker.indexes.tail``)
        each one answers the same way, from its own snapshot or from Redis."""
        state = index.overlay_state()
        found = self.answering(index, state)
        if found is None:
            return None
        fps = np.asarray(fps, dtype=np.uint64)
        if not state.tails:
            return self._answer(index, fps, found, stop_mask)
        mask = np.zeros(fps.size, dtype=bool)
        main = self._answer(index, fps, found, mask)
        if main is None:
            return None
        parts = [(main, mask)]
        for number in state.tails:
            segment = index.tail(number)
            mask = np.zeros(fps.size, dtype=bool)
            got = self.lookup(segment, fps, stop_mask=mask)
            parts.append((segment.lookup(fps, stop_mask=mask) if got is None else got, mask))
        if not index.tails_held(state.tails):
            return None  # a segment dropped meanwhile (a merge ended): Redis answers
        return union(fps.size, parts, index.stop_df, stop_mask)

    def _answer(
        self,
        index: RedisInvertedIndex,
        fps: np.ndarray,
        found: tuple[Snapshot, bytes | None],
        stop_mask: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray, int] | None:
        """``lookup`` of the index's own buckets, ``found`` answering them (None: all
        of them written since, Redis answers). What Redis answers may include the tail
        segments: a union with them again changes nothing."""
        snap, dirty = found
        if dirty is None or fps.size == 0:
            return snap.lookup(fps, stop_mask=stop_mask)
        late = snap.dirty(fps, dirty)
        if not late.any():
            return snap.lookup(fps, stop_mask=stop_mask)
        if late.all():
            return None
        parts = []
        for where, source in ((np.flatnonzero(~late), snap), (np.flatnonzero(late), index)):
            mask = np.zeros(where.size, dtype=bool)
            at, seqs, stopped = source.lookup(fps[where], stop_mask=mask)
            if stop_mask is not None:
                stop_mask[where] |= mask
            parts.append((where[at], seqs, stopped))
        fp_index = np.concatenate([p[0] for p in parts])
        order = np.argsort(fp_index, kind="stable")  # fingerprint order, as Redis gives
        seqs = np.concatenate([p[1] for p in parts])
        return fp_index[order], seqs[order], sum(p[2] for p in parts)

    def state(self, index: RedisInvertedIndex) -> dict[str, str | int | float | None]:
        """For ``yinji index stats``: whether lookups are answered locally, and how many
        buckets were written since (those go to Redis until the next snapshot)."""
        overlay = index.overlay_state()
        found = self.answering(index, overlay)
        if found is not None:
            snap, dirty = found
            written = overlay.dirty_buckets() if dirty is not None else 0
            buckets = 1 << snap.bucket_bits if snap.bucket_bits is not None else 0
            return {
                "state": "current",
                "version": snap.version,
                "postings": int(snap.meta.get("postings", 0)),
                "taken_at": snap.meta.get("taken_at"),
                "path": str(snap.path),
                "buckets_written_since": written,
                "written_fraction": round(written / buckets, 4) if buckets else 0.0,
            }
        older = sorted(self.folder.glob(f"{folder_name(index.prefix)}-*"))
        return {
            "state": "stale" if older else "none",
            "advice": "yinji index snapshot: local lookups for faster checks / 建立本地索引快照",
        }

    def written_fraction(self, index: RedisInvertedIndex) -> float | None:
        """The share of buckets written since the snapshot that answers lookups (0.0:
        none), or None when no snapshot answers."""
        overlay = index.overlay_state()
        found = self.answering(index, overlay)
        if found is None:
            return None
        snap, dirty = found
        if dirty is None or snap.bucket_bits is None:
            return 0.0
        return overlay.dirty_buckets() / (1 << snap.bucket_bits)
