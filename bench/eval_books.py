"""``bench/eval.py --books`` (issue #36): does a check of a chapter page name the right
chapter?

The two novels enter a fresh library as BOOKS, the way a user brings them: each novel's
whole-book TXT is written from ``novels/*.chapters.jsonl`` (a ``《书名》`` title line, then
every chapter under its ``第N回 …`` heading, in file order) and ingested through the book
path (``tracker.books.service.BookIngest``, as ``yinji ingest`` does), so chapter
metadata comes from the chapter detector, not from the JSONL. 红楼梦's JSONL holds
第一百三回 twice (ids ``hongloumeng-103`` and ``-104``): the book keeps both, so from
there a chapter's ``chapter_index`` (its position) is one more than its number. A
chapter's *number* is read from the heading the book stored (``第一百四回`` -> 104).

Suspects are pages of the independent editions, whose true chapter numbers come from
their own ``第N回`` headings (``eval.split_chapters``), on a random stream of their own:

- ``slice``: 1,500-character slices of the web copy, the alt editions and the
  traditional editions (as the harness's ``web-copy`` / ``alt-edition`` /
  ``trad-edition`` kinds);
- ``chapter``: a whole chapter of an alt edition (heading included, as a pirate page
  shows it);
- ``page-1`` / ``page-2``: a chapter of the web copy or an alt edition split into two
  pages at the paragraph break nearest its middle; each page is checked on its own.

Each page is checked as ``yinji check --json`` checks it (``Library.check``, then
``CheckResult.matches_json``) and the TOP match is read. It is **right** when its
``book_title`` is the novel's and its ``chapter_index`` is a chapter the page really
holds: a chapter of which the page holds at least ``HELD`` characters (a slice that
straddles two chapters is right naming either, when it holds ``HELD`` of each; the few
characters of the next chapter's heading do not make it that chapter). The right
chapters are all indices whose stored heading has that number (红楼梦 103: indices 103
and 104). A page whose text the library does not hold (under ``SOURCE_SHARE`` of its
character 4-grams, in simplified form, are in its chapters' text: 红楼梦's JSONL chapter
29 stops after 4,494 characters) is labelled "source not in library" and not counted,
as in the harness. ``strict`` also counts the top match naming the chapter that holds
the most of the page.
"""

from __future__ import annotations

import random
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HELD = 100  # characters of a chapter a page must hold for naming it to be right
NOVELS = {"sanguoyanyi": "三国演义", "hongloumeng": "红楼梦"}


@dataclass
class PageCase:
    kind: str  # slice | chapter | page-1 | page-2
    edition: str  # the file the page was cut from
    title: str  # the novel's book title
    text: str
    held: dict[int, int]  # chapter number -> characters of it the page holds
    source_missing: bool = False
    simplified: str = ""  # the text in simplified characters (OpenCC t2s)

    @property
    def truth(self) -> set[int]:
        """The chapter numbers whose naming is right (see the module docstring)."""
        return {n for n, c in self.held.items() if c >= HELD}

    @property
    def main(self) -> int:
        """The chapter holding the most of the page."""
        return max(self.held, key=lambda n: self.held[n])


@dataclass
class PageResult:
    case: PageCase
    right: bool
    strict: bool
    named: str  # what the top match named, for the misses list
    ms: float
    by_text: int = 0  # right only by text: characters of the named chapter's text held


@dataclass
class BookEval:
    books: list[str] = field(default_factory=list)  # "《三国演义》 120 chapters"
    results: list[PageResult] = field(default_factory=list)
    missing: list[PageCase] = field(default_factory=list)
    ingest_s: float = 0.0


def chapter_rows(rows: list[dict], book_title: str) -> list[tuple[str, str]]:
    """(heading, text) of each JSONL chapter, the heading without the book-title prefix
    (``三国演义 第一回 …`` -> ``第一回 …``)."""
    out = []
    for r in rows:
        heading = r.get("title", "").strip()
        heading = heading.removeprefix(book_title).strip()
        out.append((heading, r["text"]))
    return out


def whole_book_text(book_title: str, chapters: list[tuple[str, str]]) -> str:
    """A whole-book TXT as e-texts are laid out: the title line, then each chapter's
    heading on its own line before its text."""
    parts = [f"《{book_title}》\n"]
    for heading, text in chapters:
        parts.append(f"\n{heading}\n\n{text.strip()}\n")
    return "".join(parts)


def held_by(bounds: list[tuple[int, int]], a: int, b: int) -> dict[int, int]:
    """Chapter number (1-based position in ``bounds``) -> characters of [a, b) in it."""
    out = {}
    for i, (s, e) in enumerate(bounds):
        n = min(b, e) - max(a, s)
        if n > 0:
            out[i + 1] = n
    return out


