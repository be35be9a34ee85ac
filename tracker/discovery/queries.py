"""Search queries made from a work: its most distinctive sentences, quoted, plus its
title (and author when the work's metadata names one).

"Distinctive" is measured with the library's own statistics: the document frequency of
every character bigram across the works of the library (``LibraryStats``, from up to
``sample`` works spread over the library). A sentence scores the mean inverse document
frequency of its bigrams: a sentence made of bigrams that many works use (a formula, a
greeting, a template: "本章完", "未完待续", "第一条 为了规范…") scores low, one made of
bigrams few works share scores high. Sentences are skipped when they
- are shorter than ``min_chars`` Han characters (a longer sentence is cut into runs of
  its clauses of at most ``max_chars``: search engines match a quoted phrase of about
  10 to 38 characters best),
- hold a date, a time, a number or an administrative place name (省, 自治区, 县,
  地区 after two or more Han characters): templated facts, the same in every report,
- appear word for word in another work of the sample (a quotation, boilerplate), or
- repeat in the work itself (a refrain, a chapter header).
Queries are spread over the work (the best sentence of each stretch), so a site that
copied only some chapters is still found.

English works (issue #40: a work with more Latin words than Han characters): the text's
lines are joined (a hyphen that ends a line joins its word), its sentences split at
``.``, ``!``, ``?``, ``;``, ``:`` and dashes, and a sentence (or a run of its clauses) of
``min_words`` to ``max_words`` words, of letters mostly, without a number, is a
candidate. It scores the mean rarity of its words in English (7 minus the word's Zipf
frequency in wordfreq's list, ``tracker.text.units.english_table``; a word outside
the list, a name, scores 7): "It was the best of times" scores low, "the Time
Traveller's most constant guests" high. The rest is as for Chinese.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from tracker.text.units import UNITS_PER_WORD, english_table, fold_word, hash_word, read_units

__all__ = ["LibraryStats", "Query", "candidates", "split_sentences", "work_queries"]

_SENTENCE_END = re.compile(r"[。．｡！？!?；;…\n]+|[”」』]")
_HAN = re.compile(r"[\u3400-\u9fff]")
_TEMPLATED = re.compile(
    r"[0-9０-９]|[零〇一二三四五六七八九十百千]+[年月日号時时点點分秒]"
    r"|[\u4e00-\u9fff]{2,}(?:省|自治区|自治區|县|縣|地区|地區)"
    r"|本章完|未完待续|求月票|求推荐|请收藏|最新章节|笔趣阁"
)
_TRIM = "“”「」『』\"'《》（）()【】[] \t\u3000，,、：:"


@dataclass(frozen=True)
class Query:
    """One search query and what it was made from."""

    text: str  # what is sent, quoted for phrases
    work_id: str
    kind: str  # "sentence" | "title"
    score: float = 0.0


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split at Chinese and Latin sentence ends)."""
    out = []
    for part in _SENTENCE_END.split(text):
        s = part.strip(_TRIM)
        if s:
            out.append(s)
    return out


_CLAUSE = re.compile(r"[，,：:、]")


def candidates(sentence: str, max_chars: int) -> list[str]:
    """The sentence itself when short enough, else each run of its clauses (split at
    commas and colons) that fits in ``max_chars``."""
    if len(sentence) <= max_chars:
        return [sentence]
    clauses = [c.strip(_TRIM) for c in _CLAUSE.split(sentence)]
    clauses = [c for c in clauses if c]
    out = []
    for i in range(len(clauses)):
        run = clauses[i]
        if len(run) > max_chars:
            continue
        for c in clauses[i + 1 :]:
            if len(run) + 1 + len(c) > max_chars:
                break
            run = f"{run}，{c}"
        out.append(run)
    return out


def _bigram_codes(text: str) -> np.ndarray:
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    if len(cps) < 2:
        return np.zeros(0, dtype=np.int64)
    return (cps[:-1] << 21) | cps[1:]


