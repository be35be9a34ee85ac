"""Daguan window fingerprints over pinyin initials.

The text becomes a stream of pinyin initials (``tracker.text.pinyin``). Overlapping
windows of ``granularity`` initials are cut from it; in each window every letter
of ``letters`` is counted, the reference distribution's expectation is subtracted,
and the deviation is normalized into ``levels`` values. The per-letter digits are
concatenated in letter order (first letter most significant) into one unsigned
integer of at most 64 bits: ``fp = (((d0 * L) + d1) * L + d2) ...``.

Normalization (``Reference``): with ``mode="quantile"`` each letter's deviation is
cut at its own quantiles in the reference corpus, so every level of every letter
is about equally likely and fingerprints spread evenly (fewer chance collisions);
``mode="fixed"`` cuts it into equal-width bins of ±2 binomial standard deviations,
the textbook variant. ``bench/bench_core.py`` measures both (spread and collisions).

Everything is vectorized: letters are counted per block with one ``bincount``,
window counts are differences of prefix sums, and the packing loops over letters,
never over windows.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Required, TypedDict

import numpy as np

from tracker.common.records import JSONObject
from tracker.text.pinyin import INITIAL_LETTERS, initial_codes
from tracker.text.units import unit_codes

#: Maximum number of letters that fit in 64 bits for each number of levels.
MAX_LETTERS = {L: int(64 * math.log(2) / math.log(L) + 1e-9) for L in (2, 4, 8, 10)}

_LETTER_INDEX = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(INITIAL_LETTERS):
    _LETTER_INDEX[ord(_c)] = _i
N_LETTERS = len(INITIAL_LETTERS)


def letter_indices(codes: np.ndarray) -> np.ndarray:
    """ASCII initial codes -> 0..22 indices into INITIAL_LETTERS."""
    return _LETTER_INDEX[codes]


# ---------------------------------------------------------------------------
# Reference distribution
# ---------------------------------------------------------------------------


class ReferenceRecord(TypedDict, total=False):
    """A reference file as ``Reference.to_json`` writes it."""

    format: Required[str]
    freq: Required[dict[str, float]]
    count_cdf: dict[str, dict[str, list[float]]]  # window length -> letter -> CDF
    chars: int
    sources: list[str]
    letters: str


@dataclass
class Reference:
    """Letter frequencies and, per window length, each letter's count distribution.

    ``count_cdf[G][letter]`` is the empirical CDF of that letter's count in windows of
    ``G`` initials over the reference corpus (list index = count). Window lengths not
    in the file fall back to a binomial model of the frequencies.
    """

    freq: dict[str, float]
    count_cdf: dict[int, dict[str, list[float]]] = field(default_factory=dict)
    chars: int = 0
    sources: list[str] = field(default_factory=list)

    def to_json(self) -> JSONObject:
        return {
            "format": "yinji-reference/1",
            "chars": self.chars,
            "sources": self.sources,
            "letters": INITIAL_LETTERS,
            "freq": {k: round(v, 7) for k, v in self.freq.items()},
            "count_cdf": {
                str(g): {k: [round(x, 6) for x in cdf] for k, cdf in per.items()}
                for g, per in self.count_cdf.items()
            },
        }

    @classmethod
    def from_json(cls, data: ReferenceRecord) -> Reference:
        if data.get("format") != "yinji-reference/1":
            raise ValueError("not a Yinji reference file (format yinji-reference/1 expected)")
        return cls(
            freq={k: float(v) for k, v in data["freq"].items()},
            count_cdf={
                int(g): {k: [float(x) for x in cdf] for k, cdf in per.items()}
                for g, per in data.get("count_cdf", {}).items()
            },
            chars=int(data.get("chars", 0)),
            sources=list(data.get("sources", [])),
        )

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Reference:
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))

    def cdf(self, granularity: int, letter: str) -> np.ndarray:
        """CDF of the letter's count in a window (length granularity + 1)."""
        per = self.count_cdf.get(granularity)
        if per is not None and letter in per:
            cdf = np.asarray(per[letter], dtype=np.float64)
            out = np.ones(granularity + 1)
            out[: min(len(cdf), granularity + 1)] = cdf[: granularity + 1]
            return out
        p = self.freq.get(letter, 0.0)
        k = np.arange(granularity + 1)
        log_pmf = np.array(
            [
                math.lgamma(granularity + 1) - math.lgamma(i + 1) - math.lgamma(granularity - i + 1)
                for i in k
            ]
        )
        with np.errstate(divide="ignore"):
            log_pmf = (
                log_pmf
                + k * np.log(p if p > 0 else 1e-300)
                + (granularity - k) * np.log1p(-p if p < 1 else -(1 - 1e-15))
            )
        return np.minimum(np.cumsum(np.exp(log_pmf)), 1.0)


