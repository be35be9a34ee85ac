"""MinHash engine: MinHash signatures of a whole text and of its windows, LSH in Redis.

Text normalization (``normalization=``), as in ``simhash_engine``:

- ``"initials"`` (default): shingles of ``shingle`` (default 8) pinyin initials
  (``MinHasher(normalize="initials")``): homophone and simplified/traditional copies have
  the very same shingle sets as their mother, punctuation and Latin watermarks are gone;
- ``"chars"``: shingles of ``shingle`` (default 5) characters of the text lower-cased with
  only letters and digits kept.

Fingerprints of a text (the array the store keeps): uint32, ``rows * num_perm`` values,
row-major; reshape to ``(-1, num_perm)``. Row 0 is the signature of the whole normalized
stream, rows 1.. one per content-defined window
(``tracker.fingerprints.simhash.content_windows``; in
initials mode 48 to 256 letters, a new one every ~32 on average). Content-defined windows put a
copied passage into the same windows in suspect and mother whatever its offset (see
``simhash_engine``), so an excerpt pasted into unrelated text is found with an estimated
Jaccard near 1, and a window that straddles the edge of a copy still shares part of its
shingles.

Index (all keys under ``f"{prefix}:minhash:"``):

- ``lsh:b{band}:{hash}``: ``RedisLSH`` (``tracker.indexes.lsh``) band buckets of the ids
  ``seq << 20 | row``, bands and rows chosen by ``choose_bands(num_perm, threshold)``
  (threshold 0.2 with 64 permutations: 28 bands of 2 rows, so a window pair with Jaccard
  0.2 meets in a bucket with probability ~0.68, 0.3 with ~0.93, 0.5 with ~1.0; a window
  straddling the edge of a copy or holding a few edits still meets its mother window;
  chars mode keeps the original 128 permutations at threshold 0.3: 37 bands of 3 rows);
- ``sig:{seq}``: the mother's signatures (row-major), to score candidates.

``candidates`` queries every suspect row; the mothers found by the most suspect rows
(``max_candidates`` at most) are scored by the largest estimated Jaccard between a suspect
row and one of the mother's rows it met in a bucket (only those rows are read, with
GETRANGE). A mother scoring below ``min_jaccard`` is dropped: it met the suspect by chance
in a bucket. A suspect row whose buckets hold more than ``common_df`` mothers is
boilerplate and counts for none. In initials mode a ``Candidate`` carries as evidence every
initial of the suspect windows that met it with at least ``min_jaccard`` (the whole text
only when no window did) and as common positions those of the boilerplate rows (see
``tracker.engines.base.Candidate``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from tracker.common.records import JSONObject
from tracker.engines.base import Candidate
from tracker.engines.windows import (
    ROW_BITS,
    ROW_MASK,
    WindowedEngine,
    check_normalization,
    span_evidence,
)
from tracker.fingerprints.minhash import MinHasher
from tracker.indexes.lsh import RedisLSH, choose_bands

if TYPE_CHECKING:
    from tracker.engines.base import RedisClient

# Per normalization: shingle, window gap, window min length, window max length, anchor n,
# permutations, LSH threshold, min Jaccard. Chars: the original engine, unchanged (its
# stored fingerprints stay valid). Initials: chosen on bench/eval.py, see docs/ENGINES.md
# (shorter windows fit inside short excerpts; Jaccard tolerates edits and the straddled
# edges of a copy, so they need not be as short as SimHash's; 64 permutations found the
# same cases as 128 at less cost; threshold 0.2 found edited excerpts that 0.3 missed).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "chars": {
        "shingle": 5,
        "window_gap": 250,
        "window_min": 250,
        "window_max": 1000,
        "anchor": 5,
        "num_perm": 128,
        "threshold": 0.3,
        "min_jaccard": 0.0,
    },
    "initials": {
        "shingle": 8,
        "window_gap": 32,
        "window_min": 48,
        "window_max": 256,
        "anchor": 5,
        "num_perm": 64,
        "threshold": 0.2,
        "min_jaccard": 0.2,
    },
}
# MinHasher's normalize for each engine normalization.
_HASHER_NORMALIZE = {"initials": "initials", "chars": "alnum"}


class MinHashEngine(WindowedEngine):
    name: ClassVar[str] = "minhash"
    dtype: ClassVar[np.dtype[Any]] = np.dtype(np.uint32)

    def __init__(
        self,
        redis: RedisClient,
        prefix: str,
        *,
        normalization: str = "initials",
        num_perm: int | None = None,
        seed: int = 1,
        shingle: int | None = None,
        threshold: float | None = None,
        window_gap: int | None = None,
        window_min: int | None = None,
        window_max: int | None = None,
        anchor: int | None = None,
        min_jaccard: float | None = None,
        common_df: int = 16,
        max_candidates: int = 200,
    ) -> None:
        """Window sizes are in units of the stream (initials or characters); ``None`` takes
        the default of the normalization (``_DEFAULTS``). A suspect row sharing buckets with
        the rows of more than ``common_df`` mothers is boilerplate: it makes no candidate."""
        super().__init__(redis, prefix)
        check_normalization(normalization)
        self.normalization = normalization
        d = _DEFAULTS[normalization]
        self.shingle = d["shingle"] if shingle is None else shingle
        self.num_perm = d["num_perm"] if num_perm is None else num_perm
        self.hasher = MinHasher(
            self.num_perm,
            seed,
            self.shingle,
            scheme="affine32",
            normalize=_HASHER_NORMALIZE[normalization],
        )
        self.threshold = d["threshold"] if threshold is None else threshold
        self.bands, self.rows = choose_bands(self.num_perm, self.threshold)
        self.lsh = RedisLSH(redis, self.base, self.num_perm, self.bands, self.rows)
        self.window_gap = d["window_gap"] if window_gap is None else window_gap
        self.window_min = d["window_min"] if window_min is None else window_min
        self.window_max = d["window_max"] if window_max is None else window_max
        self.anchor = d["anchor"] if anchor is None else anchor
        self.min_jaccard = d["min_jaccard"] if min_jaccard is None else min_jaccard
        self.common_df = common_df
        self.max_candidates = max_candidates

    # -- fingerprints ---------------------------------------------------------------------
    def _signatures(self, prepared: str, spans: list[tuple[int, int]]) -> np.ndarray:
        if not spans:
            return np.zeros((0, self.num_perm), dtype=np.uint32)
        return self.hasher.spans_signatures(prepared, spans)

    def signatures(self, text: str) -> np.ndarray:
        """``(rows, num_perm)`` signatures: whole text, then the windows (none if empty)."""
        prepared = self.hasher.prepare(text)
        return self._signatures(prepared, self.spans(prepared))

    def mother_fingerprints(self, text: str) -> np.ndarray:
        return self.signatures(text).ravel()

    def _rows(self, fps: np.ndarray) -> np.ndarray:
        arr = np.asarray(fps, dtype=np.uint32)
        if arr.size % self.num_perm:
            raise ValueError(f"fingerprints are rows of {self.num_perm} values")
        return arr.reshape(-1, self.num_perm)

    def _sig_key(self, seq: int) -> str:
        return f"{self.base}:sig:{seq}"

    # -- index ----------------------------------------------------------------------------
    def _entries(self, items: Sequence[tuple[int, np.ndarray]]) -> list[tuple[int, np.ndarray]]:
        out = []
        for seq, fps in items:
            rows = self._rows(fps)
            if len(rows) > ROW_MASK + 1:
                raise ValueError(f"at most {ROW_MASK + 1} signatures per mother")
            out += [((seq << ROW_BITS) | r, row) for r, row in enumerate(rows)]
        return out

    def add(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        if not items:
            return
        self.lsh.add(self._entries(items))
        pipe = self.redis.pipeline(transaction=False)
        for seq, fps in items:
            pipe.set(self._sig_key(seq), self._rows(fps).astype("<u4").tobytes())
        pipe.execute()

    def remove(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        if not items:
            return
        self.lsh.remove(self._entries(items))
        pipe = self.redis.pipeline(transaction=False)
        for seq, _ in items:
            pipe.delete(self._sig_key(seq))
        pipe.execute()

    def candidates_with_evidence(self, text: str, *, limit: int = 20) -> list[Candidate]:
        prepared = self.hasher.prepare(text)
        spans = self.spans(prepared)
        sigs = self._signatures(prepared, spans)
        if len(sigs) == 0:
            return []
        meetings = self._meet(sigs)
        if not meetings.met:
            return []
        shortlist = meetings.shortlist(self.max_candidates)
        mother_rows = self._read_rows({seq: meetings.mother_rows(seq) for seq in shortlist})
        scored: list[Scored] = []
        for seq in shortlist:
            score = self._score(seq, sigs, meetings.met[seq], mother_rows[seq])
            if score is not None:
                scored.append(score)
        scored.sort(key=lambda x: (-x.jaccard, x.seq))
        if self.normalization != "initials":
            # Positions would be in normalized characters, not the verifier's initials.
            return [Candidate(x.seq, x.jaccard) for x in scored[:limit]]
        common = span_evidence([spans[q] for q in meetings.common], self.window)
        return [
            Candidate(x.seq, x.jaccard, self._evidence(spans, x.good), common)
            for x in scored[:limit]
        ]

    def _meet(self, sigs: np.ndarray) -> Meetings:
        """Which mother rows share an LSH band bucket with each suspect row."""
        meetings = Meetings()
        for q, found in enumerate(self.lsh.query_many(sigs)):
            if len({id_ >> ROW_BITS for id_ in found}) > self.common_df:
                meetings.common.append(q)
                continue  # like a stop word: says nothing about any one mother
            for id_ in found:
                meetings.met[id_ >> ROW_BITS].add((q, id_ & ROW_MASK))
        return meetings

    def _read_rows(self, wanted: dict[int, list[int]]) -> dict[int, dict[int, np.ndarray]]:
        """Signatures of the wanted rows of each mother (``seq -> rows``), by row; a row
        missing (the mother removed meanwhile) is left out."""
        # GETRANGE of one row each, not the whole signature blob: a long chapter holds
        # hundreds of window rows, of which a suspect meets a few.
        size = 4 * self.num_perm
        pipe = self.redis.pipeline(transaction=False)
        for seq, mrows in wanted.items():
            for r in mrows:
                pipe.getrange(self._sig_key(seq), r * size, (r + 1) * size - 1)
        replies = iter(pipe.execute())
        out: dict[int, dict[int, np.ndarray]] = {}
        for seq, mrows in wanted.items():
            got = {r: blob for r in mrows if len(blob := next(replies)) == size}
            out[seq] = {r: np.frombuffer(b, dtype="<u4") for r, b in got.items()}
        return out

    def _score(
        self,
        seq: int,
        sigs: np.ndarray,
        met: set[tuple[int, int]],
        mother: dict[int, np.ndarray],
    ) -> Scored | None:
        """A mother's best estimated Jaccard over the (suspect row, mother row) pairs that
        met, and the suspect rows meeting it with at least ``min_jaccard``; None when it
        scores below ``min_jaccard`` (it met the suspect by chance in a bucket) or none of
        its rows could be read."""
        if not mother:
            return None  # removed meanwhile
        best = 0.0
        good: set[int] = set()
        for q, r in met:
            if r not in mother:
                continue
            j = float(np.count_nonzero(sigs[q] == mother[r])) / self.num_perm
            best = max(best, j)
            if j >= self.min_jaccard:
                good.add(q)
        if best < self.min_jaccard:
            return None
        return Scored(seq, best, sorted(good))

    def _evidence(self, spans: list[tuple[int, int]], good: list[int]) -> np.ndarray:
        """Positions covering the suspect windows that met a mother well enough."""
        # The page row (row 0) spans the whole suspect and a page Jaccard of 0.2 is no
        # near-duplicate, so it counts only when no window met (a suspect shorter than a
        # window).
        rows = [q for q in good if q > 0] or good
        return span_evidence([spans[q] for q in rows], self.window)

    def stats(self) -> JSONObject:
        mothers = signatures = keys = 0
        sig_prefix = f"{self.base}:sig:".encode()
        pipe = self.redis.pipeline(transaction=False)
        for key in self.redis.scan_iter(match=f"{self.base}:*", count=1000):
            keys += 1
            raw = key if isinstance(key, bytes) else key.encode()
            if raw.startswith(sig_prefix):
                mothers += 1
                pipe.strlen(key)
        signatures = sum(pipe.execute()) // (4 * self.num_perm)
        return {
            "engine": self.name,
            "normalization": self.normalization,
            "mothers": mothers,
            "signatures": signatures,
            "fingerprints": signatures,
            "keys": keys,
            "num_perm": self.num_perm,
            "bands": self.bands,
            "rows": self.rows,
            "shingle": self.shingle,
            "window": [self.window_gap, self.window_min, self.window_max],
        }


@dataclass
class Meetings:
    """Suspect rows and mother rows that share an LSH band bucket: ``met[seq]`` holds the
    ``(suspect row, mother row)`` pairs of mother ``seq``; ``common`` the suspect rows in
    buckets of many mothers (boilerplate), which count for no mother."""

    met: dict[int, set[tuple[int, int]]] = field(default_factory=lambda: defaultdict(set))
    common: list[int] = field(default_factory=list)

    def shortlist(self, size: int) -> list[int]:
        """The ``size`` mothers met by the most suspect rows (ties: smaller seq first):
        only those are scored, so the work per suspect is bounded."""
        votes = {seq: len({q for q, _ in pairs}) for seq, pairs in self.met.items()}
        return sorted(votes, key=lambda s: (-votes[s], s))[:size]

    def mother_rows(self, seq: int) -> list[int]:
        """The rows of mother ``seq`` that met the suspect, sorted."""
        return sorted({r for _, r in self.met[seq]})


@dataclass
class Scored:
    """A mother's score: its best estimated Jaccard and the suspect rows that met it with
    at least the engine's ``min_jaccard`` (sorted)."""

    seq: int
    jaccard: float
    good: list[int]
