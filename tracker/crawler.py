"""The crawler: fetch a suspect page safely, decode it, extract its main text.

A library module (the Celery workers and the CLI call it); it starts no thread or
server at import. Guarantees, all per ``CrawlerConfig`` (see docs/CRAWLER.md):

- SSRF guard: only http/https, no credentials in URLs; the host is resolved once per
  hop and refused if ANY address is non-public, then the connection goes to that
  validated IP (with the original Host header and SNI), so a DNS answer cannot
  change between the check and the connect. Redirects are followed by hand and every
  hop is checked again, before any connection is made.
- Bounded: connect/read timeouts, a total deadline per fetch, a size cap applied while
  streaming and to the *decoded* body (gzip bombs), a redirect limit.
- Polite: one user agent, a thread-safe per-host minimum interval, robots.txt per
  origin (RFC 9309: 4xx = allow, 5xx/unreachable = disallow), retries with
  exponential backoff and ``Retry-After``.
- Chinese-aware decoding (``decode_html``): GBK, GB18030 and Big5 pages are read right
  even when they declare nothing or declare the wrong charset.
"""

from __future__ import annotations

import codecs
import hashlib
import html as html_lib
import ipaddress
import logging
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

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

from tracker.records import Suspect

if TYPE_CHECKING:
    from tracker.config import Settings

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_USER_AGENT = "YinjiBot/0.1 (+copyright tracking)"
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
DEFAULT_PORTS = {"http": 80, "https": 443}
_CHUNK = 64 * 1024


# --------------------------------------------------------------------------- errors


class CrawlError(Exception):
    """A page could not be fetched. ``str(err)`` names the reason and the URL.

    ``transient`` tells a worker whether trying again later may succeed;
    ``retry_after`` (seconds) is set when the server said when to come back.
    The exception pickles (Celery sends it between processes): the constructor
    arguments are kept in ``args`` and the rest in ``__dict__``.
    """

    transient: bool = False

    def __init__(
        self,
        url: str,
        reason: str,
        status: int | None = None,
        *,
        retry_after: float | None = None,
        transient: bool | None = None,
    ) -> None:
        super().__init__(url, reason, status)
        self.url = url
        self.reason = reason
        self.status = status
        self.retry_after = retry_after
        if transient is not None:
            self.transient = transient

    def __str__(self) -> str:
        return f"{self.reason}: {self.url}"


class InvalidURL(CrawlError):
    """The URL cannot be parsed or has no host."""


class Blocked(CrawlError):
    """Refused by the SSRF guard (scheme, credentials, non-public address)."""


class RobotsDisallowed(CrawlError):
    """robots.txt (or its unavailability, RFC 9309) forbids this URL."""


class TooLarge(CrawlError):
    """The body (after content decoding) exceeds ``max_bytes``."""


class TooManyRedirects(CrawlError):
    """More than ``max_redirects`` redirects."""


class HTTPStatusError(CrawlError):
    """The final response had an error status (4xx/5xx, or a 3xx without Location)."""

    def __init__(
        self,
        url: str,
        reason: str,
        status: int | None = None,
        *,
        retry_after: float | None = None,
        transient: bool | None = None,
    ) -> None:
        if transient is None:
            transient = status in {408, 425, 429, 500, 502, 503, 504}
        super().__init__(url, reason, status, retry_after=retry_after, transient=transient)


class Timeout(CrawlError):
    """Connect/read timeout or the total deadline ran out."""

    transient = True


class Unreachable(CrawlError):
    """DNS failure, connection refused/reset, TLS failure."""

    transient = True


class NotText(CrawlError):
    """The response is not a text/HTML page (image, archive, PDF...)."""


class BadContent(CrawlError):
    """The body cannot be decoded (unsupported or corrupt Content-Encoding)."""


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class CrawlerConfig:
    """Crawler settings. Times are seconds; ``from_settings`` reads ``Settings``."""

    connect_timeout: float = 5.0
    read_timeout: float = 15.0  # per socket read, not for the whole body
    total_timeout: float = 60.0  # one fetch(): all hops, retries, backoff, body
    max_bytes: int = 5 * 1024 * 1024  # decoded body cap
    max_redirects: int = 5
    user_agent: str = DEFAULT_USER_AGENT
    min_interval: float = 1.0  # per host, between request starts
    retries: int = 2  # extra attempts after the first one
    backoff_factor: float = 0.5  # sleeps factor * 2**attempt (0.5 s, 1 s, ...)
    retry_statuses: frozenset[int] = frozenset({429, 500, 502, 503, 504})
    max_retry_after: float = 30.0  # a longer Retry-After gives up at once (reschedule instead)
    respect_robots: bool = True
    robots_ttl: float = 3600.0
    robots_error_ttl: float = 300.0  # a 5xx/unreachable robots.txt is retried sooner
    robots_max_bytes: int = 512 * 1024  # RFC 9309: parse at least 500 KiB, ignore the rest
    max_crawl_delay: float = 30.0  # cap on a robots.txt Crawl-delay
    allow_private: bool = False
    # Escape hatch consulted for each address the rules would refuse: return True to allow
    # it anyway (a loopback test server, an internal mirror) without opening everything.
    allow_address: Callable[[IPAddress, int], bool] | None = None
    # host, port -> IP strings; defaults to socket.getaddrinfo (tests inject a fake DNS).
    resolver: Callable[[str, int], Sequence[str]] | None = None
    ca_certs: str | None = None  # CA bundle for https (default: the system store)
    accept_language: str = "zh-CN,zh;q=0.9,zh-TW;q=0.8,en;q=0.5"

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> CrawlerConfig:
        values: dict[str, Any] = {"allow_private": settings.allow_private_urls}
        values.update(overrides)
        return cls(**values)


