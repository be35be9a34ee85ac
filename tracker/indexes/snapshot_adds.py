"""The rows of a snapshot after adds (``tracker.indexes.snapshot``): the snapshot
current when the adds began, with the postings they recorded (``tracker.indexes.recording``)
merged in as Redis merged them, so that the snapshot after an add is written without
reading the index back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tracker.indexes.recording import STOP_SEQ, Recording
from tracker.indexes.snapshot_files import Snapshot, snapshot_path

if TYPE_CHECKING:
    from tracker.indexes.inverted import RedisInvertedIndex


def with_adds(
    old: Snapshot, ident: np.ndarray, seqs: np.ndarray, stop_df: int
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a snapshot (``old``: its ``ident`` and ``seq`` arrays) with postings
    ``(ident, seqs)`` added (in arrival order) as ``lua/add_many.lua`` adds them: a
    field's new seqs after its stored ones, each once; past ``stop_df`` a stop marker;
    a stop marker unchanged."""
    # The fields added to, numbered densely in identity order, and each added posting's
    # number: from one sort of the added identities (a search of every row among the
    # fields took ~1.5 s of an add of 10 M characters at 100 M, issue #37). Which of
    # equal identities comes first does not change their number: no stable sort needed.
    by_ident = np.argsort(ident)
    sorted_ident = ident[by_ident]
    starts = np.ones(sorted_ident.size, dtype=bool)
    starts[1:] = sorted_ident[1:] != sorted_ident[:-1]
    touched = sorted_ident[starts]
    a_field = np.empty(ident.size, dtype=np.int64)
    a_field[by_ident] = np.cumsum(starts) - 1
    lo = np.searchsorted(old.ident, touched, side="left").astype(np.int64)
    cnt = run_lengths(old.ident, touched, lo)
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
    # The first position of each (field, seq): the smallest of its group after any
    # sort of the keys (a stable sort, which would make it the group's first, cost
    # ~0.3 s of ~2 at 100 M).
    key = (field << np.uint64(32)) | c_seq.astype(np.uint64)
    order = np.argsort(key)
    key = key[order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    keep = np.minimum.reduceat(order, np.flatnonzero(first)) if order.size else order
    keep = np.sort(keep)  # in order of position, then grouped by field:
    keep = keep[np.argsort(field[keep], kind="stable")]
    k_ident, k_seq = c_ident[keep], c_seq[keep]
    fields = distinct_sorted(k_ident)  # (k_ident is by field)
    count = np.diff(np.append(np.searchsorted(k_ident, fields), k_ident.size))
    over = (count > stop_df) & ~np.isin(fields, stopped)
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
    return out_ident, out_seq


def run_lengths(rows: np.ndarray, wanted: np.ndarray, lo: np.ndarray) -> np.ndarray:
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


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of a sorted array (``np.unique`` hashes: slower here)."""
    if values.size == 0:
        return values
    return values[np.concatenate([[True], values[1:] != values[:-1]])]


def rows_with_adds(
    folder: Path, index: RedisInvertedIndex, version: str, recording: Recording
) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """The rows of the snapshot at ``version`` (the one current when the adds began)
    with the recorded adds applied (``tracker.indexes.snapshot_adds``). None without
    that snapshot."""
    try:
        old = Snapshot(snapshot_path(folder, index.prefix, version))
    except (OSError, ValueError, KeyError):
        return None
    ident, seqs = recording.postings_added()
    rows, got = with_adds(old, ident, seqs, index.stop_df)
    return [rows], [got]
