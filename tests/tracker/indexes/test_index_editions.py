"""Issue 25: copies of a much-duplicated work were never reported. With ``stop_df`` 16, a
text held by 17 works had every fingerprint turned into a stop marker, and a copy of it
got 0 matches (16 copies gave 16). The daguan index now counts a fingerprint over distinct
texts: identical or near-identical mothers are one edition group
(``tracker.indexes.editions``), and a copy is reported against every edition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textgen import homophones, work

from tracker.documents.readers import Document
from tracker.engines.daguan import DaguanEngine
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import open_store

TEXT = work(2501, 60)
COPY = TEXT[300:1500]  # what a pirate site shows


def _editions() -> list[Document]:
    """17 identical works, a homophone edition (same pinyin initials: the same
    fingerprints), two with an ending of their own, and two unrelated works."""
    docs = [Document(id=f"same{i:02d}", title="同一部作品", text=TEXT) for i in range(17)]
    docs.append(Document(id="homophones", title="同音版", text=homophones(TEXT)))
    for i in range(2):
        docs.append(Document(id=f"ending{i}", title="结尾不同", text=TEXT + work(2600 + i, 4)))
    docs += [Document(id=f"other{i}", title="别的作品", text=work(2700 + i, 60)) for i in range(2)]
    return docs


EDITIONS = {d.id for d in _editions() if not d.id.startswith("other")}


@pytest.fixture()
def lib(tmp_path: Path, redis_client: Any) -> Any:
    settings = Settings(data_dir=tmp_path, redis_prefix="ed")
    library = Library(settings, open_store(settings), redis_client)
    yield library
    library.store.close()


def _found(lib: Library, text: str = COPY) -> set[str]:
    return {m.mother_id for m in lib.check_text(text).matches}


def test_a_copy_of_a_work_held_17_times_is_reported_against_every_edition(lib: Library) -> None:
    # One ingest into the empty index (the bulk loader), then one more through adds.
    docs = _editions()
    lib.ingest(docs[:-3])
    lib.ingest(docs[-3:], batch_size=1)
    assert _found(lib) == EDITIONS  # 20 editions; on main: none
    stats = lib.engine("daguan").stats()
    assert stats["stop_fingerprints"] == 0  # one text, whatever its number of copies
    # The same after a rebuild (the bulk loader groups the store's mothers again).
    lib.rebuild_index()
    assert _found(lib) == EDITIONS


def test_editions_added_one_by_one_and_deleted(lib: Library) -> None:
    docs = _editions()
    for doc in docs:  # every one through the add path, against the index
        lib.ingest([doc])
    assert _found(lib) == EDITIONS
    # The group's first mother goes: the others are still found, it is not.
    assert lib.delete_mother("same00")
    assert _found(lib) == EDITIONS - {"same00"}
    for doc in docs:
        if doc.id in EDITIONS and doc.id not in ("same00", "ending1"):
            assert lib.delete_mother(doc.id)
    assert _found(lib) == {"ending1"}
    assert lib.delete_mother("ending1")
    assert _found(lib) == set()
    # The unrelated works are untouched.
    assert _found(lib, work(2701, 60)[200:1200]) == {"other1"}


def test_a_replaced_edition_is_reported_with_its_new_text(lib: Library) -> None:
    lib.ingest(_editions())
    lib.ingest([Document(id="same05", title="改写", text=work(2800, 60))])
    assert _found(lib) == EDITIONS - {"same05"}
    assert _found(lib, work(2800, 60)[100:1000]) == {"same05"}


def test_boilerplate_shared_by_distinct_works_still_stops(redis_client: Any) -> None:
    """Editions are counted once, distinct texts each: a fingerprint held by 20 different
    mothers is still a stop marker, one held by 20 copies of one text is not."""
    eng = DaguanEngine(redis_client, "ed-unit", stop_df=16)
    rng = np.random.default_rng(5)
    formula = rng.integers(0, 2**63, 3, dtype=np.uint64)
    distinct = [
        (s, np.concatenate([rng.integers(0, 2**63, 400, dtype=np.uint64), formula]))
        for s in range(1, 21)
    ]
    copies = rng.integers(0, 2**63, 400, dtype=np.uint64)
    eng.add(distinct + [(s, copies) for s in range(100, 120)])
    _, posted, stopped = eng.index.lookup(np.concatenate([formula, copies[:5]]))
    assert stopped == 3  # the formula: 20 texts
    assert set(posted.tolist()) == {100}  # the copies: one group, posted under its first
    assert eng.index.members([100])[100] == list(range(100, 120))


def test_a_chapter_of_a_book_is_not_an_edition_of_it(lib: Library) -> None:
    """A mother the group holds but much smaller (a chapter of a book) has its own group:
    it is not reported for a copy of another chapter."""
    lib.ingest([Document(id="book", title="全书", text=TEXT)])
    lib.ingest([Document(id="chapter", title="第一章", text=TEXT[:900])])
    groups = lib.engine("daguan").index.editions
    assert groups is not None
    seqs = {m.id: m.seq for m in lib.store.iter_mothers()}
    assert groups.group_of([seqs["chapter"]]) == {seqs["chapter"]: seqs["chapter"]}
    assert _found(lib, TEXT[2000:3000]) == {"book"}
    assert _found(lib, TEXT[:900]) == {"book", "chapter"}


def test_near_identical_copies_with_scattered_edits_are_all_reported(lib: Library) -> None:
    """24 editions, each with its own 0.5 % of characters replaced: grouped by their
    shared fingerprints, all reported (counted over mothers, 2 of 24 were)."""
    from textgen import random_edits

    docs = [
        Document(id=f"e{i:02d}", title="版本", text=random_edits(TEXT, 0.005, i)) for i in range(24)
    ]
    lib.ingest(docs[:12])
    lib.ingest(docs[12:], batch_size=4)
    assert _found(lib) == {d.id for d in docs}
    assert lib.engine("daguan").stats()["stop_fingerprints"] == 0


@pytest.mark.slow
def test_editions_on_a_redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The registry's commands each touch one key: on a real 3-master cluster 20 copies
    are one group, found with all 20 editions, and leave it one by one."""
    from redis_cluster import RedisClusterNodes

    from tracker.indexes.redis_client import connect_url

    nodes = RedisClusterNodes(tmp_path_factory.mktemp("redis-cluster-editions"))
    try:
        nodes.start()
        client = connect_url(nodes.url)
        eng = DaguanEngine(client, "edc")
        fps = eng.mother_fingerprints(TEXT)
        eng.add([(s, fps) for s in range(1, 21)])
        assert {c.seq for c in eng.candidates_with_evidence(COPY)} == set(range(1, 21))
        eng.remove([(s, fps) for s in range(1, 20)])
        assert {c.seq for c in eng.candidates_with_evidence(COPY)} == {20}
        eng.remove([(20, fps)])
        assert eng.candidates_with_evidence(COPY) == []
        client.close()
    finally:
        nodes.close()


def test_a_text_inside_17_different_works_is_still_reported(lib: Library) -> None:
    """The case edition groups cannot cover: the work, then 17 different works that each
    hold it whole with other text around it (anthologies, or copies padded on purpose),
    so its fingerprints are held by 18 distinct texts and are stop words. The stop
    markers keep their first holders, and a long run of stopped windows in a suspect
    proposes them: the copy is reported against the work (and the first anthologies),
    not a silent "no match"."""
    lib.ingest([Document(id="original", title="原作", text=TEXT)])
    padded = [
        Document(id=f"anthology{i:02d}", title="合集", text=TEXT + work(3000 + i, 50))
        for i in range(17)
    ]
    lib.ingest(padded)
    stats = lib.engine("daguan").stats()
    assert stats["stop_fingerprints"] > 100 and stats["edition_mothers"] == 0
    found = _found(lib)
    assert "original" in found and found <= {"original"} | {d.id for d in padded}
    # A suspect of other text gets nothing from it.
    assert _found(lib, work(3999, 30)) == set()