# --------------------------------------------------------------------------- results


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
    fetched_at: datetime

    def to_suspect(self, id: str | None = None) -> Suspect:
        """The store record; the id defaults to sha1(final_url) so a re-crawl replaces it."""
        final = self.final_url or self.url
        suspect_id = id or hashlib.sha1(final.encode("utf-8"), usedforsecurity=False).hexdigest()
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


# --------------------------------------------------------------------------- SSRF guard


def is_public_address(addr: IPAddress) -> bool:
    """True when ``addr`` is a globally routable unicast address.

    ``is_global`` alone is not enough: multicast and IPv6 site-local count as global
    for the ipaddress module, and tunnelled forms (IPv4-mapped, 6to4) carry an IPv4
    address that may be private.
    """
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return is_public_address(addr.ipv4_mapped)
        if addr.sixtofour is not None and not is_public_address(addr.sixtofour):
            return False
        if addr.teredo is not None or addr.is_site_local:
            return False
    return not (
        addr.is_private
        or addr.is_loopback
        or addr.is_link_local
        or addr.is_multicast
        or addr.is_reserved
        or addr.is_unspecified
        or not addr.is_global
    )


@dataclass(frozen=True)
class _Target:
    """One hop, validated: where to connect and what to send."""

    url: str  # normalised, no fragment
    scheme: str
    host: str  # lower case, as written (may be Unicode)
    host_ascii: str  # IDNA form used on the wire
    port: int
    request_target: str  # path?query, percent-encoded
    host_header: str
    addresses: tuple[IPAddress, ...]
    ip_literal: bool

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host_ascii, self.port)


def _call_with_timeout(fn: Callable[[], Any], timeout: float) -> Any:
    """Run ``fn`` in a daemon thread: getaddrinfo has no timeout of its own, and a hung
    resolver must not break the total deadline (nor block interpreter exit)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="yinji-dns", daemon=True).start()
    if not done.wait(max(timeout, 0.0)):
        raise TimeoutError("DNS resolution timed out")
    if "error" in box:
        raise box["error"]
    return box["value"]


# --------------------------------------------------------------------------- rate limit


class HostRateLimiter:
    """Thread-safe minimum interval between request starts to the same host.

    Each caller reserves the next free slot under the lock and sleeps outside it, so
    concurrent workers to one host are spaced out instead of bursting together.
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._next: dict[str, float] = {}
        self._intervals: dict[str, float] = {}

    def set_interval(self, host: str, seconds: float) -> None:
        with self._lock:
            self._intervals[host] = seconds

    def wait(self, host: str) -> float:
        """Block until ``host`` may be contacted; return the seconds waited."""
        with self._lock:
            now = time.monotonic()
            interval = self._intervals.get(host, self.interval)
            slot = max(now, self._next.get(host, 0.0))
            self._next[host] = slot + interval
            if len(self._next) > 10_000:  # forget hosts whose slot has long passed
                self._next = {h: t for h, t in self._next.items() if t > now}
        delay = slot - now
        if delay > 0:
            time.sleep(delay)
        return max(delay, 0.0)


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def extend(self, seconds: float) -> None:
        # Waits for our own rate limiter or robots.txt are not the server's slowness.
        self.end += seconds

    def check(self, url: str) -> float:
        left = self.remaining()
        if left <= 0:
            raise Timeout(url, f"total deadline of {self.seconds:g}s exceeded")
        return left


# --------------------------------------------------------------------------- robots


@dataclass
class _Robots:
    parser: RobotFileParser | None  # None: the blanket rule applies
    allow_all: bool
    reason: str
    expires: float
    transient: bool = False  # disallowed only because robots.txt was unavailable

    def allows(self, agent: str, url: str) -> bool:
        if self.parser is None:
            return self.allow_all
        return self.parser.can_fetch(agent, url)


