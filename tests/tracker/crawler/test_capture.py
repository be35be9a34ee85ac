"""Evidence captured at crawl time (``Page`` -> ``tracker.evidence.Capture``): the URL
asked, every redirect hop, the final URL, the address connected to, status and headers
as received, the body, the time, the TLS certificate actually presented.

No network: see conftest.py.
"""

from __future__ import annotations

import gzip
import hashlib
import ssl
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tracker.crawler import Crawler, Page, Redirect
from tracker.evidence import Capture, EvidenceLog, FileBlobStore

from .helpers import SIMPLIFIED, Site, article, fake_dns

pytestmark = pytest.mark.timeout(60)


def _redirect_chain(site: Site) -> bytes:
    site.route("/c/1")(lambda h: h.reply(302, b"", headers={"Location": "/c/2"}))
    site.route("/c/2")(lambda h: h.reply(301, b"", headers={"Location": site.url("/c/3")}))
    body = article("证据页", SIMPLIFIED).encode("gbk")
    compressed = gzip.compress(body)
    site.route("/c/3")(
        lambda h: h.reply(
            200,
            compressed,
            "text/html; charset=gbk",
            headers={"Content-Encoding": "gzip"},
            raw_headers=[b"Set-Cookie: a=1", b"Set-Cookie: b=2", b"X-Served-By: pirate"],
        )
    )
    return body


def test_crawl_keeps_redirects_address_headers_and_time(
    site: Site, make_crawler: Callable[..., Crawler], tmp_path: Path
) -> None:
    body = _redirect_chain(site)
    before = datetime.now(UTC)
    page = make_crawler(respect_robots=False).crawl_page(site.url("/c/1"))
    after = datetime.now(UTC)

    assert page.url == site.url("/c/1") and page.final_url == site.url("/c/3")
    assert page.redirects == [
        Redirect(site.url("/c/1"), 302, "/c/2"),
        Redirect(site.url("/c/2"), 301, site.url("/c/3")),
    ]
    assert page.resolved_ip == "127.0.0.1"
    assert page.peer_cert is None and page.tls_info() is None
    names = [name.lower() for name, _ in page.header_pairs]
    assert names.count("set-cookie") == 2  # repeated headers kept one by one, in order
    assert ("X-Served-By", "pirate") in page.header_pairs
    assert page.raw == body and page.content_decoded  # gunzipped: what a browser renders
    assert before - timedelta(seconds=1) <= page.fetched_at <= after
    assert page.fetched_at.tzinfo is not None

    blobs = FileBlobStore(tmp_path / "blobs")
    capture = page.to_capture(blobs)
    assert isinstance(capture, Capture)
    assert capture.suspect_id == page.to_suspect().id
    assert capture.requested_url == site.url("/c/1")
    assert capture.final_url == site.url("/c/3")
    assert [(h.url, h.status, h.location) for h in capture.redirects] == [
        (site.url("/c/1"), 302, "/c/2"),
        (site.url("/c/2"), 301, site.url("/c/3")),
    ]
    assert capture.resolved_ip == "127.0.0.1"
    assert capture.http_status == 200
    assert capture.body.sha256 == hashlib.sha256(body).hexdigest()
    assert capture.body.media_type == "text/html"
    assert capture.body_content_decoded is True
    assert blobs.get(capture.body.sha256) == body
    assert capture.text is not None
    assert blobs.get(capture.text.sha256) == page.text.encode("utf-8")
    assert SIMPLIFIED[:20] in page.text
    assert capture.tls is None
    assert capture.screenshot is None and capture.screenshot_none_reason
    assert ("set-cookie", "b=2") in capture.headers
    assert abs(capture.fetched_at - page.fetched_at) < timedelta(milliseconds=1)

    # The record goes into the evidence log as it is.
    with EvidenceLog.open(tmp_path / "data") as log:
        entry = log.record_capture(page.to_capture(log.blobs, "suspect-1"))
        stored = log.entries(suspect_id="suspect-1")
        assert [e.index for e in stored] == [entry.index]
        assert stored[0].kind == "capture"
        recorded = Capture.from_json(stored[0].payload)
        assert recorded.body == capture.body and recorded.redirects == capture.redirects
        assert recorded.resolved_ip == "127.0.0.1"


def test_https_capture_has_the_certificate_presented(
    tls_site: tuple[Site, str, list[str]],
    make_crawler: Callable[..., Crawler],
    tmp_path: Path,
) -> None:
    tls, cert_file, _ = tls_site
    tls.route("/start")(lambda h: h.reply(301, b"", headers={"Location": "/secure"}))
    tls.page("/secure", article("加密", SIMPLIFIED))
    crawler = make_crawler(
        ca_certs=cert_file,  # the test trusts its own certificate; nothing is unverified
        respect_robots=False,
        resolver=fake_dns({"yinji.test": ["127.0.0.1"]}),
    )
    page = crawler.crawl_page(f"https://yinji.test:{tls.port}/start")
    der = ssl.PEM_cert_to_DER_cert(Path(cert_file).read_text())
    assert page.peer_cert == der
    info = page.tls_info()
    assert info is not None
    assert info.subject == "CN=yinji.test" and info.issuer == "CN=yinji.test"
    assert info.fingerprint_sha256 == hashlib.sha256(der).hexdigest()

    capture = page.to_capture(FileBlobStore(tmp_path), "s-https")
    assert capture.tls == info
    assert capture.resolved_ip == "127.0.0.1"
    assert capture.final_url == f"https://yinji.test:{tls.port}/secure"
    assert [(h.status, h.location) for h in capture.redirects] == [(301, "/secure")]
    assert capture.to_json()["tls"]["fingerprint_sha256"] == hashlib.sha256(der).hexdigest()


def test_page_without_evidence_fields_still_builds_a_capture(tmp_path: Path) -> None:
    # A Page made by hand (older callers, tests) has no hops or header pairs.
    page = Page(
        url="http://pirate.example/1",
        final_url="http://pirate.example/1",
        status=200,
        headers={"content-type": "text/plain; charset=utf-8"},
        encoding="utf-8",
        raw=b"hello",
        html="hello",
        title="",
        text="hello",
        fetched_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        screenshot_none_reason="no screenshot: no browser on this worker",
    )
    capture = page.to_capture(FileBlobStore(tmp_path))
    assert capture.headers == (("content-type", "text/plain; charset=utf-8"),)
    assert capture.redirects == () and capture.resolved_ip is None
    assert capture.body_content_decoded is False
    assert capture.screenshot_none_reason == "no screenshot: no browser on this worker"
