"""The books' figures of the web admin (issue #36): what the library page, a book's page
and ``GET /api/v1/books`` read of the stored matches. ``tracker.books.stats.match_pages``
(the store groups the matches: one ``GROUP BY`` in sqlite) against the baseline of
reading every match page by page (``query_matches``, as the list exports do), on the
same sqlite store in one run; a 25-row dashboard page for scale. Medians of 5 runs
(the baseline: of 3).

    python bench/bench_book_figures.py [--matches 50000] [--books 50] [--write]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import publish

from tracker.books.model import Book, BookChapter
from tracker.books.stats import BookIndex, _scanned_pages, book_grid, book_pages, book_summaries
from tracker.common.records import Match, MatchQuery, Suspect
from tracker.store.sqlite import SqliteStore

CHAPTERS = 200
SITES = 20


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--matches", type=int, default=50_000)
    parser.add_argument("--books", type=int, default=50)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    started = time.time()
    store = SqliteStore(Path(tempfile.mkdtemp()) / "bench.sqlite3")
    books = [
        Book(
            id=f"b{i}",
            title=f"书{i}",
            chapters=[
                BookChapter(j + 1, f"第{j + 1}章", f"b{i}-{j + 1:04d}", 3000)
                for j in range(CHAPTERS)
            ],
        )
        for i in range(args.books)
    ]
    rng = random.Random(1)
    for k in range(args.matches // 100):  # a page of a site copies 100 chapters
        url = f"https://site{k % SITES}.example/{k}.html"
        store.put_suspect(Suspect(id=f"s{k}", text="盗版", url=url))
        store.put_matches(
            f"s{k}",
            [
                Match(
                    suspect_id=f"s{k}",
                    mother_id=f"b{rng.randrange(args.books)}-{rng.randrange(CHAPTERS) + 1:04d}",
                    score=0.9,
                    coverage=0.5,
                    mother_coverage=0.2,
                    suspect_url=url,
                    domain=f"site{k % SITES}.example",
                    verdict=rng.choice(("pending", "confirmed", "dismissed")),
                )
                for _ in range(100)
            ],
        )
    total = store.count_matches(MatchQuery())
    index = BookIndex(books)
    grouped = median_seconds(lambda: book_summaries(store, index), 5)
    scanned = median_seconds(lambda: list(_scanned_pages(store, None, None)), 3)
    shown = median_seconds(lambda: book_summaries(store, index, books[:25]), 5)
    grid = median_seconds(lambda: book_grid(books[0], book_pages(store, books[0]), []), 5)
    page = median_seconds(lambda: store.query_matches(MatchQuery(limit=25)), 5)
    parts = [
        f"{total:,} matches on {args.books} books of {CHAPTERS} chapters, {SITES} sites (sqlite).",
        "",
        "| read | median | ratio to the baseline |",
        "|---|---|---|",
        f"| baseline: every match read page by page | {scanned:.2f} s | 1 |",
        f"| every book's figures, grouped by the store | {grouped:.2f} s | "
        f"{scanned / grouped:.1f}× faster |",
        f"| the 25 books of the library page, grouped | {shown:.2f} s | "
        f"{scanned / shown:.1f}× faster |",
        f"| one book's chapters × sites grid | {grid * 1000:.0f} ms | — |",
        f"| a 25-row dashboard page (for scale) | {page * 1000:.1f} ms | — |",
    ]
    publish("Book figures", "bench_book_figures.py", parts, started, args.write)


if __name__ == "__main__":
    main()
