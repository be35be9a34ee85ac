"""``tracker.books.stats``: sites (host and port), chapter names in both languages, the
chapters × sites grid of a book from matches and cases (each step: pirated, confirmed,
noticed, removed; a dismissed match is no copy; a chapter over two pages is removed
only when both are), the library's figures per book, the most-copied books."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from tracker.books.model import Book, BookChapter
from tracker.books.stats import (
    BookIndex,
    MatchPage,
    book_grid,
    book_match_counts,
    book_pages,
    book_summaries,
    match_pages,
)
from tracker.cases.model import Case, CaseURL
from tracker.common.records import ChapterRef, Match, MatchQuery, Suspect
from tracker.common.rules import site_of
from tracker.store import Store

BOOK = Book(
    id="xyj",
    title="西游记",
    author="吴承恩",
    chapters=[
        BookChapter(1, "第一回 灵根育孕源流出", "xyj-0001", 5000),
        BookChapter(2, "第四十一回 心猿遭火败 木母被魔擒", "xyj-0002", 6000),
        BookChapter(3, "", "xyj-0003", 100),
    ],
)
OTHER = Book(id="shz", title="水浒传", chapters=[BookChapter(1, "第一回", "shz-0001", 10)])


def match(work: str, url: str, verdict: str = "pending", suspect: str = "") -> Match:
    return Match(
        suspect_id=suspect or url,
        mother_id=work,
        score=0.9,
        coverage=0.8,
        mother_coverage=0.5,
        suspect_url=url,
        domain=site_of(url).split(":")[0],
        verdict=verdict,
    )


class FakeStore:
    """``query_matches`` over a list, paged as the stores page (filters: work, verdict)."""

    def __init__(self, matches: list[Match]) -> None:
        self.matches = matches

    def query_matches(self, query: MatchQuery) -> list[Match]:
        rows = [
            m
            for m in self.matches
            if (query.mother_id is None or m.mother_id == query.mother_id)
            and (query.verdict is None or m.verdict == query.verdict)
        ]
        return rows[query.offset : query.offset + query.limit]


def test_site_is_host_and_port_off_the_default() -> None:
    assert site_of("https://Pirate.Example/book/1.html") == "pirate.example"
    assert site_of("http://pirate.example:80/a") == "pirate.example"
    assert site_of("https://pirate.example:443/a") == "pirate.example"
    assert site_of("http://127.0.0.1:8001/a") == "127.0.0.1:8001"
    assert site_of("") == ""
    assert site_of("http://[::1") == ""  # malformed
    assert site_of("http://[::1]:8001/a") == "[::1]:8001"
    assert site_of("ftp://pirate.example/a") == ""


def test_chapter_label_in_chinese_and_english() -> None:
    ref = ChapterRef("xyj", "西游记", "第四十一回 心猿遭火败 木母被魔擒", 41)
    assert ref.label() == "《西游记》第四十一回 心猿遭火败 木母被魔擒"
    assert ref.label("en") == '"西游记", chapter 41 (第四十一回 心猿遭火败 木母被魔擒)'
    bare = ChapterRef("xyj", "《西游记》", "", 3)
    assert bare.label() == "《西游记》"
    assert bare.label("en") == '"西游记", chapter 3'
    assert ChapterRef("x", "书", "楔子").label("en") == '"书", 楔子'


def test_index_names_a_match_without_changing_it() -> None:
    index = BookIndex([BOOK, OTHER])
    m = match("xyj-0002", "https://pirate.example/41.html")
    named = index.named(m)
    assert named.book == ChapterRef("xyj", "西游记", BOOK.chapters[1].title, 2, "吴承恩")
    assert m.book is None
    assert index.ref("loose-work") is None and index.label("loose-work") == ""
    assert index.label("shz-0001", "en") == '"水浒传", chapter 1 (第一回)'


def test_grid_steps_from_pirated_to_removed() -> None:
    a = "https://pirate.example/41.html"
    a2 = "https://pirate.example/41_2.html"
    b = "http://127.0.0.1:8001/1.html"
    matches = [
        match("xyj-0002", a),
        match("xyj-0002", a2, "confirmed"),
        match("xyj-0001", b),
        match("xyj-0003", b, "dismissed"),  # not a copy
        match("shz-0001", b, "confirmed"),  # another book
    ]
    fake: Any = FakeStore(matches)
    pages = list(match_pages(fake))
    grid = book_grid(BOOK, pages, [])
    assert grid.sites == ["127.0.0.1:8001", "pirate.example"]
    cell = grid.cell("xyj-0002", "pirate.example")
    assert cell is not None and cell.state == "confirmed"
    assert (cell.matches, cell.confirmed, cell.pending, cell.urls) == (2, 1, 1, [a, a2])
    first = grid.cell("xyj-0001", "127.0.0.1:8001")
    assert first is not None and first.state == "pirated"
    assert grid.cell("xyj-0003", "127.0.0.1:8001") is None
    assert [c is not None for c in grid.row(BOOK.chapters[1])] == [False, True]
    summary = grid.summary()
    assert (summary.chapters_pirated, summary.sites_confirmed, summary.sites_pending) == (2, 1, 1)

    case = Case(
        id="c1",
        work="xyj",
        domain="pirate.example",
        state="notice_sent",
        urls=[CaseURL(a, mother_id="xyj-0002"), CaseURL(a2, mother_id="xyj-0002")],
        notice_sent_at=datetime(2026, 11, 1, tzinfo=UTC),
    )
    noticed = book_grid(BOOK, pages, [case]).cell("xyj-0002", "pirate.example")
    assert noticed is not None and noticed.state == "noticed" and noticed.case_ids == ["c1"]

    # One page of the chapter gone, the other still there: not removed.
    case.urls[0].status = "removed"
    half = book_grid(BOOK, pages, [case]).cell("xyj-0002", "pirate.example")
    assert half is not None and half.state == "noticed"
    case.urls[1].status = "removed"
    gone = book_grid(BOOK, pages, [case]).cell("xyj-0002", "pirate.example")
    assert gone is not None and gone.state == "removed"

    # A case moved to removed by a person: its pages count as gone.
    by_hand = replace(case, urls=[CaseURL(a, mother_id="xyj-0002")], state="removed")
    removed = book_grid(BOOK, pages, [by_hand]).cell("xyj-0002", "pirate.example")
    assert removed is not None and removed.state == "removed"

    as_json: Any = grid.to_dict()
    assert as_json["sites"] == grid.sites
    rows = as_json["chapters"]
    assert [r["index"] for r in rows] == [1, 2, 3]
    assert set(rows[1]["cells"]) == {"pirate.example"}
    assert rows[2]["cells"] == {}


def test_summaries_and_most_copied_books_over_every_match() -> None:
    index = BookIndex([BOOK, OTHER])
    many = [match("xyj-0001", f"https://s{i % 3}.example/{i}") for i in range(2500)]
    many.append(match("shz-0001", "https://s9.example/1", "confirmed"))
    many.append(match("loose", "https://s9.example/2"))
    store: Any = FakeStore(many)
    sums = book_summaries(store, index)
    assert set(sums) == {"xyj", "shz"}
    assert (sums["xyj"].chapters_pirated, sums["xyj"].sites_pending) == (1, 3)
    assert (sums["shz"].sites_confirmed, sums["shz"].sites) == (1, ["s9.example"])
    top = book_match_counts(store, index)
    assert [(b.id, n) for b, n in top] == [("xyj", 2500), ("shz", 1)]
    confirmed = book_match_counts(store, index, MatchQuery(verdict="confirmed"))
    assert [(b.id, n) for b, n in confirmed] == [("shz", 1)]


# --- the stores group the matches themselves -------------------------------------------------


def stored(store: Store, matches: list[Match]) -> None:
    by_suspect: dict[str, list[Match]] = {}
    for m in matches:
        by_suspect.setdefault(m.suspect_id, []).append(m)
    for sid, ms in by_suspect.items():
        store.put_suspect(Suspect(id=sid, text="盗版", url=ms[0].suspect_url))
        store.put_matches(sid, ms)


def test_the_store_groups_as_a_scan_would(store: Store) -> None:
    a = "https://pirate.example/41.html"
    b = "http://127.0.0.1:8001/1.html"
    matches = [
        match("xyj-0002", a, suspect="s1"),
        match("xyj-0001", a, suspect="s1"),
        match("xyj-0002", b, suspect="s2"),
        match("shz-0001", b, suspect="s2"),
        match("xyj-0003", "", suspect="s3"),  # a pasted text: no page
    ]
    stored(store, matches)
    store.set_verdict(matches[2].id, "confirmed")
    scanned: Any = FakeStore(store.query_matches(MatchQuery(limit=100)))

    def key(p: MatchPage) -> tuple[str, str, str, str, int]:
        return (p.mother_id, p.verdict, p.url, p.domain, p.count)

    assert sorted(map(key, match_pages(store))) == sorted(map(key, match_pages(scanned)))
    assert sorted(map(key, book_pages(store, BOOK))) == sorted(
        key(p) for p in match_pages(scanned) if p.mother_id.startswith("xyj-")
    )
    confirmed = list(match_pages(store, MatchQuery(verdict="confirmed")))
    assert [(p.mother_id, p.url) for p in confirmed] == [("xyj-0002", b)]
    assert list(match_pages(store, mother_ids=[])) == []
    grid = book_grid(BOOK, book_pages(store, BOOK), [])
    assert grid.sites == ["127.0.0.1:8001", "pirate.example", ""]  # no page: last
    assert grid.cell("xyj-0002", "127.0.0.1:8001").state == "confirmed"  # type: ignore[union-attr]
    index = BookIndex([BOOK, OTHER])
    assert book_summaries(store, index)["xyj"].chapters_pirated == 3
    assert [(bk.id, n) for bk, n in book_match_counts(store, index)] == [("xyj", 4), ("shz", 1)]