def _parse_robots(text: str, url: str) -> RobotFileParser:
    parser = RobotFileParser(url)
    parser.parse(text.splitlines())
    # robotparser applies the first matching rule; RFC 9309 wants the longest match
    # (Allow winning ties). Sorting each group's rules gives that for plain prefixes.
    entries = list(parser.entries)
    if parser.default_entry is not None:
        entries.append(parser.default_entry)
    for entry in entries:
        entry.rulelines.sort(key=lambda rule: (-len(rule.path), not rule.allowance))
    return parser


# --------------------------------------------------------------------------- body reading


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


def _mime_of(content_type: str | None) -> str:
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
class _Response:
    status: int
    headers: dict[str, str]
    body: bytes
    location: str | None = None


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


def _headers_dict(headers: Any) -> dict[str, str]:
    # HTTPHeaderDict.__getitem__ joins repeated headers with ", "; items() would not.
    return {str(k).lower(): headers[k] for k in headers}


# --------------------------------------------------------------------------- URLs


_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_HOSTNAME_RE = re.compile(
    r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$"
)
_QUERY_SAFE = _PATH_SAFE + "?"


def _fix_header_url(value: str) -> str:
    """http.client decodes headers as latin-1; a Location with raw UTF-8 bytes in it
    (common on Chinese sites) would otherwise become mojibake."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


# --------------------------------------------------------------------------- crawler


class Crawler:
    """Fetches pages under ``CrawlerConfig``. Thread-safe: share one per process."""

    def __init__(self, config: CrawlerConfig | None = None) -> None:
        self.config = config or CrawlerConfig()
        self._pool = urllib3.PoolManager(
            num_pools=64, maxsize=4, retries=False, ca_certs=self.config.ca_certs
        )
        self._limiter = HostRateLimiter(self.config.min_interval)
        self._robots: dict[tuple[str, str, int], _Robots] = {}
        self._robots_lock = threading.Lock()
        self._robots_origin_locks: dict[tuple[str, str, int], threading.Lock] = {}
        # robotparser matches groups on the product token ("YinjiBot").
        self._robots_agent = self.config.user_agent.split("/", 1)[0].strip() or "*"

    # -- lifecycle --
    def close(self) -> None:
        self._pool.clear()

    def __enter__(self) -> Crawler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public API --
    def fetch(self, url: str) -> FetchResult:
        """GET ``url`` (following redirects) and return the content-decoded body.

        Raises a ``CrawlError`` subclass; nothing else escapes for network problems.
        """
        started = time.monotonic()
        deadline = _Deadline(self.config.total_timeout)
        target, response, redirects = self._fetch(
            url,
            deadline,
            check_robots=self.config.respect_robots,
            text_only=True,
            max_bytes=self.config.max_bytes,
            truncate=False,
        )
        return FetchResult(
            url=url,
            final_url=target.url,
            status=response.status,
            headers=response.headers,
            body=response.body,
            content_type=_mime_of(response.headers.get("content-type")),
            redirects=redirects,
            elapsed=time.monotonic() - started,
        )

    def crawl_page(self, url: str) -> Page:
        """Fetch, decode and extract: the ready-to-store suspect page."""
        result = self.fetch(url)
        content_type = result.headers.get("content-type")
        text, encoding = decode_html(result.body, content_type)
        if result.content_type == "text/plain":
            # Pirated novels are often served as .txt: there is no markup to extract from.
            title, main = "", _normalise_text(text)
        else:
            title, main = extract(text, result.final_url)
        return Page(
            url=url,
            final_url=result.final_url,
            status=result.status,
            headers=result.headers,
            encoding=encoding,
            raw=result.body,
            html=text,
            title=title,
            text=main,
            fetched_at=result.fetched_at,
        )

    # -- SSRF guard --
    def check_url(self, url: str) -> str:
        """Run only the SSRF guard (DNS is the only traffic); return the normalised URL.

        Lets the web app refuse a bad submission at once instead of in a worker; the
        fetch checks again anyway (DNS answers change).
        """
        return self._prepare(url, _Deadline(self.config.total_timeout)).url

    def _prepare(self, url: str, deadline: _Deadline) -> _Target:
        """Validate ``url`` and resolve its host; raise ``Blocked``/``InvalidURL``."""
        raw = url.strip()
        if not raw or any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
            raise InvalidURL(url, "empty URL or control characters in URL")
        try:
            parts = urlsplit(raw)
            port = parts.port
        except ValueError as exc:
            raise InvalidURL(url, f"invalid URL ({exc})") from exc
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            raise Blocked(url, f"scheme {scheme or '(none)'!r} is not allowed (http/https only)")
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            # user@host is a classic parser-confusion trick and would leak credentials.
            raise Blocked(url, "credentials in URLs are not allowed")
        host = (parts.hostname or "").rstrip(".").lower()
        if not host:
            raise InvalidURL(url, "URL has no host")
        if port == 0:
            raise InvalidURL(url, "port 0 is not valid")
        port = port or DEFAULT_PORTS[scheme]

        literal: IPAddress | None
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            host_ascii = str(literal)
        else:
            try:
                host_ascii = host.encode("idna").decode("ascii")
            except UnicodeError as exc:
                raise InvalidURL(url, f"invalid host name {host!r}") from exc
            if not _HOSTNAME_RE.match(host_ascii):
                raise InvalidURL(url, f"invalid host name {host!r}")

        path = quote(parts.path or "/", safe=_PATH_SAFE)
        query = quote(parts.query, safe=_QUERY_SAFE)
        request_target = path + (f"?{query}" if query else "")
        wire_host = f"[{host_ascii}]" if isinstance(literal, ipaddress.IPv6Address) else host_ascii
        netloc_host = f"[{host}]" if isinstance(literal, ipaddress.IPv6Address) else host
        explicit_port = "" if port == DEFAULT_PORTS[scheme] else f":{port}"
        normalised = urlunsplit((scheme, netloc_host + explicit_port, path, query, ""))

        if literal is not None:
            addresses: tuple[IPAddress, ...] = (literal,)
        else:
            addresses = self._resolve(normalised, host_ascii, port, deadline)
        self._validate_addresses(normalised, host if literal is None else "", port, addresses)
        return _Target(
            url=normalised,
            scheme=scheme,
            host=host,
            host_ascii=host_ascii,
            port=port,
            request_target=request_target,
            host_header=wire_host + explicit_port,
            addresses=addresses,
            ip_literal=literal is not None,
        )

    def _resolve(
        self, url: str, host: str, port: int, deadline: _Deadline
    ) -> tuple[IPAddress, ...]:
        resolver = self.config.resolver

        def lookup() -> list[str]:
            if resolver is not None:
                return list(resolver(host, port))
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            return [str(info[4][0]) for info in infos]

        try:
            names = _call_with_timeout(lookup, deadline.check(url))
        except socket.gaierror as exc:
            transient = exc.errno == socket.EAI_AGAIN
            raise Unreachable(url, f"cannot resolve {host} ({exc})", transient=transient) from exc
        except TimeoutError as exc:
            raise Timeout(url, f"resolving {host} timed out") from exc
        except OSError as exc:
            raise Unreachable(url, f"cannot resolve {host} ({exc})") from exc
        addresses: list[IPAddress] = []
        for name in names:
            try:
                addr = ipaddress.ip_address(name.split("%", 1)[0])  # drop an IPv6 zone id
            except ValueError as exc:
                raise Blocked(url, f"resolver returned a non-address {name!r}") from exc
            if addr not in addresses:
                addresses.append(addr)
        if not addresses:
            raise Unreachable(url, f"{host} has no addresses")
        return tuple(addresses)

    def _validate_addresses(
        self, url: str, host: str, port: int, addresses: Sequence[IPAddress]
    ) -> None:
        if self.config.allow_private:
            return
        hook = self.config.allow_address
        for addr in addresses:
            if is_public_address(addr):
                continue
            if hook is not None and hook(addr, port):
                continue
            # ANY bad answer refuses: we must not leave the choice of address to luck.
            detail = (
                f"{host} resolves to non-public address {addr}" if host else f"{addr} is not public"
            )
            raise Blocked(url, detail)

    # -- fetching --
    def _fetch(
        self,
        url: str,
        deadline: _Deadline,
        *,
        check_robots: bool,
        text_only: bool,
        max_bytes: int,
        truncate: bool,
        max_redirects: int | None = None,
    ) -> tuple[_Target, _Response, list[str]]:
        limit = self.config.max_redirects if max_redirects is None else max_redirects
        redirects: list[str] = []
        current = url
        for hop in range(limit + 1):
            target = self._prepare(current, deadline)  # every hop, before connecting
            if check_robots:
                before = time.monotonic()
                self._check_robots(target)
                deadline.extend(time.monotonic() - before)
            response = self._get(target, deadline, text_only, max_bytes, truncate)
            if response.location is None:
                return target, response, redirects
            redirects.append(target.url)
            if hop == limit:
                break
            current = urljoin(target.url, response.location)
        raise TooManyRedirects(url, f"more than {limit} redirects (last: {redirects[-1]})")

    def _get(
        self,
        target: _Target,
        deadline: _Deadline,
        text_only: bool,
        max_bytes: int,
        truncate: bool,
    ) -> _Response:
        """One hop with retries on transient failures."""
        cfg = self.config
        attempt = 0
        while True:
            deadline.extend(self._limiter.wait(target.host_ascii))
            # Rotate through the validated addresses so a dead one does not sink all tries.
            address = target.addresses[attempt % len(target.addresses)]
            try:
                return self._attempt(target, address, deadline, text_only, max_bytes, truncate)
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

    def _pool_for(self, target: _Target, address: IPAddress) -> Any:
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

    def _request_headers(self, target: _Target) -> dict[str, str]:
        return {
            "Host": target.host_header,
            "User-Agent": self.config.user_agent,
            "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
            "Accept-Encoding": "gzip, deflate",
            "Accept-Language": self.config.accept_language,
        }

    def _attempt(
        self,
        target: _Target,
        address: IPAddress,
        deadline: _Deadline,
        text_only: bool,
        max_bytes: int,
        truncate: bool,
    ) -> _Response:
        cfg = self.config
        left = deadline.check(target.url)
        timeout = U3Timeout(
            connect=max(0.001, min(cfg.connect_timeout, left)),
            read=max(0.001, min(cfg.read_timeout, left)),
        )
        try:
            resp = self._pool_for(target, address).urlopen(
                "GET",
                target.request_target,
                headers=self._request_headers(target),
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
            status = resp.status
            headers = _headers_dict(resp.headers)
            location = headers.get("location")
            if status in REDIRECT_STATUSES and location:
                return _Response(status, headers, b"", location=_fix_header_url(location))
            if status >= 300:
                reason = f"HTTP {status} {resp.reason or ''}".strip()
                retry_after = _parse_retry_after(headers.get("retry-after"))
                raise HTTPStatusError(target.url, reason, status, retry_after=retry_after)
            mime = _mime_of(headers.get("content-type"))
            if text_only and not (_is_textual(mime) or mime in _SNIFF_MIMES):
                raise NotText(target.url, f"content type {mime!r} is not a text page")
            body, complete = self._read_body(resp, target, deadline, max_bytes, truncate)
            if text_only and mime in _SNIFF_MIMES and _looks_binary(body):
                raise NotText(target.url, f"binary body (content type {mime or 'absent'!r})")
            return _Response(status, headers, body)
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
        target: _Target,
        deadline: _Deadline,
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

    # -- robots.txt --
    def _check_robots(self, target: _Target) -> None:
        robots = self._robots_for(target)
        if not robots.allows(self._robots_agent, target.url):
            raise RobotsDisallowed(target.url, robots.reason, transient=robots.transient)

    def _robots_for(self, target: _Target) -> _Robots:
        key = target.origin
        with self._robots_lock:
            cached = self._robots.get(key)
            if cached is not None and cached.expires > time.monotonic():
                return cached
            origin_lock = self._robots_origin_locks.setdefault(key, threading.Lock())
        # One fetch per origin even when many workers arrive at once.
        with origin_lock:
            with self._robots_lock:
                cached = self._robots.get(key)
                if cached is not None and cached.expires > time.monotonic():
                    return cached
            robots = self._load_robots(target)
            with self._robots_lock:
                self._robots[key] = robots
            return robots

    def _load_robots(self, target: _Target) -> _Robots:
        cfg = self.config
        netloc = target.url.split("/", 3)[2]
        robots_url = f"{target.scheme}://{netloc}/robots.txt"
        now = time.monotonic()
        try:
            _, response, _ = self._fetch(
                robots_url,
                _Deadline(cfg.total_timeout),  # its own budget; the page's is extended
                check_robots=False,
                text_only=False,
                max_bytes=cfg.robots_max_bytes,
                truncate=True,
                max_redirects=5,  # RFC 9309: follow at least five
            )
        except HTTPStatusError as exc:
            status = exc.status or 0
            if status >= 500 or status == 429:
                return _Robots(
                    None,
                    False,
                    f"robots.txt unavailable (HTTP {status}): RFC 9309 treats as disallow-all",
                    now + cfg.robots_error_ttl,
                    transient=True,
                )
            return _Robots(None, True, f"robots.txt HTTP {status}: allow all", now + cfg.robots_ttl)
        except TooManyRedirects:
            return _Robots(None, True, "robots.txt redirect loop: allow all", now + cfg.robots_ttl)
        except CrawlError as exc:
            return _Robots(
                None,
                False,
                f"robots.txt unreachable ({exc.reason}): RFC 9309 treats as disallow-all",
                now + cfg.robots_error_ttl,
                transient=True,
            )
        parser = _parse_robots(response.body.decode("utf-8", errors="replace"), robots_url)
        delay = parser.crawl_delay(self._robots_agent)
        if delay:
            try:
                seconds = min(max(float(delay), cfg.min_interval), cfg.max_crawl_delay)
                self._limiter.set_interval(target.host_ascii, seconds)
            except (TypeError, ValueError):
                pass
        return _Robots(parser, True, "disallowed by robots.txt", now + cfg.robots_ttl)


# --------------------------------------------------------------------------- charsets

# The most frequent simplified characters plus the traditional forms of those that
# differ: correct GB or Big5 decodings are dense in them, mis-decodings are not.
_COMMON_SIMPLIFIED = (
    "的一是不了在人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着"
    "下自之年过发后作里用道行所然家种事成方多经么去法学如都同现当没动面起看定天分还进好"
    "小部其些主样理心她本前开但因只从想实日军者意无力它与长把机十民第公此已工使情明性知"
    "全三又关点正业外将两高间由问很最重并物手应战向头文体政美相见被利什二等产或新己制身"
    "果加西斯月话合回特代内信表化老给世位次度门任常先海通教儿原东声提立及比员解水名真论"
    "处走义各入几口认条平系气题活尔更别打女变四神总何电数安少报才结反受目太量再感建务做"
    "接必场件计管期市直德资命山金指克许统区保至队形社便空决治展马科司五基眼书非则听白却"
    "界达光放强即像难且权思王象完设式色路记南品住告类求据程北边死张该交"
)
_COMMON_TRADITIONAL = (
    "這個們來為爲國說時會對於過發後裏裡種經麼學現當沒動還進樣開從實軍無與長機關點業將兩"
    "間問並應戰頭體見產話內給門兒東聲員論處義幾認條氣題爾別變總電數報結務場計資許統區隊"
    "決馬書則聽卻達強難權設記類據邊張該著"
)
_COMMON_CJK = frozenset(_COMMON_SIMPLIFIED + _COMMON_TRADITIONAL)

CJK_RATIO_THRESHOLD = 0.2  # correct Chinese decodes score ~0.4-0.6, wrong ones < 0.1
_GB_CODECS = ("gb18030", "gbk")  # gb18030 is the superset; gbk only adds the 0x80 euro sign
_BIG5_CODECS = ("big5hkscs", "cp950")
_WESTERN_CODECS = ("cp1252", "iso8859-1")
_MULTIBYTE_NAMES = frozenset(
    [
        "utf-8",
        "gb18030",
        "gbk",
        "gb2312",
        "big5",
        "big5hkscs",
        "cp950",
        "shift_jis",
        "cp932",
        "euc_jp",
        "euc_kr",
        "cp949",
        "johab",
        "iso2022_jp",
        "iso2022_kr",
        "hz",
    ]
)
# CJK first; cp1252 so that a genuinely Western page is not forced into a CJK codec.
_DETECT_CANDIDATES = [
    "gb18030",
    "big5",
    "cp950",
    "shift_jis",
    "euc_jp",
    "euc_kr",
    "utf_8",
    "cp1252",
]
_EXTRA_LABELS = {  # web labels Python does not know
    "x-gbk": "gbk",
    "x-big5": "big5",
    "x-x-big5": "big5",
    "big-5": "big5",
    "cn-big5": "big5",
    "x-euc-cn": "gb2312",
    "x-sjis": "shift_jis",
    "windows-936": "gbk",
    "unicode-1-1-utf-8": "utf-8",
    "utf8mb4": "utf-8",
}
_HEADER_CHARSET_RE = re.compile(r"""charset\s*=\s*["']?\s*([^"'\s;,]+)""", re.I)
_META_CHARSET_RE = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_DECL_RE = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:-]+)["']""", re.I)
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def cjk_ratio(text: str, sample: int = 20_000) -> float:
    """Share of the non-ASCII, non-punctuation characters that are common Chinese ones."""
    considered = hits = 0
    for ch in text:
        code = ord(ch)
        if (
            code < 0x80
            or 0x2000 <= code <= 0x206F  # general punctuation
            or 0x3000 <= code <= 0x303F  # CJK punctuation
            or 0xFF00 <= code <= 0xFFEF  # full-width forms
        ):
            continue
        considered += 1
        if ch in _COMMON_CJK:
            hits += 1
        if considered >= sample:
            break
    return hits / considered if considered else 0.0


