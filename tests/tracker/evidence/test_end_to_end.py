"""Issue #15's "Done when", through the real command line: a page served by a local
server is crawled and checked (`yinji check URL --json`), the match confirmed, the
bundle exported (`yinji evidence export`), one byte of one member flipped and
`yinji evidence verify` names that member; the untouched bundle verifies, its
timestamp token against the test TSA; the report PDF's fonts are embedded."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from textgen import work
from tsa_server import TSAServer


@contextmanager
def serve_pirate_site() -> Iterator[tuple[str, str]]:
    """A local site copying 1,200 characters of a work: (the page's URL, the work)."""
    original = work(31, 60)
    copied = original[200:1400]
    page = (
        "<html><head><meta charset='utf-8'><title>第一章 盗版</title></head><body>"
        f"<article><h1>第一章</h1><p>{copied}</p></article></body></html>"
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/robots.txt":
                body, kind = b"User-agent: *\nAllow: /\n", "text/plain"
            else:
                body, kind = page, "text/html; charset=utf-8"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/book/1/chapter-1.html", original
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def pirate_site() -> Iterator[tuple[str, str]]:
    with serve_pirate_site() as site:
        yield site


def _yinji(env: dict[str, str], data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )


def test_crawl_confirm_export_tamper_verify(
    tmp_path: Path, pirate_site: tuple[str, str], tsa_server: TSAServer
) -> None:
    url, original = pirate_site
    ca = tmp_path / "tsa-root.pem"
    ca.write_bytes(tsa_server.tsa.ca_pem)
    env = {
        **os.environ,
        "YINJI_ALLOW_PRIVATE_URLS": "1",
        "YINJI_SCREENSHOTS": "off",
        "YINJI_TSA_URL": tsa_server.url,
        "YINJI_TSA_CA": str(ca),
    }
    env.pop("YINJI_EVIDENCE_KEY", None)
    data = tmp_path / "data"
    lib = tmp_path / "works.jsonl"
    works = [{"id": "novel-1", "title": "原创小说", "text": original}]
    works.append({"id": "novel-2", "title": "另一部", "text": work(32, 60)})
    lib.write_text("\n".join(json.dumps(w, ensure_ascii=False) for w in works), "utf-8")
    assert _yinji(env, data, "ingest", str(lib)).returncode == 0

    r = _yinji(env, data, "check", "--json", url)
    assert r.returncode == 0, r.stderr
    (line,) = [json.loads(x) for x in r.stdout.splitlines()]
    suspect_id = line["suspect_id"]
    assert [m["mother_id"] for m in line["matches"]] == ["novel-1"]

    r = _yinji(env, data, "verdict", suspect_id, "novel-1", "confirmed", "--note", "整章复制")
    assert r.returncode == 0, r.stderr

    bundle = tmp_path / "case.zip"
    r = _yinji(env, data, "evidence", "export", suspect_id, "-o", str(bundle))
    assert r.returncode == 0, r.stderr
    assert "timestamped" in r.stderr and "not timestamped" not in r.stderr

    r = _yinji(env, data, "evidence", "verify", str(bundle))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("OK:") and "timestamp:" in r.stdout
    assert "not checked against a trusted root" not in r.stdout  # chained to the test TSA

    with zipfile.ZipFile(bundle) as zf:
        members = {info.filename: zf.read(info) for info in zf.infolist()}
    manifest = json.loads(members["manifest.json"])
    assert manifest  # the bundle describes itself
    pdf_name = next(n for n in members if n.endswith(".pdf") and "report" in n)
    _assert_fonts_embedded(members[pdf_name])
    # The raw page as served is in the bundle, byte for byte.
    body_name = next(n for n, b in members.items() if b.startswith(b"<html>"))

    tampered = tmp_path / "tampered.zip"
    flipped = bytearray(members[body_name])
    flipped[len(flipped) // 2] ^= 0x01
    with zipfile.ZipFile(tampered, "w") as zf:
        for name, blob in members.items():
            zf.writestr(name, bytes(flipped) if name == body_name else blob)
    r = _yinji(env, data, "evidence", "verify", str(tampered))
    assert r.returncode == 1
    altered = [x.split("altered: ", 1)[1] for x in r.stdout.splitlines() if "altered: " in x]
    assert r.stdout.startswith("FAILED") and altered == [body_name], r.stdout


def _assert_fonts_embedded(pdf: bytes) -> None:
    from pypdf import PdfReader

    fonts = []
    for page in PdfReader(io.BytesIO(pdf)).pages:
        resources = page.get("/Resources") or {}
        for font in (resources.get("/Font") or {}).values():
            font = font.get_object()
            fonts.append(font)
            fonts.extend(child.get_object() for child in font.get("/DescendantFonts") or [])
    assert fonts
    for font in fonts:
        if font["/Subtype"] == "/Type0":
            continue
        descriptor = font["/FontDescriptor"].get_object()
        assert "/FontFile2" in descriptor or "/FontFile3" in descriptor, font["/BaseFont"]


def test_a_checked_file_is_a_submission_and_no_save_records_nothing(tmp_path: Path) -> None:
    """`yinji check FILE` keeps the file's text as handed in (a submission, then the
    check naming no capture); `--no-save` writes nothing to the log."""
    from click.testing import CliRunner

    from tracker.cli import main
    from tracker.evidence import EvidenceLog
    from tracker.plumbing.config import Settings

    original = work(33, 40)
    data = tmp_path / "data"
    (tmp_path / "works.jsonl").write_text(
        json.dumps({"id": "w", "title": "原创", "text": original}, ensure_ascii=False), "utf-8"
    )
    (tmp_path / "copy.txt").write_text(original[100:900], "utf-8")
    (tmp_path / "other.txt").write_text(original[900:1700], "utf-8")
    run = CliRunner().invoke
    base = ["--data-dir", str(data)]
    assert run(main, [*base, "ingest", str(tmp_path / "works.jsonl")]).exit_code == 0
    saved = run(main, [*base, "check", "--json", str(tmp_path / "copy.txt")])
    unsaved = run(main, [*base, "check", "--json", "--no-save", str(tmp_path / "other.txt")])
    assert saved.exit_code == 0 and unsaved.exit_code == 0, saved.output + unsaved.output
    sid = json.loads(saved.stdout.splitlines()[0])["suspect_id"]
    other = json.loads(unsaved.stdout.splitlines()[0])["suspect_id"]
    with EvidenceLog.from_settings(Settings(data_dir=data)) as log:
        kinds = [e.kind for e in log.entries(suspect_id=sid)]
        assert kinds == ["submission", "check"]
        assert log.entries(suspect_id=other) == []
