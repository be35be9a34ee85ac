"""Chapter detection on real whole-book files (issue #36): ``tracker.books`` against the
chapter-split originals, beside the splitter the evaluation harness used until now
(``bench/eval.py``'s ``split_chapters``: ``第N回`` wherever it stands, taken when it
carries the next number), measured in the same run.

Files (../shared/data/novels): the pirate-site web copy and the independently keyed
alt editions (line breaks kept) and the Gutenberg traditional editions (line breaks
lost, headings run inline), each against ``*.chapters.jsonl`` / ``*.trad.chapters.jsonl``;
the three further Gutenberg novels under ``other/`` have no split original and are
checked against their own text (every ``第N回`` number the file holds anywhere).

Per file: headings found (reference chapters whose number a detected chapter carries),
false headings (detected chapters matching no reference chapter, or a second time),
chapter starts that agree (the first 16 Han characters of heading + body against the
reference's, SequenceMatcher ratio >= 0.6: editions differ in variants and punctuation),
and titles that end where the reference's do (as many Han characters: editions differ in
variant characters, so equality would measure the edition, not the split).

Speed: ``split_chapters`` and ``read_book`` (decoding included, UTF-8 and GBK bytes) on a
5 M-character book made of the real web copy and alt editions, headings renumbered,
median of 5, beside the old splitter on the same text.

    python bench/bench_chapters.py [--data ../shared/data/novels] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, publish

from tracker.books.headings import find_headings, split_chapters
from tracker.books.parse import read_book
from tracker.documents.readers import decode_text
from tracker.text.numerals import chinese_number

_HAN = re.compile(r"[\u4e00-\u9fff]")
_NUMBER = re.compile(r"第([一二三四五六七八九十百千零〇○两0-9]+)[回囘章]")


def old_split(text: str) -> list[tuple[int, int]]:
    """bench/eval.py's chapter splitter (imported, so the baseline is the real one)."""
    from eval import split_chapters as eval_split

    return eval_split(text)


@dataclass
class Ref:
    number: int
    title: str  # the reference title's Han characters, 第N回 and book name left out
    start: str  # first Han characters of heading + body


def han(text: str, n: int | None = None) -> str:
    chars = _HAN.findall(text)
    return "".join(chars if n is None else chars[:n])


def load_reference(path: Path) -> list[Ref]:
    refs: list[Ref] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        head = row["title"].split(" ", 1)[1] if " " in row["title"] else row["title"]
        m = _NUMBER.search(head)
        number = chinese_number(m.group(1)) if m else None
        if number is None or (refs and refs[-1].number == number):
            continue  # hongloumeng.chapters.jsonl holds 第一百三回 twice
        title = head[m.end() :] if m else head
        refs.append(Ref(number, han(title), han(head + row["text"], 16)))
    return refs


@dataclass
class Detected:
    number: int | None
    title: str
    start: str


def detect(name: str, data: bytes) -> tuple[list[Detected], list[str], float]:
    started = time.perf_counter()
    book = read_book(name, data)
    elapsed = time.perf_counter() - started
    text = decode_text(data, name)
    numbers: dict[str, list[int | None]] = {}
    for h in find_headings(text.replace("\r\n", "\n")):
        numbers.setdefault(h.title, []).append(h.number)
    out: list[Detected] = []
    for c in book.chapters:
        queue = numbers.get(c.title) or [None]
        number = queue.pop(0) if len(queue) > 1 else queue[0]
        m = _NUMBER.search(c.title)
        rest = c.title[m.end() :] if m else c.title
        out.append(Detected(number, han(rest), han(c.title + c.text, 16)))
    return out, book.warnings, elapsed


def detect_old(text: str) -> list[Detected]:
    out = []
    for i, (a, b) in enumerate(old_split(text), 1):
        out.append(Detected(i, "", han(text[a : min(b, a + 200)], 16)))
    return out


@dataclass
class Score:
    reference: int
    found: int
    false: int
    starts: int
    titles: int  # the heading's title ends where the reference's does (its length)
    disagree: list[str]


def score(refs: list[Ref], found: list[Detected]) -> Score:
    by_number = {r.number: r for r in refs}
    seen: set[int] = set()
    hits = false = starts = titles = 0
    disagree: list[str] = []
    for d in found:
        ref = by_number.get(d.number) if d.number is not None else None
        if ref is None or d.number in seen:
            false += 1
            continue
        seen.add(ref.number)
        hits += 1
        if SequenceMatcher(None, d.start, ref.start).ratio() >= 0.6:
            starts += 1
        else:
            disagree.append(f"{d.number} (detected {d.start[:10]}…, reference {ref.start[:10]}…)")
        if d.title and len(d.title) == len(ref.title):
            titles += 1
    return Score(len(refs), hits, false, starts, titles, disagree)


def pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.1f} %)" if b else "-"


