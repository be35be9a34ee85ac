"""The fine comparison, step 3 (``tracker.matching.align``): runs joined into clusters, the
alignment's result types."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

from tracker.common.records import Passage
from tracker.matching.align_seeds import AlignParams, Prepared, _runs, seeds


def _coverage(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of half-open intervals."""
    ordered = sorted(intervals)
    if not ordered:
        return 0
    total = 0
    start, end = ordered[0]
    for a, b in ordered[1:]:
        if a > end:
            total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    return total + end - start


def _joined_span(intervals: list[tuple[int, int]], gap: int) -> int:
    """Length of the intervals' union once those at most ``gap`` apart are joined (the
    gaps between them counted in)."""
    ordered = sorted(intervals)
    total = 0
    start, end = ordered[0]
    for a, b in ordered[1:]:
        if a > end + gap:
            total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    return total + end - start


# A run of shared initials: suspect start, suspect end, mother start, mother end (ends
# exclusive, in initials).
Run = tuple[int, int, int, int]


@dataclass
class _Cluster:
    """A passage in the making: the runs joined so far and the span they cover."""

    s_start: int
    s_end: int
    m_start: int
    m_end: int
    runs: list[Run]
    diag: int  # mother - suspect offset of the latest anchor-length run

    @classmethod
    def start(cls, run: Run) -> _Cluster:
        sa, sb, ma, mb = run
        return cls(sa, sb, ma, mb, [run], ma - sa)

    def join(self, run: Run, anchor: int) -> None:
        sa, sb, ma, mb = run
        self.s_end = max(self.s_end, sb)
        self.m_start = min(self.m_start, ma)
        self.m_end = max(self.m_end, mb)
        self.runs.append(run)
        if sb - sa >= anchor:
            self.diag = ma - sa  # a long run sets the diagonal later short runs follow

    def shifted(self, shift: int) -> _Cluster:
        """The same cluster with suspect positions ``shift`` lower (on a piece of the
        suspect that starts at initial ``shift``)."""
        return _Cluster(
            self.s_start - shift,
            self.s_end - shift,
            self.m_start,
            self.m_end,
            [(sa - shift, sb - shift, ma, mb) for sa, sb, ma, mb in self.runs],
            self.diag + shift,
        )

    def prepend(self, run: Run) -> None:
        """Join a run that starts before the cluster in the suspect (``_tile_back``)."""
        sa, _sb, ma, mb = run
        self.s_start = min(self.s_start, sa)
        self.m_start = min(self.m_start, ma)
        self.m_end = max(self.m_end, mb)
        self.runs.append(run)

    def holds(self, run: Run) -> bool:
        """Whether the run lies inside this cluster's span in both texts."""
        return (
            self.s_start <= run[0]
            and run[1] <= self.s_end
            and self.m_start <= run[2]
            and run[3] <= self.m_end
        )

    def similarity(self, max_gap: int = AlignParams.max_gap) -> float:
        """Mean share of the cluster's span covered by its runs, in suspect and mother.

        In the mother the span is the runs' stretches joined where they lie at most
        ``max_gap`` apart: the lines of a shuffled excerpt are found all over a region of
        the mother, and a line that is not in the copy between two that are is not text
        the copy left out of one passage."""
        s_cov = _coverage([(r[0], r[1]) for r in self.runs]) / (self.s_end - self.s_start)
        m_runs = [(r[2], r[3]) for r in self.runs]
        m_cov = _coverage(m_runs) / _joined_span(m_runs, max_gap)
        return (s_cov + m_cov) / 2.0


_FEW_WINDOWS = 32


