"""Evaluation harness: recall, precision and PAN passage measures per transformation.

Usage: python bench/eval.py [--data ../shared/data] [--cases 60] [--engine daguan]
       [--set ENGINE.OPTION=VALUE ...] [--detail] [--out docs/EVALUATION.md]
       python bench/eval.py --books [--cases 12]

``--engine all`` (or a comma-separated list) runs every engine on the SAME suspects, each
in a fresh library, and prints one comparison table: per transformation and engine the
recall, pair precision and passage F1, then negatives flagged, median check time and
ingest time per engine (docs/ENGINES.md). ``--set`` passes engine options (as
``yinji`` keeps them, in the store's meta) for parameter sweeps.

"Candidate recall" (single-engine table) is the fraction of cases whose true mother is
among the candidates the engine hands the verifier: the engine's own recall, before the
alignment that every engine shares.

Mother corpus: both novels' simplified chapters, Lu Xun and the simplified Wikipedia
paragraphs. Suspects are built from the shared corpus as its README describes, with a
known answer (true mother and, where it is exact, the copied spans in both texts):

- ``trad-chapter``: a whole chapter of the machine-converted traditional edition;
- ``excerpt-300`` / ``excerpt-150``: an excerpt inside unrelated host text;
- ``homophone``: 500 characters with homophones (same pinyin) substituted;
- ``s2t``: 500 characters converted to traditional characters (OpenCC);
- ``edits-5pct`` / ``excerpt-150-edits``: 5 % of characters replaced at random;
- ``watermark``: pirate-site watermarks inserted and punctuation stripped (the marks are
  not true copied text: ``s_exclude``);
- ``reordered``: the sentences of a 600-character excerpt shuffled;
- ``web-copy`` / ``alt-edition`` / ``trad-edition``: 1,500-character slices of the
  independent editions, the truth being the chapters the slice overlaps;
- negatives: slices of three unrelated novels, laws and traditional Wikipedia.

An edition slice whose text the library does not hold is labelled "source not in
library" and left out of recall (``source_share``: under ``SOURCE_SHARE`` of its character
4-grams, in simplified form, are in its truth chapters; the library's ``hongloumeng-029``
holds only the first 4,494 characters of chapter 29). The slices are sampled as before;
the output names each such case.

``--evasions`` adds the kinds of issue #26 on their own random stream (the cases above
stay as they were): ``short-100-in-3000``, ``edits-10pct-indel-3pct``, ``ads-dense`` (an ad
line after every 1-3 sentences), ``pinyin-10pct`` / ``pinyin-20pct`` (characters written as
toneless syllables), ``han-mark-every-10`` / ``-20`` (a 4-character Han watermark) and
``bidi-reversed`` (text stored reversed behind U+202E), then on a stream of their own the
short copies ``short-50-in-3000`` and ``news-reprint`` and the negatives ``neg-wiki-s2t``
(``build_short_cases``). The ad lines of ``ads-dense`` are not true copied text: a passage
over them loses passage precision (``s_exclude``).

``--laws N`` (default 400) adds the templated-text suite of ``bench/eval_laws.py``
(issue #13): N national laws join the library; unrelated laws are negatives
(``neg-law-law``) and hosts of planted excerpts of library laws (verbatim, homophones,
traditional, sentence-shuffled), of novel chapters and of shuffled verse-heavy chapter
windows. The old cases stay as they were (same seed, same suspects); the laws of
``neg-laws`` and their relatives never enter the library. ``--laws 0`` is the old
evaluation exactly.

Every reported pair is labelled true (a case's truth), duplicate (the corpus really
holds the passage elsewhere: ``is_real_copy``; for a law only a relative of the true
law) or false. ``--features FILE`` writes one JSON line per case and per pair, with the
features of every passage (``eval_laws.passage_features``), for
``bench/eval_diagnose.py``; ``--false-pairs FILE`` writes every false pair with its
passages as markdown. ``--align OPTION=VALUE`` / ``--policy OPTION=VALUE`` verify with
other ``AlignParams`` / ``MatchPolicy`` values (sweeps, without changing tracker code).

``--books`` runs only the book suite of ``bench/eval_books.py`` (issue #36): the two
novels ingested as books from whole-book TXTs through the book path, then pages of the
independent editions (slices, whole chapters, a chapter split over two pages) checked;
the share whose top match names the right book and chapter (``chapter_index``), and
every miss with its reason.

Passage measures follow PAN text alignment (character level, both documents):
precision = |detected ∩ true| / |detected|, recall = |detected ∩ true| / |true|,
micro-averaged over the cases of a transformation.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from eval_laws import (
    OWN_LEVELS,
    GramTable,
    LawSuite,
    WindowTable,
    build_law_cases,
    is_law,
    passage_features,
)
from eval_reprints import build_reprint_cases, build_reworded_cases

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's tracker, installed or not (as bench_scale)
NUMERALS = "一二三四五六七八九十百零〇○"


@dataclass
class Case:
    kind: str
    text: str
    truth: set[str]  # mother ids that are right answers
    s_span: tuple[int, int] | None = None  # copied region in the suspect
    m_span: tuple[int, int] | None = None  # source region in the (first) true mother
    negative: bool = False
    extra: dict = field(default_factory=dict)


def load_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def chinese_number(s: str) -> int:
    """一百二十 -> 120, 十八 -> 18, 一百零五 -> 105, and positional 一零五 -> 105."""
    digits = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "○": 0}
    if "十" not in s and "百" not in s:
        return int("".join(str(digits[c]) for c in s)) if s else 0
    total, current = 0, 0
    for ch in s:
        if ch in digits:
            current = digits[ch]
        elif ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
    return total + current


def split_chapters(text: str) -> list[tuple[int, int]]:
    """Chapter spans from 第N回 headings: the first heading of chapter 1, 2, 3 ... in
    order, so a heading quoted inside a chapter ("见第五回") does not split it."""
    heads: list[int] = []
    for m in re.finditer(f"第([{NUMERALS}]+)回", text):
        if chinese_number(m.group(1)) == len(heads) + 1:
            heads.append(m.start())
    return [(a, b) for a, b in zip(heads, [*heads[1:], len(text)], strict=True)]


def homophone_map(chars: str) -> dict[str, str]:
    """A different character with the same toneless pinyin, among characters seen."""
    from pypinyin import Style, lazy_pinyin

    by_sound: dict[str, list[str]] = defaultdict(list)
    for ch in sorted(set(chars)):
        if "\u4e00" <= ch <= "\u9fff":
            by_sound[lazy_pinyin(ch, style=Style.NORMAL)[0]].append(ch)
    out = {}
    for group in by_sound.values():
        for i, ch in enumerate(group):
            if len(group) > 1:
                out[ch] = group[(i + 1) % len(group)]
    return out


def build_cases(data: Path, n: int, seed: int = 7) -> tuple[list[dict], list[Case]]:
    import opencc

    rng = random.Random(seed)
    hlm = load_jsonl(data / "novels/hongloumeng.chapters.jsonl")
    sgy = load_jsonl(data / "novels/sanguoyanyi.chapters.jsonl")
    trad = {d["id"]: d for d in load_jsonl(data / "novels/hongloumeng.trad.chapters.jsonl")}
    trad.update({d["id"]: d for d in load_jsonl(data / "novels/sanguoyanyi.trad.chapters.jsonl")})
    mothers = hlm + sgy + load_jsonl(data / "luxun/luxun_pieces.jsonl")
    mothers += load_jsonl(data / "wiki/cmrc2018_paragraphs.simplified.jsonl")
    chapters = hlm + sgy
    others = [p.read_text(encoding="utf-8") for p in sorted((data / "novels/other").glob("*.txt"))]
    host_text = "".join(others)
    hmap = homophone_map("".join(d["text"] for d in chapters[:40]))
    s2t = opencc.OpenCC("s2t")
    t2s = opencc.OpenCC("t2s")
    pool = "天地人和春夏秋冬东南西北风花雪月山水云雨金木火土日星辰江河湖海"

    def host(length: int) -> str:
        a = rng.randrange(0, len(host_text) - length)
        return host_text[a : a + length]

    def excerpt(length: int) -> tuple[dict, int, str]:
        while True:
            d = rng.choice(chapters)
            if len(d["text"]) > length + 200:
                a = rng.randrange(100, len(d["text"]) - length - 50)
                return d, a, d["text"][a : a + length]

    cases: list[Case] = []
    for _ in range(n):
        d = rng.choice(chapters)
        tid = d["id"].replace("-", "-trad-", 1)
        cases.append(Case("trad-chapter", trad[tid]["text"], {d["id"]}))
    for kind, length in (("excerpt-300", 300), ("excerpt-150", 150)):
        for _ in range(n):
            d, a, ex = excerpt(length)
            h = host(1500)
            cut = rng.randrange(200, 1300)
            text = h[:cut] + ex + h[cut:]
            cases.append(Case(kind, text, {d["id"]}, (cut, cut + length), (a, a + length)))
    for _ in range(n):
        d, a, ex = excerpt(500)
        cases.append(
            Case(
                "homophone", "".join(hmap.get(c, c) for c in ex), {d["id"]}, (0, 500), (a, a + 500)
            )
        )
    for _ in range(n):
        d, a, ex = excerpt(500)
        cases.append(Case("s2t", s2t.convert(ex), {d["id"]}, (0, 500), (a, a + 500)))
    for kind, length in (("edits-5pct", 500), ("excerpt-150-edits", 150)):
        for _ in range(n):
            d, a, ex = excerpt(length)
            edited = "".join(
                rng.choice(pool) if "\u4e00" <= c <= "\u9fff" and rng.random() < 0.05 else c
                for c in ex
            )
            h = host(1000)
            cases.append(
                Case(
                    kind,
                    h[:500] + edited + h[500:],
                    {d["id"]},
                    (500, 500 + length),
                    (a, a + length),
                )
            )
    marks = [
        "本书首发笔趣阁www.biquge.example",
        "手机用户请浏览m.xs.example阅读",
        "天才一秒记住本站地址",
        "最新章节请到起点中文网",
        "【求月票】",
    ]
    for _ in range(n):
        d, a, ex = excerpt(800)
        parts = re.split(r"[，。！？；：、“”‘’\s]", ex)
        text, inserted = "", []
        for i, part in enumerate(parts):
            text += part
            if i % 6 == 5:
                mark = rng.choice(marks)
                inserted.append((len(text), len(text) + len(mark)))
                text += mark
        # The marks are not copied text (s_exclude, as the ad lines of ads-dense).
        cases.append(
            Case(
                "watermark",
                text,
                {d["id"]},
                (0, len(text)),
                (a, a + 800),
                extra={"s_exclude": inserted},
            )
        )
    for _ in range(n):
        d, a, ex = excerpt(600)
        sents = [s for s in re.split(r"(?<=[。！？])", ex) if s]
        rng.shuffle(sents)
        cases.append(Case("reordered", "".join(sents), {d["id"]}, (0, 600), (a, a + 600)))

    # Independent editions: slices mapped to chapters through their 第N回 headings and
    # the chapter numbers in the mothers' titles (红楼梦 has two mothers for chapter 103).
    def ids_by_number(docs: list[dict]) -> dict[int, set[str]]:
        out: dict[int, set[str]] = defaultdict(set)
        for d in docs:
            m = re.search(f"第([{NUMERALS}]+)回", d.get("title", ""))
            if m:
                out[chinese_number(m.group(1))].add(d["id"])
        return out

    editions = [
        ("web-copy", data / "novels/sanguoyanyi.web-copy.txt", ids_by_number(sgy)),
        ("alt-edition", data / "novels/sanguoyanyi.alt-edition.txt", ids_by_number(sgy)),
        ("alt-edition", data / "novels/hongloumeng.alt-edition.txt", ids_by_number(hlm)),
        ("trad-edition", data / "novels/sanguoyanyi.trad-edition.txt", ids_by_number(sgy)),
        ("trad-edition", data / "novels/hongloumeng.trad-edition.txt", ids_by_number(hlm)),
    ]
    texts = {d["id"]: d["text"] for d in chapters}
    for kind, path, by_number in editions:
        text = path.read_text(encoding="utf-8")
        bounds = split_chapters(text)
        if len(bounds) < len(by_number):
            # The headings stop early (the 三国演义 Gutenberg scrape lost the zeros of
            # 第一○○回): the last found chapter's end is unknown, so it is left out.
            print(
                f"{path.name}: chapters 1-{len(bounds) - 1} of {len(by_number)} used",
                file=sys.stderr,
            )
            bounds = bounds[:-1]
        end = bounds[-1][1]
        for _ in range(n // 2):
            a = rng.randrange(bounds[0][0], end - 1500)
            truth = {
                mid
                for i, (s, e) in enumerate(bounds)
                if s < a + 1500 and e > a
                for mid in by_number[i + 1]
            }
            piece = text[a : a + 1500]
            share = source_share(t2s.convert(piece), [texts[t] for t in truth])
            extra = {"source_share": round(share, 3)}
            if share < SOURCE_SHARE:
                extra["source_missing"] = True
            cases.append(Case(kind, piece, truth, extra=extra))
    # Negatives.
    laws = load_jsonl(data / "laws/laws_national.jsonl")
    drcd = load_jsonl(data / "wiki/drcd_paragraphs.traditional.jsonl")
    for _ in range(n):
        cases.append(Case("neg-novels", host(2000), set(), negative=True))
    for d in rng.sample(laws, n):
        cases.append(
            Case("neg-laws", d["text"][:3000], set(), negative=True, extra={"id": d["id"]})
        )
    for d in rng.sample(drcd, n):
        cases.append(Case("neg-wiki-trad", d["text"], set(), negative=True))
    return mothers, cases


def build_evasion_cases(data: Path, n: int, seed: int = 26) -> list[Case]:
    """The kinds of copy of issue #26 (short copies and pirate evasions), on their own
    random stream so that the default cases stay exactly as they were."""
    from pypinyin import lazy_pinyin

    rng = random.Random(seed)
    chapters = load_jsonl(data / "novels/hongloumeng.chapters.jsonl")
    chapters += load_jsonl(data / "novels/sanguoyanyi.chapters.jsonl")
    others = [p.read_text(encoding="utf-8") for p in sorted((data / "novels/other").glob("*.txt"))]
    host_text = "".join(others)
    pool = "天地人和春夏秋冬东南西北风花雪月山水云雨金木火土日星辰江河湖海"
    ads = [
        "最新章节请到笔趣阁阅读",
        "天才一秒记住本站地址",
        "手机用户请浏览阅读",
        "【求月票求推荐】",
    ]

    def host(length: int) -> str:
        a = rng.randrange(0, len(host_text) - length)
        return host_text[a : a + length]

    def excerpt(length: int) -> tuple[dict, int, str]:
        while True:
            d = rng.choice(chapters)
            if len(d["text"]) > length + 200:
                a = rng.randrange(100, len(d["text"]) - length - 50)
                return d, a, d["text"][a : a + length]

    def is_han(c: str) -> bool:
        return "\u4e00" <= c <= "\u9fff"

    cases: list[Case] = []
    for _ in range(n):  # a 100-character verbatim excerpt inside 3,000 characters
        d, a, ex = excerpt(100)
        h = host(3000)
        cut = rng.randrange(500, 2500)
        cases.append(
            Case(
                "short-100-in-3000",
                h[:cut] + ex + h[cut:],
                {d["id"]},
                (cut, cut + 100),
                (a, a + 100),
            )
        )
    for _ in range(n):  # 10% substituted characters, 3% inserted or deleted
        d, a, ex = excerpt(1000)
        out = []
        for c in ex:
            r = rng.random()
            if is_han(c) and r < 0.10:
                out.append(rng.choice(pool))
            elif r < 0.115:
                continue
            else:
                out.append(c)
                if rng.random() < 0.015:
                    out.append(rng.choice(pool))
        text = "".join(out)
        cases.append(Case("edits-10pct-indel-3pct", text, {d["id"]}, (0, len(text)), (a, a + 1000)))
    for _ in range(n):  # a pirate ad line after every 1-3 sentences
        d, a, ex = excerpt(800)
        sents = [x for x in re.split(r"(?<=[。！？])", ex) if x]
        text, gap, inserted = "", rng.randint(1, 3), []
        for i, sent in enumerate(sents, 1):
            text += sent
            if i % gap == 0:
                line = "\n" + rng.choice(ads) + "\n"
                inserted.append((len(text), len(text) + len(line)))
                text += line
        # The ad lines are not copied text: a passage over them is not true (s_exclude).
        cases.append(
            Case(
                "ads-dense",
                text,
                {d["id"]},
                (0, len(text)),
                (a, a + 800),
                extra={"s_exclude": inserted},
            )
        )
    for rate in (10, 20):  # characters written as pinyin syllables
        for _ in range(n):
            d, a, ex = excerpt(500)
            readings = lazy_pinyin(ex)
            if len(readings) != len(ex):  # lazy_pinyin groups non-Han runs: fall back
                readings = [lazy_pinyin(c)[0] if is_han(c) else c for c in ex]
            text = "".join(
                r if is_han(c) and rng.random() < rate / 100 else c
                for c, r in zip(ex, readings, strict=True)
            )
            cases.append(Case(f"pinyin-{rate}pct", text, {d["id"]}, (0, len(text)), (a, a + 500)))
    for every in (10, 20):  # a 4-character Han watermark every N characters
        for _ in range(n):
            d, a, ex = excerpt(500)
            mark = "".join(rng.choice(pool) for _ in range(4))
            text = "".join(ex[i : i + every] + mark for i in range(0, len(ex), every))
            cases.append(
                Case(f"han-mark-every-{every}", text, {d["id"]}, (0, len(text)), (a, a + 500))
            )
    for _ in range(n):  # stored reversed, shown right to left with U+202E
        d, a, ex = excerpt(500)
        # Line by line: a newline ends an override (UAX #9), so text reversed as a whole
        # shows its later lines backwards in a plain-text view. The passages index into
        # the text in display order: the excerpt.
        text = "\n".join("\u202e" + line[::-1] + "\u202c" for line in ex.split("\n"))
        cases.append(Case("bidi-reversed", text, {d["id"]}, (0, 500), (a, a + 500)))
    return cases + build_short_cases(data, n, chapters, host_text)


def han_span(text: str, start: int, han: int) -> int:
    """The end of the shortest span of ``text`` from ``start`` holding ``han`` Han
    characters (the text's end if it holds fewer)."""
    seen = 0
    for i in range(start, len(text)):
        if "\u4e00" <= text[i] <= "\u9fff":
            seen += 1
            if seen == han:
                return i + 1
    return len(text)


def build_short_cases(
    data: Path, n: int, chapters: list[dict], host_text: str, seed: int = 2026
) -> list[Case]:
    """Short copies (issue #26), on their own random stream:

    - ``short-50-in-3000``: 50 Han characters of a novel chapter, verbatim, from a
      sentence start, inside 3,000 characters of unrelated novels;
    - ``news-reprint``: two agencies' articles sharing a verbatim lead or block of 50-150
      Han characters: agency A's article is a simplified Wikipedia paragraph of the
      library (CMRC), agency B's is a traditional Wikipedia paragraph (DRCD, converted to
      simplified, on another subject, 300-1,500 characters) with A's sentences taken
      over as its lead (half the cases) or as a block after its own first sentence;
    - ``neg-wiki-s2t``: such agency-B paragraphs alone (negatives: modern encyclopaedic
      text sharing phrasing, not sentences, with the library).

    The DRCD paragraphs are those at odd lines of the file: the reference table of
    ordinary text (``bench/build_rarity.py``) was built from the even ones."""
    import opencc

    rng = random.Random(seed)
    t2s = opencc.OpenCC("t2s")
    cmrc = [
        d
        for d in load_jsonl(data / "wiki/cmrc2018_paragraphs.simplified.jsonl")
        if len(d["text"]) >= 250
    ]
    drcd = load_jsonl(data / "wiki/drcd_paragraphs.traditional.jsonl")[1::2]
    own = [t for t in (t2s.convert(d["text"]) for d in drcd) if 300 <= len(t) <= 1500]
    rng.shuffle(own)
    cases: list[Case] = []
    for _ in range(n):
        while True:
            d = rng.choice(chapters)
            text = d["text"]
            starts = [m.end() for m in re.finditer("[。！？]", text[100:-300])]
            if starts:
                break
        a = 100 + rng.choice(starts)
        b = han_span(text, a, 50)
        h = host_text[(r := rng.randrange(0, len(host_text) - 3000)) : r + 3000]
        cut = rng.randrange(500, 2500)
        cases.append(
            Case(
                "short-50-in-3000",
                h[:cut] + text[a:b] + h[cut:],
                {d["id"]},
                (cut, cut + b - a),
                (a, b),
            )
        )
    for i in range(n):
        d = rng.choice(cmrc)
        text = d["text"]
        sentence_starts = [0] + [m.end() for m in re.finditer("[。！？]", text[:-100])]
        a = 0 if i % 2 == 0 else rng.choice(sentence_starts)
        b = han_span(text, a, rng.randint(50, 150))
        block = text[a:b]
        b_text = own[i % len(own)]
        if i % 2 == 0:  # the lead
            suspect, s_at = block + b_text, 0
        else:  # a block after agency B's first sentence
            first = b_text.find("。") + 1
            suspect, s_at = b_text[:first] + block + b_text[first:], first
        cases.append(Case("news-reprint", suspect, {d["id"]}, (s_at, s_at + len(block)), (a, b)))
    for i in range(n):
        cases.append(Case("neg-wiki-s2t", own[(n + i) % len(own)], set(), negative=True))
    return cases


# An edition slice is a test of recall only when its truth chapters hold its text: at
# least this share of its character 4-grams (simplified). Measured on the 180 edition
# slices of the default run: 0.67-1.00, and 0.014 for the one slice the library lacks.
SOURCE_SHARE = 0.5


def source_share(text: str, mother_texts: list[str], n: int = 4) -> float:
    """Share of ``text``'s distinct character n-grams found in ``mother_texts`` (both in
    simplified characters): whether the expected mothers hold the sampled text at all."""
    grams = {text[i : i + n] for i in range(len(text) - n + 1)}
    if not grams:
        return 0.0
    held: set[str] = set()
    for m in mother_texts:
        held.update(g for g in grams if g in m)
    return len(held) / len(grams)


def overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def union_len(spans: list[tuple[int, int]]) -> int:
    total, cur = 0, None
    for s, e in sorted(spans):
        if cur is None or s > cur[1]:
            if cur:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (cur[1] - cur[0] if cur else 0)


def is_real_copy(lib, suspect_text: str, match) -> bool:
    import difflib

    from tracker.text.pinyin import initials

    mother = lib.store.get_mother(match.mother_id).text
    p = max(match.passages, key=lambda p: p.suspect_end - p.suspect_start)
    a = initials(suspect_text[p.suspect_start : p.suspect_end])
    b = initials(mother[p.mother_start : p.mother_end])
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= 0.8


@dataclass
class EngineRun:
    """One engine's results on the cases: per-transformation sums, times."""

    engine: str
    options: dict
    rows: dict[str, dict[str, float]]
    times: list[float]  # check time per case, ms
    ingest_s: float
    candidates: list[int] = field(default_factory=list)  # candidates verified per case
    records: list[dict] = field(default_factory=list)  # per case and pair (--features)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times) if self.times else 0.0

    def flagged(self) -> tuple[int, int]:
        neg = [r for kind, r in self.rows.items() if kind.startswith("neg")]
        return int(sum(r["flagged"] for r in neg)), int(sum(r["n"] for r in neg))

    def measures(self, kind: str) -> dict[str, float | None]:
        """recall, candidate recall, pair precision, passage P/R/F1 (None: not measured),
        or the flagged rate of a negative transformation."""
        r = self.rows[kind]
        n = r["n"]
        if kind.startswith("neg"):
            return {"flagged": r["flagged"] / n}
        out: dict[str, float | None] = {
            "recall": r["recall"] / n,
            "cand_recall": r["cand_recall"] / n,
            "precision": r["true_pairs"] / r["pairs"] if r["pairs"] else 1.0,
            "pp": None,
            "pr": None,
            "f1": None,
        }
        if r["true"]:
            pp = r["hit"] / r["det"] if r["det"] else 0.0
            pr = r["hit"] / r["true"]
            out.update(pp=pp, pr=pr, f1=2 * pp * pr / (pp + pr) if pp + pr else 0.0)
        return out


def parse_options(pairs: list[str]) -> dict[str, dict]:
    """``--set simhash.k=4 --set minhash.normalization=chars`` -> per-engine options
    (values parsed as JSON when they are JSON, else kept as strings)."""
    out: dict[str, dict] = defaultdict(dict)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        engine, dot, option = key.partition(".")
        if not sep or not dot:
            raise SystemExit(f"--set expects ENGINE.OPTION=VALUE, got {pair!r}")
        try:
            out[engine][option] = json.loads(value)
        except json.JSONDecodeError:
            out[engine][option] = value
    return dict(out)


def planted_share(case: Case, match) -> float | None:
    """Share of a match's suspect passages (by length) inside the case's copied span."""
    if case.s_span is None:
        return None
    total = sum(p.suspect_end - p.suspect_start for p in match.passages)
    inside = sum(overlap((p.suspect_start, p.suspect_end), case.s_span) for p in match.passages)
    return inside / total if total else 0.0


def pair_label(lib, case: Case, match) -> str:
    """The label of a reported pair: "true" (the case's truth), "dup" (the corpus really
    holds the passage elsewhere) or "false". A law outside the truth is a duplicate only
    when it is related to the true law (``eval_laws.LawFamilies``: another version, an
    implementing rule ...) and its passages lie in the planted copy; any other law is a
    false pair."""
    if match.mother_id in case.truth:
        return "true"
    if is_law(match.mother_id):
        inside = planted_share(case, match)
        related = match.mother_id in case.extra.get("dups", ())
        return "dup" if related and inside is not None and inside >= 0.5 else "false"
    return "dup" if is_real_copy(lib, case.text, match) else "false"


def make_matcher(lib, engine: str, align: dict, policy: dict):
    """The library's matcher, or one with other AlignParams / MatchPolicy values."""
    if not align and not policy:
        return lib.matcher(engine)
    from dataclasses import replace

    from tracker.matching.align import AlignParams
    from tracker.matching.matcher import Matcher

    lib.matcher(engine)  # the library's own checks (engine indexed)
    return Matcher(
        lib.store,
        lib.engine(engine),
        policy=replace(lib.policy, **policy),
        align_params=AlignParams(**align),
        cache=lib._cache,
    )


def run_engine(
    engine: str,
    options: dict,
    mothers: list[dict],
    cases: list[Case],
    *,
    table: GramTable | None = None,
    align: dict | None = None,
    policy: dict | None = None,
) -> EngineRun:
    """Ingest the mothers into a fresh library with this engine, then check every case.
    With ``table`` every reported pair is recorded with its passages' features."""
    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    times: list[float] = []
    n_cands: list[int] = []
    records: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        lib = Library.open(Settings(data_dir=Path(tmp)))
        try:
            if options:  # how `yinji` keeps engine options: the store's meta
                lib.store.set_meta(f"engine:{engine}:options", options)
            t0 = time.perf_counter()
            lib.ingest(
                (Document(id=m["id"], title=m.get("title", ""), text=m["text"]) for m in mothers),
                engine=engine,
            )
            ingest_s = time.perf_counter() - t0
            eng = lib.engine(engine)
            matcher = make_matcher(lib, engine, align or {}, policy or {})
            wtable = (
                WindowTable(eng, [m["text"] for m in mothers])
                if table is not None and hasattr(eng, "fingerprinter")
                else None
            )
            for no, case in enumerate(cases):
                t = time.perf_counter()
                result = matcher.match(case.text)
                times.append((time.perf_counter() - t) * 1000)
                n_cands.append(result.candidates)
                r = rows[case.kind]
                missing = bool(case.extra.get("source_missing"))
                r["source_missing"] += missing
                r["n"] += not missing
                found = {m.mother_id for m in result.matches}
                labels = [pair_label(lib, case, m) for m in result.matches]
                # Candidates the verifier saw, asked again outside timing: candidate recall
                # (the engine's own recall, before alignment) and the passage features.
                limit = max(
                    matcher.policy.candidates, len(case.text) // matcher.policy.chars_per_candidate
                )
                cands = eng.candidates_with_evidence(case.text, limit=limit)
                by_seq = lib.store.get_mothers_by_seq(c.seq for c in cands)
                cand_ids = [by_seq[c.seq].id if c.seq in by_seq else "" for c in cands]
                if table is not None:
                    records.extend(
                        observe(
                            lib,
                            eng,
                            matcher,
                            no,
                            case,
                            result,
                            labels,
                            cands,
                            cand_ids,
                            table,
                            wtable,
                        )
                    )
                if case.negative:
                    r["flagged"] += bool(found)
                    continue
                # A slice whose text no mother holds tests no recall; its pairs still
                # count for precision.
                r["recall"] += bool(found & case.truth) and not missing
                r["cand_recall"] += bool(set(cand_ids) & case.truth) and not missing
                r["pairs"] += len(found)
                # Every work whose text the suspect copies (issue #39): pair recall.
                r["truth_pairs"] += len(case.truth)
                r["found_truth"] += len(found & case.truth)
                if case.extra.get("stretches"):
                    add_readability(r, case, result)
                # The corpus has real duplicates (chapters sharing text, a Wikipedia
                # paragraph quoting a novel): such a pair is a correct find.
                r["true_pairs"] += sum(label != "false" for label in labels)
                r["corpus_duplicates"] += sum(label == "dup" for label in labels)
                if case.s_span and case.m_span:
                    add_passage_measures(r, case, result)
        finally:
            lib.close()
    return EngineRun(engine, options, rows, times, ingest_s, n_cands, records)


def add_readability(r: dict[str, float], case: Case, result) -> None:
    """Passages and regions per copied stretch of the true match, and the inserted ad
    lines inside its regions that are exactly an excluded span (issue #39)."""
    stretches = case.extra["stretches"]
    match = next((m for m in result.matches if m.mother_id in case.truth), None)
    if match is None:
        return
    r["read_n"] += 1
    per_p = len(match.passages) / stretches
    # A tree before regions (a baseline run): each passage was a row a person read.
    regions = getattr(match, "regions", None)
    if regions is None:
        regions = [
            type(
                "Row",
                (),
                {"suspect_start": p.suspect_start, "suspect_end": p.suspect_end, "excluded": []},
            )()
            for p in match.passages
        ]
    per_r = len(regions) / stretches
    r["passages_per_stretch"] += per_p
    r["regions_per_stretch"] += per_r
    r["passages_per_stretch_max"] = max(r["passages_per_stretch_max"], per_p)
    r["regions_per_stretch_max"] = max(r["regions_per_stretch_max"], per_r)
    r["short_passages"] += sum(1 for p in match.passages if p.suspect_end - p.suspect_start < 50)
    excluded = {span for g in regions for span in g.excluded}
    inside = [
        (a, b)
        for a, b in case.extra.get("ads", [])
        if any(g.suspect_start < a and b < g.suspect_end for g in regions)
    ]
    r["ads_inside"] += len(inside)
    r["ads_excluded"] += sum(1 for span in inside if span in excluded)
    r["excluded_not_ad"] += len(excluded - set(case.extra.get("ads", [])))


def add_passage_measures(r: dict[str, float], case: Case, result) -> None:
    """PAN character-level passage sums (detected, hit, true) of one case."""
    assert case.s_span and case.m_span
    true_mother = next(iter(case.truth))
    det_s = [(p.suspect_start, p.suspect_end) for m in result.matches for p in m.passages]
    det_m_true = [
        (p.mother_start, p.mother_end)
        for m in result.matches
        if m.mother_id == true_mother
        for p in m.passages
    ]
    det_m_other = sum(
        p.mother_end - p.mother_start
        for m in result.matches
        if m.mother_id != true_mother
        for p in m.passages
    )
    ds, dm = union_len(det_s), union_len(det_m_true)
    hit_s = union_len(
        [
            (max(a, case.s_span[0]), min(b, case.s_span[1]))
            for a, b in det_s
            if overlap((a, b), case.s_span)
        ]
    )
    hit_m = union_len(
        [
            (max(a, case.m_span[0]), min(b, case.m_span[1]))
            for a, b in det_m_true
            if overlap((a, b), case.m_span)
        ]
    )
    # Text inserted into the copy (ad lines) is inside s_span but not true.
    exclude = case.extra.get("s_exclude") or []
    hit_s -= union_len(
        [(max(a, x), min(b, y)) for a, b in det_s for x, y in exclude if overlap((a, b), (x, y))]
    )
    r["det"] += ds + dm + det_m_other
    r["hit"] += hit_s + hit_m
    r["true"] += (case.s_span[1] - case.s_span[0]) - union_len(exclude)
    r["true"] += case.m_span[1] - case.m_span[0]


def truth_alignment(lib, eng, matcher, case: Case, cands, cand_ids) -> dict | None:
    """Why a true mother that was a candidate was not reported: its alignment under the
    matcher's settings, and without the boilerplate filter (no evidence given)."""
    from tracker.matching.align import align_prepared, prepare

    rank = next((i for i, m in enumerate(cand_ids) if m in case.truth), None)
    if rank is None:
        return None
    mother = lib.store.get_mother(cand_ids[rank])
    prepared = prepare(case.text, matcher.align_params.k)
    m_prep = matcher.cache.get(mother, matcher.align_params.k)
    out = {}
    for name, evidence, common in (
        ("verifier", cands[rank].evidence, cands[rank].common),
        ("no_filter", None, None),
    ):
        a = align_prepared(
            prepared,
            m_prep,
            matcher.align_params,
            evidence=evidence,
            common=common,
            evidence_window=getattr(eng, "window", 24),
        )
        out[name] = {
            "copied": a.suspect_copied,
            "similarity": round(a.similarity, 4),
            "passages": len(a.passages),
            "is_copy": matcher.policy.is_copy(a),
        }
    out["evidence_windows"] = (
        int(cands[rank].evidence.size) if cands[rank].evidence is not None else None
    )
    return out


def pair_measures(lib, matcher, case: Case, match, cand, window: int) -> list:
    """The verifier's measure of each passage of a reported pair (``Alignment.measures``,
    aligned again outside timing), or Nones when they cannot be paired up."""
    from tracker.matching.align import align_prepared, prepare

    if cand is None:
        return [None] * len(match.passages)
    mother = lib.store.get_mother(match.mother_id)
    a = align_prepared(
        prepare(case.text, matcher.align_params.k),
        matcher.cache.get(mother, matcher.align_params.k),
        matcher.align_params,
        evidence=cand.evidence,
        common=cand.common,
        evidence_window=window,
    )
    if len(a.measures) != len(match.passages):
        return [None] * len(match.passages)
    return list(a.measures)


def observe(
    lib, eng, matcher, no: int, case: Case, result, labels, cands, cand_ids, table, wtable
) -> list[dict]:
    """One record for the case and one per reported pair, with passage features."""
    from tracker.matching.align import prepare

    truth_rank = next((i for i, m in enumerate(cand_ids) if m in case.truth), None)
    reported = [m.mother_id for m in result.matches]
    missed = (
        not case.negative
        and not case.extra.get("source_missing")
        and not (set(reported) & case.truth)
    )
    out: list[dict] = [
        {
            "type": "case",
            "no": no,
            "kind": case.kind,
            "negative": case.negative,
            "chars": len(case.text),
            "recalled": bool(set(reported) & case.truth),
            "source_missing": bool(case.extra.get("source_missing")),
            "flagged": bool(reported) and case.negative,
            "truth_candidate_rank": truth_rank,
            "candidates": len(cands),
            "reported": reported,
            "labels": labels,
            "truth": sorted(case.truth),
            "extra": {k: (sorted(v) if isinstance(v, set) else v) for k, v in case.extra.items()},
            "truth_alignment": (
                truth_alignment(lib, eng, matcher, case, cands, cand_ids) if missed else None
            ),
        }
    ]
    if not result.matches:
        return out
    prepared = prepare(case.text, table.k)
    by_id = {m: c for m, c in zip(cand_ids, cands, strict=True)}
    window = getattr(eng, "window", 24)
    windows = wtable.positions(case.text) if wtable is not None else None
    postings = wtable.postings(case.text) if wtable is not None else None
    stop_df = wtable.stop_df if wtable is not None else 16
    s_sorted = np.sort(prepared.grams)
    candidates = np.zeros(len(table.ids), dtype=bool)
    for mid in cand_ids:
        if mid in table.pos:
            candidates[table.pos[mid]] = True
    for rank, (m, label) in enumerate(zip(result.matches, labels, strict=True)):
        mother = lib.store.get_mother(m.mother_id).text
        cand = by_id.get(m.mother_id)
        m_sorted = np.sort(prepare(mother, table.k).grams)
        masks = {
            key: np.zeros(prepared.n, dtype=bool)
            for key in ("init", *(f"own{c}" for c in OWN_LEVELS))
        }
        masks["wown"] = np.zeros(prepared.n, dtype=np.float64)
        masks["cwown"] = np.zeros(prepared.n, dtype=np.float64)
        me = table.pos.get(m.mother_id)
        win_masks = (
            wtable.own_masks(postings, me, prepared.n, OWN_LEVELS)
            if wtable is not None and postings is not None and me is not None
            else None
        )
        passages = [
            passage_features(
                case.text,
                mother,
                p,
                m.mother_id,
                table,
                s_offsets=prepared.offsets,
                s_grams=prepared.grams,
                evidence=cand.evidence if cand else None,
                common=cand.common if cand else None,
                window=window,
                planted=case.s_span,
                windows=windows,
                stop_df=stop_df,
                s_sorted=s_sorted,
                m_sorted=m_sorted,
                masks=masks,
                win_masks=win_masks,
                candidates=candidates,
            )
            | {
                "suspect_start": p.suspect_start,
                "suspect_end": p.suspect_end,
                "mother_start": p.mother_start,
                "mother_end": p.mother_end,
            }
            for p in m.passages
        ]
        measures = pair_measures(lib, matcher, case, m, cand, window)
        for p, measure in zip(passages, measures, strict=True):
            p["fine"] = None if measure is None else measure.fine
        out.append(
            {
                "type": "pair",
                "no": no,
                "kind": case.kind,
                "negative": case.negative,
                "mother_id": m.mother_id,
                "label": label,
                "rank": rank,
                "score": m.score,
                "coverage": m.coverage,
                "candidate_rank": cand_ids.index(m.mother_id) if m.mother_id in cand_ids else None,
                # Pair totals over the union of its passages (a span reported twice, or
                # passages that overlap, count once).
                **{f"pair_{key}": round(float(mask.sum()), 1) for key, mask in masks.items()},
                **{
                    f"pair_win_own{c}": int((wm & masks["init"]).sum())
                    for c, wm in (win_masks or {}).items()
                },
                "passages": passages,
            }
        )
    return out


def _f(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def engine_table(run: EngineRun, mothers: list[dict], n_cases: int) -> str:
    """The detailed table of one engine."""
    opts = f" options `{json.dumps(run.options, sort_keys=True)}`;" if run.options else ""
    lines = [
        f"Mothers: {len(mothers)} documents, {sum(len(m['text']) for m in mothers):,} characters "
        f"(ingested in {run.ingest_s:.1f} s); engine `{run.engine}`;{opts} {n_cases} suspects; "
        f"check time median {run.median_ms:.1f} ms; "
        f"{statistics.mean(run.candidates or [0]):.1f} candidates verified per suspect.",
        "",
        "| transformation | n | recall | candidate recall | pair precision | corpus duplicates "
        "| negatives flagged | passage P | passage R | passage F1 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, r in run.rows.items():
        n = int(r["n"])
        m = run.measures(kind)
        if kind.startswith("neg"):
            lines.append(f"| {kind} | {n} | | | | | {_f(m['flagged'])} | | | |")
            continue
        lines.append(
            f"| {kind} | {n} | {_f(m['recall'])} | {_f(m['cand_recall'])} | "
            f"{_f(m['precision'])} | {int(r['corpus_duplicates'])} | | {_f(m['pp'])} | "
            f"{_f(m['pr'])} | {_f(m['f1'])} |"
        )
    return "\n".join(lines)


def comparison_table(runs: list[EngineRun], mothers: list[dict], n_cases: int) -> str:
    """One table, every engine on the same suspects: recall / pair precision / passage F1
    per transformation and engine, then negatives flagged, check and ingest times."""
    names = [r.engine for r in runs]
    head = (
        "| transformation | n | "
        + " | ".join(f"{e} recall | {e} pair P | {e} passage F1" for e in names)
        + " |"
    )
    lines = [
        f"Mothers: {len(mothers)} documents, {sum(len(m['text']) for m in mothers):,} "
        f"characters; {n_cases} suspects, the same for every engine; engines "
        + ", ".join(
            f"`{r.engine}`" + (f" {json.dumps(r.options, sort_keys=True)}" if r.options else "")
            for r in runs
        )
        + ".",
        "",
        head,
        "|---|---|" + "---|---|---|" * len(runs),
    ]
    kinds = list(runs[0].rows)
    for kind in kinds:
        n = int(runs[0].rows[kind]["n"])
        cells = []
        for run in runs:
            m = run.measures(kind)
            if kind.startswith("neg"):
                cells += [f"flagged {_f(m['flagged'])}", "", ""]
            else:
                cells += [_f(m["recall"]), _f(m["precision"]), _f(m["f1"])]
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    flagged = []
    for run in runs:
        f, total = run.flagged()
        flagged += [f"{f} / {total}", "", ""]
    lines.append("| **negatives flagged** | | " + " | ".join(flagged) + " |")
    for label, values in (
        ("check ms (median)", [f"{r.median_ms:.1f}" for r in runs]),
        ("ingest s", [f"{r.ingest_s:.1f}" for r in runs]),
        ("candidates / suspect", [f"{statistics.mean(r.candidates or [0]):.1f}" for r in runs]),
    ):
        cells = [c for v in values for c in (v, "", "")]
        lines.append(f"| **{label}** | | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_law_suite(data: Path, n: int, n_laws: int, cases: list[Case]) -> LawSuite:
    """The templated-text suite (bench/eval_laws.py) beside the old ``cases``."""
    import opencc

    hlm = load_jsonl(data / "novels/hongloumeng.chapters.jsonl")
    sgy = load_jsonl(data / "novels/sanguoyanyi.chapters.jsonl")
    luxun = load_jsonl(data / "luxun/luxun_pieces.jsonl")
    laws = load_jsonl(data / "laws/laws_national.jsonl")
    chapters = hlm + sgy
    hmap = homophone_map(
        "".join(d["text"] for d in chapters[:40]) + "".join(d["text"] for d in laws)
    )
    exclude = {c.extra["id"] for c in cases if c.kind == "neg-laws"}
    return build_law_cases(
        laws,
        chapters,
        chapters + luxun,
        n=n,
        n_library=n_laws,
        make_case=lambda kind, text, truth, s_span, m_span, negative, extra: Case(
            kind, text, truth, s_span, m_span, negative, extra
        ),
        hmap=hmap,
        s2t=opencc.OpenCC("s2t").convert,
        exclude=exclude,
    )


LAW_NEGATIVES = ("neg-laws", "neg-law-law")


def summary(run: EngineRun) -> str:
    """Negatives flagged (law-vs-law and overall), pair precision, false pairs per kind."""
    neg_law = [run.rows[k] for k in LAW_NEGATIVES if k in run.rows]
    law_f, law_n = int(sum(r["flagged"] for r in neg_law)), int(sum(r["n"] for r in neg_law))
    all_f, all_n = run.flagged()
    pos = [r for k, r in run.rows.items() if not k.startswith("neg")]
    pairs, true_pairs = sum(r["pairs"] for r in pos), sum(r["true_pairs"] for r in pos)
    lines = [
        f"- negatives flagged, law-vs-law ({' + '.join(LAW_NEGATIVES)}): {law_f} / {law_n}",
        f"- negatives flagged, overall: {all_f} / {all_n} ({100 * all_f / max(1, all_n):.2f} %)",
        f"- pair precision, all cases: {true_pairs / max(1, pairs):.4f} "
        f"({int(pairs - true_pairs)} false of {int(pairs)} pairs)",
    ]
    missing = {k: int(r["source_missing"]) for k, r in run.rows.items() if r["source_missing"]}
    if missing:
        numbers = [
            str(x["no"]) for x in run.records if x["type"] == "case" and x.get("source_missing")
        ]
        lines.append(
            "- left out of recall, source not in library (the truth chapters hold under "
            f"{SOURCE_SHARE:.0%} of the slice's 4-grams): "
            + ", ".join(f"{k} {v}" for k, v in sorted(missing.items()))
            + (f" (case{'s' * (len(numbers) > 1)} {', '.join(numbers)})" if numbers else "")
        )
    multi = {k: r for k, r in run.rows.items() if r["truth_pairs"] > r["n"]}
    for kind, r in sorted(multi.items()):
        lines.append(
            f"- pair recall (every true work reported), {kind}: "
            f"{r['found_truth'] / r['truth_pairs']:.3f}"
            f" ({int(r['found_truth'])} of {int(r['truth_pairs'])} suspect-work pairs)"
        )
    for kind, r in sorted(run.rows.items()):
        if r["read_n"]:
            k = r["read_n"]
            lines.append(
                f"- readability, {kind} ({int(k)} copies found): passages per copied stretch "
                f"{r['passages_per_stretch'] / k:.1f} (max {r['passages_per_stretch_max']:.0f}, "
                f"{int(r['short_passages'])} under 50 characters), regions per copied stretch "
                f"{r['regions_per_stretch'] / k:.2f} (max {r['regions_per_stretch_max']:.0f}); "
                f"ad lines inside regions excluded exactly {int(r['ads_excluded'])} / "
                f"{int(r['ads_inside'])}, excluded spans that are no ad line "
                f"{int(r['excluded_not_ad'])}"
            )
    if run.records:
        false = [x for x in run.records if x["type"] == "pair" and x["label"] == "false"]
        by_kind: dict[str, int] = defaultdict(int)
        for x in false:
            by_kind[x["kind"]] += 1
        if by_kind:
            lines.append(
                "- false pairs by transformation: "
                + ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items()))
            )
    return "\n".join(lines)


def _clip(text: str, n: int = 400) -> str:
    text = text.replace("\n", "⏎").replace("|", "｜")
    return text if len(text) <= n else text[:n] + f"…(+{len(text) - n})"


def false_pairs_report(run: EngineRun) -> str:
    """Every false pair (and flagged negative) with its passages and their features."""
    cases = {x["no"]: x for x in run.records if x["type"] == "case"}
    lines = [f"# False pairs ({run.engine})", ""]
    for x in run.records:
        if x["type"] != "pair" or x["label"] != "false":
            continue
        c = cases[x["no"]]
        lines += [
            f"## case {x['no']} {x['kind']} → `{x['mother_id']}`",
            "",
            f"score {x['score']}, coverage {x['coverage']}, rank {x['rank']} of "
            f"{len(c['reported'])} reported, candidate rank {x['candidate_rank']}; "
            f"truth {c['truth'] or '(negative)'}"
            + (f", truth candidate rank {c['truth_candidate_rank']}" if c["truth"] else "")
            + (f"; host `{c['extra']['host']}`" if "host" in c["extra"] else "")
            + (f"; suspect `{c['extra']['id']}`" if "id" in c["extra"] else ""),
            "",
            "| chars s/m | initials | similarity | char sim | initials sim | verbatim 8-gram "
            "| cf median | cf≥1 | cf≥3 | unique initials | mothers ≥½ | supported | common "
            "| in planted |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for p in x["passages"]:
            lines.append(
                f"| {p['s_chars']}/{p['m_chars']} | {p['s_init']} | {p['similarity']} | "
                f"{p['char_sim']} | {p['init_sim']} | {p['verbatim8']} | {p['cf_median']} | "
                f"{p['cf1']} | {p['cf3']} | {p['unique_init']} | {p['mothers_half']} | "
                f"{p['supported']} | {p['common']} | {p['planted']} |"
            )
        lines.append("")
        for i, p in enumerate(x["passages"]):
            lines += [
                f"{i + 1}. suspect [{p['suspect_start']}:{p['suspect_end']}]: "
                f"{_clip(p['suspect'])}",
                f"   mother [{p['mother_start']}:{p['mother_end']}]: {_clip(p['mother'])}",
            ]
        lines.append("")
    return "\n".join(lines)


def misses_report(run: EngineRun) -> str:
    """Cases whose truth was not reported: was it a candidate, what was reported instead."""
    cases = [x for x in run.records if x["type"] == "case" and not x["negative"]]
    lines = []
    for c in cases:
        if c["recalled"] or c.get("source_missing"):
            continue
        lines.append(
            f"- case {c['no']} {c['kind']}: truth {c['truth']} candidate rank "
            f"{c['truth_candidate_rank']} of {c['candidates']}; reported "
            + (
                ", ".join(f"`{m}` ({lb})" for m, lb in zip(c["reported"], c["labels"], strict=True))
                or "nothing"
            )
            + (
                "; truth aligned: "
                + ", ".join(
                    f"{name} copied {a['copied']} sim {a['similarity']} passages {a['passages']}"
                    for name, a in c["truth_alignment"].items()
                    if isinstance(a, dict)
                )
                + f", evidence windows {c['truth_alignment']['evidence_windows']}"
                if c.get("truth_alignment")
                else ""
            )
        )
    return "\n".join(lines) or "(none)"


def evaluate_books(args: argparse.Namespace) -> str:
    """``--books``: the chapter-naming suite (``bench/eval_books.py``)."""
    import eval_books

    data = Path(args.data)
    n = max(2, args.cases)
    cases = eval_books.build_page_cases(
        data, n, split_chapters, source_share, SOURCE_SHARE, chinese_number
    )
    engine = None if args.engine == "daguan" else args.engine
    return eval_books.report(eval_books.run_book_eval(data, cases, chinese_number, engine))


def evaluate(args: argparse.Namespace) -> str:
    from tracker.engines import ENGINES

    engines = list(ENGINES) if args.engine == "all" else args.engine.split(",")
    for e in engines:
        if e not in ENGINES:
            raise SystemExit(f"unknown engine {e!r} (choose from {', '.join(ENGINES)} or all)")
    options = parse_options(args.set or [])
    align = parse_values(args.align or [], "--align")
    policy = parse_values(args.policy or [], "--policy")
    data = Path(args.data)
    mothers, cases = build_cases(data, args.cases)
    if args.evasions:
        cases = cases + build_evasion_cases(data, args.cases)
    if args.reprints:
        chapters = load_jsonl(data / "novels/hongloumeng.chapters.jsonl")
        chapters += load_jsonl(data / "novels/sanguoyanyi.chapters.jsonl")
        others = sorted((data / "novels/other").glob("*.txt"))
        host_text = "".join(p.read_text(encoding="utf-8") for p in others)
        more, reprints = build_reprint_cases(
            data, args.cases, chapters, host_text, load_jsonl, Case
        )
        mothers = mothers + more
        cases = cases + reprints
    if args.templates or args.templates_paired:
        avoid = [c.text for c in cases if c.negative]
        more, reworded = [], []
        if args.templates:
            more, reworded = build_reworded_cases(
                data, args.cases, load_jsonl, Case, avoid, least=args.templates_least
            )
        if args.templates_paired:  # the first construction, beside the kind as it is
            older, paired = build_reworded_cases(
                data,
                args.cases,
                load_jsonl,
                Case,
                avoid,
                paired_only=True,
                least=args.templates_least,
            )
            held = {m["id"] for m in more}
            more += [m for m in older if m["id"] not in held]
            for c in paired:
                c.kind = "neg-law-reworded-paired"
            reworded += paired
        mothers = mothers + more
        cases = cases + reworded
    if args.laws:
        suite = build_law_suite(data, args.cases, args.laws, cases)
        mothers = mothers + suite.library
        cases = cases + suite.cases
    record = bool(args.features or args.false_pairs or args.laws)
    table = GramTable([m["id"] for m in mothers], [m["text"] for m in mothers]) if record else None
    runs = []
    for e in engines:
        runs.append(
            run_engine(
                e, options.get(e, {}), mothers, cases, table=table, align=align, policy=policy
            )
        )
        print(f"[{e}] done: check median {runs[-1].median_ms:.1f} ms", file=sys.stderr)
    if args.features:
        with open(args.features, "w", encoding="utf-8") as f:
            for run in runs:
                for x in run.records:
                    f.write(json.dumps({"engine": run.engine, **x}, ensure_ascii=False) + "\n")
    if args.false_pairs:
        Path(args.false_pairs).write_text(
            "\n\n".join(false_pairs_report(r) for r in runs), encoding="utf-8"
        )
    settings = ""
    if align or policy:
        settings = f"Verifier settings: align {json.dumps(align)}, policy {json.dumps(policy)}.\n\n"
    if len(runs) == 1:
        out = settings + engine_table(runs[0], mothers, len(cases)) + "\n\n" + summary(runs[0])
        if record:
            out += "\n\nMissed cases:\n\n" + misses_report(runs[0])
        return out
    out = settings + comparison_table(runs, mothers, len(cases))
    out += "\n\n" + "\n\n".join(f"**{r.engine}**\n\n" + summary(r) for r in runs)
    if args.detail:
        out += "\n\n" + "\n\n".join(engine_table(r, mothers, len(cases)) for r in runs)
    return out


def parse_values(pairs: list[str], flag: str) -> dict:
    """``OPTION=VALUE`` pairs (values parsed as JSON when they are JSON)."""
    out: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"{flag} expects OPTION=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument(
        "--engine",
        default="daguan",
        help="an engine, several separated by commas, or 'all': every engine on the same "
        "suspects, one comparison table",
    )
    ap.add_argument(
        "--set",
        action="append",
        metavar="ENGINE.OPTION=VALUE",
        help="engine option for this run (repeatable), e.g. simhash.k=4",
    )
    ap.add_argument(
        "--detail", action="store_true", help="with several engines, also each engine's table"
    )
    ap.add_argument(
        "--laws",
        type=int,
        default=400,
        help="national laws in the library for the templated-text suite (0: old cases only)",
    )
    ap.add_argument(
        "--evasions",
        action="store_true",
        help="add the kinds of issue #26: short copies, heavy edits, dense ads, pinyin, "
        "Han watermarks, reversed bidi text",
    )
    ap.add_argument(
        "--reprints",
        action="store_true",
        help="add the kinds of issue #39: whole chapters with dense ads (regions per "
        "copied stretch), reports held by several works of the library (pair recall)",
    )
    ap.add_argument(
        "--templates",
        action="store_true",
        help="add neg-law-reworded (issue #39): re-worded sentences of a newer version of a "
        "law whose older version is in the library (use with --laws 0)",
    )
    ap.add_argument(
        "--templates-least",
        type=int,
        default=300,
        help="characters of re-worded sentences a law needs to be a case (default 300)",
    )
    ap.add_argument(
        "--templates-paired",
        action="store_true",
        help="add neg-law-reworded-paired: the same built as first done (a sentence compared "
        "with its paired sentence only), for before and after in one run",
    )
    ap.add_argument("--features", default=None, help="write case and pair records (JSON Lines)")
    ap.add_argument("--false-pairs", default=None, help="write every false pair (markdown)")
    ap.add_argument(
        "--align",
        action="append",
        metavar="OPTION=VALUE",
        help="verify with this AlignParams value (repeatable), e.g. anchor=12",
    )
    ap.add_argument(
        "--policy",
        action="append",
        metavar="OPTION=VALUE",
        help="verify with this MatchPolicy value (repeatable), e.g. min_copied=80",
    )
    ap.add_argument(
        "--books",
        action="store_true",
        help="only the book suite (issue #36): the novels ingested as books, edition pages "
        "checked; how often the top match names the right chapter (--cases pages per kind)",
    )
    ap.add_argument("--out", default=None, help="append the table to this markdown file")
    args = ap.parse_args()
    table = evaluate_books(args) if args.books else evaluate(args)
    print(table)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("\n" + table + "\n")


if __name__ == "__main__":
    main()
