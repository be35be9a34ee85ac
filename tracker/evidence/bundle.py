"""Evidence bundles: one zip per match that anyone can verify without Yinji.

``export_bundle`` gathers, for a suspect (and one of its works), every log record about
it, the bytes those records name (page as served, extracted text, screenshot, submitted
text), the report files the caller made (PDF, HTML), and appends an ``export`` record
naming all of them; then it signs a tree head over the whole log (timestamped when a TSA
is configured) and writes:

=====================  ==============================================================
``manifest.json``      every member's sha256, size and role, and which record names it
``SHA256SUMS``         ``sha256sum -c SHA256SUMS`` checks every member
``log/N.json``         record N, byte for byte as hashed into the log
``proofs/N.json``      record N's audit path to the tree head (RFC 6962)
``capture/N/…``        the bytes capture record N names (``body.html``, ``text.txt``,
                       ``screenshot.png``); ``submission/N/…`` likewise
``report/…``           the report files, named by the export record
``treehead.json``      the signed tree head (its exact signed bytes)
``treehead.sig``       its Ed25519 signature; ``public-key.pem`` the log's key
``treehead.tsr``       the RFC 3161 timestamp response, when there is one;
                       ``tsa-certs.pem`` the certificates it carries
``VERIFY.txt``         how to check all of it with sha256sum, openssl and python3
``verify_proof.py``    a standard-library script that checks the Merkle proofs
=====================  ==============================================================

``verify_bundle`` checks it all (hashes, manifest, signature, timestamp, proofs, which
record names which file) and names every member that is altered, missing or unproven.
It reads the zip in memory and never extracts it; hostile archives (unsafe names,
links, encryption, oversized or over-compressed members) are refused with
``BundleError`` before anything is read.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from asn1crypto import cms
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from .canonical import CanonicalError, format_time, parse_json_object, time_from_ms
from .keys import EvidenceKeyError, SignedTreeHead, TreeHead, key_id_of, public_key_from_pem
from .log import EvidenceError, EvidenceLog
from .merkle import leaf_hash, verify_inclusion
from .tsa import TimestampInfo, TokenError, token_of, verify_response

BUNDLE_FORMAT = "yinji-evidence-bundle/1"
VERIFIER = Path(__file__).with_name("verify_proof.py")

MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
TREEHEAD = "treehead.json"
SIGNATURE = "treehead.sig"
TOKEN = "treehead.tsr"
TSA_CERTS = "tsa-certs.pem"
PUBLIC_KEY = "public-key.pem"
INSTRUCTIONS = "VERIFY.txt"
VERIFY_SCRIPT = "verify_proof.py"
# Members that are checked by other means than a log record (hash, signature, token).
SCAFFOLDING = {
    MANIFEST,
    SUMS,
    TREEHEAD,
    SIGNATURE,
    TOKEN,
    TSA_CERTS,
    PUBLIC_KEY,
    INSTRUCTIONS,
    VERIFY_SCRIPT,
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
    export_index: int


@dataclass
class VerifyResult:
    """What ``verify_bundle`` found. ``ok`` when nothing is altered, missing, unproven or
    unexpected and there is no other problem; ``problems`` says why in words."""

    altered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unproven: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    tree_head: TreeHead | None = None
    key_id: str | None = None
    timestamp: TimestampInfo | None = None
    records: int = 0

    @property
    def ok(self) -> bool:
        return not (
            self.altered or self.missing or self.unproven or self.unexpected or self.problems
        )

    def _flag(self, bucket: list[str], name: str, problem: str) -> None:
        if name not in self.altered and name not in self.missing and name not in bucket:
            bucket.append(name)
        if problem not in self.problems:
            self.problems.append(problem)

    def summary(self) -> str:
        if self.ok:
            head = self.tree_head
            lines = [
                f"OK: {len(self.verified)} files verified; {self.records} log records proven in "
                f"the tree head of {head.size if head else '?'} records signed by log "
                f"{self.key_id}"
            ]
            if self.timestamp is not None:
                checked = (
                    ""
                    if self.timestamp.chain_checked
                    else " (TSA certificate not checked against a trusted root)"
                )
                lines.append(
                    f"timestamp: {format_time(self.timestamp.gen_time)} by "
                    f"{self.timestamp.tsa_subject}{checked}"
                )
            else:
                lines.append("timestamp: none (the tree head was not timestamped)")
            return "\n".join(lines)
        lines = ["FAILED:"]
        for label, names in (
            ("altered", self.altered),
            ("missing", self.missing),
            ("unproven", self.unproven),
            ("unexpected", self.unexpected),
        ):
            lines.extend(f"  {label}: {name}" for name in sorted(names))
        lines.extend(f"  - {p}" for p in self.problems)
        return "\n".join(lines)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _ext(media_type: str) -> str:
    return _EXTENSIONS.get(media_type.split(";")[0].strip().lower(), ".bin")


# --------------------------------------------------------------------------- export


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
    ``report.html``) to their bytes. Appends an ``export`` record and signs (and, with a
    TSA, timestamps) a new tree head. ``EvidenceError`` when nothing was recorded about
    the suspect; a blob that no longer matches its hash stops the export (``BlobCorrupt``)."""
    reports = dict(reports or {})
    for name in reports:
        if not _REPORT_NAME.fullmatch(name):
            raise EvidenceError(f"report file name {name!r}: use letters, digits, '.', '_', '-'")
    entries = log.entries(suspect_id=suspect_id, mother_id=mother_id)
    if not entries:
        target = f"suspect {suspect_id!r}" + (f" and work {mother_id!r}" if mother_id else "")
        raise EvidenceError(f"the evidence log has no record about {target}")

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

    # the bytes the records name
    for entry in entries:
        kind = entry.kind
        if kind not in ("capture", "submission"):
            continue
        for field_name, info in entry.payload.items():
            if not isinstance(info, dict) or "sha256" not in info or field_name == "tls":
                continue
            digest = info["sha256"]
            if digest in by_digest:  # the same bytes captured again: included once
                continue
            data = log.blobs.get(digest)
            name = f"{kind}/{entry.index:08d}/{field_name}{_ext(info.get('media_type', ''))}"
            proof = {"leaf_index": entry.index, "path": ["payload", field_name, "sha256"]}
            add(name, data, f"{kind}-{field_name}", proof)
            by_digest[digest] = name

    # the export record names the reports and everything else in the bundle
    report_members = {f"report/{name}": data for name, data in sorted(reports.items())}
    listed = {
        name: {"sha256": _sha(data), "size": len(data)}
        for name, data in [*files.items(), *report_members.items()]
    }
    export = log.append(
        "export",
        {
            "created_at": format_time(log.clock()),
            "files": listed,
            "mother_id": mother_id,
            "records": [e.index for e in entries],
            "suspect_id": suspect_id,
        },
        suspect_id=suspect_id,
        mother_id=mother_id,
    )
    for name, data in report_members.items():
        add(
            name,
            data,
            "report",
            {"leaf_index": export.index, "path": ["payload", "files", name, "sha256"]},
        )
    entries = [*entries, export]

    record = log.tree_head()
    head = record.head
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
        _instructions(suspect_id, mother_id, head, records, token is not None).encode("utf-8"),
        "instructions",
    )
    manifest = {
        "created_at": format_time(log.clock()),
        "format": BUNDLE_FORMAT,
        "log_id": head.log_id,
        "members": [members[n] for n in sorted(members)],
        "mother_id": mother_id,
        "public_key": PUBLIC_KEY,
        "records": records,
        "suspect_id": suspect_id,
        "tree_head": {
            "file": TREEHEAD,
            "root_hash": head.root_hash.hex(),
            "signature": SIGNATURE,
            "size": head.size,
            "timestamp": TOKEN if token is not None else None,
        },
    }
    files[MANIFEST] = _pretty(manifest)
    sums = "".join(f"{_sha(files[n])}  {n}\n" for n in sorted(files))
    files[SUMS] = sums.encode("ascii")

    when = time_from_ms(head.timestamp_ms)
    date_time: _DateTime = (
        max(when.year, 1980),
        when.month,
        when.day,
        when.hour,
        when.minute,
        when.second,
    )
    if isinstance(out, str | Path):
        # written beside the target and renamed: a crash never leaves half a bundle
        final = Path(out)
        tmp = final.with_name(f".{final.name}.{secrets.token_hex(6)}.tmp")
        try:
            with open(tmp, "wb") as fh:
                _write_zip(fh, files, date_time)
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
    else:
        _write_zip(out, files, date_time)
    return ExportResult(
        path=str(out) if isinstance(out, str | Path) else None,
        members=sorted(files),
        tree_head=head,
        stamped=token is not None,
        export_index=export.index,
    )


