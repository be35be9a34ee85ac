"""Local read-only copies (snapshots) of the Redis inverted index, for fast checks.

A check looks up ~1,500 distinct fingerprints of a 2,000-character suspect. In Redis that
is one Lua call of ~1,500 HGETs, each a scan of a compact bucket: ~7 ms at 100 M
characters, half of a whole check (docs/BENCHMARKS.md). A snapshot holds the same
postings as sorted arrays on disk that every checking process memory-maps (the page
cache shares them between processes), so a lookup is two numpy binary searches.

**When a snapshot answers.** It is taken at one version of the index
(``RedisInvertedIndex.version``: raised before and after every write, see
``tracker.indexes.inverted``) and answers only while the index is at that version;
``SnapshotFolder.lookup`` reads the version (one round trip) before every lookup, and
after any write lookups go to Redis until a new snapshot is taken. So a check answers
the same from either: that rule lives here, in ``SnapshotFolder.current``, and nowhere
else. Snapshots are taken by ``yinji index snapshot`` (``Library.snapshot_index``) and
by the workers' periodic task; a take that saw a write meanwhile tries again.

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

import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from threading import Lock
from typing import Any

import numpy as np

from tracker.indexes.inverted import (
    RedisInvertedIndex,
    is_stop,
    mix64,
    parse_values,
    unpack_fields,
)
from tracker.timefmt import iso_utc

STOP_SEQ = np.uint32(0xFFFFFFFF)  # never a mother's seq (they count up from 1)
FORMAT = 1  # of the files


def folder_name(prefix: str) -> str:
    """The file-name-safe name of an index (``yinji:daguan`` -> ``yinji_daguan``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in prefix)


def snapshot_path(folder: Path, prefix: str, version: str) -> Path:
    epoch, n = version.split("/")
    return folder / f"{folder_name(prefix)}-{epoch}-{n}"


@dataclass
class SnapshotInfo:
    """What ``take_snapshot`` wrote."""

    path: Path
    version: str
    postings: int
    stopped: int
    bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "version": self.version,
            "postings": self.postings,
            "stop_fingerprints": self.stopped,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
        }


class Snapshot:
    """One snapshot, memory-mapped: ``lookup`` answers like ``RedisInvertedIndex.lookup``
    of the index at ``version``."""

    def __init__(self, path: Path) -> None:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: snapshot format {meta.get('format')!r}, not {FORMAT}")
        self.path = path
        self.version: str = meta["version"]
        self.ident_bits: int = int(meta["ident_bits"])
        self.meta = meta
        self.ident = np.load(path / "ident.npy", mmap_mode="r")
        self.seq = np.load(path / "seq.npy", mmap_mode="r")
        self.dir = np.load(path / "dir.npy", mmap_mode="r")
        self.dir_bits = int(meta["dir_bits"])
        if self.ident.shape != self.seq.shape or self.dir.size != (1 << self.dir_bits) + 1:
            raise ValueError(f"{path}: its arrays do not fit together")

    def lookup(
        self, fps: np.ndarray, *, stop_mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """``(fp_index, seqs, stopped)`` of distinct fingerprints, as the index gives them:
        postings in fingerprint order, a field's seqs in their stored order (stop words
        marked in ``stop_mask`` when given)."""
        fps = np.asarray(fps, dtype=np.uint64)
        if fps.size == 0 or self.ident.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32), 0
        wanted = mix64(fps) >> np.uint64(64 - self.ident_bits)
        # The directory narrows each search to a few rows: a plain binary search over
        # the whole array touched ~24 scattered pages a fingerprint (~4 ms a check at
        # 100 M characters); these few rows share one or two.
        slot = (wanted >> np.uint64(self.ident_bits - self.dir_bits)).astype(np.int64)
        lo = self.dir[slot].astype(np.int64)
        hi = self.dir[slot + 1].astype(np.int64)
        lo = _lower_bound(self.ident, wanted, lo, hi.copy(), strict=True)
        count = _lower_bound(self.ident, wanted, lo.copy(), hi, strict=False) - lo
        found = np.flatnonzero(count)
        stop = np.zeros(fps.size, dtype=bool)
        stop[found] = self.seq[lo[found]] == STOP_SEQ  # a stop marker is its field's one row
        count[stop] = 0
        if stop_mask is not None:
            stop_mask |= stop
        total = int(count.sum())
        fp_index = np.repeat(np.arange(fps.size, dtype=np.int64), count)
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        seqs = np.asarray(self.seq[np.repeat(lo, count) + within], dtype=np.uint32)
        return fp_index, seqs, int(stop.sum())


