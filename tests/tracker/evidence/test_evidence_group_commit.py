"""Group commit of the evidence log (issue #29): a chunk's records appended in one
commit, all or none, each ``once`` key appended once however often the chunk runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tracker.evidence.keys import SigningKey
from tracker.evidence.log import EvidenceLog
from tracker.evidence.merkle import MemoryTree
from tracker.evidence.records import PendingRecord
from tracker.evidence.settings import EvidenceSettings
from tracker.evidence.sqlite import SqliteBackend


def chunk(n: int, run: str = "task-1") -> list[PendingRecord]:
    """What a chunk of ``n`` handed-in checks appends: a submission and a check each."""
    records = []
    for i in range(n):
        key = f"{run}:{i}:s{i}"
        records.append(
            PendingRecord("submission", {"suspect_id": f"s{i}", "i": i}, once=f"{key}:submission")
        )
        records.append(
            PendingRecord("check", {"suspect_id": f"s{i}", "matches": []}, once=f"{key}:check")
        )
    return records


class Statements:
    """The SQL statements a sqlite connection runs (its trace callback)."""

    def __init__(self, db: Any) -> None:
        self.seen: list[str] = []
        db.set_trace_callback(self.seen.append)

    def count(self, word: str) -> int:
        return sum(1 for s in self.seen if s.strip().upper().startswith(word))


@pytest.fixture()
def sqlite_log(tmp_path: Path, no_env: None) -> Any:
    log = EvidenceLog.open(tmp_path, evidence=EvidenceSettings(), key=SigningKey.generate())
    yield log
    log.close()


def test_a_chunk_of_records_is_one_transaction(sqlite_log: EvidenceLog) -> None:
    assert isinstance(sqlite_log.backend, SqliteBackend)
    sqlite_log.record_case_state(suspect_id="before", state="noted")
    traced = Statements(sqlite_log.backend.db)
    entries = sqlite_log.append_many(chunk(25))
    assert (traced.count("BEGIN"), traced.count("COMMIT")) == (1, 1)
    assert [e.index for e in entries] == list(range(1, 51))
    # The same 50 records one at a time: a commit each (what a check paid before).
    traced.seen.clear()
    for record in chunk(25, run="task-2"):
        sqlite_log.append(record.kind, record.payload, once=record.once)
    assert traced.count("COMMIT") == 50
    assert sqlite_log.audit().ok
    tree = MemoryTree.of_entries(sqlite_log.entry(i).data for i in range(sqlite_log.size))
    assert sqlite_log.root() == tree.root(101)


def test_a_chunk_run_again_appends_nothing_twice(make_log: Any) -> None:
    log = make_log()
    first = log.append_many(chunk(10))
    size = log.size
    again = log.append_many(chunk(10))
    assert log.size == size == 20
    assert [(e.index, e.data) for e in again] == [(e.index, e.data) for e in first]
    # A chunk of which only the first records landed (MongoDB: a crash inside its
    # insert_many) appends the rest, each once, when it runs again.
    log.append_many(chunk(3, run="task-2"))
    rest = log.append_many(chunk(10, run="task-2"))
    assert log.size == 40
    assert [e.index for e in rest] == list(range(20, 40))
    assert [e.payload["i"] for e in rest if e.kind == "submission"] == list(range(10))
    # The same key twice in one chunk: one record.
    twice = log.append_many([chunk(1, run="t3")[0], chunk(1, run="t3")[0]])
    assert twice[0].index == twice[1].index == 40 and log.size == 41
    assert log.audit().ok


def test_a_failure_inside_the_commit_leaves_none_of_the_chunk(
    sqlite_log: EvidenceLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqlite_log.append_many(chunk(2, run="earlier"))
    real = SqliteBackend._complete_nodes
    calls = []

    def failing(self: SqliteBackend, index: int, leaf: bytes) -> None:
        calls.append(index)
        if len(calls) == 7:
            raise OSError("disk gone")
        real(self, index, leaf)

    monkeypatch.setattr(SqliteBackend, "_complete_nodes", failing)
    with pytest.raises(OSError):
        sqlite_log.append_many(chunk(5))
    assert sqlite_log.size == 4
    monkeypatch.setattr(SqliteBackend, "_complete_nodes", real)
    assert [e.index for e in sqlite_log.append_many(chunk(5))] == list(range(4, 14))
    assert sqlite_log.audit().ok


_KILLED_MID_CHUNK = """
import os, signal, sys
from tracker.evidence.log import EvidenceLog
from tracker.evidence.records import PendingRecord
from tracker.evidence.sqlite import SqliteBackend
from tracker.evidence.settings import EvidenceSettings

folder, n = sys.argv[1], int(sys.argv[2])
log = EvidenceLog.open(folder, evidence=EvidenceSettings())  # the folder's key file
real = SqliteBackend._complete_nodes
seen = []
def dying(self, index, leaf):
    seen.append(index)
    if len(seen) == n:  # inside the transaction, records inserted, before COMMIT
        os.kill(os.getpid(), signal.SIGKILL)
    real(self, index, leaf)
SqliteBackend._complete_nodes = dying
records = []
for i in range(10):
    key, subject = f"task-1:{i}:s{i}", f"s{i}"
    submission = {"suspect_id": subject, "i": i}
    records.append(PendingRecord("submission", submission, once=key + ":submission"))
    check = {"suspect_id": subject, "matches": []}
    records.append(PendingRecord("check", check, once=key + ":check"))
log.append_many(records)
"""


def test_a_chunk_killed_before_its_commit_leaves_nothing_and_runs_once_again(
    tmp_path: Path, no_env: None
) -> None:
    with EvidenceLog.open(tmp_path, evidence=EvidenceSettings()) as log:
        log.record_case_state(suspect_id="before", state="noted")
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED_MID_CHUNK), str(tmp_path), "15"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    with EvidenceLog.open(tmp_path, evidence=EvidenceSettings()) as log:
        assert log.size == 1  # none of the chunk's 20 records
        assert log.audit().ok
        again = log.append_many(chunk(10))  # the redelivered chunk
        assert [e.index for e in again] == list(range(1, 21))
        assert log.append_many(chunk(10)) == again and log.size == 21
        assert log.audit().ok
        assert log.check_consistency() == 21
