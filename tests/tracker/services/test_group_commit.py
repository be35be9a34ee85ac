"""A chunk of checks saved together (issue #29): one store transaction and one commit of
the evidence log for the chunk, its records all or none, once however often it runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textgen import work

from tracker.documents.readers import Document
from tracker.evidence.sqlite import SqliteBackend
from tracker.library import Library
from tracker.matching.longtext import SuspectTooLarge
from tracker.plumbing.config import Settings
from tracker.services.check import Submitted
from tracker.store import MatchQuery, SqliteStore, Suspect, open_store


@pytest.fixture()
def lib(tmp_path: Path, redis_client: Any) -> Iterator[Library]:
    settings = Settings(data_dir=tmp_path, redis_prefix="gc", max_suspect_chars=5000)
    library = Library(settings, open_store(settings), redis_client)
    library.ingest(
        [Document(id=f"work-{i}", title=f"作品{i}", text=work(300 + i, 40)) for i in range(3)]
    )
    yield library
    library.evidence.close()
    library.store.close()  # not library.close(): the Redis server is the session's


def texts(n: int) -> list[Suspect]:
    """Half copy a mother (work-1), half are unrelated."""
    copied = work(301, 40)[100:700]
    return [
        Suspect(id=f"t{i}", text=work(800 + i, 8) + (copied if i % 2 == 0 else ""))
        for i in range(n)
    ]


def counting_store_transactions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    opened: list[int] = []
    real = SqliteStore._tx

    def counted(self: SqliteStore) -> Any:
        opened.append(1)
        return real(self)

    monkeypatch.setattr(SqliteStore, "_tx", counted)
    return opened


def test_a_chunk_is_saved_in_one_store_and_one_evidence_commit(
    lib: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = lib.evidence_log()
    assert isinstance(log.backend, SqliteBackend)
    commits: list[str] = []
    log.backend.db.set_trace_callback(
        lambda sql: commits.append(sql) if sql.strip().upper() == "COMMIT" else None
    )
    store_tx = counting_store_transactions(monkeypatch)
    big = Suspect(id="big", text=work(999, 200))  # over max_suspect_chars: its own error
    items = [(s, Submitted(None, f"run-1:{i}")) for i, s in enumerate([*texts(6), big])]
    seen: list[int] = []
    outcomes = lib.check_submitted_many(items, progress=seen.append)
    assert seen == list(range(1, 8))
    assert isinstance(outcomes[-1], SuspectTooLarge)
    assert (len(store_tx), len(commits)) == (1, 1)
    for i in range(6):
        kinds = [e.kind for e in log.entries(suspect_id=f"t{i}")]
        assert kinds == ["submission", "check"]
        matched = [m.mother_id for m in lib.store.query_matches(MatchQuery(suspect_id=f"t{i}"))]
        assert matched == (["work-1"] if i % 2 == 0 else [])
    assert log.entries(suspect_id="big") == []
    assert log.size == 12 and log.audit().ok


def test_a_chunk_whose_evidence_commit_fails_records_nothing_and_runs_once_again(
    lib: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = lib.evidence_log()
    items = [(s, Submitted(None, f"run-1:{i}")) for i, s in enumerate(texts(4))]
    real = SqliteBackend._complete_nodes
    calls: list[int] = []

    def failing(self: SqliteBackend, index: int, leaf: bytes) -> None:
        calls.append(index)
        if len(calls) == 5:  # the third check's submission: inside the one transaction
            raise OSError("the disk went away")
        real(self, index, leaf)

    monkeypatch.setattr(SqliteBackend, "_complete_nodes", failing)
    with pytest.raises(OSError):
        lib.check_submitted_many(items)
    assert log.size == 0  # none of the chunk's records
    monkeypatch.setattr(SqliteBackend, "_complete_nodes", real)
    lib.check_submitted_many(items)  # the redelivered chunk
    lib.check_submitted_many(items)  # and once more: nothing appended twice
    assert log.size == 8
    assert [e.kind for e in log.entries(suspect_id="t2")] == ["submission", "check"]
    assert log.audit().ok


def test_a_recheck_group_saves_together_and_skips_a_deleted_suspect(
    lib: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib.check_submitted_many([(s, Submitted()) for s in texts(4)])
    log = lib.evidence_log()
    before = log.size
    store_tx = counting_store_transactions(monkeypatch)
    ids = ["t0", "t1", "gone", "t2", "t3"]
    assert lib.recheck_suspects(ids=ids, once="recheck-1") == 4
    assert len(store_tx) == 1
    assert log.size == before + 4
    assert lib.recheck_suspects(ids=ids, once="recheck-1") == 4
    assert log.size == before + 4  # the chunk again: its check records are kept once
    assert log.audit().ok
