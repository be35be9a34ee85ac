"""RFC 3161 timestamps against the local test TSA (tests/tsa_server.py); never a public one."""

from __future__ import annotations

import hashlib
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from asn1crypto import tsp
from tsa_server import TestTSA, TSAServer

from tracker.evidence.keys import SigningKey
from tracker.evidence.log import EvidenceLog
from tracker.evidence.records import Stamp
from tracker.evidence.settings import EvidenceSettings
from tracker.evidence.tsa import (
    TokenError,
    TSAClient,
    TSAError,
    build_request,
    load_certificates,
    token_of,
    verify_response,
    verify_token,
)

DATA = b'{"log_id":"...","size":3}'


def test_the_request_is_rfc3161() -> None:
    digest = hashlib.sha256(DATA).digest()
    req = tsp.TimeStampReq.load(build_request(digest, 12345))
    assert req["version"].native == "v1"
    assert req["message_imprint"]["hash_algorithm"]["algorithm"].native == "sha256"
    assert req["message_imprint"]["hashed_message"].native == digest
    assert req["nonce"].native == 12345
    assert req["cert_req"].native is True


def test_a_token_round_trip_verifies(tsa_server: TSAServer) -> None:
    client = TSAClient(tsa_server.url, trusted=[tsa_server.tsa.ca_cert])
    response, info = client.stamp(DATA)
    assert info.chain_checked and info.tsa_subject == "CN=Yinji Test TSA,O=Yinji test"
    request = tsp.TimeStampReq.load(tsa_server.tsa.requests[-1])
    assert info.nonce == request["nonce"].native
    again = verify_response(response, data=DATA, trusted=[tsa_server.tsa.ca_cert])
    assert again.gen_time == info.gen_time and again.serial_number == info.serial_number
    assert verify_token(token_of(response), data=DATA).tsa_cert_sha256 == info.tsa_cert_sha256
    # without trusted roots the token is still checked, but not who signed it
    assert verify_response(response, data=DATA).chain_checked is False


def test_a_token_for_another_hash_fails(tsa_server: TSAServer) -> None:
    response, _ = TSAClient(tsa_server.url).stamp(DATA)
    with pytest.raises(TokenError, match="message imprint is not the hash"):
        verify_response(response, data=DATA + b" ")
    with pytest.raises(TokenError, match="nonce"):
        verify_response(response, data=DATA, nonce=1)


def test_an_altered_token_fails(tsa_server: TSAServer) -> None:
    response, _ = TSAClient(tsa_server.url).stamp(DATA)
    eci = tsp.TimeStampResp.load(response)["time_stamp_token"]["content"]["encap_content_info"]
    tst_der = bytes(eci["content"])
    gen_time = eci["content"].parsed["gen_time"].dump()
    at = response.index(tst_der) + tst_der.index(gen_time) + len(gen_time) - 2
    # the last digit of the seconds, inside the signed TSTInfo: "…5Z" becomes "…4Z" or so
    altered = response[:at] + bytes([response[at] ^ 1]) + response[at + 1 :]
    assert altered != response
    with pytest.raises(TokenError, match="message digest does not match"):
        verify_response(altered, data=DATA)


def test_a_certificate_from_another_root_fails(tsa_server: TSAServer, test_tsa: TestTSA) -> None:
    other = TestTSA()
    response, _ = TSAClient(tsa_server.url).stamp(DATA)
    with pytest.raises(TokenError, match="does not chain to a trusted TSA root"):
        verify_response(response, data=DATA, trusted=[other.ca_cert])


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("wrong_imprint", "message imprint is not the hash"),
        ("wrong_nonce", "nonce"),
        ("reject", "refused: status rejection, test TSA refuses"),
        ("bad_signature", "signature does not verify"),
        ("no_eku", "lacks the timeStamping extended key usage"),
        ("http_500", "answered HTTP 500"),
    ],
)
def test_a_misbehaving_tsa_is_a_clear_error(tsa_server: TSAServer, mode: str, message: str) -> None:
    tsa_server.tsa.mode = mode
    with pytest.raises(TSAError, match=message) as err:
        TSAClient(tsa_server.url).stamp(DATA)
    assert tsa_server.url in str(err.value)


def test_an_unreachable_tsa_names_its_url(dead_url: str) -> None:
    with pytest.raises(TSAError, match=f"TSA {dead_url} is unreachable"):
        TSAClient(dead_url, timeout=2).stamp(DATA)


@pytest.fixture()
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(5)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/tsa"
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    sock.close()


