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
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from threading import Lock
from typing import Any

import numpy as np

from tracker.indexes.codec import parse_many
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.keys import mix64, unpack_fields
from tracker.indexes.layout import OverlayState
from tracker.indexes.recording import STOP_SEQ, Recording
from tracker.timefmt import iso_utc

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

    def to_dict(self) -> dict[str, str | int | float]:
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
        # The layout it was copied in (snapshots written before the overlay have none:
        # they answer only at their exact version).
        self.layout: str | None = meta.get("layout")
        self.bucket_bits: int | None = meta.get("bucket_bits")
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

    def dirty(self, fps: np.ndarray, bitmap: bytes) -> np.ndarray:
        """Which fingerprints live in a bucket that ``bitmap`` (SETBIT order, in this
        snapshot's layout) marks as written since the snapshot."""
        assert self.bucket_bits is not None
        marks = np.frombuffer(bitmap, dtype=np.uint8)
        wanted = mix64(np.asarray(fps, dtype=np.uint64)) >> np.uint64(64 - self.ident_bits)
        bucket = (wanted >> np.uint64(self.ident_bits - self.bucket_bits)).astype(np.int64)
        byte = bucket >> 3
        inside = byte < marks.size
        out = np.zeros(bucket.size, dtype=bool)
        out[inside] = (marks[byte[inside]] >> (7 - (bucket[inside] & 7)).astype(np.uint8)) & 1 == 1
        return out

    def bucket_bounds(self) -> np.ndarray:
        """``rows[b]``: the first row of bucket ``b`` (``2**bucket_bits + 1`` entries)."""
        assert self.bucket_bits is not None
        heads = np.arange((1 << self.bucket_bits) + 1, dtype=np.uint64) << np.uint64(
            self.ident_bits - self.bucket_bits
        )
        return np.searchsorted(self.ident, heads, side="left").astype(np.int64)


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
            rows = (
                _with_adds(folder, index, f"{epoch}/{recording.start}", recording)
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


def _with_adds(
    folder: Path, index: RedisInvertedIndex, version: str, recording: Recording
) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """The rows of the snapshot at ``version`` (the one current when the adds began)
    with the recorded adds applied as ``lua/add_many.lua`` applies them: a field's new
    seqs after its stored ones, each once; past ``stop_df`` a stop marker; a stop
    marker unchanged. None without that snapshot."""
    try:
        old = Snapshot(snapshot_path(folder, index.prefix, version))
    except (OSError, ValueError, KeyError):
        return None
    ident, seqs = recording.postings_added()
    # The fields added to, numbered densely in identity order, and each added posting's
    # number: from one sort of the added identities (a search of every row among the
    # fields took ~1.5 s of an add of 10 M characters at 100 M, issue #37).
    by_ident = np.argsort(ident, kind="stable")
    sorted_ident = ident[by_ident]
    starts = np.ones(sorted_ident.size, dtype=bool)
    starts[1:] = sorted_ident[1:] != sorted_ident[:-1]
    touched = sorted_ident[starts]
    a_field = np.empty(ident.size, dtype=np.int64)
    a_field[by_ident] = np.cumsum(starts) - 1
    lo = np.searchsorted(old.ident, touched, side="left").astype(np.int64)
    cnt = _run_lengths(old.ident, touched, lo)
    within = np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    at = np.repeat(lo, cnt) + within  # the old rows of the fields added to
    o_ident = np.asarray(old.ident[at])
    o_seq = np.asarray(old.seq[at])
    stopped = o_ident[o_seq == STOP_SEQ]
    fresh = ~np.isin(ident, stopped)  # adds to a stop marker change nothing
    c_ident = np.concatenate([o_ident, ident[fresh]])
    c_seq = np.concatenate([o_seq, seqs[fresh]])
    # Rows in their order (stored first, then as they came); each (field, seq) kept
    # once, where it came first. Fields numbered densely so that (field, seq) and
    # (field, position) each fit one uint64 key (stable radix sorts, not lexsorts).
    field = np.concatenate(
        [np.repeat(np.arange(touched.size, dtype=np.int64), cnt), a_field[fresh]]
    ).astype(np.uint64)
    order = np.argsort((field << np.uint64(32)) | c_seq.astype(np.uint64), kind="stable")
    key = ((field << np.uint64(32)) | c_seq.astype(np.uint64))[order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    keep = np.sort(order[first])  # in order of position, then grouped by field:
    keep = keep[np.argsort(field[keep], kind="stable")]
    k_ident, k_seq = c_ident[keep], c_seq[keep]
    fields = _distinct_sorted(k_ident)  # (k_ident is by field)
    count = np.diff(np.append(np.searchsorted(k_ident, fields), k_ident.size))
    over = (count > index.stop_df) & ~np.isin(fields, stopped)
    drop = np.repeat(over, count)
    new_ident = np.concatenate([k_ident[~drop], fields[over]])
    new_seq = np.concatenate([k_seq[~drop], np.full(int(over.sum()), STOP_SEQ, np.uint32)])
    rest = np.ones(old.ident.size, dtype=bool)
    rest[at] = False
    kept_ident = np.asarray(old.ident)[rest]
    kept_seq = np.asarray(old.seq)[rest]
    # The new rows (sorted by field, a field's rows in stored order) go between the
    # kept ones, which hold none of their fields: one pass, no sort of everything.
    by_field = np.argsort(new_ident, kind="stable")
    new_ident, new_seq = new_ident[by_field], new_seq[by_field]
    slot = np.searchsorted(kept_ident, new_ident) + np.arange(new_ident.size)
    size = kept_ident.size + new_ident.size
    out_ident = np.empty(size, dtype=np.uint64)
    out_seq = np.empty(size, dtype=np.uint32)
    is_new = np.zeros(size, dtype=bool)
    is_new[slot] = True
    out_ident[slot], out_seq[slot] = new_ident, new_seq
    out_ident[~is_new], out_seq[~is_new] = kept_ident, kept_seq
    return [out_ident], [out_seq]


def _run_lengths(rows: np.ndarray, wanted: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """How many rows from ``lo`` on equal ``wanted`` (``rows`` sorted, ``lo`` the first
    row ≥ ``wanted``): a field holds a few rows, so stepping forward while they match
    reads a few rows a field instead of a second binary search over all of them."""
    cnt = np.zeros(wanted.size, dtype=np.int64)
    live = np.flatnonzero(lo < rows.size)
    while live.size:
        at = lo[live] + cnt[live]
        ok = at < rows.size
        live, at = live[ok], at[ok]
        same = np.asarray(rows[at]) == wanted[live]
        live = live[same]
        cnt[live] += 1
    return cnt


def _distinct_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of a sorted array (``np.unique`` hashes: slower here)."""
    if values.size == 0:
        return values
    return values[np.concatenate([[True], values[1:] != values[:-1]])]


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


def _drop_others(folder: Path, prefix: str, final: Path) -> None:
    """Older snapshots of the index deleted (a process reading one keeps its mapping)."""
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
    folder.mkdir(parents=True, exist_ok=True)
    rows = sum(c.size for c in idents)
    stopped = sum(int(np.count_nonzero(c == STOP_SEQ)) for c in seqs)
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
            "version": version,
            "ident_bits": index.ident_bits,
            "bucket_bits": index.bucket_bits,
            "layout": layout,
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


def _write_chunks(path: Path, chunks: list[np.ndarray], dtype: Any, rows: int) -> None:
    """Chunks into one .npy file, each chunk freed once written."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(rows,))
    at = 0
    chunks.reverse()
    while chunks:
        chunk = chunks.pop()
        out[at : at + chunk.size] = chunk
        at += chunk.size
    out.flush()
    del out


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
        may answer (the caller asks Redis)."""
        found = self.answering(index)
        if found is None:
            return None
        snap, dirty = found
        fps = np.asarray(fps, dtype=np.uint64)
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
