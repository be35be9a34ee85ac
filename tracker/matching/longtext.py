"""Long suspects, checked in windows with bounded memory, and the maximum suspect size.

A whole pirated novel pasted as one page (1-3 M characters, sometimes far more) used
to go through the engine and the alignment in one piece: the engine's dense
fingerprints and postings, and the suspect's prepared arrays, grew with the text
(about 0.38 GB per million characters), so a big paste held a worker for minutes and
gigabytes. Here the suspect is cut into overlapping windows of characters; each goes
through the engine's candidates and the seeding of the alignment on its own, and only
what the result is made of is kept: per mother the *runs* (stretches copied in order,
``tracker.matching.align`` step 2), its evidence positions, and the boilerplate positions
under those runs. After the last window each mother's runs go through the same
clustering and filters as a short suspect's (``tracker.matching.align`` steps 3-4), on
positions in the whole text, so passages, coverage and score are those of the whole
suspect.

Why the result equals the unwindowed one:

- every seed (a k-gram shared with the mother) belongs to exactly one window: window
  ``w`` *owns* the initials from the middle of its overlap with ``w - 1`` to the middle
  of its overlap with ``w + 1``, and the overlap holds at least ``2 * margin``
  initials, so each owned k-gram (and each engine window of evidence) lies whole in
  the window;
- a run cut by an ownership boundary is joined again (same diagonal, seeds at most
  ``k`` apart: ``tracker.matching.align._runs``' rule), so a passage that straddles windows,
  even one longer than a window (a whole novel copied), is one passage;
- a mother with a run reaching the end of a window is verified in the next window too,
  candidate there or not;
- the clustering sees the runs in the order the unwindowed path sees them (suspect
  start, then diagonal).

Peak memory is one window's worth (engine, prepared arrays, seeds) plus the runs kept,
which grow with what was copied (the result), not with the suspect's length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from tracker.common.records import Mother
from tracker.engines.base import Candidate, Engine
from tracker.matching.align import (
    Alignment,
    AlignParams,
    Prepared,
    _Cluster,
    _cluster_runs,
    _fill_in,
    _runs,
    keep_passages,
    prepare,
    seeds,
)
from tracker.text.units import word_bounds

# Characters of one window, and of the overlap of two consecutive windows. A window of
# 100,000 characters keeps the engine's per-query arrays to a few tens of MB.
WINDOW_CHARS = 100_000
OVERLAP_CHARS = 4_000


class SuspectTooLarge(ValueError):
    """A suspect text longer than ``Settings.max_suspect_chars`` (the message names it)."""


def suspect_size_problem(chars: int, limit: int | None, name: str = "") -> str | None:
    """Why a suspect of ``chars`` characters may not be checked, or None. The one rule
    for the CLI, the web app, the API and the workers (``YINJI_MAX_SUSPECT_CHARS``)."""
    if limit is None or chars <= limit:
        return None
    what = f"suspect {name}" if name else "suspect text"
    return (
        f"{what} has {chars:,} characters, over the {limit:,} allowed "
        f"(YINJI_MAX_SUSPECT_CHARS): split it, or raise the limit"
    )


def check_suspect_size(text: str, limit: int | None, name: str = "") -> None:
    """Raise ``SuspectTooLarge`` when ``text`` is over ``limit`` characters."""
    problem = suspect_size_problem(len(text), limit, name)
    if problem is not None:
        raise SuspectTooLarge(problem)


@dataclass
class Window:
    """One window of the suspect: ``text`` starts at character ``char_start`` of the whole
    text and at initial ``base``; it owns initials ``[own_start, own_end)`` (whole-text
    positions)."""

    index: int
    char_start: int
    text: str
    base: int
    own_start: int
    own_end: int
    prepared: Prepared


def windows(text: str, *, size: int, overlap: int, k: int, margin: int) -> Iterator[Window]:
    """The windows of ``text`` in order. Consecutive windows share ``overlap`` characters,
    more when those hold fewer than ``2 * margin`` initials (text with long stretches
    without Chinese characters), so ownership can be cut with ``margin`` initials of
    context on both sides."""
    if size <= 2 * overlap:
        raise ValueError(f"window of {size} characters must exceed twice its overlap {overlap}")
    n = len(text)
    start, base, own_start, index = 0, 0, 0, 0
    while True:
        end = min(n, start + size)
        while True:
            prepared = prepare(text[start:end], k)
            if end >= n:
                next_start = None
                break
            # The next window starts at a word's start (an English word's units
            # stand in one window: the whole text's units are the windows' units).
            next_start = word_bounds(text, end - overlap, end - overlap + 1)[0]
            # Initials of this window at or after the next window's start.
            first_next = int(np.searchsorted(prepared.offsets, next_start - start))
            if prepared.n - first_next >= 2 * margin:
                break
            end = min(n, end + overlap)
        if next_start is None:
            yield Window(
                index, start, text[start:end], base, own_start, base + prepared.n, prepared
            )
            return
        next_base = base + first_next
        own_end = next_base + (prepared.n - first_next) // 2
        yield Window(index, start, text[start:end], base, own_start, own_end, prepared)
        start, base, own_start, index = next_start, next_base, own_end, index + 1


# Columns of the kept runs: whole-text initials (suspect start/end, mother start/end),
# the fewest occurrences in the mother of any of the run's k-grams, and the character
# offsets of the run's first and last initial + 1 in the suspect.
SA, SB, MA, MB, OCC, SAC, SBC = range(7)


@dataclass
class _MotherRuns:
    """What windows found of one mother."""

    runs: list[np.ndarray] = field(default_factory=list)  # committed (r x 7) blocks
    pending: np.ndarray | None = None  # the last window's, may still join the next
    pending_window: int = -1
    evidence: list[np.ndarray] | None = field(default_factory=list)  # None: unknown

    def reaches(self, position: int, reach: int) -> bool:
        """Whether a pending run ends within ``reach`` initials before ``position``."""
        return self.pending is not None and bool((self.pending[:, SB] + reach >= position).any())

    def add(self, window: int, own_start: int, new: np.ndarray, k: int) -> None:
        pending = self.pending
        if pending is not None and self.pending_window == window - 1 and new.size:
            pending, new = _join_across(pending, new, own_start, k)
        if pending is not None:
            self.runs.append(pending)
        self.pending, self.pending_window = new, window

    def all_runs(self) -> np.ndarray:
        blocks = [*self.runs, *([self.pending] if self.pending is not None else [])]
        return np.concatenate(blocks) if blocks else np.zeros((0, 7), dtype=np.int64)


def _join_across(
    old: np.ndarray, new: np.ndarray, boundary: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Join the runs that an ownership boundary cut: an old run whose last seed is within
    ``k`` of the boundary and a new run on the same diagonal whose first seed is at most
    ``k`` after it (``_runs``' rule) are one run. The joined run takes the new one's
    place (it may reach the next boundary too); returns (old, new) without the parts."""
    tails = np.flatnonzero(old[:, SB] >= boundary)
    heads = np.flatnonzero(new[:, SA] < boundary + k)
    if tails.size == 0 or heads.size == 0:
        return old, new
    by_diag = {int(old[i, MA] - old[i, SA]): int(i) for i in tails}
    joined = []
    for j in heads:
        i = by_diag.get(int(new[j, MA] - new[j, SA]))
        if i is None or new[j, SA] > old[i, SB]:
            continue
        new[j, SA], new[j, MA], new[j, SAC] = old[i, SA], old[i, MA], old[i, SAC]
        new[j, OCC] = min(old[i, OCC], new[j, OCC])
        joined.append(i)
    return (np.delete(old, joined, axis=0) if joined else old), new


