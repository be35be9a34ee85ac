"""SimHash engine: 64-bit SimHashes of a whole text and of its windows, in a Redis
permuted-table Hamming index (``tracker.indexes.hamming``).

Text normalization (``normalization=``):

- ``"initials"`` (default): the features are taken from the pinyin-initial stream
  (``tracker.text.pinyin.initials``), as in the rest of Yinji: homophone substitution and
  simplified/traditional conversion keep every letter, and punctuation, whitespace and
  Latin watermarks are dropped, so such copies give *the same* fingerprints as their
  mother. Features are ``ngram``-letter shingles (default 8: an initial carries ~4.1 bits,
  so 8 letters are about as specific as 5 characters, see docs/ENGINES.md).
- ``"chars"``: the features are character ``ngram``-grams (default 3) of the text
  lower-cased with everything but letters and digits dropped
  (``tracker.fingerprints.simhash.normalize``).
  Traditional or homophone copies share almost no features with their mother in this mode.

Fingerprints of a text (the array the store keeps, uint64):

- row 0: the SimHash of the whole normalized stream (tf weights): the *page* fingerprint;
- rows 1..: one SimHash per *content-defined* window of the stream
  (``tracker.fingerprints.simhash.content_windows``; in initials mode 24 to 96 letters, a new window
  every ~8 letters on average; see docs/ENGINES.md for the measurements behind these).

A whole-text SimHash only finds near-complete copies: an excerpt pasted into unrelated
text changes most of the whole-text features. The windows find excerpts. They are
content-defined rather than at fixed offsets so that a copied passage produces *the same*
windows in the suspect as in the mother whatever the offset it lands at; so suspects use
the very same windows as mothers and an untouched copied window is found at distance 0.

Two Redis permuted-table Hamming indexes (``tracker.indexes.hamming``), because the Hamming
radius that pays depends on the span: page rows are looked up within ``k`` (3) of other
page rows, so a page with scattered light edits still meets its mother; window rows within
``window_k`` of other window rows. On the initials windows a copied window is found at
distance 0 or not at all in practice (one edited letter changes ``ngram`` of a window's
~20-90 shingles: ~10 bits), so ``window_k`` is 0 in initials mode: k = 1, 2 or 3 found
exactly the same cases on bench/eval.py and cost 2 to 4 tables per lookup instead of one.
In chars mode windows keep ``k = 3`` as before.

Index ids are ``seq << 20 | row``. ``candidates`` looks up every suspect fingerprint and
scores each mother by the number of *distinct* mother fingerprints (page or windows)
found: the number of copied window steps, roughly. A suspect window that meets the
windows of more than ``common_df`` mothers is boilerplate and counts for none. In
initials mode a ``Candidate`` carries as evidence every initial of the suspect windows
that hit it and as common positions those of the boilerplate windows, so the verifier
drops a passage only when it is mostly boilerplate that no hit of its own supports (the
contract of ``tracker.engines.base.Candidate``).
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
from tracker.fingerprints.simhash import simhash_spans
from tracker.indexes.hamming import RedisHammingIndex

if TYPE_CHECKING:
    from tracker.engines.base import RedisClient

# Per normalization: ngram, window gap, window min length, window max length, anchor n-gram.
# Chars: the original parameters (characters). Initials: chosen on bench/eval.py, see
# docs/ENGINES.md. Windows are short because SimHash windows only match when untouched:
# a copied 150-character excerpt is ~130 initials, and 5 % random edits leave ~20 clean
# letters between edits, so the more short windows, the more survive.
# window_k: the Hamming radius of window lookups (the page row always uses ``k``).
_DEFAULTS: dict[str, dict[str, int]] = {
    "chars": {
        "ngram": 3,
        "window_gap": 150,
        "window_min": 150,
        "window_max": 600,
        "anchor": 5,
        "window_k": 3,
    },
    "initials": {
        "ngram": 8,
        "window_gap": 8,
        "window_min": 24,
        "window_max": 96,
        "anchor": 5,
        "window_k": 0,
    },
}


class SimHashEngine(WindowedEngine):
    name: ClassVar[str] = "simhash"
    dtype: ClassVar[np.dtype[Any]] = np.dtype(np.uint64)

    def __init__(
        self,
        redis: RedisClient,
        prefix: str,
        *,
        normalization: str = "initials",
        k: int = 3,
        blocks: int | None = None,
        window_k: int | None = None,
        window_blocks: int | None = None,
        window_gap: int | None = None,
        window_min: int | None = None,
        window_max: int | None = None,
        ngram: int | None = None,
        anchor: int | None = None,
        common_df: int = 16,
        window_bucket_bits: int | None = None,
    ) -> None:
        """``k``/``blocks``: Hamming radius and layout of the page (whole-text) index;
        ``window_k``/``window_blocks``: the same for the window index. Window sizes are in
        units of the stream (initials or characters). ``None`` takes the default of the
        normalization (``_DEFAULTS``). A suspect window found near the windows of more
        than ``common_df`` mothers is boilerplate: it makes no candidate."""
        super().__init__(redis, prefix)
        check_normalization(normalization)
        self.normalization = normalization
        d = _DEFAULTS[normalization]
        self.k = k
        self.window_k = d["window_k"] if window_k is None else window_k
        self.pages = RedisHammingIndex(redis, self.base, name="pages", k=k, blocks=blocks)
        self.windows = RedisHammingIndex(
            redis,
            self.base,
            name="windows",
            k=self.window_k,
            blocks=window_blocks,
            bucket_bits=window_bucket_bits,
        )
        self.window_gap = d["window_gap"] if window_gap is None else window_gap
        self.window_min = d["window_min"] if window_min is None else window_min
        self.window_max = d["window_max"] if window_max is None else window_max
        self.ngram = d["ngram"] if ngram is None else ngram
        self.anchor = d["anchor"] if anchor is None else anchor
        self.common_df = common_df

    def _fingerprints(self, stream: str, spans: list[tuple[int, int]]) -> np.ndarray:
        if not spans:
            return np.zeros(0, dtype=np.uint64)
        return simhash_spans(stream, spans, n=self.ngram).astype(np.uint64)

    def fingerprints(self, text: str) -> np.ndarray:
        """Whole-text SimHash then one per content-defined window (empty for empty text)."""
        stream = self.stream(text)
        return self._fingerprints(stream, self.spans(stream))

    def mother_fingerprints(self, text: str) -> np.ndarray:
        return self.fingerprints(text)

    # -- index ----------------------------------------------------------------------------
    @staticmethod
    def _ids(seq: int, count: int) -> np.ndarray:
        if count > ROW_MASK + 1:
            raise ValueError(f"at most {ROW_MASK + 1} fingerprints per mother")
        return (np.int64(seq) << np.int64(ROW_BITS)) | np.arange(count, dtype=np.int64)

    def add(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        pages, windows = self._entries(items)
        self.pages.add(pages)
        self.windows.add(windows)

    def remove(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        pages, windows = self._entries(items)
        self.pages.remove(pages)
        self.windows.remove(windows)

    def _entries(
        self, items: Sequence[tuple[int, np.ndarray]]
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """The Hamming index entries ``(seq << 20 | row, fingerprint)`` of mothers: page
        rows (row 0) for the page index, the others for the window index."""
        if not items:
            return [], []
        ids = np.concatenate([self._ids(seq, len(fps)) for seq, fps in items])
        fps = np.concatenate([np.asarray(fps, dtype=np.uint64) for _, fps in items])
        page = (ids & ROW_MASK) == 0
        return (
            list(zip(ids[page].tolist(), fps[page].tolist(), strict=True)),
            list(zip(ids[~page].tolist(), fps[~page].tolist(), strict=True)),
        )

    def _lookup(self, fps: np.ndarray) -> list[list[tuple[int, int]]]:
        """Hits of each suspect row: the page row among mothers' page rows (within ``k``),
        windows among mothers' windows (within ``window_k``)."""
        return self.pages.query_many(fps[:1]) + self.windows.query_many(fps[1:])

    def candidates_with_evidence(self, text: str, *, limit: int = 20) -> list[Candidate]:
        stream = self.stream(text)
        spans = self.spans(stream)
        fps = self._fingerprints(stream, spans)
        if len(fps) == 0:
            return []
        tally = tally_hits(self._lookup(fps), self.common_df)
        ranked = tally.ranked(limit)
        if self.normalization != "initials":
            # The verifier's positions are initials; mapping normalized characters to them
            # is not worth it for the legacy mode: no evidence, no passage filtering.
            return [Candidate(seq, tally.strength(seq)) for seq in ranked]
        common = span_evidence([spans[q] for q in tally.common], self.window)
        return [
            Candidate(seq, tally.strength(seq), self._evidence(spans, tally.found[seq]), common)
            for seq in ranked
        ]

    def _evidence(self, spans: list[tuple[int, int]], rows: set[int]) -> np.ndarray:
        """Positions covering the suspect rows (their spans) that found a mother."""
        return span_evidence([spans[q] for q in sorted(rows)], self.window)

    def stats(self) -> JSONObject:
        keys = sum(1 for _ in self.redis.scan_iter(match=f"{self.base}:*", count=1000))
        return {
            "engine": self.name,
            "normalization": self.normalization,
            "fingerprints": len(self.pages) + len(self.windows),
            "keys": keys,
            "k": self.k,
            "window_k": self.window_k,
            "tables": len(self.pages.layout.tables) + len(self.windows.layout.tables),
            "ngram": self.ngram,
            "window": [self.window_gap, self.window_min, self.window_max],
        }


