"""The fine comparison: locate copied passages between a suspect and one mother.

Engines only propose candidates; this module decides what was copied and where,
on the pinyin-initial streams of both texts (so homophones and traditional forms
still align), in the manner of PAN text-alignment systems: seeds, extension,
filtering.

1. Seeds: every k-gram of initials (k=8 by default, 5 bits a letter packed in one
   integer) shared by both texts, found by sorting and searching, not by a Python loop.
2. Runs: seeds on one diagonal (mother pos - suspect pos) with small gaps merge
   into runs: stretches copied in order.
3. Passages: runs close in the suspect (``max_gap``) whose mother positions stay
   near (``reorder_window``) join one passage, so random edits, inserted pirate
   watermarks and reordered sentences still make one passage. Only a run of at
   least ``anchor`` initials can start a passage: short stock phrases shared by
   unrelated works may extend a real copy but never make one. A short run unique in
   the mother that follows a passage edge to edge (``tile_gap``) joins it from
   anywhere within ``tile_window`` of it in the mother, and, once the passage is
   reordered, also one that ends where it starts: the lines of shuffled verse. Short
   unique runs on a passage's diagonal just before it extend it backwards (the start of
   an edited copy, ``_extend_back``).
4. Filter: a passage counts when it spans at least ``min_passage`` initials with a
   seed coverage (similarity) of at least ``min_similarity``. Short formulas shared
   by unrelated works (且听下回分解) are far below that. It must also be long enough
   for how alike it reads (``AlignParams.required`` of its ``fine_similarity``):
   templated text, one model sentence written again with other words, covers as
   many seeds as an edited copy but reads less alike (issue #13). A passage under
   ``min_similarity`` still counts when it reads alike (``fine_over_seeds``): the
   lines of shuffled verse hold few seeds.

Offsets are reported in characters of the original texts (Python string indices,
end exclusive), through the initials' offset maps.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tracker.config import DEFAULT_MIN_COPIED, SURE_COPIED
from tracker.fingerprint import letter_indices
from tracker.text.units import read_units
from tracker.rarity import reference_grams
from tracker.records import Passage, Segment


@dataclass(frozen=True)
class AlignParams:
    k: int = 8  # seed length in initials
    max_occurrences: int = 16  # a k-gram more frequent than this in the mother seeds nothing
    max_gap: int = 40  # initials between runs of one passage (edits, watermarks)
    reorder_window: int = 300  # how far back/forward in the mother a long joining run may lie
    max_drift: int = 30  # a short run joins only near the passage's diagonal (insertions)
    min_passage: int = 40  # shortest passage reported, in initials
    min_similarity: float = 0.7  # seed coverage a passage needs
    anchor: int = 16  # a passage must start from a run at least this long (in initials)
    # Templated text (issue #13): a passage counts only when it is at least
    # ``required(fine)`` initials long: ``base`` (the larger of ``min_copied`` and
    # ``sure_copied``) when it reads alike initial by initial (fine similarity >=
    # ``full_fine``), ``length_per_fine`` more per unit of fine similarity below that, at
    # most ``max_required`` (docs/FINGERPRINTS.md).
    min_copied: int = DEFAULT_MIN_COPIED  # the library's floor: nothing shorter counts
    sure_copied: int = SURE_COPIED
    full_fine: float = 0.95
    length_per_fine: float = 2000.0
    max_required: int = 400
    # A short run unique in the mother that starts at most ``tile_gap`` initials after a
    # passage ends joins it wherever it lies within ``tile_window`` of the passage in the
    # mother: the next line of a shuffled poem (lines are shorter than ``anchor``).
    tile_gap: int = 12
    tile_window: int = 1200
    # Seeds of 8 initials miss the 5- and 7-letter lines of shuffled verse (a line
    # between two others it did not stand beside in the mother holds no seed), so such a
    # passage can cover under ``min_similarity`` while it reads alike letter by letter: it
    # still counts when its fine similarity is at least ``fine_over_seeds`` and it is long
    # enough for that (``required``). Measured only on passages up to ``fine_span``
    # initials (difflib's cost grows with the square of the length).
    fine_over_seeds: float = 0.85
    fine_span: int = 1200
    # A passage that fails the test above is read once more with each stretch against
    # its best occurrence in the mother (``best_occurrence_fine``): the shuffled
    # sentences of a law that repeats its own formulas. Read so, it counts only when it
    # reads alike letter for letter (at least ``best_occurrence``) and is long enough
    # for that: shuffled copies read 1.000 this way (homophones and traditional forms
    # keep their initials), the templated law passages it would admit 0.910-0.972
    # (bench/eval.py --laws 40; docs/FINGERPRINTS.md). Above 1: off.
    best_occurrence: float = 0.98
    # Passages that are true (issue #26): a stretch of at least ``min_insertion``
    # initials that the suspect holds between two runs of a passage copied in order and
    # the mother does not (the suspect's gap exceeds the mother's by that much: an ad
    # line, a watermark, chapter boilerplate) splits the passage there
    # (``_insertion_pieces``). 0: off.
    min_insertion: int = 6
    # Short copies (issue #26): a passage from ``min_copied`` up to ``base`` initials
    # counts when it is distinctive: it reads alike on initials (``short_fine``) and on
    # characters (``short_chars``), at most ``short_common`` of its Han 4-grams are
    # common in ordinary text (``ordinary_share``, ``tracker.rarity``) and at most
    # ``short_library_common`` of it lies under index windows many works of the library
    # share (the engine's ``common`` evidence). docs/FINGERPRINTS.md, "Short copies".
    short_fine: float = 0.97
    short_chars: float = 0.97
    short_common: float = 0.25
    short_library_common: float = 0.5
    # Formula text (issue #26): a passage up to ``formula_span`` initials whose mother
    # text is mostly ordinary (at least ``formula_common`` of its Han 4-grams common in
    # the reference, ``tracker.rarity``: legal formulas, the revision history heading a
    # regulation) counts only when it reads alike letter for letter (``formula_fine``,
    # or its best occurrences do, ``best_occurrence``): the same-subject regulations
    # that read 0.72-0.97 alike and run past ``max_required``.
    formula_common: float = 0.8
    formula_fine: float = 0.98
    formula_span: int = 700
    # Reprints sharing only a few sentences (issue #39): when nothing else of the mother
    # counts, at least ``reprint_runs`` passages of ``reprint_min`` initials or more (a
    # wire opening, a sentence of a report) that each pass ``short_copy``'s tests but
    # its length (verbatim on initials and characters, rare in ordinary text and in the
    # library), in the same order in both texts, together at least ``min_copied``
    # initials, count: a reprinted report, where one such sentence alone is no evidence.
    # 0: off.
    # Long templated passages (issue #39): a passage of ``max_required`` initials or
    # more used to count whatever it read like; one that covers under ``long_check``
    # with seeds (and is at most ``fine_span`` long, difflib's cost) now counts only
    # when it reads at least ``long_fine`` alike (re-worded model text reads 0.72-0.80,
    # a copy with 10 % of its characters replaced 0.85-0.88). 0: off.
    long_fine: float = 0.85
    long_check: float = 0.85
    reprint_runs: int = 2
    reprint_min: int = 20
    reprint_window: int = 600  # initials from one sentence to the next, in both texts

    @property
    def base(self) -> int:
        """Initials from which a passage that reads alike counts whatever its words."""
        return max(self.min_copied, self.sure_copied)

    def required(self, fine: float) -> float:
        """Initials a passage of this fine similarity needs to count as copied (without
        the evidence of a short copy, ``short_copy``)."""
        grow = self.length_per_fine * max(0.0, self.full_fine - fine)
        return min(float(self.max_required), self.base + grow)


@dataclass
class Prepared:
    """A text reduced to what alignment needs; cache it for mothers."""

    idx: np.ndarray  # letter indices 0..22
    offsets: np.ndarray  # initial -> character offset
    grams: np.ndarray  # k-gram codes (uint64), one per start position
    order: np.ndarray | None = None  # argsort of grams (mothers only)
    sorted_grams: np.ndarray | None = None
    base: int = 0  # position of grams[0] in the whole text (slices of long suspects)
    # initial -> the character's code point (whole text, like offsets): where two
    # reordered segment pairs meet, the characters tell which one a shared initial is.
    chars: np.ndarray | None = None
    # A suspect's bitmap of its grams (``_pairs_by_suspect``), made once for all the
    # candidates it is aligned with: (bits, table).
    gram_table: tuple[int, np.ndarray] | None = None

    @property
    def n(self) -> int:
        """Initials in the whole text (a slice still reports the whole)."""
        return int(self.offsets.size)

    def slice(self, start: int, end: int, k: int) -> Prepared:
        """The part of the text from initial ``start`` to ``end``, positions unchanged:
        verifying a long suspect only where a candidate's hits are."""
        start = max(0, start)
        end = min(self.idx.size, end)
        return Prepared(
            idx=self.idx[start:end],
            offsets=self.offsets,
            grams=self.grams[start : max(start, end - k + 1)],
            base=self.base + start,
            chars=self.chars,
        )


