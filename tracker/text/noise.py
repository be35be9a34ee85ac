"""What of a suspect the engine reads: the scripts it can read, and noise at a fixed
rhythm taken out before fingerprinting (issue #26).

**Scripts.** The engines and the verifier read Chinese and English text (the units of
``tracker.text.units``: pinyin initials of Han characters and of pinyin syllables
written for them, two for a word of Latin letters). A page in a script Yinji cannot
read (Russian, Japanese kana, Korean, Arabic ...) cannot match, and must not say "no
match" silently. ``script_warning`` names such a document: nothing read at all
(``no-chinese``), a text without Latin words of which fewer units are read than a copy
needs (``few-chinese``: under the library's minimum copied length), or mostly words of
scripts the engine does not read (``mostly-other``: more such words than units read).
An English text is in a script Yinji reads: a short one gets no warning. What an engine
reads is declared on it (``Engine.scripts`` and ``Engine.readable``).

**Noise at a fixed rhythm.** Pirate pages break up copied text with a short string
inserted again and again at a fixed rhythm: a 4-character Han watermark every 10 or
20 characters, or a junk character after every character. Inserted every 10
characters, a 4-character mark leaves no 8-initial seed of the copy whole: the copy
cannot be found. ``find_noise`` recognises such a string inside the suspect by its
repetition: a string of at least two Han characters, or a single one repeated every
2-3 characters, whose occurrences follow each other at a regular distance
(``NoiseRule``: at least ``min_repeats`` of them in a chain, each one period, within
``tolerance``, from the next; the period at most ``max_period``). Every occurrence in
such a chain is taken out (an occurrence away from the chain stays: it may be a word
of the text). ``find_lines`` finds lines repeated on lines of their own (ad lines
after every few sentences, which have no rhythm).

Real text repeats strings too (a catalogue, a list of 仲裁委员会、, a law's repeated
clause lines: 50 of 9,835 suspects cut from the shared corpus, ``bench/bench_noise.py``),
so the check reads the suspect both as it is and without its noise, keeping per mother
the better alignment (``Matcher.find``). ``Reading`` keeps which characters remain, so
passages found in the cleaned text are mapped back into the original
(``Reading.passages``), split at removed lines: the evidence points into the suspect
as it was stored, and states only copied text (docs/FINGERPRINTS.md, "Noise and
inserted lines").

A leaf module (the standard library, numpy, cydifflib: difflib compiled, the same opcodes;
``tracker.common.records``, ``tracker.text.textform``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from cydifflib import SequenceMatcher

from tracker.common.records import JSONObject, Passage, Region
from tracker.text.textform import reading_order
from tracker.text.units import read_units

# -- scripts --------------------------------------------------------------------------
#: Han characters (CJK Unified Ideographs, extension A, compatibility, extensions B-).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HAN_RE = re.compile(f"[{_HAN}]")
#: Latin letters (ASCII, Latin-1 and the Latin Extended blocks, fullwidth).
_LATIN = "A-Za-z\u00c0-\u024f\u1e00-\u1eff\uff21-\uff3a\uff41-\uff5a"
#: A word of letters of the scripts the engines do not read (Cyrillic, kana, Hangul ...).
_OTHER_WORD = re.compile(f"(?:(?![{_HAN}{_LATIN}])[^\\W\\d_])+")
_LATIN_WORD = re.compile(f"[{_LATIN}]")


@dataclass(frozen=True)
class ScriptWarning:
    """A checked document the engine reads little or nothing of.

    ``code``: ``no-chinese``, ``few-chinese`` or ``mostly-other``; ``name``: the
    document; ``read``: characters the engine reads (Han characters and pinyin
    syllables); ``needed``: the minimum copied length; ``other_words``: words in
    scripts the engine does not read; ``engine`` and the ``scripts`` it reads."""

    code: str
    name: str
    read: int
    needed: int
    other_words: int
    engine: str
    scripts: tuple[str, ...]

    @property
    def message(self) -> str:
        reads = "/".join(self.scripts)
        if self.code == "no-chinese":
            return (
                f"{self.name}: no Chinese text: engine {self.engine!r} reads {reads} "
                "text only, so nothing in this document can match"
            )
        if self.code == "few-chinese":
            return (
                f"{self.name}: only {self.read} Chinese characters, fewer than the minimum "
                f"copied length of {self.needed}: no copy can be reported in it"
            )
        return (
            f"{self.name}: mostly text in other scripts ({self.other_words} words engine "
            f"{self.engine!r} does not read, {self.read} Chinese characters): only its "
            "Chinese text was checked"
        )

    def to_json(self) -> JSONObject:
        return {
            "code": self.code,
            "read": self.read,
            "needed": self.needed,
            "other_words": self.other_words,
            "engine": self.engine,
            "scripts": list(self.scripts),
            "message": self.message,
        }


def script_warning(
    text: str,
    name: str,
    *,
    read: int,
    needed: int,
    engine: str,
    scripts: Sequence[str] = ("Han",),
) -> ScriptWarning | None:
    """The warning for a document of which the engine reads ``read`` characters (see
    the module), or None when it reads enough of it."""
    other = 0
    # Words are at least a character each: with more than half the characters read,
    # fewer words than that can be other (the usual case, not counted).
    if read == 0 or (read >= needed and 2 * read <= len(text)):
        other = sum(1 for _ in _OTHER_WORD.finditer(text))
    code = None
    if read == 0:
        code = "no-chinese"
    elif read < needed:
        # A short English text is no script Yinji cannot read: no warning.
        code = None if _LATIN_WORD.search(text) and _reads_latin(text) else "few-chinese"
    elif other > read:
        code = "mostly-other"
    if code is None:
        return None
    return ScriptWarning(code, name, read, needed, other, engine, tuple(scripts))


def _reads_latin(text: str) -> bool:
    """Whether any of ``text``'s units is an English word."""
    return read_units(text).words > 0


