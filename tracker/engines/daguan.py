"""The pinyin-initial (Daguan) engine: window fingerprints in the Redis inverted index.

Mothers are fingerprinted at the sparse stride of the parameters (windows overlap
by ``overlap``); a suspect is fingerprinted densely (every offset), so whichever way
a copy is shifted, every mother window inside it meets a suspect window that starts
at the same letter. A candidate's strength is the number of distinct suspect
fingerprints it shares, each weighted by 1/df (rarer fingerprints say more).

A mother needs ``min_hits`` distinct fingerprints to be a candidate, except that up to
``weak_candidates`` mothers with fewer are proposed after the others when a fingerprint
they share is held by no other mother: sentence-shuffled verse (lines of 5-7
characters) leaves one 24-letter window of the mother intact in a thousand characters,
if any, and that one window is all the index can say (issue #13).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tracker.common.records import JSONObject, json_int
from tracker.engines.base import Candidate, Engine
from tracker.fingerprints.daguan import (
    Fingerprinter,
    FingerprintParams,
    Reference,
    ReferenceRecord,
    distinct,
)
from tracker.indexes import tail
from tracker.indexes.bulk import BulkLoader
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.keys import RESHARD_FIELDS, bits_for
from tracker.indexes.snapshot import SnapshotFolder

if TYPE_CHECKING:
    from tracker.engines.base import RedisClient

# Suspect windows (at query stride 1) that a run of stopped fingerprints must span to be
# a much-copied text rather than a boilerplate formula: 48 windows of 24 initials span
# 71 initials.
LONG_RUN = 48

# A candidate before its edition group is expanded: (weak, posted id, strength,
# (evidence, common)).
Proposal = tuple[bool, int, float, tuple[np.ndarray, np.ndarray | None]]


class DaguanEngine(Engine):
    """Implements the capabilities ``LocalCopies``, ``Growable``, ``BulkLoading`` and
    ``CandidateOptions`` (``tracker.engines.capabilities``)."""

    name = "daguan"

    def __init__(
        self,
        redis: RedisClient,
        prefix: str,
        *,
        params: FingerprintParams | JSONObject | None = None,
        reference: Reference | JSONObject | None = None,
        bucket_bits: int | None = None,
        stop_df: int = 16,
        min_hits: int = 2,
        weak_candidates: int = 4,
        query_stride: int = 1,
    ) -> None:
        super().__init__(redis, prefix)
        # Options may come from the store's JSON meta (``yinji index configure``).
        if isinstance(params, dict):  # FingerprintParams and Reference check the values
            params = FingerprintParams(**cast(dict[str, Any], params))
        if isinstance(reference, dict):
            reference = Reference.from_json(cast(ReferenceRecord, reference))
        self.fingerprinter = Fingerprinter(params, reference)
        # Identical or near-identical mothers are one text to the index (editions), so
        # that many copies of a work cannot turn its fingerprints into stop words.
        self.index = RedisInvertedIndex(
            redis, self.base, bucket_bits=bucket_bits, stop_df=stop_df, editions=True
        )
        self.min_hits = min_hits
        self.weak_candidates = weak_candidates
        self.query_stride = query_stride
        # Local copies of the index (``tracker.indexes.snapshot.SnapshotFolder``), set
        # by the library: a lookup answers from the copy taken at the index's current
        # version, if there is one, else from Redis.
        self.snapshots: SnapshotFolder | None = None

    @property
    def window(self) -> int:
        """Initials one fingerprint covers (the verifier's evidence span)."""
        return self.fingerprinter.params.granularity

    @property
    def params(self) -> FingerprintParams:
        return self.fingerprinter.params

    def mother_fingerprints(self, text: str) -> np.ndarray:
        return distinct(self.fingerprinter.fingerprints(text).values)

    def add(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        self.index.add(items)

    def remove(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        self.index.remove(items)

    def needs_growth(self, extra: int = 0) -> bool:
        """Whether buckets would hold more fields than the compact encoding keeps well
        after adding ``extra`` fingerprints."""
        return self.index.fields_estimate() + extra > RESHARD_FIELDS << self.index.refresh()

    def grow(self, extra: int = 0) -> int | None:
        """Reshard the index before its buckets outgrow the compact encoding."""
        return self.index.grow(extra)

    def reshard(self, bits: int | None = None) -> int:
        """Reshard the index to ``bits`` (default: what its size calls for)."""
        return self.index.reshard(
            bits if bits is not None else bits_for(self.index.fields_estimate())
        )

    def candidates_with_evidence(self, text: str, *, limit: int = 20) -> list[Candidate]:
        hits = self._suspect_hits(text)
        if hits is None:
            return []
        found = self._ranked(hits, limit)
        # The index holds edition groups: each one found stands for all its editions.
        found += self._stopped_runs(hits, {c[1] for c in found})
        editions = self.index.members(sorted({posted for _, posted, _, _ in found}))
        return [
            Candidate(seq, power, evidence, common, weak=weak)
            for weak, posted, power, (evidence, common) in found
            for seq in editions[posted]
        ]

    def _ranked(self, hits: SuspectHits, limit: int) -> list[Proposal]:
        """``(weak, posted id, strength, (evidence, common))`` of the mothers (edition
        groups) the postings rank, strongest first, at most ``limit``."""
        if hits.seqs.size == 0:
            return []
        # Windows whose fingerprints many mothers hold are boilerplate: they make no
        # candidate, but the verifier learns where they are (``Candidate.common``).
        common = boilerplate_windows(
            hits.df_pos,
            span=max(1, self.params.stride // self.query_stride),
            stop_df=self.index.stop_df,
        )
        pairs = window_mother_pairs(hits, keep=~common)
        if pairs is None:
            return []
        seqs, strength, ranked = rank_mothers(
            pairs, hits.df_fp, self.min_hits, weak=self.weak_candidates
        )
        evidence = evidence_by_mother(pairs, hits.starts)
        common_starts = hits.starts[common]
        return [
            (
                rank >= ranked.strong,
                int(seqs[i]),
                float(strength[i]),
                (evidence(int(seqs[i])), common_starts),
            )
            for rank, i in enumerate(ranked[:limit])
        ]

    def _stopped_runs(self, hits: SuspectHits, known: set[int]) -> list[Proposal]:
        """Weak candidates for long runs of stopped windows (issue #25): a passage
        spanning ``LONG_RUN`` or more windows whose indexed fingerprints more than
        ``stop_df`` distinct texts hold is no boilerplate formula but a much-copied text
        (one inside many different works). The holders its stop markers kept (the first
        4 of each) that hold at least half of the run's fingerprints are proposed, the
        run as their evidence; the verifier decides, when the other candidates leave room
        for it."""
        run = max(1, LONG_RUN // self.query_stride)  # windows a run spans, at least
        step = max(1, self.params.stride // self.query_stride)  # between mother windows
        if hits.stopped * step < run or hits.fps is None or hits.stop_mask is None:
            return []
        # Mothers are indexed at their stride: a shared passage shows as stopped windows
        # about ``step`` apart. A run: stopped windows no more than two steps apart.
        pos = np.flatnonzero(hits.stop_mask[hits.inverse])
        cuts = np.flatnonzero(np.diff(pos) > 2 * step) + 1
        runs = [part for part in np.split(pos, cuts) if part.size and part[-1] - part[0] >= run - 1]
        if not runs:
            return []
        # Only the stop markers of long runs are read again, for the holders they kept.
        wanted = np.unique(np.concatenate([hits.inverse[part] for part in runs]))
        at, held = self.index.stop_samples(hits.fps[wanted])
        out: list[Proposal] = []
        for part in runs:
            run_fps = np.unique(hits.inverse[part])
            mine = np.isin(wanted[at], run_fps)
            seqs, counts = np.unique(held[mine], return_counts=True)
            evidence = np.unique(hits.starts[part])
            for seq, count in zip(seqs.tolist(), counts.tolist(), strict=True):
                if 2 * count >= run_fps.size and seq not in known:
                    known.add(seq)
                    out.append((True, seq, count / run_fps.size, (evidence, None)))
        return out

    def _suspect_hits(self, text: str) -> SuspectHits | None:
        """The suspect's dense windows and the postings of their fingerprints, or None when
        no window's fingerprint is indexed."""
        # Dense (every ``query_stride`` initials): whichever way a copy is shifted, each
        # sparse mother window inside it meets a suspect window starting at its letter.
        dense = self.fingerprinter.fingerprints(text, stride=self.query_stride)
        fps, inverse = np.unique(dense.values, return_inverse=True)
        stop_mask = np.zeros(fps.size, dtype=bool)
        found = (
            self.snapshots.lookup(self.index, fps, stop_mask=stop_mask)
            if self.snapshots is not None
            else None
        )
        if found is None:
            found = self.index.lookup(fps, stop_mask=stop_mask)
        fp_index, seqs, stopped = found
        if seqs.size == 0 and stopped * self.params.stride < LONG_RUN:
            return None
        df_fp = np.bincount(fp_index, minlength=fps.size)
        return SuspectHits(
            starts=dense.starts,
            inverse=inverse,
            fp_index=fp_index,
            seqs=seqs,
            df_fp=df_fp,
            df_pos=df_fp[inverse],
            fps=fps,
            stopped=stopped,
            stop_mask=stop_mask,
        )

    def stats(self) -> JSONObject:
        stats = self.index.stats()
        return {
            "engine": self.name,
            "params": self.params.to_dict(),
            "keys": json_int(stats["buckets"])
            + json_int(stats.get("edition_keys", 0))
            + int(self.redis.exists(self.index.layout_key))
            + int(self.redis.exists(self.index.version_key)),
            **stats,
        }

    def bulk_loader(self, folder: Path, *, chars: int = 0) -> BulkLoader | None:
        """A bulk loader (``tracker.indexes.bulk.BulkLoader``, temporary files under
        ``folder``) when the index is empty; into a new tail segment of it when it is
        not and ``chars`` (characters coming) reach ``MIN_TAIL_CHARS``
        (``tracker.indexes.tail``); else None (the add path)."""
        if self.index.is_empty():
            return BulkLoader(self.index, folder)
        if chars >= tail.MIN_TAIL_CHARS:
            return BulkLoader(self.index, folder, into=self.index.tail(tail.new_number(self.index)))
        return None


@dataclass
class SuspectHits:
    """A suspect's dense windows and the postings their fingerprints found.

    ``starts[w]``: where window ``w`` starts (in initials); ``inverse[w]``: its distinct
    fingerprint; ``fp_index``/``seqs``: the postings as parallel arrays, mother
    ``seqs[i]`` holds distinct fingerprint ``fp_index[i]``; ``df_fp[f]``: how many mothers
    hold distinct fingerprint ``f``; ``df_pos[w]``: the same for window ``w``'s; ``fps``:
    the distinct fingerprints; ``stopped``: how many of them are stop words, ``stop_mask``
    which."""

    starts: np.ndarray
    inverse: np.ndarray
    fp_index: np.ndarray
    seqs: np.ndarray
    df_fp: np.ndarray
    df_pos: np.ndarray
    fps: np.ndarray | None = None
    stopped: int = 0
    stop_mask: np.ndarray | None = None  # per distinct fingerprint: a stop word


@dataclass
class HitPairs:
    """One row per (suspect window, mother) hit: ``pos`` the window, ``seq`` the mother,
    ``fp`` the window's distinct fingerprint."""

    pos: np.ndarray
    seq: np.ndarray
    fp: np.ndarray


def boilerplate_windows(df_pos: np.ndarray, *, span: int, stop_df: int) -> np.ndarray:
    """Which suspect windows (``df_pos``: postings per window) are boilerplate: more than
    ``stop_df`` mothers within ``span`` consecutive windows before or after them."""
    # Mothers hold a shared passage at arbitrary phases of their sparse windows, so
    # one exact window's df undercounts boilerplate by up to the stride. Summing df
    # over a stride of consecutive dense windows counts each such mother once.
    csum = np.concatenate([[0], np.cumsum(df_pos)])
    n = df_pos.size
    ends = np.arange(1, n + 1)
    back = csum[ends] - csum[np.maximum(ends - span, 0)]
    fwd = csum[np.minimum(np.arange(n) + span, n)] - csum[np.arange(n)]
    return np.asarray(np.maximum(back, fwd) > stop_df)


def window_mother_pairs(hits: SuspectHits, *, keep: np.ndarray) -> HitPairs | None:
    """Every (window, mother) hit of the windows selected by ``keep``, or None if none."""
    df_pos = hits.df_pos
    pos = np.flatnonzero(keep & (df_pos > 0))
    if pos.size == 0:
        return None
    # Postings grouped by fingerprint: those of distinct fingerprint f start at first[f].
    order = np.argsort(hits.fp_index, kind="stable")
    first = np.searchsorted(hits.fp_index[order], np.arange(hits.df_fp.size))
    seq_sorted = hits.seqs[order]
    # Window w repeated once per posting of its fingerprint, ``within`` counting them.
    reps = df_pos[pos]
    pair_pos = np.repeat(pos, reps)
    within = np.arange(pair_pos.size) - np.repeat(np.cumsum(reps) - reps, reps)
    pair_fp = hits.inverse[pair_pos]
    return HitPairs(pos=pair_pos, seq=seq_sorted[first[pair_fp] + within], fp=pair_fp)


class Ranked(list[int]):
    """Indexes of ranked mothers; the first ``strong`` have ``min_hits`` or more."""

    strong: int = 0


def rank_mothers(
    pairs: HitPairs, df_fp: np.ndarray, min_hits: int, *, weak: int = 0
) -> tuple[np.ndarray, np.ndarray, Ranked]:
    """``(seqs, strength, ranked)``: the mothers hit, each one's strength (distinct
    fingerprints shared, each weighted by 1/df: rarer fingerprints say more), and the
    indexes into both of the mothers with at least ``min_hits`` distinct fingerprints,
    strongest first (ties: smaller seq first), then at most ``weak`` of those with fewer
    that share a fingerprint no other mother holds (strength at least 1), strongest
    first."""
    # One key per distinct (mother, fingerprint): a fingerprint repeated in the suspect
    # counts once.
    key = np.unique(pairs.seq.astype(np.int64) << 32 | pairs.fp.astype(np.int64))
    k_seq = (key >> 32).astype(np.int64)
    k_fp = (key & 0xFFFFFFFF).astype(np.int64)
    seqs, which = np.unique(k_seq, return_inverse=True)
    hits = np.bincount(which)
    strength = np.bincount(which, weights=1.0 / df_fp[k_fp])
    order = [int(i) for i in np.argsort(-strength, kind="stable")]
    ranked = Ranked(i for i in order if hits[i] >= min_hits)
    ranked.strong = len(ranked)
    # A fingerprint of 24 letters held by one mother alone is rarely chance; the
    # verifier, not the index, decides whether it was copied.
    ranked += [i for i in order if hits[i] < min_hits and strength[i] >= 1.0][:weak]
    return seqs, strength, ranked


def evidence_by_mother(pairs: HitPairs, starts: np.ndarray) -> Callable[[int], np.ndarray]:
    """A function giving, for a mother, the sorted distinct suspect window starts (in
    initials) that hit it: the evidence the verifier checks passages against."""
    order = np.argsort(pairs.seq, kind="stable")
    seq_sorted = pairs.seq[order]

    def evidence(seq: int) -> np.ndarray:
        lo = np.searchsorted(seq_sorted, seq, side="left")
        hi = np.searchsorted(seq_sorted, seq, side="right")
        return np.unique(starts[pairs.pos[order[lo:hi]]])

    return evidence