def _strict(body: bytes, codec: str) -> str | None:
    try:
        return body.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def _codec_for_label(label: str) -> str | None:
    """Canonical codec for a declared label: GB family -> gb18030, Big5 -> big5hkscs,
    Latin-1/ASCII -> cp1252 (as browsers do), UTF-16/32 without BOM -> utf-8."""
    label = label.strip().strip("\"'").lower()
    label = _EXTRA_LABELS.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    if name in ("gb2312", "gbk", "gb18030"):
        return "gb18030"
    if name in ("big5", "big5hkscs", "cp950"):
        return "big5hkscs"
    if name in ("ascii", "iso8859-1", "latin-1", "cp1252"):
        return "cp1252"
    if name.startswith(("utf-16", "utf-32")):
        # A page readable far enough to find an ASCII label is not UTF-16 (HTML spec).
        return "utf-8"
    return name


def _declared_labels(body: bytes, content_type_header: str | None) -> list[str]:
    labels: list[str] = []
    if content_type_header:
        match = _HEADER_CHARSET_RE.search(content_type_header)
        if match:
            labels.append(match.group(1))
    head = body[:16384]  # pirate pages often bury <meta> after long scripts
    match = _XML_DECL_RE.match(head)
    if match:
        labels.append(match.group(1).decode("ascii"))
    labels.extend(m.group(1).decode("ascii") for m in _META_CHARSET_RE.finditer(head))
    return labels


