"""What Yinji saw when it fetched a page (``Capture``) or was handed a text
(``Submission``), as log records.

A capture names every byte it refers to by SHA-256; the bytes themselves go to the blob
store (``tracker.evidence.blobs``) and into exported bundles. Fill one with
``Capture.build``, which stores the blobs and computes the hashes::

    capture = Capture.build(
        blobs,
        suspect_id=suspect.id,
        requested_url="http://pirate.example/b/1",
        redirects=[RedirectHop("http://pirate.example/b/1", 301, "https://pirate.example/b/1")],
        final_url="https://pirate.example/b/1",
        resolved_ip="203.0.113.7",
        http_status=200,
        headers={"content-type": "text/html; charset=gbk"},
        body=raw_bytes,
        fetched_at=fetched_at,               # aware UTC datetime
        tls=TLSInfo.from_der(peer_cert_der), # None for http://
        text=extracted_text,
        screenshot=None, screenshot_none_reason="no browser on this worker",
        crawler_version="yinji-crawler/0.1.0",
    )
    evidence_log.record_capture(capture)

Field by field (the JSON names):

- ``requested_url``: the URL Yinji was asked to fetch;
- ``redirects``: every hop that answered with a redirect: its ``url``, HTTP ``status`` and
  the ``location`` it sent, in order;
- ``final_url``: the URL whose response is the body; ``resolved_ip``: the address the
  connection for it went to (after DNS), or null when not known;
- ``http_status`` and ``headers`` (name/value pairs as received, names lower case);
- ``body``: sha256, size and media type of the response body as served. When the server
  sent it compressed (``Content-Encoding: gzip``…), ``body_content_decoded`` is true and
  the bytes kept are the decompressed ones, exactly what any browser would render;
- ``fetched_at``: when the response arrived, UTC;
- ``tls``: for https, the server certificate's subject, issuer, validity and SHA-256
  fingerprint (of its DER encoding, as browsers show it); null for http;
- ``text``: sha256/size of the text Yinji extracted (UTF-8), which the match offsets refer to;
- ``screenshot``: sha256/size of a full-page PNG, or null with ``screenshot_none_reason``;
- ``crawler_version``: the software that fetched it;
- ``request_headers`` (captures since #24): the request headers sent for ``final_url``,
  as name/value pairs, for the WARC request record of a bundle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tracker.common.records import JSONObject

from .blobs import BlobStore, blob_ref, check_digest
from .canonical import CanonicalError, format_time, parse_time

CAPTURE_VERSION = "yinji-capture/1"
SUBMISSION_VERSION = "yinji-submission/1"


class CaptureError(ValueError):
    """A capture or submission record is incomplete or malformed (the message names the field)."""


def _ms(when: datetime) -> datetime:
    utc = when.astimezone(UTC)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def _field(obj: Mapping[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    if name not in obj:
        raise CaptureError(f"{where}: missing field {name!r}")
    value = obj[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CaptureError(f"{where}.{name}: unexpected value {value!r}")
    return value


def _optional(obj: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    if obj.get(name) is None:
        return None
    return _field(obj, name, kind, where)


@dataclass(frozen=True)
class RedirectHop:
    url: str
    status: int
    location: str

    def to_json(self) -> JSONObject:
        return {"location": self.location, "status": self.status, "url": self.url}

    @classmethod
    def from_json(cls, obj: object, where: str) -> RedirectHop:
        if not isinstance(obj, dict):
            raise CaptureError(f"{where}: expected an object")
        return cls(
            _field(obj, "url", str, where),
            _field(obj, "status", int, where),
            _field(obj, "location", str, where),
        )


@dataclass(frozen=True)
class BlobInfo:
    """A blob named by its SHA-256 (hex), with its size and media type."""

    sha256: str
    size: int
    media_type: str

    @property
    def ref(self) -> str:
        """``sha256:<hex>``, the blob store's name for it."""
        return blob_ref(self.sha256)

    @classmethod
    def store(cls, blobs: BlobStore, data: bytes, media_type: str) -> BlobInfo:
        return cls(blobs.put(data), len(data), media_type)

    @classmethod
    def of(cls, data: bytes, media_type: str) -> BlobInfo:
        return cls(hashlib.sha256(data).hexdigest(), len(data), media_type)

    def to_json(self) -> JSONObject:
        return {"media_type": self.media_type, "sha256": self.sha256, "size": self.size}

    @classmethod
    def from_json(cls, obj: object, where: str) -> BlobInfo:
        if not isinstance(obj, dict):
            raise CaptureError(f"{where}: expected an object")
        digest = _field(obj, "sha256", str, where)
        try:
            check_digest(digest)
        except ValueError as exc:
            raise CaptureError(f"{where}.sha256: {exc}") from None
        size = _field(obj, "size", int, where)
        if size < 0:
            raise CaptureError(f"{where}.size: negative")
        return cls(digest, size, _field(obj, "media_type", str, where))


