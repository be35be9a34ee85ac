"""Issue #24's "Done when", through the real command line on a page crawled from a local
server: a re-signed forgery, a bundle from another library, a replaced verifier and a
rewritten VERIFY.txt are each refused by `yinji evidence verify` with the key pinned,
naming what failed; without a library and without a pinned key it does not say OK; a
truncated log is refused by `head`, `stamp` and `export`; the WARC member replays the
captured bytes (read back with warcio)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracker.evidence.keys import SigningKey, format_fingerprint

from .evidence_helpers import edit, members, refresh_lists, resign
from .test_end_to_end import _yinji, serve_pirate_site

pytestmark = pytest.mark.slow


class Case:
    def __init__(self, env: dict[str, str], data: Path, bundle: Path, suspect_id: str) -> None:
        self.env, self.data, self.bundle, self.suspect_id = env, data, bundle, suspect_id

    def yinji(self, *args: str, data: Path | None = None) -> tuple[int, str]:
        r = _yinji(self.env, data or self.data, *args)
        return r.returncode, r.stdout + r.stderr


def _library(env: dict[str, str], data: Path, tmp: Path, url: str, original: str) -> str:
    works = tmp / f"works-{data.name}.jsonl"
    rows = [{"id": "novel-1", "title": "原创小说", "text": original}]
    works.write_text("\n".join(json.dumps(w, ensure_ascii=False) for w in rows), "utf-8")
    assert _yinji(env, data, "ingest", str(works)).returncode == 0
    r = _yinji(env, data, "check", "--json", url)
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stdout.splitlines()[0])["suspect_id"])


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[str, str]]:
    with serve_pirate_site() as served:
        yield served


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, site: tuple[str, str]) -> Case:
    """Library A with the page checked and its bundle exported, made once for the module
    (three CLI runs); each test gets its own copy (``case``)."""
    url, original = site
    env = {**os.environ, "YINJI_ALLOW_PRIVATE_URLS": "1", "YINJI_SCREENSHOTS": "off"}
    for name in ("YINJI_EVIDENCE_KEY", "YINJI_TSA_URL", "YINJI_TSA_CA"):
        env.pop(name, None)
    tmp = tmp_path_factory.mktemp("adversary")
    data = tmp / "library-a"
    suspect_id = _library(env, data, tmp, url, original)
    bundle = tmp / "case.zip"
    r = _yinji(env, data, "evidence", "export", suspect_id, "-o", str(bundle))
    assert r.returncode == 0, r.stderr
    return Case(env, data, bundle, suspect_id)


@pytest.fixture()
def case(built: Case, tmp_path: Path) -> Case:
    """A copy of library A and its bundle: a test may sign, truncate or rewrite them."""
    data = tmp_path / "library-a"
    shutil.copytree(built.data, data, symlinks=True)
    bundle = tmp_path / "case.zip"
    shutil.copyfile(built.bundle, bundle)
    return Case(built.env, data, bundle, built.suspect_id)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_the_honest_bundle_verifies_only_pinned(case: Case, tmp_path: Path) -> None:
    code, out = case.yinji("evidence", "verify", str(case.bundle))  # inside library A
    assert code == 0 and out.startswith("OK:"), out
    code, head = case.yinji("evidence", "head", "--json")
    assert code == 0, head
    fingerprint = json.loads(head)["fingerprint"]
    assert format_fingerprint(fingerprint) in out
    # outside any library, no key pinned: not OK, and says so plainly
    nowhere = tmp_path / "no-library"
    code, out = case.yinji("evidence", "verify", str(case.bundle), data=nowhere)
    assert code == 1 and "NOT OK: no key is pinned" in out and "\nOK" not in out
    assert not nowhere.exists()  # verifying made no library and no key
    code, out = case.yinji(
        "evidence", "verify", str(case.bundle), "--trust-bundled-key", data=nowhere
    )
    assert code == 2 and out.startswith("UNPINNED:"), out
    # pinned by fingerprint or by key file, outside the library
    code, out = case.yinji(
        "evidence", "verify", str(case.bundle), "--fingerprint", fingerprint, data=nowhere
    )
    assert code == 0 and out.startswith("OK:"), out
    published = tmp_path / "site"
    assert case.yinji("evidence", "head", "--publish", str(published))[0] == 0
    key = published / "yinji-evidence-key.pem"
    code, out = case.yinji("evidence", "verify", str(case.bundle), "--key", str(key), data=nowhere)
    assert code == 0 and out.startswith("OK:"), out
    assert json.loads((published / "yinji-evidence-head.json").read_text())["fingerprint"] == (
        fingerprint
    )


def test_a_re_signed_forgery_is_refused(case: Case, tmp_path: Path) -> None:
    """The red team's forgery: another URL and a 2020 fetch date, the tree rebuilt, a head
    signed with a fresh key, manifest and sums recomputed. Modelled as what it amounts
    to: a forger's own log records the altered capture and exports a bundle; and the
    real bundle re-signed, record for record, with a fresh key."""
    from datetime import UTC, datetime

    from tracker.evidence import Capture, EvidenceLog, EvidenceSettings, export_bundle

    real = members(case.bundle.read_bytes())
    [capture_name] = [n for n in real if n.startswith("log/") and b'"capture"' in real[n]]
    payload = json.loads(real[capture_name])["payload"]
    forger_key = SigningKey.generate()
    with EvidenceLog.open(
        tmp_path / "forger", key=forger_key, evidence=EvidenceSettings()
    ) as forger:
        body = real[next(n for n in real if n.endswith("/body.html"))]
        forged = Capture.build(
            forger.blobs,
            suspect_id=case.suspect_id,
            requested_url="https://other-platform.example/book/1",
            final_url="https://other-platform.example/book/1",
            http_status=200,
            headers=[tuple(h) for h in payload["headers"]],
            body=body,
            fetched_at=datetime(2020, 1, 1, tzinfo=UTC),
            crawler_version=payload["crawler_version"],
        )
        forger.record_capture(forged)
        sink = io.BytesIO()
        export_bundle(forger, sink, suspect_id=case.suspect_id)
    forgery = _write(tmp_path / "forged.zip", sink.getvalue())
    resigned = _write(
        tmp_path / "resigned.zip",
        edit(case.bundle.read_bytes(), lambda f: resign(f, SigningKey.generate())),
    )
    for bundle in (forgery, resigned):
        code, out = case.yinji("evidence", "verify", str(bundle))
        assert code == 1, out
        assert out.startswith("FAILED (") and "key" in out.splitlines()[0]
        assert "public-key.pem: the bundle is signed by the key with fingerprint" in out
        assert "not by the pinned key" in out
        # unpinned and outside a library it is intact under its own key: never "OK"
        code, out = case.yinji("evidence", "verify", str(bundle), data=tmp_path / "nowhere")
        assert code == 1 and "NOT OK" in out


def test_a_bundle_from_another_library_is_refused(
    case: Case, tmp_path: Path, site: tuple[str, str]
) -> None:
    url, original = site
    other = tmp_path / "library-b"
    _library(case.env, other, tmp_path, url, original)
    code, out = case.yinji("evidence", "verify", str(case.bundle), data=other)
    assert code == 1, out
    assert "not by the pinned key" in out and "this library's key" in out


def test_a_replaced_verifier_or_rewritten_instructions_are_refused(
    case: Case, tmp_path: Path
) -> None:
    def replace_verifier(files: dict[str, bytes]) -> None:
        files["verify_proof.py"] = b'print("all checks passed")\n'
        refresh_lists(files)

    def rewrite_instructions(files: dict[str, bytes]) -> None:
        files["VERIFY.txt"] = b"All good. Run: python3 verify_proof.py\n"
        refresh_lists(files)

    for name, change in (
        ("verify_proof.py", replace_verifier),
        ("VERIFY.txt", rewrite_instructions),
    ):
        bad = _write(tmp_path / f"bad-{name}.zip", edit(case.bundle.read_bytes(), change))
        code, out = case.yinji("evidence", "verify", str(bad))
        assert code == 1, out
        assert f"altered: {name}" in out and "altered: SHA256SUMS" in out
        assert "SHA256SUMS: its signature SHA256SUMS.sig does not verify" in out
        # only the lists recomputed, not re-signed: with the sums left alone, named too
        lazy = _write(
            tmp_path / f"lazy-{name}.zip",
            edit(case.bundle.read_bytes(), lambda f, n=name: f.__setitem__(n, b"x\n")),
        )
        code, out = case.yinji("evidence", "verify", str(lazy))
        assert code == 1 and f"altered: {name}" in out, out


def test_a_truncated_log_is_refused_by_head_stamp_and_export(case: Case) -> None:
    db = sqlite3.connect(case.data / "evidence.sqlite3", isolation_level=None)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
        db.execute(f"DROP TRIGGER {name}")
    (size,) = db.execute("SELECT COUNT(*) FROM leaves").fetchone()
    (signed,) = db.execute("SELECT MAX(size) FROM heads").fetchone()
    assert signed == size
    db.execute("DELETE FROM leaves WHERE idx >= ?", (size - 1,))
    (heads_before,) = db.execute("SELECT COUNT(*) FROM heads").fetchone()
    db.close()
    out_zip = case.data.parent / "after.zip"
    for args in (
        ("evidence", "head"),
        ("evidence", "stamp"),
        ("evidence", "export", case.suspect_id, "-o", str(out_zip)),
    ):
        code, out = case.yinji(*args)
        assert code == 1, (args, out)
        assert "not consistent with the tree heads it signed" in out, out
        assert f"covers {signed} records but the log now holds {size - 1}" in out
        assert "truncated" in out and "Traceback" not in out
    assert not out_zip.exists()
    db = sqlite3.connect(case.data / "evidence.sqlite3")
    assert db.execute("SELECT COUNT(*) FROM heads").fetchone()[0] == heads_before
    db.close()
    code, out = case.yinji("evidence", "audit")
    assert code == 1 and "FAILED" in out


def test_the_warc_member_replays_the_captured_bytes(case: Case) -> None:
    from warcio.archiveiterator import ArchiveIterator

    files = members(case.bundle.read_bytes())
    manifest = json.loads(files["manifest.json"])
    assert {m["name"]: m["role"] for m in manifest["members"]}["captures.warc.gz"] == "warc"
    sums = files["SHA256SUMS"].decode()
    assert f"{hashlib.sha256(files['captures.warc.gz']).hexdigest()}  captures.warc.gz" in sums
    [capture_name] = [n for n in files if n.startswith("log/") and b'"capture"' in files[n]]
    capture = json.loads(files[capture_name])["payload"]
    served = files[next(n for n in files if n.endswith("/body.html"))]
    records = list(ArchiveIterator(io.BytesIO(files["captures.warc.gz"])))
    kinds = [r.rec_type for r in records]
    assert kinds == ["warcinfo", "response", "request"]
    response, request = records[1], records[2]
    assert response.rec_headers.get_header("WARC-Target-URI") == capture["final_url"]
    assert response.http_headers.get_statuscode() == "200"
    assert response.http_headers.get_header("Content-Type") == "text/html; charset=utf-8"
    assert response.rec_headers.get_header("WARC-IP-Address") == "127.0.0.1"
    # the request as the crawler sent it (its User-Agent, Accept-Encoding, Host)
    sent = dict(request.http_headers.headers)
    assert sent["User-Agent"].startswith("Yinji") or "yinji" in sent["User-Agent"].lower()
    assert sent["Host"].startswith("127.0.0.1:")
    assert request.http_headers.protocol == "GET"
    assert request.rec_headers.get_header("WARC-Concurrent-To") == response.rec_headers.get_header(
        "WARC-Record-ID"
    )
    for record in ArchiveIterator(io.BytesIO(files["captures.warc.gz"])):
        if record.rec_type == "response":
            assert record.content_stream().read() == served
    assert hashlib.sha256(served).hexdigest() == capture["body"]["sha256"]