def split_page(text: str) -> int:
    """Where a chapter is split into two pages: the paragraph break nearest its middle,
    else the sentence end nearest it, within its middle third (else the middle)."""
    mid = len(text) // 2
    for pattern in (r"\n+", r"[。！？]"):
        ends = [m.end() for m in re.finditer(pattern, text)]
        ends = [x for x in ends if abs(x - mid) <= len(text) // 6]
        if ends:
            return min(ends, key=lambda x: abs(x - mid))
    return mid


def build_page_cases(
    data: Path,
    n: int,
    split_chapters: Callable[[str], list[tuple[int, int]]],
    source_share: Callable[[str, list[str]], float],
    threshold: float,
    number: Callable[[str], int],
    seed: int = 36,
) -> list[PageCase]:
    """``n`` slices per edition file, ``n // 2`` whole chapters and ``n // 2`` two-page
    chapters per novel (see the module docstring)."""
    import opencc

    rng = random.Random(seed)
    t2s = opencc.OpenCC("t2s")
    novels = data / "novels"
    texts = {}
    for stem in NOVELS:
        rows = _jsonl(novels / f"{stem}.chapters.jsonl")
        by_number: dict[int, list[str]] = {}
        for r in rows:
            m = re.search(r"第([一二三四五六七八九十百零〇○]+)回", r.get("title", ""))
            if m:
                by_number.setdefault(number(m.group(1)), []).append(r["text"])
        texts[stem] = by_number
    editions = [
        ("sanguoyanyi", "web-copy"),
        ("sanguoyanyi", "alt-edition"),
        ("hongloumeng", "alt-edition"),
        ("sanguoyanyi", "trad-edition"),
        ("hongloumeng", "trad-edition"),
    ]
    cases: list[PageCase] = []

    def add(kind: str, stem: str, edition: str, text: str, held: dict[int, int]) -> None:
        case = PageCase(kind, f"{stem}.{edition}.txt", NOVELS[stem], text, held)
        case.simplified = t2s.convert(text)
        mothers = [t for num in case.truth for t in texts[stem].get(num, [])]
        case.source_missing = source_share(case.simplified, mothers) < threshold
        cases.append(case)

    loaded = {}
    for stem, edition in editions:
        text = (novels / f"{stem}.{edition}.txt").read_text(encoding="utf-8")
        bounds = split_chapters(text)
        if len(bounds) < len(texts[stem]):
            bounds = bounds[:-1]  # the headings stop early: the last chapter's end unknown
        loaded[(stem, edition)] = (text, bounds)
        for _ in range(n):
            a = rng.randrange(bounds[0][0], bounds[-1][1] - 1500)
            add("slice", stem, edition, text[a : a + 1500], held_by(bounds, a, a + 1500))
    whole = [("sanguoyanyi", "alt-edition"), ("hongloumeng", "alt-edition")]
    split = [("sanguoyanyi", "web-copy"), ("hongloumeng", "alt-edition")]
    for stem, edition in whole:
        text, bounds = loaded[(stem, edition)]
        for i in rng.sample(range(len(bounds)), n // 2):
            s, e = bounds[i]
            add("chapter", stem, edition, text[s:e], {i + 1: e - s})
    for stem, edition in split:
        text, bounds = loaded[(stem, edition)]
        for i in rng.sample(range(len(bounds)), n // 2):
            s, e = bounds[i]
            cut = s + split_page(text[s:e])
            add("page-1", stem, edition, text[s:cut], {i + 1: cut - s})
            add("page-2", stem, edition, text[cut:e], {i + 1: e - cut})
    return cases


def run_book_eval(
    data: Path, cases: list[PageCase], number: Callable[[str], int], engine: str | None = None
) -> BookEval:
    """Ingest the two novels as books into a fresh library, check every page, read the
    top match's book fields."""
    from tracker.books.service import BookIngest, BookService
    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    out = BookEval()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "books"
        folder.mkdir()
        paths = []
        chapter_texts: dict[str, dict[int, list[str]]] = {}  # title -> number -> texts
        for stem, title in NOVELS.items():
            rows = _jsonl(data / "novels" / f"{stem}.chapters.jsonl")
            for heading, text in chapter_rows(rows, title):
                num = chapter_number(heading, number)
                if num is not None:
                    chapter_texts.setdefault(title, {}).setdefault(num, []).append(text)
            path = folder / f"{stem}.txt"
            path.write_text(whole_book_text(title, chapter_rows(rows, title)), encoding="utf-8")
            paths.append(path)
        lib = Library.open(Settings(data_dir=Path(tmp) / "lib"))
        try:
            service = BookService(lib)
            plan = BookIngest(service)
            t0 = time.perf_counter()
            report = lib.ingest(plan.documents(paths), engine=engine)
            made = plan.finish(report)
            out.ingest_s = time.perf_counter() - t0
            numbers: dict[str, dict[int, int | None]] = {}  # book title -> index -> number
            for m in made:
                out.books.append(f"《{m.book.title}》 {len(m.book.chapters)} chapters")
                numbers[m.book.title] = {
                    c.index: chapter_number(c.title, number) for c in m.book.chapters
                }
            for no, case in enumerate(cases):
                if case.source_missing:
                    out.missing.append(case)
                    continue
                t = time.perf_counter()
                [res] = lib.check([Document(id=f"page-{no}", text=case.text)], save=False)
                ms = (time.perf_counter() - t) * 1000
                out.results.append(judge(case, res.matches_json(), numbers, ms, chapter_texts))
        finally:
            lib.close()
    return out


def chapter_number(heading: str, number: Callable[[str], int]) -> int | None:
    """The number of a ``第N回`` heading (``第一百四回 …`` -> 104), None without one."""
    m = re.match(r"第([一二三四五六七八九十百零〇○]+|\d+)[回囘]", heading.strip())
    if not m:
        return None
    g = m.group(1)
    return int(g) if g.isdigit() else number(g)


def text_held(page: str, mothers: list[str], n: int = 8) -> int:
    """Han characters of ``page`` inside an ``n``-gram of Han characters that one of
    ``mothers`` holds (punctuation and layout ignored: editions differ in both)."""
    han = re.compile(r"[^\u4e00-\u9fff]")
    grams = set()
    for text in mothers:
        t = han.sub("", text)
        grams.update(t[i : i + n] for i in range(len(t) - n + 1))
    p = han.sub("", page)
    covered = [False] * len(p)
    for i in range(len(p) - n + 1):
        if p[i : i + n] in grams:
            covered[i : i + n] = [True] * n
    return sum(covered)


def judge(
    case: PageCase,
    matches: list[dict],
    numbers: dict[str, dict[int, int | None]],
    ms: float,
    chapter_texts: dict[str, dict[int, list[str]]] | None = None,
) -> PageResult:
    """Right / strict for the top match of a ``check --json`` line's ``matches``. A
    chapter the edition's headings do not put on the page is still one the page really
    holds when at least ``HELD`` of the page's characters are its text (``text_held``:
    an edition that misplaces a block of another chapter)."""
    if not matches:
        return PageResult(case, False, False, "no match", ms)
    top = matches[0]
    title, index = top.get("book_title"), top.get("chapter_index")
    number = numbers.get(title or "", {}).get(index) if isinstance(index, int) else None
    named = (
        f"《{title}》 chapter_index {index} ({top.get('chapter')}; "
        f"score {top['score']:.3f}, coverage {top['coverage']:.1%})"
    )
    right_book = title == case.title
    by_text = 0
    if right_book and number is not None and number not in case.truth and chapter_texts:
        held = text_held(case.simplified or case.text, chapter_texts[case.title].get(number, []))
        by_text = held if held >= HELD else 0
        named += f"; the page holds {held} Han characters of its text"
    return PageResult(
        case,
        right_book and (number in case.truth or by_text > 0),
        right_book and number == case.main,
        named,
        ms,
        by_text,
    )


def report(run: BookEval) -> str:
    """The markdown table, then every miss with its reason."""
    kinds = ["slice", "chapter", "page-1", "page-2"]
    lines = [
        "Books in the library: " + ", ".join(run.books) + f" (ingest {run.ingest_s:.1f} s).",
        "",
        "| pages | n | names the right chapter | the chapter holding most | "
        "source not in library | median check ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    groups: list[tuple[str, list[PageResult], int]] = []
    for kind in kinds:
        for edition in sorted({r.case.edition for r in run.results if r.case.kind == kind}):
            rs = [r for r in run.results if r.case.kind == kind and r.case.edition == edition]
            miss = sum(c.kind == kind and c.edition == edition for c in run.missing)
            groups.append((f"{kind} · {edition}", rs, miss))
    groups.append(("**all**", run.results, len(run.missing)))
    for name, rs, miss in groups:
        if not rs:
            continue
        right = sum(r.right for r in rs)
        strict = sum(r.strict for r in rs)
        med = sorted(r.ms for r in rs)[len(rs) // 2]
        lines.append(
            f"| {name} | {len(rs)} | {right} ({right / len(rs):.1%}) | "
            f"{strict} ({strict / len(rs):.1%}) | {miss} | {med:.0f} |"
        )

    def where(c: PageCase) -> str:
        held = ", ".join(f"第{n}回 {k} chars" for n, k in sorted(c.held.items()))
        return f"{c.kind} of {c.edition} (by its headings it holds {held})"

    misses = [r for r in run.results if not r.right]
    lines += ["", f"Misses: {len(misses)}."]
    lines += [f"- {where(r.case)}: named {r.named}" for r in misses]
    by_text = [r for r in run.results if r.by_text]
    if by_text:
        lines += [
            "",
            "Right by text (the named chapter is not under the page's heading, but at least "
            f"{HELD} of the page's characters are its text):",
        ]
        lines += [f"- {where(r.case)}: named {r.named}" for r in by_text]
    not_main = [r for r in run.results if r.right and not r.strict]
    if not_main:
        lines += ["", "Right, but not the chapter holding the most of the page:"]
        lines += [f"- {where(r.case)}: named {r.named}" for r in not_main if not r.by_text]
    if run.missing:
        lines += ["", "Source not in library (not counted):"]
        lines += [f"- {where(c)}" for c in run.missing]
    return "\n".join(lines)


def _jsonl(path: Path) -> list[dict]:
    import json

    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