# -- noise at a fixed rhythm -----------------------------------------------------------
@dataclass(frozen=True)
class NoiseRule:
    """When a repeated string is noise (see the module)."""

    min_repeats: int = 8  # occurrences in one chain
    # Characters from one occurrence to the next (the most common distance): a mark
    # every 50 characters or more leaves seeds enough to find the copy without this.
    max_period: int = 40
    tolerance: int = 1  # a regular distance: the period within this many characters
    min_regular: float = 0.6  # share of a character's occurrences in the rhythm
    max_length: int = 16  # longest noise string, characters
    single_period: int = 3  # a single readable character is noise only this dense
    sample: int = 100_000  # characters read to find the strings (every occurrence is removed)
    # A line (2-``max_line`` characters, two Han characters at least) that stands
    # ``min_lines`` times or more on a line of its own: an ad or boilerplate line.
    min_lines: int = 3
    max_line: int = 40
    block: int = 256  # the cheap test first (``_may_have_noise``): stretches this long ...
    block_share: float = 0.08  # ... with this share of characters repeated a period on


@dataclass(frozen=True)
class Noise:
    """A string found at a fixed rhythm: ``text``, removed ``count`` times, one
    occurrence every ``period`` characters (median)."""

    text: str
    count: int
    period: int
    line: bool = False  # a whole line repeated (no rhythm: ``period`` 0)

    def to_json(self) -> JSONObject:
        return {"text": self.text, "count": self.count, "period": self.period, "line": self.line}


def _readable(ch: str) -> bool:
    """A Han character: what noise must hold to matter (other characters, and Latin
    letters away from Han text, are not read)."""
    return bool(_HAN_RE.match(ch))


