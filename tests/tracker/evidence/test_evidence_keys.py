"""The signing key (data folder file or YINJI_EVIDENCE_KEY), settings, and tree heads."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tracker.evidence.canonical import CanonicalError, canonical_json, hex_path
from tracker.evidence.keys import (
    KEY_FILE,
    EvidenceKeyError,
    SigningKey,
    TreeHead,
    public_key_from_pem,
)
from tracker.evidence.settings import EvidenceSettings
from tracker.plumbing.config import SettingError


def test_key_file_is_created_private_and_reused(tmp_path: Path) -> None:
    key = SigningKey.load(tmp_path / "data")
    path = tmp_path / "data" / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert SigningKey.load(tmp_path / "data").key_id == key.key_id
    assert [p.name for p in (tmp_path / "data").iterdir()] == [KEY_FILE]  # no temp file left


def test_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    SigningKey.load(tmp_path)
    os.chmod(tmp_path / KEY_FILE, 0o644)
    with pytest.raises(EvidenceKeyError, match=r"can be read by other users.*chmod 600"):
        SigningKey.load(tmp_path)


def test_key_from_environment_text_or_path(tmp_path: Path) -> None:
    original = SigningKey.generate()
    pem = original.private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    from_text = SigningKey.load(tmp_path / "unused", pem.decode())
    assert from_text.key_id == original.key_id
    (tmp_path / "k.pem").write_bytes(pem)
    os.chmod(tmp_path / "k.pem", 0o600)
    assert SigningKey.load(tmp_path / "unused", str(tmp_path / "k.pem")).key_id == original.key_id
    assert not (tmp_path / "unused").exists()  # no data-folder key was made


def test_bad_configured_keys_are_named(tmp_path: Path) -> None:
    with pytest.raises(EvidenceKeyError, match=r"YINJI_EVIDENCE_KEY: cannot read key file"):
        SigningKey.load(tmp_path, str(tmp_path / "missing.pem"))
    with pytest.raises(EvidenceKeyError, match="YINJI_EVIDENCE_KEY: not a PEM private key"):
        SigningKey.load(
            tmp_path, "-----BEGIN PRIVATE KEY-----\nnonsense\n-----END PRIVATE KEY-----"
        )
    rsa_pem = rsa.generate_private_key(public_exponent=65537, key_size=1024).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with pytest.raises(EvidenceKeyError, match="an Ed25519 key was expected"):
        SigningKey.load(tmp_path, rsa_pem.decode())
    encrypted = SigningKey.generate().private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    with pytest.raises(EvidenceKeyError, match="encrypted"):
        SigningKey.load(tmp_path, encrypted.decode())


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("YINJI_EVIDENCE_KEY", "YINJI_TSA_URL", "YINJI_TSA_CA", "YINJI_TSA_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    assert EvidenceSettings.from_env() == EvidenceSettings()
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    monkeypatch.setenv("YINJI_TSA_URL", "http://127.0.0.1:9/tsr")
    monkeypatch.setenv("YINJI_TSA_CA", str(ca))
    monkeypatch.setenv("YINJI_TSA_TIMEOUT", "2.5")
    s = EvidenceSettings.from_env()
    assert (s.tsa_url, s.tsa_ca, s.tsa_timeout) == ("http://127.0.0.1:9/tsr", ca, 2.5)
    monkeypatch.setenv("YINJI_TSA_URL", "ftp://tsa.example")
    with pytest.raises(SettingError, match="YINJI_TSA_URL"):
        EvidenceSettings.from_env()
    monkeypatch.setenv("YINJI_TSA_URL", "http://127.0.0.1:9/tsr")
    monkeypatch.setenv("YINJI_TSA_CA", str(tmp_path / "nope.pem"))
    with pytest.raises(SettingError, match="YINJI_TSA_CA"):
        EvidenceSettings.from_env()
    monkeypatch.setenv("YINJI_TSA_CA", str(ca))
    monkeypatch.setenv("YINJI_TSA_TIMEOUT", "soon")
    with pytest.raises(SettingError, match="YINJI_TSA_TIMEOUT"):
        EvidenceSettings.from_env()


def test_tree_head_encoding_is_canonical_and_signed() -> None:
    key = SigningKey.generate()
    head = TreeHead(
        size=5, root_hash=bytes(range(32)), timestamp_ms=1732264205123, log_id=key.key_id
    )
    data = head.encode()
    assert data == canonical_json(head.to_json())
    assert b'"time_utc":"2024-11-22T08:30:05.123Z"' in data
    assert b" " not in data and not data.endswith(b"\n")
    assert TreeHead.decode(data) == head
    signed = key.sign_head(head)
    assert signed.verify(key.public_key)
    assert signed.verify(public_key_from_pem(key.public_pem()))
    other = SigningKey.generate()
    assert not signed.verify(other.public_key)
    forged = type(signed)(
        TreeHead(6, head.root_hash, head.timestamp_ms, head.log_id), signed.signature
    )
    assert not forged.verify(key.public_key)
    with pytest.raises(EvidenceKeyError, match="cannot be signed"):
        other.sign_head(head)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b.replace(b'"size":5', b'"size": 5'),  # not canonical
        lambda b: b.replace(b"08:30:05.123Z", b"08:30:06.123Z"),  # time_utc disagrees
        lambda b: b.replace(b"yinji-treehead/1", b"yinji-treehead/2"),
        lambda b: b[:-1] + b',"extra":1}',
        lambda b: b.replace(b'"log_id":"' + b"ab" * 32 + b'"', b'"log_id":7'),  # not a string
        lambda b: re.sub(rb'"root_hash":"[0-9a-f]+"', b'"root_hash":["00"]', b),
    ],
)
def test_tree_head_decoding_is_strict(mutate: object) -> None:
    head = TreeHead(5, bytes(32), 1732264205123, "ab" * 32)
    with pytest.raises(CanonicalError):
        TreeHead.decode(mutate(head.encode()))  # type: ignore[operator]


def test_a_configured_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    pem = SigningKey.generate().private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path = tmp_path / "k.pem"
    path.write_bytes(pem)
    for mode in (0o644, 0o640, 0o604):
        os.chmod(path, mode)
        with pytest.raises(EvidenceKeyError) as err:
            SigningKey.load(tmp_path / "unused", str(path))
        assert str(path) in str(err.value) and f"chmod 600 {path}" in str(err.value)
    os.chmod(path, 0o600)
    assert SigningKey.load(tmp_path / "unused", str(path)).private_key is not None


@pytest.mark.slow
def test_an_exposed_configured_key_is_one_message_on_the_command_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    pem = SigningKey.generate().private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path = tmp_path / "k.pem"
    path.write_bytes(pem)
    os.chmod(path, 0o644)
    env = {**os.environ, "YINJI_EVIDENCE_KEY": str(path), "YINJI_DATA_DIR": str(tmp_path / "d")}
    proc = subprocess.run(
        [sys.executable, "-m", "tracker.cli", "evidence", "head"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert f"chmod 600 {path}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_fingerprint_is_the_sha256_of_the_raw_public_key(tmp_path: Path) -> None:
    import hashlib

    from tracker.evidence.keys import (
        format_fingerprint,
        parse_fingerprint,
        public_key_fingerprint,
    )
    from tracker.evidence.settings import log_fingerprint

    key = SigningKey.load(tmp_path)
    raw = key.public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    expected = hashlib.sha256(raw).hexdigest()
    assert public_key_fingerprint(key) == expected
    assert public_key_fingerprint(key.public_key) == expected
    assert public_key_fingerprint(key.public_pem()) == expected
    assert public_key_fingerprint(raw) == expected
    assert log_fingerprint(tmp_path, None) == expected
    grouped = format_fingerprint(expected)
    assert grouped.split() == [expected[i : i + 4] for i in range(0, 64, 4)]
    assert parse_fingerprint(grouped.upper()) == expected
    with pytest.raises(EvidenceKeyError, match="64 hex digits"):
        parse_fingerprint("abc")


def test_settings_refuse_an_exposed_key_file_at_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A worker or server reads the settings before its first task: an exposed or
    missing YINJI_EVIDENCE_KEY file stops it there, naming the file and the fix."""
    path = tmp_path / "k.pem"
    path.write_bytes(
        SigningKey.generate().private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    monkeypatch.setenv("YINJI_EVIDENCE_KEY", str(path))
    for name in ("YINJI_TSA_URL", "YINJI_TSA_CA", "YINJI_TSA_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    os.chmod(path, 0o644)
    with pytest.raises(SettingError, match=re.escape(f"run: chmod 600 {path}")):
        EvidenceSettings.from_env()
    os.chmod(path, 0o600)
    assert EvidenceSettings.from_env().key == str(path)
    monkeypatch.setenv("YINJI_EVIDENCE_KEY", str(tmp_path / "gone.pem"))
    with pytest.raises(SettingError, match="YINJI_EVIDENCE_KEY: cannot read key file"):
        EvidenceSettings.from_env()


def test_hex_path_reads_only_a_list_of_hex_strings() -> None:
    assert hex_path({"proof": ["00ff", "ab"]}, "proof") == [b"\x00\xff", b"\xab"]
    assert hex_path({"proof": []}, "proof") == []
    with pytest.raises(KeyError):
        hex_path({}, "proof")
    for hostile in ("00ff", {"00": "ff"}, ["00", 1], None, 3):
        with pytest.raises(TypeError, match="proof: a list of hex strings"):
            hex_path({"proof": hostile}, "proof")
    with pytest.raises(ValueError):
        hex_path({"proof": ["zz"]}, "proof")
