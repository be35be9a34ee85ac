"""The evidence log on both backends: appends, proofs, signed heads, refusal of rewrites,
and an audit that finds what was changed behind its back."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from tracker.common.records import Match, Passage
from tracker.evidence.canonical import parse_json_object
from tracker.evidence.keys import EvidenceKeyError, SigningKey, TreeHead
from tracker.evidence.log import EvidenceLog
from tracker.evidence.merkle import MemoryTree, verify_consistency, verify_inclusion
from tracker.evidence.records import KINDS, EvidenceError, Stamp
from tracker.evidence.settings import EvidenceSettings


def fill(log: EvidenceLog, n: int) -> None:
    for i in range(n):
        log.record_case_state(suspect_id=f"s{i % 3}", state="noted", detail={"i": i})


def test_records_are_canonical_bytes_with_rfc6962_leaf_hashes(make_log: Any) -> None:
    log = make_log()
    entry = log.record_verdict(suspect_id="s1", mother_id="m1", verdict="confirmed", by="alice")
    assert entry.index == 0
    assert entry.leaf_hash == hashlib.sha256(b"\x00" + entry.data).digest()
    assert entry.data == (
        b'{"kind":"verdict","logged_at":"2024-11-22T08:30:07.123Z","payload":{"at":'
        b'"2024-11-22T08:30:06.123Z","by":"alice","mother_id":"m1","note":null,'
        b'"suspect_id":"s1","verdict":"confirmed"},"version":"yinji-log-entry/1"}'
    )
    assert entry.kind == "verdict" and entry.payload["verdict"] == "confirmed"
    assert log.entry(0) == entry


def test_indexes_are_consecutive_and_the_root_is_the_rfc_root(make_log: Any) -> None:
    log = make_log()
    entries = [log.append("case_state", {"suspect_id": "s", "n": i}) for i in range(37)]
    assert [e.index for e in entries] == list(range(37))
    assert log.size == 37
    tree = MemoryTree.of_entries(e.data for e in entries)
    for size in (1, 2, 5, 16, 37):
        assert log.root(size) == tree.root(size)


def test_inclusion_and_consistency_proofs_verify(make_log: Any) -> None:
    log = make_log()
    fill(log, 21)
    first = log.tree_head()
    fill(log, 12)
    second = log.tree_head()
    assert (first.head.size, second.head.size) == (21, 33)
    for i in range(33):
        entry = log.entry(i)
        proof = log.inclusion_proof(i, 33)
        assert verify_inclusion(entry.leaf_hash, i, 33, proof, second.head.root_hash)
    proof = log.consistency_proof(21, 33)
    assert verify_consistency(21, 33, first.head.root_hash, second.head.root_hash, proof)


def test_tree_heads_are_signed_reused_and_monotonic(make_log: Any) -> None:
    log = make_log()
    assert log.tree_head().head.size == 0  # an empty log has a head too
    fill(log, 3)
    head = log.tree_head()
    assert head.signed.verify(log.key.public_key)
    assert head.head.log_id == log.key_id
    assert log.tree_head().id == head.id  # not grown: the same head
    fresh = log.tree_head(fresh=True)
    assert fresh.id != head.id and fresh.head.timestamp_ms >= head.head.timestamp_ms
    assert TreeHead.decode(head.head.encode()) == head.head
    assert [h.id for h in log.heads()] == sorted(h.id for h in log.heads())
    assert head.token is None and head.stamp_error is None  # no TSA configured


def test_typed_records(make_log: Any) -> None:
    log = make_log()
    match = Match(
        suspect_id="s1",
        mother_id="m1",
        score=0.971234,
        coverage=0.5,
        mother_coverage=0.25,
        passages=[Passage(0, 10, 100, 110, 0.96)],
        mother_title="第一卷",
    )
    check = log.record_check(
        suspect_id="s1",
        matches=[match],
        engine="daguan",
        suspect_text="盗版文字",
        mother_texts={"m1": "原文"},
        capture_index=None,
    )
    payload = check.payload
    assert payload["matches"][0]["score"] == 0.9712
    assert payload["matches"][0]["passages"] == [
        {
            "mother_end": 110,
            "mother_start": 100,
            "similarity": 0.96,
            "suspect_end": 10,
            "suspect_start": 0,
        }
    ]
    assert payload["suspect_text_sha256"] == hashlib.sha256("盗版文字".encode()).hexdigest()
    assert (
        payload["matches"][0]["mother_text_sha256"] == hashlib.sha256("原文".encode()).hexdigest()
    )
    empty = log.record_check(suspect_id="s2", matches=[], engine="daguan")
    assert empty.payload["matches"] == []
    with pytest.raises(ValueError, match="verdict"):
        log.record_verdict(suspect_id="s1", mother_id="m1", verdict="guilty")
    with pytest.raises(EvidenceError, match="case state"):
        log.record_case_state(suspect_id="s1", state="  ")
    with pytest.raises(EvidenceError, match="unknown record kind 'gossip'"):
        log.append("gossip", {})
    assert set(KINDS) == {"capture", "submission", "check", "verdict", "case_state", "export"}


def test_entries_by_suspect_and_mother(make_log: Any) -> None:
    log = make_log()
    log.record_check(suspect_id="s1", matches=[], engine="daguan")  # 0
    log.record_verdict(suspect_id="s1", mother_id="m1", verdict="confirmed")  # 1
    log.record_verdict(suspect_id="s1", mother_id="m2", verdict="dismissed")  # 2
    log.record_verdict(suspect_id="s2", mother_id="m1", verdict="confirmed")  # 3
    log.record_case_state(suspect_id="s1", mother_id="m1", state="notice_sent")  # 4
    assert [e.index for e in log.entries(suspect_id="s1")] == [0, 1, 2, 4]
    assert [e.index for e in log.entries(suspect_id="s1", mother_id="m1")] == [0, 1, 4]
    assert [e.index for e in log.entries(suspect_id="s1", kinds=["verdict"])] == [1, 2]
    assert log.entries(suspect_id="nobody") == []
    with pytest.raises(EvidenceError, match="no record 9"):
        log.entry(9)


def test_a_clean_log_audits_clean(make_log: Any) -> None:
    log = make_log()
    fill(log, 10)
    log.tree_head()
    fill(log, 5)
    log.tree_head()
    report = log.audit()
    assert report.ok, report.problems
    assert (report.size, report.heads) == (15, 2)


def test_the_log_refuses_another_key(make_log: Any) -> None:
    make_log()
    with pytest.raises(EvidenceKeyError, match=r"signed by key .* give every process the same key"):
        make_log(key=SigningKey.generate())


def test_reopening_keeps_everything(make_log: Any) -> None:
    log = make_log()
    fill(log, 4)
    head = log.tree_head()
    again = make_log()
    assert again.size == 4 and again.tree_head().id == head.id
    assert again.root() == head.head.root_hash


# --- sqlite: refusals and tampering ------------------------------------------------------
@pytest.fixture()
def sqlite_log(tmp_path: Path, no_env: None) -> Any:
    log = EvidenceLog.open(tmp_path, evidence=EvidenceSettings(), key=SigningKey.generate())
    yield log
    log.close()


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE leaves SET data = x'00' WHERE idx = 1",
        "DELETE FROM leaves WHERE idx = 1",
        "INSERT OR REPLACE INTO leaves (idx, kind, data, leaf_hash) VALUES (1, 'x', x'00', x'00')",
        "UPDATE nodes SET hash = x'00'",
        "DELETE FROM heads",
        "UPDATE stamps SET error = 'x'",
        "DELETE FROM meta",
    ],
)
def test_sqlite_refuses_rewrites(sqlite_log: EvidenceLog, tmp_path: Path, sql: str) -> None:
    fill(sqlite_log, 4)
    head = sqlite_log.tree_head()
    sqlite_log.backend.add_stamp(Stamp(head.id, sqlite_log.clock(), "http://tsa", None, "down"))
    db = sqlite3.connect(tmp_path / "evidence.sqlite3")
    db.execute("PRAGMA recursive_triggers=ON")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute(sql)
        # (a statement touching no row fires no trigger: make sure every one touches one)
        raise AssertionError(f"{sql!r} was allowed")
    db.close()
    assert sqlite_log.audit().ok


def _tamper_sqlite(path: Path, sql: str, args: tuple[Any, ...] = ()) -> None:
    """What someone with the file could do: drop the triggers, then edit."""
    db = sqlite3.connect(path)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    db.execute(sql, args)
    db.commit()
    db.close()


def test_audit_finds_an_edited_record(sqlite_log: EvidenceLog, tmp_path: Path) -> None:
    fill(sqlite_log, 6)
    sqlite_log.tree_head()
    data = sqlite_log.entry(2).data.replace(b"noted", b"NOTED")
    _tamper_sqlite(
        tmp_path / "evidence.sqlite3", "UPDATE leaves SET data = ? WHERE idx = 2", (data,)
    )
    problems = sqlite_log.audit().problems
    assert problems[0] == "record 2: its bytes no longer hash to its stored leaf hash"


def test_audit_finds_a_rewritten_history(sqlite_log: EvidenceLog, tmp_path: Path) -> None:
    # The forger also fixes the leaf hash and drops the cached nodes: only the signed
    # tree head still remembers the old root.
    fill(sqlite_log, 6)
    head = sqlite_log.tree_head()
    data = sqlite_log.entry(2).data.replace(b"noted", b"NOTED")
    path = tmp_path / "evidence.sqlite3"
    leaf = hashlib.sha256(b"\x00" + data).digest()
    _tamper_sqlite(path, "UPDATE leaves SET data = ?, leaf_hash = ? WHERE idx = 2", (data, leaf))
    _tamper_sqlite(path, "DELETE FROM nodes")
    problems = sqlite_log.audit().problems
    assert problems == [
        f"tree head {head.id} (size 6): its root no longer matches the records: "
        "the log was rewritten"
    ]


def test_audit_finds_a_bad_node_and_a_bad_signature(
    sqlite_log: EvidenceLog, tmp_path: Path
) -> None:
    fill(sqlite_log, 8)
    head = sqlite_log.tree_head()
    path = tmp_path / "evidence.sqlite3"
    _tamper_sqlite(path, "UPDATE nodes SET hash = ? WHERE level = 2 AND idx = 1", (b"\x00" * 32,))
    _tamper_sqlite(path, "UPDATE heads SET signature = ?", (b"\x00" * 64,))
    problems = sqlite_log.audit().problems
    assert "stored node 2/1 disagrees with the records" in problems
    assert f"tree head {head.id} (size 8): the signature does not verify" in problems


def test_concurrent_appenders_get_distinct_consecutive_indexes(
    tmp_path: Path, no_env: None
) -> None:
    key = SigningKey.generate()
    EvidenceLog.open(tmp_path, evidence=EvidenceSettings(), key=key).close()
    indexes: list[int] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        log = EvidenceLog.open(tmp_path, evidence=EvidenceSettings(), key=key)
        try:
            for i in range(25):
                e = log.record_case_state(suspect_id=f"w{n}", state="x", detail={"i": i})
                with lock:
                    indexes.append(e.index)
        finally:
            log.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(indexes) == list(range(100))
    with EvidenceLog.open(tmp_path, evidence=EvidenceSettings(), key=key) as log:
        assert log.size == 100
        assert log.audit().ok


# --- mongo: tampering is found by the audit ---------------------------------------------
def test_mongo_audit_finds_an_edited_record(no_env: None, tmp_path: Path) -> None:
    from .conftest import mongo_db

    db = mongo_db()
    log = EvidenceLog.open(
        tmp_path, mongo_db=db, evidence=EvidenceSettings(), key=SigningKey.generate()
    )
    fill(log, 5)
    head = log.tree_head()
    entry = log.entry(3)
    data = entry.data.replace(b"noted", b"NOTED")
    db["evidence_leaves"].update_one(
        {"_id": 3}, {"$set": {"data": data, "leaf_hash": hashlib.sha256(b"\x00" + data).digest()}}
    )
    problems = log.audit().problems
    expected = f"tree head {head.id} (size 5): its root no longer matches the records"
    assert f"{expected}: the log was rewritten" in problems
    assert parse_json_object(log.entry(3).data, "x")["payload"]["state"] == "NOTED"
    log.close()


def test_from_settings_opens_the_data_folder_or_mongodb(
    tmp_path: Path, no_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracker.plumbing.config import Settings

    evidence = EvidenceSettings()
    with EvidenceLog.from_settings(Settings(data_dir=tmp_path / "d"), evidence=evidence) as log:
        log.record_case_state(suspect_id="s", state="noted")
    assert (tmp_path / "d" / "evidence.sqlite3").is_file()
    assert (tmp_path / "d" / "evidence-ed25519.pem").is_file()

    mongomock = pytest.importorskip("mongomock")
    import pymongo

    from .conftest import mongo_db

    mongo_db()  # enables mongomock's GridFS
    client = mongomock.MongoClient()
    closed: list[bool] = []
    monkeypatch.setattr(client, "close", lambda: closed.append(True))
    monkeypatch.setattr(pymongo, "MongoClient", lambda uri, **kw: client)
    settings = Settings(data_dir=tmp_path / "m", mongo_uri="mongodb://db.invalid", mongo_db="y")
    with EvidenceLog.from_settings(settings, evidence=evidence) as log:
        log.record_case_state(suspect_id="s", state="noted")
        assert log.size == 1
    assert closed == [True]
    assert client["y"]["evidence_leaves"].count_documents({}) == 1