#: Window lengths whose count distributions the reference files record.
REFERENCE_GRANULARITIES = (8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64)


def build_reference(
    texts: Iterable[str],
    *,
    granularities: Sequence[int] = REFERENCE_GRANULARITIES,
    sources: Sequence[str] = (),
) -> Reference:
    """Letter frequencies and per-window count distributions of a corpus."""
    totals = np.zeros(N_LETTERS, dtype=np.int64)
    hist = {g: np.zeros((N_LETTERS, g + 1), dtype=np.int64) for g in granularities}
    chars = 0
    for text in texts:
        chars += len(text)
        codes, _ = initial_codes(text)
        idx = letter_indices(codes)
        totals += np.bincount(idx, minlength=N_LETTERS)[:N_LETTERS]
        for g in granularities:
            if idx.size < g:
                continue
            counts = window_counts(idx, g, max(1, g // 4))
            for li in range(N_LETTERS):
                hist[g][li] += np.bincount(counts[li], minlength=g + 1)[: g + 1]
    total = int(totals.sum())
    if total == 0:
        raise ValueError("the reference corpus has no Han characters")
    freq = {c: float(totals[i]) / total for i, c in enumerate(INITIAL_LETTERS)}
    count_cdf: dict[int, dict[str, list[float]]] = {}
    for g, h in hist.items():
        n = h.sum(axis=1, keepdims=True)
        if n.max() == 0:
            continue
        cdf = np.cumsum(h, axis=1) / np.maximum(n, 1)
        # Trim the flat tail of ones to keep the shipped file small.
        count_cdf[g] = {}
        for i, c in enumerate(INITIAL_LETTERS):
            row = cdf[i]
            last = int(np.searchsorted(row, 1.0 - 1e-12)) + 1
            count_cdf[g][c] = row[: max(1, last)].tolist()
    return Reference(freq=freq, count_cdf=count_cdf, chars=chars, sources=list(sources))


@functools.cache
def default_reference() -> Reference:
    """The reference shipped with the package (``tracker/data/reference.json``)."""
    with (
        resources.files("tracker").joinpath("data/reference.json").open("r", encoding="utf-8") as f
    ):
        return Reference.from_json(json.load(f))


# ---------------------------------------------------------------------------
# Parameters and level tables
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FingerprintParams:
    """How windows are cut and normalized.

    ``granularity``: window length in initials. ``overlap``: share of a window that the
    next mother window overlaps (stride = granularity * (1 - overlap)). ``levels``:
    10, 8, 4 or 2. ``letters``: the letters packed, in order; at most
    ``MAX_LETTERS[levels]`` (19, 21, 32, 64) so the result fits 64 bits.
    ``mode``: "quantile" or "fixed". Defaults were chosen by
    measurement (the table and method are in docs/FINGERPRINTS.md).
    """

    granularity: int = 24
    overlap: float = 0.75
    levels: int = 4
    letters: str = INITIAL_LETTERS
    mode: str = "quantile"

    def __post_init__(self) -> None:
        if self.levels not in MAX_LETTERS:
            raise ValueError(f"levels must be one of 10, 8, 4, 2 (got {self.levels})")
        if not 2 <= self.granularity <= 4096:
            raise ValueError(f"granularity must be in 2..4096 (got {self.granularity})")
        if not 0.0 <= self.overlap < 1.0:
            raise ValueError(f"overlap must be in [0, 1) (got {self.overlap})")
        bad = set(self.letters) - set(INITIAL_LETTERS)
        if bad or len(set(self.letters)) != len(self.letters) or not self.letters:
            raise ValueError(f"letters must be distinct pinyin initials from {INITIAL_LETTERS!r}")
        if len(self.letters) > MAX_LETTERS[self.levels]:
            raise ValueError(
                f"{len(self.letters)} letters at {self.levels} levels do not fit 64 bits "
                f"(at most {MAX_LETTERS[self.levels]})"
            )
        if self.mode not in ("quantile", "fixed"):
            raise ValueError(f"mode must be 'quantile' or 'fixed' (got {self.mode!r})")

    @property
    def stride(self) -> int:
        return max(1, round(self.granularity * (1.0 - self.overlap)))

    def to_dict(self) -> JSONObject:
        return {
            "granularity": self.granularity,
            "overlap": self.overlap,
            "levels": self.levels,
            "letters": self.letters,
            "mode": self.mode,
        }


def level_table(params: FingerprintParams, reference: Reference | None = None) -> np.ndarray:
    """uint8 table [letter row, count] -> level for every letter in ``params.letters``."""
    return _compute_level_table(params, reference or default_reference())


def _compute_level_table(params: FingerprintParams, reference: Reference) -> np.ndarray:
    g, levels = params.granularity, params.levels
    counts = np.arange(g + 1)
    table = np.zeros((len(params.letters), g + 1), dtype=np.uint8)
    for row, letter in enumerate(params.letters):
        if params.mode == "quantile":
            cdf = reference.cdf(g, letter)
            # Level of count c = which 1/levels quantile band the mid-point of its
            # probability mass falls into: equally likely levels as far as the
            # discreteness of counts allows.
            below = np.concatenate([[0.0], cdf[:-1]])
            mid = (below + cdf) / 2.0
            table[row] = np.minimum((mid * levels).astype(np.int64), levels - 1)
        else:
            p = reference.freq.get(letter, 0.0)
            mean, sd = g * p, math.sqrt(max(g * p * (1 - p), 1e-9))
            z = (counts - mean) / sd  # deviation from the expectation, in sd units
            table[row] = np.clip(np.floor((z + 2.0) / 4.0 * levels), 0, levels - 1)
    return table


# ---------------------------------------------------------------------------
# Windows and fingerprints
# ---------------------------------------------------------------------------


def window_counts(idx: np.ndarray, granularity: int, stride: int) -> np.ndarray:
    """Letter counts (uint16, 23 letters x windows) of windows starting at 0, stride, ...

    ``idx`` holds letter indices 0..22. Counts are differences of prefix sums over
    blocks of ``gcd(granularity, stride)`` letters, so a sparse mother pass costs one
    ``bincount`` over the text plus work proportional to the number of windows. The
    result is letter-major so that each letter's row is contiguous.
    """
    n = idx.size
    if n < granularity:
        return np.zeros((N_LETTERS, 0), dtype=np.uint16)
    block = math.gcd(granularity, stride)
    nblocks = n // block
    used = nblocks * block
    # One bincount over (letter, block) pairs gives a letter-major block count table.
    block_ids = np.arange(nblocks, dtype=np.int32)
    keys = idx[:used].reshape(nblocks, block).astype(np.int32) * nblocks + block_ids[:, None]
    blocks = np.bincount(keys.ravel(), minlength=N_LETTERS * nblocks).reshape(N_LETTERS, nblocks)
    prefix = np.zeros((N_LETTERS, nblocks + 1), dtype=np.uint16)
    # uint16 prefix sums may wrap; differences of wrapped sums are still exact because
    # no window holds 65536 letters.
    np.cumsum(blocks, axis=1, dtype=np.uint16, out=prefix[:, 1:])
    nwin = (n - granularity) // stride + 1
    starts = np.arange(nwin, dtype=np.int64) * (stride // block)
    return prefix[:, starts + granularity // block] - prefix[:, starts]


def pack(levels_per_letter: np.ndarray, levels: int) -> np.ndarray:
    """Concatenate per-letter digits (windows x letters) into uint64, first letter first."""
    fp = np.zeros(levels_per_letter.shape[0], dtype=np.uint64)
    base = np.uint64(levels)
    for col in range(levels_per_letter.shape[1]):
        fp *= base
        fp += levels_per_letter[:, col]
    return fp


@dataclass
class Fingerprints:
    """Window fingerprints of one text.

    ``values[i]`` is the fingerprint of the window of initials starting at
    ``starts[i]`` (an index into the initials stream); ``offsets`` maps initials back
    to character offsets in the text, so window i covers
    ``text[offsets[starts[i]] : offsets[starts[i] + granularity - 1] + 1]``.
    """

    values: np.ndarray  # uint64
    starts: np.ndarray  # int64, index into the initials stream
    offsets: np.ndarray  # int64, initials -> character offsets
    granularity: int

    def __len__(self) -> int:
        return int(self.values.size)

    def char_span(self, i: int) -> tuple[int, int]:
        a = int(self.starts[i])
        return int(self.offsets[a]), int(self.offsets[a + self.granularity - 1]) + 1


#: Up to this many windows ``Fingerprinter.from_letter_indices`` packs all letters at
#: once (temporaries of 8 bytes a letter a window); more, one letter at a time.
_GATHER_WINDOWS = 16_384


class Fingerprinter:
    """Computes Daguan fingerprints for one parameter set and reference."""

    def __init__(
        self, params: FingerprintParams | None = None, reference: Reference | None = None
    ) -> None:
        self.params = params or FingerprintParams()
        self.reference = reference or default_reference()
        self._table = level_table(self.params, self.reference)
        letters = np.frombuffer(self.params.letters.encode("ascii"), dtype=np.uint8)
        self._columns = letter_indices(letters).astype(np.intp)
        n, width = self._table.shape
        self._flat_table = self._table.ravel()
        self._row_offsets = (np.arange(n, dtype=np.int64) * width)[:, None]
        # L ** (n - 1 - row) in uint64 (wrapping as the digit-by-digit packing wraps).
        weights = np.ones(n, dtype=np.uint64)
        for row in range(n - 2, -1, -1):
            weights[row] = weights[row + 1] * np.uint64(self.params.levels)
        self._weights = weights[:, None]

    def from_letter_indices(self, idx: np.ndarray, stride: int) -> tuple[np.ndarray, np.ndarray]:
        """(fingerprints, window starts) of an initials stream given as 0..22 indices."""
        g = self.params.granularity
        counts = window_counts(idx, g, stride)
        nwin = counts.shape[1]
        if nwin == 0:
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
        if nwin <= _GATHER_WINDOWS:
            # fp = sum of level(letter, count) * L ** (letters after it), first letter
            # first: the packing below as one gather from the flat level table and one
            # weighted sum (a chapter's few hundred windows cost ~70 numpy calls a
            # letter at a time, twice this); the same uint64 values.
            digits = self._flat_table[counts[self._columns] + self._row_offsets]
            fp = (digits * self._weights).sum(axis=0, dtype=np.uint64)
            return fp, np.arange(nwin, dtype=np.int64) * stride
        # Pack digit by digit: fp = fp * L + level(letter, count), first letter first.
        fp = np.zeros(nwin, dtype=np.uint64)
        base = np.uint64(self.params.levels)
        for row, col in enumerate(self._columns):
            fp *= base
            fp += self._table[row][counts[col]]
        starts = np.arange(nwin, dtype=np.int64) * stride
        return fp, starts

    def fingerprints(self, text: str, *, stride: int | None = None) -> Fingerprints:
        """Fingerprints of ``text``: mother windows by default (stride from the overlap);
        pass ``stride=1`` for the dense suspect pass."""
        codes, offsets = unit_codes(text)
        values, starts = self.from_letter_indices(
            letter_indices(codes), stride if stride is not None else self.params.stride
        )
        return Fingerprints(values, starts, offsets, self.params.granularity)


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-D array (sorted, each once), without its per-call
    overhead (~10x slower on a chapter's ~1,000 fingerprints)."""
    out = np.sort(values)
    if out.size < 2:
        return out
    keep = np.empty(out.size, dtype=bool)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    return out[keep]


def fingerprint(
    text: str,
    *,
    params: FingerprintParams | None = None,
    reference: Reference | None = None,
    stride: int | None = None,
) -> Fingerprints:
    """Convenience wrapper: ``Fingerprinter(params, reference).fingerprints(text)``."""
    return Fingerprinter(params, reference).fingerprints(text, stride=stride)
