"""The log audits itself before it signs (issue #24): a truncated or rewritten log, or a
stored head another key signed, makes ``tree_head`` (hence ``yinji evidence head``,
``stamp``, ``export`` and the scheduled job) refuse, naming the head it contradicts;
consistency proofs between any two heads verify, and fail for a rewritten log."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tracker.evidence.log import EvidenceLog
from tracker.evidence.merkle import leaf_hash, verify_consistency
from tracker.evidence.public import consistency, published_head
from tracker.evidence.records import LogInconsistent
from tracker.evidence.sqlite import SQLITE_FILE


def _fill(log: EvidenceLog, n: int) -> None:
    for i in range(n):
        log.record_case_state(suspect_id=f"s{i}", state="notice_sent")


def _raw(tmp_path: Path) -> sqlite3.Connection:
    """What someone with the database file does: drop the append-only triggers."""
    db = sqlite3.connect(tmp_path / "data" / SQLITE_FILE, isolation_level=None)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    return db


@pytest.mark.parametrize("backend_name", ["sqlite"])
def test_a_truncated_log_signs_nothing(make_log: Any, tmp_path: Path) -> None:
    log = make_log()
    _fill(log, 6)
    signed = log.tree_head()
    assert signed.head.size == 6
    heads_before = len(log.heads())
    db = _raw(tmp_path)
    db.execute("DELETE FROM leaves WHERE idx >= 4")
    db.close()
    assert log.size == 4
    with pytest.raises(LogInconsistent) as err:
        log.tree_head()
    message = str(err.value)
    assert f"signed tree head {signed.id} (6 records" in message and "truncated" in message
    with pytest.raises(LogInconsistent):
        log.publish()
    with pytest.raises(LogInconsistent):
        published_head(log)
    assert len(log.heads()) == heads_before  # nothing signed


@pytest.mark.parametrize("backend_name", ["sqlite"])
def test_a_rewritten_record_signs_nothing(make_log: Any, tmp_path: Path) -> None:
    log = make_log()
    _fill(log, 5)
    log.tree_head()
    _fill(log, 2)  # records after the head: their leaf hashes are checked too
    db = _raw(tmp_path)
    data = bytes(db.execute("SELECT data FROM leaves WHERE idx = 2").fetchone()[0])
    forged = data.replace(b"notice_sent", b"taken_down_")
    db.execute(
        "UPDATE leaves SET data = ?, leaf_hash = ? WHERE idx = 2", (forged, leaf_hash(forged))
    )
    db.execute("DELETE FROM nodes")  # recomputed from the rewritten leaves
    db.close()
    with pytest.raises(LogInconsistent, match="no longer hash to its root"):
        log.tree_head()
    db = _raw(tmp_path)  # record 2 restored; record 6 (after the head) changed
    db.execute("UPDATE leaves SET data = ?, leaf_hash = ? WHERE idx = 2", (data, leaf_hash(data)))
    db.execute("DELETE FROM nodes")
    late = bytes(db.execute("SELECT data FROM leaves WHERE idx = 6").fetchone()[0])
    db.execute("UPDATE leaves SET data = ? WHERE idx = 6", (late + b" ",))
    db.close()
    with pytest.raises(LogInconsistent, match="record 6: its bytes no longer hash"):
        log.tree_head()


@pytest.mark.parametrize("backend_name", ["sqlite"])
def test_a_head_signed_by_another_key_is_named(make_log: Any, tmp_path: Path) -> None:
    from tracker.evidence.keys import SigningKey, TreeHead

    log = make_log()
    _fill(log, 3)
    record = log.tree_head()
    other = SigningKey.generate()
    head = record.head
    fake = TreeHead(head.size, head.root_hash, head.timestamp_ms, head.log_id)
    db = _raw(tmp_path)
    db.execute(
        "INSERT INTO heads (size, root_hash, timestamp_ms, log_id, signature) "
        "VALUES (?, ?, ?, ?, ?)",
        (fake.size, fake.root_hash, fake.timestamp_ms, fake.log_id, other.sign(fake.encode())),
    )
    db.close()
    _fill(log, 1)
    with pytest.raises(LogInconsistent, match="signature does not verify"):
        log.tree_head()


def test_consistency_between_any_two_heads(make_log: Any) -> None:
    log = make_log()
    sizes = []
    for n in (1, 2, 3, 5, 4):
        _fill(log, n)
        sizes.append(log.tree_head().head.size)
    heads = {r.head.size: r.head.root_hash for r in log.heads()}
    for first in sizes:
        for second in sizes:
            if first > second:
                continue
            proof = consistency(log, first, second)
            # checked against the roots the signed heads carry, not the proof's own
            assert verify_consistency(first, second, heads[first], heads[second], list(proof.proof))
            assert proof.verify()
    wrong = consistency(log, 3, 15)
    assert not verify_consistency(3, 15, heads[6], heads[15], list(wrong.proof))
    with pytest.raises(Exception, match="first <= second"):
        consistency(log, 10, 3)


def test_check_consistency_offline_between_two_bundles_heads(make_log: Any, tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from tracker.cli import main

    log = make_log()
    _fill(log, 3)
    old = log.tree_head().head
    _fill(log, 4)
    new = log.tree_head().head
    (tmp_path / "old.json").write_bytes(old.encode())
    (tmp_path / "new.json").write_bytes(new.encode())
    proof = consistency(log, old.size, new.size).to_json()
    (tmp_path / "proof.json").write_text(json.dumps(proof))
    files = [str(tmp_path / n) for n in ("proof.json", "old.json", "new.json")]
    runner = CliRunner()
    ok = runner.invoke(main, ["evidence", "check-consistency", *files])
    assert ok.exit_code == 0 and ok.output.startswith("OK: the log of 7 records"), ok.output
    proof["proof"][0] = "00" * 32
    (tmp_path / "proof.json").write_text(json.dumps(proof))
    bad = runner.invoke(main, ["evidence", "check-consistency", *files])
    assert bad.exit_code == 1 and bad.output.startswith("FAILED"), bad.output
    swapped = runner.invoke(main, ["evidence", "check-consistency", files[0], files[2], files[1]])
    assert swapped.exit_code == 1
