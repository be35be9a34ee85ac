"""Evidence bundles: one zip per match that anyone can verify without Yinji.

``export_bundle`` gathers, for a suspect (and one of its works), every log record about
it, the bytes those records name (page as served, extracted text, screenshot, submitted
text), the pages again as WARC, and the report files the caller made (PDF, HTML); signs
a tree head over the whole log when it has grown (after ``check_consistency``;
timestamped when a TSA is configured) and writes:

=====================  ==============================================================
``SHA256SUMS``         every other member's sha256 (``sha256sum -c SHA256SUMS``)
``SHA256SUMS.sig``     the log key's Ed25519 signature of ``SHA256SUMS``: every member,
                       the verifier script and VERIFY.txt included, is signed
``manifest.json``      every member's sha256, size and role, and which record names it
``log/N.json``         record N, byte for byte as hashed into the log
``proofs/N.json``      record N's audit path to the tree head (RFC 6962)
``capture/N/…``        the bytes capture record N names (``body.html``, ``text.txt``,
                       ``screenshot.png``); ``submission/N/…`` likewise
``captures.warc.gz``   every capture as WARC request/response records (ISO 28500)
``report/…``           the report files
``treehead.json``      the signed tree head (its exact signed bytes)
``treehead.sig``       its Ed25519 signature; ``public-key.pem`` the log's key
``treehead.tsr``       the RFC 3161 timestamp response, when there is one;
                       ``tsa-certs.pem`` the certificates it carries
``heads/N.*``          earlier timestamped tree heads that already held older records
                       (``.json``, ``.sig``, ``.tsr``), with ``.consistency.json``: the
                       proof that the bundle's tree head extends each
``VERIFY.txt``         how to check all of it with sha256sum, openssl and python3
``verify_proof.py``    a standard-library script that checks the Merkle proofs
=====================  ==============================================================

Exporting appends nothing to the log (a read never writes). A bundle that cannot be
built whole (a blob missing or altered, a record that no longer fits the signed head)
is refused with ``EvidenceError`` naming it, and every bundle is verified with the
log's own key before it is written: a bundle that would fail ``verify_bundle`` is never
written. ``verify_bundle`` lives in ``tracker.evidence.verify``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .blobs import BlobCorrupt, BlobMissing
from .bundle_format import (
    BUNDLE_FORMAT,
    INSTRUCTIONS,
    MANIFEST,
    PUBLIC_KEY,
    SIGNATURE,
    SUMS,
    SUMS_SIG,
    TOKEN,
    TREEHEAD,
    TSA_CERTS,
    VERIFIER,
    VERIFY_SCRIPT,
    WARC,
    _ext,
    _sha,
    instructions,
)
from .canonical import CanonicalError, format_time, time_from_ms
from .capture import Capture, CaptureError
from .keys import TreeHead
from .log import EvidenceLog
from .merkle import leaf_hash, verify_inclusion
from .records import EvidenceError, HeadRecord, LogEntry, NoEvidence

_REPORT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass
class ExportResult:
    path: str | None
    members: list[str]
    tree_head: TreeHead
    stamped: bool
    fingerprint: str


# --------------------------------------------------------------------------- export


def _checked_entries(log: EvidenceLog, entries: Sequence[LogEntry], head: TreeHead) -> None:
    """Every record still hashes to its leaf and is in the signed head, or refuse."""
    for entry in entries:
        where = f"log record {entry.index} ({entry.kind if _parses(entry) else 'unreadable'})"
        if leaf_hash(entry.data) != entry.leaf_hash:
            raise EvidenceError(
                f"{where} was altered in the log: its bytes no longer hash to its leaf hash; "
                "no bundle was written (run `yinji evidence audit`)"
            )
        if entry.index >= head.size or not verify_inclusion(
            entry.leaf_hash,
            entry.index,
            head.size,
            log.inclusion_proof(entry.index, head.size),
            head.root_hash,
        ):
            raise EvidenceError(
                f"{where} is not in the signed tree head of {head.size} records; no bundle "
                "was written (run `yinji evidence audit`)"
            )
        if not _parses(entry):
            raise EvidenceError(f"{where} cannot be read as a log record; no bundle was written")


def _parses(entry: LogEntry) -> bool:
    try:
        return isinstance(entry.envelope.get("payload"), dict)
    except (CanonicalError, ValueError):
        return False


def _blob(log: EvidenceLog, entry: LogEntry, field_name: str, digest: str) -> bytes:
    where = f"the {field_name} of {entry.kind} record {entry.index} (sha256 {digest})"
    try:
        return log.blobs.get(digest)
    except BlobMissing as exc:
        raise EvidenceError(
            f"{where} is missing from the evidence store ({exc.args[0] if exc.args else exc}); "
            "no bundle was written"
        ) from None
    except BlobCorrupt as exc:
        raise EvidenceError(
            f"{where} was altered in the evidence store ({exc}); no bundle was written"
        ) from None
    except ValueError as exc:
        raise EvidenceError(f"{where} cannot be read ({exc}); no bundle was written") from None


def export_bundle(
    log: EvidenceLog,
    out: str | Path | IO[bytes],
    *,
    suspect_id: str,
    mother_id: str | None = None,
    reports: Mapping[str, bytes] | None = None,
) -> ExportResult:
    """Write the evidence bundle of ``suspect_id`` (and ``mother_id``: one match) to
    ``out`` (a path or a binary file). ``reports`` maps file names (``report.pdf``,
    ``report.html``) to their bytes. Appends nothing to the log; signs (and, with a TSA,
    timestamps) a new tree head only when the log has grown since the last one.
    ``EvidenceError`` (nothing written) when nothing was recorded about the suspect, when
    the log is inconsistent with its signed heads, or when a record or a blob it names
    is missing or altered."""
    from .verify import verify_bundle
    from .warc import WarcCapture, build_warc

    reports = dict(reports or {})
    for name in reports:
        if not _REPORT_NAME.fullmatch(name):
            raise EvidenceError(f"report file name {name!r}: use letters, digits, '.', '_', '-'")
    entries = log.entries(suspect_id=suspect_id, mother_id=mother_id)
    if not entries:
        target = f"suspect {suspect_id!r}" + (f" and work {mother_id!r}" if mother_id else "")
        raise NoEvidence(f"the evidence log has no record about {target}")

    record = log.tree_head()  # refuses a log inconsistent with its signed heads
    head = record.head
    entries = [e for e in entries if e.index < head.size]
    _checked_entries(log, entries, head)

    files: dict[str, bytes] = {}
    members: dict[str, dict[str, Any]] = {}
    by_digest: dict[str, str] = {}

    def add(name: str, data: bytes, role: str, proof: dict[str, Any] | None = None) -> None:
        files[name] = data
        members[name] = {
            "name": name,
            "proof": proof,
            "role": role,
            "sha256": _sha(data),
            "size": len(data),
        }

    # the bytes the records name, and the pages as WARC
    warc_items: list[WarcCapture] = []
    for entry in entries:
        kind = entry.kind
        if kind not in ("capture", "submission"):
            continue
        blobs: dict[str, bytes] = {}
        for field_name, info in entry.payload.items():
            if not isinstance(info, dict) or "sha256" not in info or field_name == "tls":
                continue
            digest = str(info["sha256"])
            data = _blob(log, entry, field_name, digest)
            blobs[field_name] = data
            if digest in by_digest:  # the same bytes captured again: included once
                continue
            name = f"{kind}/{entry.index:08d}/{field_name}{_ext(str(info.get('media_type', '')))}"
            proof = {"leaf_index": entry.index, "path": ["payload", field_name, "sha256"]}
            add(name, data, f"{kind}-{field_name}", proof)
            by_digest[digest] = name
        if kind == "capture":
            try:
                capture = Capture.from_json(entry.payload, f"capture record {entry.index}")
            except CaptureError as exc:
                raise EvidenceError(f"{exc}; no bundle was written") from None
            warc_items.append(WarcCapture(entry.index, capture, blobs["body"]))
    if warc_items:
        from tracker import __version__

        add(WARC, build_warc(head.log_id, warc_items, software=f"Yinji {__version__}"), "warc")
    for name, data in sorted(reports.items()):
        add(f"report/{name}", data, "report")

    records = []
    for entry in entries:
        log_name, proof_name = f"log/{entry.index:08d}.json", f"proofs/{entry.index:08d}.json"
        add(log_name, entry.data, f"record-{entry.kind}")
        proof = {
            "audit_path": [h.hex() for h in log.inclusion_proof(entry.index, head.size)],
            "leaf_hash": entry.leaf_hash.hex(),
            "leaf_index": entry.index,
            "log_file": log_name,
            "root_hash": head.root_hash.hex(),
            "tree_size": head.size,
        }
        add(proof_name, _pretty(proof), "proof")
        records.append(
            {"file": log_name, "kind": entry.kind, "leaf_index": entry.index, "proof": proof_name}
        )

    anchors = []
    for anchor, indexes in _anchors(log, entries, record):
        base = f"heads/{anchor.id:08d}"
        first = anchor.head
        assert anchor.token is not None
        add(f"{base}.json", first.encode(), "anchor-tree-head")
        add(f"{base}.sig", anchor.signed.signature, "anchor-tree-head-signature")
        add(f"{base}.tsr", anchor.token, "anchor-timestamp")
        proof = {
            "first": first.size,
            "first_root": first.root_hash.hex(),
            "proof": [h.hex() for h in log.consistency_proof(first.size, head.size)],
            "second": head.size,
            "second_root": head.root_hash.hex(),
        }
        add(f"{base}.consistency.json", _pretty(proof), "consistency-proof")
        anchors.append(
            {
                "consistency": f"{base}.consistency.json",
                "head": f"{base}.json",
                "records": indexes,
                "signature": f"{base}.sig",
                "size": first.size,
                "timestamp": f"{base}.tsr",
            }
        )

    add(TREEHEAD, head.encode(), "tree-head")
    add(SIGNATURE, record.signed.signature, "tree-head-signature")
    add(PUBLIC_KEY, log.public_key_pem(), "public-key")
    token = record.token
    if token is not None:
        add(TOKEN, token, "timestamp")
        certs = _token_certificates(token)
        if certs:
            add(TSA_CERTS, certs, "tsa-certificates")
    add(VERIFY_SCRIPT, VERIFIER.read_bytes(), "verifier")
    add(
        INSTRUCTIONS,
        instructions(suspect_id, mother_id, head, records, token is not None, anchors),
        "instructions",
    )
    manifest = {
        "anchors": anchors,
        "created_at": format_time(log.clock()),
        "fingerprint": head.log_id,
        "format": BUNDLE_FORMAT,
        "log_id": head.log_id,
        "members": [members[n] for n in sorted(members)],
        "mother_id": mother_id,
        "public_key": PUBLIC_KEY,
        "records": records,
        "signature": SUMS_SIG,
        "suspect_id": suspect_id,
        "tree_head": {
            "file": TREEHEAD,
            "root_hash": head.root_hash.hex(),
            "signature": SIGNATURE,
            "size": head.size,
            "timestamp": TOKEN if token is not None else None,
        },
        "verifier_sha256": _sha(files[VERIFY_SCRIPT]),
    }
    files[MANIFEST] = _pretty(manifest)
    files[SUMS] = sums_text(files)
    files[SUMS_SIG] = log.key.sign(files[SUMS])

    when = time_from_ms(head.timestamp_ms)
    date_time: _DateTime = (
        max(when.year, 1980),
        when.month,
        when.day,
        when.hour,
        when.minute,
        when.second,
    )
    import io

    sink = io.BytesIO()
    _write_zip(sink, files, date_time)
    blob = sink.getvalue()
    # Never hand out a bundle that would not verify with the log's own key.
    roots = list(log.tsa.trusted) if log.tsa is not None else []
    check = verify_bundle(io.BytesIO(blob), public_key=log.public_key_pem(), tsa_roots=roots)
    if not check.ok:
        raise EvidenceError("the bundle would not verify, so none was written:\n" + check.summary())
    if isinstance(out, str | Path):
        # written beside the target and renamed: a crash never leaves half a bundle
        final = Path(out)
        tmp = final.with_name(f".{final.name}.{secrets.token_hex(6)}.tmp")
        try:
            tmp.write_bytes(blob)
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
    else:
        out.write(blob)
    return ExportResult(
        path=str(out) if isinstance(out, str | Path) else None,
        members=sorted(files),
        tree_head=head,
        stamped=token is not None,
        fingerprint=head.log_id,
    )


_DateTime = tuple[int, int, int, int, int, int]


def _anchors(
    log: EvidenceLog, entries: Sequence[LogEntry], latest: HeadRecord
) -> list[tuple[HeadRecord, list[int]]]:
    """For each record, the earliest timestamped tree head that covers it, when that is
    older than the bundle's head: its token bounds the record's time from the time it
    was signed, not from the export. Returns (head, the record indexes it anchors)."""
    stamped = sorted(
        (h for h in log.heads() if h.token is not None and h.head.size <= latest.head.size),
        key=lambda h: (h.head.size, h.id),
    )
    chosen: dict[int, tuple[HeadRecord, list[int]]] = {}
    for entry in entries:
        anchor = next((h for h in stamped if h.head.size > entry.index), None)
        if anchor is None or anchor.id == latest.id:
            continue
        if latest.token is not None and anchor.head.timestamp_ms >= latest.head.timestamp_ms:
            continue
        chosen.setdefault(anchor.id, (anchor, []))[1].append(entry.index)
    return [chosen[k] for k in sorted(chosen)]


def sums_text(files: Mapping[str, bytes]) -> bytes:
    """``SHA256SUMS``: every member but itself and its signature, sorted by name."""
    names = sorted(n for n in files if n not in (SUMS, SUMS_SIG))
    return "".join(f"{_sha(files[n])}  {n}\n" for n in names).encode("utf-8")


def _write_zip(sink: IO[bytes], files: Mapping[str, bytes], date_time: _DateTime) -> None:
    first = [SUMS, SUMS_SIG, INSTRUCTIONS, MANIFEST]
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in [*first, *sorted(set(files) - set(first))]:
            info = zipfile.ZipInfo(name, date_time=date_time)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            zf.writestr(info, files[name])


def _pretty(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _token_certificates(response: bytes) -> bytes:
    """PEM of the certificates inside a timestamp response (for reading who the TSA is)."""
    # Imported here: only an export with a timestamp needs them (a check, which opens
    # the log, does not: issue #37).
    from asn1crypto import cms
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from .tsa import TokenError, token_of

    try:
        signed = cms.ContentInfo.load(token_of(response))["content"]
        ders = [c.chosen.dump() for c in signed["certificates"] or [] if c.name == "certificate"]
    except (ValueError, TokenError):
        return b""
    return b"".join(
        x509.load_der_x509_certificate(d).public_bytes(serialization.Encoding.PEM) for d in ders
    )