def _span_share(positions: np.ndarray | None, window: int, c: _Cluster) -> float:
    """Share of the cluster's suspect span covered by windows starting at ``positions``.
    Unknown (None) counts as fully covered, the cautious reading."""
    if positions is None:
        return 1.0
    lo = int(np.searchsorted(positions, c.s_start - window, side="right"))
    hi = int(np.searchsorted(positions, c.s_end, side="left"))
    if hi <= lo:
        return 0.0
    # Sorted equal-width windows: clip to the span; each adds what lies past the
    # previous window's end (a few windows in Python, numpy's calls cost more).
    if hi - lo <= _FEW_WINDOWS:
        covered_few = 0
        prev = c.s_start
        for at in positions[lo:hi].tolist():
            start = min(max(at, c.s_start), c.s_end)
            end = min(max(at + window, c.s_start), c.s_end)
            covered_few += max(0, end - max(start, prev))
            prev = end
        return float(covered_few) / max(1, c.s_end - c.s_start)
    starts = np.clip(positions[lo:hi], c.s_start, c.s_end)
    ends = np.clip(positions[lo:hi] + window, c.s_start, c.s_end)
    prev_end = np.concatenate([[c.s_start], ends[:-1]])
    covered = np.maximum(0, ends - np.maximum(starts, prev_end)).sum()
    return float(covered) / max(1, c.s_end - c.s_start)


@dataclass(frozen=True)
class PassageMeasure:
    """A kept passage's suspect span in initials and its fine similarity
    (``fine_similarity``; None: not measured, the passage is at least
    ``AlignParams.max_required`` initials long and counts whatever it reads like)."""

    s_start: int
    s_end: int
    fine: float | None

    @property
    def initials(self) -> int:
        return self.s_end - self.s_start


@dataclass
class Alignment:
    """Passages plus the amounts the matcher scores with (in initials)."""

    passages: list[Passage]
    suspect_copied: int  # initials of the suspect inside passages
    mother_copied: int
    suspect_initials: int
    mother_initials: int
    similarity: float  # passage similarity weighted by length
    # One per passage, same order (empty when built elsewhere).
    measures: list[PassageMeasure] = field(default_factory=list)

    @property
    def coverage(self) -> float:
        return self.suspect_copied / self.suspect_initials if self.suspect_initials else 0.0

    @property
    def mother_coverage(self) -> float:
        return self.mother_copied / self.mother_initials if self.mother_initials else 0.0


def _runs_in_suspect_order(suspect: Prepared, mother: Prepared, p: AlignParams) -> np.ndarray:
    """Steps 1 and 2: the runs of shared k-grams (see ``_runs``), by suspect start."""
    s_pos, m_pos, occ = seeds(suspect, mother, p.max_occurrences)
    runs = _runs(s_pos, m_pos, occ, p.k)
    return runs[np.argsort(runs[:, 0], kind="stable")]


# Lines of shuffled verse that follow each other share at most an initial or two at the
# seam (a seed may run on into the next line); a run reaching further back into the
# passage is the same words found elsewhere, not the next line.
_TILE_OVERLAP = 3


def _cluster_for(
    clusters: list[_Cluster], run: Run, unique: int, p: AlignParams
) -> _Cluster | None:
    """The cluster this run joins, or None: among the clusters that end within
    ``max_gap`` before it in the suspect, the one whose diagonal it continues best."""
    sa, sb, ma, _mb = run
    best: _Cluster | None = None
    best_gap = math.inf
    # Only the last few clusters can be within max_gap in the suspect.
    for c in reversed(clusters[-8:]):
        s_gap = sa - c.s_end
        if s_gap > p.max_gap:
            continue
        on_diagonal = abs((ma - sa) - c.diag) <= p.max_drift
        if not on_diagonal:
            # Off the diagonal only a run that occurs once in the mother may join: a
            # long one near the passage (a reordered sentence, not a stock phrase), or a
            # short one that follows the passage without a gap (the next line of
            # shuffled verse: stock phrases stand between other words, not edge to edge).
            if unique > 1:
                continue
            near = c.m_start - p.reorder_window <= ma <= c.m_end + p.reorder_window
            tiles = -_TILE_OVERLAP <= s_gap <= p.tile_gap and (
                c.m_start - p.tile_window <= ma <= c.m_end + p.tile_window
            )
            if not ((sb - sa >= p.anchor and near) or tiles):
                continue
        # Prefer the cluster that continues this run's diagonal.
        gap = abs((ma - c.m_end) - s_gap)
        if gap < best_gap:
            best, best_gap = c, gap
    return best


