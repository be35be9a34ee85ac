"""The SSRF guard: turn a URL into a validated ``Target`` before any connection is made.

The URL must pass ``tracker.common.rules.check_url`` (only http/https, no credentials); the
host is resolved once per hop and refused if ANY address is non-public, and the
connection then goes to that validated IP (with the original Host header and SNI), so a
DNS answer cannot change between the check and the connect. The fetcher calls
``prepare`` again on every redirect hop.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from tracker.common.rules import check_url
from tracker.crawler.config import CrawlerConfig, IPAddress
from tracker.crawler.errors import Blocked, InvalidURL, Timeout, Unreachable
from tracker.crawler.ratelimit import Deadline

DEFAULT_PORTS = {"http": 80, "https": 443}

_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_QUERY_SAFE = _PATH_SAFE + "?"
_HOSTNAME_RE = re.compile(
    r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$"
)


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
class Target:
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


def prepare(url: str, config: CrawlerConfig, deadline: Deadline) -> Target:
    """Validate ``url`` and resolve its host; raise ``InvalidURL``/``Blocked``.

    The URL's shape is ``tracker.common.rules.check_url`` (the one URL rule: http/https with a
    host, no credentials, no control characters, at most ``MAX_URL_LENGTH``); its
    ``ValueError`` becomes ``InvalidURL``. The guard adds what only a fetcher needs: a
    valid host name and port, and the address check.
    """
    try:
        checked = check_url(url)
    except ValueError as exc:
        raise InvalidURL(url, str(exc)) from None
    parts = urlsplit(checked)
    port = parts.port  # check_url has parsed it
    scheme = parts.scheme.lower()
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
        addresses = resolve(normalised, host_ascii, port, config, deadline)
    validate_addresses(normalised, host if literal is None else "", port, addresses, config)
    return Target(
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


def resolve(
    url: str, host: str, port: int, config: CrawlerConfig, deadline: Deadline
) -> tuple[IPAddress, ...]:
    """Every address of ``host`` (config.resolver or getaddrinfo), under the deadline."""
    resolver = config.resolver

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


def validate_addresses(
    url: str, host: str, port: int, addresses: Sequence[IPAddress], config: CrawlerConfig
) -> None:
    """Raise ``Blocked`` when ANY address is non-public (unless the config allows it)."""
    if config.allow_private:
        return
    hook = config.allow_address
    for addr in addresses:
        if is_public_address(addr):
            continue
        if hook is not None and hook(addr, port):
            continue
        # ANY bad answer refuses: we must not leave the choice of address to luck.
        detail = (
            f"{host} resolves to non-public address {addr}" if host else f"{addr} is not public"
        )
        # Say how to allow it (a local test site, an internal mirror): the one switch.
        detail += "; set YINJI_ALLOW_PRIVATE_URLS=1 to crawl private and loopback addresses"
        raise Blocked(url, detail)


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
