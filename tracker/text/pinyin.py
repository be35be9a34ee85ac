"""Pinyin initials of Chinese text, vectorized with a lookup table.

``initials("中华人民共和国")`` is ``"zhrmghg"``. A 0x110000-entry numpy table maps every
code point to the ASCII initial of its first reading in pypinyin's own dictionary
(simplified and traditional characters alike), so conversion is one fancy-index
over the text's UTF-32 code units: ~1000x faster than ``lazy_pinyin``.

What is kept and what is dropped (never an error, for any ``str``):

- Han characters with a reading in pypinyin's dictionary (CJK Unified Ideographs and
  their extensions, including traditional forms) give one lower-case letter. CJK
  compatibility ideographs (U+F900..) take the reading of their canonical equivalent.
- Pinyin written for characters counts as those characters: pirate sites write some
  characters as toneless syllables (他→ta, 什么→shen me) to evade matching. A run of
  Latin letters is read as pinyin when it splits entirely into syllables of
  pypinyin's dictionary (with a vowel; ü as v or u) and the run of such words it
  belongs to (separated by spaces) touches a Han character; each syllable gives its
  first letter, at the offset of that letter. ``www``, ``iPhone``, ``Google``, or
  ``biquge`` between dots do not qualify.
- Everything else is dropped: other Latin letters and digits (in pirate copies they are
  mostly watermarks, URLs and adverts, and Yinji matches Chinese text), punctuation,
  whitespace, emoji, private-use and unassigned code points, control characters and
  lone surrogates. A text with no Han characters therefore has no initials and no
  fingerprints.
- Heteronyms take one fixed reading (the dictionary's first). Mother and suspect go
  through the same table, so matching does not depend on choosing the reading that
  ``lazy_pinyin`` would choose from context; ``bench/bench_pinyin.py`` measures how
  often the two differ.

The table is built on first use (about 0.2 s, most of it importing pypinyin's
dictionary) and cached in memory and on disk under ``$XDG_CACHE_HOME/yinji``; importing
this module is cheap.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import numpy as np

#: Letters that start a pinyin syllable (i, u and v never do).
INITIAL_LETTERS = "abcdefghjklmnopqrstwxyz"

_TABLE_SIZE = 0x110000
_TABLE_FORMAT = 1  # bump when the way the table is built changes


def _cache_path() -> Path | None:
    try:
        # Its installed version, read from the package's metadata: importing pypinyin
        # (its phrase dictionary) takes ~0.4 s that a cached table does not need.
        from importlib.metadata import version as installed

        version = installed("pypinyin")
    except Exception:  # pragma: no cover - pypinyin is a dependency
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "yinji" / f"initials-v{_TABLE_FORMAT}-pypinyin-{version}.npy"


def _first_letter(reading: str) -> int:
    """ASCII code of the first letter of a reading such as 'zhōng' or 'ḿ' (0 if none)."""
    for ch in unicodedata.normalize("NFD", reading):
        if "a" <= ch <= "z":
            return ord(ch)
        if "A" <= ch <= "Z":
            return ord(ch.lower())
    return 0


def _build_table() -> np.ndarray:
    from pypinyin.pinyin_dict import pinyin_dict

    table = np.zeros(_TABLE_SIZE, dtype=np.uint8)
    for code, readings in pinyin_dict.items():
        if 0 <= code < _TABLE_SIZE:
            table[code] = _first_letter(readings.split(",", 1)[0])
    # Compatibility ideographs have no entry of their own in most cases: use the
    # reading of the unified ideograph they are canonically equivalent to.
    for code in list(range(0xF900, 0xFB00)) + list(range(0x2F800, 0x2FA20)):
        if table[code]:
            continue
        canonical = unicodedata.normalize("NFC", chr(code))
        if len(canonical) == 1 and canonical != chr(code):
            table[code] = table[ord(canonical)]
    return table


@functools.cache
def initials_table() -> np.ndarray:
    """The code point -> ASCII initial table (0 = no initial). Read-only."""
    path = _cache_path()
    table: np.ndarray | None = None
    if path is not None and path.exists():
        try:
            loaded = np.load(path, allow_pickle=False)
            if loaded.shape == (_TABLE_SIZE,) and loaded.dtype == np.uint8:
                table = loaded
        except (OSError, ValueError):
            table = None
    if table is None:
        table = _build_table()
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
                np.save(tmp, table, allow_pickle=False)
                os.replace(tmp, path)
            except OSError:
                pass  # a read-only home only costs the 0.2 s build next time
    table.setflags(write=False)
    return table


def code_points(text: str) -> np.ndarray:
    """The text's code points as uint32; index i is ``text[i]`` (lone surrogates included)."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def initial_codes(text: str) -> tuple[np.ndarray, np.ndarray]:
    """ASCII codes (uint8) of the initials kept, and the offset (int64) of each one's
    character in ``text``. The vectorized core of :func:`initials_with_offsets`."""
    cps = code_points(text)
    if cps.size == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int64)
    letters = initials_table()[cps]
    offsets = np.flatnonzero(letters)
    han_letters = letters[offsets]
    # Where are ASCII letters? (numpy over the code points: regex scans of a
    # 20,000-character mother took most of its time.) ``c | 0x20`` folds A-Z onto a-z.
    latin = np.flatnonzero(((cps | 0x20) - 97) < 26)
    if not latin.size or not offsets.size:
        # Pinyin counts only beside Han characters: none, no pinyin (an English text).
        return han_letters, offsets
    if offsets.size * _SPARSE_HAN < latin.size:
        # Latin text with a few Han characters (an English translation keeping names in
        # characters): only letters near one can be pinyin touching it.
        latin = _near(latin, offsets, _NEAR)
    pinyin_offsets, pinyin_letters = _pinyin_word_initials(text, letters, latin)
    if not pinyin_offsets:
        return han_letters, offsets
    all_offsets = np.concatenate([offsets, np.asarray(pinyin_offsets, dtype=np.int64)])
    all_letters = np.concatenate([han_letters, np.asarray(pinyin_letters, dtype=np.uint8)])
    order = np.argsort(all_offsets, kind="stable")
    return all_letters[order], all_offsets[order]