@dataclass(frozen=True)
class TLSInfo:
    subject: str  # RFC 4514 string, e.g. "CN=pirate.example"
    issuer: str
    fingerprint_sha256: str  # hex SHA-256 of the certificate's DER bytes
    not_before: str  # ISO 8601 UTC
    not_after: str

    @classmethod
    def from_der(cls, der: bytes) -> TLSInfo:
        """From the peer certificate's DER bytes (``ssl.SSLSocket.getpeercert(True)``)."""
        from cryptography import x509

        try:
            cert = x509.load_der_x509_certificate(der)
        except ValueError as exc:
            raise CaptureError(f"tls: not a DER certificate ({exc})") from None
        return cls(
            subject=cert.subject.rfc4514_string(),
            issuer=cert.issuer.rfc4514_string(),
            fingerprint_sha256=hashlib.sha256(der).hexdigest(),
            not_before=format_time(cert.not_valid_before_utc),
            not_after=format_time(cert.not_valid_after_utc),
        )

    def to_json(self) -> JSONObject:
        return {
            "fingerprint_sha256": self.fingerprint_sha256,
            "issuer": self.issuer,
            "not_after": self.not_after,
            "not_before": self.not_before,
            "subject": self.subject,
        }

    @classmethod
    def from_json(cls, obj: object, where: str) -> TLSInfo:
        if not isinstance(obj, dict):
            raise CaptureError(f"{where}: expected an object")
        fp = _field(obj, "fingerprint_sha256", str, where)
        try:
            check_digest(fp)
        except ValueError as exc:
            raise CaptureError(f"{where}.fingerprint_sha256: {exc}") from None
        return cls(
            subject=_field(obj, "subject", str, where),
            issuer=_field(obj, "issuer", str, where),
            fingerprint_sha256=fp,
            not_before=_field(obj, "not_before", str, where),
            not_after=_field(obj, "not_after", str, where),
        )


Headers = Mapping[str, str] | Iterable[tuple[str, str]]


def _header_pairs(headers: Headers) -> tuple[tuple[str, str], ...]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    pairs = []
    for item in items:
        name, value = item
        if not isinstance(name, str) or not isinstance(value, str):
            raise CaptureError(f"headers: {item!r} is not a pair of strings")
        pairs.append((name.lower(), value))
    return tuple(pairs)


def _pairs(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list):
        raise CaptureError(f"{where}: expected a list of [name, value]")
    for i, pair in enumerate(value):
        ok = isinstance(pair, list) and len(pair) == 2
        if not ok or not all(isinstance(x, str) for x in pair):
            raise CaptureError(f"{where}[{i}]: expected [name, value]")
    return tuple((n, v) for n, v in value)