def _regular(positions: np.ndarray, span: int, rule: NoiseRule) -> tuple[np.ndarray, int]:
    """The occurrences at ``positions`` (ascending, in a text of ``span`` characters)
    that follow a fixed rhythm, and its period: the most common distance between
    neighbours; an occurrence belongs when another stands one period (within the
    tolerance) after or before it. The text's own occurrences of the same character
    may stand between. Empty when too few belong, or no more than a character this
    frequent would by chance."""
    none = positions[:0]
    if positions.size < rule.min_repeats:
        return none, 0
    gaps = np.diff(positions)
    small = gaps[gaps <= rule.max_period]
    if small.size < rule.min_repeats - 1:
        return none, 0
    counts = np.bincount(small)
    counts[:2] = 0  # a character doubled inside the mark (水水人人) is not its rhythm
    period = int(np.argmax(counts))
    if period < 2:
        return none, 0
    tol = rule.tolerance if period > rule.single_period else 0
    after = np.searchsorted(positions, positions + period - tol, side="left")
    has_next = (after < positions.size) & (
        positions[np.minimum(after, positions.size - 1)] <= positions + period + tol
    )
    has_prev = np.zeros_like(has_next)
    has_prev[1:] = has_next[:-1] & (
        np.abs(positions[1:] - positions[:-1] - period) <= tol
    )  # approximately: the previous occurrence points here
    member = has_next | has_prev
    share = float(member.mean())
    chance = min(1.0, (2 * tol + 1) * positions.size / max(1, span))
    # Nearly every occurrence in the rhythm is a rhythm even where the character is
    # dense enough to stand there by chance (a junk character after every character).
    by_chance = share < 2.5 * chance and share < 0.9
    if member.sum() < rule.min_repeats or share < rule.min_regular or by_chance or period < 2:
        return none, period
    return positions[member], period


def _grow(text: str, positions: np.ndarray, rule: NoiseRule) -> tuple[int, int]:
    """How far the string at ``positions`` (one character each) extends left and right:
    while at least ``min_regular`` of the occurrences agree on the next character."""
    n = len(text)
    left = right = 0
    while left + right + 1 < rule.max_length:
        grown = False
        for side in (1, -1):
            offset = (right + 1) if side == 1 else -(left + 1)
            chars = [text[p + offset] for p in positions.tolist() if 0 <= p + offset < n]
            if not chars:
                continue
            best = max(set(chars), key=chars.count)
            if best.isspace() or chars.count(best) < rule.min_regular * positions.size:
                continue
            if side == 1:
                right += 1
            else:
                left += 1
            grown = True
        if not grown:
            break
    return left, right


def _chains(starts: list[int], length: int, period: int, rule: NoiseRule) -> list[int]:
    """The occurrences (non-overlapping ``starts`` of a string of ``length``) that stand
    in a chain: one period (within the tolerance) from the next, the chain at least
    ``min_repeats`` long; at either end of a chain one occurrence nearer than a period
    (the text before the first mark, or after the last, was shorter) belongs too."""
    tol = rule.tolerance if period > rule.single_period else 0
    kept: list[int] = []
    i, n = 0, len(starts)
    while i < n:
        j = i
        while j + 1 < n and abs(starts[j + 1] - starts[j] - period) <= tol:
            j += 1
        if j - i + 1 >= rule.min_repeats:
            lo = i - 1 if i > 0 and length <= starts[i] - starts[i - 1] < period else i
            hi = j + 1 if j + 1 < n and length <= starts[j + 1] - starts[j] < period else j
            if kept and kept[-1] >= starts[lo]:
                lo += 1  # already kept as the end of the chain before
            kept.extend(starts[lo : hi + 1])
        i = j + 1
    return kept


