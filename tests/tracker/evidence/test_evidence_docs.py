"""Every command docs/EVIDENCE.md gives is run here, as written, on a real bundle."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from repo import REPO
from tsa_server import TSAServer

from tracker.evidence.bundle import export_bundle
from tracker.evidence.keys import SigningKey
from tracker.evidence.log import EvidenceLog
from tracker.evidence.settings import EvidenceSettings
from tracker.evidence.tsa import TSAClient
from tracker.evidence.verify import verify_bundle

from .evidence_helpers import REPORTS, record_case

DOC = REPO / "docs" / "EVIDENCE.md"
TOOLS = ("unzip", "sha256sum", "openssl", "sh", "grep", "tail")


def shell_blocks(markdown: str) -> list[str]:
    return re.findall(r"^ *```sh\n(.*?)^ *```", markdown, flags=re.S | re.M)


@pytest.mark.skipif(not all(shutil.which(t) for t in TOOLS), reason=f"needs {', '.join(TOOLS)}")
def test_the_commands_of_evidence_md_work(
    tmp_path: Path, tsa_server: TSAServer, no_env: None
) -> None:
    with EvidenceLog.open(
        tmp_path / "data", evidence=EvidenceSettings(), tsa=TSAClient(tsa_server.url)
    ) as log:
        record_case(log)
        export_bundle(log, tmp_path / "case.zip", suspect_id="s1", mother_id="m1", reports=REPORTS)
    (tmp_path / "TSA-ROOT.pem").write_bytes(tsa_server.tsa.ca_pem)
    lines = [
        line.strip()
        for block in shell_blocks(DOC.read_text(encoding="utf-8"))
        for line in block.splitlines()
        if line.strip()
    ]
    assert len(lines) >= 14, lines
    assert any(line.startswith("openssl ts -verify") for line in lines)
    script = "set -e\n" + "\n".join(lines) + "\n"
    if not shutil.which("python3"):
        script = script.replace("python3 ", f"{sys.executable} ")
    run = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, (run.stdout, run.stderr)
    out = run.stdout + run.stderr
    assert "Signature Verified Successfully" in out
    assert "Verification: OK" in out
    assert "all checks passed" in out
    assert "FAILED" not in out and "FAIL " not in out
    case = tmp_path / "case"
    assert verify_bundle(tmp_path / "case.zip").ok
    # the leaf hash printed by the shell is the proof's, and the key fingerprint is log_id
    head = json.loads((case / "treehead.json").read_bytes())
    proof = json.loads((case / "proofs/00000000.json").read_bytes())
    assert f"{proof['leaf_hash']}  -" in out
    assert f"{head['log_id']}  -" in out


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_a_key_made_with_openssl_genpkey_is_accepted(tmp_path: Path) -> None:
    # docs/EVIDENCE.md: "make one with openssl genpkey -algorithm ed25519"
    made = subprocess.run(
        ["openssl", "genpkey", "-algorithm", "ed25519"], capture_output=True, check=True
    ).stdout
    key = SigningKey.load(tmp_path, made.decode())
    loaded = serialization.load_pem_private_key(made, password=None)
    assert key.public_pem() == loaded.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def test_the_doc_names_every_bundle_member() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in (
        "manifest.json",
        "SHA256SUMS",
        "treehead.json",
        "treehead.sig",
        "treehead.tsr",
        "tsa-certs.pem",
        "public-key.pem",
        "VERIFY.txt",
        "verify_proof.py",
    ):
        assert f"`{name}`" in text, name
