"""Matching: candidates from an engine, verified by the fine alignment, scored.

``Matcher.match(text)`` is the whole query path:

1. the engine proposes candidate mothers (index hits per mother);
2. the store returns those mothers' texts (stale seqs of replaced mothers drop out);
3. ``tracker.matching.align`` locates the copied passages in each candidate;
4. a candidate is reported as a copy when enough of it aligns (``MatchPolicy``),
   with a score in [0, 1] that grows with similarity and copied length, and the
   coverage of the suspect and of the mother.

Thresholds were chosen with the evaluation harness (``bench/eval.py``, docs/EVALUATION.md).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from threading import Lock
from typing import Protocol

import numpy as np

from tracker.common.records import Match, Mother
from tracker.engines.base import Candidate, Engine
from tracker.matching.align import (
    Alignment,
    AlignParams,
    Prepared,
    align_prepared,
    index_mother,
    prepare,
)
from tracker.matching.longtext import OVERLAP_CHARS, WINDOW_CHARS, LongSuspect, check_suspect_size
from tracker.plumbing.config import DEFAULT_MIN_COPIED
from tracker.text.noise import (
    Noise,
    Reading,
    ScriptWarning,
    read_suspect,
    regions,
    script_warning,
)
from tracker.text.units import UNITS_PER_WORD, read_units, unit_codes


class MotherTexts(Protocol):
    """Where the matcher reads its candidates' texts: any store of works (a narrow
    view of ``tracker.store``'s ``MotherStore``, so matching imports no storage)."""

    def get_mothers_by_seq(self, seqs: Iterable[int]) -> dict[int, Mother]: ...


#: Mothers and their alignment with a suspect, as the verify stage found them.
Aligned = list[tuple[Mother, Alignment]]


@dataclass(frozen=True)
class MatchPolicy:
    """When an alignment is a copy, and how it is scored."""

    candidates: int = 20  # how many candidates are verified (at least)
    chars_per_candidate: int = 2000  # a long suspect may hold many works: one per 2,000 chars
    long_suspect: int = 20_000  # initials; longer suspects are verified near the hits only
    # Initials of the suspect inside passages: the library's floor (a passage under
    # ``config.SURE_COPIED`` is one only as a distinctive short copy, ``align.short_copy``).
    min_copied: int = DEFAULT_MIN_COPIED
    min_similarity: float = 0.6  # length-weighted passage similarity
    score_scale: float = 80.0  # copied initials at which confidence reaches 1 - 1/e

    def is_copy(self, a: Alignment) -> bool:
        return (
            bool(a.passages)
            and a.suspect_copied >= self.min_copied
            and max(a.similarity, self.reading(a)) >= self.min_similarity
        )

    @staticmethod
    def reading(a: Alignment) -> float:
        """The length-weighted similarity with each passage taken at the better of its
        seed coverage and its fine similarity (where measured): a copy with 10 % of its
        characters replaced and 3 % inserted or deleted covers under 0.6 with 8-letter
        seeds (every edit breaks the eight around it) while it reads 0.85+ letter by
        letter (issue #26). The passages were kept by the verifier's rules already."""
        if not a.passages or len(a.measures) != len(a.passages):
            return a.similarity
        weighted = total = 0.0
        for passage, measure in zip(a.passages, a.measures, strict=True):
            fine = measure.fine if measure.fine is not None else 0.0
            weighted += measure.initials * max(passage.similarity, fine)
            total += measure.initials
        return weighted / total if total else a.similarity

    def score(self, a: Alignment) -> float:
        return a.similarity * (1.0 - math.exp(-a.suspect_copied / self.score_scale))


# The minimum copied length a library may set (initials): below 20 a shared idiom is a
# copy; above 5,000 only whole chapters would be.
MIN_COPIED_RANGE = (20, 5000)


def parse_min_copied(value: object, source: str) -> int:
    """A minimum copied length (initials, ``MIN_COPIED_RANGE``), or ValueError naming
    ``source`` (where the value came from) and the value."""
    lo, hi = MIN_COPIED_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(
            f"{source}: the minimum copied length must be a whole number of initials "
            f"from {lo} to {hi}, got {value!r}"
        )
    return value