def find_noise(text: str, rule: NoiseRule | None = None) -> list[tuple[Noise, list[int]]]:
    """Strings repeated at a fixed rhythm in ``text`` (see the module), each with the
    starts of the occurrences to remove; at most three strings, the one covering the
    most characters first."""
    rule = rule or NoiseRule()
    found: list[tuple[Noise, list[int]]] = []
    work = text
    for _ in range(3):
        best = _strongest(work[: rule.sample], rule)
        if best is None:
            break
        mark, period = best
        starts, at = [], work.find(mark)
        while at >= 0:
            starts.append(at)
            at = work.find(mark, at + len(mark))
        kept = _chains(starts, len(mark), period, rule)
        if not kept:
            break
        found.append((Noise(mark, len(kept), period), kept))
        # Further strings are looked for with this one blanked (same length: the
        # starts of every string found index into ``text``).
        chars = list(work)
        for s in kept:
            chars[s : s + len(mark)] = "\x00" * len(mark)
        work = "".join(chars)
    return found


def _may_have_noise(codes: np.ndarray, rule: NoiseRule) -> bool:
    """A cheap test before ``_strongest``: some stretch of ``rule.block`` characters in
    which at least ``rule.block_share`` of the characters are Han characters equal to
    the one a fixed distance (2 to ``max_period``) after them. A 4-character mark
    every 20 characters makes 4 of 24 equal (17 %), a junk character after every
    character 50 %; ordinary Chinese text 1-2 %. One comparison of every character
    with the next ``max_period`` (numpy), in blocks."""
    n = codes.size
    reach = min(rule.max_period, n - 1)
    if reach < 2:
        return False
    windows = np.lib.stride_tricks.sliding_window_view(codes, reach + 1)
    first = windows[:, :1]
    han = (first >= 0x3400) & (first < 0x32000) & ~((first >= 0x4DC0) & (first < 0x4E00))
    same = (windows[:, 2:] == first) & han  # rows: positions; columns: periods 2..reach
    rows = same.shape[0]
    if rows <= rule.block:
        counts = same.sum(axis=0)
        return bool(((counts >= rule.min_repeats) & (counts >= rule.block_share * rows)).any())
    k = rows // rule.block
    sums = same[: k * rule.block].view(np.uint8).reshape(k, rule.block, -1)
    sums = sums.sum(axis=1, dtype=np.int32)
    if rows > k * rule.block:  # the rest, as the last full block
        tail = same[rows - rule.block :].sum(axis=0, dtype=np.int32)
        sums = np.vstack([sums, tail])
    return bool(int(sums.max()) >= rule.block_share * rule.block)


def _strongest(text: str, rule: NoiseRule) -> tuple[str, int] | None:
    """The noise string covering the most characters in ``text`` and its period."""
    if len(text) < rule.min_repeats * 2:
        return None
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if not _may_have_noise(codes, rule):
        return None
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [codes.size]])
    best: tuple[int, str, int] | None = None
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        if b - a < rule.min_repeats:
            continue
        ch = chr(int(sorted_codes[a]))
        if not _readable(ch):
            continue
        positions, period = _regular(order[a:b], len(text), rule)  # stable: ascending
        if not positions.size:
            continue
        # One occurrence per mark: the first of a character the mark holds twice.
        first = np.concatenate([[True], np.diff(positions) >= period - rule.tolerance])
        positions = positions[first]
        if positions.size >= 2:
            period = int(np.argmax(np.bincount(np.diff(positions))))
        left, right = _grow(text, positions, rule)
        mark = text[max(0, int(positions[0]) - left) : int(positions[0]) + right + 1]
        if sum(map(_readable, mark)) < 2 and period > rule.single_period:
            continue  # one character at a verse's rhythm (兮) is the text's own
        if "\x00" in mark:
            continue
        covered = len(mark) * positions.size
        if best is None or covered > best[0]:
            best = (covered, mark, period)
    return (best[1], best[2]) if best else None


