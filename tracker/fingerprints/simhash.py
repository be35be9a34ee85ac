"""SimHash (Charikar 2002) fingerprints, vectorized with numpy.

A SimHash maps a weighted bag of features to an ``bits``-bit integer: every feature is
hashed, each hash bit votes +weight (bit set) or -weight (bit unset), and bit ``i`` of the
fingerprint is set when the vote ``v[i] >= 0``. Similar bags give fingerprints at a small
Hamming distance.

Feature extractors (``features=``):

- ``"charN"`` (``"char2"``, ``"char3"``, ...): character N-grams of the *normalized*
  text (lower-cased, every character that is not a letter or a digit dropped: whitespace,
  punctuation and ``_``). Pirate copies re-flow lines and swap punctuation freely, so these
  carry no signal. A non-empty text shorter than N is one feature.
- ``"words"``: ``jieba.lcut`` tokens, lower-cased, tokens without a letter or digit dropped.
- ``"mfonda"``: bit-for-bit compatible with Go ``github.com/mfonda/simhash``
  ``Simhash(NewWordFeatureSet(b))`` (see :func:`mfonda_features`). Its word regexp
  ``[\\w']+(?:\\://[\\w\\./]+){0,1}`` uses Go's ASCII-only ``\\w``, so **Chinese
  characters are not word characters there**: a Chinese text without Latin letters or
  digits has no features at all and hashes to ``0xFFFFFFFFFFFFFFFF`` (all votes are 0).
  Use it only to interoperate with Go services; use ``"char3"`` for Chinese.

Weights (``weights=``): ``"equal"`` (each distinct feature once), ``"tf"`` (each
occurrence once, which is what mfonda does) and ``"tfidf"`` (``tf * idf[feature]``,
``idf`` from :func:`idf_from_corpus`; features missing from it get the rarest weight).

Feature hashes of our own extractors (everything but ``"mfonda"``) are FNV-1a over the
Unicode code points of the feature, followed by the MurmurHash3 ``fmix64`` finalizer: FNV
alone mixes its low bits poorly (a multiply only carries upwards), and every SimHash bit
must be an independent coin. The whole scheme is computed column-by-column in numpy, so
hashing all N-grams of a text costs N numpy passes, not one Python call per feature. A
128-bit fingerprint uses two such hashes with different seeds. These hashes are part of
the stored index format: changing them requires ``index rebuild``.

With our extractors a text without any feature hashes to ``0`` (not all-ones), so empty
documents do not collide with every other featureless input.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "IdfTable",
    "compare",
    "content_windows",
    "feature_hashes",
    "features_of",
    "fnv1_64",
    "hamming",
    "idf_from_corpus",
    "mfonda_features",
    "mfonda_simhash",
    "ngram_hashes",
    "normalize",
    "simhash",
    "simhash_features",
    "simhash_spans",
]

_MASK64 = (1 << 64) - 1
_FNV64_OFFSET = 0xCBF29CE484222325
_FNV64_PRIME = 0x100000001B3
# One seed per 64-bit lane; lane 0 starts from the FNV offset basis.
_LANE_SEEDS = (_FNV64_OFFSET, 0x84222325CBF29CE4 ^ 0x9E3779B97F4A7C15)
# Seed of the anchor hash used by content_windows (independent of the feature hashes).
_ANCHOR_SEED = 0x5EED_0F_A4C40125

_NON_ALNUM = re.compile(r"[\W_]+")
_CHAR_FEATURES = re.compile(r"char(\d+)\Z")


# -- hashing -------------------------------------------------------------------------------
def _fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer (a bijection with full avalanche), in place-safe numpy."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def _hash_columns(
    columns: Sequence[np.ndarray], n: int, seed: int, lengths: np.ndarray | None = None
) -> np.ndarray:
    """FNV-1a over code-point columns then fmix64. ``columns[j]`` holds code point ``j`` of
    every feature; ``lengths`` masks the padding of variable-length features (and is mixed
    in, so ``"a"`` and ``"a\\0"`` differ). Fixed-length N-grams mix in ``N``."""
    prime = np.uint64(_FNV64_PRIME)
    h = np.full(n, seed, dtype=np.uint64)
    for j, col in enumerate(columns):
        step = (h ^ col.astype(np.uint64)) * prime
        h = step if lengths is None else np.where(lengths > j, step, h)
    if lengths is None:  # Python int: numpy scalars warn on the (intended) wrap-around
        mixed = np.uint64((len(columns) * 0x9E3779B97F4A7C15) & _MASK64)
        return _fmix64(h ^ mixed)
    return _fmix64(h ^ (lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)))


def _codepoints(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype="<u4")


def ngram_hashes(text: str, n: int, *, lanes: int = 1, seed: int | None = None) -> np.ndarray:
    """Hashes of every character N-gram of ``text`` (no normalization here), shape
    ``(len(text) - n + 1, lanes)``, equal to :func:`feature_hashes` of the N-gram strings.
    A non-empty text shorter than ``n`` gives one hash, of the whole text."""
    cps = _codepoints(text)
    if len(cps) == 0:
        return np.zeros((0, lanes), dtype=np.uint64)
    if len(cps) < n:
        return feature_hashes([text], lanes=lanes, seed=seed)
    count = len(cps) - n + 1
    cols = [cps[j : j + count] for j in range(n)]
    seeds = _LANE_SEEDS[:lanes] if seed is None else (seed,)
    out = np.empty((count, len(seeds)), dtype=np.uint64)
    for lane, s in enumerate(seeds):
        out[:, lane] = _hash_columns(cols, count, s)
    return out


def feature_hashes(
    strings: Sequence[str], *, lanes: int = 1, seed: int | None = None
) -> np.ndarray:
    """Stable 64-bit hashes of feature strings, shape ``(len(strings), lanes)``."""
    seeds = _LANE_SEEDS[:lanes] if seed is None else (seed,)
    n = len(strings)
    out = np.empty((n, len(seeds)), dtype=np.uint64)
    if n == 0:
        return out
    arr = np.array(list(strings), dtype=str)
    if arr.dtype.itemsize == 0:  # every string is empty
        mat = np.zeros((n, 0), dtype=np.uint32)
    else:
        mat = arr.view(np.uint32).reshape(n, -1)
    # (numpy drops trailing NULs of str arrays: such features hash without them.)
    lengths = np.char.str_len(arr)
    cols = [mat[:, j] for j in range(mat.shape[1])]
    for lane, s in enumerate(seeds):
        out[:, lane] = _hash_columns(cols, n, s, lengths)
    return out


def _lanes(bits: int) -> int:
    if bits <= 0 or bits % 64:
        raise ValueError(f"bits must be a positive multiple of 64, got {bits}")
    if bits > 64 * len(_LANE_SEEDS):
        raise ValueError(f"bits must be at most {64 * len(_LANE_SEEDS)}, got {bits}")
    return bits // 64


def _bit_matrix(hashes: np.ndarray) -> np.ndarray:
    """``(n, lanes)`` uint64 -> ``(n, 64*lanes)`` uint8 of bits; column ``i`` is bit ``i``."""
    h = np.ascontiguousarray(hashes, dtype="<u8")
    return np.unpackbits(
        h.view(np.uint8).reshape(len(h), 8 * h.shape[1]), axis=1, bitorder="little"
    )


def _pack(votes_ge_zero: np.ndarray) -> int:
    return int.from_bytes(np.packbits(votes_ge_zero, bitorder="little").tobytes(), "little")


def _fingerprint(hashes: np.ndarray, weights: np.ndarray | None = None) -> int:
    """SimHash of hashed features: bit i set when sum(w * (+1 if bit else -1)) >= 0."""
    if len(hashes) == 0:
        return 0
    bits = _bit_matrix(hashes)
    if weights is None:
        # Integer votes (every feature weight 1): exact, no float ties.
        votes = 2 * bits.sum(axis=0, dtype=np.int64) - len(bits)
    else:
        w = np.asarray(weights, dtype=np.float64)
        votes = 2.0 * (w @ bits) - w.sum()
    return _pack(votes >= 0)


# -- features ------------------------------------------------------------------------------
def normalize(text: str) -> str:
    """Lower-case and drop every character that is not a letter or digit (idempotent)."""
    return _NON_ALNUM.sub("", text.lower())


def _as_text(data: str | bytes) -> str:
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


def _char_n(features: str) -> int | None:
    m = _CHAR_FEATURES.match(features)
    if m is None:
        return None
    n = int(m.group(1))
    if n < 1:
        raise ValueError(f"bad feature kind {features!r}")
    return n


def _words(text: str) -> list[str]:
    import jieba  # lazy: loading its dictionary takes a second

    return [t for t in (w.strip().lower() for w in jieba.lcut(text)) if _has_alnum(t)]


def _has_alnum(token: str) -> bool:
    return any(ch.isalnum() for ch in token)


def features_of(data: str | bytes, features: str = "char3") -> list[str]:
    """The feature strings (with repeats, in text order) that :func:`simhash` hashes."""
    if features == "mfonda":
        raw = data if isinstance(data, bytes) else data.encode("utf-8")
        return [w.decode("ascii") for w in mfonda_features(raw)]
    text = _as_text(data)
    n = _char_n(features)
    if n is not None:
        norm = normalize(text)
        if not norm:
            return []
        if len(norm) < n:
            return [norm]
        return [norm[i : i + n] for i in range(len(norm) - n + 1)]
    if features == "words":
        return _words(text)
    raise ValueError(f"unknown features {features!r} (charN, words or mfonda)")


class IdfTable(dict[str, float]):
    """Feature -> inverse document frequency; ``default`` is the idf of an unseen feature."""

    def __init__(self, values: Mapping[str, float], default: float, documents: int) -> None:
        super().__init__(values)
        self.default = default
        self.documents = documents


def idf_from_corpus(texts: Iterable[str | bytes], features: str = "char3") -> IdfTable:
    """Smoothed idf (as scikit-learn): ``ln((1 + N) / (1 + df)) + 1`` over the mother corpus.
    Rare features get the larger weight; unseen ones get ``ln(1 + N) + 1``."""
    df: Counter[str] = Counter()
    n = 0
    for text in texts:
        df.update(set(features_of(text, features)))
        n += 1
    values = {f: math.log((1 + n) / (1 + c)) + 1.0 for f, c in df.items()}
    return IdfTable(values, default=math.log(1 + n) + 1.0, documents=n)


def _idf_weights(
    strings: Sequence[str], counts: np.ndarray, idf: Mapping[str, float] | None
) -> np.ndarray:
    if idf is None:
        raise ValueError('weights="tfidf" needs idf= (see idf_from_corpus)')
    default = getattr(idf, "default", None)
    if default is None:
        default = max(idf.values(), default=1.0)
    return counts * np.array([idf.get(s, default) for s in strings], dtype=np.float64)


def simhash(
    data: str | bytes,
    *,
    features: str = "char3",
    bits: int = 64,
    weights: str = "tf",
    idf: Mapping[str, float] | None = None,
) -> int:
    """SimHash of a text (see the module docstring for ``features`` and ``weights``)."""
    if weights not in ("equal", "tf", "tfidf"):
        raise ValueError(f"unknown weights {weights!r} (equal, tf or tfidf)")
    if features == "mfonda":
        if bits != 64:
            raise ValueError("mfonda fingerprints are 64-bit")
        raw = data if isinstance(data, bytes) else data.encode("utf-8")
        tokens = mfonda_features(raw)
        hashes = _fnv1_64_many(tokens).reshape(-1, 1)
        if weights == "tf":
            return _mfonda_fingerprint(hashes)
        return (
            _weighted(hashes, [w.decode("ascii") for w in tokens], weights, idf)
            if tokens
            else 0xFFFFFFFFFFFFFFFF
        )
    lanes = _lanes(bits)
    text = _as_text(data)
    n = _char_n(features)
    if n is not None:
        norm = normalize(text)
        hashes = ngram_hashes(norm, n, lanes=lanes)
        if weights == "tf" or len(hashes) == 0:
            return _fingerprint(hashes)
        strings: Sequence[str] | None = None
        if weights == "tfidf":
            count = len(hashes)
            strings = [norm[i : i + n] for i in range(count)] if len(norm) >= n else [norm]
        return _weighted(hashes, strings, weights, idf)
    if features == "words":
        words = _words(text)
        hashes = feature_hashes(words, lanes=lanes)
        if weights == "tf" or not words:
            return _fingerprint(hashes)
        return _weighted(hashes, words, weights, idf)
    raise ValueError(f"unknown features {features!r} (charN, words or mfonda)")


def _weighted(
    hashes: np.ndarray, strings: Sequence[str] | None, weights: str, idf: Mapping[str, float] | None
) -> int:
    """ "equal"/"tfidf" on top of per-occurrence hashes: group equal features by lane-0 hash."""
    _, first, counts = np.unique(hashes[:, 0], return_index=True, return_counts=True)
    uniq = hashes[first]
    if weights == "equal":
        return _fingerprint(uniq)
    assert strings is not None
    return _fingerprint(uniq, _idf_weights([strings[i] for i in first], counts, idf))


def simhash_features(
    weighted: Mapping[str, float] | Iterable[tuple[str, float]], bits: int = 64
) -> int:
    """SimHash of explicit ``feature -> weight`` pairs (repeated features add up).
    Weights may be fractional; a bag without features (or all weights 0) gives 0."""
    items = weighted.items() if isinstance(weighted, Mapping) else weighted
    acc: dict[str, float] = {}
    for f, w in items:
        acc[f] = acc.get(f, 0.0) + float(w)
    acc = {f: w for f, w in acc.items() if w != 0}
    if not acc:
        return 0
    names = list(acc)
    return _fingerprint(
        feature_hashes(names, lanes=_lanes(bits)),
        np.fromiter(acc.values(), dtype=np.float64, count=len(acc)),
    )


def hamming(a: int, b: int) -> int:
    """Number of differing bits."""
    return (a ^ b).bit_count()


# -- windows ---------------------------------------------------------------------------------
def content_windows(
    norm: str, *, gap: int = 150, min_len: int = 150, max_len: int = 600, anchor_n: int = 5
) -> list[tuple[int, int]]:
    """Content-defined windows ``[start, end)`` over a normalized text.

    An *anchor* is a position whose ``anchor_n``-gram hash is ``0 mod gap`` (so anchors fall
    every ``gap`` characters on average), plus position 0. Each anchor starts a window that
    ends at the first later anchor at least ``min_len`` characters on (or ``max_len`` on, or
    the end of the text). Since anchors depend only on the text around them, a passage copied
    into another document yields exactly the same windows there, whatever its offset: a
    suspect needs no denser stride than its mother, and an untouched copied window gives the
    very same fingerprint. Windows shorter than ``min_len`` (at the end of the text) are
    dropped; a text shorter than ``min_len`` has no windows (only its whole-text print).
    """
    length = len(norm)
    if length < min_len:
        return []
    if length >= anchor_n:
        h = ngram_hashes(norm, anchor_n, seed=_ANCHOR_SEED)[:, 0]
        anchors = np.flatnonzero(h % np.uint64(gap) == 0)
        if len(anchors) == 0 or anchors[0] != 0:
            anchors = np.concatenate(([0], anchors))
    else:
        anchors = np.array([0])
    # End of the window of anchor j: first anchor >= a_j + min_len, capped by max_len / text.
    nxt = np.searchsorted(anchors, anchors + min_len, side="left")
    ends = np.where(nxt < len(anchors), anchors[np.minimum(nxt, len(anchors) - 1)], length)
    ends = np.minimum(np.minimum(ends, anchors + max_len), length)
    keep = ends - anchors >= min_len
    return [(int(s), int(e)) for s, e in zip(anchors[keep], ends[keep], strict=True)]


def simhash_spans(
    norm: str, spans: Sequence[tuple[int, int]], *, n: int = 3, bits: int = 64
) -> np.ndarray:
    """``char{n}``/``tf`` SimHashes of many spans of one normalized text at once.

    One hash pass over the text, then a cumulative sum of the bit matrix: each span's votes
    are a difference of two prefix sums, so overlapping windows cost O(bits) each. Equal to
    ``simhash(norm[s:e], features=f"char{n}")`` for every span. Returns uint64 (``bits=64``)
    or an object array of Python ints (``bits=128``).
    """
    lanes = _lanes(bits)
    out = np.zeros(len(spans), dtype=np.uint64 if lanes == 1 else object)
    if not spans:
        return out
    hashes = ngram_hashes(norm, n, lanes=lanes) if len(norm) >= n else None
    if hashes is None:
        for i, (s, e) in enumerate(spans):
            out[i] = simhash(norm[s:e], features=f"char{n}", bits=bits)
        return out
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    ends = np.array([e for _, e in spans], dtype=np.int64)
    # Span [s, e) holds N-grams s .. e-n; shorter spans are done one by one below.
    gram_hi = ends - n + 1
    short = gram_hi - starts < 1
    # Process in blocks of the text so the int32 prefix-sum matrix stays small; spans longer
    # than a block (a whole long text) are summed directly, block by block.
    block = 1 << 16
    long_spans = ~short & (gram_hi - starts > block)
    for k in np.flatnonzero(long_spans):
        first, stop = int(starts[k]), int(gram_hi[k])
        counts = np.zeros(64 * lanes, dtype=np.int64)
        for c in range(first, stop, block):
            counts += _bit_matrix(hashes[c : min(c + block, stop)]).sum(axis=0, dtype=np.int64)
        fp = _pack(2 * counts - (stop - first) >= 0)
        out[k] = np.uint64(fp) if lanes == 1 else fp
    short = short | long_spans
    order = np.argsort(starts, kind="stable")
    i = 0
    while i < len(order):
        lo = int(starts[order[i]])
        j = i
        hi = lo
        while j < len(order) and starts[order[j]] < lo + block:
            if not short[order[j]]:
                hi = max(hi, int(gram_hi[order[j]]))
            j += 1
        sel = order[i:j]
        sel = sel[~short[sel]]
        if len(sel):
            bm = _bit_matrix(hashes[lo:hi])
            csum = np.zeros((hi - lo + 1, bm.shape[1]), dtype=np.int32)
            np.cumsum(bm, axis=0, dtype=np.int32, out=csum[1:])
            a = starts[sel] - lo
            b = gram_hi[sel] - lo
            votes = 2 * (csum[b] - csum[a]) - (b - a)[:, None]
            packed = np.packbits(votes >= 0, axis=1, bitorder="little")
            if lanes == 1:
                out[sel] = packed.view("<u8")[:, 0]
            else:
                for k, row in zip(sel, packed, strict=True):
                    out[k] = int.from_bytes(row.tobytes(), "little")
        i = j
    for one in np.flatnonzero(short & ~long_spans).tolist():
        s, e = spans[one]
        out[one] = simhash(norm[s:e], features=f"char{n}", bits=bits)
    return out


# -- mfonda/simhash (Go) compatibility -------------------------------------------------------
# mfonda's WordFeatureSet: bytes.ToLower, then regexp `[\w']+(?:\://[\w\./]+){0,1}`. In Go's
# RE2 syntax \w is ASCII [0-9A-Za-z_]; RE2's leftmost-first semantics match Python's
# backtracking engine for this pattern, so re.ASCII on the lowered text gives the same words.
_MFONDA_WORD = re.compile(rb"[\w']+(?:\://[\w\./]+){0,1}", re.ASCII)
# Go's unicode.ToLower is the *simple* case mapping. Only two non-ASCII code points lower to
# ASCII letters, and they decide word boundaries: U+212A KELVIN SIGN -> "k" (Python agrees)
# and U+0130 (I with dot above) -> "i" (Python's full mapping gives "i" + U+0307, which would
# end the word there). Every other non-ASCII character is a non-word character either way.
_GO_LOWER_FIX = str.maketrans({"\u0130": "i", "\u212a": "k"})


def _go_to_lower(b: bytes) -> bytes:
    """The ASCII-relevant part of Go's bytes.ToLower: ASCII letters exactly; other runes only
    as far as they become (non-)word characters. Invalid UTF-8 bytes become U+FFFD, as
    bytes.Map does, which is a non-word character like the raw byte."""
    if b.isascii():
        return b.lower()
    text = b.decode("utf-8", errors="replace").translate(_GO_LOWER_FIX)
    return text.lower().encode("utf-8")


def mfonda_features(b: bytes) -> list[bytes]:
    """Words of mfonda's ``NewWordFeatureSet(b).GetFeatures()``, in order, with repeats."""
    return _MFONDA_WORD.findall(_go_to_lower(b))


