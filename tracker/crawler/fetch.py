"""HTTP fetching for the crawler: hops through the SSRF guard, retries, bounded bodies.

``Fetcher.fetch`` follows redirects by hand (every hop goes through
``tracker.crawler.guard.prepare`` before a connection is made), retries transient
failures with exponential backoff and ``Retry-After``, streams the body under a size
cap applied to the *decoded* bytes (gzip bombs), and maps urllib3/socket errors to
the ``CrawlError`` hierarchy. Nothing here decodes charsets or extracts text.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin

import urllib3
from urllib3.exceptions import (
    HTTPError,
    LocationValueError,
    NewConnectionError,
    ProtocolError,
    SSLError,
)
from urllib3.exceptions import TimeoutError as U3TimeoutError
from urllib3.util.timeout import Timeout as U3Timeout

from tracker.crawler.config import CrawlerConfig, IPAddress
from tracker.crawler.errors import (
    BadContent,
    CrawlError,
    HTTPStatusError,
    InvalidURL,
    NotText,
    Timeout,
    TooLarge,
    TooManyRedirects,
    Unreachable,
)
from tracker.crawler.guard import Target, prepare
from tracker.crawler.ratelimit import Deadline, HostRateLimiter
from tracker.crawler.results import Redirect

log = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024


class _BodyDecoder:
    """Content-Encoding decoder whose output is bounded per call (decompression bombs)."""

    def __init__(self, encoding: str, url: str) -> None:
        self.url = url
        enc = encoding.strip().lower()
        self._pending = b""
        self._z: Any = None
        self._deflate_undecided = False
        if enc in ("", "identity", "none"):
            pass
        elif enc in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._deflate_undecided = True
        else:
            # We only advertise gzip and deflate; anything else (br, zstd, stacked
            # encodings) cannot be read safely.
            raise BadContent(url, f"unsupported Content-Encoding {encoding!r}")

    def feed(self, data: bytes, limit: int) -> bytes:
        """Decode ``data``, returning at most ``limit`` bytes; more output means too large."""
        if self._deflate_undecided:
            self._pending += data
            if len(self._pending) < 2:
                return b""
            # "deflate" should be zlib-wrapped, but servers often send raw deflate.
            head = self._pending[:2]
            zlib_wrapped = head[0] & 0x0F == 8 and int.from_bytes(head, "big") % 31 == 0
            self._z = zlib.decompressobj(zlib.MAX_WBITS if zlib_wrapped else -zlib.MAX_WBITS)
            self._deflate_undecided = False
            data, self._pending = self._pending, b""
        if self._z is None:
            return data
        try:
            return self._z.decompress(data, max(limit, 1))
        except zlib.error as exc:
            raise BadContent(self.url, f"corrupt compressed body ({exc})") from exc

    def flush(self, limit: int) -> bytes:
        if self._deflate_undecided:
            self._deflate_undecided = False
            return self._pending  # one byte cannot be a deflate stream: keep it verbatim
        if self._z is None:
            return b""
        try:
            out = self._z.decompress(self._z.unconsumed_tail, max(limit, 1))
            if len(out) < limit:
                out += self._z.flush()
            return out
        except zlib.error as exc:
            raise BadContent(self.url, f"corrupt compressed body ({exc})") from exc


_TEXT_MIMES = frozenset({"application/xhtml+xml", "application/xml"})
_SNIFF_MIMES = frozenset(
    {"", "application/octet-stream", "binary/octet-stream", "application/unknown"}
)
_BINARY_MAGIC = (
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"%PDF",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"RIFF",
    b"7z\xbc\xaf",
    b"Rar!",
    b"OggS",
    b"ID3",
    b"\x7fELF",
    b"MZ",
    b"wOFF",
    b"\x00\x00\x01\x00",
)


def _is_textual(mime: str) -> bool:
    return mime.startswith("text/") or mime in _TEXT_MIMES or mime.endswith("+xml")


def _looks_binary(body: bytes) -> bool:
    if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return body.startswith(_BINARY_MAGIC) or b"\x00" in body[:1024]


def mime_of(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass
class Response:
    """One HTTP response, with what evidence needs about the connection it came on."""

    status: int
    headers: dict[str, str]  # lower-case names, repeated headers joined with ", "
    body: bytes  # content-decoded (gzip/deflate removed)
    location: str | None = None
    header_pairs: tuple[tuple[str, str], ...] = ()  # as received: order, repeats, case
    peer_ip: str | None = None  # the address the connection actually went to
    peer_cert: bytes | None = None  # https: the server certificate presented (DER)
    received_at: datetime | None = None  # when the status line and headers arrived (UTC)
    request_headers: tuple[tuple[str, str], ...] = ()  # as sent for this response


def _map_error(url: str, exc: Exception) -> CrawlError:
    """urllib3/socket errors -> our hierarchy (order matters: NewConnectionError is
    a subclass of urllib3's ConnectTimeoutError)."""
    if isinstance(exc, NewConnectionError):
        return Unreachable(url, f"cannot connect ({_short(exc)})")
    if isinstance(exc, U3TimeoutError | TimeoutError):
        return Timeout(url, f"timed out ({_short(exc)})")
    if isinstance(exc, SSLError):
        return Unreachable(url, f"TLS error ({_short(exc)})", transient=False)
    if isinstance(exc, LocationValueError):
        return InvalidURL(url, f"invalid URL ({exc})")
    if isinstance(exc, ProtocolError):
        return Unreachable(url, f"connection broken ({_short(exc)})")
    return Unreachable(url, f"network error ({_short(exc)})")


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    # urllib3 messages repeat the connection object's repr; keep the useful tail.
    if ": " in text and text.startswith(("HTTPConnection", "<urllib3", "HTTPSConnection")):
        text = text.split(": ", 1)[1]
    return text[:200]


def _peer(resp: Any, address: IPAddress) -> tuple[str, bytes | None]:
    """The peer address of the response's socket and, for TLS, the certificate the
    server presented (DER). The address falls back to the one we connected to."""
    sock = getattr(getattr(resp, "connection", None), "sock", None)
    ip = str(address)
    cert: bytes | None = None
    if sock is None:
        return ip, None
    with contextlib.suppress(OSError, IndexError, TypeError):
        ip = str(sock.getpeername()[0]).split("%", 1)[0]
    getpeercert = getattr(sock, "getpeercert", None)
    if getpeercert is not None:
        try:
            cert = getpeercert(binary_form=True) or None
        except (OSError, ValueError):
            cert = None
    return ip, cert


def _headers_dict(headers: Any) -> dict[str, str]:
    # HTTPHeaderDict.__getitem__ joins repeated headers with ", "; items() would not.
    return {str(k).lower(): headers[k] for k in headers}


def _fix_header_url(value: str) -> str:
    """http.client decodes headers as latin-1; a Location with raw UTF-8 bytes in it
    (common on Chinese sites) would otherwise become mojibake."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


@dataclass(frozen=True)
class Request:
    """What a request sends besides a GET of its URL: the method, a body, headers."""

    method: str = "GET"
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    json_ok: bool = False  # a JSON answer is text too (a site's JSON API)


class Fetcher:
    """GETs through the guard under ``CrawlerConfig``; thread-safe (one urllib3 pool)."""

    def __init__(self, config: CrawlerConfig, limiter: HostRateLimiter) -> None:
        self.config = config
        self._limiter = limiter
        self._pool = urllib3.PoolManager(
            num_pools=64, maxsize=4, retries=False, ca_certs=config.ca_certs
        )

    def close(self) -> None:
        self._pool.clear()

    def fetch(
        self,
        url: str,
        deadline: Deadline,
        *,
        robots: Callable[[Target], None] | None,
        text_only: bool,
        max_bytes: int,
        truncate: bool,
        max_redirects: int | None = None,
        request: Request | None = None,
    ) -> tuple[Target, Response, list[Redirect]]:
        """GET ``url``, following up to ``max_redirects`` redirects (default: the
        config's); returns the final hop's target, its response and the redirect chain
        (every hop that answered with a redirect, in order).

        ``robots`` (the robots.txt check) runs on every hop before connecting; the time
        it takes is added to the deadline. Raises a ``CrawlError`` subclass.
        ``request`` sends another method, a body or more headers on the first hop (a
        site's search form by POST); a redirect is followed with a GET, as browsers do.
        """
        limit = self.config.max_redirects if max_redirects is None else max_redirects
        redirects: list[Redirect] = []
        current = url
        for hop in range(limit + 1):
            target = prepare(current, self.config, deadline)  # every hop, before connecting
            if robots is not None:
                before = time.monotonic()
                robots(target)
                deadline.extend(time.monotonic() - before)
            response = self._get(
                target, deadline, text_only, max_bytes, truncate, request if hop == 0 else None
            )
            if response.location is None:
                return target, response, redirects
            redirects.append(Redirect(target.url, response.status, response.location))
            if hop == limit:
                break
            current = urljoin(target.url, response.location)
        raise TooManyRedirects(url, f"more than {limit} redirects (last: {redirects[-1].url})")

    def _get(
        self,
        target: Target,
        deadline: Deadline,
        text_only: bool,
        max_bytes: int,
        truncate: bool,
        request: Request | None = None,
    ) -> Response:
        """One hop with retries on transient failures."""
        cfg = self.config
        attempt = 0
        while True:
            # Rotate through the validated addresses so a dead one does not sink all tries.
            address = target.addresses[attempt % len(target.addresses)]
            try:
                # One request at a time to a host, its interval counted from the end of
                # the previous one (body read): what the server sees (``ratelimit``).
                with self._limiter.slot(target.host_ascii) as waited:
                    deadline.extend(waited)
                    return self._attempt(
                        target, address, deadline, text_only, max_bytes, truncate, request
                    )
            except (Timeout, Unreachable, HTTPStatusError) as exc:
                retryable = (
                    exc.status in cfg.retry_statuses
                    if isinstance(exc, HTTPStatusError)
                    else exc.transient
                )
                if not retryable or attempt >= cfg.retries:
                    raise
                delay = cfg.backoff_factor * (2**attempt)
                if exc.retry_after is not None:
                    if exc.retry_after > cfg.max_retry_after:
                        raise  # come back much later: the worker reschedules, we don't block
                    delay = max(delay, exc.retry_after)
                if delay >= deadline.remaining():
                    raise
                log.info("retrying %s in %.2fs after: %s", target.url, delay, exc)
                time.sleep(delay)
                attempt += 1

    def _pool_for(self, target: Target, address: IPAddress) -> Any:
        pool_kwargs: dict[str, Any] | None = None
        if target.scheme == "https" and not target.ip_literal:
            # We connect to the IP, so TLS must be told the real name for SNI and for
            # certificate verification.
            pool_kwargs = {
                "server_hostname": target.host_ascii,
                "assert_hostname": target.host_ascii,
            }
        return self._pool.connection_from_host(
            str(address), target.port, target.scheme, pool_kwargs=pool_kwargs
        )

    def _request_headers(self, target: Target) -> dict[str, str]:
        return {
            "Host": target.host_header,
            "User-Agent": self.config.user_agent,
            "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
            "Accept-Encoding": "gzip, deflate",
            "Accept-Language": self.config.accept_language,
        }

    def _attempt(
        self,
        target: Target,
        address: IPAddress,
        deadline: Deadline,
        text_only: bool,
        max_bytes: int,
        truncate: bool,
        request: Request | None = None,
    ) -> Response:
        cfg = self.config
        left = deadline.check(target.url)
        timeout = U3Timeout(
            connect=max(0.001, min(cfg.connect_timeout, left)),
            read=max(0.001, min(cfg.read_timeout, left)),
        )
        sent = self._request_headers(target)
        method, body = "GET", None
        if request is not None:
            method, body = request.method.upper(), request.body
            for k, v in request.headers:
                if k.lower() not in ("host", "content-length", "accept-encoding"):
                    sent[k] = v
        try:
            resp = self._pool_for(target, address).urlopen(
                method,
                target.request_target,
                headers=sent,
                body=body,
                redirect=False,  # we follow redirects ourselves, re-checking each hop
                retries=False,
                preload_content=False,
                decode_content=False,  # we decode, with the size cap on decoded bytes
                timeout=timeout,
                assert_same_host=False,
                release_conn=False,
            )
        except (HTTPError, OSError) as exc:
            raise _map_error(target.url, exc) from exc

        complete = False
        try:
            received_at = datetime.now(UTC)
            status = resp.status
            headers = _headers_dict(resp.headers)
            pairs = tuple((str(k), str(v)) for k, v in resp.headers.items())
            peer_ip, peer_cert = _peer(resp, address)

            def response(body: bytes, location: str | None = None) -> Response:
                return Response(
                    status,
                    headers,
                    body,
                    location,
                    pairs,
                    peer_ip,
                    peer_cert,
                    received_at,
                    tuple(sent.items()),
                )

            location = headers.get("location")
            if status in REDIRECT_STATUSES and location:
                return response(b"", _fix_header_url(location))
            if status >= 300:
                reason = f"HTTP {status} {resp.reason or ''}".strip()
                retry_after = _parse_retry_after(headers.get("retry-after"))
                raise HTTPStatusError(target.url, reason, status, retry_after=retry_after)
            mime = mime_of(headers.get("content-type"))
            json_ok = request is not None and request.json_ok and "json" in mime
            if text_only and not (_is_textual(mime) or mime in _SNIFF_MIMES or json_ok):
                raise NotText(target.url, f"content type {mime!r} is not a text page")
            body, complete = self._read_body(resp, target, deadline, max_bytes, truncate)
            if text_only and mime in _SNIFF_MIMES and _looks_binary(body):
                raise NotText(target.url, f"binary body (content type {mime or 'absent'!r})")
            return response(body)
        except (HTTPError, OSError) as exc:
            raise _map_error(target.url, exc) from exc
        finally:
            if not complete:
                # Unread data would poison a kept-alive connection: drop it instead.
                resp.close()
            resp.release_conn()

    def _read_body(
        self,
        resp: Any,
        target: Target,
        deadline: Deadline,
        max_bytes: int,
        truncate: bool,
    ) -> tuple[bytes, bool]:
        """Stream the body; never holds more than ``max_bytes + 1`` decoded bytes.

        Returns (body, complete). With ``truncate`` an oversized body is cut at
        ``max_bytes`` (robots.txt) instead of raising ``TooLarge``.
        """
        url = target.url
        length = resp.headers.get("content-length", "").strip()
        # Honest Content-Length too big: refuse before reading a byte of the body.
        if not truncate and length.isdigit() and int(length) > max_bytes:
            raise TooLarge(url, f"Content-Length {length} exceeds the {max_bytes}-byte cap")
        decoder = _BodyDecoder(resp.headers.get("content-encoding", ""), url)
        out = bytearray()
        raw_total = 0
        sock = getattr(getattr(resp, "connection", None), "sock", None)
        while True:
            left = deadline.check(url)
            if sock is not None:
                # Bound each read by the deadline too, so a slow drip cannot outlive it.
                try:
                    sock.settimeout(max(0.001, min(self.config.read_timeout, left)))
                except OSError:
                    sock = None
            try:
                chunk = resp.read1(_CHUNK, decode_content=False)
            except (HTTPError, OSError):
                deadline.check(url)  # name the real cause when the deadline cut the read
                raise
            if not chunk:
                out += decoder.flush(max_bytes + 1 - len(out))
                break
            raw_total += len(chunk)
            out += decoder.feed(chunk, max_bytes + 1 - len(out))
            if len(out) > max_bytes or raw_total > max_bytes:
                if truncate:
                    return bytes(out[:max_bytes]), False
                raise TooLarge(url, f"body exceeds the {max_bytes}-byte cap")
        if len(out) > max_bytes:
            if truncate:
                return bytes(out[:max_bytes]), False
            raise TooLarge(url, f"body exceeds the {max_bytes}-byte cap")
        return bytes(out), True