_DateTime = tuple[int, int, int, int, int, int]


def _write_zip(sink: IO[bytes], files: Mapping[str, bytes], date_time: _DateTime) -> None:
    first = [MANIFEST, SUMS, INSTRUCTIONS]
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
    try:
        signed = cms.ContentInfo.load(token_of(response))["content"]
        ders = [c.chosen.dump() for c in signed["certificates"] or [] if c.name == "certificate"]
    except (ValueError, TokenError):
        return b""
    return b"".join(
        x509.load_der_x509_certificate(d).public_bytes(serialization.Encoding.PEM) for d in ders
    )


def _instructions(
    suspect_id: str,
    mother_id: str | None,
    head: TreeHead,
    records: Sequence[Mapping[str, Any]],
    stamped: bool,
) -> str:
    example = records[0]["file"] if records else "log/00000000.json"
    what = f"suspect {suspect_id}" + (f", work {mother_id}" if mother_id else "")
    lines = [
        "Yinji evidence bundle: how to verify it without Yinji",
        "音迹证据包：如何在不使用音迹的情况下核验",
        "",
        f"Bundle of {what}.",
        f"Evidence log {head.log_id}",
        f"Tree head: {head.size} records, root {head.root_hash.hex()},",
        f"signed {format_time(time_from_ms(head.timestamp_ms))}.",
        "",
        "Unzip the bundle and run these commands in its folder (sha256sum, OpenSSL 3, python3).",
        "解压后在其目录中运行以下命令。",
        "",
        "1. Every file is the one listed (每个文件与清单一致):",
        "   sha256sum -c SHA256SUMS",
        "",
        "2. The tree head is signed by the log's key (树头签名有效):",
        "   openssl pkeyutl -verify -pubin -inkey public-key.pem -rawin -in treehead.json \\",
        "     -sigfile treehead.sig",
        "   The key's fingerprint must be the log_id above and the one the rights holder published",
        "   (公钥指纹须与上面的 log_id 及权利人公布的一致):",
        "   openssl pkey -pubin -in public-key.pem -outform DER | tail -c 32 | sha256sum",
        "",
    ]
    if stamped:
        lines += [
            "3. A time-stamping authority vouches that this tree head existed at its time",
            "   (可信时间戳):",
            "   openssl ts -verify -in treehead.tsr -data treehead.json -CAfile TSA-ROOT.pem",
            "   TSA-ROOT.pem is the root certificate the TSA publishes (not from this bundle).",
            "   The time, and who the TSA is (时间与时间戳机构):",
            "   openssl ts -reply -in treehead.tsr -text",
            "   openssl x509 -in tsa-certs.pem -noout -subject -issuer",
            "",
        ]
    else:
        lines += ["3. This tree head has no timestamp token (本树头没有可信时间戳).", ""]
    lines += [
        "4. Each record is in the signed log, and each file is the one a record names",
        "   (每条记录都在已签名的日志中，每个文件都是记录所指的文件):",
        "   python3 verify_proof.py",
        "   A record's leaf hash by hand (手工计算某条记录的叶哈希):",
        f"   (printf '\\000'; cat {example}) | sha256sum",
        "   It must equal leaf_hash in the record's proofs/ file.",
        "",
        "What each file proves: docs/EVIDENCE.md in Yinji; each member's role: manifest.json.",
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- verify


def _safe_name(name: str) -> bool:
    if not name or "\\" in name or "\x00" in name or name.startswith("/"):
        return False
    if re.match(r"[A-Za-z]:", name):
        return False
    parts = name.split("/")
    return all(p not in ("", ".", "..") for p in parts)


def _check_manifest(manifest: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """The manifest's members (by name) and records, after checking their shapes: a
    manifest is written by whoever made the zip, so nothing in it is taken on trust."""
    if manifest.get("format") != BUNDLE_FORMAT:
        raise ValueError(f"not a {BUNDLE_FORMAT} manifest")
    members, records = manifest.get("members"), manifest.get("records")
    if not isinstance(members, list) or not isinstance(records, list):
        raise ValueError("members and records must be lists")
    listed: dict[str, Any] = {}
    for m in members:
        ok = isinstance(m, dict) and isinstance(m.get("name"), str)
        ok = ok and isinstance(m.get("sha256"), str) and isinstance(m.get("size"), int)
        proof = m.get("proof") if isinstance(m, dict) else None
        if proof is not None:
            ok = ok and isinstance(proof, dict) and isinstance(proof.get("leaf_index"), int)
            path = proof.get("path") if isinstance(proof, dict) else None
            ok = ok and isinstance(path, list) and all(isinstance(k, str) for k in path)
        if not ok or m["name"] in listed:
            raise ValueError(f"a malformed member entry {m!r}")
        listed[m["name"]] = m
    for r in records:
        ok = isinstance(r, dict) and isinstance(r.get("leaf_index"), int)
        if not ok or not isinstance(r.get("file"), str) or not isinstance(r.get("proof"), str):
            raise ValueError(f"a malformed record entry {r!r}")
    return listed, records


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


def verify_bundle(
    source: str | Path | IO[bytes],
    *,
    public_key: bytes | None = None,
    tsa_roots: Sequence[x509.Certificate] = (),
    limits: Limits = Limits(),
) -> VerifyResult:
    """Check a bundle (see the module docstring). ``public_key``: the log's key as the
    rights holder published it (PEM); without it the bundle's own key is used, which
    proves integrity but not whose log it is. ``tsa_roots``: trusted TSA roots.
    Raises ``BundleError`` for an archive that cannot or must not be read."""
    members, _label = read_bundle(source, limits)
    result = VerifyResult()
    for name, data in members.items():
        if data is None:
            result._flag(result.altered, name, f"{name}: damaged inside the zip (its CRC fails)")

    def data_of(name: str) -> bytes | None:
        return members.get(name)

    manifest_bytes = data_of(MANIFEST)
    if manifest_bytes is None:
        if MANIFEST not in members:
            result._flag(result.missing, MANIFEST, f"{MANIFEST} is missing: nothing can be checked")
        return result
    try:
        manifest = parse_json_object(manifest_bytes, MANIFEST)
        listed, record_list = _check_manifest(manifest)
    except (CanonicalError, KeyError, TypeError, ValueError) as exc:
        result._flag(result.altered, MANIFEST, f"{MANIFEST} cannot be read: {exc}")
        return result

    # 1. every member against the manifest and SHA256SUMS
    sums: dict[str, str] = {}
    sums_bytes = data_of(SUMS)
    if SUMS not in members:
        result._flag(result.missing, SUMS, f"{SUMS} is missing")
    elif sums_bytes is not None:
        for line in sums_bytes.decode("ascii", "replace").splitlines():
            m = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line)
            if m:
                sums[m.group(2)] = m.group(1)
            elif line.strip():
                result._flag(result.altered, SUMS, f"{SUMS}: unreadable line {line!r}")
    for name, entry in listed.items():
        if name not in members:
            result._flag(result.missing, name, f"{name} is listed in the manifest but missing")
            continue
        data = members[name]
        if data is None:
            continue
        digest = _sha(data)
        if digest != entry.get("sha256") or len(data) != entry.get("size"):
            result._flag(result.altered, name, f"{name}: its sha256 is not the manifest's")
        elif name in sums and sums[name] != digest:
            result._flag(result.altered, name, f"{name}: its sha256 is not the one in {SUMS}")
    for name in sums:
        if name not in members and name not in listed:
            result._flag(result.missing, name, f"{name} is listed in {SUMS} but missing")
    if manifest_bytes is not None and MANIFEST in sums and sums[MANIFEST] != _sha(manifest_bytes):
        result._flag(result.altered, MANIFEST, f"{MANIFEST}: its sha256 is not the one in {SUMS}")
    for name in members:
        if name not in listed and name not in (MANIFEST, SUMS):
            result._flag(result.unexpected, name, f"{name} is not listed in the manifest")

    # 2. the tree head, its signature and its timestamp
    head: TreeHead | None = None
    head_ok = False
    head_bytes, sig, key_pem = data_of(TREEHEAD), data_of(SIGNATURE), data_of(PUBLIC_KEY)
    for name in (TREEHEAD, SIGNATURE, PUBLIC_KEY):
        if name not in members:
            result._flag(result.missing, name, f"{name} is missing: no record can be proven")
    if head_bytes is not None and sig is not None and key_pem is not None:
        try:
            head = TreeHead.decode(head_bytes, TREEHEAD)
            key = public_key_from_pem(key_pem, PUBLIC_KEY)
            result.tree_head, result.key_id = head, key_id_of(key)
            if public_key is not None:
                trusted = public_key_from_pem(public_key, "the expected public key")
                if key_id_of(trusted) != key_id_of(key):
                    result._flag(
                        result.altered,
                        PUBLIC_KEY,
                        f"{PUBLIC_KEY} is not the expected key {key_id_of(trusted)}",
                    )
                    key = trusted
            if SignedTreeHead(head, sig).verify(key):
                head_ok = True
            else:
                result._flag(
                    result.altered,
                    TREEHEAD,
                    f"{TREEHEAD}: the signature in {SIGNATURE} does not verify with the log's key",
                )
        except (CanonicalError, EvidenceKeyError) as exc:
            result._flag(result.altered, TREEHEAD, str(exc))
    token = data_of(TOKEN)
    if token is not None and head_bytes is not None:
        try:
            result.timestamp = verify_response(token, data=head_bytes, trusted=tsa_roots)
        except TokenError as exc:
            result._flag(result.altered, TOKEN, f"{TOKEN}: {exc}")

    # 3. each record's inclusion proof
    proven: dict[int, dict[str, Any]] = {}
    proof_files: set[str] = set()
    for rec in record_list:
        try:
            index, log_name, proof_name = int(rec["leaf_index"]), rec["file"], rec["proof"]
        except (KeyError, TypeError, ValueError):
            result._flag(result.altered, MANIFEST, f"{MANIFEST}: a malformed record entry {rec!r}")
            continue
        proof_files.add(proof_name)
        data, proof_data = data_of(log_name), data_of(proof_name)
        if data is None or proof_data is None or head is None or not head_ok:
            if log_name in members and log_name not in result.altered:
                result._flag(
                    result.unproven,
                    log_name,
                    f"{log_name}: cannot be proven without a valid tree head",
                )
            continue
        try:
            proof = parse_json_object(proof_data, proof_name)
            path = [bytes.fromhex(h) for h in proof["audit_path"]]
            leaf = leaf_hash(data)
            fits = proof["leaf_index"] == index and proof["tree_size"] == head.size
            if fits and verify_inclusion(leaf, index, head.size, path, head.root_hash):
                proven[index] = parse_json_object(data, log_name)
                result.records += 1
                continue
        except (CanonicalError, KeyError, TypeError, ValueError):
            pass
        result._flag(
            result.unproven,
            log_name,
            f"{log_name}: its proof {proof_name} does not lead to the signed tree head",
        )

    # 4. each file against the record that names it; the export record's own list
    exports = [r for r in proven.values() if r.get("kind") == "export"]
    named_by_export: dict[str, str | None] = {}
    for record in exports:
        payload = record.get("payload")
        files = payload.get("files") if isinstance(payload, dict) else None
        indexes = payload.get("records") if isinstance(payload, dict) else None
        if not isinstance(files, dict) or not isinstance(indexes, list):
            result.problems.append("the export record lists no files or records")
            continue
        for name, info in files.items():
            named_by_export[name] = info.get("sha256") if isinstance(info, dict) else None
        for index in indexes:
            if not isinstance(index, int):
                result.problems.append(f"the export record names a record {index!r}")
                continue
            name = f"log/{index:08d}.json"
            if name not in members:
                result._flag(
                    result.missing, name, f"{name} is named by the export record but missing"
                )
    for name, info in named_by_export.items():
        if name not in members:
            result._flag(result.missing, name, f"{name} is named by the export record but missing")
        elif members[name] is not None and _sha(members[name] or b"") != info:
            result._flag(
                result.altered, name, f"{name}: its sha256 is not the one the export record names"
            )
    for name, data in members.items():
        if data is None or name in result.altered or name in (MANIFEST, SUMS):
            continue
        entry = listed.get(name)
        if name in SCAFFOLDING or name in proof_files:
            if entry is not None:
                result.verified.append(name)
            continue
        if name.startswith("log/"):
            if any(rec.get("file") == name for rec in record_list) and name not in result.unproven:
                result.verified.append(name)
            elif name not in result.unproven:
                result._flag(result.unproven, name, f"{name} is not a record of the manifest")
            continue
        check = entry.get("proof") if entry else None
        if not check:
            if entry is not None and name in named_by_export:
                result.verified.append(name)
            elif entry is not None:
                result._flag(result.unproven, name, f"{name}: no log record names it")
            continue
        index = check.get("leaf_index")
        named: Any = proven.get(index)
        if named is None:
            result._flag(
                result.unproven, name, f"{name}: record {index}, which names it, is not proven"
            )
            continue
        for key in check.get("path", []):
            named = named.get(key) if isinstance(named, dict) else None
        if named != _sha(data):
            result._flag(
                result.altered, name, f"{name}: its sha256 is not the one record {index} names"
            )
        else:
            result.verified.append(name)
    if not exports and head_ok:
        result.problems.append("no proven export record: the bundle's completeness is not attested")
    for bucket in (
        result.altered,
        result.missing,
        result.unproven,
        result.unexpected,
        result.verified,
    ):
        bucket.sort()
    return result
