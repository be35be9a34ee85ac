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

import hashlib
import json
import os
import re
import secrets
import stat
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .blobs import BlobCorrupt, BlobMissing
from .canonical import CanonicalError, format_time, time_from_ms
from .capture import Capture, CaptureError
from .keys import TreeHead, format_fingerprint
from .log import EvidenceError, EvidenceLog, HeadRecord, LogEntry, NoEvidence
from .merkle import leaf_hash, verify_inclusion

BUNDLE_FORMAT = "yinji-evidence-bundle/2"
OLD_FORMATS = ("yinji-evidence-bundle/1",)
VERIFIER = Path(__file__).with_name("verify_proof.py")

MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
SUMS_SIG = "SHA256SUMS.sig"
TREEHEAD = "treehead.json"
SIGNATURE = "treehead.sig"
TOKEN = "treehead.tsr"
TSA_CERTS = "tsa-certs.pem"
PUBLIC_KEY = "public-key.pem"
INSTRUCTIONS = "VERIFY.txt"
VERIFY_SCRIPT = "verify_proof.py"
WARC = "captures.warc.gz"
# Members no log record names: covered by the signature of SHA256SUMS (and checked by
# their own means: hash, signature, token, regeneration).
SCAFFOLDING = {
    MANIFEST,
    SUMS,
    SUMS_SIG,
    TREEHEAD,
    SIGNATURE,
    TOKEN,
    TSA_CERTS,
    PUBLIC_KEY,
    INSTRUCTIONS,
    VERIFY_SCRIPT,
    WARC,
}

_REPORT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_EXTENSIONS = {
    "text/html": ".html",
    "application/xhtml+xml": ".xhtml",
    "text/plain": ".txt",
    "application/json": ".json",
    "image/png": ".png",
    "application/pdf": ".pdf",
}


class BundleError(ValueError):
    """A bundle cannot be read at all (not a zip, or a hostile one); names the member."""


@dataclass(frozen=True)
class Limits:
    """What ``verify_bundle`` accepts before reading anything."""

    max_members: int = 10_000
    max_member_bytes: int = 512 * 1024 * 1024
    max_total_bytes: int = 2 * 1024 * 1024 * 1024
    max_ratio: int = 200  # uncompressed / compressed, for members above 1 MiB


@dataclass
class ExportResult:
    path: str | None
    members: list[str]
    tree_head: TreeHead
    stamped: bool
    fingerprint: str


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _ext(media_type: str) -> str:
    return _EXTENSIONS.get(media_type.split(";")[0].strip().lower(), ".bin")


def verifier_sha256() -> str:
    """SHA-256 of the ``verify_proof.py`` this version of Yinji puts in bundles (the
    hash ``yinji evidence head`` publishes)."""
    return _sha(VERIFIER.read_bytes())


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


