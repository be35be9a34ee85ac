"""The evidence bundle's format, shared by the writer (``tracker.evidence.bundle``) and
the verifier (``tracker.evidence.verify``): the members' names, ``VERIFY.txt``
(``instructions``), and ``read_bundle``, which refuses hostile archives before
anything reads them."""

from __future__ import annotations

import hashlib
import re
import stat
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .canonical import format_time, time_from_ms
from .keys import TreeHead, format_fingerprint

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


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _ext(media_type: str) -> str:
    return _EXTENSIONS.get(media_type.split(";")[0].strip().lower(), ".bin")


def verifier_sha256() -> str:
    """SHA-256 of the ``verify_proof.py`` this version of Yinji puts in bundles (the
    hash ``yinji evidence head`` publishes)."""
    return _sha(VERIFIER.read_bytes())


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