@dataclass
class Reading:
    """A suspect as the engine reads it: ``original`` in display order (what the
    passages index into), ``text`` (noise taken out), ``kept`` (for each character of
    ``text``, its offset in ``original``; None: the same text), the ``noise`` removed
    and the ``warnings``."""

    original: str
    text: str
    kept: np.ndarray | None = None
    noise: list[Noise] = field(default_factory=list)
    warnings: list[ScriptWarning] = field(default_factory=list)
    read: int | None = None  # characters of ``original`` the engine reads (when counted)
    #: Removed lines (spans of ``original``): a passage over one is split there.
    cuts: list[tuple[int, int]] = field(default_factory=list)

    def offset(self, pos: int, *, end: bool = False) -> int:
        """Where offset ``pos`` of ``text`` lies in ``original`` (``end``: an exclusive
        end offset, mapped after the character before it)."""
        if self.kept is None:
            return pos
        if end:
            return int(self.kept[pos - 1]) + 1 if pos > 0 else 0
        return int(self.kept[pos]) if pos < self.kept.size else len(self.original)

    def passage(self, p: Passage) -> Passage:
        """A passage found in ``text`` with its suspect offsets in ``original``."""
        if self.kept is None:
            return p
        out = replace(
            p,
            suspect_start=self.offset(p.suspect_start),
            suspect_end=self.offset(p.suspect_end, end=True),
        )
        if p.segments:
            out.segments = [
                replace(
                    g,
                    suspect_start=self.offset(g.suspect_start),
                    suspect_end=self.offset(g.suspect_end, end=True),
                )
                for g in p.segments
            ]
        return out

    def passages(self, passages: Iterable[Passage], mother: str = "") -> list[Passage]:
        """Passages found in ``text``, in ``original``: mapped back, and split at the
        removed lines (``cuts``) inside them, so that a passage states only copied
        text. The mother offsets of a piece are where its first and last characters
        stand in ``mother`` near where the passage puts them (``_locate``); without
        the mother text, or when they are not there (an edited copy), counted from
        the passage's start in the cleaned text."""
        out = []
        for p in passages:
            back = self.passage(p)
            inside = [
                (a, b) for a, b in self.cuts if back.suspect_start < a and b < back.suspect_end
            ]
            if not inside or back.segments:
                out.append(back)
                continue
            m_len, s_len = p.mother_end - p.mother_start, p.suspect_end - p.suspect_start
            start = back.suspect_start
            for a, b in [*inside, (back.suspect_end, back.suspect_end)]:
                while start < a and self.original[start].isspace():
                    start += 1
                while a > start and self.original[a - 1].isspace():
                    a -= 1
                if a > start:
                    lo = self._cleaned(start) - p.suspect_start
                    hi = self._cleaned(a) - p.suspect_start
                    m_lo = p.mother_start + round(lo * m_len / max(1, s_len))
                    m_hi = p.mother_start + round(hi * m_len / max(1, s_len))
                    if mother:
                        m_lo, m_hi = _locate(self.original[start:a], mother, m_lo, m_hi)
                    out.append(
                        replace(
                            back,
                            suspect_start=start,
                            suspect_end=a,
                            mother_start=m_lo,
                            mother_end=m_hi,
                        )
                    )
                start = b
        return out

    def _cleaned(self, pos: int) -> int:
        """Offset in ``text`` of the first kept character at or after ``pos`` of
        ``original``."""
        if self.kept is None:
            return pos
        return int(np.searchsorted(self.kept, pos))


def _locate(piece: str, mother: str, m_lo: int, m_hi: int, near: int = 40) -> tuple[int, int]:
    """Where ``piece`` starts and ends in ``mother`` within ``near`` characters of
    ``m_lo`` and ``m_hi``: its first and last (up to 8) characters found there, else
    the estimates."""
    edge = min(8, len(piece))
    head, tail = piece[:edge], piece[-edge:]
    lo_from = max(0, m_lo - near)
    at = mother.find(head, lo_from, m_lo + near + edge)
    start = at if at >= 0 else m_lo
    at = mother.rfind(tail, max(start, m_hi - near - edge), m_hi + near)
    end = at + edge if at >= 0 else m_hi
    return start, max(start, end)