@dataclass
class HitTally:
    """What the suspect's rows found, per mother: ``rows[seq]`` the mother rows (page or
    windows) found, ``found[seq]`` the suspect rows that found them; ``common`` the suspect
    rows near the rows of many mothers (boilerplate), which count for no mother."""

    rows: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    found: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    common: list[int] = field(default_factory=list)

    def strength(self, seq: int) -> float:
        """Distinct mother rows found: roughly the number of copied window steps."""
        return float(len(self.rows[seq]))

    def ranked(self, limit: int) -> list[int]:
        """The ``limit`` mothers with the most rows found (ties: smaller seq first)."""
        return sorted(self.rows, key=lambda s: (-len(self.rows[s]), s))[:limit]


def tally_hits(hits_per_row: list[list[tuple[int, int]]], common_df: int) -> HitTally:
    """Count the index hits ``(id, distance)`` of each suspect row per mother; a row whose
    hits span more than ``common_df`` mothers is boilerplate instead."""
    tally = HitTally()
    for q, hits in enumerate(hits_per_row):
        seqs = {id_ >> ROW_BITS for id_, _dist in hits}
        if len(seqs) > common_df:
            tally.common.append(q)
            continue  # like a stop word: says nothing about any one mother
        for id_, _dist in hits:
            seq = id_ >> ROW_BITS
            tally.rows[seq].add(id_ & ROW_MASK)
            tally.found[seq].add(q)
    return tally
