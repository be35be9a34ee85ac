"""The fine comparison, step 4's measures (``tracker.matching.align``): a cluster's segment
pairs and passages, how alike it reads (on units and on characters or words), short and
ordinary copies."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

# difflib's SequenceMatcher compiled (cydifflib, Cython): the same algorithm and the
# same matching blocks as the standard library's, ten times faster on the passages
# read here (tests/tracker/test_fine_reading.py compares the two).
from cydifflib import SequenceMatcher

from tracker.common.records import Passage, Segment
from tracker.matching.align_clusters import Run, _Cluster, _coverage
from tracker.matching.align_seeds import AlignParams, Prepared, _runs, seeds
from tracker.text.rarity import reference_grams


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
    blocks = SequenceMatcher(None, a.tobytes(), b.tobytes(), autojunk=False)
    return int(sum(block.size for block in blocks.get_matching_blocks()))


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
            for x in SequenceMatcher(None, a, b.tolist(), autojunk=False).get_matching_blocks()
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
    """Share of the Han 4-grams common in ordinary text (``tracker.text.rarity``) in the
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
