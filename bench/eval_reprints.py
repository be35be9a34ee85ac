"""The kinds of issue #39 for ``bench/eval.py --reprints`` (their own random stream, so
every other kind stays as it was):

- ``ads-chapter``: a whole novel chapter of the library copied with a pirate ad line
  after every 1-3 sentences. Besides recall and passage measures it is read for
  readability: passages and regions (``Match.regions``) per copied stretch (one: the
  chapter), and how many of the ad lines inside the copy are exactly a region's
  excluded spans (``extra["ads"]``);
- ``few-sentence-reprint``: a text of its own (a traditional Wikipedia paragraph of
  DRCD, converted to simplified, 300-1,500 characters, as for ``news-reprint``) that
  takes over only two or three sentences (20-60 Han characters each) of a library
  paragraph (CMRC), in their order, after sentences of its own (half the time the
  paragraph's first sentence leads, as a wire opening does); together at least 50 Han
  characters, each under 85;
- ``library-chain``: one report held by several works of the library: a simplified
  Wikipedia paragraph of the library (CMRC), a near-identical article made from it (1 %
  of its characters replaced, another closing sentence) and 1-4 articles that hold a
  block of it (150-900 characters; the second and later half the time only 60-100 % of
  it; 0, 1 or 3 % of its characters replaced) between text of their own; the suspect
  reprints the block verbatim inside unrelated text. Every one of them holds (some of)
  the block, so all are the truth: ``pair recall`` is the share of (suspect, holder)
  pairs reported.

``--templates`` (``build_reworded_cases``) adds ``neg-law-reworded``: re-worded model
text from the laws that come in dated versions (see there).

The chain's made articles join the library (``chain-N-near``, ``chain-N-block-J``),
their own text drawn character by character at the frequencies of the library's
Wikipedia paragraphs (it shares no sentence with anything); the text around the
suspects' blocks comes from the three novels of ``novels/other`` (never in the library),
as for the other kinds."""

from __future__ import annotations

import difflib
import random
import re
from pathlib import Path

import numpy as np

ADS = ["最新章节请到笔趣阁阅读", "天才一秒记住本站地址", "手机用户请浏览阅读", "【求月票求推荐】"]
POOL = "天地人和春夏秋冬东南西北风花雪月山水云雨金木火土日星辰江河湖海"


def _edited(text: str, rng: random.Random, rate: float) -> str:
    """``text`` with ``rate`` of its Han characters replaced from ``POOL``."""
    return "".join(
        rng.choice(POOL) if "\u4e00" <= c <= "\u9fff" and rng.random() < rate else c for c in text
    )


def build_reprint_cases(
    data: Path, n: int, chapters: list[dict], host_text: str, load_jsonl, case_type, seed: int = 39
) -> tuple[list[dict], list]:
    """``(mothers to add to the library, cases)`` of the kinds above."""
    rng = random.Random(seed)
    cases = []
    for _ in range(n):  # a whole chapter with an ad line after every 1-3 sentences
        d = rng.choice(chapters)
        sentences = [x for x in re.split(r"(?<=[。！？])", d["text"]) if x]
        text, since, gap, ads = "", 0, rng.randint(1, 3), []
        for sentence in sentences:
            text += sentence
            since += 1
            if since >= gap:
                ad = rng.choice(ADS)
                text += "\n"
                ads.append((len(text), len(text) + len(ad)))
                text += ad + "\n"
                since, gap = 0, rng.randint(1, 3)
        cases.append(
            case_type(
                "ads-chapter",
                text,
                {d["id"]},
                (0, len(text)),
                (0, len(d["text"])),
                extra={"s_exclude": [(a - 1, b + 1) for a, b in ads], "ads": ads, "stretches": 1},
            )
        )
    cmrc = [
        d
        for d in load_jsonl(data / "wiki/cmrc2018_paragraphs.simplified.jsonl")
        if len(d["text"]) >= 500
    ]

    def own(length: int) -> str:
        a = rng.randrange(0, len(host_text) - length)
        return host_text[a : a + length]

    # The chain's own text: characters drawn one by one at their frequency in the
    # library's Wikipedia paragraphs, so it shares no sentence with anything (slices of
    # real text would be held by the negatives and hosts of other kinds).
    letters = [c for d in cmrc[:400] for c in d["text"] if "\u4e00" <= c <= "\u9fff"]

    def filler(length: int) -> str:
        out = []
        while sum(map(len, out)) < length:
            out.append("".join(rng.choice(letters) for _ in range(rng.randint(8, 30))) + "。")
        return "".join(out)

    mothers: list[dict] = []
    for i in range(n):
        d = rng.choice(cmrc)
        text = d["text"]
        ends = [0] + [m.end() for m in re.finditer("[。！？]", text)]
        while True:
            a, b = sorted(rng.sample(ends, 2))
            if 150 <= b - a <= 900:
                break
            if len(ends) < 3:
                a, b = 0, min(len(text), 600)
                break
        block = text[a:b]
        last = ends[-2] if len(ends) > 2 else len(text)
        near = _edited(text[:last], rng, 0.01) + filler(rng.randint(30, 120))
        mothers.append({"id": f"chain-{i}-near", "title": f"chain {i} near", "text": near})
        truth = {d["id"], f"chain-{i}-near"}
        for j in range(rng.randint(1, 4)):  # outlets reprinting the block, each its own way
            part = block
            if j and rng.random() < 0.5:  # a part of it (at least 60 %)
                keep = rng.randint(int(0.6 * len(block)), len(block))
                at = rng.randint(0, len(block) - keep)
                part = block[at : at + keep]
            rate = rng.choice((0.0, 0.01, 0.03))
            held = filler(rng.randint(100, 400)) + _edited(part, rng, rate) + filler(300)
            mid = f"chain-{i}-block-{j}"
            mothers.append({"id": mid, "title": f"chain {i} block {j}", "text": held})
            truth.add(mid)
        h = own(1500)
        cut = rng.randrange(200, 1300)
        cases.append(
            case_type(
                "library-chain",
                h[:cut] + block + h[cut:],
                truth,
                extra={"block": (cut, cut + len(block))},
            )
        )
    return mothers, cases + build_few_sentence_cases(data, n, load_jsonl, case_type)


