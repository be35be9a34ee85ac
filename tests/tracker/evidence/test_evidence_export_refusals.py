"""Issue #24: an export that cannot be built whole fails with a clear error naming what
is missing or altered, and never writes a bundle that would fail verify: a record
rewritten in the database (with or without its leaf hash), a captured file missing or
altered in the blob store. An old (format 1) bundle is refused with a plain reason."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tracker.evidence.bundle import export_bundle
from tracker.evidence.merkle import leaf_hash
from tracker.evidence.records import EvidenceError
from tracker.evidence.sqlite import SQLITE_FILE
from tracker.evidence.verify import verify_bundle

from .evidence_helpers import edit, record_case, refresh_lists


def _db(tmp_path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(tmp_path / "data" / SQLITE_FILE, isolation_level=None)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {name}")
    return db


@pytest.mark.parametrize("backend_name", ["sqlite"])
@pytest.mark.parametrize("with_leaf", [False, True])
def test_a_rewritten_record_is_never_exported(
    make_log: Any, tmp_path: Path, with_leaf: bool
) -> None:
    log = make_log()
    record_case(log)
    log.tree_head()
    record_case(log, suspect_id="later")  # records after the head, another suspect
    db = _db(tmp_path)
    data = bytes(db.execute("SELECT data FROM leaves WHERE idx = 0").fetchone()[0])
    forged = data.replace(b"pirate.example", b"other.example")
    if with_leaf:  # the leaf hash recomputed too: the stored tree no longer fits
        db.execute(
            "UPDATE leaves SET data = ?, leaf_hash = ? WHERE idx = 0", (forged, leaf_hash(forged))
        )
    else:
        db.execute("UPDATE leaves SET data = ? WHERE idx = 0", (forged,))
    db.close()
    out = tmp_path / "case.zip"
    with pytest.raises(EvidenceError) as err:
        export_bundle(log, out, suspect_id="s1", mother_id="m1")
    message = str(err.value)
    assert "log record 0" in message or "signed tree head" in message, message
    assert "Traceback" not in message
    assert not out.exists()


def test_old_format_bundles_are_refused_plainly(make_log: Any) -> None:
    log = make_log()
    record_case(log)
    sink = io.BytesIO()
    export_bundle(log, sink, suspect_id="s1", mother_id="m1")

    def old(files: dict[str, bytes]) -> None:
        manifest = json.loads(files["manifest.json"])
        manifest["format"] = "yinji-evidence-bundle/1"
        files["manifest.json"] = json.dumps(manifest).encode()
        refresh_lists(files)

    result = verify_bundle(io.BytesIO(edit(sink.getvalue(), old)), fingerprint=log.key_id)
    assert not result.ok
    assert any("sign neither the verifier nor VERIFY.txt" in p for p in result.problems)