def _lower_bound(
    rows: np.ndarray, wanted: np.ndarray, lo: np.ndarray, hi: np.ndarray, *, strict: bool
) -> np.ndarray:
    """Per query, the first row in ``[lo, hi)`` with ``rows >= wanted`` (``strict``) or
    ``rows > wanted``: a binary search run for all queries at once."""
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) >> 1
        value = rows[np.where(open_, mid, 0)]
        below = (value < wanted) if strict else (value <= wanted)
        go_up = open_ & below
        lo = np.where(go_up, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)


def directory(chunks: list[np.ndarray], ident_bits: int, dir_bits: int) -> np.ndarray:
    """``dir[s]``: the first row whose identity's top ``dir_bits`` are ``s`` or more, of
    the sorted identities ``chunks`` one after the other."""
    counts = np.zeros(1 << dir_bits, dtype=np.int64)
    for chunk in chunks:
        top = (chunk >> np.uint64(ident_bits - dir_bits)).astype(np.int64)
        counts += np.bincount(top, minlength=1 << dir_bits)
    out = np.zeros((1 << dir_bits) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out.astype(np.uint32 if out[-1] < 2**32 else np.uint64)


def directory_bits(rows: int, ident_bits: int) -> int:
    """About 8 rows a directory slot."""
    return max(1, min(ident_bits, (max(rows, 1) // 8).bit_length()))


def take_snapshot(
    index: RedisInvertedIndex, folder: Path, *, batch: int = 1024, attempts: int = 3
) -> SnapshotInfo:
    """Copy the index into ``folder`` at its current version (``attempts`` tries when
    writes come meanwhile); older snapshots of this index are deleted."""
    started = time.perf_counter()
    for _ in range(attempts):
        index.wait_for_move()
        before = index.version()
        if before is None:
            if not index.redis.exists(index.layout_key):
                raise ValueError(f"index {index.prefix} holds nothing yet: no snapshot to take")
            index._bump_version()  # written before versions were kept: its first one
            before = index.version()
            assert before is not None
        idents, seqs = _copy(index, batch)
        if index.version() == before:
            break
    else:
        raise RuntimeError(
            f"index {index.prefix} was written to during each of {attempts} snapshots: "
            "take one when ingests are done"
        )
    folder.mkdir(parents=True, exist_ok=True)
    final = snapshot_path(folder, index.prefix, before)
    rows = sum(c.size for c in idents)
    stopped = sum(int(np.count_nonzero(c == STOP_SEQ)) for c in seqs)
    if not final.is_dir():
        tmp = folder / f".tmp-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            # Chunks come sorted and in increasing identity ranges (buckets in order):
            # written one after the other, never all in memory twice.
            dir_bits = directory_bits(rows, index.ident_bits)
            np.save(tmp / "dir.npy", directory(idents, index.ident_bits, dir_bits))
            _write_chunks(tmp / "ident.npy", idents, np.uint64, rows)
            _write_chunks(tmp / "seq.npy", seqs, np.uint32, rows)
            meta = {
                "format": FORMAT,
                "index": index.prefix,
                "version": before,
                "ident_bits": index.ident_bits,
                "dir_bits": dir_bits,
                "postings": rows - stopped,
                "stop_fingerprints": stopped,
                "taken_at": iso_utc(datetime.now(UTC)),
            }
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    for old in folder.glob(f"{folder_name(index.prefix)}-*"):
        if old != final and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    size = sum(f.stat().st_size for f in final.iterdir())
    return SnapshotInfo(final, before, rows - stopped, stopped, size, time.perf_counter() - started)


def _write_chunks(path: Path, chunks: list[np.ndarray], dtype: Any, rows: int) -> None:
    """Chunks into one .npy file, each chunk freed once written."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(rows,))
    at = 0
    while chunks:
        chunk = chunks.pop(0)
        out[at : at + chunk.size] = chunk
        at += chunk.size
    out.flush()
    del out


def _copy(index: RedisInvertedIndex, batch: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every posting of the index as (identity, seq) rows, in chunks sorted by identity
    one after the other (a field's seqs in their stored order); a stop marker is one row
    with ``STOP_SEQ``. Buckets are read ``batch`` at a time (pipelined HGETALLs): the
    bucket is an identity's top bits, so each batch is a range of identities."""
    index.refresh()
    bits, ident_bits, fmt, fw = index.bucket_bits, index.ident_bits, index.fmt, index.field_bytes
    idents: list[np.ndarray] = []
    seqs: list[np.ndarray] = []
    for a in range(0, 1 << bits, batch):
        pipe = index.redis.pipeline(transaction=False)
        for b in range(a, min(a + batch, 1 << bits)):
            pipe.hgetall(index.bucket_key(b))
        heads: list[np.ndarray] = []
        values: list[bytes] = []
        for i, content in enumerate(pipe.execute()):
            if not content:
                continue
            raw = np.frombuffer(b"".join(content.keys()), dtype=np.uint8)
            heads.append(
                (np.uint64(a + i) << np.uint64(ident_bits - bits))
                | unpack_fields(raw.reshape(-1, fw))
            )
            values.extend(content.values())
        if not values:
            continue
        ident = np.concatenate(heads)
        fp_index, got, _ = parse_values(values, fmt)
        stops = np.flatnonzero(np.fromiter((is_stop(v) for v in values), bool, len(values)))
        rows = np.concatenate([ident[fp_index], ident[stops]])
        order = np.argsort(rows, kind="stable")
        idents.append(rows[order])
        seqs.append(
            np.concatenate([got, np.full(stops.size, STOP_SEQ, dtype=np.uint32)]).astype(np.uint32)[
                order
            ]
        )
    return idents, seqs


class SnapshotFolder:
    """The snapshots a process may answer lookups from (``YINJI_SNAPSHOT_DIR``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._open: dict[str, Snapshot] = {}
        self._lock = Lock()

    def current(self, index: RedisInvertedIndex, version: str | None = None) -> Snapshot | None:
        """The snapshot of ``index`` at its current version (read now unless given), or
        None: the one rule for when a snapshot may answer."""
        if version is None:
            version = index.version()
        if version is None:
            return None
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

    def lookup(
        self, index: RedisInvertedIndex, fps: np.ndarray, *, stop_mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, int] | None:
        """``index.lookup(fps)`` from the snapshot at the index's version, or None when
        there is none (the caller asks Redis)."""
        snap = self.current(index)
        return snap.lookup(fps, stop_mask=stop_mask) if snap is not None else None

    def state(self, index: RedisInvertedIndex) -> dict[str, Any]:
        """For ``yinji index stats``: whether lookups are answered locally."""
        version = index.version()
        snap = self.current(index, version)
        if snap is not None:
            return {
                "state": "current",
                "version": snap.version,
                "postings": int(snap.meta.get("postings", 0)),
                "taken_at": snap.meta.get("taken_at"),
                "path": str(snap.path),
            }
        older = sorted(self.folder.glob(f"{folder_name(index.prefix)}-*"))
        return {
            "state": "stale" if older else "none",
            "advice": "yinji index snapshot: local lookups for faster checks / 建立本地索引快照",
        }