@dataclass(frozen=True)
class Capture:
    suspect_id: str
    requested_url: str
    redirects: tuple[RedirectHop, ...]
    final_url: str
    resolved_ip: str | None
    http_status: int
    headers: tuple[tuple[str, str], ...]
    body: BlobInfo
    body_content_decoded: bool
    fetched_at: datetime
    tls: TLSInfo | None
    text: BlobInfo | None
    screenshot: BlobInfo | None
    screenshot_none_reason: str | None
    crawler_version: str
    # The request line's headers as sent for final_url (kept since #24, for the WARC
    # request record); () for captures recorded before, and then not written.
    request_headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.suspect_id:
            raise CaptureError("suspect_id: empty")
        if (self.screenshot is None) == (self.screenshot_none_reason is None):
            raise CaptureError(
                "screenshot: give either a screenshot or screenshot_none_reason, exactly one"
            )
        if self.fetched_at.tzinfo is None:
            raise CaptureError("fetched_at: a time zone is required (UTC)")
        # Records keep milliseconds (canonical times): the object holds what is written.
        object.__setattr__(self, "fetched_at", _ms(self.fetched_at))
        if not 100 <= self.http_status <= 599:
            raise CaptureError(f"http_status: {self.http_status} is not an HTTP status")

    @classmethod
    def build(
        cls,
        blobs: BlobStore,
        *,
        suspect_id: str,
        requested_url: str,
        final_url: str,
        http_status: int,
        headers: Headers,
        body: bytes,
        fetched_at: datetime,
        crawler_version: str,
        redirects: Sequence[RedirectHop] = (),
        resolved_ip: str | None = None,
        body_content_decoded: bool = False,
        tls: TLSInfo | None = None,
        text: str | None = None,
        screenshot: bytes | None = None,
        screenshot_none_reason: str | None = None,
        request_headers: Headers = (),
    ) -> Capture:
        """Store the body, text and screenshot in ``blobs`` and return the record."""
        pairs = _header_pairs(headers)
        content_type = next((v for n, v in pairs if n == "content-type"), "")
        media_type = content_type.split(";")[0].strip().lower() or "application/octet-stream"
        if screenshot is None and screenshot_none_reason is None:
            screenshot_none_reason = "no screenshot was taken"
        return cls(
            suspect_id=suspect_id,
            requested_url=requested_url,
            redirects=tuple(redirects),
            final_url=final_url,
            resolved_ip=resolved_ip,
            http_status=http_status,
            headers=pairs,
            body=BlobInfo.store(blobs, body, media_type),
            body_content_decoded=body_content_decoded,
            fetched_at=fetched_at,
            tls=tls,
            text=(
                BlobInfo.store(blobs, text.encode("utf-8"), "text/plain; charset=utf-8")
                if text is not None
                else None
            ),
            screenshot=BlobInfo.store(blobs, screenshot, "image/png") if screenshot else None,
            screenshot_none_reason=None if screenshot else screenshot_none_reason,
            crawler_version=crawler_version,
            request_headers=tuple(
                (str(n), str(v))
                for n, v in (
                    request_headers.items()
                    if isinstance(request_headers, Mapping)
                    else request_headers
                )
            ),
        )

    def blobs(self) -> dict[str, BlobInfo]:
        """The blobs this capture names: ``body``, ``text``, ``screenshot`` (when present)."""
        found = {"body": self.body, "text": self.text, "screenshot": self.screenshot}
        return {name: info for name, info in found.items() if info is not None}

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "body": self.body.to_json(),
            "body_content_decoded": self.body_content_decoded,
            "crawler_version": self.crawler_version,
            "fetched_at": format_time(self.fetched_at),
            "final_url": self.final_url,
            "headers": [[n, v] for n, v in self.headers],
            "http_status": self.http_status,
            "redirects": [hop.to_json() for hop in self.redirects],
            "requested_url": self.requested_url,
            "resolved_ip": self.resolved_ip,
            "screenshot": self.screenshot.to_json() if self.screenshot else None,
            "screenshot_none_reason": self.screenshot_none_reason,
            "suspect_id": self.suspect_id,
            "text": self.text.to_json() if self.text else None,
            "tls": self.tls.to_json() if self.tls else None,
            "version": CAPTURE_VERSION,
        }
        if self.request_headers:
            out["request_headers"] = [[n, v] for n, v in self.request_headers]
        return out

    @classmethod
    def from_json(cls, obj: object, where: str = "capture") -> Capture:
        if not isinstance(obj, dict):
            raise CaptureError(f"{where}: expected an object")
        if obj.get("version") != CAPTURE_VERSION:
            raise CaptureError(f"{where}.version: expected {CAPTURE_VERSION!r}")
        redirects = _field(obj, "redirects", list, where)
        headers = _field(obj, "headers", list, where)
        for i, pair in enumerate(headers):
            ok = isinstance(pair, list) and len(pair) == 2
            if not ok or not all(isinstance(x, str) for x in pair):
                raise CaptureError(f"{where}.headers[{i}]: expected [name, value]")
        try:
            fetched_at = parse_time(_field(obj, "fetched_at", str, where), f"{where}.fetched_at")
        except CanonicalError as exc:
            raise CaptureError(str(exc)) from None
        text = obj.get("text")
        shot = obj.get("screenshot")
        tls = obj.get("tls")
        return cls(
            suspect_id=_field(obj, "suspect_id", str, where),
            requested_url=_field(obj, "requested_url", str, where),
            redirects=tuple(
                RedirectHop.from_json(h, f"{where}.redirects[{i}]") for i, h in enumerate(redirects)
            ),
            final_url=_field(obj, "final_url", str, where),
            resolved_ip=_optional(obj, "resolved_ip", str, where),
            http_status=_field(obj, "http_status", int, where),
            headers=tuple((n, v) for n, v in headers),
            body=BlobInfo.from_json(_field(obj, "body", dict, where), f"{where}.body"),
            body_content_decoded=_field(obj, "body_content_decoded", bool, where),
            fetched_at=fetched_at,
            tls=TLSInfo.from_json(tls, f"{where}.tls") if tls is not None else None,
            text=BlobInfo.from_json(text, f"{where}.text") if text is not None else None,
            screenshot=(
                BlobInfo.from_json(shot, f"{where}.screenshot") if shot is not None else None
            ),
            screenshot_none_reason=_optional(obj, "screenshot_none_reason", str, where),
            crawler_version=_field(obj, "crawler_version", str, where),
            request_headers=_pairs(obj.get("request_headers") or [], f"{where}.request_headers"),
        )


