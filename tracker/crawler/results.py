"""What the crawler returns: ``FetchResult`` (bytes of one resource) and ``Page`` (a
decoded, extracted page that becomes a ``Suspect``, and a ``tracker.evidence.Capture``).

Both keep what a court needs about the fetch, as it happened: the URL asked, every
redirect hop (URL, status, ``Location``), the final URL, the address the connection
actually went to, the status and headers as received (order and repeats kept), the body,
the time the response arrived (UTC) and, for https, the certificate the server
presented (DER; ``Page.tls_info()`` gives its subject and SHA-256 fingerprint).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tracker import __version__
from tracker.common.records import Suspect

if TYPE_CHECKING:
    from tracker.crawler.links import Link
    from tracker.evidence import BlobStore, Capture, TLSInfo

CRAWLER_VERSION = f"yinji {__version__} crawler"


@dataclass(frozen=True)
class Redirect:
    """One hop that answered with a redirect: the URL asked, its status, the Location sent."""

    url: str
    status: int
    location: str


@dataclass
class FetchResult:
    """One fetched resource: the body is the content-decoded (gunzipped) bytes."""

    url: str  # as requested
    final_url: str  # after redirects
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes
    content_type: str  # mime type, lower case, "" if absent
    redirects: list[str] = field(default_factory=list)  # URLs that answered with a redirect
    fetched_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    elapsed: float = 0.0
    hops: list[Redirect] = field(default_factory=list)  # each redirect: url, status, location
    header_pairs: tuple[tuple[str, str], ...] = ()  # as received: order, repeats, name case
    resolved_ip: str | None = None  # the address the final response came from
    peer_cert: bytes | None = None  # https: the certificate the server presented, DER
    request_headers: tuple[tuple[str, str], ...] = ()  # sent for final_url (evidence, WARC)


@dataclass
class Page:
    """A crawled page: evidence (raw bytes) plus decoded HTML and extracted text."""

    url: str
    final_url: str
    status: int
    headers: dict[str, str]
    encoding: str
    raw: bytes
    html: str
    title: str
    text: str
    fetched_at: datetime  # when the final response arrived, UTC
    redirects: list[Redirect] = field(default_factory=list)
    header_pairs: tuple[tuple[str, str], ...] = ()
    resolved_ip: str | None = None
    peer_cert: bytes | None = None  # DER, https only
    screenshot: bytes | None = None  # full-page PNG of the rendered page, when taken
    screenshot_none_reason: str | None = None  # why there is none ("no screenshot: ...")
    request_headers: tuple[tuple[str, str], ...] = ()  # sent for final_url (evidence, WARC)
    links: list[Link] | None = None  # its links, when the reader took them (not evidence)

    @property
    def content_decoded(self) -> bool:
        """True when the server sent the body compressed: ``raw`` is the decompressed
        bytes (what a browser renders), not the bytes on the wire."""
        encoding = self.headers.get("content-encoding", "").strip().lower()
        return encoding not in ("", "identity", "none")

    def tls_info(self) -> TLSInfo | None:
        """Subject, issuer, validity and SHA-256 fingerprint of the certificate the
        server presented (None for http)."""
        if not self.peer_cert:
            return None
        from tracker.evidence import TLSInfo

        return TLSInfo.from_der(self.peer_cert)

    def suspect_id(self) -> str:
        """The id ``to_suspect`` gives by default: sha1 of the final URL."""
        final = self.final_url or self.url
        return hashlib.sha1(final.encode("utf-8"), usedforsecurity=False).hexdigest()

    def to_capture(
        self,
        blobs: BlobStore,
        suspect_id: str | None = None,
        *,
        crawler_version: str = CRAWLER_VERSION,
    ) -> Capture:
        """The evidence record of this fetch (``tracker.evidence.Capture``): stores the
        body, the extracted text and the screenshot in ``blobs`` and returns the record,
        ready for ``EvidenceLog.record_capture``. ``suspect_id`` defaults to the id
        ``to_suspect`` gives."""
        from tracker.evidence import Capture, RedirectHop

        reason = self.screenshot_none_reason
        if self.screenshot is None and reason is None:
            reason = "no screenshot: screenshots are off"
        return Capture.build(
            blobs,
            suspect_id=suspect_id or self.suspect_id(),
            requested_url=self.url,
            redirects=[RedirectHop(h.url, h.status, h.location) for h in self.redirects],
            final_url=self.final_url or self.url,
            resolved_ip=self.resolved_ip,
            http_status=self.status,
            headers=self.header_pairs or tuple(self.headers.items()),
            body=self.raw,
            body_content_decoded=self.content_decoded,
            fetched_at=self.fetched_at,
            tls=self.tls_info(),
            text=self.text,
            screenshot=self.screenshot,
            screenshot_none_reason=None if self.screenshot else reason,
            crawler_version=crawler_version,
            request_headers=self.request_headers,
        )

    def to_record(self) -> str:
        """This page as one JSON string (bytes in base64): what discovery keeps in Redis
        the moment a body arrives, so a crawl killed before the check checks the stored
        page instead of fetching it again (``from_record``)."""
        data = {
            "url": self.url,
            "final_url": self.final_url,
            "status": self.status,
            "headers": self.headers,
            "encoding": self.encoding,
            "raw": base64.b64encode(self.raw).decode("ascii"),
            "title": self.title,
            "text": self.text,
            "fetched_at": self.fetched_at.isoformat(),
            "redirects": [[r.url, r.status, r.location] for r in self.redirects],
            "header_pairs": [list(p) for p in self.header_pairs],
            "resolved_ip": self.resolved_ip,
            "peer_cert": base64.b64encode(self.peer_cert).decode("ascii")
            if self.peer_cert
            else None,
            "screenshot_none_reason": self.screenshot_none_reason,
            "request_headers": [list(p) for p in self.request_headers],
        }
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_record(cls, record: str | bytes) -> Page:
        """The page ``to_record`` kept (its HTML decoded again from the raw bytes, as
        the crawler decoded it)."""
        from tracker.crawler.decoding import decode_html

        d = json.loads(record)
        raw = base64.b64decode(d["raw"])
        return cls(
            url=d["url"],
            final_url=d["final_url"],
            status=int(d["status"]),
            headers=dict(d["headers"]),
            encoding=d["encoding"],
            raw=raw,
            html=decode_html(raw, d["headers"].get("content-type"))[0],
            title=d["title"],
            text=d["text"],
            fetched_at=datetime.fromisoformat(d["fetched_at"]),
            redirects=[Redirect(u, int(st), loc) for u, st, loc in d["redirects"]],
            header_pairs=tuple((k, v) for k, v in d["header_pairs"]),
            resolved_ip=d["resolved_ip"],
            peer_cert=base64.b64decode(d["peer_cert"]) if d["peer_cert"] else None,
            screenshot_none_reason=d["screenshot_none_reason"],
            request_headers=tuple((k, v) for k, v in d["request_headers"]),
        )

    def to_suspect(self, id: str | None = None) -> Suspect:
        """The store record; the id defaults to sha1(final_url) so a re-crawl replaces it."""
        final = self.final_url or self.url
        suspect_id = id or self.suspect_id()
        return Suspect(
            id=suspect_id,
            text=self.text,
            title=self.title,
            url=final,
            domain=(urlsplit(final).hostname or "").lower(),
            fetched_at=self.fetched_at,
            source="crawl",
            metadata={
                "encoding": self.encoding,
                "final_url": final,
                "requested_url": self.url,
                "status": self.status,
                "content_type": self.headers.get("content-type", ""),
            },
            raw=self.raw,
        )
