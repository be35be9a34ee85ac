"""Text units: what the engines and the alignment read of a text, in either script.

Yinji compares texts as streams of *units*, each a letter of the pinyin-initial
alphabet (``tracker.text.pinyin.INITIAL_LETTERS``, 23 letters) with the offset of the
character it stands for, so fingerprints (``tracker.fingerprints.daguan``), the index, the
alignment (``tracker.matching.align``), noise removal and long-text windows work on one kind of
stream whatever the text's script:

- **Chinese.** A Han character gives its pinyin initial, and pinyin syllables written
  for characters count as those characters: exactly ``tracker.text.pinyin.initial_codes``.
- **English** (and other Latin-script text). A word gives **three** units, at its
  first, middle and last letter. A word carries far more than one initial does (an
  English word has ~10 bits of identity, a pinyin initial ~4), so a word counts as three
  units: every length counted in units (the minimum copied length, the seed and window
  lengths, the anchor of a passage) then means about the same evidence in both scripts.
  The minimum copied length of 50 units is 50 Han characters or 17 English words (about
  95 characters: a copy of 150 characters holds it even with a word cut at each end).
  The three letters of a word come from a table generated from ``wordfreq``'s English
  word list (``bench/build_english.py`` writes ``tracker/data/english.npz``): the
  50,000 most frequent words are assigned, most frequent first, to the letters whose
  share of English running text is furthest below their share of pinyin initials in the
  Chinese reference (``tracker/data/reference.json``); other words take letters by a
  hash of the word, drawn with the same shares. English text thus has the letter
  distribution the fingerprints are normalised against, and a window may hold both
  scripts. ``Units.ids`` tells units apart beyond their letter: a Han character's code
  point, a word's 32-bit hash (top bit set).

What a word is, and the evasions undone. Letters are read through a fold table built
from Unicode data: NFKC (fullwidth and mathematical letters become ASCII), lower case,
diacritics removed (``café`` is ``cafe``), and the Cyrillic and Greek letters that look
like Latin ones (``а`` U+0430, ``ο`` U+03BF ...: ``LOOKALIKES``) read as those (a word of
such letters only, between two words that are not, is English too). Inside a
word, zero-width characters (U+200B-U+200D, U+2060, U+FEFF), soft hyphens, combining
marks, apostrophes (``'``, ``’``, ``ʼ``: ``don’t`` is ``dont``) and a hyphen that ends a
line (``exam-\\nple``) are skipped. Digits, punctuation and spaces end a word. A word
touching a letter of another alphabet (Russian, Greek, kana ...) is no English word and
is dropped, and so are the parts of web addresses (a word beside ``.``, ``/``, ``@`` or a
digit, with no space between: ``www.example.com``, ``abc123``).

Latin words inside Chinese text. In a Chinese text, Latin letters are mostly
watermarks, site names and adverts; Yinji always dropped them. In a text with more Han
characters than Latin words a Latin word therefore becomes a unit only within a run of
at least ``MIN_RUN`` words with no Han character between them (an English sentence
quoted in a Chinese chapter is read; ``VIP``, ``QQ群`` or a site name is not). In a text
with more Latin words (an English translation keeping names in characters) every word
is read. A word read as pinyin is never an English word.

Everything is vectorised over the text's code points (numpy), like ``tracker.text.pinyin``:
``bench/bench_english_speed.py`` measures it.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from importlib import resources

import numpy as np

from tracker.text.pinyin import INITIAL_LETTERS, code_points, initial_codes, initials_table

#: Words in a run of Latin words (no Han character between them) for the run to be read.
MIN_RUN = 8
#: Units one word gives.
UNITS_PER_WORD = 3
#: The bundled English table (``bench/build_english.py``).
DATA_FILE = "english.npz"

_TABLE_SIZE = 0x110000
# Character classes of the class table.
OTHER, LETTER, JOINER, FOREIGN = 0, 1, 2, 3

#: Cyrillic and Greek letters read as the Latin letters they look like.
LOOKALIKES = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
    "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j",
    "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "һ": "h", "ɡ": "g", "ь": "b",
    "А": "a", "В": "b", "Е": "e", "К": "k", "М": "m", "Н": "h", "О": "o", "Р": "p",
    "С": "c", "Т": "t", "Х": "x", "У": "y", "І": "i", "Ј": "j", "Ѕ": "s", "Ԛ": "q",
    "Ԝ": "w", "Ӏ": "l", "Һ": "h",
    # Greek
    "α": "a", "ο": "o", "ν": "v", "ι": "i", "κ": "k", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "ε": "e", "Α": "a", "Β": "b", "Ε": "e", "Ζ": "z", "Η": "h", "Ι": "i",
    "Κ": "k", "Μ": "m", "Ν": "n", "Ο": "o", "Ρ": "p", "Τ": "t", "Υ": "y", "Χ": "x",
    "ϲ": "c", "ϳ": "j",
}  # fmt: skip
_JOINERS = "\u00ad\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e'\u2019\u02bc"
# A hyphen that ends a line between two letters: the rest of the word is on the next line.
_WRAP = re.compile(r"-[ \t]*\r?\n[ \t]*")
# Characters that glue a word to an address or a code: ``www.site.com``, ``a@b``, ``x1``.
_GLUE = np.zeros(128, dtype=bool)
for _c in "./@:_\\0123456789":
    _GLUE[ord(_c)] = True
_MIXED = np.zeros(128, dtype=bool)  # glue that needs a letter or digit beyond it
for _c in "./@:_\\":
    _MIXED[ord(_c)] = True

_B = np.uint64(0x100000001B3)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@dataclass(frozen=True)
class Units:
    """A text's units (see the module): ``codes[i]`` the ASCII letter (uint8) of unit i,
    ``offsets[i]`` the character of the text it stands for (int64, non-decreasing: the
    units of a word of one or two letters share some), ``ids[i]`` what the unit is
    beyond its letter (uint32: the code point of a Han character or pinyin letter, a
    word's hash with the top bit set). ``words``: English words read (each
    ``UNITS_PER_WORD`` units)."""

    codes: np.ndarray
    offsets: np.ndarray
    ids: np.ndarray
    words: int = 0

    def __len__(self) -> int:
        return int(self.codes.size)

    @property
    def letters(self) -> str:
        """The units as a string of letters (the SimHash/MinHash engines' stream)."""
        return bytes(self.codes.tobytes()).decode("ascii")


@functools.cache
def _tables() -> tuple[np.ndarray, np.ndarray]:
    """(class table uint8, fold table uint32) over every code point."""
    cls = np.zeros(_TABLE_SIZE, dtype=np.uint8)
    fold = np.zeros(_TABLE_SIZE, dtype=np.uint32)
    ranges = [
        (0x41, 0x5B), (0x61, 0x7B), (0xC0, 0x250), (0x1E00, 0x1F00), (0xFF21, 0xFF3B),
        (0xFF41, 0xFF5B), (0x1D400, 0x1D800), (0x2C60, 0x2C80), (0xA720, 0xA800),
    ]  # fmt: skip
    for lo, hi in ranges:
        for cp in range(lo, hi):
            ch = chr(cp)
            if not ch.isalpha():
                continue
            base = "".join(
                c
                for c in unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", ch))
                if not unicodedata.combining(c)
            ).casefold()
            if len(base) == 1:
                cls[cp], fold[cp] = LETTER, ord(base)
            elif len(base) > 1 and base.isascii():  # ligatures (ﬁ, ß): their first letter
                cls[cp], fold[cp] = LETTER, ord(base[0])
            else:
                cls[cp], fold[cp] = LETTER, ord(ch.lower()[0])
    for ch, latin in LOOKALIKES.items():
        cls[ord(ch)], fold[ord(ch)] = LETTER, ord(latin)
    for ch in _JOINERS:
        cls[ord(ch)] = JOINER
    for cp in range(0x300, 0x370):  # combining diacritical marks
        cls[cp] = JOINER
    # Letters of other alphabets: Greek, Cyrillic, Armenian, Hebrew, Arabic, Indic, Thai,
    # Georgian, Hangul, kana (Han characters are read through the pinyin table).
    for lo, hi in ((0x370, 0x1000), (0x10A0, 0x1100), (0x1100, 0x1200), (0x3040, 0x3100),
                   (0xAC00, 0xD7A4)):  # fmt: skip
        for cp in range(lo, hi):
            if cls[cp] == OTHER and chr(cp).isalpha():
                cls[cp] = FOREIGN
    cls.setflags(write=False)
    fold.setflags(write=False)
    return cls, fold


def fold_word(word: str) -> str:
    """A word as the reader reads it (folded letters, joiners skipped), or "" when it
    holds anything else: how ``bench/build_english.py`` reads wordfreq's words."""
    cls, fold = _tables()
    out = []
    for ch in word:
        c = int(cls[ord(ch)])
        if c == LETTER:
            out.append(chr(int(fold[ord(ch)])))
        elif c != JOINER:
            return ""
    return "".join(out)


def word_hashes(folded: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """64-bit hashes of words given as ``[starts, ends)`` slices of ``folded`` (code
    points of letters, uint64): ``h = h * B + letter`` letter by letter, vectorised over
    the words (one pass per letter position, over the words that long), then a mixer."""
    h = np.zeros(starts.size, dtype=np.uint64)
    if starts.size == 0:
        return h
    lengths = ends - starts
    active = np.arange(starts.size)
    with np.errstate(over="ignore"):
        for j in range(int(lengths.max())):
            if j % 4 == 0:  # drop the words that ended (most are short)
                active = active[lengths[active] > j]
            live = active if j % 4 == 0 else active[lengths[active] > j]
            h[live] = h[live] * _B + folded[starts[live] + j] + np.uint64(1)
        h ^= lengths.astype(np.uint64) << np.uint64(56)
        h ^= h >> np.uint64(30)
        h *= _MIX1
        h ^= h >> np.uint64(27)
        h *= _MIX2
        h ^= h >> np.uint64(31)
    return h


def hash_word(word: str) -> int:
    """The hash of one folded word (as ``word_hashes``)."""
    cps = np.frombuffer(word.encode("utf-32-le"), dtype="<u4").astype(np.uint64)
    return int(word_hashes(cps, np.array([0]), np.array([cps.size]))[0])


@dataclass(frozen=True)
class EnglishTable:
    """The bundled English table: sorted word hashes, each word's three letters (indexes
    into INITIAL_LETTERS) and Zipf frequency (x10), and the letters' target shares."""

    hashes: np.ndarray
    first: np.ndarray
    second: np.ndarray
    third: np.ndarray
    zipf10: np.ndarray
    shares: np.ndarray

    def zipf(self, hashes: np.ndarray) -> np.ndarray:
        """Zipf frequency of each word (0 for a word outside the list)."""
        at, known = self._find(hashes)
        return np.where(known, self.zipf10[at] / 10.0, 0.0)

    def zipf_of_ids(self, ids: np.ndarray) -> np.ndarray:
        """Zipf frequency of each word given by its unit id (``word_id``; 0 for a word
        outside the list)."""
        sorted_ids, zipf10 = _id_table(self.hashes.tobytes(), self.zipf10.tobytes())
        at = np.searchsorted(sorted_ids, ids)
        at[at >= sorted_ids.size] = 0
        return np.where(sorted_ids[at] == ids, zipf10[at] / 10.0, 0.0)

    def _find(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index, found) of each hash in ``self.hashes``: the top ``_BUCKET_BITS`` bits
        of a hash give the range of sorted hashes it can be in (a few passes over the
        queries instead of a binary search each)."""
        first, width = _buckets(self.hashes)
        key = (hashes >> np.uint64(64 - _BUCKET_BITS)).astype(np.intp)
        lo, n = first[key], width[key]
        at = np.zeros(hashes.size, dtype=np.intp)
        found = np.zeros(hashes.size, dtype=bool)
        last = self.hashes.size - 1
        for k in range(int(width.max()) if width.size else 0):
            maybe = n > k
            i = np.minimum(lo + k, last)
            hit = maybe & (self.hashes[i] == hashes)
            at[hit] = i[hit]
            found |= hit
        return at, found


_BUCKET_BITS = 16


def word_id(hashes: np.ndarray) -> np.ndarray:
    """A word's unit id (uint32, top bit set: never a code point) from its hash."""
    return ((hashes >> np.uint64(33)) | np.uint64(0x80000000)).astype(np.uint32)


@functools.cache
def _id_table(hashes: bytes, zipf10: bytes) -> tuple[np.ndarray, np.ndarray]:
    ids = word_id(np.frombuffer(hashes, dtype=np.uint64))
    order = np.argsort(ids, kind="stable")
    return ids[order], np.frombuffer(zipf10, dtype=np.uint8)[order]


@functools.cache
def _bucket_table(key: bytes) -> tuple[np.ndarray, np.ndarray]:
    hashes = np.frombuffer(key, dtype=np.uint64)
    top = (hashes >> np.uint64(64 - _BUCKET_BITS)).astype(np.intp)
    width = np.bincount(top, minlength=1 << _BUCKET_BITS).astype(np.intp)
    first = np.concatenate([[0], np.cumsum(width)[:-1]]).astype(np.intp)
    return first, width


def _buckets(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index, count) of the sorted ``hashes`` per top-bits bucket (cached)."""
    return _bucket_table(hashes.tobytes())


@functools.cache
def english_table() -> EnglishTable:
    """The shipped table (``tracker/data/english.npz``), loaded once."""
    with (
        resources.as_file(resources.files("tracker") / "data" / DATA_FILE) as path,
        np.load(path) as z,
    ):
        return EnglishTable(
            hashes=z["hashes"].astype(np.uint64),
            first=z["first"].astype(np.uint8),
            second=z["second"].astype(np.uint8),
            third=z["third"].astype(np.uint8),
            zipf10=z["zipf10"].astype(np.uint8),
            shares=z["shares"].astype(np.float64),
        )


_ALPHABET = np.frombuffer(INITIAL_LETTERS.encode("ascii"), dtype=np.uint8)


def word_letters(hashes: np.ndarray, table: EnglishTable | None = None) -> np.ndarray:
    """(words x 3) ASCII letters of words given by hash: from the table for the listed
    words, else drawn by the hash with the table's shares."""
    table = table or english_table()
    at, known = table._find(hashes)
    cdf = np.cumsum(table.shares)
    cdf /= cdf[-1]
    top = len(INITIAL_LETTERS) - 1
    columns = [table.first[at], table.second[at], table.third[at]]
    unknown = np.flatnonzero(~known)
    if unknown.size:
        rest = hashes[unknown]
        with np.errstate(over="ignore"):
            for column, mix in zip(columns, (None, _MIX1, _MIX2), strict=True):
                h = rest if mix is None else rest * mix
                u = (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)
                column[unknown] = np.minimum(np.searchsorted(cdf, u), top)
    return np.stack([_ALPHABET[c] for c in columns], axis=1)


@dataclass(frozen=True)
class Words:
    """The Latin words a text's units take: start and end (exclusive) offsets of each in
    the text (``ends`` is one past its last letter) and each one's hash."""

    starts: np.ndarray
    ends: np.ndarray
    hashes: np.ndarray


_NO_WORDS = Words(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint64))


def latin_words(text: str, cps: np.ndarray | None = None, cls: np.ndarray | None = None) -> Words:
    """Every Latin word of ``text`` (see the module), with no run rule: an English text's
    words. ``cps``/``cls``: its code points and their classes, when known."""
    if cps is None:
        cps = code_points(text)
    cls_table, fold = _tables()
    if cls is None:
        cls = cls_table[cps]
    at = np.flatnonzero((cls == LETTER) | (cls == JOINER))
    if at.size == 0:
        return _NO_WORDS
    if "-" in text:
        cls = _unwrap_hyphens(text, cls)
        at = np.flatnonzero((cls == LETTER) | (cls == JOINER))
    kinds = cls[at]
    li = np.flatnonzero(kinds == LETTER)  # letters, as indexes into ``at``
    if li.size == 0:
        return _NO_WORDS
    pos = at[li]
    # Two letters are of one word when only joiners lie between them.
    joined = np.diff(li) == np.diff(pos)
    first = np.concatenate([[True], ~joined])
    w_first = np.flatnonzero(first)
    w_last = np.concatenate([w_first[1:], [li.size]]) - 1
    starts, lasts = pos[w_first], pos[w_last]
    n = cps.size
    before = np.where(starts > 0, cps[np.maximum(starts - 1, 0)], 32)
    after = np.where(lasts + 1 < n, cps[np.minimum(lasts + 1, n - 1)], 32)
    before2 = np.where(starts > 1, cps[np.maximum(starts - 2, 0)], 32)
    after2 = np.where(lasts + 2 < n, cps[np.minimum(lasts + 2, n - 1)], 32)
    keep = ~(_glued(before, before2, cls_table) | _glued(after, after2, cls_table))
    keep &= cls_table[before] != FOREIGN
    keep &= cls_table[after] != FOREIGN
    # A word of look-alike letters only is English between English words (a Russian
    # "на" or "все" between Russian words is not).
    latin = (cps[pos] < 0x370) | (cps[pos] >= 0x530)
    own = np.add.reduceat(latin.astype(np.int32), w_first) > 0
    if not own.all():
        neighbours = np.zeros(own.size, dtype=bool)
        neighbours[1:-1] = own[:-2] & own[2:]
        keep &= own | neighbours
    if not keep.all():
        w_first, w_last, starts, lasts = w_first[keep], w_last[keep], starts[keep], lasts[keep]
    folded = fold[cps[pos]].astype(np.uint64)
    hashes = word_hashes(folded, w_first, w_last + 1)
    return Words(starts.astype(np.int64), (lasts + 1).astype(np.int64), hashes)


def word_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` widened to whole Latin words: back to the start of the word the
    character at ``start`` is in, on to the end of the one ``end - 1`` is in (letters and
    joiners); Han and other characters stay where they are."""
    cls, _ = _tables()
    n = len(text)

    def inside(i: int) -> bool:
        return 0 <= i < n and int(cls[ord(text[i])]) in (LETTER, JOINER)

    if inside(start):
        while inside(start - 1):
            start -= 1
    if inside(end - 1):
        while inside(end):
            end += 1
    return start, end


def _glued(near: np.ndarray, beyond: np.ndarray, cls_table: np.ndarray) -> np.ndarray:
    """Whether a word is glued to an address or a code by the character ``near`` it (and
    the one ``beyond`` that): a digit, or ``.``/``/``/``@``... with a letter or digit
    after it."""
    ascii_near = near < 128
    glue = np.zeros(near.size, dtype=bool)
    glue[ascii_near] = _GLUE[near[ascii_near]]
    mixed = np.zeros(near.size, dtype=bool)
    mixed[ascii_near] = _MIXED[near[ascii_near]]
    beyond_word = (cls_table[beyond] == LETTER) | ((beyond >= 48) & (beyond <= 57))
    return glue & (~mixed | beyond_word)


def _unwrap_hyphens(text: str, cls: np.ndarray) -> np.ndarray:
    """``cls`` with each line-ending hyphen between two letters (and the line break and
    indentation after it) made a joiner."""
    out: np.ndarray | None = None
    n = len(text)
    for m in _WRAP.finditer(text):
        a, b = m.start(), m.end()
        if a > 0 and b < n and cls[a - 1] == LETTER and cls[b] == LETTER:
            if out is None:
                out = cls.copy()
            out[a:b] = JOINER
    return cls if out is None else out


#: Texts up to this long are remembered (the last ``_CACHED`` of them): one check reads
#: its suspect for the engine, the verifier and the report.
_CACHE_CHARS = 1_000_000
_CACHED = 4


def read_units(text: str) -> Units:
    """The units of ``text`` (see the module). Its arrays are read-only."""
    if len(text) <= _CACHE_CHARS:
        return _read_cached(text)
    return _read(text)


@functools.lru_cache(maxsize=_CACHED)
def _read_cached(text: str) -> Units:
    return _read(text)


def _read(text: str) -> Units:
    units = _read_units(text)
    for array in (units.codes, units.offsets, units.ids):
        array.setflags(write=False)
    return units


def _read_units(text: str) -> Units:
    han_codes, han_offsets = initial_codes(text)
    cps = code_points(text)
    words = _words_in_runs(text, cps, han_offsets)
    if words.starts.size == 0:
        ids = cps[han_offsets].astype(np.uint32) if han_offsets.size else np.zeros(0, np.uint32)
        return Units(han_codes, han_offsets, ids)
    letters = word_letters(words.hashes)
    ids32 = word_id(words.hashes)
    w_codes = letters.ravel()
    last = words.ends - 1
    w_offsets = np.stack([words.starts, (words.starts + last) // 2, last], axis=1).ravel()
    w_ids = np.repeat(ids32, UNITS_PER_WORD)
    if han_offsets.size == 0:
        return Units(w_codes, w_offsets, w_ids, int(words.starts.size))
    offsets = np.concatenate([han_offsets, w_offsets])
    order = np.argsort(offsets, kind="stable")
    codes = np.concatenate([han_codes, w_codes])[order]
    ids = np.concatenate([cps[han_offsets].astype(np.uint32), w_ids])[order]
    return Units(codes, offsets[order], ids, int(words.starts.size))


def _words_in_runs(text: str, cps: np.ndarray, han_offsets: np.ndarray) -> Words:
    """The Latin words that become units: in runs of ``MIN_RUN`` words without a Han
    character (or a word read as pinyin) between them."""
    if cps.size == 0 or not _may_hold_words(cps):
        return _NO_WORDS
    if han_offsets.size == 0:
        return latin_words(text, cps)
    # Units from the pinyin table: Han characters, and pinyin letters (ASCII).
    is_han = initials_table()[cps[han_offsets]] > 0
    han_at = han_offsets[is_han]
    py_at = han_offsets[~is_han]
    cls = _tables()[0][cps]
    if not _may_hold_a_run(cls, han_at):
        return _NO_WORDS
    words = latin_words(text, cps, cls)
    if words.starts.size == 0:
        return words
    keep = np.ones(words.starts.size, dtype=bool)
    if py_at.size:  # a word read as pinyin is no English word
        keep &= np.searchsorted(py_at, words.starts) == np.searchsorted(py_at, words.ends)
    if words.starts.size > han_at.size:
        # Mostly English (a translation keeping names in characters): every word.
        if keep.all():
            return words
        return Words(words.starts[keep], words.ends[keep], words.hashes[keep])
    # Runs: consecutive kept words with no Han character between them.
    n_han_before = np.searchsorted(han_at, words.starts)
    n_han_after = np.searchsorted(han_at, words.ends)
    brk = np.ones(words.starts.size, dtype=bool)
    brk[1:] = n_han_before[1:] != n_han_after[:-1]
    brk |= ~keep
    brk[1:] |= ~keep[:-1]
    run_id = np.cumsum(brk)
    sizes = np.bincount(run_id, weights=keep)
    keep &= sizes[run_id] >= MIN_RUN
    if keep.all():
        return words
    return Words(words.starts[keep], words.ends[keep], words.hashes[keep])


def _may_hold_a_run(cls: np.ndarray, han_at: np.ndarray) -> bool:
    """Whether a text with Han characters at ``han_at`` may hold a run of ``MIN_RUN``
    words, or more words than Han characters (a cheap upper bound: every word starts
    at a letter after a character that is neither a letter nor a joiner)."""
    letter = cls == LETTER
    starts = np.flatnonzero(letter[1:] & ~(letter[:-1] | (cls[:-1] == JOINER))) + 1
    if letter[0]:
        starts = np.concatenate([[0], starts])
    if starts.size < MIN_RUN:
        return False
    if starts.size > han_at.size:
        return True
    per_stretch = np.bincount(np.searchsorted(han_at, starts))
    return int(per_stretch.max()) >= MIN_RUN


def _may_hold_words(cps: np.ndarray) -> bool:
    """Whether the text holds at least ``MIN_RUN`` letters that may be Latin (a cheap
    test that passes over most Chinese text): ASCII letters, else letters of the Latin,
    Greek and Cyrillic blocks, fullwidth or mathematical Latin letters."""
    if int(np.count_nonzero(((cps | 0x20) - 97) < 26)) >= MIN_RUN:
        return True
    wide = ((cps - 0xC0) < 0x470) | ((cps - 0xFF21) < 0x3A) | ((cps - 0x1D400) < 0x400)
    return int(np.count_nonzero(wide | ((cps - 0x1E00) < 0x100))) >= MIN_RUN


_SPACES = np.zeros(128, dtype=bool)
for _c in " \t\n\r\v\f":
    _SPACES[ord(_c)] = True


def unit_breaks(text: str, units: Units) -> np.ndarray:
    """Per unit of ``text``, whether a break of the text stands before it: before a Han
    character's unit, any character without a unit (punctuation, a number, a line
    break: as in Chinese text); before a word's first unit, a character other than white
    space since the unit before (``, `` or ``. `` but not a space or a line wrapped
    mid-sentence); never before a word's other units. The first unit has one."""
    n = len(units)
    out = np.ones(n, dtype=bool)
    if n < 2:
        return out
    cps = code_points(text)
    space = (cps < 128) & _SPACES[np.minimum(cps, 127)]
    space |= (cps == 0xA0) | (cps == 0x3000)
    visible = np.zeros(cps.size + 1, dtype=np.int64)
    np.cumsum(~space, out=visible[1:])
    off = units.offsets
    after_prev = off[:-1] + 1
    anything = off[1:] > after_prev
    something = visible[off[1:]] > visible[np.minimum(after_prev, off[1:])]
    word = units.ids >= 0x80000000
    # A word's units come together (``UNITS_PER_WORD`` of them): in each stretch of
    # consecutive word units, a word's first unit is at a multiple of that.
    idx = np.arange(n)
    starts = word & ~np.concatenate([[False], word[:-1]])
    stretch = np.maximum.accumulate(np.where(starts, idx, 0))
    inner = word & ((idx - stretch) % UNITS_PER_WORD != 0)
    out[1:] = np.where(word[1:], something, anything)
    out[inner] = False
    return out


def unit_codes(text: str) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, offsets)`` of ``read_units``: the drop-in for
    ``tracker.text.pinyin.initial_codes`` where a text of either script is read."""
    units = read_units(text)
    return units.codes, units.offsets


def unit_letters(text: str) -> str:
    """The units as letters (``Units.letters``)."""
    return read_units(text).letters


def words_to_units(words: int) -> int:
    """Units of ``words`` English words."""
    return words * UNITS_PER_WORD


def units_to_words(units: int) -> int:
    """English words needed for ``units`` units (rounded up)."""
    return math.ceil(units / UNITS_PER_WORD)