def _owned(positions: np.ndarray, window: Window) -> np.ndarray:
    """Window-local positions in initials as whole-text positions, those the window owns."""
    glob = positions.astype(np.int64) + window.base
    return glob[(glob >= window.own_start) & (glob < window.own_end)]


def _within(positions: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The sorted ``positions`` inside the union of ``[starts, ends)``."""
    if positions.size == 0 or starts.size == 0:
        return positions[:0]
    order = np.argsort(starts, kind="stable")
    starts, reach = starts[order], np.maximum.accumulate(ends[order])
    i = np.searchsorted(starts, positions, side="right") - 1
    inside = i >= 0
    inside[inside] = positions[inside] < reach[i[inside]]
    return positions[inside]


@dataclass
class WindowedAlignment:
    """One mother's alignment with the whole suspect, found window by window."""

    mother: Mother
    alignment: Alignment


@dataclass
class LongSuspect:
    """Windowed matching of one long suspect against one engine's index (see module)."""

    engine: Engine
    load_mothers: Callable[[Iterable[int]], dict[int, Mother]]
    prepare_mother: Callable[[Mother], Prepared]
    params: AlignParams
    limit_per_window: Callable[[int], int]  # characters of a window -> candidates
    size: int = WINDOW_CHARS
    overlap: int = OVERLAP_CHARS
    verified: set[int] = field(default_factory=set)

    @property
    def margin(self) -> int:
        """Initials of context each side of an ownership cut: an engine window and its
        boilerplate span, a gap of one passage and a k-gram, with room to spare."""
        p = self.params
        return max(256, 2 * self.engine.window + p.max_gap + p.k)

    def align(self, text: str) -> list[WindowedAlignment]:
        p = self.params
        found: dict[int, _MotherRuns] = {}
        mothers: dict[int, Mother] = {}
        common: list[np.ndarray] = []
        total_initials = 0
        for window in windows(
            text, size=self.size, overlap=self.overlap, k=p.k, margin=self.margin
        ):
            total_initials = window.own_end
            carried = [
                seq for seq, mr in found.items() if mr.reaches(window.own_start, p.max_gap + p.k)
            ]
            limit = self.limit_per_window(len(window.text))
            chosen = self._choose(window, limit, carried)
            fresh = [seq for seq in chosen if seq not in mothers]
            mothers.update(self.load_mothers(fresh))
            spans: list[tuple[np.ndarray, np.ndarray]] = []
            window_common: np.ndarray | None = None
            for seq, cand in chosen.items():
                mother = mothers.get(seq)
                if mother is None:
                    continue  # a stale posting of a replaced or deleted mother
                self.verified.add(seq)
                runs = self._runs(window, self.prepare_mother(mother))
                mr = found.setdefault(seq, _MotherRuns())
                mr.add(window.index, window.own_start, runs, p.k)
                if cand is not None:
                    if cand.evidence is None:
                        mr.evidence = None
                    elif mr.evidence is not None:
                        mr.evidence.append(_owned(cand.evidence, window))
                    if window_common is None and cand.common is not None:
                        window_common = _owned(cand.common, window)
                if runs.size:
                    spans.append((runs[:, SA] - self.engine.window, runs[:, SB] + p.max_gap))
            if window_common is not None and spans:
                # Only boilerplate under some run can ever be asked about
                # (``_mostly_common`` looks at a passage's span).
                starts = np.concatenate([s for s, _ in spans])
                ends = np.concatenate([e for _, e in spans])
                common.append(_within(window_common, starts, ends))
        common_all = np.concatenate(common) if common else None
        out = []
        for seq, mr in found.items():
            alignment = self._finish(text, mothers[seq], mr, common_all, total_initials)
            if alignment.passages:
                out.append(WindowedAlignment(mothers[seq], alignment))
        return out

    def _choose(
        self, window: Window, limit: int, carried: list[int]
    ) -> dict[int, Candidate | None]:
        """This window's candidates (at most ``limit``), plus the mothers whose runs reach
        into it (with their evidence when the engine names them, else none)."""
        cands = self.engine.candidates_with_evidence(window.text, limit=limit + len(carried))
        chosen: dict[int, Candidate | None] = {c.seq: c for c in cands[:limit]}
        by_seq = {c.seq: c for c in cands}
        for seq in carried:
            chosen.setdefault(seq, by_seq.get(seq))
        return chosen

    def _runs(self, window: Window, mother: Prepared) -> np.ndarray:
        """The runs of the seeds this window owns, in whole-text positions (7 columns)."""
        p = self.params
        prepared = window.prepared
        lo, hi = window.own_start - window.base, window.own_end - window.base
        owned = Prepared(
            idx=prepared.idx, offsets=prepared.offsets, grams=prepared.grams[lo:hi], base=lo
        )
        s_pos, m_pos, occ = seeds(owned, mother, p.max_occurrences)
        runs = _runs(s_pos, m_pos, occ, p.k)
        out = np.empty((runs.shape[0], 7), dtype=np.int64)
        out[:, :5] = runs
        out[:, SAC] = prepared.offsets[runs[:, 0]] + window.char_start
        out[:, SBC] = prepared.offsets[runs[:, 1] - 1] + window.char_start + 1
        out[:, [SA, SB]] += window.base
        return out

    def _finish(
        self,
        text: str,
        mother: Mother,
        mr: _MotherRuns,
        common: np.ndarray | None,
        total_initials: int,
    ) -> Alignment:
        """``tracker.matching.align.align_prepared`` steps 3-4 on the mother's runs, whole-text
        positions; passages drawn from the suspect's characters under each one only."""
        p = self.params
        m_prep = self.prepare_mother(mother)
        result = Alignment([], 0, 0, total_initials, m_prep.n, 0.0)
        runs = mr.all_runs()
        if runs.shape[0] == 0:
            return result
        # The unwindowed order: by suspect start, then by diagonal.
        runs = runs[np.lexsort((runs[:, MA] - runs[:, SA], runs[:, SA]))]
        char_of = dict(zip(runs[:, SA].tolist(), runs[:, SAC].tolist(), strict=True))
        char_end = dict(zip(runs[:, SB].tolist(), runs[:, SBC].tolist(), strict=True))
        clusters, leftovers = _cluster_runs(runs[:, :5], p)
        _fill_in(clusters, leftovers)

        def local(c: _Cluster) -> tuple[_Cluster, Prepared, int]:
            # Only the suspect's characters under the cluster are prepared, from the
            # start of the word its first unit is in to the end of the word its last one
            # is in (an English word's units stand at its first, middle and last letter).
            first, end = char_of[c.s_start], char_end[c.s_end]
            a, b = word_bounds(text, first, end)
            piece = prepare(text[a:b], p.k)
            skip = int(np.searchsorted(piece.offsets, first - a, side="left"))
            return c.shifted(c.s_start - skip), piece, a

        return keep_passages(
            clusters,
            m_prep,
            p,
            result,
            local,
            evidence=None if mr.evidence is None else _sorted_concat(mr.evidence),
            common=common,
            evidence_window=self.engine.window,
        )


def _sorted_concat(chunks: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