def prepare(text: str, k: int = 8, *, index: bool = False) -> Prepared:
    units = read_units(text)
    offsets = units.offsets
    idx = letter_indices(units.codes).astype(np.uint64)
    n = idx.size
    if n < k:
        grams = np.zeros(0, dtype=np.uint64)
    else:
        grams = np.zeros(n - k + 1, dtype=np.uint64)
        for j in range(k):
            grams <<= np.uint64(5)
            grams |= idx[j : n - k + 1 + j]
    chars = units.ids if n else None
    prepared = Prepared(idx=idx.astype(np.uint8), offsets=offsets, grams=grams, chars=chars)
    if index:
        prepared.order = np.argsort(grams, kind="stable")
        prepared.sorted_grams = grams[prepared.order]
    return prepared


def seeds(
    suspect: Prepared, mother: Prepared, max_occurrences: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All (suspect pos, mother pos) pairs with equal k-grams, sorted by diagonal then pos,
    with how often each pair's k-gram occurs in the mother."""
    empty = np.zeros(0, np.int64)
    if suspect.grams.size == 0 or mother.grams.size == 0:
        return empty, empty, empty
    if mother.sorted_grams is None and suspect.grams.size <= mother.grams.size:
        # A mother met for the first time: sorting its grams (~1 ms for 20,000
        # characters, most of a weak candidate's cost) buys less than scanning them
        # once against the smaller suspect.
        s_pos, m_pos, occ = _pairs_by_suspect(suspect, mother, max_occurrences)
    else:
        s_pos, m_pos, occ = _pairs_by_mother(suspect, mother, max_occurrences)
    if s_pos.size == 0:
        return empty, empty, empty
    order = np.lexsort((s_pos, m_pos - s_pos))
    return s_pos[order], m_pos[order], occ[order]


def index_mother(mother: Prepared) -> None:
    """Sort a mother's grams once, for a mother that will be aligned again (cached); a
    suspect's too, for the candidates it is aligned with one after the other."""
    if mother.sorted_grams is None or mother.order is None:
        mother.order = np.argsort(mother.grams, kind="stable")
        mother.sorted_grams = mother.grams[mother.order]


def _pairs_by_mother(
    suspect: Prepared, mother: Prepared, max_occurrences: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``seeds``' pairs, unordered, by searching each suspect gram in the mother's
    sorted grams."""
    index_mother(mother)
    assert mother.sorted_grams is not None and mother.order is not None
    lo = np.searchsorted(mother.sorted_grams, suspect.grams, side="left")
    hi = np.searchsorted(mother.sorted_grams, suspect.grams, side="right")
    count = hi - lo
    count[count > max_occurrences] = 0
    total = int(count.sum())
    # Position within each suspect gram's range of equal mother grams.
    first = np.repeat(np.cumsum(count) - count, count)
    within = np.arange(total, dtype=np.int64) - first
    s_pos = np.repeat(np.arange(suspect.grams.size, dtype=np.int64) + suspect.base, count)
    m_pos = mother.order[np.repeat(lo, count) + within].astype(np.int64)
    return s_pos, m_pos, np.repeat(count, count).astype(np.int64)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _pairs_by_suspect(
    suspect: Prepared, mother: Prepared, max_occurrences: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``seeds``' pairs, unordered, by searching the mother's grams in the suspect's
    sorted grams; a bitmap of the suspect's grams passes only the few mother grams that
    may match (a false pass is then refused by the search)."""
    # The suspect's sorted grams and bitmap, made once for all its candidates.
    index_mother(suspect)
    assert suspect.order is not None and suspect.sorted_grams is not None
    s_order, s_sorted = suspect.order, suspect.sorted_grams
    if suspect.gram_table is None:
        bits = min(24, max(16, int(suspect.grams.size * 32).bit_length()))
        table = np.zeros(1 << bits, dtype=bool)
        with np.errstate(over="ignore"):
            table[(suspect.grams * _GOLDEN) >> np.uint64(64 - bits)] = True
        suspect.gram_table = (bits, table)
    bits, table = suspect.gram_table
    shift = np.uint64(64 - bits)
    with np.errstate(over="ignore"):
        maybe = np.flatnonzero(table[(mother.grams * _GOLDEN) >> shift])
    grams = mother.grams[maybe]
    lo = np.searchsorted(s_sorted, grams, side="left")
    count = np.searchsorted(s_sorted, grams, side="right") - lo
    hit = count > 0
    m_at, grams, lo, count = maybe[hit], grams[hit], lo[hit], count[hit]
    # Every occurrence of a shared gram in the mother is among the hits: counting them
    # there is counting them in the mother.
    _, which, per_gram = np.unique(grams, return_inverse=True, return_counts=True)
    occ = per_gram[which.ravel()]
    keep = occ <= max_occurrences
    m_at, lo, count, occ = m_at[keep], lo[keep], count[keep], occ[keep]
    total = int(count.sum())
    first = np.repeat(np.cumsum(count) - count, count)
    within = np.arange(total, dtype=np.int64) - first
    s_pos = s_order[np.repeat(lo, count) + within].astype(np.int64) + suspect.base
    m_pos = np.repeat(m_at, count).astype(np.int64)
    return s_pos, m_pos, np.repeat(occ, count).astype(np.int64)


def _runs(s_pos: np.ndarray, m_pos: np.ndarray, occ: np.ndarray, k: int) -> np.ndarray:
    """Merge seeds on one diagonal whose k-grams touch or overlap into runs.

    Returns an int64 array (runs x 5): suspect start, suspect end, mother start,
    mother end (ends exclusive, in initials), and the fewest times any of the run's
    k-grams occurs in the mother (1 = the run is unique there).
    """
    if s_pos.size == 0:
        return np.zeros((0, 5), dtype=np.int64)
    diag = m_pos - s_pos
    breaks = (np.diff(diag) != 0) | (np.diff(s_pos) > k)
    starts = np.concatenate([[0], np.flatnonzero(breaks) + 1])
    ends = np.concatenate([starts[1:], [s_pos.size]]) - 1
    out = np.empty((starts.size, 5), dtype=np.int64)
    out[:, 0] = s_pos[starts]
    out[:, 1] = s_pos[ends] + k
    out[:, 2] = m_pos[starts]
    out[:, 3] = m_pos[ends] + k
    out[:, 4] = np.minimum.reduceat(occ, starts)
    return out


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
    # previous window's end.
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


@dataclass
class _Pair:
    """A segment pair in the making: runs on (nearly) one diagonal, in suspect order."""

    s_start: int
    s_end: int
    diag: int  # mother - suspect
    runs: list[Run]

    @property
    def m_start(self) -> int:
        return min(max(r[2], r[2] + self.s_start - r[0]) for r in self.runs)

    @property
    def m_end(self) -> int:
        return max(min(r[3], r[3] - (r[1] - self.s_end)) for r in self.runs)

    def similarity(self) -> float:
        """Mean share of the pair's two spans covered by its runs (clipped to them)."""
        s_cov, m_cov = [], []
        for sa, sb, ma, mb in self.runs:
            lo, hi = max(sa - self.s_start, 0), max(sb - self.s_end, 0)
            if sb - hi > sa + lo:
                s_cov.append((sa + lo, sb - hi))
                m_cov.append((ma + lo, mb - hi))
        m_len = self.m_end - self.m_start
        if self.s_end <= self.s_start or m_len <= 0:
            return 0.0
        return min(
            1.0,
            (_coverage(s_cov) / (self.s_end - self.s_start) + _coverage(m_cov) / m_len) / 2.0,
        )


def _seam(a: _Pair, b: _Pair, suspect: Prepared, mother: Prepared) -> int:
    """Where pair ``a`` ends and ``b`` begins when their runs overlap in the suspect (a
    shared initial at the seam may belong to either): the cut that keeps the most equal
    characters on each side's own diagonal; without characters, the middle."""
    lo, hi = b.s_start, a.s_end
    m_chars = mother.chars
    if suspect.chars is None or m_chars is None:
        return (lo + hi) // 2
    pos = np.arange(lo, hi)
    s = suspect.chars[pos]

    def same(diag: int) -> np.ndarray:
        m = pos + diag
        ok = (m >= 0) & (m < m_chars.size)
        out = np.zeros(pos.size, dtype=np.int64)
        out[ok] = s[ok] == m_chars[m[ok]]
        return out

    left, right = same(a.diag), same(b.diag)
    # Cut t in [lo, hi]: a keeps [lo, t), b keeps [t, hi).
    keep_a = np.concatenate([[0], np.cumsum(left)])
    keep_b = np.concatenate([np.cumsum(right[::-1])[::-1], [0]])
    return lo + int(np.argmax(keep_a + keep_b))


def _segment_pairs(c: _Cluster, suspect: Prepared, mother: Prepared, p: AlignParams) -> list[_Pair]:
    """The cluster's runs regrouped into the pairs that really align: consecutive runs
    (in suspect order) stay in one pair while they follow its diagonal within
    ``max_drift`` (edits, short insertions); a run that jumps elsewhere in the mother (a
    reordered sentence) starts the next one. A run whose suspect stretch lies mostly
    inside the previous pair (the same words at a second place in the mother) adds
    nothing; where two pairs overlap at a seam the characters decide (``_seam``)."""
    pairs: list[_Pair] = []
    for run in sorted(c.runs, key=lambda r: (r[0], -(r[1] - r[0]))):
        sa, sb, ma, _mb = run
        last = pairs[-1] if pairs else None
        if last is not None:
            if abs((ma - sa) - last.diag) <= p.max_drift and sa - last.s_end <= p.max_gap:
                last.runs.append(run)
                last.s_end = max(last.s_end, sb)
                if sb - sa >= p.anchor:
                    last.diag = ma - sa
                continue
            if (min(sb, last.s_end) - sa) * 2 >= sb - sa:
                continue
        pairs.append(_Pair(sa, sb, ma - sa, [run]))
    for a, b in itertools.pairwise(pairs):
        if b.s_start < a.s_end:
            a.s_end = b.s_start = _seam(a, b, suspect, mother)
    return [g for g in pairs if g.s_end > g.s_start and g.m_end > g.m_start]


def _reordered(segments: list[_Pair]) -> bool:
    """Whether the segments stand in the mother in another order than in the suspect."""
    return any(b.m_start < a.m_start for a, b in itertools.pairwise(segments))


def _char_span(prepared: Prepared, start: int, end: int) -> tuple[int, int]:
    return int(prepared.offsets[start]), int(prepared.offsets[end - 1]) + 1


def _insertion_pieces(
    c: _Cluster, suspect: Prepared, mother: Prepared, p: AlignParams
) -> list[Run]:
    """The cluster's suspect span cut where the suspect holds text the mother does not
    (``AlignParams.min_insertion``), as ``(s_start, s_end, m_start, m_end)`` pieces in
    initials: in suspect order, each run extends the piece it continues, and a run that
    starts at least ``min_insertion`` initials after the piece's reach in the suspect
    while the mother goes on (gaps: suspect minus mother at least ``min_insertion``)
    starts the next piece. An edited stretch (characters replaced: both texts' gaps
    alike) or a stretch the copy left out (the mother's gap the larger) joins. At a
    cut, initials a run took into the inserted text by chance (the same initial, not
    the same character) go back to it (``_trim_cut``)."""
    runs = sorted(c.runs, key=lambda r: (r[0], -(r[1] - r[0])))
    if p.min_insertion <= 0 or len(runs) < 2:
        return [(c.s_start, c.s_end, c.m_start, c.m_end)]
    pieces: list[list[int]] = []
    sa0, reach_s, ma0, reach_m = runs[0]
    piece = [sa0, reach_s, ma0, reach_m]
    diag = ma0 - sa0
    for sa, sb, ma, mb in runs[1:]:
        if sb <= reach_s:
            continue  # inside the piece in the suspect
        if abs((ma - sa) - diag) > p.max_drift:
            if sb - sa < p.anchor:
                continue  # a short phrase found elsewhere in the mother
            pieces.append(piece)  # a long run elsewhere: a new piece, no cut
            piece, diag = [sa, sb, ma, mb], ma - sa
            reach_s, reach_m = sb, mb
            continue
        gap_s, gap_m = sa - reach_s, ma - reach_m
        if gap_s >= p.min_insertion and gap_s - gap_m >= p.min_insertion:
            pieces.append(piece)
            piece = [sa, sb, ma, mb]
        else:
            piece[1] = sb
            piece[2], piece[3] = min(piece[2], ma), max(piece[3], mb)
        reach_s, reach_m = sb, mb
        if sb - sa >= p.anchor:
            diag = ma - sa
    pieces.append(piece)
    if len(pieces) > 1:
        _trim_cut(pieces, suspect, mother, p)
    return [(a, b, ma, mb) for a, b, ma, mb in pieces]


def _trim_cut(pieces: list[list[int]], suspect: Prepared, mother: Prepared, p: AlignParams) -> None:
    """Where the pieces were cut, up to ``min_insertion - 1`` initials at each side that
    read another character than the mother's (on the piece's own diagonal) leave the
    piece: a run ends or starts inside an ad line when its first or last initials
    happen to be the mother's next ones."""
    s_chars, m_chars = suspect.chars, mother.chars
    if s_chars is None or m_chars is None:
        return
    limit = p.min_insertion - 1

    def differs(s_pos: int, m_pos: int) -> bool:
        return 0 <= m_pos < m_chars.size and bool(s_chars[s_pos] != m_chars[m_pos])

    for before, after in itertools.pairwise(pieces):
        for _ in range(limit):  # the end of the piece before the cut
            if before[1] - before[0] > 1 and differs(before[1] - 1, before[3] - 1):
                before[1] -= 1
                before[3] -= 1
            else:
                break
        for _ in range(limit):  # the start of the piece after it
            if after[1] - after[0] > 1 and differs(after[0], after[2]):
                after[0] += 1
                after[2] += 1
            else:
                break


def _passages(
    c: _Cluster, suspect: Prepared, mother: Prepared, similarity: float, p: AlignParams
) -> list[tuple[Passage, Run]]:
    """The cluster as passages, in characters of the original texts, each with its span
    in initials: a reordered one as one passage with its segment pairs; one copied in
    order split at the text the suspect inserted (``_insertion_pieces``), so a passage
    states only copied text."""
    pairs = _segment_pairs(c, suspect, mother, p)
    if len(pairs) > 1 and _reordered(pairs):
        s_start, s_end = _char_span(suspect, c.s_start, c.s_end)
        m_start, m_end = _char_span(mother, c.m_start, c.m_end)
        passage = Passage(s_start, s_end, m_start, m_end, round(similarity, 4))
        passage.segments = [
            Segment(
                *_char_span(suspect, g.s_start, g.s_end),
                *_char_span(mother, g.m_start, g.m_end),
                similarity=round(g.similarity(), 4),
            )
            for g in pairs
        ]
        return [(passage, (c.s_start, c.s_end, c.m_start, c.m_end))]
    out = []
    for sa, sb, ma, mb in _insertion_pieces(c, suspect, mother, p):
        passage = Passage(
            *_char_span(suspect, sa, sb), *_char_span(mother, ma, mb), round(similarity, 4)
        )
        out.append((passage, (sa, sb, ma, mb)))
    return out


def _matched(a: np.ndarray, b: np.ndarray) -> int:
    """Initials of ``a`` and ``b`` (letter indices, one byte each) that match in order
    (difflib's matching blocks)."""
    blocks = difflib.SequenceMatcher(None, a.tobytes(), b.tobytes(), autojunk=False)
    return sum(block.size for block in blocks.get_matching_blocks())


def fine_similarity(c: _Cluster, suspect: Prepared, mother: Prepared, p: AlignParams) -> float:
    """How alike a passage's two texts read, initial by initial: initials matched in
    order (difflib) over the initials of both spans, 2M / (S + M), measured pair by pair
    (``_segment_pairs``: a reordered passage's sentences, or the stretches of one copied
    in order between insertions longer than ``max_drift``) over the whole suspect span
    and the pairs' mother spans.

    Seed coverage (``_Cluster.similarity``) counts an initial as copied when any 8-gram
    around it is shared, so templated text (one model sentence written again with other
    words in it) and a copy with 5 % of its characters replaced both cover 0.75-0.9.
    Here the replaced characters of an edited copy cost one initial each (0.93-0.98),
    while the other words of a templated sentence cost their whole length."""
    spans = [
        (g.s_start, g.s_end, g.m_start, g.m_end) for g in _segment_pairs(c, suspect, mother, p)
    ]
    total = (c.s_end - c.s_start) + sum(mb - ma for _sa, _sb, ma, mb in spans)
    if not total:
        return 0.0
    base = suspect.base
    matched = sum(
        _matched(suspect.idx[sa - base : sb - base], mother.idx[ma:mb]) for sa, sb, ma, mb in spans
    )
    return 2.0 * matched / total


def _best_segments(c: _Cluster, suspect: Prepared, mother: Prepared, p: AlignParams) -> list[Run]:
    """The cluster's suspect span cut into segments, each with the mother span of its
    best occurrence: the runs of all seeds inside the cluster's suspect span
    (whichever cluster they joined) claim its initials longest first, a stretch claimed
    by runs on one diagonal (within ``max_drift``) is one segment, the initials no run
    claims go with the segment before them (the first segment's: with the next), and
    each segment is compared (difflib) with the mother span its own runs point to.

    A law repeats its formulas (查获地省级烟草专卖行政主管部门出具的 six times), so the
    clusters of a shuffled excerpt of it join each sentence with another occurrence of
    a formula, and ``fine_similarity`` reads the right words against the wrong clause
    (0.70-0.87, issue #13). Templated text gains little here: its other words are in no
    run and are read against whatever stands beside the formula in the mother."""
    base = suspect.base
    lo, hi = c.s_start, c.s_end
    if hi - lo < p.k:
        return []
    piece = suspect.slice(lo - base, hi - base, p.k)
    s_pos, m_pos, occ = seeds(piece, mother, p.max_occurrences)
    runs = _runs(s_pos, m_pos, occ, p.k)
    # Only occurrences near the cluster in the mother (``reorder_window``, as for the
    # runs that join it): the same words far away are another passage's business.
    near = (runs[:, 2] >= c.m_start - p.reorder_window) & (runs[:, 3] <= c.m_end + p.reorder_window)
    runs = runs[near]
    if runs.shape[0] == 0:
        return []
    span = hi - lo
    owner = np.full(span, -1, dtype=np.int64)  # index of the run that claims the initial
    lengths = runs[:, 1] - runs[:, 0]
    for i in np.argsort(-lengths, kind="stable").tolist():
        a, b = int(runs[i, 0]) - lo, int(runs[i, 1]) - lo
        free = owner[a:b] == -1
        owner[a:b][free] = i
    # Segments: maximal stretches whose claiming runs keep to one diagonal.
    segments: list[list[int]] = []  # [suspect start, suspect end, first run, last run]
    for pos in range(span):
        i = int(owner[pos])
        if i < 0:
            if segments:
                segments[-1][1] = pos + 1
            continue
        last = segments[-1] if segments else None
        if last is not None:
            diag_last = int(runs[last[3], 2] - runs[last[3], 0])
            if abs(int(runs[i, 2] - runs[i, 0]) - diag_last) <= p.max_drift:
                last[1], last[3] = pos + 1, i
                continue
        segments.append([pos, pos + 1, i, i])
    if not segments:
        return []
    if segments[0][0] > 0:
        segments[0][0] = 0
    out = []
    for a, b, first, final in segments:
        ma = max(0, a + lo + int(runs[first, 2] - runs[first, 0]))
        mb = min(mother.n, b + lo + int(runs[final, 2] - runs[final, 0]))
        out.append((a + lo, b + lo, ma, mb))
    return out


def best_occurrence_fine(c: _Cluster, suspect: Prepared, mother: Prepared, p: AlignParams) -> float:
    """``fine_similarity`` over ``_best_segments``: each stretch of the suspect read
    against its best occurrence in the mother (see there)."""
    spans = _best_segments(c, suspect, mother, p)
    total = c.s_end - c.s_start
    matched = 0
    base = suspect.base
    for sa, sb, ma, mb in spans:
        if mb <= ma:
            continue
        total += mb - ma
        matched += _matched(suspect.idx[sa - base : sb - base], mother.idx[ma:mb])
    return 2.0 * matched / total if spans and total else 0.0


def char_similarity(c: _Cluster, suspect: Prepared, mother: Prepared, p: AlignParams) -> float:
    """``fine_similarity`` on characters instead of initials (the code points behind
    the initials, pair by pair): a homophone or another word with the same initial
    costs here what it costs nowhere else. 0 when the characters are not known."""
    return _char_core(c, suspect, mother, p)[0]


def _char_core(
    c: _Cluster, suspect: Prepared, mother: Prepared, p: AlignParams
) -> tuple[float, int]:
    """``char_similarity`` and the initials of the suspect it was read on: each pair
    from its first to its last character matched (a run of initials may reach a letter
    or two into the text around a copy, where only the initial is shared)."""
    if suspect.chars is None or mother.chars is None:
        return 0.0, 0
    matched = s_total = m_total = 0
    for g in _segment_pairs(c, suspect, mother, p):
        a, b = suspect.chars[g.s_start : g.s_end].tolist(), mother.chars[g.m_start : g.m_end]
        blocks = [
            x
            for x in difflib.SequenceMatcher(
                None, a, b.tolist(), autojunk=False
            ).get_matching_blocks()
            if x.size
        ]
        if not blocks:
            s_total += len(a)
            m_total += len(b)
            continue
        first, last = blocks[0], blocks[-1]
        matched += sum(x.size for x in blocks)
        s_total += last.a + last.size - first.a
        m_total += last.b + last.size - first.b
    total = s_total + m_total
    return (2.0 * matched / total if total else 0.0), s_total


def short_copy(
    c: _Cluster,
    suspect: Prepared,
    mother: Prepared,
    p: AlignParams,
    fine: float,
    library_common: float = 0.0,
    *,
    shortest: int | None = None,
) -> bool:
    """Whether a passage shorter than ``p.base`` is a distinctive copy (the fields
    ``short_*`` of ``AlignParams``): at least ``min_copied`` initials (``shortest``, for
    one sentence of a reprint, ``reprint_sentences``), reading alike on initials and on
    characters, its words rare in ordinary text (``ordinary_share``) and in the library
    (``library_common``: the share of it under index windows many works share)."""
    least = p.min_copied if shortest is None else shortest
    s_len = c.s_end - c.s_start
    if not (least <= s_len < p.base) or fine < p.short_fine:
        return False
    if library_common > p.short_library_common or mother.chars is None:
        return False
    if ordinary_share(c, suspect, mother) > p.short_common:
        return False
    chars, core = _char_core(c, suspect, mother, p)
    return chars >= p.short_chars and core >= least


def reads_alike_enough(
    c: _Cluster,
    suspect: Prepared,
    mother: Prepared,
    p: AlignParams,
    library_common: float = 0.0,
) -> tuple[bool, float | None]:
    """Step 4's test for templated text: whether the cluster is long enough for how
    alike it reads (``AlignParams.required`` of its ``fine_similarity``), or a short
    distinctive copy (``short_copy``; ``library_common`` as there), and that fine
    similarity. Measured only where it can decide: a passage of ``max_required``
    initials counts whatever it reads like (None) unless it covers under
    ``long_check`` with seeds and is at most ``fine_span`` long (then it must read
    ``long_fine`` alike), and difflib's cost grows with the square of the length."""
    s_len = c.s_end - c.s_start
    formula = s_len < p.formula_span and ordinary_share(c, suspect, mother) >= p.formula_common
    if s_len >= p.max_required and not formula:
        if not (
            p.long_fine > 0 and s_len <= p.fine_span and c.similarity(p.max_gap) < p.long_check
        ):
            return True, None
        fine = fine_similarity(c, suspect, mother, p)
        return fine >= p.long_fine, fine
    fine = fine_similarity(c, suspect, mother, p)
    if formula and fine < p.formula_fine:
        return False, fine
    if s_len >= p.required(fine):
        return True, fine
    return short_copy(c, suspect, mother, p, fine, library_common), fine


def ordinary_share(c: _Cluster, suspect: Prepared, mother: Prepared) -> float:
    """Share of the Han 4-grams common in ordinary text (``tracker.rarity``) in the
    cluster's text, the larger of its suspect and its mother span (a reordered
    cluster's mother span holds other words between its pieces; a traditional copy's
    suspect span reads rare); 0 when the characters are not known."""
    ref = reference_grams()
    shares = [
        ref.ordinariness(chars[a:b]).common_share
        for chars, a, b in (
            (suspect.chars, c.s_start, c.s_end),
            (mother.chars, c.m_start, c.m_end),
        )
        if chars is not None
    ]
    return max(shares, default=0.0)


# Where step 4 reads a cluster's characters: the suspect prepared (whole, or just the
# piece under the cluster), the cluster in that piece's positions, and the character
# offset of the piece in the whole suspect.
LocalView = Callable[[_Cluster], tuple[_Cluster, Prepared, int]]


def keep_passages(
    clusters: list[_Cluster],
    mother: Prepared,
    p: AlignParams,
    result: Alignment,
    local: LocalView,
    *,
    evidence: np.ndarray | None = None,
    common: np.ndarray | None = None,
    evidence_window: int = 24,
) -> Alignment:
    """Step 4: keep the clusters long and similar enough, not boilerplate, and long
    enough for how alike they read; fill ``result`` with their passages (in characters
    of the whole suspect) and the amounts the matcher scores with. The one rule for
    ``align_prepared`` and for long suspects checked in windows (``tracker.longtext``),
    which sees a cluster's characters only through ``local``."""
    s_spans: list[tuple[int, int]] = []
    m_spans: list[tuple[int, int]] = []
    weighted = 0.0
    for c in clusters:
        s_len = c.s_end - c.s_start
        if min(s_len, c.m_end - c.m_start) < p.min_passage:
            continue
        similarity = c.similarity(p.max_gap)
        few_seeds = similarity < p.min_similarity
        if few_seeds and s_len > p.fine_span:
            continue
        if evidence is not None and _mostly_common(c, p, evidence, common, evidence_window):
            continue
        view, suspect, shift = local(c)
        fine: float | None
        if few_seeds:
            fine = fine_similarity(view, suspect, mother, p)
            kept = fine >= p.fine_over_seeds and s_len >= p.required(fine)
        else:
            library_common = _span_share(common, evidence_window, c) if common is not None else 0.0
            kept, fine = reads_alike_enough(view, suspect, mother, p, library_common)
        if not (kept or few_seeds) and p.best_occurrence <= 1.0 and s_len >= p.base:
            # A sentence the mother repeats may have been read against the wrong
            # occurrence; only when that decides (difflib once more per segment), and
            # not on top of the few-seeds relaxation above (the couplets of shuffled
            # verse written again with other words read 0.86 this way).
            best = best_occurrence_fine(view, suspect, mother, p)
            if fine is not None and best > fine and best >= p.best_occurrence:
                fine = best
                kept = s_len >= p.required(fine)
        if not kept:
            continue
        at = c.s_start - view.s_start  # the view's initials in the whole suspect
        for passage, (sa, sb, ma, mb) in _passages(view, suspect, mother, similarity, p):
            weighted += similarity * (sb - sa)
            s_spans.append((sa + at, sb + at))
            m_spans.append((ma, mb))
            result.passages.append(passage.moved(shift))
            result.measures.append(PassageMeasure(sa + at, sb + at, fine))
    if not result.passages and p.reprint_runs > 0:
        for c, fine, similarity in reprint_sentences(
            clusters, mother, p, local, evidence, common, evidence_window
        ):
            view, suspect, shift = local(c)
            at = c.s_start - view.s_start
            for passage, (sa, sb, ma, mb) in _passages(view, suspect, mother, similarity, p):
                weighted += similarity * (sb - sa)
                s_spans.append((sa + at, sb + at))
                m_spans.append((ma, mb))
                result.passages.append(passage.moved(shift))
                result.measures.append(PassageMeasure(sa + at, sb + at, fine))
    result.suspect_copied = _coverage(s_spans)
    result.mother_copied = _coverage(m_spans)
    total = sum(b - a for a, b in s_spans)
    result.similarity = weighted / total if total else 0.0
    return result


def reprint_sentences(
    clusters: list[_Cluster],
    mother: Prepared,
    p: AlignParams,
    local: LocalView,
    evidence: np.ndarray | None,
    common: np.ndarray | None,
    evidence_window: int,
) -> list[tuple[_Cluster, float, float]]:
    """The sentences of a reprint that shares only a few of them with the mother
    (``AlignParams.reprint_runs``): clusters copied in order, each of ``reprint_min`` up
    to ``base`` initials, each a distinctive short copy but for its length
    (``short_copy``) and a sentence or clause of both texts (``_sentence``), that follow
    each other in the same order in both texts, each within ``reprint_window`` initials
    of the one before; the longest such chain, with each one's fine and seed
    similarity, when it has at least ``reprint_runs`` and holds at least
    ``min_copied`` initials, else none. A wire
    report reprinted keeps its sentences in order; a formula shared by chance is
    common in ordinary text or in the library, and one rare sentence alone is not
    enough."""
    found: list[tuple[_Cluster, float, float]] = []  # the sentences that qualify
    # A copied sentence's cluster may have taken in a chance run or two of the text
    # around it (a shared initial here and there), which lowers how alike it reads:
    # its long runs are read on their own too.
    units = [
        unit
        for c in clusters
        for unit in (
            [c]
            + [
                _Cluster.start(run)
                for run in c.runs
                if len(c.runs) > 1 and run[1] - run[0] >= p.reprint_min
            ]
        )
    ]
    # The cheap tests first (length, seeds, boilerplate, sentence edges); the readings
    # (difflib, the reference table) only when what passes them could make a chain.
    cheap: list[tuple[_Cluster, float]] = []
    for c in sorted(units, key=lambda x: (x.s_start, x.s_start - x.s_end)):
        s_len = c.s_end - c.s_start
        if not (p.reprint_min <= s_len < p.base) or c.m_end - c.m_start < p.reprint_min:
            continue
        similarity = c.similarity(p.max_gap)
        if similarity < p.min_similarity:
            continue
        if evidence is not None and _mostly_common(c, p, evidence, common, evidence_window):
            continue
        view, suspect, _shift = local(c)
        if not (
            _sentence(suspect.offsets, view.s_start, view.s_end)
            and _sentence(mother.offsets, c.m_start, c.m_end)
        ):
            continue  # stock phrases run across sentences; a reprint copies sentences
        cheap.append((c, similarity))
    if len(cheap) < p.reprint_runs or sum(c.s_end - c.s_start for c, _ in cheap) < p.min_copied:
        return []
    for c, similarity in cheap:
        if found and c.s_start < found[-1][0].s_end:
            continue  # inside a unit already taken
        view, suspect, _shift = local(c)
        fine = fine_similarity(view, suspect, mother, p)
        library_common = _span_share(common, evidence_window, c) if common is not None else 0.0
        if not short_copy(view, suspect, mother, p, fine, library_common, shortest=p.reprint_min):
            continue
        found.append((c, fine, similarity))
    # Chains: each sentence follows the one before in the mother's order, near it in
    # both texts (one report read on, not stock sentences scattered over two works).
    chains: list[list[tuple[_Cluster, float, float]]] = []
    for item in found:
        c = item[0]
        fits = [
            chain
            for chain in chains
            if chain[-1][0].m_end <= c.m_start <= chain[-1][0].m_end + p.reprint_window
            and c.s_start - chain[-1][0].s_end <= p.reprint_window
        ]
        if fits:
            max(fits, key=lambda ch: sum(x[0].s_end - x[0].s_start for x in ch)).append(item)
        else:
            chains.append([item])
    best = max(chains, key=lambda ch: sum(x[0].s_end - x[0].s_start for x in ch), default=[])
    copied = sum(c.s_end - c.s_start for c, _, _ in best)
    if len(best) < p.reprint_runs or copied < p.min_copied:
        return []
    return best


def _sentence(offsets: np.ndarray, start: int, end: int) -> bool:
    """Whether initials ``start`` to ``end`` stand between two breaks of the text
    (punctuation, a number, a line break, the text's edges: characters that have no
    initial), each within one initial of the edge (a run may reach one initial further
    by chance): a sentence or a clause, not words from inside two of them."""
    n = offsets.size
    if start < 0 or end > n or end - start < 2:
        return False

    def gap(i: int) -> bool:  # a character without an initial before initial ``i``
        return i <= 0 or i >= n or int(offsets[i]) - int(offsets[i - 1]) > 1

    return (gap(start) or gap(start + 1)) and (gap(end) or gap(end - 1))


def align_prepared(
    suspect: Prepared,
    mother: Prepared,
    params: AlignParams | None = None,
    *,
    evidence: np.ndarray | None = None,
    common: np.ndarray | None = None,
    evidence_window: int = 24,
) -> Alignment:
    """Copied passages between two prepared texts, in suspect order (the steps of the
    module docstring).

    ``evidence``: suspect positions (in initials) where the engine found index hits
    for this mother that are not stop words; ``common``: those of hits many mothers
    share; each stands for ``evidence_window`` initials. When evidence is given, a
    passage mostly made of common text with too little evidence of its own is dropped:
    legal boilerplate and stock formulas must not make a match on their own.
    """
    p = params or AlignParams()
    result = Alignment([], 0, 0, suspect.n, mother.n, 0.0)
    runs = _runs_in_suspect_order(suspect, mother, p)
    if runs.shape[0] == 0:
        return result
    clusters, leftovers = _cluster_runs(runs, p)
    _fill_in(clusters, leftovers)
    return keep_passages(
        clusters,
        mother,
        p,
        result,
        lambda c: (c, suspect, 0),
        evidence=evidence,
        common=common,
        evidence_window=evidence_window,
    )


def align(suspect_text: str, mother_text: str, params: AlignParams | None = None) -> Alignment:
    """Copied passages between two texts (see module docstring)."""
    p = params or AlignParams()
    return align_prepared(prepare(suspect_text, p.k), prepare(mother_text, p.k, index=True), p)