def _decode_family(body: bytes, codecs_: Sequence[str]) -> tuple[str, str] | None:
    for codec in codecs_:
        text = _strict(body, codec)
        if text is not None:
            return text, codec
    return None


def _best_chinese(body: bytes) -> tuple[str, str, float] | None:
    """The better of the GB and Big5 strict decodings, by common-character ratio
    (GB wins ties: most pirate sites are mainland ones)."""
    best: tuple[str, str, float] | None = None
    for family in (_GB_CODECS, _BIG5_CODECS):
        decoded = _decode_family(body, family)
        if decoded is None:
            continue
        ratio = cjk_ratio(decoded[0])
        if best is None or ratio > best[2]:
            best = (decoded[0], decoded[1], ratio)
    return best


def decode_html(body: bytes, content_type_header: str | None = None) -> tuple[str, str]:
    """Decode a page to text; returns ``(text, codec_name)``.

    Order: BOM; declared charsets (HTTP header, then XML declaration and <meta>), each
    accepted only if it strict-decodes and is plausible; UTF-8; then detection that
    picks GB18030 or Big5 by common-character ratio, with charset_normalizer (biased
    to CJK candidates) for the rest.
    """
    if not body:
        return "", "utf-8"
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(codec, errors="replace"), codec

    utf8 = _strict(body, "utf-8")
    utf8_non_ascii = utf8 is not None and not utf8.isascii()
    for label in _declared_labels(body, content_type_header):
        codec = _codec_for_label(label)
        if codec is None:
            continue
        if codec == "utf-8":
            if utf8 is not None:
                return utf8, "utf-8"
            continue
        if utf8_non_ascii:
            # Legacy-encoded Chinese is practically never valid UTF-8 by accident.
            continue
        if codec == "cp1252" or codec not in _MULTIBYTE_NAMES:
            # Latin-1 decodes anything: reject the label if the bytes are clearly Chinese.
            chinese = _best_chinese(body)
            if chinese is not None and chinese[2] >= CJK_RATIO_THRESHOLD:
                continue
            decoded = _decode_family(body, _WESTERN_CODECS if codec == "cp1252" else (codec,))
            if decoded is not None:
                return decoded
            continue
        if codec in ("gb18030", "big5hkscs"):
            own, other = (
                (_GB_CODECS, _BIG5_CODECS) if codec == "gb18030" else (_BIG5_CODECS, _GB_CODECS)
            )
            decoded = _decode_family(body, own)
            if decoded is None:
                continue
            ratio = cjk_ratio(decoded[0])
            if ratio < CJK_RATIO_THRESHOLD:
                # GB and Big5 bytes decode as each other; a template copied across sites
                # often keeps the wrong label. Trust the text over the label.
                sibling = _decode_family(body, other)
                if sibling is not None:
                    sibling_ratio = cjk_ratio(sibling[0])
                    if sibling_ratio >= CJK_RATIO_THRESHOLD and sibling_ratio > ratio:
                        return sibling
            return decoded
        text = _strict(body, codec)
        if text is not None:
            return text, codec

    if utf8 is not None:
        return utf8, "utf-8"
    return _detect(body)


