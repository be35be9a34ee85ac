"""Ingest of a whole-book file as a book of chapters (issue #36: ≥ 2 M chars/s wall for a
5 M-character book), beside the same file ingested as one work in the same run.

The book: chapters of the novels under ../shared/data/novels (several editions, as
``tracker.books.parse.split_chapters`` finds them), renumbered 第1章 … and written as one
UTF-8 TXT of about 5 M characters. Each run ingests it into a fresh embedded library
(sqlite + embedded Redis in a temporary folder) through ``yinji ingest``'s own path
(``BookIngest``: reading, the heading test, the chapter reader, the ingest, the book
record): ``book`` in auto mode (a book of chapters), ``works`` with ``--as-works`` (one
work, the baseline). Wall time of the whole call; medians over ``--runs`` runs each,
the two modes alternating.

    python bench/bench_book_ingest.py [--chars 5000000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import machine  # noqa: E402
from tracker.documents import decode_text  # noqa: E402

NOVELS = Path(os.environ.get("YINJI_SHARED_DATA", "/work/shared/data")) / "novels"


def build_book(path: Path, chars: int) -> tuple[int, int]:
    """Write the book; (characters of chapter text, chapters)."""
    from tracker.books.parse import split_chapters

    sources = sorted(NOVELS.glob("*.txt")) + sorted((NOVELS / "other").glob("*.txt"))
    if not sources:
        raise SystemExit(f"no novels under {NOVELS} (set YINJI_SHARED_DATA)")
    parts = ["《书库合集》\n作者：佚名\n"]
    total = n = 0
    while total < chars:
        for src in sources:
            _front, chapters, _w = split_chapters(decode_text(src.read_bytes(), src.name))
            for ch in chapters:
                if len(ch.text) < 200:
                    continue
                n += 1
                parts.append(f"\n第{n}章 {ch.title.split(' ', 1)[-1][:30]}\n{ch.text.strip()}\n")
                total += len(ch.text)
                if total >= chars:
                    break
            if total >= chars:
                break
    path.write_text("".join(parts), "utf-8")
    return total, n


def run(book: Path, mode: str) -> tuple[float, int, int]:
    """(wall seconds, works stored, books made) of one ingest into a fresh library."""
    from tracker.books.service import BookIngest, BookService
    from tracker.config import Settings
    from tracker.library import Library

    with tempfile.TemporaryDirectory() as tmp, Library.open(Settings(data_dir=Path(tmp))) as lib:
        started = time.perf_counter()
        plan = BookIngest(BookService(lib), mode="auto" if mode == "book" else "works")
        report = lib.ingest(plan.documents([book]), expected_chars=book.stat().st_size // 3)
        made = plan.finish(report)
        wall = time.perf_counter() - started
        assert not report.errors, report.errors
        return wall, report.ingested, len(made)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=5_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        book = Path(tmp) / "book.txt"
        chars, chapters = build_book(book, args.chars)
        size = len(book.read_text("utf-8"))
        print(f"# {machine()}")
        print(f"book: {size:,} characters in the file, {chapters} chapters, {chars:,} of text")
        times: dict[str, list[float]] = {"book": [], "works": []}
        for i in range(args.runs):
            for mode in ("book", "works") if i % 2 == 0 else ("works", "book"):
                wall, works, books = run(book, mode)
                times[mode].append(wall)
                print(f"run {i + 1} {mode:5}: {wall:6.2f} s, {size / wall / 1e6:.2f} M chars/s, "
                      f"{works} works, {books} books")  # fmt: skip
        for mode, ts in times.items():
            med = statistics.median(ts)
            print(f"{mode:5}: median {med:.2f} s = {size / med / 1e6:.2f} M chars/s wall")
        ratio = statistics.median(times["works"]) / statistics.median(times["book"])
        print(f"book vs one work: {ratio:.2f}x the speed")


if __name__ == "__main__":
    main()