class LibraryStats:
    """Bigram document frequencies of the library (see the module docstring)."""

    def __init__(self, texts: Iterable[str]) -> None:
        uniques: list[np.ndarray] = []
        self.sentences: dict[str, int] = {}
        n = 0
        for text in texts:
            n += 1
            uniques.append(np.unique(_bigram_codes(text)))
            for s in set(split_sentences(text)):
                if len(s) >= 8:
                    self.sentences[s] = self.sentences.get(s, 0) + 1
        self.documents = n
        if uniques:
            codes, counts = np.unique(np.concatenate(uniques), return_counts=True)
        else:
            codes, counts = np.zeros(0, np.int64), np.zeros(0, np.int64)
        self._codes, self._counts = codes, counts

    @classmethod
    def from_library(cls, library: object, *, sample: int = 2000) -> LibraryStats:
        """Statistics of up to ``sample`` works spread evenly over ``library``'s store."""
        store = library.store  # type: ignore[attr-defined]
        total = store.count_mothers()
        step = max(1, total // max(sample, 1))

        def texts() -> Iterable[str]:
            for i, mother in enumerate(store.iter_mothers()):
                if i % step == 0:
                    yield mother.text

        return cls(texts())

    def df(self, text: str) -> np.ndarray:
        """Document frequency of each bigram of ``text`` (0 for unseen)."""
        codes = _bigram_codes(text)
        if len(codes) == 0 or len(self._codes) == 0:
            return np.zeros(len(codes), dtype=np.int64)
        pos = np.searchsorted(self._codes, codes)
        pos = np.minimum(pos, len(self._codes) - 1)
        found = self._codes[pos] == codes
        return np.where(found, self._counts[pos], 0)

    def score(self, sentence: str) -> float:
        """Mean inverse document frequency of the sentence's bigrams."""
        df = self.df(sentence)
        if len(df) == 0:
            return 0.0
        n = max(self.documents, 1)
        return float(np.mean(np.log((n + 1) / (df + 1))))


def _usable(sentence: str, min_chars: int, max_chars: int) -> bool:
    han = len(_HAN.findall(sentence))
    if han < min_chars or len(sentence) > max_chars or han < 0.8 * len(sentence):
        return False
    return not _TEMPLATED.search(sentence)


_EN_BREAK = re.compile(r"(?<=[.!?;:])[\"'”’)\]]*\s+|\s+[—–-]{1,2}\s+|—|--")
_EN_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_WRAPPED = re.compile(r"(?<=[^\W\d_])-[ \t]*\r?\n[ \t]*(?=[^\W\d_])")
_SPACE = re.compile(r"\s+")
_EN_TRIM = " \t\"'“”‘’()[]_*,;:"


def english_sentences(text: str) -> list[str]:
    """The sentences of an English text, its lines joined (see the module)."""
    joined = _SPACE.sub(" ", _WRAPPED.sub("", text))
    return [s for s in (p.strip(_EN_TRIM) for p in _EN_BREAK.split(joined)) if s]


def english_score(sentence: str) -> float:
    """Mean rarity of the sentence's words (see the module)."""
    words = [fold_word(w) for w in _EN_WORD.findall(sentence)]
    words = [w for w in words if w]
    if not words:
        return 0.0
    hashes = np.array([hash_word(w) for w in words], dtype=np.uint64)
    return float(np.mean(7.0 - english_table().zipf(hashes)))


def _english_candidates(sentence: str, min_words: int, max_words: int) -> list[str]:
    """The sentence when it has ``min_words`` to ``max_words`` words, else each run of
    its clauses (split at commas) within that."""
    if _TEMPLATED_EN.search(sentence) or not _mostly_letters(sentence):
        return []
    if min_words <= len(_EN_WORD.findall(sentence)) <= max_words:
        return [sentence]
    clauses = [c for c in (c.strip(_EN_TRIM) for c in sentence.split(",")) if c]
    sizes = [len(_EN_WORD.findall(c)) for c in clauses]
    out = []
    for i in range(len(clauses)):
        n, j = 0, i
        while j < len(clauses) and n + sizes[j] <= max_words:
            n += sizes[j]
            j += 1
        if n >= min_words:
            out.append(", ".join(clauses[i:j]))
    return out


_TEMPLATED_EN = re.compile(r"[0-9]|https?:|www\.|@|chapter\s+[ivxlc]+\b", re.IGNORECASE)


def _mostly_letters(s: str) -> bool:
    visible = [c for c in s if not c.isspace()]
    return bool(visible) and sum(c.isalpha() for c in visible) >= 0.8 * len(visible)


def _english_scored(
    text: str, stats: LibraryStats, min_words: int, max_words: int
) -> tuple[list[tuple[int, str, float]], int]:
    """(sentence index, candidate, score) of an English work, and its sentence count."""
    sentences = english_sentences(text)
    counts: dict[str, int] = {}
    for s in sentences:
        counts[s] = counts.get(s, 0) + 1
    scored = []
    for i, sentence in enumerate(sentences):
        if counts[sentence] > 1 or stats.sentences.get(sentence, 0) > 1:
            continue
        for s in _english_candidates(sentence, min_words, max_words):
            scored.append((i, s, english_score(s)))
    return scored, len(sentences)


def is_english(text: str) -> bool:
    """Whether a work reads as English: more Latin words than Han characters."""
    units = read_units(text)
    return units.words > len(units) - UNITS_PER_WORD * units.words


def work_queries(
    work_id: str,
    title: str,
    text: str,
    stats: LibraryStats,
    *,
    limit: int = 10,
    author: str = "",
    min_chars: int = 12,
    max_chars: int = 38,
    min_words: int = 6,
    max_words: int = 16,
) -> list[Query]:
    """Up to ``limit`` queries for one work: the title query first, then the best
    sentence of each of ``limit - 1`` stretches of the text (see the module docstring;
    ``min_words``/``max_words`` for an English work)."""
    out: list[Query] = []
    if title.strip() and limit > 0:
        words = f'"{title.strip()}"' + (f" {author.strip()}" if author.strip() else "")
        out.append(Query(words, work_id, "title"))
    wanted = limit - len(out)
    if wanted <= 0:
        return out[:limit]
    scored: list[tuple[int, str, float]] = []
    if is_english(text):
        scored, n_sentences = _english_scored(text, stats, min_words, max_words)
    else:
        sentences = split_sentences(text)
        n_sentences = len(sentences)
        counts: dict[str, int] = {}
        for s in sentences:
            counts[s] = counts.get(s, 0) + 1
        for i, sentence in enumerate(sentences):
            if counts[sentence] > 1 or stats.sentences.get(sentence, 0) > 1:
                continue  # a refrain, or word for word in another work too
            for s in candidates(sentence, max_chars):
                if _usable(s, min_chars, max_chars):
                    scored.append((i, s, stats.score(s)))
    if not scored:
        return out
    stretch = max(1, math.ceil(n_sentences / wanted))
    best: dict[int, tuple[str, float]] = {}
    for i, s, sc in scored:
        b = i // stretch
        if b not in best or sc > best[b][1]:
            best[b] = (s, sc)
    picked = sorted(best.values(), key=lambda x: -x[1])[:wanted]
    if len(picked) < wanted:  # short works: the next best sentences anywhere
        chosen = {s for s, _ in picked}
        rest = sorted((x for x in scored if x[1] not in chosen), key=lambda x: -x[2])
        picked += [(s, sc) for _, s, sc in rest[: wanted - len(picked)]]
    out += [Query(f'"{s}"', work_id, "sentence", round(sc, 3)) for s, sc in picked]
    return out
