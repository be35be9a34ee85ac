"""One contract, two adapters: every test here runs against SqliteStore (a file in
tmp_path) and MongoStore (a real pymongo client talking to tests/mongo_wire.py, a
wire-protocol server on mongomock), so the embedded default and production
behave the same. A few tests at the end are sqlite-only (threads, processes, speed)
or about the package itself (lazy pymongo, open_store)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from repo import REPO

from tracker.plumbing.config import Settings
from tracker.store import (
    CheckWrite,
    Match,
    MatchQuery,
    Mother,
    NotFound,
    Passage,
    SqliteStore,
    Store,
    Suspect,
    User,
    WatchItem,
    match_id,
    open_store,
)

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


@dataclass
class Backend:
    """An adapter plus a way to open a second store on the same data (reopen)."""

    name: str
    open: Callable[[], Store]


# MongoDB through a local wire-protocol server: slow (it starts a server).
@pytest.fixture(params=["sqlite", pytest.param("mongo", marks=pytest.mark.slow)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    opened: list[Store] = []
    if request.param == "sqlite":
        path = tmp_path / "data" / "yinji.sqlite3"

        def make() -> Store:
            s = SqliteStore(path)
            opened.append(s)
            return s
    else:
        pytest.importorskip("mongomock")
        import pymongo
        from mongo_wire import mongo_wire_server

        from tracker.store.mongo import MongoStore

        # A real pymongo client over TCP to a mongomock-backed wire server: the adapter's
        # commands (bulk writes included) are encoded and answered as with a real mongod.
        server = mongo_wire_server()
        client = pymongo.MongoClient(server.__enter__().uri, tz_aware=True)

        def make() -> Store:
            s = MongoStore(client, db_name="yinji_test")
            opened.append(s)
            return s

    yield Backend(request.param, make)
    for s in opened:
        s.close()
    if request.param == "mongo":
        client.close()
        server.__exit__(None, None, None)


@pytest.fixture()
def store(backend: Backend) -> Store:
    return backend.open()


# --- builders ----------------------------------------------------------------------
def mother(mid: str, title: str = "", *, at: datetime = T0, text: str = "正文") -> Mother:
    return Mother(id=mid, title=title or f"title {mid}", text=text, ingested_at=at)


def suspect(sid: str, **kw: object) -> Suspect:
    kw.setdefault("text", f"text of {sid}")
    return Suspect(id=sid, **kw)  # type: ignore[arg-type]


def match(sid: str, mid: str, score: float = 0.5, **kw: object) -> Match:
    kw.setdefault("coverage", score / 2)
    kw.setdefault("mother_coverage", score / 3)
    return Match(suspect_id=sid, mother_id=mid, score=score, **kw)  # type: ignore[arg-type]


def ids(matches: list[Match]) -> list[str]:
    return [m.id for m in matches]


# --- mothers -----------------------------------------------------------------------
def test_put_and_get_mother_round_trip(store: Store) -> None:
    m = Mother(
        id="红楼梦-1",
        title="红楼梦 第一回",
        text="甄士隐梦幻识通灵，贾雨村风尘怀闺秀。",
        source="file:hlm.txt",
        metadata={"author": "曹雪芹", "tags": ["古典", "小说"], "n": 1, "nested": {"a": None}},
        ingested_at=T0.replace(microsecond=123456),
    )
    saved = store.put_mother(m)
    assert saved.seq > 0
    # Times are kept to the millisecond (MongoDB's precision) in both adapters.
    assert saved.ingested_at == T0.replace(microsecond=123000)
    got = store.get_mother("红楼梦-1")
    assert got == saved
    assert got.ingested_at.tzinfo is not None and got.ingested_at.utcoffset() == timedelta(0)
    assert got.metadata == {
        "author": "曹雪芹",
        "tags": ["古典", "小说"],
        "n": 1,
        "nested": {"a": None},
    }


def test_datetimes_are_normalised_to_utc(store: Store) -> None:
    beijing = timezone(timedelta(hours=8))
    store.put_mother(mother("tz", at=datetime(2024, 5, 1, 20, 0, tzinfo=beijing)))
    store.put_mother(mother("naive", at=datetime(2024, 5, 1, 12, 30)))  # naive = UTC
    assert store.get_mother("tz").ingested_at == T0
    assert store.get_mother("tz").ingested_at.utcoffset() == timedelta(0)
    assert store.get_mother("naive").ingested_at == T0 + timedelta(minutes=30)
    # Sorting is by instant, not by local wall-clock text.
    store.put_mother(mother("early", at=datetime(2024, 5, 1, 19, 0, tzinfo=beijing)))  # 11:00Z
    assert [m.id for m in store.list_mothers()] == ["naive", "tz", "early"]


def test_get_missing_mother_raises_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.get_mother("nope")
    with pytest.raises(KeyError):  # NotFound is a KeyError
        store.get_mother("nope")


def test_replacing_a_mother_gives_a_new_seq_and_the_old_one_goes_stale(store: Store) -> None:
    first = store.put_mother(mother("a", "old title"))
    store.put_mother(mother("b"))
    store.put_fingerprints(first.seq, "daguan", b"old-fp")
    second = store.put_mother(mother("a", "new title"))
    assert second.seq > first.seq
    assert store.get_mother("a").title == "new title"
    assert store.get_mother("a").seq == second.seq
    assert store.count_mothers() == 2
    found = store.get_mothers_by_seq([first.seq, second.seq, 10_000])
    assert set(found) == {second.seq}
    assert found[second.seq].title == "new title"
    # The replaced version's fingerprints are gone with it.
    assert store.get_fingerprints(first.seq, "daguan") is None


def test_seqs_are_never_reused(store: Store) -> None:
    seqs = [store.put_mother(mother(f"m{i}")).seq for i in range(3)]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3
    store.delete_mother("m2")
    again = store.put_mother(mother("m2"))
    assert again.seq > max(seqs)
    assert store.get_mothers_by_seq([seqs[2]]) == {}


def test_get_mothers_by_seq_many(store: Store) -> None:
    saved = {
        store.put_mother(mother(f"m{i}")).seq: f"m{i}" for i in range(1050)
    }  # > one IN/$in chunk
    found = store.get_mothers_by_seq([*saved, 0, -1, 99_999])
    assert {s: m.id for s, m in found.items()} == saved
    assert store.get_mothers_by_seq([]) == {}
    assert store.get_mothers_by_seq(iter(list(saved)[:3])).keys() == set(list(saved)[:3])


def test_delete_mother_cascades_to_fingerprints_and_matches(store: Store) -> None:
    a = store.put_mother(mother("a"))
    b = store.put_mother(mother("b"))
    store.put_fingerprints(a.seq, "daguan", b"fa")
    store.put_fingerprints(a.seq, "simhash", b"fa2")
    store.put_fingerprints(b.seq, "daguan", b"fb")
    store.put_suspect(suspect("s1"))
    store.put_suspect(suspect("s2"))
    store.put_matches("s1", [match("s1", "a"), match("s1", "b")])
    store.put_matches("s2", [match("s2", "a")])
    store.set_verdict(match_id("s2", "a"), "confirmed")  # even confirmed ones go

    deleted = store.delete_mother("a")
    assert deleted is not None and deleted.id == "a" and deleted.seq == a.seq
    with pytest.raises(NotFound):
        store.get_mother("a")
    assert store.get_fingerprints(a.seq, "daguan") is None
    assert store.get_fingerprints(a.seq, "simhash") is None
    assert store.get_fingerprints(b.seq, "daguan") == b"fb"
    assert ids(store.query_matches(MatchQuery())) == [match_id("s1", "b")]
    assert store.get_mothers_by_seq([a.seq]) == {}
    assert store.delete_mother("a") is None


def test_list_count_and_search_mothers(store: Store) -> None:
    store.put_mother(mother("hlm", "红楼梦", at=T0))
    store.put_mother(mother("xyj", "西游记", at=T0 + timedelta(hours=1)))
    store.put_mother(mother("dream", "Dream of the Red Chamber", at=T0 + timedelta(hours=2)))
    store.put_mother(mother("pct", "100% 原创", at=T0 + timedelta(hours=3)))
    store.put_mother(mother("us", "a_b", at=T0 + timedelta(hours=4)))
    store.put_mother(mother("x", "axb", at=T0 + timedelta(hours=5)))

    assert [m.id for m in store.list_mothers()] == ["x", "us", "pct", "dream", "xyj", "hlm"]
    assert store.list_mothers()[0].text == "正文"  # text included
    light = store.list_mothers(with_text=False, limit=2)
    assert [m.id for m in light] == ["x", "us"]
    assert all(m.text == "" and m.chars == len("正文") for m in light)
    assert store.get_mother("x").chars == len("正文")
    assert [m.id for m in store.list_mothers(offset=1, limit=2)] == ["us", "pct"]
    assert store.list_mothers(limit=0) == []
    assert store.count_mothers() == 6

    assert [m.id for m in store.list_mothers(search="红楼")] == ["hlm"]
    assert [m.id for m in store.list_mothers(search="DREAM")] == ["dream"]  # title and id
    assert [m.id for m in store.list_mothers(search="red chamber")] == ["dream"]
    assert [m.id for m in store.list_mothers(search="XYJ")] == ["xyj"]  # id
    assert store.count_mothers(search="dream") == 1
    # User input is literal text, not a pattern (LIKE wildcards / regex syntax).
    assert [m.id for m in store.list_mothers(search="100%")] == ["pct"]
    assert [m.id for m in store.list_mothers(search="a_b")] == ["us"]
    assert store.list_mothers(search=".*") == []
    assert store.count_mothers(search="(") == 0
    assert store.count_mothers(search="") == 6


def test_iter_mothers_in_seq_order(store: Store) -> None:
    for i in range(7):
        store.put_mother(mother(f"m{i}", at=T0 - timedelta(days=i)))
    store.put_mother(mother("m2", "re-ingested"))  # new seq: moves to the end
    got = list(store.iter_mothers(batch_size=3))
    assert [m.id for m in got] == ["m0", "m1", "m3", "m4", "m5", "m6", "m2"]
    assert [m.seq for m in got] == sorted(m.seq for m in got)
    assert got[-1].title == "re-ingested"


def test_mothers_since(store: Store) -> None:
    store.put_mother(mother("old", at=T0 - timedelta(days=1)))
    store.put_mother(mother("exact", at=T0))
    store.put_mother(mother("new", at=T0 + timedelta(seconds=1)))
    assert [m.id for m in store.mothers_since(T0)] == ["exact", "new"]
    assert [m.id for m in store.mothers_since(T0 + timedelta(milliseconds=1))] == ["new"]
    # Times are stored to the millisecond, so "since" is compared at that precision
    # (floored): never missing a mother is worth more than sub-millisecond cut-offs.
    assert [m.id for m in store.mothers_since(T0 + timedelta(microseconds=1))] == ["exact", "new"]
    assert store.mothers_since(T0 + timedelta(days=1)) == []
    # A mother stamped "now" is found by a "since" taken just before it.
    before = datetime.now(UTC)
    store.put_mother(Mother(id="now", title="t", text="x"))
    assert "now" in [m.id for m in store.mothers_since(before)]


# --- fingerprints ----------------------------------------------------------------
def test_fingerprints_blob_round_trip(store: Store) -> None:
    m = store.put_mother(mother("a"))
    blob = bytes(range(256)) * 40
    store.put_fingerprints(m.seq, "daguan", blob)
    store.put_fingerprints(m.seq, "minhash", b"\x00\x01")
    got = store.get_fingerprints(m.seq, "daguan")
    assert isinstance(got, bytes) and got == blob
    store.put_fingerprints(m.seq, "daguan", b"\x00replaced")
    assert store.get_fingerprints(m.seq, "daguan") == b"\x00replaced"
    assert store.get_fingerprints(m.seq, "minhash") == b"\x00\x01"
    assert store.get_fingerprints(m.seq, "simhash") is None
    assert store.get_fingerprints(m.seq + 1, "daguan") is None


# --- suspects --------------------------------------------------------------------
def test_suspect_round_trip_with_raw_bytes(store: Store) -> None:
    raw = b"<html>\x00\xff\xfe \xe4\xb8\xad</html>"
    saved = store.put_suspect(
        Suspect(
            id="s1",
            text="疑似抄袭的文字",
            title="某网页",
            url="https://WWW.Example.com/a?b=1",
            fetched_at=T0,
            source="crawl",
            metadata={"status": 200, "headers": {"Content-Type": "text/html"}},
            raw=raw,
        )
    )
    assert saved.domain == "www.example.com"  # host of the URL, lower case
    got = store.get_suspect("s1")
    assert got == saved
    assert got.raw == raw and isinstance(got.raw, bytes)
    assert got.checked_at is None
    assert got.fetched_at == T0

    # Replace by id: raw can go, an explicit domain is kept (lower-cased).
    store.put_suspect(Suspect(id="s1", text="v2", domain="Other.ORG", fetched_at=T0))
    again = store.get_suspect("s1")
    assert (again.text, again.raw, again.domain, again.url) == ("v2", None, "other.org", "")
    assert store.count_suspects() == 1

    with pytest.raises(NotFound):
        store.get_suspect("missing")


def test_list_count_search_iter_suspects(store: Store) -> None:
    for i in range(5):
        store.put_suspect(
            suspect(
                f"s{i}",
                title=f"页面 {i}" if i != 3 else "Special Page",
                url=f"https://site{i}.cn/p",
                fetched_at=T0 + timedelta(minutes=i),
                raw=b"raw",
            )
        )
    listed = store.list_suspects()
    assert [s.id for s in listed] == ["s4", "s3", "s2", "s1", "s0"]  # newest fetched first
    assert all(s.raw is None for s in listed)  # listings leave raw out
    assert listed[0].text == "text of s4"
    assert [s.id for s in store.list_suspects(offset=3, limit=5)] == ["s1", "s0"]
    assert [s.id for s in store.list_suspects(search="special")] == ["s3"]
    assert [s.id for s in store.list_suspects(search="SITE2.CN")] == ["s2"]  # url
    assert [s.id for s in store.list_suspects(search="页面")] == ["s4", "s2", "s1", "s0"]
    assert store.count_suspects() == 5
    assert store.count_suspects(search="页面") == 4
    assert sorted(s.id for s in store.iter_suspects(batch_size=2)) == [f"s{i}" for i in range(5)]
    assert store.get_suspect("s4").raw == b"raw"


def test_mark_checked(store: Store) -> None:
    store.put_suspect(suspect("s1", fetched_at=T0))
    store.mark_checked("s1", T0 + timedelta(hours=1))
    assert store.get_suspect("s1").checked_at == T0 + timedelta(hours=1)
    before = datetime.now(UTC) - timedelta(seconds=1)
    store.mark_checked("s1")
    checked = store.get_suspect("s1").checked_at
    assert checked is not None and checked >= before and checked.tzinfo is not None
    with pytest.raises(NotFound):
        store.mark_checked("missing")


# --- matches ---------------------------------------------------------------------
def _seed_two_mothers(store: Store) -> None:
    store.put_mother(mother("m1", "红楼梦"))
    store.put_mother(mother("m2", "西游记"))
    store.put_mother(mother("m3", "水浒传"))
    store.put_suspect(suspect("s1", title="抄袭页", url="https://blog.example.com/p/1"))


def test_put_matches_round_trip_and_denormalised_fields(store: Store) -> None:
    _seed_two_mothers(store)
    passages = [Passage(0, 10, 5, 15, 0.98765), Passage(20, 30, 40, 50, 1.0)]
    store.put_matches("s1", [match("s1", "m1", 0.9, passages=passages, engine="simhash")])
    got = store.get_match(match_id("s1", "m1"))
    assert got.id == "s1\x1fm1"
    assert (got.score, got.coverage, got.mother_coverage) == (0.9, 0.45, 0.3)
    assert got.passages == [Passage(0, 10, 5, 15, 0.9877), Passage(20, 30, 40, 50, 1.0)]
    assert got.engine == "simhash" and got.verdict == "pending" and got.note == ""
    # Left empty by the caller, filled from the stored mother and suspect.
    assert got.mother_title == "红楼梦"
    assert got.suspect_title == "抄袭页"
    assert got.suspect_url == "https://blog.example.com/p/1"
    assert got.domain == "blog.example.com"
    assert got.created_at.tzinfo is not None and got.updated_at.tzinfo is not None
    with pytest.raises(NotFound):
        store.get_match(match_id("s1", "m2"))


def test_put_matches_keeps_the_reviewers_work(store: Store) -> None:
    _seed_two_mothers(store)
    created = T0 - timedelta(days=3)
    store.put_matches(
        "s1",
        [
            match("s1", "m1", 0.9, created_at=created),
            match("s1", "m2", 0.8),
            match("s1", "m3", 0.7),
        ],
    )
    store.set_verdict(match_id("s1", "m1"), "confirmed", "copied verbatim")
    store.set_verdict(match_id("s1", "m2"), "dismissed", "quotation")
    first_m1 = store.get_match(match_id("s1", "m1"))

    # A re-check: m1 found again with a new score, m2 and m3 no longer found.
    store.put_matches(
        "s1", [match("s1", "m1", 0.95, created_at=T0 + timedelta(days=9), engine="minhash")]
    )
    m1 = store.get_match(match_id("s1", "m1"))
    assert m1.score == 0.95 and m1.engine == "minhash"  # machine results replaced
    assert (m1.verdict, m1.note) == ("confirmed", "copied verbatim")  # kept
    assert m1.created_at == created  # kept
    assert m1.updated_at >= first_m1.updated_at
    m2 = store.get_match(match_id("s1", "m2"))  # gone from the check but reviewed: kept
    assert (m2.verdict, m2.note, m2.score) == ("dismissed", "quotation", 0.8)
    with pytest.raises(NotFound):  # gone from the check and pending: deleted
        store.get_match(match_id("s1", "m3"))

    # A later check finding nothing removes only pending matches.
    store.put_matches("s1", [])
    assert sorted(ids(store.query_matches(MatchQuery(suspect_id="s1")))) == [
        match_id("s1", "m1"),
        match_id("s1", "m2"),
    ]


def test_put_matches_only_touches_its_suspect(store: Store) -> None:
    _seed_two_mothers(store)
    store.put_suspect(suspect("s2"))
    store.put_matches("s1", [match("s1", "m1")])
    store.put_matches("s2", [match("s2", "m1"), match("s2", "m2")])
    store.put_matches("s1", [])
    assert sorted(ids(store.query_matches(MatchQuery()))) == [
        match_id("s2", "m1"),
        match_id("s2", "m2"),
    ]


def test_put_matches_twice_is_idempotent(store: Store) -> None:
    _seed_two_mothers(store)
    batch = [match("s1", "m1", 0.9), match("s1", "m2", 0.6)]
    store.put_matches("s1", batch)
    store.put_matches("s1", batch)  # a redelivered task
    store.put_matches("s1", [*batch, match("s1", "m1", 0.9)])  # duplicate inside a batch
    assert store.count_matches(MatchQuery()) == 2
    assert sorted(ids(store.query_matches(MatchQuery()))) == ids(batch)


def test_save_checks_writes_a_chunk_and_skips_a_deleted_recheck(store: Store) -> None:
    """A chunk's writes (``save_checks``): new suspects put whole with their matches, a
    re-checked one only marked checked, one deleted meanwhile skipped with nothing."""
    _seed_two_mothers(store)
    at = T0 + timedelta(hours=1)
    fresh = suspect("s2", title="新页", checked_at=at)
    recheck = Suspect(id="s1", text="changed here, never written back", checked_at=at)
    gone = Suspect(id="gone", text="deleted meanwhile", checked_at=at)
    done = store.save_checks(
        [
            CheckWrite(fresh, [match("s2", "m1", 0.8)]),
            CheckWrite(recheck, [match("s1", "m2", 0.7)], rewrite=False),
            CheckWrite(gone, [match("gone", "m1", 0.9)], rewrite=False),
        ]
    )
    assert done == [True, True, False]
    assert store.get_suspect("s2").title == "新页"
    s1 = store.get_suspect("s1")
    assert s1.text == "text of s1" and s1.checked_at == at  # only checked_at written
    assert sorted(ids(store.query_matches(MatchQuery()))) == [
        match_id("s1", "m2"),
        match_id("s2", "m1"),
    ]
    with pytest.raises(NotFound):
        store.get_suspect("gone")


def test_put_matches_rejects_bad_input(store: Store) -> None:
    _seed_two_mothers(store)
    with pytest.raises(ValueError):
        store.put_matches("s1", [match("other", "m1")])
    with pytest.raises(ValueError):
        store.put_matches("s1", [match("s1", "m1", verdict="maybe")])
    assert store.count_matches(MatchQuery()) == 0


def test_set_verdict(store: Store) -> None:
    _seed_two_mothers(store)
    store.put_matches("s1", [match("s1", "m1")])
    mid = match_id("s1", "m1")
    before = store.get_match(mid)
    got = store.set_verdict(mid, "confirmed", "整段抄袭")
    assert (got.verdict, got.note) == ("confirmed", "整段抄袭")
    assert got.updated_at >= before.updated_at and got.created_at == before.created_at
    assert store.get_match(mid) == got
    kept = store.set_verdict(mid, "dismissed")  # note None: note unchanged
    assert (kept.verdict, kept.note) == ("dismissed", "整段抄袭")
    cleared = store.set_verdict(mid, "pending", "")
    assert (cleared.verdict, cleared.note) == ("pending", "")
    with pytest.raises(ValueError):
        store.set_verdict(mid, "guilty")
    assert store.get_match(mid).verdict == "pending"
    with pytest.raises(NotFound):
        store.set_verdict(match_id("s1", "nope"), "confirmed")


@pytest.fixture()
def seeded(store: Store) -> Store:
    """Six matches over three mothers, four suspects and several domains."""
    store.put_mother(mother("m1", "红楼梦"))
    store.put_mother(mother("m2", "Journey to the West"))
    store.put_mother(mother("m3", "水浒传"))
    rows = [
        # suspect, url, mother, score, coverage, created (days after T0), verdict
        ("s1", "https://www.example.com/a", "m1", 0.90, 0.10, 0, "confirmed"),
        ("s1", "https://www.example.com/a", "m2", 0.40, 0.60, 0, "pending"),
        ("s2", "https://example.com/b", "m1", 0.75, 0.30, 1, "dismissed"),
        ("s3", "https://badexample.com/c", "m1", 0.55, 0.90, 2, "pending"),
        ("s4", "https://news.sina.com.cn/d", "m3", 0.20, 0.50, 3, "pending"),
        ("s5", "", "m2", 0.65, 0.20, 4, "pending"),  # pasted text: no URL, no domain
    ]
    for sid, url, _mid, *_ in rows:
        store.put_suspect(suspect(sid, title=f"标题 {sid.upper()}", url=url))
    for sid, _url, mid, score, cov, day, verdict in rows:
        store.put_matches(
            sid,
            [
                *store.query_matches(MatchQuery(suspect_id=sid)),
                match(sid, mid, score, coverage=cov, created_at=T0 + timedelta(days=day)),
            ],
        )
        if verdict != "pending":
            store.set_verdict(match_id(sid, mid), verdict)
    return store


ALL_SIX = {
    "s1\x1fm1",
    "s1\x1fm2",
    "s2\x1fm1",
    "s3\x1fm1",
    "s4\x1fm3",
    "s5\x1fm2",
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (MatchQuery(), ALL_SIX),
        (MatchQuery(verdict="pending"), {"s1\x1fm2", "s3\x1fm1", "s4\x1fm3", "s5\x1fm2"}),
        (MatchQuery(verdict="confirmed"), {"s1\x1fm1"}),
        (MatchQuery(verdict="dismissed"), {"s2\x1fm1"}),
        (MatchQuery(min_score=0.55), {"s1\x1fm1", "s2\x1fm1", "s3\x1fm1", "s5\x1fm2"}),
        (MatchQuery(max_score=0.40), {"s1\x1fm2", "s4\x1fm3"}),
        (MatchQuery(min_score=0.5, max_score=0.75), {"s2\x1fm1", "s3\x1fm1", "s5\x1fm2"}),
        (MatchQuery(mother_id="m1"), {"s1\x1fm1", "s2\x1fm1", "s3\x1fm1"}),
        (MatchQuery(suspect_id="s1"), {"s1\x1fm1", "s1\x1fm2"}),
        (MatchQuery(mother_id="m1", verdict="pending"), {"s3\x1fm1"}),
        # parent domain: itself and sub-domains, never a look-alike
        (MatchQuery(domain="example.com"), {"s1\x1fm1", "s1\x1fm2", "s2\x1fm1"}),
        (MatchQuery(domain="EXAMPLE.com."), {"s1\x1fm1", "s1\x1fm2", "s2\x1fm1"}),
        (MatchQuery(domain="www.example.com"), {"s1\x1fm1", "s1\x1fm2"}),
        (MatchQuery(domain="badexample.com"), {"s3\x1fm1"}),
        (MatchQuery(domain="com"), {"s1\x1fm1", "s1\x1fm2", "s2\x1fm1", "s3\x1fm1"}),
        (MatchQuery(domain="sina.com.cn"), {"s4\x1fm3"}),
        (MatchQuery(domain="ample.com"), set()),
        (MatchQuery(domain="m.www.example.com"), set()),
        (MatchQuery(domain=""), ALL_SIX),  # empty form field = no filter
        (
            MatchQuery(since=T0 + timedelta(days=1)),
            {"s2\x1fm1", "s3\x1fm1", "s4\x1fm3", "s5\x1fm2"},
        ),
        (MatchQuery(until=T0 + timedelta(days=1)), {"s1\x1fm1", "s1\x1fm2"}),
        (
            MatchQuery(since=T0 + timedelta(days=1), until=T0 + timedelta(days=3)),
            {"s2\x1fm1", "s3\x1fm1"},
        ),
        (MatchQuery(search="红楼"), {"s1\x1fm1", "s2\x1fm1", "s3\x1fm1"}),  # mother title
        (MatchQuery(search="journey"), {"s1\x1fm2", "s5\x1fm2"}),  # case-insensitive
        (MatchQuery(search="标题 s4"), {"s4\x1fm3"}),  # suspect title, ASCII case folded
        (MatchQuery(search="SINA.com"), {"s4\x1fm3"}),  # url
        (MatchQuery(search="example.com/"), {"s1\x1fm1", "s1\x1fm2", "s2\x1fm1", "s3\x1fm1"}),
        (MatchQuery(search="www.example"), {"s1\x1fm1", "s1\x1fm2"}),
        (MatchQuery(search="wwwXexample"), set()),  # "." is literal, not a wildcard
        (MatchQuery(search="%"), set()),
        (
            MatchQuery(verdict="pending", domain="example.com", min_score=0.3, search="west"),
            {"s1\x1fm2"},
        ),
    ],
)
def test_query_matches_filters(seeded: Store, query: MatchQuery, expected: set[str]) -> None:
    got = seeded.query_matches(query)
    assert set(ids(got)) == expected
    assert len(got) == len(expected)
    assert seeded.count_matches(query) == len(expected)


def test_query_matches_since_until_are_half_open(seeded: Store) -> None:
    day1 = T0 + timedelta(days=1)
    assert "s2\x1fm1" in ids(seeded.query_matches(MatchQuery(since=day1)))
    assert "s2\x1fm1" not in ids(seeded.query_matches(MatchQuery(until=day1)))
    assert "s2\x1fm1" in ids(
        seeded.query_matches(MatchQuery(until=day1 + timedelta(microseconds=1)))
    )
    beijing = timezone(timedelta(hours=8))
    local = datetime(2024, 5, 2, 20, 0, tzinfo=beijing)  # == day1 in UTC
    assert seeded.count_matches(MatchQuery(since=local)) == 4


def test_domain_filter_edge_cases(store: Store) -> None:
    hosts = [
        "example.com",
        "www.example.com",
        "a.b.example.com",
        "badexample.com",  # a suffix look-alike
        "examples.com",  # a prefix look-alike of the reversed form (com.examples)
        "example-cdn.com",
        "example.com.evil.net",
        "example.co",
        "127.0.0.1",
    ]
    store.put_mother(mother("m"))
    for i, host in enumerate(hosts):
        sid = f"s{i}"
        store.put_suspect(suspect(sid, url=f"http://{host}:8080/x"))
        store.put_matches(sid, [match(sid, "m")])

    def domains(q: str) -> set[str]:
        return {m.domain for m in store.query_matches(MatchQuery(domain=q, limit=100))}

    assert domains("example.com") == {"example.com", "www.example.com", "a.b.example.com"}
    assert domains("b.example.com") == {"a.b.example.com"}
    assert domains("https://Example.com/some/page") == domains("example.com")  # URL accepted
    assert domains("examples.com") == {"examples.com"}
    assert domains("example.co") == {"example.co"}
    assert domains("evil.net") == {"example.com.evil.net"}
    assert domains("127.0.0.1") == {"127.0.0.1"}
    assert domains("0.0.1") == set()  # an IP address has no parent domains
    assert domains("0.127") == set()
    assert store.count_matches(MatchQuery(domain="example.com")) == 3


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("-score", ["s1\x1fm1", "s2\x1fm1", "s5\x1fm2", "s3\x1fm1", "s1\x1fm2", "s4\x1fm3"]),
        ("score", ["s4\x1fm3", "s1\x1fm2", "s3\x1fm1", "s5\x1fm2", "s2\x1fm1", "s1\x1fm1"]),
        ("-coverage", ["s3\x1fm1", "s1\x1fm2", "s4\x1fm3", "s2\x1fm1", "s5\x1fm2", "s1\x1fm1"]),
        ("coverage", ["s1\x1fm1", "s5\x1fm2", "s2\x1fm1", "s4\x1fm3", "s1\x1fm2", "s3\x1fm1"]),
        # s1's two matches share created_at: ties are broken by id
        ("created_at", ["s1\x1fm1", "s1\x1fm2", "s2\x1fm1", "s3\x1fm1", "s4\x1fm3", "s5\x1fm2"]),
        ("-created_at", ["s5\x1fm2", "s4\x1fm3", "s3\x1fm1", "s2\x1fm1", "s1\x1fm1", "s1\x1fm2"]),
    ],
)
def test_query_matches_sort(seeded: Store, sort: str, expected: list[str]) -> None:
    assert ids(seeded.query_matches(MatchQuery(sort=sort))) == expected  # type: ignore[arg-type]


def test_query_matches_offset_limit_and_count(seeded: Store) -> None:
    full = ids(seeded.query_matches(MatchQuery(sort="-score")))
    pages = [
        ids(seeded.query_matches(MatchQuery(sort="-score", offset=o, limit=4))) for o in (0, 4, 8)
    ]
    assert pages == [full[:4], full[4:], []]
    assert ids(seeded.query_matches(MatchQuery(offset=1, limit=2))) == full[1:3]
    assert seeded.query_matches(MatchQuery(limit=0)) == []
    assert seeded.count_matches(MatchQuery(offset=5, limit=1)) == 6  # paging ignored
    assert seeded.count_matches(MatchQuery(verdict="pending", limit=1)) == 4


def test_query_matches_rejects_bad_sort_and_verdict(seeded: Store) -> None:
    with pytest.raises(ValueError):
        seeded.query_matches(MatchQuery(sort="title"))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        seeded.count_matches(MatchQuery(verdict="guilty"))


def test_match_stats(seeded: Store) -> None:
    stats = seeded.match_stats()
    assert [tuple(x) for x in stats["by_day"]] == [
        ("2024-05-01", 2),
        ("2024-05-02", 1),
        ("2024-05-03", 1),
        ("2024-05-04", 1),
        ("2024-05-05", 1),
    ]
    assert stats["by_verdict"] == {"pending": 4, "confirmed": 1, "dismissed": 1}
    assert [tuple(x) for x in stats["top_mothers"]] == [
        ("m1", "红楼梦", 3),
        ("m2", "Journey to the West", 2),
        ("m3", "水浒传", 1),
    ]
    assert [tuple(x) for x in stats["top_domains"]] == [  # no entry for "" (pasted text)
        ("www.example.com", 2),
        ("badexample.com", 1),
        ("example.com", 1),
        ("news.sina.com.cn", 1),
    ]

    filtered = seeded.match_stats(MatchQuery(domain="example.com", limit=1, offset=3))
    assert filtered["by_verdict"] == {"pending": 1, "confirmed": 1, "dismissed": 1}
    assert [tuple(x) for x in filtered["by_day"]] == [("2024-05-01", 2), ("2024-05-02", 1)]
    assert [tuple(x) for x in filtered["top_mothers"]] == [
        ("m1", "红楼梦", 2),
        ("m2", "Journey to the West", 1),
    ]
    assert [tuple(x) for x in filtered["top_domains"]] == [
        ("www.example.com", 2),
        ("example.com", 1),
    ]


def test_match_stats_top_lists_have_ten_entries(store: Store) -> None:
    for i in range(12):
        store.put_mother(mother(f"m{i:02d}"))
    for j in range(12):
        sid = f"s{j:02d}"
        store.put_suspect(suspect(sid, url=f"https://d{j:02d}.example.org/"))
        store.put_matches(sid, [match(sid, f"m{i:02d}") for i in range(j + 1)])
    stats = store.match_stats()
    assert len(stats["top_mothers"]) == 10 and len(stats["top_domains"]) == 10
    assert tuple(stats["top_mothers"][0]) == ("m00", "title m00", 12)
    assert tuple(stats["top_domains"][0]) == ("d11.example.org", 12)
    counts = [x[2] for x in stats["top_mothers"]]
    assert counts == sorted(counts, reverse=True)
    assert store.match_stats(MatchQuery(verdict="confirmed")) == {
        "by_day": [],
        "by_verdict": {"pending": 0, "confirmed": 0, "dismissed": 0},
        "top_mothers": [],
        "top_domains": [],
    }


# --- users, watch list, meta ---------------------------------------------------------
def test_users(store: Store) -> None:
    assert store.get_user("alice") is None and store.list_users() == []
    alice = User("alice", "pbkdf2:x", "admin", api_token_hash="a" * 64, created_at=T0)
    bob = User("bob", "pbkdf2:y", "viewer", created_at=T0)
    store.put_user(bob)
    store.put_user(alice)
    store.put_user(User("carol", "pbkdf2:z", "analyst", created_at=T0))  # 2nd without token
    assert store.get_user("alice") == alice
    assert store.get_user("bob") == bob and bob.api_token_hash is None
    assert [u.username for u in store.list_users()] == ["alice", "bob", "carol"]
    assert store.get_user_by_token_hash("a" * 64) == alice
    assert store.get_user_by_token_hash("b" * 64) is None
    assert store.get_user_by_token_hash("") is None

    # Replace: rotate the token; the old one no longer authenticates.
    store.put_user(User("alice", "pbkdf2:x2", "analyst", api_token_hash="c" * 64, created_at=T0))
    assert store.get_user_by_token_hash("a" * 64) is None
    assert store.get_user_by_token_hash("c" * 64).role == "analyst"  # type: ignore[union-attr]
    # One token never authenticates two users.
    with pytest.raises(ValueError):
        store.put_user(User("bob", "pbkdf2:y", "viewer", api_token_hash="c" * 64))
    assert store.get_user_by_token_hash("c" * 64).username == "alice"  # type: ignore[union-attr]
    assert store.get_user("bob") == bob

    store.delete_user("alice")
    store.delete_user("nobody")  # no error
    assert store.get_user("alice") is None
    assert store.get_user_by_token_hash("c" * 64) is None
    assert [u.username for u in store.list_users()] == ["bob", "carol"]


def test_watch_list(store: Store) -> None:
    a = WatchItem("https://a.example.com/", "url", added_at=T0)
    b = WatchItem("https://b.example.com/", "site", added_at=T0 + timedelta(hours=1))
    c = WatchItem("https://c.example.com/", "url", added_at=T0 - timedelta(hours=1), active=False)
    for item in (b, a, c):
        store.put_watch(item)
    assert store.list_watch() == [a, b]
    assert store.list_watch(active_only=False) == [c, a, b]
    crawled = WatchItem(a.url, "url", added_at=T0, last_crawled_at=T0 + timedelta(days=1))
    store.put_watch(crawled)  # replace by url
    assert store.list_watch()[0] == crawled
    assert len(store.list_watch(active_only=False)) == 3
    store.delete_watch(b.url)
    store.delete_watch("https://never-added/")
    assert [w.url for w in store.list_watch(active_only=False)] == [c.url, a.url]


def test_meta_json_values(store: Store) -> None:
    assert store.get_meta("missing") is None
    values = {
        "refdist_version": "2024.05",
        "index_params": {"k": 5, "bands": [4, 8], "ratio": 0.25, "on": True, "$x.y": None},
        "count": 12345678901234,
        "list": ["中文", 1, 2.5, None],
        "flag": False,
    }
    for key, value in values.items():
        store.set_meta(key, value)
    for key, value in values.items():
        assert store.get_meta(key) == value
    store.set_meta("count", 1)
    assert store.get_meta("count") == 1
    store.set_meta("tuple", (1, 2))
    assert store.get_meta("tuple") == [1, 2]
    with pytest.raises(TypeError):
        store.set_meta("bad", object())


def test_meta_init_raise_delete_and_prefix_listing(store: Store) -> None:
    assert store.init_meta("token", "first") == "first"
    assert store.init_meta("token", "second") == "first"  # set once, then kept
    assert store.raise_meta("gen", 3) == 3
    assert store.raise_meta("gen", 2) == 3  # never lowered
    assert store.raise_meta("gen", 7) == 7 and store.get_meta("gen") == 7
    store.set_meta("w:1", {"pid": 1})
    store.set_meta("w:2", {"pid": 2})
    store.set_meta("w%", "not under w:")
    store.set_meta("x:1", 0)
    assert store.meta_items("w:") == {"w:1": {"pid": 1}, "w:2": {"pid": 2}}
    store.delete_meta("w:1")
    store.delete_meta("never-set")
    assert store.meta_items("w:") == {"w:2": {"pid": 2}} and store.get_meta("w:1") is None
    assert store.meta_items("nothing:") == {}


# --- issue 10: replacing a mother tells who displaced what ------------------------------
def test_put_mother_stores_its_fingerprints_in_the_same_write(store: Store) -> None:
    a = store.put_mother(mother("a"), fingerprints={"daguan": b"\x01" * 8, "simhash": b"\x02"})
    assert store.get_fingerprints(a.seq, "daguan") == b"\x01" * 8
    assert store.get_fingerprints(a.seq, "simhash") == b"\x02"
    assert store.fingerprint_totals("daguan") == (1, 8)
    assert store.fingerprint_totals("minhash") == (0, 0)


def test_replace_mother_returns_the_version_it_displaced(store: Store) -> None:
    first, replaced = store.replace_mother(mother("a", text="一"), {"daguan": b"old-fps!"})
    assert replaced is None
    second, replaced = store.replace_mother(mother("a", text="二"), {"daguan": b"new-fps!"})
    assert replaced is not None and replaced.seq == first.seq
    assert replaced.fingerprints == {"daguan": b"old-fps!"}
    assert store.get_fingerprints(first.seq, "daguan") is None  # deleted with the version
    assert store.get_fingerprints(second.seq, "daguan") == b"new-fps!"
    assert store.current_seqs([first.seq, second.seq, 999]) == {second.seq}
    assert store.fingerprint_totals("daguan") == (1, 8)
    assert store.fingerprint_totals("daguan", after_seq=second.seq) == (0, 0)
    assert store.last_seq() == second.seq
    third = store.put_mother(mother("b"))
    assert [m.id for m in store.iter_mothers(after_seq=second.seq)] == ["b"]
    assert store.last_seq() == third.seq
    store.delete_mother("a")
    assert store.current_seqs([second.seq]) == set()
    assert store.fingerprint_totals("daguan") == (0, 0)


# --- lifecycle -----------------------------------------------------------------------
def test_data_persists_across_reopen(backend: Backend) -> None:
    first = backend.open()
    a = first.put_mother(mother("a", "红楼梦"))
    first.put_fingerprints(a.seq, "daguan", b"\x01\x02")
    first.put_suspect(suspect("s1", raw=b"\x00raw"))
    first.put_matches("s1", [match("s1", "a", 0.8)])
    first.set_verdict(match_id("s1", "a"), "confirmed", "note")
    first.put_user(User("alice", "h", "admin", api_token_hash="t" * 64))
    first.put_watch(WatchItem("https://x.cn/"))
    first.set_meta("k", {"v": [1]})
    first.close()

    with backend.open() as second:
        assert second.get_mother("a") == a
        assert second.get_fingerprints(a.seq, "daguan") == b"\x01\x02"
        assert second.get_suspect("s1").raw == b"\x00raw"
        m = second.get_match(match_id("s1", "a"))
        assert (m.verdict, m.note, m.mother_title) == ("confirmed", "note", "红楼梦")
        assert second.get_user_by_token_hash("t" * 64).username == "alice"  # type: ignore[union-attr]
        assert [w.url for w in second.list_watch()] == ["https://x.cn/"]
        assert second.get_meta("k") == {"v": [1]}
        # The seq counter survives too: a re-put never reuses an earlier seq.
        assert second.put_mother(mother("a")).seq > a.seq


def test_sqlite_store_refuses_memory_database() -> None:
    with pytest.raises(ValueError):
        SqliteStore(":memory:")


def test_sqlite_concurrent_writes_from_threads(tmp_path: Path) -> None:
    path = tmp_path / "concurrent.sqlite3"
    store = SqliteStore(path)
    store.put_mother(mother("shared"))
    errors: list[BaseException] = []
    seqs: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def work(t: int) -> None:
        try:
            barrier.wait()
            for i in range(40):
                m = store.put_mother(mother(f"t{t}-{i}", text="内容" * 20))
                sid = f"s{t}-{i}"
                store.put_suspect(suspect(sid))
                store.put_matches(sid, [match(sid, m.id, 0.5), match(sid, "shared", 0.7)])
                store.set_meta(f"thread-{t}", i)
                store.list_mothers(limit=5)  # reads interleaved with writes
                with lock:
                    seqs.append(m.seq)
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(seqs) == len(set(seqs)) == 320
    assert store.count_mothers() == 321
    assert store.count_suspects() == 320
    assert store.count_matches(MatchQuery()) == 640
    assert store.count_matches(MatchQuery(mother_id="shared")) == 320
    assert all(store.get_meta(f"thread-{t}") == 39 for t in range(8))
    store.close()


def test_sqlite_concurrent_replacements_each_learn_what_they_displaced(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "swap.sqlite3")
    results: list[tuple[int, int | None]] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        for i in range(15):
            stored, replaced = store.replace_mother(mother("same", text=f"{n}-{i}"))
            with lock:
                results.append((stored.seq, replaced.seq if replaced else None))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    displaced = [old for _, old in results if old is not None]
    # Every version but the last was displaced exactly once, and by exactly one writer.
    final = store.get_mother("same").seq
    assert sorted(displaced) == sorted(seq for seq, _ in results if seq != final)
    assert sum(old is None for _, old in results) == 1
    store.close()


def test_sqlite_concurrent_writes_from_processes(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    SqliteStore(path).close()  # schema created once, as `yinji init` would
    script = textwrap.dedent(
        """
        import sys
        from tracker.store import Mother, SqliteStore
        store = SqliteStore(sys.argv[1])
        for i in range(150):
            store.put_mother(Mother(id=f"p{sys.argv[2]}-{i}", title="t", text="x"))
            store.put_mother(Mother(id="contended", title=sys.argv[2], text="x"))
        store.close()
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(path), str(n)], cwd=REPO)
        for n in range(3)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    with SqliteStore(path) as store:
        assert store.count_mothers() == 451
        seqs = [m.seq for m in store.iter_mothers()]
        assert len(seqs) == len(set(seqs))
        # 900 puts handed out 900 distinct seqs; the last write of "contended" holds one.
        assert store.get_mother("contended").seq <= 900
        assert store.get_mothers_by_seq(range(1, 901)).keys() == set(seqs)


