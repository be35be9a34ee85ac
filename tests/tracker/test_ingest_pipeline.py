"""Ingest's index writes are gathered over store batches (``INDEX_FLUSH_POSTINGS``) and
written in a few large writes, so Redis gets tens of postings per bucket per write
instead of a handful; everything ingested is found, and a flush size is honoured."""

from __future__ import annotations

from typing import Any

import pytest
from textgen import work

from tracker.documents.readers import Document
from tracker.indexes import writer as index_writer
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import open_store


@pytest.fixture()
def lib(tmp_path, redis_client):
    settings = Settings(data_dir=tmp_path, redis_prefix="pipe")
    library = Library(settings, open_store(settings), redis_client)
    yield library
    library.store.close()


def _docs(first: int, last: int) -> list[Document]:
    return [
        Document(id=f"p{i}", title=f"篇{i}", text=work(900 + i, 15)) for i in range(first, last)
    ]


def _record_adds(lib: Library, monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    eng = lib.engine()
    calls: list[list[int]] = []
    add = eng.add

    def recording_add(items: Any) -> Any:
        items = list(items)
        calls.append([seq for seq, _ in items])
        return add(items)

    monkeypatch.setattr(eng, "add", recording_add)
    # The gathered-write path (an index that already holds postings): an ingest into an
    # empty index bulk loads at its end instead (tests/test_index_bulk_load.py).
    monkeypatch.setattr(eng, "bulk_loader", lambda folder, chars=0: None)
    return calls


def test_store_batches_are_indexed_in_one_write(lib, monkeypatch) -> None:
    calls = _record_adds(lib, monkeypatch)
    report = lib.ingest(_docs(0, 12), batch_size=3)  # four store batches
    assert report.ingested == 12
    assert calls == [list(range(1, 13))]
    for i in (0, 5, 11):
        probe = work(900 + i, 15)[300:1100]
        assert [m.mother_id for m in lib.check_text(probe).matches] == [f"p{i}"]


def test_a_write_goes_out_once_enough_postings_are_gathered(lib, monkeypatch) -> None:
    calls = _record_adds(lib, monkeypatch)
    per_doc = len(lib.engine().mother_fingerprints(work(900, 15)))
    # Flush after about two documents' postings: batches of one document are written
    # two at a time, and the odd one at the end.
    monkeypatch.setattr(index_writer, "INDEX_FLUSH_POSTINGS", int(per_doc * 1.5))
    lib.ingest(_docs(0, 5), batch_size=1)
    assert calls == [[1, 2], [3, 4], [5]]
    probe = work(904, 15)[300:1100]
    assert [m.mother_id for m in lib.check_text(probe).matches] == ["p4"]


def test_replacements_gathered_with_adds_leave_only_the_new_version(lib) -> None:
    lib.ingest(_docs(0, 4), batch_size=2)
    changed = [Document(id="p1", title="改", text=work(950, 15)), *_docs(4, 6)]
    report = lib.ingest(changed, batch_size=1)
    assert report.replaced == 1
    assert lib.check_text(work(901, 15)[300:1100]).matches == []
    assert [m.mother_id for m in lib.check_text(work(950, 15)[300:1100]).matches] == ["p1"]