def _detect(body: bytes) -> tuple[str, str]:
    chinese = _best_chinese(body)
    if chinese is not None and chinese[2] >= CJK_RATIO_THRESHOLD:
        return chinese[0], chinese[1]
    # Almost clean: a stray byte or a cut multibyte character must not send a UTF-8 or
    # GBK page to statistical guessing (which may then pick a wrong family).
    for codec in ("utf-8", "gb18030", "big5hkscs"):
        lenient = body.decode(codec, errors="replace")
        if lenient.count("\ufffd") > max(2, len(lenient) // 500):
            continue
        if codec == "utf-8" or cjk_ratio(lenient) >= CJK_RATIO_THRESHOLD:
            return lenient, codec
    guess = None
    try:
        from charset_normalizer import from_bytes

        guess = from_bytes(
            body,
            cp_isolation=_DETECT_CANDIDATES,
        ).best()
    except Exception as exc:  # detection is best effort; never fail the crawl on it
        log.debug("charset_normalizer failed: %s", exc)
    if guess is not None:
        codec = _codec_for_label(guess.encoding) or guess.encoding
        if codec in ("gb18030", "big5hkscs") and chinese is not None:
            return chinese[0], chinese[1]
        text = _strict(body, codec)
        if text is None:
            text = body.decode(codec, errors="replace")
        return text, codec
    if chinese is not None:
        return chinese[0], chinese[1]
    # Nothing decodes cleanly: keep the reading with the fewest replacement characters.
    candidates = [(body.decode(c, errors="replace"), c) for c in ("utf-8", "gb18030", "big5hkscs")]
    return min(candidates, key=lambda tc: (tc[0].count("\ufffd"), -cjk_ratio(tc[0])))


# --------------------------------------------------------------------------- extraction

_XML_DECL_STR_RE = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TITLE_RE = re.compile(r"<title[^>]*>(.*?)</title", re.I | re.S)
_TAG_RE = re.compile(r"<[^>]*>")
_BLOCK_TAGS = tuple(
    [
        "p",
        "div",
        "br",
        "li",
        "tr",
        "td",
        "dd",
        "dt",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "blockquote",
        "pre",
    ]
)
_DROP_ALWAYS = ("script", "style", "noscript", "template", "svg", "iframe", "head")
_DROP_BOILERPLATE = ("nav", "footer", "header", "aside", "form")


def _normalise_text(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.replace("\r", "\n").split("\n"))
    return "\n".join(line for line in lines if line)


def _parse_html(markup: str) -> Any:
    from lxml import etree
    from lxml import html as lxml_html

    # lxml refuses str input that carries an encoding declaration, and control
    # characters are not allowed in its trees.
    cleaned = _CONTROL_RE.sub("", _XML_DECL_STR_RE.sub("", markup, count=1))
    if not cleaned.strip():
        return None
    try:
        return lxml_html.document_fromstring(cleaned)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None


def _html_title(markup: str, root: Any = None) -> str:
    if root is not None:
        try:
            found = root.findtext(".//title")
        except Exception:
            found = None
        if found and found.strip():
            return " ".join(found.split())
    match = _TITLE_RE.search(markup)
    if match:
        return " ".join(html_lib.unescape(_TAG_RE.sub("", match.group(1))).split())
    return ""


def _fallback_text(markup: str, root: Any) -> str:
    """Plain lxml text: block elements become lines; boilerplate dropped if that leaves
    anything (recall matters more than precision here)."""
    if root is None:
        return _normalise_text(html_lib.unescape(_TAG_RE.sub("\n", markup)))
    for element in list(root.iter(*_DROP_ALWAYS)):
        if element.getparent() is not None:
            element.drop_tree()
    for element in root.iter(*_BLOCK_TAGS):
        element.tail = "\n" + (element.tail or "")
    full = _normalise_text(root.text_content())
    for element in list(root.iter(*_DROP_BOILERPLATE)):
        if element.getparent() is not None:
            element.drop_tree()
    trimmed = _normalise_text(root.text_content())
    if trimmed or full:
        return trimmed or full
    # lxml gave nothing (too deep a tree, everything swallowed by an unclosed <title>):
    # stripping the tags still recovers the words.
    return _normalise_text(html_lib.unescape(_TAG_RE.sub("\n", markup)))


def extract(html: str, url: str) -> tuple[str, str]:
    """Main content of a page: ``(title, main_text)``. Never raises on bad markup."""
    if not html or not html.strip():
        return "", ""
    title = text = ""
    try:
        import trafilatura

        doc = trafilatura.bare_extraction(
            html,
            url=url or None,
            favor_recall=True,
            include_comments=False,
            with_metadata=True,
        )
    except Exception as exc:  # a third-party parser on hostile markup: never fatal
        log.debug("trafilatura failed on %s: %s", url, exc)
        doc = None
    if doc is not None:
        if isinstance(doc, dict):
            title, text = doc.get("title") or "", doc.get("text") or ""
        else:
            title, text = getattr(doc, "title", "") or "", getattr(doc, "text", "") or ""
    title = " ".join(title.split())
    text = text.strip()
    if title and text:
        return title, text
    try:
        root = _parse_html(html)
    except Exception as exc:
        log.debug("lxml failed on %s: %s", url, exc)
        root = None
    if not title:
        title = _html_title(html, root)
    if not text:
        try:
            text = _fallback_text(html, root)
        except Exception as exc:
            log.debug("fallback extraction failed on %s: %s", url, exc)
            text = _normalise_text(html_lib.unescape(_TAG_RE.sub("\n", html)))
    return title, text