@dataclass(frozen=True)
class Submission:
    """A text Yinji was given rather than fetched (pasted, uploaded): it has no fetch
    time, no URL it was served from; reports say "submitted text, not fetched"."""

    suspect_id: str
    source: str  # "text", "file:<name>", "api"
    received_at: datetime
    text: BlobInfo
    original: BlobInfo | None = None  # the uploaded file's bytes, when there was a file

    def __post_init__(self) -> None:
        if not self.suspect_id:
            raise CaptureError("suspect_id: empty")
        if self.received_at.tzinfo is None:
            raise CaptureError("received_at: a time zone is required (UTC)")
        object.__setattr__(self, "received_at", _ms(self.received_at))

    @classmethod
    def build(
        cls,
        blobs: BlobStore,
        *,
        suspect_id: str,
        source: str,
        received_at: datetime,
        text: str,
        original: bytes | None = None,
        original_media_type: str = "application/octet-stream",
    ) -> Submission:
        return cls(
            suspect_id=suspect_id,
            source=source,
            received_at=received_at,
            text=BlobInfo.store(blobs, text.encode("utf-8"), "text/plain; charset=utf-8"),
            original=(
                BlobInfo.store(blobs, original, original_media_type)
                if original is not None
                else None
            ),
        )

    def blobs(self) -> dict[str, BlobInfo]:
        found = {"text": self.text, "original": self.original}
        return {name: info for name, info in found.items() if info is not None}

    def to_json(self) -> JSONObject:
        return {
            "original": self.original.to_json() if self.original else None,
            "received_at": format_time(self.received_at),
            "source": self.source,
            "suspect_id": self.suspect_id,
            "text": self.text.to_json(),
            "version": SUBMISSION_VERSION,
        }

    @classmethod
    def from_json(cls, obj: object, where: str = "submission") -> Submission:
        if not isinstance(obj, dict):
            raise CaptureError(f"{where}: expected an object")
        if obj.get("version") != SUBMISSION_VERSION:
            raise CaptureError(f"{where}.version: expected {SUBMISSION_VERSION!r}")
        try:
            received = parse_time(_field(obj, "received_at", str, where), f"{where}.received_at")
        except CanonicalError as exc:
            raise CaptureError(str(exc)) from None
        original = obj.get("original")
        return cls(
            suspect_id=_field(obj, "suspect_id", str, where),
            source=_field(obj, "source", str, where),
            received_at=received,
            text=BlobInfo.from_json(_field(obj, "text", dict, where), f"{where}.text"),
            original=(
                BlobInfo.from_json(original, f"{where}.original") if original is not None else None
            ),
        )
