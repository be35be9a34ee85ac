"""An ad-dense pirate copy of a chapter (issue #39), shared by the tests of regions in
the web view, the reports and the notices (this module holds no test of its own).

``CHAPTER`` is ~5,600 characters of sentences drawn at random from 4,000 CJK
ideographs (no phrase repeats); ``ad_dense`` puts a pirate ad line after every one or
two sentences, as the sites do, and says where each ad stands."""

from __future__ import annotations

import random

ADS = ["最新章节请到笔趣阁阅读", "天才一秒记住本站地址", "手机用户请浏览阅读", "【求月票求推荐】"]


def prose(seed: int, sentences: int) -> str:
    """Sentences of 4-40 characters drawn at random from 4,000 CJK ideographs."""
    rng = random.Random(seed)
    return "".join(
        "".join(chr(rng.randrange(0x4E00, 0x4E00 + 4000)) for _ in range(rng.randint(4, 40)))
        + rng.choice("。！？")
        for _ in range(sentences)
    )


CHAPTER = prose(39, 260)


def ad_dense(text: str, seed: int) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with an ad line after every 1-2 sentences, and where each ad stands
    (suspect offsets, end exclusive)."""
    rng = random.Random(seed)
    sentences: list[str] = []
    current = ""
    for ch in text:
        current += ch
        if ch in "。！？":
            sentences.append(current)
            current = ""
    if current:
        sentences.append(current)
    out, ads, since, gap = "", [], 0, rng.randint(1, 2)
    for sentence in sentences:
        out += sentence
        since += 1
        if since >= gap:
            ad = rng.choice(ADS)
            out += "\n"
            ads.append((len(out), len(out) + len(ad)))
            out += ad + "\n"
            since, gap = 0, rng.randint(1, 2)
    return out, ads