def _cluster_runs(runs: np.ndarray, p: AlignParams) -> tuple[list[_Cluster], list[Run]]:
    """Step 3: join runs (in suspect order) into clusters; also the short runs unique in
    the mother that joined none (candidates for ``_fill_in``)."""
    clusters: list[_Cluster] = []
    leftovers: list[Run] = []
    for sa, sb, ma, mb, unique in runs.tolist():
        run = (sa, sb, ma, mb)
        best = _cluster_for(clusters, run, unique, p)
        if best is not None:
            best.join(run, p.anchor)
        elif sb - sa >= p.anchor:
            clusters.append(_Cluster.start(run))
        elif unique == 1:
            # A short shared phrase may extend a passage, never start one; if it is
            # unique in the mother it may still fill a hole inside one (below).
            leftovers.append(run)
    return clusters, _tile_back(clusters, _extend_back(clusters, leftovers, p), p)


def _extend_back(clusters: list[_Cluster], leftovers: list[Run], p: AlignParams) -> list[Run]:
    """Short runs unique in the mother that end at most ``max_gap`` before a passage
    starts, on the diagonal of its first run (within ``max_drift``), join it from the
    front, one after another: the start of an edited copy, where replaced characters
    leave no run as long as ``anchor`` (forwards, ``_cluster_for`` joins such runs
    already). Returns the runs still left over."""
    if not clusters or not leftovers:
        return leftovers
    order = sorted(range(len(leftovers)), key=lambda i: leftovers[i][1])
    ends = [leftovers[i][1] for i in order]
    used: set[int] = set()
    for c in clusters:
        first = min(c.runs)
        diag = first[2] - first[0]
        while True:
            lo = bisect.bisect_left(ends, c.s_start - p.max_gap)
            hi = bisect.bisect_right(ends, c.s_start + _TILE_OVERLAP)
            found = None
            for j in range(hi - 1, lo - 1, -1):  # the nearest first
                i = order[j]
                sa, _sb, ma, _mb = leftovers[i]
                if i not in used and sa < c.s_start and abs((ma - sa) - diag) <= p.max_drift:
                    found = i
                    break
            if found is None:
                break
            used.add(found)
            c.prepend(leftovers[found])
            diag = leftovers[found][2] - leftovers[found][0]
    return [run for i, run in enumerate(leftovers) if i not in used]


def _tile_back(clusters: list[_Cluster], leftovers: list[Run], p: AlignParams) -> list[Run]:
    """Short runs unique in the mother that end where a reordered passage starts (edge
    to edge, as in ``_cluster_for``) join it from the front, one after another: the
    lines of shuffled verse before its first long run. Returns the runs still left
    over."""
    if not clusters or not leftovers:
        return leftovers
    order = sorted(range(len(leftovers)), key=lambda i: leftovers[i][1])
    ends = [leftovers[i][1] for i in order]
    used: set[int] = set()
    for c in clusters:
        # Only a passage already reordered: before a copy made in order, a short run
        # edge to edge is a stock phrase of the text around it.
        diag = c.runs[0][2] - c.runs[0][0]
        if all(abs((r[2] - r[0]) - diag) <= p.max_drift for r in c.runs):
            continue
        while True:
            lo = bisect.bisect_left(ends, c.s_start - p.tile_gap)
            hi = bisect.bisect_right(ends, c.s_start + _TILE_OVERLAP)
            found = None
            for j in range(lo, hi):
                i = order[j]
                sa, _sb, ma, _mb = leftovers[i]
                near = c.m_start - p.tile_window <= ma <= c.m_end + p.tile_window
                if i not in used and sa < c.s_start and near:
                    found = i
                    break
            if found is None:
                break
            used.add(found)
            c.prepend(leftovers[found])
    return [run for i, run in enumerate(leftovers) if i not in used]


def _fill_in(clusters: list[_Cluster], leftovers: list[Run]) -> None:
    """A short run unique in the mother that lies inside a passage in both texts is part
    of it (a short sentence of a reordered paragraph)."""
    for run in leftovers:
        for c in clusters:
            if c.holds(run):
                c.runs.append(run)
                break


def _mostly_common(
    c: _Cluster,
    p: AlignParams,
    evidence: np.ndarray | None,
    common: np.ndarray | None,
    window: int,
) -> bool:
    """Whether a cluster is mostly text many mothers share (``common``) with too little
    evidence of its own: boilerplate must not make a match on its own."""
    supported = _span_share(evidence, window, c) * (c.s_end - c.s_start)
    return supported < p.min_passage and _span_share(common, window, c) >= 0.5
