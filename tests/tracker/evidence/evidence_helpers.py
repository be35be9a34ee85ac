"""Helpers of the bundle tests: a small case recorded in an evidence log, and zip surgery
(what someone tampering with a bundle would do)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tracker.common.records import Match, Passage
from tracker.evidence.capture import Capture, RedirectHop, Submission
from tracker.evidence.log import EvidenceLog

PAGE = "<html><body><p>第一章 天色已晚，他推门而入。</p></body></html>".encode()
TEXT = "第一章 天色已晚，他推门而入。"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
REPORTS = {
    "report.pdf": b"%PDF-1.7\n% a report\n%%EOF\n",
    "report.html": "<html>报告</html>".encode(),
}


def record_case(log: EvidenceLog, suspect_id: str = "s1", mother_id: str = "m1") -> None:
    """A crawled page, its check, a verdict and a notice, as the crawler and the library
    will record them."""
    capture = Capture.build(
        log.blobs,
        suspect_id=suspect_id,
        requested_url="http://pirate.example/b/1",
        redirects=[RedirectHop("http://pirate.example/b/1", 302, "http://pirate.example/b/1/")],
        final_url="http://pirate.example/b/1/",
        resolved_ip="203.0.113.7",
        http_status=200,
        headers={"content-type": "text/html; charset=utf-8"},
        body=PAGE,
        fetched_at=datetime(2024, 11, 22, 8, 0, tzinfo=UTC),
        text=TEXT,
        screenshot=PNG,
        crawler_version="yinji-crawler/test",
    )
    cap = log.record_capture(capture)
    match = Match(suspect_id, mother_id, 0.97, 0.8, 0.1, [Passage(0, 14, 120, 134, 1.0)])
    log.record_check(
        suspect_id=suspect_id,
        matches=[match],
        engine="daguan",
        suspect_text=TEXT,
        capture_index=cap.index,
    )
    log.record_verdict(suspect_id=suspect_id, mother_id=mother_id, verdict="confirmed", by="alice")
    log.record_case_state(suspect_id=suspect_id, mother_id=mother_id, state="notice_sent")
    # records about another suspect and another work stay out of the bundle
    log.record_verdict(suspect_id="other", mother_id=mother_id, verdict="dismissed")
    log.record_verdict(suspect_id=suspect_id, mother_id="m2", verdict="dismissed")


def record_submission(log: EvidenceLog, suspect_id: str = "pasted") -> None:
    sub = Submission.build(
        log.blobs,
        suspect_id=suspect_id,
        source="text",
        received_at=datetime(2024, 11, 22, 9, 0, tzinfo=UTC),
        text=TEXT,
    )
    log.record_submission(sub)
    log.record_check(suspect_id=suspect_id, matches=[], engine="daguan", suspect_text=TEXT)


def members(zip_bytes: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(zip_bytes)) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def rezip(files: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compression) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()


def edit(zip_bytes: bytes, change: Callable[[dict[str, bytes]], None]) -> bytes:
    files = members(zip_bytes)
    change(files)
    return rezip(files)


def flip(data: bytes, at: int | None = None) -> bytes:
    at = len(data) // 2 if at is None else at
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def refresh_lists(files: dict[str, bytes]) -> None:
    """What a careful forger does after editing: fix manifest.json and SHA256SUMS."""
    import hashlib

    manifest = json.loads(files["manifest.json"])
    for m in manifest["members"]:
        if m["name"] in files:
            m["sha256"] = hashlib.sha256(files[m["name"]]).hexdigest()
            m["size"] = len(files[m["name"]])
    manifest["members"] = [m for m in manifest["members"] if m["name"] in files]
    files["manifest.json"] = json.dumps(manifest, indent=2).encode()
    fix_sums(files)


def fix_sums(files: dict[str, bytes]) -> None:
    """Rewrite SHA256SUMS for the files as they are now."""
    import hashlib

    files["SHA256SUMS"] = "".join(
        f"{hashlib.sha256(files[n]).hexdigest()}  {n}\n"
        for n in sorted(files)
        if n not in ("SHA256SUMS", "SHA256SUMS.sig")
    ).encode()


def resign(files: dict[str, bytes], key: Any) -> None:
    """What a forger with a key of their own does: re-sign the tree head and the lists
    with it and put its public key in (``key``: a ``SigningKey``)."""
    from tracker.evidence.keys import TreeHead

    head = json.loads(files["treehead.json"])
    head["log_id"] = key.key_id
    files["treehead.json"] = TreeHead(
        head["size"], bytes.fromhex(head["root_hash"]), head["timestamp_ms"], key.key_id
    ).encode()
    files["treehead.sig"] = key.sign(files["treehead.json"])
    files["public-key.pem"] = key.public_pem()
    files.pop("treehead.tsr", None)
    files.pop("tsa-certs.pem", None)
    refresh_lists(files)
    files["SHA256SUMS.sig"] = key.sign(files["SHA256SUMS"])
