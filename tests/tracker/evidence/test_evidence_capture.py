"""Capture and Submission records: built from crawl results, to and from canonical JSON."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tracker.evidence.blobs import FileBlobStore
from tracker.evidence.canonical import canonical_json
from tracker.evidence.capture import (
    Capture,
    CaptureError,
    RedirectHop,
    Submission,
    TLSInfo,
)

FETCHED = datetime(2024, 11, 22, 8, 30, 5, 123456, tzinfo=UTC)
BODY = "<html><head><meta charset=gbk></head><body>第一章 盗版</body></html>".encode("gbk")


def _server_cert() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pirate.example")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(7)
        .not_valid_before(datetime(2024, 1, 1, tzinfo=UTC))
        .not_valid_after(datetime(2025, 1, 1, tzinfo=UTC))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.DER)


CERT_DER = _server_cert()


def build(store: FileBlobStore, **kw: object) -> Capture:
    args: dict[str, object] = dict(
        suspect_id="s1",
        requested_url="http://pirate.example/b/1",
        redirects=[RedirectHop("http://pirate.example/b/1", 301, "https://pirate.example/b/1")],
        final_url="https://pirate.example/b/1",
        resolved_ip="203.0.113.7",
        http_status=200,
        headers={"Content-Type": "text/html; charset=gbk", "Server": "nginx"},
        body=BODY,
        body_content_decoded=True,
        fetched_at=FETCHED,
        tls=TLSInfo.from_der(CERT_DER),
        text="第一章 盗版",
        crawler_version="yinji-crawler/test",
    )
    args.update(kw)
    return Capture.build(store, **args)  # type: ignore[arg-type]


def test_build_stores_the_blobs_and_hashes_them(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    cap = build(store)
    assert cap.body.sha256 == hashlib.sha256(BODY).hexdigest()
    assert cap.body.size == len(BODY) and cap.body.media_type == "text/html"
    assert store.get(cap.body.sha256) == BODY
    assert cap.text is not None and store.get(cap.text.sha256) == "第一章 盗版".encode()
    assert cap.body.ref == f"sha256:{cap.body.sha256}"
    assert cap.headers == (("content-type", "text/html; charset=gbk"), ("server", "nginx"))
    assert cap.screenshot is None and cap.screenshot_none_reason == "no screenshot was taken"
    assert cap.fetched_at == FETCHED.replace(microsecond=123000)  # milliseconds are kept
    assert set(cap.blobs()) == {"body", "text"}
    assert cap.tls is not None and cap.tls.subject == "CN=pirate.example"
    assert cap.tls.fingerprint_sha256 == hashlib.sha256(CERT_DER).hexdigest()
    assert cap.tls.not_before == "2024-01-01T00:00:00.000Z"


def test_screenshot_or_a_reason(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    png = b"\x89PNG\r\n\x1a\n fake"
    cap = build(store, screenshot=png)
    assert cap.screenshot is not None and cap.screenshot.media_type == "image/png"
    assert cap.screenshot_none_reason is None and store.get(cap.screenshot.sha256) == png
    cap = build(store, screenshot_none_reason="no browser on this worker")
    assert cap.screenshot_none_reason == "no browser on this worker"
    with pytest.raises(CaptureError, match="exactly one"):
        Capture(**{**cap.__dict__, "screenshot_none_reason": None})


def test_json_round_trip_is_exact_and_canonical(tmp_path: Path) -> None:
    cap = build(FileBlobStore(tmp_path), screenshot=b"png")
    data = canonical_json(cap.to_json())
    assert Capture.from_json(cap.to_json()) == cap
    assert canonical_json(Capture.from_json(cap.to_json()).to_json()) == data
    assert b'"fetched_at":"2024-11-22T08:30:05.123Z"' in data
    http = build(FileBlobStore(tmp_path), final_url="http://pirate.example/b/1", tls=None)
    assert Capture.from_json(http.to_json()) == http


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda j: j.pop("final_url"), "capture: missing field 'final_url'"),
        (lambda j: j.__setitem__("http_status", "200"), "capture.http_status"),
        (lambda j: j["body"].__setitem__("sha256", "xyz"), "capture.body.sha256"),
        (lambda j: j["redirects"][0].pop("location"), r"capture.redirects\[0\]: missing"),
        (lambda j: j.__setitem__("headers", [["a"]]), r"capture.headers\[0\]"),
        (lambda j: j.__setitem__("fetched_at", "2024-11-22 08:30"), "capture.fetched_at"),
        (lambda j: j.__setitem__("version", "yinji-capture/9"), "capture.version"),
    ],
)
def test_malformed_records_name_the_field(tmp_path: Path, change: object, message: str) -> None:
    obj = build(FileBlobStore(tmp_path)).to_json()
    change(obj)  # type: ignore[operator]
    with pytest.raises(CaptureError, match=message):
        Capture.from_json(obj)


def test_naive_times_and_bad_status_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="fetched_at"):
        build(FileBlobStore(tmp_path), fetched_at=datetime(2024, 1, 1))
    with pytest.raises(CaptureError, match="http_status"):
        build(FileBlobStore(tmp_path), http_status=42)


def test_submission(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    sub = Submission.build(
        store,
        suspect_id="pasted-1",
        source="text",
        received_at=FETCHED + timedelta(hours=1),
        text="粘贴的文字",
    )
    assert store.get(sub.text.sha256) == "粘贴的文字".encode()
    assert Submission.from_json(sub.to_json()) == sub
    assert "fetched_at" not in sub.to_json()
    with_file = Submission.build(
        store,
        suspect_id="f",
        source="file:chapter.docx",
        received_at=FETCHED,
        text="t",
        original=b"PK\x03\x04docx",
        original_media_type="application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    )
    assert set(with_file.blobs()) == {"text", "original"}
    assert Submission.from_json(with_file.to_json()) == with_file
