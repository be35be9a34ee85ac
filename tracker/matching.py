"""Matching: candidates from an engine, verified by the fine alignment, scored.

``Matcher.match(text)`` is the whole query path:

1. the engine proposes candidate mothers (index hits per mother);
2. the store returns those mothers' texts (stale seqs of replaced mothers drop out);
3. ``tracker.align`` locates the copied passages in each candidate;
4. a candidate is reported as a copy when enough of it aligns (``MatchPolicy``),
   with a score in [0, 1] that grows with similarity and copied length, and the
   coverage of the suspect and of the mother.

Thresholds were chosen with the evaluation harness (``bench/eval.py``, docs/EVALUATION.md).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from threading import Lock

import numpy as np

from tracker.align import Alignment, AlignParams, Prepared, align_prepared, prepare
from tracker.engines.base import Engine
from tracker.records import Match, Mother
from tracker.store.base import Store


@dataclass(frozen=True)
class MatchPolicy:
    """When an alignment is a copy, and how it is scored."""

    candidates: int = 20  # how many candidates are verified (at least)
    chars_per_candidate: int = 2000  # a long suspect may hold many works: one per 2,000 chars
    long_suspect: int = 20_000  # initials; longer suspects are verified near the hits only
    min_copied: int = 60  # initials of the suspect inside passages
    min_similarity: float = 0.6  # length-weighted passage similarity
    score_scale: float = 80.0  # copied initials at which confidence reaches 1 - 1/e

    def is_copy(self, a: Alignment) -> bool:
        return (
            bool(a.passages)
            and a.suspect_copied >= self.min_copied
            and a.similarity >= self.min_similarity
        )

    def score(self, a: Alignment) -> float:
        return a.similarity * (1.0 - math.exp(-a.suspect_copied / self.score_scale))


@dataclass
class MatchResult:
    """What one suspect text matched."""

    matches: list[Match] = field(default_factory=list)
    candidates: int = 0
    elapsed_ms: float = 0.0


class PreparedCache:
    """LRU of prepared mothers by seq: a mother that keeps being copied is prepared once."""

    def __init__(self, maxsize: int = 256) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[tuple[int, int], Prepared] = OrderedDict()
        self._lock = Lock()

    def get(self, mother: Mother, k: int) -> Prepared:
        key = (mother.seq, k)
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
                return hit
        prepared = prepare(mother.text, k, index=True)
        with self._lock:
            self._data[key] = prepared
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return prepared


def _margin(n: int) -> int:
    return max(2000, n // 50)


class Matcher:
    def __init__(
        self,
        store: Store,
        engine: Engine,
        *,
        policy: MatchPolicy | None = None,
        align_params: AlignParams | None = None,
        cache: PreparedCache | None = None,
    ) -> None:
        self.store = store
        self.engine = engine
        self.policy = policy or MatchPolicy()
        self.align_params = align_params or AlignParams()
        self.cache = cache or PreparedCache()

    def _near_hits(self, suspect: Prepared, evidence: np.ndarray | None) -> Prepared:
        """A long suspect (a whole novel on one page) is aligned only around the
        candidate's hits, with a margin: the copy of one chapter is where its hits are."""
        if suspect.n <= self.policy.long_suspect or evidence is None or evidence.size == 0:
            return suspect
        margin = _margin(suspect.n)
        return suspect.slice(
            int(evidence.min()) - margin, int(evidence.max()) + margin, self.align_params.k
        )

    def match(
        self, text: str, *, suspect_id: str = "", title: str = "", url: str = "", domain: str = ""
    ) -> MatchResult:
        started = time.perf_counter()
        limit = max(self.policy.candidates, len(text) // self.policy.chars_per_candidate)
        candidates = self.engine.candidates_with_evidence(text, limit=limit)
        result = MatchResult(candidates=len(candidates))
        if candidates:
            mothers = self.store.get_mothers_by_seq(c.seq for c in candidates)
            suspect = prepare(text, self.align_params.k)
            for cand in candidates:
                mother = mothers.get(cand.seq)
                if mother is None:
                    continue  # a stale posting of a replaced or deleted mother
                alignment = align_prepared(
                    self._near_hits(suspect, cand.evidence),
                    self.cache.get(mother, self.align_params.k),
                    self.align_params,
                    evidence=cand.evidence,
                    common=cand.common,
                    evidence_window=self.engine.window,
                )
                if not self.policy.is_copy(alignment):
                    continue
                result.matches.append(
                    Match(
                        suspect_id=suspect_id,
                        mother_id=mother.id,
                        score=round(self.policy.score(alignment), 4),
                        coverage=round(alignment.coverage, 4),
                        mother_coverage=round(alignment.mother_coverage, 4),
                        passages=alignment.passages,
                        engine=self.engine.name,
                        mother_title=mother.title,
                        suspect_title=title,
                        suspect_url=url,
                        domain=domain,
                    )
                )
        result.matches.sort(key=lambda m: (-m.score, m.mother_id))
        result.elapsed_ms = (time.perf_counter() - started) * 1000.0
        return result