#: A text with fewer Han characters than 1 in this many ASCII letters is Latin text.
_SPARSE_HAN = 20
#: In Latin text, letters this far from any Han character are not read as pinyin (a run
#: of pinyin words touching a Han character, on one line without punctuation, is shorter).
_NEAR = 400


def _near(at: np.ndarray, han: np.ndarray, distance: int) -> np.ndarray:
    """The positions of ``at`` within ``distance`` of a position of ``han`` (both sorted)."""
    i = np.searchsorted(han, at)
    after = han[np.minimum(i, han.size - 1)] - at
    before = at - han[np.maximum(i - 1, 0)]
    gap = np.minimum(
        np.where(i < han.size, after, distance + 1), np.where(i > 0, before, distance + 1)
    )
    return at[gap <= distance]


_LATIN_WORD = re.compile(r"[A-Za-z]+")
#: The longest toneless syllable ("chuang", "zhuang", "shuang") has 6 letters.
_MAX_SYLLABLE = 6


@functools.cache
def pinyin_syllables() -> frozenset[str]:
    """Toneless pinyin syllables with a vowel, from pypinyin's dictionary (ü as v and u).
    Cached on disk beside the initials table: building it imports pypinyin's
    dictionaries (~0.5-1 s of an ingest or a check whose text holds Latin letters)."""
    table = _cache_path()
    if table is None:
        return _build_syllables()
    path = table.with_name(table.name.replace("initials-", "syllables-")).with_suffix(".txt")
    with contextlib.suppress(OSError, UnicodeDecodeError):
        words = path.read_text(encoding="ascii").split()
        if words:
            return frozenset(words)
    out = _build_syllables()
    if out:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
            tmp.write_text("\n".join(sorted(out)) + "\n", encoding="ascii")
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only home only costs the build next time
    return out


def _build_syllables() -> frozenset[str]:
    from pypinyin.pinyin_dict import pinyin_dict

    out: set[str] = set()
    for readings in pinyin_dict.values():
        for reading in readings.split(","):
            nfd = unicodedata.normalize("NFD", reading).replace("u\u0308", "v")
            plain = "".join(ch for ch in nfd if "a" <= ch <= "z")
            if plain and any(v in plain for v in "aeiouv"):
                out.add(plain)
                if "v" in plain:
                    out.add(plain.replace("v", "u"))  # lv/lu, nve/nue: both spellings seen
    return frozenset(out)