def fnv1_64(data: bytes) -> int:
    """64-bit FNV-1 (multiply, then xor: Go's ``hash/fnv`` New64, not New64a)."""
    h = _FNV64_OFFSET
    for byte in data:
        h = ((h * _FNV64_PRIME) & _MASK64) ^ byte
    return h


def _fnv1_64_many(words: Sequence[bytes]) -> np.ndarray:
    """fnv1_64 of many byte strings, column-wise in numpy (uint64 products wrap mod 2^64)."""
    n = len(words)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=n)
    width = int(lengths.max())
    mat = np.frombuffer(b"".join(w.ljust(width, b"\0") for w in words), dtype=np.uint8).reshape(
        n, width
    )
    h = np.full(n, _FNV64_OFFSET, dtype=np.uint64)
    prime = np.uint64(_FNV64_PRIME)
    for j in range(width):
        h = np.where(lengths > j, (h * prime) ^ mat[:, j].astype(np.uint64), h)
    return h


def _mfonda_fingerprint(hashes: np.ndarray) -> int:
    # Vectorize: v[i] += 1 for set bits, -= 1 otherwise; Fingerprint: bit i when v[i] >= 0.
    # Zero features: every v[i] == 0, so every bit is set.
    bits = _bit_matrix(hashes)
    votes = 2 * bits.sum(axis=0, dtype=np.int64) - len(bits)
    return _pack(votes >= 0)


def mfonda_simhash(b: bytes | str) -> int:
    """Go ``simhash.Simhash(simhash.NewWordFeatureSet(b))``."""
    return simhash(b, features="mfonda")


def compare(a: int, b: int) -> int:
    """Go ``simhash.Compare``: the Hamming distance of two 64-bit fingerprints."""
    return ((a ^ b) & _MASK64).bit_count()