@dataclass
class MatchResult:
    """What one suspect text matched."""

    matches: list[Match] = field(default_factory=list)
    candidates: int = 0
    elapsed_ms: float = 0.0
    #: The text has too little the engine reads (``tracker.text.noise.script_warning``).
    warnings: list[ScriptWarning] = field(default_factory=list)
    #: Strings found at a fixed rhythm and read without (``tracker.text.noise.find_noise``).
    noise: list[Noise] = field(default_factory=list)


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
        if hit is not None:
            # Aligned again: now sorting its grams pays (``tracker.matching.align.seeds``).
            index_mother(hit)
            return hit
        prepared = prepare(mother.text, k)
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
        store: MotherTexts,
        engine: Engine,
        *,
        policy: MatchPolicy | None = None,
        align_params: AlignParams | None = None,
        cache: PreparedCache | None = None,
        max_chars: int | None = None,
        window_chars: int = WINDOW_CHARS,
        window_overlap: int = OVERLAP_CHARS,
    ) -> None:
        """``max_chars``: the largest suspect checked (``Settings.max_suspect_chars``;
        None: no limit); a suspect longer than ``window_chars`` characters is checked in
        windows that share ``window_overlap`` (``tracker.matching.longtext``)."""
        self.store = store
        self.engine = engine
        self.policy = policy or MatchPolicy()
        self.align_params = align_params or AlignParams()
        self.cache = cache or PreparedCache()
        self.max_chars = max_chars
        self.window_chars = window_chars
        self.window_overlap = window_overlap

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
        """The whole query path, its stages in a row (``tracker.services.check`` runs
        them one by one, between storing and evidence). The passages index into the
        text in display order (``tracker.text.textform.reading_order``: the text itself
        unless it holds bidi controls)."""
        started = time.perf_counter()
        name = repr(suspect_id) if suspect_id else title
        self.check_size(text, name)
        reading = self.read(text, name or "the text")
        found, verified = self.find(reading)
        return self.score(
            found,
            verified,
            suspect_id=suspect_id,
            title=title,
            url=url,
            domain=domain,
            started=started,
            reading=reading,
        )

    # -- the stages ---------------------------------------------------------------------
    def check_size(self, text: str, name: str) -> None:
        """Size: a text over ``max_chars`` is refused before any work (``name`` says
        which), the one size rule of every caller."""
        check_suspect_size(text, self.max_chars, name)

    def read(self, text: str, name: str) -> Reading:
        """Read: the suspect as the engine reads it (``tracker.text.noise``): in display
        order, strings repeated at a fixed rhythm found, and a warning naming it
        (``name``) when the engine reads too little of it to find a copy."""
        reading = read_suspect(text)
        reading.read = self.engine.readable(reading.original)
        warning = script_warning(
            reading.original,
            name,
            read=reading.read,
            needed=self.policy.min_copied,
            engine=self.engine.name,
            scripts=self.engine.scripts,
        )
        if warning is not None:
            reading.warnings.append(warning)
        return reading

    def find(self, reading: Reading) -> tuple[Aligned, int]:
        """Fingerprints, candidates and verify (window by window for a long text) on
        the text read; where noise was found, once more on the text without it: per
        mother the alignment that scores higher, its offsets in the text read (the
        text as it is stays checked: a list that repeats a string at a rhythm is the
        text's own, and must not lose a copy), and how many candidates were verified."""
        found, verified = self._find(reading.original)
        if not reading.noise:
            return found, verified
        cleaned, more = self._find(reading.text)
        best: dict[str, tuple[Mother, Alignment]] = {m.id: (m, a) for m, a in found}
        for mother, alignment in cleaned:
            mapped = _in_original(reading, alignment, mother.text)
            held = best.get(mother.id)
            if held is None or self._rank(mapped) > self._rank(held[1]):
                best[mother.id] = (mother, mapped)
        return list(best.values()), verified + more

    def _rank(self, a: Alignment) -> tuple[bool, float]:
        return self.policy.is_copy(a), self.policy.score(a)

    def _find(self, text: str) -> tuple[Aligned, int]:
        if self.is_long(text):
            return self.in_windows(text)
        return self.verify(text, self.candidates(text))

    def is_long(self, text: str) -> bool:
        """Whether the text is checked window by window (``in_windows``)."""
        return len(text) > self.window_chars

    def candidates(self, text: str) -> list[Candidate]:
        """Fingerprints → candidates: the engine fingerprints the text and looks its
        fingerprints up in the index; the mothers it proposes, strongest first."""
        return self.engine.candidates_with_evidence(text, limit=self._limit(len(text)))

    def score(
        self,
        found: Aligned,
        verified: int,
        *,
        suspect_id: str = "",
        title: str = "",
        url: str = "",
        domain: str = "",
        started: float | None = None,
        reading: Reading | None = None,
    ) -> MatchResult:
        """Score: the alignments that are copies (``MatchPolicy``), as matches, best
        first; ``elapsed_ms`` counts from ``started`` (``time.perf_counter()``); the
        ``reading``'s warnings and noise go with them."""
        result = MatchResult(candidates=verified)
        if reading is not None:
            result.warnings = list(reading.warnings)
            result.noise = list(reading.noise)
        text = reading.original if reading is not None else ""
        offsets: np.ndarray | None = None  # the suspect's initials, counted once
        for mother, alignment in found:
            if not self.policy.is_copy(alignment):
                continue
            if offsets is None and len(alignment.passages) > 1:
                offsets = unit_codes(text)[1]
            result.matches.append(
                Match(
                    suspect_id=suspect_id,
                    mother_id=mother.id,
                    score=round(self.policy.score(alignment), 4),
                    coverage=round(alignment.coverage, 4),
                    mother_coverage=round(alignment.mother_coverage, 4),
                    passages=alignment.passages,
                    regions=regions(
                        alignment.passages,
                        text,
                        mother.text,
                        offsets if offsets is not None else np.zeros(0, np.int64),
                    ),
                    engine=self.engine.name,
                    mother_title=mother.title,
                    suspect_title=title,
                    suspect_url=url,
                    domain=domain,
                )
            )
        result.matches.sort(key=lambda m: (-m.score, m.mother_id))
        if started is not None:
            result.elapsed_ms = (time.perf_counter() - started) * 1000.0
        return result

    def _limit(self, chars: int) -> int:
        """Candidates verified for a text of ``chars`` characters."""
        return max(self.policy.candidates, chars // self.policy.chars_per_candidate)

    def verify(self, text: str, candidates: list[Candidate]) -> tuple[Aligned, int]:
        """Verify: each candidate's alignment with the whole text (``tracker.matching.align``),
        and how many candidates were verified."""
        found: Aligned = []
        if not candidates:
            return found, 0
        suspect = prepare(text, self.align_params.k)
        strong = [c for c in candidates if not c.weak]
        weak = [c for c in candidates if c.weak]
        self._verify(strong, suspect, found)
        # Weak candidates (one hit) are for suspects nothing else explains (shuffled
        # verse, issue #13): once the copies found leave fewer characters of the suspect
        # than a copy needs, no weak candidate can add one (a copy overlapping those
        # found is a second source of the same lines; it is not looked for). Verifying
        # them anyway doubled the time of a check at 100 M characters.
        if weak and self._unexplained_chars(text, found) >= self.policy.min_copied:
            self._verify(weak, suspect, found)
            return found, len(candidates)
        return found, len(strong)

    def _verify(
        self,
        candidates: list[Candidate],
        suspect: Prepared,
        found: Aligned,
    ) -> None:
        """Align each candidate with the suspect (near its hits), into ``found``."""
        if not candidates:
            return
        mothers = self.store.get_mothers_by_seq(c.seq for c in candidates)
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
            found.append((mother, alignment))

    def _unexplained_chars(self, text: str, found: Aligned) -> int:
        """Characters of the suspect outside the passages of the copies found (an upper
        bound of its initials there: a copy needs ``policy.min_copied`` initials)."""
        spans = sorted(
            (p.suspect_start, p.suspect_end)
            for _, a in found
            if self.policy.is_copy(a)
            for p in a.passages
        )
        covered, reach = 0, 0
        for start, end in spans:
            start = max(start, reach)
            if end > start:
                covered += end - start
                reach = end
        return len(text) - covered

    def in_windows(self, text: str) -> tuple[Aligned, int]:
        """Candidates and verify for a long text, window by window with bounded memory
        (``tracker.matching.longtext``); the count is of the mothers verified."""
        long = LongSuspect(
            engine=self.engine,
            load_mothers=self.store.get_mothers_by_seq,
            prepare_mother=lambda mother: self.cache.get(mother, self.align_params.k),
            params=self.align_params,
            limit_per_window=self._limit,
            size=self.window_chars,
            overlap=self.window_overlap,
        )
        found = [(w.mother, w.alignment) for w in long.align(text)]
        return found, len(long.verified)


def short_work_warnings(documents: list[tuple[str, str]], min_copied: int) -> list[str]:
    """A warning for each ``(id, text)`` whose units (``tracker.text.units``: Han
    characters, two for an English word) are fewer than the minimum copied length: a
    copy of it alone can never be reported (the rule of ``MatchPolicy.is_copy``); lower
    the length (``yinji index configure --min-copied``) or join short works."""
    out = []
    for doc_id, text in documents:
        units = read_units(text)
        n = len(units)
        if n < min_copied:
            what = (
                f"{n} units ({units.words} English words, {UNITS_PER_WORD} units each)"
                if units.words
                else f"{n} Chinese characters"
            )
            out.append(
                f"work {doc_id!r}: {what}, fewer than the minimum copied "
                f"length of {min_copied}: a copy of this work alone can never be reported "
                "(lower it with `yinji index configure --min-copied`, or join short works)"
            )
    return out


def _in_original(reading: Reading, a: Alignment, mother: str = "") -> Alignment:
    """An alignment of the read text (``reading.text``) with ``mother`` as one of the
    suspect as given (``reading.original``): its passages mapped back
    (``Reading.passages``), and the suspect's initials those of the original (when
    counted)."""
    return replace(
        a,
        passages=reading.passages(a.passages, mother),
        suspect_initials=reading.read if reading.read is not None else a.suspect_initials,
    )
