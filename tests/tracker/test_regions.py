"""Issue #39, readable regions: a chapter copied with a pirate ad line after every
sentence or two is one region (not a passage per sentence), with the ad lines listed as
excluded spans and the region's own similarity; regions go out in ``check --json`` and
are stored with the match (sqlite and MongoDB)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from adcopy import ADS, CHAPTER, ad_dense, prose

from tracker.common.records import Match, Mother, Passage, Region, Suspect
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.services.results import CheckResult
from tracker.store import SqliteStore, Store
from tracker.text.noise import regions
from tracker.text.pinyin import initial_codes


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    folder = tmp_path_factory.mktemp("regions") / "data"
    with Library.open(Settings(data_dir=folder)) as lib:
        lib.ingest([Document(id="chapter", title="第一章", text=CHAPTER)])
        lib.ingest([Document(id="other", title="别的", text=prose(7, 200))])
        yield lib


def test_an_ad_dense_copy_is_one_region_with_the_ads_excluded(library: Library) -> None:
    text, ads = ad_dense(CHAPTER, 1)
    assert len(ads) > 150
    checked = library.check_suspect(Suspect(id="pirate", text=text), save=True)
    (match,) = checked.matches
    assert match.mother_id == "chapter"
    assert len(match.passages) > 50  # what a person had to read before regions
    assert 1 <= len(match.regions) <= 3
    excluded = [span for r in match.regions for span in r.excluded]
    # Every excluded span is an ad line, and every ad line inside a region is excluded.
    assert set(excluded) <= set(ads)
    inside = [
        (a, b) for a, b in ads for r in match.regions if r.suspect_start < a and b < r.suspect_end
    ]
    assert sorted(excluded) == sorted(inside)
    assert len(inside) >= len(ads) - 2  # the ad after the last sentence is outside
    for r in match.regions:
        assert r.similarity >= 0.95
        assert not any(ad in CHAPTER[r.mother_start : r.mother_end] for ad in ADS)
    # The region spans the copy in both texts.
    covered = sum(r.mother_end - r.mother_start for r in match.regions)
    assert covered >= 0.97 * len(CHAPTER)
    # check --json carries them, passages unchanged; the store kept them.
    (line,) = CheckResult(checked.suspect, checked.result).to_json()["matches"]
    assert line["regions"] == [r.to_dict() for r in match.regions]
    assert line["passages"] == [p.to_dict() for p in match.passages]
    assert library.store.get_match(match.id).regions == match.regions
    # The report's data (JSON report) shows them, with the excluded lines' text.
    from tracker.reports.data import report_data

    data = report_data(library, match.id)
    assert [(r["suspect_start"], r["suspect_end"]) for r in data["regions"]] == [
        (r.suspect_start, r.suspect_end) for r in match.regions
    ]
    assert {x["suspect_text"] for r in data["regions"] for x in r["excluded"]} <= set(ADS)


def test_a_copy_with_edits_is_one_region_with_nothing_excluded(library: Library) -> None:
    rng = random.Random(3)
    copy = list(CHAPTER[1000:3000])
    for i in rng.sample(range(len(copy)), 40):  # 2 % of the characters replaced
        copy[i] = chr(rng.randrange(0x6000, 0x7000))
    text = "".join(copy)
    (match,) = library.check_text(text).matches
    (region,) = match.regions
    assert region.excluded == []
    assert 0.85 <= region.similarity < 1.0


def test_regions_from_passages_split_where_the_mother_jumps() -> None:
    mother = "甲乙丙丁戊己庚辛壬癸" * 30
    suspect = mother[0:50] + "\n广告广告广告\n" + mother[50:100] + mother[200:260]
    offsets = initial_codes(suspect)[1]
    passages = [
        Passage(0, 50, 0, 50, 1.0),
        Passage(58, 108, 50, 100, 0.9),
        Passage(108, 168, 200, 260, 1.0),
    ]
    # The second and third follow in the suspect but not in the mother (100 skipped
    # there is within reach); a rule that allows no skip makes two regions.
    one = regions(passages, suspect, mother, offsets)
    assert [(r.suspect_start, r.suspect_end, r.excluded) for r in one] == [(0, 168, [(51, 57)])]
    from tracker.text.noise import RegionRule

    two = regions(passages, suspect, mother, offsets, RegionRule(max_mother_gap=50))
    assert [(r.suspect_start, r.suspect_end) for r in two] == [(0, 108), (108, 168)]
    assert two[0].similarity == pytest.approx((50 * 1.0 + 50 * 0.9) / 100)
    assert two[0].excluded == [(51, 57)]


def _round_trip(store: Store) -> None:
    store.put_mother(Mother(id="m", title="原作", text=CHAPTER))
    region = Region(0, 120, 10, 118, 0.9876, [(30, 41), (80, 89)])
    m = Match("s", "m", 0.9, 0.5, 0.1, [Passage(0, 30, 10, 40, 1.0)], regions=[region])
    store.put_suspect(Suspect(id="s", text=CHAPTER[:200]))
    store.put_matches("s", [m])
    back = store.get_match(m.id)
    assert back.regions == [region]
    assert json.loads(json.dumps(back.regions[0].to_dict()))["excluded"][1] == {
        "suspect_start": 80,
        "suspect_end": 89,
    }


def test_regions_round_trip_in_sqlite(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "yinji.sqlite3")
    try:
        _round_trip(store)
    finally:
        store.close()


def test_a_store_made_before_regions_gains_the_column(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite3"
    SqliteStore(path).close()
    with sqlite3.connect(path) as conn:  # as a store written before issue #39
        conn.execute("ALTER TABLE matches DROP COLUMN regions")
    store = SqliteStore(path)
    try:
        _round_trip(store)
    finally:
        store.close()


@pytest.mark.slow
def test_regions_round_trip_in_mongo() -> None:
    pytest.importorskip("mongomock")
    import pymongo
    from mongo_wire import mongo_wire_server

    from tracker.store.mongo import MongoStore

    with mongo_wire_server() as server:
        client = pymongo.MongoClient(server.uri, tz_aware=True)
        store = MongoStore(client, db_name="yinji_regions")
        try:
            _round_trip(store)
        finally:
            store.close()
            client.close()