@pytest.mark.slow
def test_a_silent_tsa_times_out_with_its_url(silent_server: str) -> None:
    with pytest.raises(TSAError, match=f"TSA {silent_server} is unreachable .*timed out"):
        TSAClient(silent_server, timeout=0.5).stamp(DATA)


# --- the log with a TSA ---------------------------------------------------------------
def open_log(path: Path, tsa: TSAClient | None, key: SigningKey) -> EvidenceLog:
    return EvidenceLog.open(path, evidence=EvidenceSettings(), key=key, tsa=tsa)


def test_every_new_tree_head_is_stamped(
    tmp_path: Path, tsa_server: TSAServer, no_env: None
) -> None:
    ca = [tsa_server.tsa.ca_cert]
    with open_log(tmp_path, TSAClient(tsa_server.url, trusted=ca), SigningKey.generate()) as log:
        log.record_case_state(suspect_id="s", state="noted")
        head = log.tree_head()
        assert head.token is not None and head.stamp_error is None
        info = verify_response(head.token, data=head.head.encode(), trusted=ca)
        assert info.chain_checked
        report = log.audit()
        assert report.ok and report.stamped_heads == 1


def test_an_unreachable_tsa_loses_nothing(
    tmp_path: Path, tsa_server: TSAServer, dead_url: str, no_env: None
) -> None:
    key = SigningKey.generate()
    with open_log(tmp_path, TSAClient(dead_url, timeout=2), key) as log:
        log.record_case_state(suspect_id="s", state="noted")
        head = log.tree_head()
        assert head.token is None
        assert head.stamp_error is not None and dead_url in head.stamp_error
        assert head.signed.verify(key.public_key)  # kept, signed, marked unstamped
        assert log.audit().ok
        log.tsa = TSAClient(tsa_server.url)  # the TSA is back
        [stamp] = log.stamp_pending()
        assert stamp.ok
        assert log.head(head.id).token is not None
        assert log.stamp_pending() == []
        assert log.audit().ok


def test_the_audit_finds_a_token_for_another_head(
    tmp_path: Path, tsa_server: TSAServer, no_env: None
) -> None:
    with open_log(tmp_path, TSAClient(tsa_server.url), SigningKey.generate()) as log:
        log.record_case_state(suspect_id="s", state="noted")
        first = log.tree_head()
        log.record_case_state(suspect_id="s", state="noted again")
        second = log.tree_head()
        assert first.token is not None
        log.backend.add_stamp(Stamp(second.id, log.clock(), tsa_server.url, first.token, None))
        problems = log.audit().problems
        assert problems == [
            f"tree head {second.id} (size 2): its timestamp token fails: the token's message "
            "imprint is not the hash of this tree head"
        ]


def test_the_tsa_is_configured_from_the_environment(
    tmp_path: Path, tsa_server: TSAServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = tmp_path / "tsa-ca.pem"
    ca.write_bytes(tsa_server.tsa.ca_pem)
    monkeypatch.delenv("YINJI_EVIDENCE_KEY", raising=False)
    monkeypatch.setenv("YINJI_TSA_URL", tsa_server.url)
    monkeypatch.setenv("YINJI_TSA_CA", str(ca))
    assert [c.subject for c in load_certificates(ca)] == [tsa_server.tsa.ca_cert.subject]
    with EvidenceLog.open(tmp_path / "data") as log:
        assert log.tsa is not None and log.tsa.url == tsa_server.url
        head = log.tree_head()
        assert head.token is not None
        assert verify_response(head.token, data=head.head.encode(), trusted=log.tsa.trusted)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_openssl_verifies_the_token(tmp_path: Path, tsa_server: TSAServer) -> None:
    response, _ = TSAClient(tsa_server.url).stamp(DATA)
    (tmp_path / "treehead.json").write_bytes(DATA)
    (tmp_path / "treehead.tsr").write_bytes(response)
    (tmp_path / "tsa-ca.pem").write_bytes(tsa_server.tsa.ca_pem)
    cmd = ["openssl", "ts", "-verify", "-in", "treehead.tsr", "-data", "treehead.json"]
    ok = subprocess.run(
        [*cmd, "-CAfile", "tsa-ca.pem"], cwd=tmp_path, capture_output=True, text=True
    )
    assert ok.returncode == 0 and "Verification: OK" in ok.stdout, ok.stderr
    (tmp_path / "treehead.json").write_bytes(DATA + b" ")
    bad = subprocess.run(
        [*cmd, "-CAfile", "tsa-ca.pem"], cwd=tmp_path, capture_output=True, text=True
    )
    assert bad.returncode != 0 and "Verification: FAILED" in bad.stdout
