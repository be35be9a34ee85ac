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
end exclusive), through the units' offset maps. The steps live in three modules:
``tracker.matching.align_seeds`` (the parameters, prepared texts, seeds and runs: steps 1-2),
``tracker.matching.align_clusters`` (step 3 and the result types) and
``tracker.matching.align_passages``
(step 4's measures); this module keeps step 4's decisions and the entry points, and
names the others' public parts for callers.

Units, not only initials: a prepared text is the unit stream of ``tracker.text.units``
(a Han character's pinyin initial; an English word's two letters), so every length
here counted "in initials" is counted in units, and ``Prepared.chars`` holds each
unit's identity (a character's code point, a word's hash): reading alike "on
characters" is reading alike character by character in Chinese and word by word in
English.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tracker.matching.align_clusters import (  # noqa: F401 - re-exported for callers
    Alignment,
    PassageMeasure,
    Run,
    _Cluster,
    _cluster_runs,
    _coverage,
    _fill_in,
    _mostly_common,
    _runs_in_suspect_order,
    _span_share,
)
from tracker.matching.align_passages import (  # noqa: F401 - re-exported for callers
    _char_span,
    _passages,
    _segment_pairs,
    best_occurrence_fine,
    char_similarity,
    fine_similarity,
    ordinary_share,
    reads_alike_enough,
    short_copy,
)
from tracker.matching.align_seeds import (  # noqa: F401 - re-exported for callers
    AlignParams,
    Prepared,
    _pairs_by_mother,
    _pairs_by_suspect,
    _runs,
    index_mother,
    prepare,
    seeds,
)
from tracker.text.units import UNITS_PER_WORD

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
    ``align_prepared`` and for long suspects checked in windows (``tracker.matching.longtext``),
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
    # The cheap tests first (length; the mother's sentence edges, seeds, the suspect's
    # sentence edges; boilerplate), each stage only when what passed the ones before
    # could make a chain (``_could_chain``); the readings (difflib, the reference table)
    # last.
    sized = [
        c
        for c in sorted(units, key=lambda x: (x.s_start, x.s_start - x.s_end))
        if p.reprint_min <= c.s_end - c.s_start < p.base and c.m_end - c.m_start >= p.reprint_min
    ]
    if not _could_chain(sized, p):
        return []
    cheap: list[tuple[_Cluster, float]] = []
    for c in sized:
        if not _sentence(mother.offsets, c.m_start, c.m_end, mother.breaks):
            continue  # stock phrases run across sentences; a reprint copies sentences
        similarity = c.similarity(p.max_gap)
        if similarity < p.min_similarity:
            continue
        view, suspect, _shift = local(c)  # a long suspect's piece is prepared here
        if not _sentence(suspect.offsets, view.s_start, view.s_end, suspect.breaks):
            continue
        cheap.append((c, similarity))
    if not _could_chain([c for c, _ in cheap], p):
        return []
    if evidence is not None:  # boilerplate (numpy on the index hits): only now
        cheap = [x for x in cheap if not _mostly_common(x[0], p, evidence, common, evidence_window)]
        if not _could_chain([c for c, _ in cheap], p):
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
        fits = [chain for chain in chains if _follows(chain[-1][0], c, p)]
        if fits:
            max(fits, key=lambda ch: sum(x[0].s_end - x[0].s_start for x in ch)).append(item)
        else:
            chains.append([item])
    best = max(chains, key=lambda ch: sum(x[0].s_end - x[0].s_start for x in ch), default=[])
    copied = sum(c.s_end - c.s_start for c, _, _ in best)
    if len(best) < p.reprint_runs or copied < p.min_copied:
        return []
    return best


def _follows(before: _Cluster, c: _Cluster, p: AlignParams) -> bool:
    """Whether ``c`` can follow ``before`` in a reprint's chain: after it in the mother
    and within ``reprint_window`` initials of it in both texts."""
    return (
        before.m_end <= c.m_start <= before.m_end + p.reprint_window
        and c.s_start - before.s_end <= p.reprint_window
    )


def _could_chain(units: list[_Cluster], p: AlignParams) -> bool:
    """Whether the units (in suspect order) hold a chain that ``reprint_sentences`` could
    return: at least ``reprint_runs`` of them, each after the one before in the suspect
    and following it (``_follows``), together at least ``min_copied`` initials. The
    chain it returns is one such sequence of the units that pass the readings too, so
    where none exists the readings need not be made. ``most[j][q]``: the most initials
    of a sequence ending at unit ``j`` with ``q`` units (the last count: that many or
    more)."""
    k = max(p.reprint_runs, 1)
    most: list[list[int]] = []
    for j, c in enumerate(units):
        size = c.s_end - c.s_start
        row = [-1] * (k + 1)
        row[1] = size
        for i in range(j):
            b = units[i]
            if b.s_end > c.s_start or not _follows(b, c, p):
                continue
            for q in range(1, k + 1):
                if most[i][q] >= 0:
                    up = min(q + 1, k)
                    row[up] = max(row[up], most[i][q] + size)
        if row[k] >= p.min_copied:
            return True
        most.append(row)
    return False


def _sentence(offsets: np.ndarray, start: int, end: int, breaks: np.ndarray | None = None) -> bool:
    """Whether initials ``start`` to ``end`` stand between two breaks of the text
    (punctuation, a number, a line break, the text's edges: characters that have no
    initial), each within one initial of the edge (a run may reach one initial further
    by chance): a sentence or a clause, not words from inside two of them. In a text
    with English words, ``breaks`` (``Prepared.breaks``) says where the breaks are, and
    the edges may be a word (its units) off."""
    n = offsets.size
    if start < 0 or end > n or end - start < 2:
        return False
    if breaks is not None:

        def cut(i: int) -> bool:
            return i <= 0 or i >= n or bool(breaks[i])

        near = range(UNITS_PER_WORD + 1)
        return any(cut(start + d) for d in near) and any(cut(end - d) for d in near)

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