def test_sqlite_bulk_put_mother(tmp_path: Path) -> None:
    # Speed is measured in bench/, not here: this checks 10k puts give 10k distinct seqs.
    store = SqliteStore(tmp_path / "bulk.sqlite3")
    seqs = {
        store.put_mother(Mother(id=f"m{i}", title=f"标题{i}", text="床前明月光，疑是地上霜。")).seq
        for i in range(10_000)
    }
    assert store.count_mothers() == 10_000 and len(seqs) == 10_000
    store.close()


def test_sqlite_uses_wal_and_declares_indexes(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "x.sqlite3"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        indexed = set()  # (table, leading column) of every index, implicit ones included
        for table, idx in conn.execute(
            "SELECT tbl_name, name FROM sqlite_master WHERE type = 'index'"
        ).fetchall():
            leading = conn.execute(f"PRAGMA index_info('{idx}')").fetchone()[2]
            indexed.add((table, leading))
    finally:
        conn.close()
    for needed in [
        ("mothers", "id"),
        ("mothers", "seq"),
        ("mothers", "ingested_at"),
        ("suspects", "id"),
        ("fingerprints", "seq"),
        ("matches", "id"),
        ("matches", "suspect_id"),
        ("matches", "mother_id"),
        ("matches", "verdict"),
        ("matches", "score"),
        ("matches", "created_at"),
        ("matches", "rdomain"),
        ("users", "api_token_hash"),
    ]:
        assert needed in indexed, needed


def test_mongo_declares_indexes() -> None:
    mongomock = pytest.importorskip("mongomock")
    from tracker.store.mongo import MongoStore

    store = MongoStore(mongomock.MongoClient(), db_name="idx")
    info = store.db["mothers"].index_information()
    assert any(v.get("unique") and v["key"] == [("seq", 1)] for v in info.values())
    users = store.db["users"].index_information()
    assert any(v.get("unique") and v["key"] == [("api_token_hash", 1)] for v in users.values())
    match_keys = {
        tuple(k for k, _ in v["key"]) for v in store.db["matches"].index_information().values()
    }
    for key in [
        ("suspect_id",),
        ("mother_id",),
        ("score", "_id"),
        ("created_at", "_id"),
        ("coverage", "_id"),
        ("verdict", "score", "_id"),
        ("rdomain",),
    ]:
        assert key in match_keys
    MongoStore(mongomock.MongoClient(), db_name="idx")  # idempotent on an existing db


# --- package -------------------------------------------------------------------------
def test_importing_tracker_store_does_not_import_pymongo() -> None:
    code = "import tracker.store, sys; assert 'pymongo' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_open_store_picks_sqlite_and_creates_the_data_folder(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "new" / "yinji-data")
    store = open_store(settings)
    try:
        assert isinstance(store, SqliteStore)
        assert settings.sqlite_path.exists()
        store.put_mother(mother("a"))
    finally:
        store.close()


def test_open_store_picks_mongo_when_a_uri_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    mongomock = pytest.importorskip("mongomock")
    import pymongo

    from tracker.store.mongo import MongoStore

    client = mongomock.MongoClient()
    seen: dict[str, object] = {}

    def fake_client(uri: str, **kwargs: object) -> object:
        seen["uri"], seen["kwargs"] = uri, kwargs
        return client

    monkeypatch.setattr(pymongo, "MongoClient", fake_client)
    settings = Settings(mongo_uri="mongodb://db.example:27017", mongo_db="prod")
    store = open_store(settings)
    assert isinstance(store, MongoStore)
    # An unreachable server fails in 10 s, not pymongo's 30 s (unless the URI says).
    assert seen == {
        "uri": "mongodb://db.example:27017",
        "kwargs": {"tz_aware": True, "serverSelectionTimeoutMS": 10_000},
    }
    store.put_mother(mother("a"))
    assert client["prod"]["mothers"].count_documents({}) == 1
    store.close()
