"""The fine comparison, steps 1-2 (``tracker.matching.align``): the parameters, a text
prepared for alignment (its units, ``tracker.text.units``, and their k-grams), the seeds
shared by two texts and the runs they make."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracker.fingerprints.daguan import letter_indices
from tracker.plumbing.config import DEFAULT_MIN_COPIED, SURE_COPIED
from tracker.text.units import read_units, unit_breaks


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
    # common in ordinary text (``ordinary_share``, ``tracker.text.rarity``) and at most
    # ``short_library_common`` of it lies under index windows many works of the library
    # share (the engine's ``common`` evidence). docs/FINGERPRINTS.md, "Short copies".
    short_fine: float = 0.97
    short_chars: float = 0.97
    short_common: float = 0.25
    short_library_common: float = 0.5
    # Formula text (issue #26): a passage up to ``formula_span`` initials whose mother
    # text is mostly ordinary (at least ``formula_common`` of its Han 4-grams common in
    # the reference, ``tracker.text.rarity``: legal formulas, the revision history heading a
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
    # A text with English words: per unit, whether a break of the text (punctuation, a
    # number ...) stands before it (``tracker.text.units.unit_breaks``); None: a break
    # is a character without a unit (Chinese text).
    breaks: np.ndarray | None = None

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
            breaks=self.breaks,
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
    breaks = unit_breaks(text, units) if units.words else None
    prepared = Prepared(
        idx=idx.astype(np.uint8), offsets=offsets, grams=grams, chars=chars, breaks=breaks
    )
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
