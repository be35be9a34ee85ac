"""Captures as WARC records (ISO 28500, WARC/1.1), so that web archivists' tools (pywb,
replayweb.page, warcio) replay the page from an evidence bundle. Written with ``warcio``,
the Webrecorder project's library that those tools use themselves.

For every capture: a ``request`` record (the request line and the headers Yinji sent
for ``final_url``, as the capture recorded them) and a ``response`` record (the status,
the headers as received and the body as the capture names it), concurrent to each
other, dated ``fetched_at``, with ``WARC-IP-Address`` when the address is known. The
record ids are derived from the log id and the capture's record number, so the same
capture always gives the same bytes.

Two honest departures from the wire, each said in a ``WARC-Yinji-*`` header:

- a body sent in chunks is kept whole: the response drops ``Transfer-Encoding``
  (``WARC-Yinji-Transfer-Decoded``);
- a body the server sent compressed is kept decompressed (what the capture's SHA-256
  names, and what a browser displays): the response then drops ``Content-Encoding`` and
  ``Transfer-Encoding`` and states ``Content-Length`` (``WARC-Yinji-Body-Decoded``);
- a capture recorded before request headers were kept has a request record with the
  request line and ``Host`` only (``WARC-Yinji-Request: reconstructed``).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from .canonical import format_time
from .capture import Capture

_NAMESPACE = uuid.UUID("6f1c3c52-8f0e-4a4e-9a0e-3b9d2f5c7a10")
_DROP_DECODED = frozenset({"content-encoding", "transfer-encoding", "content-length"})
_REASONS = {200: "OK", 203: "Non-Authoritative Information", 206: "Partial Content"}


@dataclass(frozen=True)
class WarcCapture:
    """A capture record, its number in the log, and its body bytes."""

    index: int
    capture: Capture
    body: bytes


def _record_id(log_id: str, index: int, kind: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(_NAMESPACE, f'{log_id}/{index}/{kind}')}>"


def _request_target(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return target, parts.netloc


def build_warc(log_id: str, captures: Sequence[WarcCapture], *, software: str) -> bytes:
    """The gzipped WARC file (one gzip member per record) of ``captures``."""
    sink = io.BytesIO()
    writer = WARCWriter(sink, gzip=True, warc_version="WARC/1.1")
    info = writer.create_warcinfo_record(
        "captures.warc.gz",
        {
            "software": software,
            "format": "WARC File Format 1.1",
            "description": (
                f"Pages captured by the Yinji evidence log {log_id}; each response is "
                "named by a capture record of the log (see manifest.json)"
            ),
        },
    )
    info.rec_headers.replace_header("WARC-Record-ID", _record_id(log_id, -1, "warcinfo"))
    first = min((c.capture.fetched_at for c in captures), default=None)
    if first is not None:
        info.rec_headers.replace_header("WARC-Date", format_time(first))
    writer.write_record(info)
    for item in captures:
        cap = item.capture
        date = format_time(cap.fetched_at)
        common = {"WARC-Date": date, "WARC-Yinji-Log-Record": str(item.index)}
        if cap.resolved_ip:
            common["WARC-IP-Address"] = cap.resolved_ip

        response_headers = list(cap.headers)
        response_extra = {}
        if any(n == "transfer-encoding" for n, _ in response_headers):
            # urllib3 removed the chunked framing: the body is kept whole
            response_headers = [(n, v) for n, v in response_headers if n != "transfer-encoding"]
            response_extra["WARC-Yinji-Transfer-Decoded"] = "true; chunked framing removed"
        if cap.body_content_decoded:
            response_headers = [(n, v) for n, v in response_headers if n not in _DROP_DECODED]
            response_headers.append(("content-length", str(len(item.body))))
            response_extra["WARC-Yinji-Body-Decoded"] = (
                "true; the server sent it compressed, kept decompressed as the capture names it"
            )
        status = f"{cap.http_status} {_REASONS.get(cap.http_status, 'Status')}"
        response = writer.create_warc_record(
            cap.final_url,
            "response",
            payload=io.BytesIO(item.body),
            length=len(item.body),
            warc_headers_dict={
                **common,
                **response_extra,
                "WARC-Record-ID": _record_id(log_id, item.index, "response"),
            },
            http_headers=StatusAndHeaders(status, response_headers, protocol="HTTP/1.1"),
        )
        target, host = _request_target(cap.final_url)
        request_headers = list(cap.request_headers)
        request_extra = {}
        if not request_headers:
            request_headers = [("Host", host)]
            request_extra["WARC-Yinji-Request"] = (
                "reconstructed; this capture did not record the request headers sent"
            )
        request = writer.create_warc_record(
            cap.final_url,
            "request",
            payload=io.BytesIO(b""),
            length=0,
            warc_headers_dict={
                **common,
                **request_extra,
                "WARC-Record-ID": _record_id(log_id, item.index, "request"),
                "WARC-Concurrent-To": _record_id(log_id, item.index, "response"),
            },
            http_headers=StatusAndHeaders(
                f"GET {target} HTTP/1.1", request_headers, is_http_request=True
            ),
        )
        writer.write_record(response)
        writer.write_record(request)
    return sink.getvalue()


def warc_payloads(data: bytes) -> dict[int, bytes]:
    """The response payload of each capture in a WARC file built by ``build_warc``, by
    log record number (for ``verify_bundle``). ``ValueError`` when it cannot be read."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    out: dict[int, bytes] = {}
    try:
        for record in ArchiveIterator(io.BytesIO(data)):
            if record.rec_type != "response":
                continue
            index = record.rec_headers.get_header("WARC-Yinji-Log-Record")
            if index is None or not index.isdigit():
                raise ValueError("a response record names no capture record")
            out[int(index)] = record.content_stream().read()
    except ArchiveLoadFailed as exc:
        raise ValueError(str(exc)) from None
    return out