def instructions(
    suspect_id: str | None,
    mother_id: str | None,
    head: TreeHead,
    records: Sequence[Mapping[str, object]],
    stamped: bool,
    anchors: Sequence[Mapping[str, object]] = (),
) -> bytes:
    """``VERIFY.txt`` of a bundle: a function of the manifest and the tree head only, so
    ``verify_bundle`` can rebuild it and name a rewritten one."""
    example = records[0]["file"] if records else "log/00000000.json"
    what = f"suspect {suspect_id}" + (f", work {mother_id}" if mother_id else "")
    lines = [
        "Yinji evidence bundle: how to verify it without Yinji",
        "音迹证据包：如何在不使用音迹的情况下核验",
        "",
        f"Bundle of {what}.",
        f"Evidence log key fingerprint (证据日志公钥指纹): {format_fingerprint(head.log_id)}",
        f"Tree head: {head.size} records, root {head.root_hash.hex()},",
        f"signed {format_time(time_from_ms(head.timestamp_ms))}.",
        "",
        "Do not trust the fingerprint above because this file says so: compare it with the",
        "one the rights holder published (on its notices and reports, its web site, or",
        "`yinji evidence head`). Everything below is anchored on that published key.",
        "不要仅凭本文件信任上面的指纹：请与权利人公布的指纹（通知函、报告、网站）核对。",
        "",
        "Unzip the bundle and run these commands in its folder (sha256sum, OpenSSL 3, python3).",
        "解压后在其目录中运行以下命令。",
        "",
        "1. The key is the published one (公钥与公布的指纹一致):",
        "   openssl pkey -pubin -in public-key.pem -outform DER | tail -c 32 | sha256sum",
        "",
        "2. The list of files is signed by that key (文件清单由该公钥签名):",
        "   openssl pkeyutl -verify -pubin -inkey public-key.pem -rawin -in SHA256SUMS \\",
        "     -sigfile SHA256SUMS.sig",
        "",
        "3. Every file is the one listed, and no file is left out (每个文件与清单一致):",
        "   sha256sum -c SHA256SUMS",
        "   Every file of the zip but SHA256SUMS and SHA256SUMS.sig must be listed in it.",
        "",
        "4. The tree head is signed by the same key (树头签名有效):",
        "   openssl pkeyutl -verify -pubin -inkey public-key.pem -rawin -in treehead.json \\",
        "     -sigfile treehead.sig",
        "",
    ]
    if stamped:
        lines += [
            "5. A time-stamping authority vouches that this tree head existed at its time",
            "   (可信时间戳):",
            "   openssl ts -verify -in treehead.tsr -data treehead.json -CAfile TSA-ROOT.pem",
            "   TSA-ROOT.pem is the root certificate the TSA publishes (not from this bundle).",
            "   The time, and who the TSA is (时间与时间戳机构):",
            "   openssl ts -reply -in treehead.tsr -text",
            "   openssl x509 -in tsa-certs.pem -noout -subject -issuer",
            "   No record may claim a time (fetched_at, logged_at) after that time.",
            "",
        ]
    else:
        lines += ["5. This tree head has no timestamp token (本树头没有可信时间戳).", ""]
    if anchors:
        lines += [
            "5b. Older records are also under earlier timestamped tree heads (heads/), which",
            "   the signed tree head extends (consistency proofs; verify_proof.py checks them).",
            "   No record may claim a time after its earlier head's timestamp",
            "   (更早的带时间戳的树头):",
        ]
        for anchor in anchors:
            head_file, sig_file, tsr_file = anchor["head"], anchor["signature"], anchor["timestamp"]
            lines += [
                "   openssl pkeyutl -verify -pubin -inkey public-key.pem -rawin \\",
                f"     -in {head_file} -sigfile {sig_file}",
                f"   openssl ts -verify -in {tsr_file} -data {head_file} -CAfile TSA-ROOT.pem",
            ]
        lines.append("")
    lines += [
        "6. Each record is in the signed log, and each file is the one a record names",
        "   (每条记录都在已签名的日志中，每个文件都是记录所指的文件):",
        "   python3 verify_proof.py",
        "   verify_proof.py is a convenience: first compare `sha256sum verify_proof.py` with",
        "   the verifier hash the rights holder publishes (verifier_sha256 of",
        "   `yinji evidence head --json`), or read it: it is short. By hand, a record's leaf",
        "   hash (手工计算某条记录的叶哈希):",
        f"   (printf '\\000'; cat {example}) | sha256sum",
        "   It must equal leaf_hash in the record's proofs/ file.",
        "",
        "captures.warc.gz holds the captured pages as WARC (ISO 28500) for web archive",
        "players (pywb, replayweb.page). What each file proves: docs/EVIDENCE.md in Yinji;",
        "each member's role: manifest.json.",
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


# --------------------------------------------------------------------------- reading


def _safe_name(name: str) -> bool:
    if not name or "\\" in name or "\x00" in name or name.startswith("/"):
        return False
    if re.match(r"[A-Za-z]:", name):
        return False
    parts = name.split("/")
    return all(p not in ("", ".", "..") for p in parts)


def read_bundle(
    source: str | Path | IO[bytes], limits: Limits = Limits()
) -> tuple[dict[str, bytes | None], str]:
    """The members of a bundle zip (None for one whose bytes fail the zip's own CRC),
    after refusing hostile archives. Returns (members, the name used in messages)."""
    label = str(source) if isinstance(source, str | Path) else getattr(source, "name", "bundle")
    try:
        zf = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(f"{label}: not a readable zip file ({exc})") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > limits.max_members:
            raise BundleError(f"{label}: {len(infos)} members, more than {limits.max_members}")
        seen: set[str] = set()
        total = 0
        for info in infos:
            name = info.filename
            if not _safe_name(name):
                raise BundleError(f"{label}: member {name!r} has an unsafe name")
            if name in seen:
                raise BundleError(f"{label}: member {name!r} appears twice")
            seen.add(name)
            if stat.S_ISLNK(info.external_attr >> 16):
                raise BundleError(f"{label}: member {name!r} is a symbolic link")
            if info.flag_bits & 0x1:
                raise BundleError(f"{label}: member {name!r} is encrypted")
            if info.file_size > limits.max_member_bytes:
                raise BundleError(
                    f"{label}: member {name!r} is {info.file_size} bytes, more than "
                    f"{limits.max_member_bytes}"
                )
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > 1024 * 1024 and ratio > limits.max_ratio:
                raise BundleError(
                    f"{label}: member {name!r} expands {ratio:.0f} times (a zip bomb?)"
                )
            total += info.file_size
            if total > limits.max_total_bytes:
                raise BundleError(
                    f"{label}: members total more than {limits.max_total_bytes} bytes"
                )
        members: dict[str, bytes | None] = {}
        for info in infos:
            try:
                with zf.open(info) as fh:
                    data = fh.read(info.file_size + 1)
                if len(data) != info.file_size:
                    raise zipfile.BadZipFile("size differs from the zip directory")
                members[info.filename] = data
            except (zipfile.BadZipFile, zlib.error, EOFError, ValueError):
                members[info.filename] = None  # damaged inside the zip: altered
    return members, label


def record_times(record: Mapping[str, object]) -> list[tuple[str, str]]:
    """The times a log record claims, as (field, ISO text): ``logged_at`` and, by kind,
    ``fetched_at`` (capture), ``received_at`` (submission), ``checked_at`` (check),
    ``at`` (verdict, case state)."""
    out: list[tuple[str, str]] = []
    logged_at = record.get("logged_at")
    if isinstance(logged_at, str):
        out.append(("logged_at", logged_at))
    payload = record.get("payload")
    if isinstance(payload, dict):
        for name in ("fetched_at", "received_at", "checked_at", "at"):
            value = payload.get(name)
            if isinstance(value, str):
                out.append((name, value))
    return out