_LINE = re.compile(r"[^\n]+")


def find_lines(text: str, rule: NoiseRule | None = None) -> list[tuple[Noise, list[int]]]:
    """Lines repeated on lines of their own (``NoiseRule.min_lines``), each with the
    starts of its occurrences: the ad and boilerplate lines of a pirate page. The
    text's own repeated lines (a refrain) are found too; the check reads the text with
    and without them (``Matcher.find``), so nothing is lost by that."""
    rule = rule or NoiseRule()
    if text.count("\n") < rule.min_lines:
        return []
    where: dict[str, list[int]] = {}
    for m in _LINE.finditer(text):
        line = m.group().strip()
        if 2 <= len(line) <= rule.max_line and len(_HAN_RE.findall(line)) >= 2:
            where.setdefault(line, []).append(m.start() + m.group().index(line))
    return [
        (Noise(line, len(starts), 0, line=True), starts)
        for line, starts in where.items()
        if len(starts) >= rule.min_lines
    ]


def read_suspect(text: str, rule: NoiseRule | None = None) -> Reading:
    """``text`` in display order (``tracker.text.textform.reading_order``; a text already in
    display order, as every stored one is, stays as it is) without its noise: strings
    at a fixed rhythm (``find_noise``) and repeated lines (``find_lines``)."""
    shown = reading_order(text)
    found = find_noise(shown, rule) + find_lines(shown, rule)
    if not found:
        return Reading(shown, shown)
    keep = np.ones(len(shown), dtype=bool)
    cuts: list[tuple[int, int]] = []
    for noise, starts in found:
        for s in starts:
            keep[s : s + len(noise.text)] = False
            if noise.line:
                cuts.append((s, s + len(noise.text)))
    kept = np.flatnonzero(keep)
    codes = np.frombuffer(shown.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    cleaned = codes[kept].tobytes().decode("utf-32-le", "surrogatepass")
    return Reading(shown, cleaned, kept, [n for n, _ in found], cuts=sorted(cuts))


# -- regions: passages as a person reads them (issue #39) ------------------------------
@dataclass(frozen=True)
class RegionRule:
    """When consecutive passages of one match make one region (``regions``)."""

    # Characters the suspect may hold between two passages of one region: an ad or
    # watermark line (at most ``NoiseRule.max_line``) with its line breaks, chapter
    # boilerplate, a sentence the alignment did not keep.
    max_suspect_gap: int = 300
    # Characters of the mother the copy may skip between them ...
    max_mother_gap: int = 300
    # ... and may step back, as long as the next one ends further on: a passage that
    # starts with words its mother also holds just before (门上的人道 twice in three
    # lines) may be placed from their first occurrence (seen 24-29 characters back).
    max_overlap: int = 60
    # Inserted text: characters the suspect's gap holds beyond the mother's at that
    # place (less whitespace) for it to be an excluded span, not an edit.
    min_inserted: int = 3


def regions(
    passages: Sequence[Passage],
    suspect: str,
    mother: str,
    initial_offsets: np.ndarray,
    rule: RegionRule | None = None,
) -> list[Region]:
    """The regions of a match (``tracker.common.records.Region``): passages copied in order
    that follow each other in both texts, with at most ``max_suspect_gap`` characters
    of the suspect and ``max_mother_gap`` of the mother between them, are one region;
    what the suspect holds in such a gap that the mother does not hold there (an ad
    line, a watermark line: ``_inserted``) is listed as excluded. A reordered passage
    (with segments) is a region of its own. ``initial_offsets``: the character offset
    of each pinyin initial of ``suspect`` (``tracker.text.pinyin.initial_codes``), on which
    a region's similarity is counted."""
    rule = rule or RegionRule()
    if len(passages) == 1:  # the usual case: the passage is its region
        (p,) = passages
        return [Region(p.suspect_start, p.suspect_end, p.mother_start, p.mother_end, p.similarity)]
    groups: list[list[Passage]] = []
    for p in sorted(passages, key=lambda x: (x.suspect_start, x.suspect_end)):
        last = groups[-1][-1] if groups else None
        if (
            last is not None
            and not p.segments
            and not last.segments
            and 0 <= p.suspect_start - last.suspect_end <= rule.max_suspect_gap
            and -rule.max_overlap <= p.mother_start - last.mother_end <= rule.max_mother_gap
            and p.mother_end > last.mother_end
        ):
            groups[-1].append(p)
        else:
            groups.append([p])

    built: list[tuple[list[Passage], list[tuple[int, int]], int, int]] = []
    spans: list[tuple[int, int]] = []  # every stretch whose initials are counted
    for group in groups:
        excluded: list[tuple[int, int]] = []
        for prev, nxt in itertools.pairwise(group):
            excluded += _inserted(
                suspect,
                prev.suspect_end,
                nxt.suspect_start,
                mother,
                prev.mother_end,
                nxt.mother_start,
                rule,
            )
        s_start, s_end = group[0].suspect_start, max(p.suspect_end for p in group)
        built.append((group, excluded, s_start, s_end))
        spans += [(s_start, s_end), *excluded, *((p.suspect_start, p.suspect_end) for p in group)]
    # The initials of every stretch at once (one searchsorted for all, not one a stretch).
    edges = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    ends = np.searchsorted(initial_offsets, edges[:, 1])
    counts = iter((ends - np.searchsorted(initial_offsets, edges[:, 0])).tolist())
    out = []
    for group, excluded, s_start, s_end in built:
        own = next(counts) - sum(next(counts) for _ in excluded)
        covered = sum(p.similarity * next(counts) for p in group)
        similarity = min(1.0, covered / own) if own > 0 else group[0].similarity
        out.append(
            Region(
                s_start,
                s_end,
                min(p.mother_start for p in group),
                max(p.mother_end for p in group),
                round(similarity, 4),
                excluded,
            )
        )
    return out


def _inserted(
    suspect: str, start: int, end: int, mother: str, m_start: int, m_end: int, rule: RegionRule
) -> list[tuple[int, int]]:
    """The stretches of ``suspect[start:end]`` (the gap between two passages of one
    region) that the mother's text at that place (``mother[m_start:m_end]``) does not
    hold: the opcodes of difflib (the gaps are short) that delete or replace at least
    ``min_inserted`` more characters than they take from the mother, without the
    whitespace around them. Stretches apart by one or two characters are one. What the
    gap starts with as the mother goes on after ``m_start`` (the full stop a passage of
    initials leaves out), or ends with as the mother stands before ``m_end``, is the
    mother's, also where the next passage was placed early (``m_end <= m_start``)."""
    while start < end and m_start < len(mother) and suspect[start] == mother[m_start]:
        start, m_start = start + 1, m_start + 1
    while end > start and m_end > 0 and suspect[end - 1] == mother[m_end - 1]:
        end, m_end = end - 1, m_end - 1
    gap = suspect[start:end]
    mother_gap = mother[m_start:m_end] if m_end > m_start else ""
    if not gap.strip():
        return []
    if mother_gap:
        ops = SequenceMatcher(None, gap, mother_gap, autojunk=False).get_opcodes()
    else:  # the usual gap (an ad line where the work goes straight on): all inserted
        ops = [("delete", 0, len(gap), 0, 0)]
    spans: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag not in ("delete", "replace"):  # suspect text the mother lacks there
            continue
        a, b = i1, i2
        while a < b and gap[a].isspace():
            a += 1
        while b > a and gap[b - 1].isspace():
            b -= 1
        if (b - a) - len(mother_gap[j1:j2].strip()) < rule.min_inserted:
            continue
        if spans and a - spans[-1][1] <= 2:
            spans[-1] = (spans[-1][0], b)
        else:
            spans.append((a, b))
    return [(start + a, start + b) for a, b in spans]