def build_few_sentence_cases(data: Path, n: int, load_jsonl, case_type, seed: int = 3939) -> list:
    """The ``few-sentence-reprint`` cases (see the module)."""
    import opencc

    rng = random.Random(seed)
    t2s = opencc.OpenCC("t2s")
    drcd = load_jsonl(data / "wiki/drcd_paragraphs.traditional.jsonl")[1::2]
    own = [t for t in (t2s.convert(d["text"]) for d in drcd) if 300 <= len(t) <= 1500]
    rng.shuffle(own)
    cmrc = load_jsonl(data / "wiki/cmrc2018_paragraphs.simplified.jsonl")

    def han(text: str) -> int:
        return sum(1 for c in text if "\u4e00" <= c <= "\u9fff")

    cases = []
    tries = 0
    while len(cases) < n and tries < 100 * n:
        tries += 1
        d = rng.choice(cmrc)
        sentences = [x for x in re.split(r"(?<=[。！？])", d["text"]) if x.strip()]
        fit = [i for i, x in enumerate(sentences) if 20 <= han(x) <= 60]
        if len(fit) < 3:
            continue
        k = rng.choice((2, 3))
        if len(cases) % 2 == 0 and 0 in fit:  # the opening leads
            chosen = [0, *sorted(rng.sample([i for i in fit if i], k - 1))]
        else:
            chosen = sorted(rng.sample(fit, k))
        taken = [sentences[i] for i in chosen]
        if sum(han(x) for x in taken) < 50:
            continue
        body = own[len(cases) % len(own)]
        ends = [m.end() for m in re.finditer("[。！？]", body)]
        if len(ends) < k + 1:
            continue
        at = sorted(rng.sample(ends[: min(len(ends), 3 * k + 2)], k))
        if chosen[0] == 0 and len(cases) % 2 == 0:
            at[0] = 0
        text, last = "", 0
        for sentence, cut in zip(taken, at, strict=True):
            text += body[last:cut] + sentence
            last = cut
        text += body[last:]
        cases.append(case_type("few-sentence-reprint", text, {d["id"]}))
    return cases


# -- re-worded model text (``--templates``) -------------------------------------------
_SENTENCE = re.compile(r"[^。；！？\n]+[。；！？]?")
# A re-worded sentence reads at most this alike with the older version: on characters
# (and at least ``REWORDED_LEAST`` with its paired sentence: the same sentence written
# again, not a new one) and on pinyin initials (the check's own stream).
REWORDED_LEAST = 0.55
REWORDED_CHARS = 0.90
REWORDED_INITIALS = 0.85


def reads_over(sentence: list[int], older: np.ndarray, threshold: float) -> bool:
    """Whether some window of ``older`` (any start, any length) reads more than
    ``threshold`` alike with ``sentence`` (both as code sequences: characters, or pinyin
    initials), as 2 LCS / (len(sentence) + len(window)): the longest common
    subsequence, which is never less than difflib's matching blocks, so a sentence
    under ``threshold`` here is under it on difflib too, against every window.

    Exact, by the fractional test: a window reads over ``threshold`` = t when
    2 LCS - t (len(sentence) + len(window)) > 0, and the largest 2 LCS - t len(window)
    over windows ending at each position is a dynamic programme over the sentence's
    codes (one numpy pass over ``older`` per code: a match gains 2 - t, every code of
    the window costs t, the sentence's codes may be left unmatched), in integers
    (per mille) so that a tie is not over."""
    t = round(threshold * 1000)
    n = int(older.size)
    cost = np.arange(n + 1, dtype=np.int64) * t
    best = np.zeros(n + 1, dtype=np.int64)  # best score of a window ending before j
    for code in sentence:
        step = best.copy()
        hit = np.flatnonzero(older == code) + 1
        if hit.size:
            step[hit] = np.maximum(step[hit], best[hit - 1] + 2000 - t)
        best = np.maximum.accumulate(step + cost) - cost  # skip codes of the window
        np.maximum(best, 0, out=best)  # or start the window here
    return int(best.max()) > t * len(sentence)