def accuracy(data_dir: Path) -> tuple[list[str], list[str]]:
    pairs = [
        (
            "sanguoyanyi.web-copy.txt",
            "sanguoyanyi.chapters.jsonl",
            "pirate web copy, GBK-style banner",
        ),
        ("sanguoyanyi.alt-edition.txt", "sanguoyanyi.chapters.jsonl", "independent e-text"),
        ("hongloumeng.alt-edition.txt", "hongloumeng.chapters.jsonl", "independent e-text"),
        (
            "sanguoyanyi.trad-edition.txt",
            "sanguoyanyi.trad.chapters.jsonl",
            "Gutenberg, no line breaks",
        ),
        (
            "hongloumeng.trad-edition.txt",
            "hongloumeng.trad.chapters.jsonl",
            "Gutenberg, no line breaks",
        ),
    ]
    rows = [
        "| file | layout | reference chapters | headings found | false headings "
        "| starts agree | title ends right "
        "| old splitter: found / false / starts agree |",
        "|---|---|---|---|---|---|---|---|",
    ]
    totals = [0, 0, 0, 0]
    notes: list[str] = []
    for txt, ref_name, layout in pairs:
        refs = load_reference(data_dir / ref_name)
        data = (data_dir / txt).read_bytes()
        found, _warnings, _t = detect(txt, data)
        mine = score(refs, found)
        old = score(refs, detect_old(decode_text(data, txt)))
        totals = [
            totals[0] + mine.reference,
            totals[1] + mine.found,
            totals[2] + mine.false,
            totals[3] + mine.starts,
        ]
        rows.append(
            f"| {txt} | {layout} | {mine.reference} | {pct(mine.found, mine.reference)} "
            f"| {mine.false} | {pct(mine.starts, mine.found)} | {pct(mine.titles, mine.found)} "
            f"| {old.found} / {old.false} / {old.starts} |"
        )
        if mine.disagree:
            notes.append(f"- {txt}: chapter {'; '.join(mine.disagree)}")
    rows.append(
        f"| **all** | | {totals[0]} | **{pct(totals[1], totals[0])}** | **{totals[2]}** "
        f"| {pct(totals[3], totals[1])} | | |"
    )
    if notes:
        rows += [
            "",
            "Starts that disagree (heading + first characters, ours / the reference's):",
            *notes,
        ]
    other = [
        "| file (no split original) | chapters | numbers "
        "| `第N回` numbers in the file not taken as headings | warnings |",
        "|---|---|---|---|---|",
    ]
    for path in sorted((data_dir / "other").glob("*.trad.txt")):
        data = path.read_bytes()
        found, warnings, _t = detect(path.name, data)
        text = decode_text(data, path.name)
        in_file = {chinese_number(m.group(1)) for m in _NUMBER.finditer(text)}
        taken = {d.number for d in found}
        missed = sorted(n for n in in_file - taken if n is not None)
        numbers = [d.number for d in found]
        said = "; ".join(w.split(": ", 1)[1] for w in warnings) or "-"
        other.append(
            f"| {path.name} | {len(found)} | {numbers[0]}…{numbers[-1]} "
            f"| {', '.join(map(str, missed)) or 'none'} | {said} |"
        )
    return rows, other


def renumbered_book(data_dir: Path, target: int) -> str:
    """Real text (the web copy and the alt editions) repeated until ``target`` characters,
    each 第N回 heading line renumbered so the book counts 1, 2, 3 …"""
    sources = [
        decode_text((data_dir / name).read_bytes(), name)
        for name in [
            "sanguoyanyi.web-copy.txt",
            "sanguoyanyi.alt-edition.txt",
            "hongloumeng.alt-edition.txt",
        ]
    ]
    heading = re.compile(r"^([ \t\u3000]*(?:正文 )?)第[一二三四五六七八九十百零〇]+回", re.M)
    counter = 0

    def renumber(m: re.Match[str]) -> str:
        nonlocal counter
        counter += 1
        return f"{m.group(1)}第{counter}回"

    parts: list[str] = []
    size = 0
    i = 0
    while size < target:
        part = heading.sub(renumber, sources[i % len(sources)])
        parts.append(part)
        size += len(part)
        i += 1
    return "".join(parts)[:target]


def median_time(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def speed(data_dir: Path, chars: int, runs: int) -> list[str]:
    text = renumbered_book(data_dir, chars)
    utf8 = text.encode("utf-8")
    gbk = text.encode("gb18030")
    chapters = len(split_chapters(text)[1])
    rows = [
        f"A {len(text):,}-character book ({chapters:,} chapters found) of the real web copy "
        f"and alt editions, headings renumbered; median of {runs}; load average "
        f"{os.getloadavg()[0]:.1f} on the shared machine when the timing started.",
        "",
        "| step | time | characters/s | ratio to the old splitter |",
        "|---|---|---|---|",
    ]
    old = median_time(lambda: old_split(text), runs)
    measured = [
        ("old splitter (bench/eval.py, baseline)", old),
        (
            "split_chapters (headings, junk lines, warnings)",
            median_time(lambda: split_chapters(text), runs),
        ),
        (
            "read_book, UTF-8 bytes (decode + split + title)",
            median_time(lambda: read_book("b.txt", utf8), runs),
        ),
        (
            "read_book, GB18030 bytes (decode + split + title)",
            median_time(lambda: read_book("b.txt", gbk), runs),
        ),
        (
            "decode_text alone, GB18030 bytes (the whole file, for scale)",
            median_time(lambda: decode_text(gbk, "b.txt"), max(1, runs // 2)),
        ),
    ]
    for label, t in measured:
        rows.append(
            f"| {label} | {t * 1000:.0f} ms | {len(text) / t / 1e6:.1f} M | {t / old:.2f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    default = os.environ.get("YINJI_SHARED_DATA")
    parser.add_argument(
        "--data",
        default=str(Path(default) / "novels")
        if default
        else str(ROOT.parent / "shared" / "data" / "novels"),
    )
    parser.add_argument("--chars", type=int, default=5_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    data_dir = Path(args.data)
    if not data_dir.is_dir():
        data_dir = Path("/work/shared/data/novels")
    started = time.time()
    rows, other = accuracy(data_dir)
    parts = ["Accuracy against the chapter-split originals:", "", *rows, "", *other, ""]
    parts += ["Speed:", "", *speed(data_dir, args.chars, args.runs)]
    publish("Chapter detection", "bench_chapters.py", parts, started, args.write)


if __name__ == "__main__":
    main()
