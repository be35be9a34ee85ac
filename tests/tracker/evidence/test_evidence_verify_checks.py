"""``verify_bundle`` as named checks (issue #27) and the timestamp chain (issue #24): a
record claiming a time after its tree head's, or after the TSA's time for it, fails
(``times``) and such a bundle is never exported; every check is reported by name."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tsa_server import TSAServer

from tracker.evidence.bundle import export_bundle
from tracker.evidence.capture import Capture
from tracker.evidence.log import EvidenceLog
from tracker.evidence.records import EvidenceError
from tracker.evidence.settings import EvidenceSettings
from tracker.evidence.tsa import TSAClient
from tracker.evidence.verify import verify_bundle
from tracker.evidence.verify_result import CHECKS

from .evidence_helpers import PAGE, TEXT, record_case


def _capture(log: EvidenceLog, fetched_at: datetime) -> None:
    log.record_capture(
        Capture.build(
            log.blobs,
            suspect_id="s1",
            requested_url="http://pirate.example/b/1",
            final_url="http://pirate.example/b/1",
            http_status=200,
            headers={"content-type": "text/html; charset=utf-8"},
            body=PAGE,
            fetched_at=fetched_at,
            text=TEXT,
            crawler_version="yinji-crawler/test",
        )
    )


def test_every_check_is_reported_by_name(make_log: Any) -> None:
    log = make_log()
    record_case(log)
    out = io.BytesIO()
    export_bundle(log, out, suspect_id="s1", mother_id="m1")
    result = verify_bundle(io.BytesIO(out.getvalue()), fingerprint=log.key_id)
    assert [c.name for c in result.checks] == list(CHECKS)
    assert all(c.ok for c in result.checks) and result.trusted
    wrong = verify_bundle(io.BytesIO(out.getvalue()), fingerprint="00" * 32)
    assert wrong.failed()[0] == "key" and not wrong.trusted


@pytest.mark.parametrize("backend_name", ["sqlite"])
def test_a_capture_claiming_a_time_after_its_head_is_never_exported(
    make_log: Any, tmp_path: Path
) -> None:
    log = make_log()  # its clock: 2024-11-22 08:30, one second a call
    _capture(log, datetime(2024, 11, 23, 0, 0, tzinfo=UTC))  # "fetched" the next day
    with pytest.raises(EvidenceError) as err:
        export_bundle(log, tmp_path / "case.zip", suspect_id="s1")
    message = str(err.value)
    assert "FAILED (times)" in message
    assert "fetched_at 2024-11-23T00:00:00.000Z is after the time of the signed tree" in message
    assert not (tmp_path / "case.zip").exists()


def test_a_record_after_the_tsa_time_fails(
    tmp_path: Path, tsa_server: TSAServer, no_env: None
) -> None:
    """Yinji's clock runs a day ahead of the TSA: the head's own time agrees with the
    records, but the token bounds them, and the chain fails."""
    ahead = datetime.now(UTC) + timedelta(days=1)
    tsa = TSAClient(tsa_server.url, trusted=[tsa_server.tsa.ca_cert])
    with EvidenceLog.open(tmp_path / "data", evidence=EvidenceSettings(), tsa=tsa) as log:
        log.clock = lambda: ahead
        _capture(log, ahead - timedelta(minutes=1))
        with pytest.raises(EvidenceError) as err:
            export_bundle(log, io.BytesIO(), suspect_id="s1")
    assert "FAILED (times)" in str(err.value)
    assert "after the time the TSA vouches for the tree head" in str(err.value)


def _stamped_log(tmp_path: Path, tsa_server: TSAServer, clock: Any) -> EvidenceLog:
    tsa = TSAClient(tsa_server.url, trusted=[tsa_server.tsa.ca_cert])
    log = EvidenceLog.open(tmp_path / "data", evidence=EvidenceSettings(), tsa=tsa)
    log.clock = clock
    return log


def test_older_records_are_anchored_by_their_earlier_timestamped_head(
    tmp_path: Path, tsa_server: TSAServer, no_env: None
) -> None:
    import shutil
    import subprocess
    import sys
    import zipfile

    from .conftest import Clock

    clock = Clock()
    with _stamped_log(tmp_path, tsa_server, clock) as log:
        record_case(log)  # a capture fetched 08:00, its check, verdicts, …
        early = log.tree_head()  # signed and timestamped ~08:30
        assert early.token is not None
        for _ in range(5):
            log.record_case_state(suspect_id="other", state="notice_sent")
        log.record_case_state(suspect_id="s1", mother_id="m1", state="taken_down")
        clock.now += timedelta(days=30)
        out = io.BytesIO()
        export_bundle(log, out, suspect_id="s1", mother_id="m1")
        fingerprint = log.key_id
    data = out.getvalue()
    result = verify_bundle(
        io.BytesIO(data), fingerprint=fingerprint, tsa_roots=[tsa_server.tsa.ca_cert]
    )
    assert result.trusted, result.summary()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        [anchor] = manifest["anchors"]
        assert anchor["head"] == f"heads/{early.id:08d}.json"
        assert anchor["size"] == early.head.size
        # every record the earlier head holds is anchored by it; the later one is not
        later = [r["leaf_index"] for r in manifest["records"] if r["leaf_index"] >= anchor["size"]]
        assert anchor["records"] == [
            r["leaf_index"] for r in manifest["records"] if r["leaf_index"] < anchor["size"]
        ]
        assert later, "the taken_down record came after the earlier head"
        folder = tmp_path / "case"
        zf.extractall(folder)
    run = subprocess.run(
        [sys.executable, "verify_proof.py"], cwd=folder, capture_output=True, text=True
    )
    assert run.returncode == 0 and "extends it (consistency proof)" in run.stdout, run.stdout
    if shutil.which("openssl"):
        (folder / "TSA-ROOT.pem").write_bytes(tsa_server.tsa.ca_pem)
        ts = subprocess.run(
            [
                "openssl",
                "ts",
                "-verify",
                "-in",
                f"heads/{early.id:08d}.tsr",
                "-data",
                f"heads/{early.id:08d}.json",
                "-CAfile",
                "TSA-ROOT.pem",
            ],
            cwd=folder,
            capture_output=True,
            text=True,
        )
        assert "Verification: OK" in ts.stdout, ts.stdout + ts.stderr
    # a consistency proof that does not lead to the signed head is named
    (folder / anchor["consistency"]).write_text(
        json.dumps({**json.loads((folder / anchor["consistency"]).read_text()), "proof": []})
    )
    bad = subprocess.run(
        [sys.executable, "verify_proof.py"], cwd=folder, capture_output=True, text=True
    )
    assert bad.returncode == 1 and f"FAIL  {anchor['head']}" in bad.stdout


def test_a_record_claiming_a_time_after_its_anchor_is_never_exported(
    tmp_path: Path, tsa_server: TSAServer, no_env: None
) -> None:
    from .conftest import Clock

    clock = Clock()  # 2024-11-22 08:30
    with _stamped_log(tmp_path, tsa_server, clock) as log:
        _capture(log, datetime(2024, 11, 22, 9, 0, tzinfo=UTC))  # "fetched" 09:00
        early = log.tree_head()  # signed 08:30: before the time the capture claims
        assert early.token is not None
        clock.now += timedelta(days=1)
        log.record_case_state(suspect_id="s1", state="notice_sent")
        with pytest.raises(EvidenceError) as err:
            export_bundle(log, io.BytesIO(), suspect_id="s1")
    assert "FAILED (times)" in str(err.value)
    assert f"after the time of the signed tree head heads/{early.id:08d}.json" in str(err.value)


def test_verify_json_names_the_checks_and_the_exit_status(make_log: Any, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tracker.cli import main

    log = make_log()
    record_case(log)
    bundle = tmp_path / "case.zip"
    export_bundle(log, bundle, suspect_id="s1", mother_id="m1")
    runner = CliRunner()
    nowhere = str(tmp_path / "nowhere")
    pinned = runner.invoke(
        main,
        [
            "--data-dir",
            nowhere,
            "evidence",
            "verify",
            str(bundle),
            "--json",
            "--fingerprint",
            log.key_id,
        ],
    )
    assert pinned.exit_code == 0, pinned.output
    out = json.loads(pinned.output)
    assert out["trusted"] and [c["name"] for c in out["checks"]] == list(CHECKS)
    stranger = runner.invoke(
        main,
        [
            "--data-dir",
            nowhere,
            "evidence",
            "verify",
            str(bundle),
            "--json",
            "--fingerprint",
            "ab" * 32,
        ],
    )
    assert stranger.exit_code == 1
    failed = [c["name"] for c in json.loads(stranger.output)["checks"] if not c["ok"]]
    assert failed[0] == "key"
    unpinned = runner.invoke(
        main, ["--data-dir", nowhere, "evidence", "verify", str(bundle), "--json"]
    )
    assert unpinned.exit_code == 1 and not json.loads(unpinned.output)["pinned"]
