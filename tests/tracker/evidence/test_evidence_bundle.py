"""Evidence bundles: export, verify, tampering named exactly, hostile zips refused, and the
commands VERIFY.txt (and docs/EVIDENCE.md) give, run as written."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tsa_server import TSAServer

from tracker.evidence.bundle import export_bundle
from tracker.evidence.bundle_format import BundleError, Limits
from tracker.evidence.keys import SigningKey
from tracker.evidence.log import EvidenceLog
from tracker.evidence.records import EvidenceError
from tracker.evidence.settings import EvidenceSettings
from tracker.evidence.tsa import TSAClient
from tracker.evidence.verify import verify_bundle

from .evidence_helpers import (
    PAGE,
    PNG,
    REPORTS,
    TEXT,
    edit,
    fix_sums,
    flip,
    members,
    record_case,
    record_submission,
    refresh_lists,
    rezip,
)

BODY = "capture/00000000/body.html"
SHOT = "capture/00000000/screenshot.png"
TEXT_FILE = "capture/00000000/text.txt"
CAPTURE_RECORD = "log/00000000.json"


@pytest.fixture()
def stamped_log(tmp_path: Path, tsa_server: TSAServer, no_env: None) -> Iterator[EvidenceLog]:
    tsa = TSAClient(tsa_server.url, trusted=[tsa_server.tsa.ca_cert])
    log = EvidenceLog.open(tmp_path / "data", evidence=EvidenceSettings(), tsa=tsa)
    yield log
    log.close()


@pytest.fixture()
def bundle(stamped_log: EvidenceLog) -> bytes:
    record_case(stamped_log)
    out = io.BytesIO()
    export_bundle(stamped_log, out, suspect_id="s1", mother_id="m1", reports=REPORTS)
    return out.getvalue()


def check(data: bytes, **kw: Any) -> Any:
    return verify_bundle(io.BytesIO(data), **kw)


# --- export ---------------------------------------------------------------------------
def test_the_bundle_holds_the_case_and_nothing_else(bundle: bytes) -> None:
    files = members(bundle)
    assert files[BODY] == PAGE and files[SHOT] == PNG and files[TEXT_FILE] == TEXT.encode()
    assert files["report/report.pdf"] == REPORTS["report.pdf"]
    kinds = [json.loads(files[n])["kind"] for n in sorted(files) if n.startswith("log/")]
    assert kinds == ["capture", "check", "verdict", "case_state"]  # exporting appends none
    verdicts = [json.loads(files[n]) for n in files if n.startswith("log/")]
    assert all(v["payload"].get("suspect_id") == "s1" for v in verdicts)
    assert all(v["payload"].get("mother_id") in (None, "m1") for v in verdicts)
    assert {
        "manifest.json",
        "SHA256SUMS",
        "SHA256SUMS.sig",
        "captures.warc.gz",
        "treehead.json",
        "treehead.sig",
        "treehead.tsr",
        "tsa-certs.pem",
        "public-key.pem",
        "VERIFY.txt",
        "verify_proof.py",
    } <= set(files)
    manifest = json.loads(files["manifest.json"])
    roles = {m["name"]: m["role"] for m in manifest["members"]}
    assert roles[BODY] == "capture-body" and roles["report/report.html"] == "report"
    sums = files["SHA256SUMS"].decode().splitlines()
    assert f"{hashlib.sha256(PAGE).hexdigest()}  {BODY}" in sums
    assert len(sums) == len(files) - 2  # all but SHA256SUMS and its signature


def test_an_untouched_bundle_verifies(
    bundle: bytes, tsa_server: TSAServer, stamped_log: EvidenceLog
) -> None:
    key = stamped_log.public_key_pem()
    result = check(bundle, tsa_roots=[tsa_server.tsa.ca_cert], public_key=key)
    assert result.ok, result.summary()
    assert result.records == 4 and result.failed() == []
    assert result.timestamp is not None and result.timestamp.chain_checked
    assert BODY in result.verified and "report/report.pdf" in result.verified
    assert result.summary().startswith("OK: ") and result.trusted
    # without trusted roots it still verifies, and says who was not checked
    plain = check(bundle, fingerprint=stamped_log.key_id)
    assert plain.trusted and "not checked against a trusted root" in plain.summary()
    # without a pinned key it is intact under its own key, and says it is unpinned
    unpinned = check(bundle)
    assert unpinned.ok and not unpinned.pinned and not unpinned.trusted
    assert unpinned.summary().startswith("UNPINNED: ")


@pytest.mark.parametrize(
    "name",
    [
        BODY,
        SHOT,
        TEXT_FILE,
        "report/report.pdf",
        "report/report.html",
        "VERIFY.txt",
        "verify_proof.py",
    ],
)
def test_one_flipped_byte_is_named_exactly(bundle: bytes, name: str) -> None:
    tampered = edit(bundle, lambda f: f.__setitem__(name, flip(f[name])))
    result = check(tampered)
    assert not result.ok
    assert result.altered == [name]
    assert (result.missing, result.unproven, result.unexpected) == ([], [], [])
    assert name in result.summary()


def test_a_careful_forger_who_fixes_the_lists_is_still_caught(bundle: bytes) -> None:
    def forge(files: dict[str, bytes]) -> None:
        files[BODY] = files[BODY].replace("天色已晚".encode(), "天色尚早".encode())
        refresh_lists(files)

    result = check(edit(bundle, forge))
    assert result.altered == sorted([BODY, "SHA256SUMS"])
    assert f"{BODY}: its sha256 is not the one record 0 names" in result.problems
    assert {"signature", "files"} <= set(result.failed())


def test_a_removed_member_is_missing(bundle: bytes) -> None:
    result = check(edit(bundle, lambda f: f.pop(SHOT)))
    assert result.missing == [SHOT] and result.altered == []
    forged = check(edit(bundle, lambda f: (f.pop(SHOT), refresh_lists(f))))
    assert forged.missing == [SHOT]  # the capture record still names it
    no_record = check(edit(bundle, lambda f: (f.pop("log/00000002.json"), refresh_lists(f))))
    assert "log/00000002.json" in no_record.missing


def test_an_edited_record_is_altered_and_what_it_names_unproven(bundle: bytes) -> None:
    def change(files: dict[str, bytes]) -> None:
        files[CAPTURE_RECORD] = files[CAPTURE_RECORD].replace(b"203.0.113.7", b"203.0.113.8")

    result = check(edit(bundle, change))
    assert result.altered == [CAPTURE_RECORD]
    assert result.unproven == [BODY, SHOT, TEXT_FILE]
    forged = check(edit(bundle, lambda f: (change(f), refresh_lists(f))))
    assert forged.altered == ["SHA256SUMS"]  # its signature no longer verifies
    reports = ["report/report.html", "report/report.pdf"]  # no valid signature covers them
    assert forged.unproven == sorted([BODY, CAPTURE_RECORD, SHOT, TEXT_FILE, *reports])


def test_an_added_file_is_unexpected_or_unproven(bundle: bytes) -> None:
    result = check(edit(bundle, lambda f: f.__setitem__("capture/00000000/extra.png", PNG)))
    assert result.unexpected == ["capture/00000000/extra.png"] and result.altered == []

    def add_listed(files: dict[str, bytes]) -> None:
        files["capture/00000000/extra.png"] = PNG
        manifest = json.loads(files["manifest.json"])
        manifest["members"].append(
            {
                "name": "capture/00000000/extra.png",
                "proof": None,
                "role": "capture-screenshot",
                "sha256": hashlib.sha256(PNG).hexdigest(),
                "size": len(PNG),
            }
        )
        files["manifest.json"] = json.dumps(manifest).encode()
        refresh_lists(files)

    listed = check(edit(bundle, add_listed))
    reports = ["report/report.html", "report/report.pdf"]  # no valid signature covers them
    assert listed.unproven == sorted(["capture/00000000/extra.png", *reports])
    assert listed.altered == ["SHA256SUMS"]


def test_a_forged_tree_head_or_token_is_named(bundle: bytes, tsa_server: TSAServer) -> None:
    def resize(files: dict[str, bytes]) -> None:
        size = json.loads(files["treehead.json"])["size"]
        files["treehead.json"] = files["treehead.json"].replace(
            f'"size":{size}'.encode(), f'"size":{size + 1}'.encode()
        )

    result = check(edit(bundle, lambda f: (resize(f), refresh_lists(f))))
    assert "treehead.json" in result.altered
    assert CAPTURE_RECORD in result.unproven and BODY in result.unproven

    other = TSAClient(tsa_server.url).stamp(b"another tree head")[0]
    token = check(edit(bundle, lambda f: (f.__setitem__("treehead.tsr", other), refresh_lists(f))))
    assert "treehead.tsr" in token.altered
    assert any("message imprint" in p for p in token.problems)


def test_the_expected_key_is_checked(bundle: bytes) -> None:
    stranger = SigningKey.generate().public_pem()
    result = check(bundle, public_key=stranger)
    assert "public-key.pem" in result.altered
    own = json.loads(members(bundle)["treehead.json"])["log_id"]
    assert check(bundle).key_id == own


def test_a_byte_flipped_inside_the_zip_is_named(bundle: bytes) -> None:
    # flip a byte of the compressed data itself (no re-zipping): the zip's CRC fails
    with zipfile.ZipFile(io.BytesIO(bundle)) as zf:
        info = zf.getinfo(SHOT)
    raw = bytearray(bundle)
    name_len = int.from_bytes(raw[info.header_offset + 26 : info.header_offset + 28], "little")
    extra_len = int.from_bytes(raw[info.header_offset + 28 : info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    raw[start + info.compress_size // 2] ^= 0x01
    result = check(bytes(raw))
    assert result.altered == [SHOT]


def test_same_bytes_captured_twice_are_included_once(stamped_log: EvidenceLog) -> None:
    record_case(stamped_log)
    record_case(stamped_log)  # re-crawled: the same page again
    out = io.BytesIO()
    export_bundle(stamped_log, out, suspect_id="s1", mother_id="m1")
    files = members(out.getvalue())
    assert [n for n in files if n.endswith("body.html")] == [BODY]
    assert check(out.getvalue()).ok


def test_a_submitted_text_bundle(stamped_log: EvidenceLog) -> None:
    record_submission(stamped_log)
    out = io.BytesIO()
    export_bundle(stamped_log, out, suspect_id="pasted")
    files = members(out.getvalue())
    record = json.loads(files["log/00000000.json"])
    assert record["kind"] == "submission" and "fetched_at" not in record["payload"]
    assert files["submission/00000000/text.txt"] == TEXT.encode()
    assert check(out.getvalue()).ok


def test_export_refusals(stamped_log: EvidenceLog, tmp_path: Path) -> None:
    with pytest.raises(EvidenceError, match="no record about suspect 'nobody'"):
        export_bundle(stamped_log, io.BytesIO(), suspect_id="nobody")
    record_case(stamped_log)
    with pytest.raises(EvidenceError, match=re.escape("report file name '../x.pdf'")):
        export_bundle(stamped_log, io.BytesIO(), suspect_id="s1", reports={"../x.pdf": b""})
    # a blob changed in the store is never exported as evidence
    path = stamped_log.blobs.path(hashlib.sha256(PAGE).hexdigest())  # type: ignore[attr-defined]
    path.chmod(0o644)
    path.write_bytes(PAGE.replace(b"html", b"HTML"))
    with pytest.raises(EvidenceError, match=r"body of capture record 0 .* was altered"):
        export_bundle(stamped_log, tmp_path / "x.zip", suspect_id="s1")
    assert not (tmp_path / "x.zip").exists()
    path.unlink()
    with pytest.raises(EvidenceError, match=r"body of capture record 0 .* is missing"):
        export_bundle(stamped_log, tmp_path / "x.zip", suspect_id="s1")
    assert not (tmp_path / "x.zip").exists()


def test_export_and_verify_on_each_backend(make_log: Any, tmp_path: Path) -> None:
    log = make_log()
    record_case(log)
    path = tmp_path / "case.zip"
    result = export_bundle(log, path, suspect_id="s1", mother_id="m1", reports=REPORTS)
    assert result.path == str(path) and not result.stamped
    verified = verify_bundle(path)
    assert verified.ok, verified.summary()
    assert verified.timestamp is None and "timestamp: none" in verified.summary()
    assert "treehead.tsr" not in members(path.read_bytes())


# --- hostile zips -------------------------------------------------------------------
def _zip_with(name: str, data: bytes = b"x", attr: int | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        info = zipfile.ZipInfo(name)
        if attr is not None:
            info.external_attr = attr << 16
        zf.writestr(info, data)
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "attr", "message"),
    [
        ("../evil.txt", None, "member '../evil.txt' has an unsafe name"),
        ("log/../../evil.txt", None, "unsafe name"),
        ("/etc/passwd", None, "unsafe name"),
        ("C:/windows/x", None, "unsafe name"),
        ("log\\..\\x", None, "unsafe name"),
        ("link", stat.S_IFLNK | 0o777, "member 'link' is a symbolic link"),
    ],
)
def test_hostile_names_are_refused(name: str, attr: int | None, message: str) -> None:
    with pytest.raises(BundleError, match=re.escape(message)):
        check(_zip_with(name, attr=attr))


def test_encrypted_duplicate_and_non_zip_are_refused() -> None:
    data = bytearray(_zip_with("a.txt"))
    # set the "encrypted" flag in both the local and the central header
    for sig in (b"PK\x03\x04", b"PK\x01\x02"):
        at = data.index(sig)
        flag_at = at + (6 if sig == b"PK\x03\x04" else 8)
        data[flag_at] |= 0x01
    with pytest.raises(BundleError, match=re.escape("member 'a.txt' is encrypted")):
        check(bytes(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf, pytest.warns(UserWarning):
        zf.writestr("a.txt", b"1")
        zf.writestr("a.txt", b"2")
    with pytest.raises(BundleError, match=re.escape("member 'a.txt' appears twice")):
        check(out.getvalue())
    with pytest.raises(BundleError, match="not a readable zip file"):
        check(b"%PDF-1.7 not a zip")


def test_huge_members_and_zip_bombs_are_refused() -> None:
    bomb = rezip({"bomb.bin": bytes(8 * 1024 * 1024)})  # 8 MiB of zeros in a few KiB
    with pytest.raises(BundleError, match=r"member 'bomb.bin' expands \d+ times \(a zip bomb\?\)"):
        check(bomb)
    with pytest.raises(
        BundleError, match=re.escape("member 'bomb.bin' is 8388608 bytes, more than 1000000")
    ):
        check(bomb, limits=Limits(max_member_bytes=1_000_000))
    many = rezip({f"f{i}.txt": b"x" for i in range(20)})
    with pytest.raises(BundleError, match="20 members, more than 10"):
        check(many, limits=Limits(max_members=10))
    with pytest.raises(BundleError, match="members total more than 15 bytes"):
        check(many, limits=Limits(max_total_bytes=15))


def test_a_lying_size_is_damage_not_a_crash() -> None:
    data = bytearray(rezip({"manifest.json": b"{}" * 100}, compression=zipfile.ZIP_STORED))
    at = data.index(b"PK\x01\x02")  # central directory: uncompressed size at +24
    data[at + 24 : at + 28] = (10).to_bytes(4, "little")
    result = check(bytes(data))
    assert "manifest.json" in result.altered or "manifest.json" in result.missing


# --- the commands of VERIFY.txt, run as written ------------------------------------------
def _commands(verify_txt: str) -> list[str]:
    """Command lines of VERIFY.txt (indented lines that start with a program name),
    with backslash continuations joined."""
    text = verify_txt.replace("\\\n", " ")
    starts = ("sha256sum", "openssl", "python3", "(printf")
    return [line.strip() for line in text.splitlines() if line.strip().startswith(starts)]


@pytest.mark.skipif(
    not (shutil.which("openssl") and shutil.which("sha256sum") and shutil.which("sh")),
    reason="needs openssl, sha256sum and a POSIX shell",
)
def test_the_commands_of_verify_txt_work(
    bundle: bytes, tsa_server: TSAServer, tmp_path: Path
) -> None:
    folder = tmp_path / "case"
    with zipfile.ZipFile(io.BytesIO(bundle)) as zf:
        zf.extractall(folder)  # our own bundle: safe to extract
    (folder / "TSA-ROOT.pem").write_bytes(tsa_server.tsa.ca_pem)
    commands = _commands((folder / "VERIFY.txt").read_text(encoding="utf-8"))
    assert len(commands) == 9, commands
    head = json.loads((folder / "treehead.json").read_bytes())
    python = Path(sys.executable).parent / "python3"
    outputs: dict[str, str] = {}
    for command in commands:
        if command.startswith("python3") and not python.exists():
            command = command.replace("python3", sys.executable, 1)
        run = subprocess.run(["sh", "-c", command], cwd=folder, capture_output=True, text=True)
        assert run.returncode == 0, (command, run.stdout, run.stderr)
        outputs[command] = run.stdout

    def output(prefix: str) -> str:
        [found] = [out for command, out in outputs.items() if command.startswith(prefix)]
        return found

    signed = [out for command, out in outputs.items() if command.startswith("openssl pkeyutl")]
    assert len(signed) == 2 and all("Signature Verified Successfully" in o for o in signed)
    assert output("openssl pkey -pubin").split()[0] == head["log_id"]
    assert "Verification: OK" in output("openssl ts -verify")
    assert "Status: Granted." in output("openssl ts -reply")
    assert "CN = Yinji Test TSA" in output("openssl x509")
    assert "all checks passed" in output(("python3", sys.executable)[not python.exists()])
    proof = json.loads((folder / "proofs/00000000.json").read_bytes())
    assert output("(printf").split()[0] == proof["leaf_hash"]
    assert output("sha256sum -c").count(": OK") == len(members(bundle)) - 2

    # and they fail on a tampered copy
    (folder / BODY).write_bytes(flip(PAGE))
    bad_sums = subprocess.run(
        ["sha256sum", "-c", "SHA256SUMS"], cwd=folder, capture_output=True, text=True
    )
    assert bad_sums.returncode != 0 and f"{BODY}: FAILED" in bad_sums.stdout
    bad_proof = subprocess.run(
        [sys.executable, "verify_proof.py"], cwd=folder, capture_output=True, text=True
    )
    assert bad_proof.returncode == 1 and f"FAIL  {BODY}" in bad_proof.stdout
    head_bytes = (folder / "treehead.json").read_bytes()
    (folder / "treehead.json").write_bytes(head_bytes.replace(b'"size":', b'"size":1'))
    sig = subprocess.run(
        [
            "openssl",
            "pkeyutl",
            "-verify",
            "-pubin",
            "-inkey",
            "public-key.pem",
            "-rawin",
            "-in",
            "treehead.json",
            "-sigfile",
            "treehead.sig",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert sig.returncode != 0
    ts = subprocess.run(
        [
            "openssl",
            "ts",
            "-verify",
            "-in",
            "treehead.tsr",
            "-data",
            "treehead.json",
            "-CAfile",
            "TSA-ROOT.pem",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    assert ts.returncode != 0 and "Verification: FAILED" in ts.stdout


@pytest.mark.parametrize(
    "mutate",
    [
        lambda m: m.__setitem__("members", ["capture/00000000/body.html"]),
        lambda m: m["members"][0].__setitem__("proof", "record 0"),
        lambda m: m["members"][0].__setitem__("proof", {"leaf_index": "0", "path": []}),
        lambda m: m["members"][0].__setitem__("proof", {"leaf_index": 0, "path": "payload"}),
        lambda m: m["members"][0].__setitem__("size", "12"),
        lambda m: m.__setitem__("records", [7]),
        lambda m: m["records"][0].__setitem__("proof", ["proofs/00000000.json"]),
        lambda m: m.__setitem__("members", [*m["members"], m["members"][0]]),
        lambda m: m.__setitem__("format", "something else"),
    ],
)
def test_a_hostile_manifest_is_reported_not_a_crash(bundle: bytes, mutate: Any) -> None:
    def change(files: dict[str, bytes]) -> None:
        manifest = json.loads(files["manifest.json"])
        mutate(manifest)
        files["manifest.json"] = json.dumps(manifest).encode()
        fix_sums(files)

    result = check(edit(bundle, change))
    assert not result.ok
    assert "manifest.json" in result.altered
    assert any(p.startswith("manifest.json cannot be read") for p in result.problems)
