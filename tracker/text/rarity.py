"""How ordinary a stretch of Chinese text is: character 4-grams of a reference corpus.

A short copy (50-85 characters) is evidence of copying only when its words are its own.
Stock phrases, legal formulas (违反本条例规定，由……责令改正), wire-service boilerplate and
the formulas of classical novels (且听下回分解) recur in thousands of unrelated texts; a
novel's sentence does not. This module answers the first half of that question with a
table of the Han-character 4-grams that occur in at least ``min_df`` documents of a
reference corpus of ordinary text (``tracker/data/rarity.npz``, built by
``bench/build_rarity.py`` from laws, Wikipedia and three classical novels; 4-grams of
other texts, such as the works of a library, never enter it). The library half (text
many of the library's works share) is the engines' ``common`` index evidence
(``tracker.matching.align``).

English (issue #40): a text's English words are read through the units'
identities (``tracker.text.units``: a word's id); a 4-gram of consecutive words is
common when each of its words is at least as frequent as ``COMMON_ZIPF`` in wordfreq's
English list (the bundled ``tracker/data/english.npz``): "and it was the", "I do not
know". In the Time Machine excerpt of the tests 4.8 % of word 4-grams are so (0.3 %
of its 150-character stretches have more than 25 %), in formulas most.
``ReferenceGrams.ordinariness`` of an array of unit ids counts both kinds together.

A 4-gram is four consecutive Han characters (U+4E00-U+9FFF) once everything else is
dropped, packed exactly into one integer (15 bits a character), so the table holds no
hash collisions. Traditional text is converted to simplified when the table is built;
the text looked up is the library's own (a work stored in traditional characters reads
as rare: the cautious error is a missed short copy, never a false alarm).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from tracker.text.units import english_table

GRAM = 4
#: An English word at least this frequent (Zipf scale, wordfreq) is a common word.
COMMON_ZIPF = 5.8
_WORD_BIT = 0x80000000
_HAN_LO, _HAN_HI = 0x4E00, 0x9FFF
DATA_FILE = "rarity.npz"


def han_codes(text: str | np.ndarray) -> np.ndarray:
    """The text's Han characters (U+4E00-U+9FFF) as offsets from U+4E00, everything else
    dropped; ``text`` may be a string or an array of code points."""
    if isinstance(text, str):
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    else:
        codes = np.asarray(text, dtype=np.uint32)
    han = codes[(codes >= _HAN_LO) & (codes <= _HAN_HI)]
    return (han - _HAN_LO).astype(np.uint64)


def han_grams(text: str | np.ndarray) -> np.ndarray:
    """Every 4-gram of the text's Han characters, packed exactly into one uint64 each."""
    codes = han_codes(text)
    n = codes.size - GRAM + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    grams = np.zeros(n, dtype=np.uint64)
    for j in range(GRAM):
        grams <<= np.uint64(15)
        grams |= codes[j : j + n]
    return grams


@dataclass(frozen=True)
class Ordinariness:
    """How much of a text is ordinary: of its ``grams`` Han 4-grams, ``common`` are in
    the reference table."""

    grams: int
    common: int

    @property
    def common_share(self) -> float:
        """Share of the 4-grams that ordinary text holds in many documents (0 for a text
        without any: nothing says it is ordinary)."""
        return self.common / self.grams if self.grams else 0.0


@dataclass(frozen=True)
class ReferenceGrams:
    """The common 4-grams of a reference corpus (sorted, distinct) and how they were
    chosen."""

    grams: np.ndarray
    min_df: int
    documents: int
    sources: tuple[str, ...] = ()

    def ordinariness(self, text: str | np.ndarray) -> Ordinariness:
        """How many of the text's Han 4-grams are common in the reference, plus (for an
        array of unit ids) how many of its English word 4-grams are common words only."""
        grams = han_grams(text)
        english = english_ordinariness(text) if not isinstance(text, str) else Ordinariness(0, 0)
        if grams.size == 0 or self.grams.size == 0:
            return Ordinariness(int(grams.size) + english.grams, english.common)
        at = np.searchsorted(self.grams, grams)
        at[at >= self.grams.size] = 0
        common = int(np.count_nonzero(self.grams[at] == grams))
        return Ordinariness(int(grams.size) + english.grams, common + english.common)

    def save(self, path: str) -> None:
        np.savez_compressed(
            path,
            grams=self.grams,
            min_df=np.array(self.min_df),
            documents=np.array(self.documents),
            sources=np.array(list(self.sources), dtype=str),
        )

    @classmethod
    def load(cls, path: object) -> ReferenceGrams:
        with np.load(path) as z:  # type: ignore[arg-type]
            return cls(
                grams=z["grams"].astype(np.uint64),
                min_df=int(z["min_df"]),
                documents=int(z["documents"]),
                sources=tuple(str(s) for s in z["sources"]),
            )


def english_ordinariness(ids: np.ndarray) -> Ordinariness:
    """Of the English word 4-grams in an array of unit ids (a word's units count
    once), how many are made of common words (``COMMON_ZIPF``)."""
    ids = np.asarray(ids, dtype=np.uint32)
    words = ids[ids >= _WORD_BIT]
    if words.size < 2 * GRAM - 1:
        return Ordinariness(0, 0)
    words = words[np.concatenate([[True], words[1:] != words[:-1]])]
    n = words.size - GRAM + 1
    if n <= 0:
        return Ordinariness(0, 0)
    common = english_table().zipf_of_ids(words) >= COMMON_ZIPF
    all_common = common[:n].copy()
    for j in range(1, GRAM):
        all_common &= common[j : j + n]
    return Ordinariness(n, int(np.count_nonzero(all_common)))


def build_reference_grams(
    documents: Iterable[str], *, min_df: int = 5, sources: tuple[str, ...] = ()
) -> ReferenceGrams:
    """The 4-grams found in at least ``min_df`` of ``documents`` (doc frequency, so one
    long text repeating itself makes nothing common)."""
    chunks: list[np.ndarray] = []
    n = 0
    for text in documents:
        chunks.append(np.unique(han_grams(text)))
        n += 1
    if not chunks:
        return ReferenceGrams(np.zeros(0, dtype=np.uint64), min_df, 0, sources)
    values, df = np.unique(np.concatenate(chunks), return_counts=True)
    return ReferenceGrams(values[df >= min_df].astype(np.uint64), min_df, n, sources)


@lru_cache(maxsize=1)
def reference_grams() -> ReferenceGrams:
    """The shipped table (``tracker/data/rarity.npz``), loaded once."""
    with resources.as_file(resources.files("tracker") / "data" / DATA_FILE) as path:
        return ReferenceGrams.load(path)