def split_pinyin(word: str) -> list[int] | None:
    """Start index of each syllable if ``word`` (lower case) splits entirely into pinyin
    syllables, preferring the fewest syllables (``xian`` is one, not ``xi an``); else None."""
    syllables = pinyin_syllables()
    n = len(word)
    best: list[list[int] | None] = [None] * (n + 1)
    best[n] = []
    for i in range(n - 1, -1, -1):
        for j in range(min(n, i + _MAX_SYLLABLE), i, -1):
            rest = best[j]
            if rest is not None and word[i:j] in syllables:
                candidate = [i, *rest]
                current = best[i]
                if current is None or len(candidate) < len(current):
                    best[i] = candidate
    return best[0]


def _latin_runs(text: str, latin: np.ndarray) -> Iterator[re.Match[str]]:
    """``_LATIN_RUN.finditer(text)``, given the offsets of the ASCII letters in ``text``
    (``latin``, sorted): each run is matched where its first letter is, and the search
    goes on from the first letter after it, so the text between is not scanned."""
    i = 0
    while i < latin.size:
        run = _LATIN_RUN.match(text, int(latin[i]))
        if run is None:  # (never: a run starts at any letter)
            i += 1
            continue
        yield run
        i = int(np.searchsorted(latin, run.end()))


def _pinyin_word_initials(
    text: str, letters: np.ndarray, latin: np.ndarray
) -> tuple[list[int], list[int]]:
    """(offsets, ASCII initials) of the pinyin syllables written in ``text`` for
    characters; ``latin``: the offsets of its ASCII letters."""
    offsets: list[int] = []
    codes: list[int] = []
    for run in _latin_runs(text, latin):
        han_before, han_after = _han_around(text, letters, run.start(), run.end())
        if not (han_before or han_after):
            continue  # the common case in ordinary text: Latin words between Latin words
        words = [(m.start(), _pinyin_starts(m.group())) for m in _LATIN_WORD.finditer(run.group())]
        # Only the pinyin words at an end of the run that touches a Han character count:
        # a non-pinyin word between them and the Han text breaks the chain.
        chosen: list[tuple[int, list[int]]] = []
        if han_before:
            for start, starts in words:
                if starts is None:
                    break
                chosen.append((start, starts))
        if han_after and len(chosen) < len(words):
            tail: list[tuple[int, list[int]]] = []
            for start, starts in reversed(words[len(chosen) :]):
                if starts is None:
                    break
                tail.append((start, starts))
            chosen.extend(reversed(tail))
        for start, starts in chosen:
            for k in starts:
                at = run.start() + start + k
                offsets.append(at)
                codes.append(ord(text[at].lower()))
    return offsets, codes


_LATIN_RUN = re.compile(r"[A-Za-z]+(?:[ \t\u3000]+[A-Za-z]+)*")


@functools.lru_cache(maxsize=65536)
def _pinyin_starts(word: str) -> list[int] | None:
    """Syllable starts of a word written as pinyin (lower case or Capitalized; an all-capital
    word is an acronym such as EMI or TA, not pinyin)."""
    if word.isupper() or not (word.islower() or word[1:].islower()):
        return None
    return split_pinyin(word.lower())


def _han_around(text: str, letters: np.ndarray, start: int, end: int) -> tuple[bool, bool]:
    """Whether the nearest non-space characters before ``start`` and after ``end`` are Han."""
    before = start - 1
    while before >= 0 and text[before].isspace():
        before -= 1
    after = end
    while after < len(text) and text[after].isspace():
        after += 1
    return (before >= 0 and bool(letters[before])), (after < len(text) and bool(letters[after]))


def initials(text: str) -> str:
    """Pinyin initial of every Han character of ``text``, everything else dropped."""
    letters, _ = initial_codes(text)
    return letters.tobytes().decode("ascii")


def initials_with_offsets(text: str) -> tuple[str, np.ndarray]:
    """Like :func:`initials`, plus for every letter the index of its character in ``text``.

    ``text[offsets[i]]`` is the character whose initial is ``letters[i]``; a passage
    ``letters[a:b]`` covers ``text[offsets[a]:offsets[b - 1] + 1]``.
    """
    letters, offsets = initial_codes(text)
    return letters.tobytes().decode("ascii"), offsets