def _reworded_anywhere(sentence: str, older: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether ``sentence`` reads under the kind's thresholds (``REWORDED_CHARS`` on
    characters, ``REWORDED_INITIALS`` on pinyin initials) against every window of the
    older version (``older``: its character and initial codes, ``_codes``)."""
    chars, letters = _codes(sentence)
    return not (
        reads_over(chars.tolist(), older[0], REWORDED_CHARS)
        or reads_over(letters.tolist(), older[1], REWORDED_INITIALS)
    )


def _codes(text: str) -> tuple[np.ndarray, np.ndarray]:
    """``text``'s characters (code points) and pinyin initials (ASCII codes)."""
    from tracker.text.pinyin import initials

    chars = np.array([ord(c) for c in text], dtype=np.int64)
    letters = np.frombuffer(initials(text).encode("ascii"), dtype=np.uint8).astype(np.int64)
    return chars, letters


def build_reworded_cases(
    data: Path,
    n: int,
    load_jsonl,
    case_type,
    avoid: list[str],
    *,
    paired_only: bool = False,
    least: int = 300,
) -> tuple[list[dict], list]:
    """``neg-law-reworded``: laws of the shared corpus that come in dated versions. The
    older version joins the library; the suspect is the newer version's sentences that
    were *re-worded*, and nothing else: the same model text written again with other
    words. A sentence (20+ characters) is re-worded when

    - it is paired in order with a sentence of the older version (difflib over the two
      sentence lists) and reads ``REWORDED_LEAST``-``REWORDED_CHARS`` alike with it on
      characters and at most ``REWORDED_INITIALS`` on pinyin initials (difflib), and
    - it reads at most ``REWORDED_CHARS`` on characters and ``REWORDED_INITIALS`` on
      initials against *every* window of the whole older version (``reads_over``: any
      start, any length, on the longest common subsequence): its words do not stand
      verbatim or nearly so anywhere else in it (a sentence moved, split or merged, or a
      revision that changed a word or two, is not a re-wording).

    Titles of which a negative of another kind (``avoid``) is a slice stay out. A
    negative: none of its sentences is in the library as it stands. Up to ``n`` titles,
    those with at least ``least`` characters of such sentences, in file order (no
    randomness).
    ``paired_only``: the construction before the second test (issue #39's first one,
    for before-and-after runs)."""
    from tracker.text.pinyin import initials

    laws = load_jsonl(data / "laws/laws_national.jsonl")
    by_title: dict[str, list[dict]] = {}
    for d in laws:
        by_title.setdefault(d["title"], []).append(d)
    mothers: list[dict] = []
    cases = []
    for versions in by_title.values():
        if len(versions) < 2 or len(cases) >= n:
            continue
        if any(neg in d["text"] for d in versions for neg in avoid):
            continue  # a negative of another kind is a slice of it: not in the library
        old, new = sorted(versions, key=lambda d: d.get("version_date") or "")[-2:]
        a = [m.group().strip() for m in _SENTENCE.finditer(old["text"]) if m.group().strip()]
        b = [m.group().strip() for m in _SENTENCE.finditer(new["text"]) if m.group().strip()]
        blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        held = set(a)
        older = None if paired_only else _codes(old["text"])
        reworded = []
        for tag, i1, i2, j1, j2 in blocks:
            if tag != "replace":
                continue
            for x, y in zip(a[i1:i2], b[j1:j2], strict=False):
                if len(y) < 20 or y in held:
                    continue
                ratio = difflib.SequenceMatcher(None, x, y, autojunk=False).ratio()
                on_initials = difflib.SequenceMatcher(
                    None, initials(x), initials(y), autojunk=False
                ).ratio()
                if not (
                    REWORDED_LEAST <= ratio <= REWORDED_CHARS and on_initials <= REWORDED_INITIALS
                ):
                    continue
                if older is None or _reworded_anywhere(y, older):
                    reworded.append(y)
        text = "".join(reworded)
        if len(text) < least:
            continue
        mothers.append({"id": old["id"], "title": old["title"], "text": old["text"]})
        cases.append(
            case_type(
                "neg-law-reworded",
                text,
                set(),
                negative=True,
                extra={"old": old["id"], "new": new["id"]},
            )
        )
    return mothers, cases
