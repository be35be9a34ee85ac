"""Web-search providers: one interface, three adapters, quotas, a cache and backoff.

- ``SearxngProvider``: a self-hosted SearXNG (``YINJI_SEARCH_URL``), its JSON API
  ``GET {url}?q=QUERY&format=json`` answering ``{"results": [{"url", "title", "content"}]}``.
- ``GoogleProvider``: Google Programmable Search JSON API (``YINJI_GOOGLE_API_KEY`` and
  ``YINJI_GOOGLE_CX``; ``GET .../customsearch/v1?key=&cx=&q=`` answering ``{"items":
  [{"link", "title", "snippet"}]}``).
- ``BraveProvider``: Brave Search API (``YINJI_BRAVE_API_KEY``, header
  ``X-Subscription-Token``; ``{"web": {"results": [{"url", "title", "description"}]}}``).

The endpoints of Google and Brave can be moved (``YINJI_GOOGLE_URL``,
``YINJI_BRAVE_URL``): tests and demos point them at a local stand-in that speaks the same
JSON. ``Searcher`` wraps the configured providers with what paid APIs need: a daily
quota per provider (``YINJI_SEARCH_QUOTA_<NAME>``, queries per UTC day, shared by every
worker through Redis), a cache of answers (``YINJI_SEARCH_CACHE_DAYS``, default 7: the
same query is not paid for twice), and backoff on 429 (``Retry-After`` honoured up to
``max_wait`` seconds once, then the provider rests until that time and says so).
Every failure is a ``ProviderError`` naming the provider and the reason; the caller
notes it and goes on with the other providers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from tracker.discovery.keys import DiscoveryKeys

if TYPE_CHECKING:
    from tracker.engines.base import RedisClient

__all__ = [
    "BraveProvider",
    "GoogleProvider",
    "ProviderError",
    "SearchHit",
    "SearchProvider",
    "Searcher",
    "SearxngProvider",
    "providers_from_env",
]

DEFAULT_QUOTAS = {"searxng": 5000, "google": 100, "brave": 2000}


@dataclass(frozen=True)
class SearchHit:
    """One search result: where it points and what the engine said about it."""

    url: str
    title: str
    snippet: str
    provider: str
    query: str


class ProviderError(Exception):
    """A provider failed for one query (or is resting): ``provider`` and the reason."""

    def __init__(self, provider: str, reason: str, *, retry_after: float | None = None) -> None:
        super().__init__(f"{provider}: {reason}")
        self.provider = provider
        self.reason = reason
        self.retry_after = retry_after


class SearchProvider(Protocol):
    """What discovery needs of a search engine."""

    name: str

    def search(self, query: str, *, count: int = 10) -> list[SearchHit]:
        """The results of ``query``; ``ProviderError`` when there are none to give."""
        ...


HttpGet = Callable[[str, dict[str, str], float], tuple[int, dict[str, str], bytes]]


def _http_get(
    url: str, headers: dict[str, str], timeout: float
) -> tuple[int, dict[str, str], bytes]:
    """GET with urllib3: (status, lower-case headers, body at most 4 MiB), the whole
    request within ``timeout`` seconds (a server dribbling a byte a second cannot hold
    it longer: each read waits at most what is left, ``TimeoutError`` past it)."""
    import urllib3

    limit = 4 * 1024 * 1024
    deadline = time.monotonic() + timeout
    http = _pool()
    try:
        resp = http.request(
            "GET",
            url,
            headers=headers,
            timeout=urllib3.Timeout(connect=min(timeout, 5.0), read=timeout),
            retries=False,
            preload_content=False,
        )
    except urllib3.exceptions.HTTPError as exc:
        raise OSError(str(exc) or type(exc).__name__) from None
    chunks: list[bytes] = []
    size = 0
    try:
        sock = getattr(getattr(resp, "connection", None), "sock", None)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no whole answer within {timeout:g} s")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.settimeout(max(0.01, left))
            try:
                chunk = resp.read1(65536, decode_content=True)
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"no whole answer within {timeout:g} s") from None
                raise OSError(str(exc) or type(exc).__name__) from None
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise OSError("answer larger than 4 MiB")
    finally:
        resp.release_conn()
    return resp.status, {k.lower(): v for k, v in resp.headers.items()}, b"".join(chunks)


_POOL: Any = None


def _pool() -> Any:
    global _POOL
    if _POOL is None:
        import urllib3

        _POOL = urllib3.PoolManager(num_pools=8, maxsize=4)
    return _POOL


class _JsonProvider:
    """Shared transport: GET a URL, check the status, parse JSON, map the results."""

    name = "?"

    def __init__(self, *, timeout: float = 10.0, http_get: HttpGet | None = None) -> None:
        self.timeout = timeout
        self._get = http_get or _http_get

    def _fetch_json(self, url: str, headers: dict[str, str] | None = None) -> Any:
        hdrs = {"Accept": "application/json", "User-Agent": "YinjiBot/0.1 (+copyright tracking)"}
        hdrs.update(headers or {})
        try:
            status, resp_headers, body = self._get(url, hdrs, self.timeout)
        except TimeoutError:
            raise ProviderError(self.name, f"no answer within {self.timeout:g} s") from None
        except OSError as exc:
            reason = str(exc) or type(exc).__name__
            if "timed out" in reason.lower() or "timeout" in reason.lower():
                reason = f"no answer within {self.timeout:g} s"
            raise ProviderError(self.name, f"unreachable: {reason}") from None
        if status == 429:
            raise ProviderError(
                self.name, "429 too many requests", retry_after=_retry_after(resp_headers)
            )
        if status >= 400:
            raise ProviderError(self.name, f"HTTP {status}")
        try:
            data = json.loads(body.decode("utf-8"))
        except RecursionError:
            raise ProviderError(self.name, "the JSON answer is nested too deep to read") from None
        except (UnicodeDecodeError, ValueError):
            start = body[:60].decode("utf-8", "replace").strip()
            raise ProviderError(self.name, f"the answer is not JSON (starts {start!r})") from None
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except RecursionError:
            raise ProviderError(self.name, "the JSON answer is nested too deep to read") from None
        except UnicodeEncodeError:
            raise ProviderError(
                self.name, "the JSON answer holds a lone surrogate (not valid Unicode)"
            ) from None
        return data

    def _hits(
        self, query: str, items: Any, url_key: str, snippet_key: str, count: int
    ) -> list[SearchHit]:
        if not isinstance(items, list):
            raise ProviderError(self.name, "the JSON answer has no result list")
        hits: list[SearchHit] = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get(url_key), str):
                continue
            hits.append(
                SearchHit(
                    url=item[url_key],
                    title=str(item.get("title") or ""),
                    snippet=str(item.get(snippet_key) or ""),
                    provider=self.name,
                    query=query,
                )
            )
        return hits[:count]


class SearxngProvider(_JsonProvider):
    """A SearXNG instance's JSON API (the instance must allow ``format=json``)."""

    name = "searxng"

    def __init__(self, url: str, *, timeout: float = 10.0, http_get: HttpGet | None = None) -> None:
        super().__init__(timeout=timeout, http_get=http_get)
        self.url = url

    def search(self, query: str, *, count: int = 10) -> list[SearchHit]:
        sep = "&" if "?" in self.url else "?"
        data = self._fetch_json(f"{self.url}{sep}{urlencode({'q': query, 'format': 'json'})}")
        items = data.get("results") if isinstance(data, dict) else None
        return self._hits(query, items, "url", "content", count)


class GoogleProvider(_JsonProvider):
    """Google Programmable Search (Custom Search JSON API): 100 queries a day free."""

    name = "google"
    DEFAULT_URL = "https://www.googleapis.com/customsearch/v1"

    def __init__(
        self,
        key: str,
        cx: str,
        url: str | None = None,
        *,
        timeout: float = 10.0,
        http_get: HttpGet | None = None,
    ) -> None:
        super().__init__(timeout=timeout, http_get=http_get)
        self.key, self.cx, self.url = key, cx, url or self.DEFAULT_URL

    def search(self, query: str, *, count: int = 10) -> list[SearchHit]:
        params = {"key": self.key, "cx": self.cx, "q": query, "num": str(min(count, 10))}
        data = self._fetch_json(f"{self.url}?{urlencode(params)}")
        if not isinstance(data, dict):
            raise ProviderError(self.name, "the JSON answer is not an object")
        return self._hits(query, data.get("items", []), "link", "snippet", count)


class BraveProvider(_JsonProvider):
    """Brave Search API (web search)."""

    name = "brave"
    DEFAULT_URL = "https://api.search.brave.com/res/v1/web/search"

    def __init__(
        self,
        key: str,
        url: str | None = None,
        *,
        timeout: float = 10.0,
        http_get: HttpGet | None = None,
    ) -> None:
        super().__init__(timeout=timeout, http_get=http_get)
        self.key, self.url = key, url or self.DEFAULT_URL

    def search(self, query: str, *, count: int = 10) -> list[SearchHit]:
        params = {"q": query, "count": str(min(count, 20))}
        data = self._fetch_json(
            f"{self.url}?{urlencode(params)}", {"X-Subscription-Token": self.key}
        )
        web = data.get("web") if isinstance(data, dict) else None
        items = web.get("results", []) if isinstance(web, dict) else []
        return self._hits(query, items, "url", "description", count)


def _retry_after(headers: dict[str, str]) -> float | None:
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, (when - datetime.now(UTC)).total_seconds())


def providers_from_env(env: dict[str, str] | None = None) -> list[SearchProvider]:
    """The providers whose settings are present in the environment."""
    env = dict(os.environ) if env is None else env
    out: list[SearchProvider] = []
    if env.get("YINJI_SEARCH_URL"):
        out.append(SearxngProvider(env["YINJI_SEARCH_URL"]))
    if env.get("YINJI_GOOGLE_API_KEY") and env.get("YINJI_GOOGLE_CX"):
        out.append(
            GoogleProvider(
                env["YINJI_GOOGLE_API_KEY"], env["YINJI_GOOGLE_CX"], env.get("YINJI_GOOGLE_URL")
            )
        )
    if env.get("YINJI_BRAVE_API_KEY"):
        out.append(BraveProvider(env["YINJI_BRAVE_API_KEY"], env.get("YINJI_BRAVE_URL")))
    return out


def quota_of(name: str, env: dict[str, str] | None = None) -> int:
    """Queries a UTC day for provider ``name`` (``YINJI_SEARCH_QUOTA_<NAME>``)."""
    env = dict(os.environ) if env is None else env
    raw = env.get(f"YINJI_SEARCH_QUOTA_{name.upper()}")
    if raw is None:
        return DEFAULT_QUOTAS.get(name, 100)
    try:
        value = int(raw)
    except ValueError:
        from tracker.plumbing.config import SettingError

        raise SettingError(
            f"YINJI_SEARCH_QUOTA_{name.upper()} must be a whole number, got {raw!r}"
        ) from None
    return max(0, value)


@dataclass
class SearchOutcome:
    """What one query to one provider gave: hits, or the error; and whether it cost."""

    provider: str
    query: str
    hits: list[SearchHit]
    cached: bool = False
    error: str = ""


class Searcher:
    """The configured providers behind quotas, a cache and 429 backoff (state in Redis)."""

    def __init__(
        self,
        providers: Sequence[SearchProvider],
        redis: RedisClient,
        keys: DiscoveryKeys,
        *,
        quotas: dict[str, int] | None = None,
        cache_seconds: int = 7 * 86400,
        max_wait: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.providers = list(providers)
        self.redis = redis
        self.keys = keys
        self.quotas = {p.name: (quotas or {}).get(p.name, quota_of(p.name)) for p in providers}
        self.cache_seconds = cache_seconds
        self.max_wait = max_wait
        self._sleep = sleep

    def _cache_key(self, provider: str, query: str) -> str:
        digest = hashlib.sha1(query.encode("utf-8")).hexdigest()
        return self.keys.key(f"cache:{provider}:{digest}")

    def used_today(self, provider: str) -> int:
        day = datetime.now(UTC).strftime("%Y%m%d")
        return int(self.redis.get(self.keys.key(f"quota:{provider}:{day}")) or 0)

    def search(self, provider: SearchProvider, query: str, *, count: int = 10) -> SearchOutcome:
        """Ask ``provider`` (the cache first; a cached answer costs no quota)."""
        name = provider.name
        cache_key = self._cache_key(name, query)
        cached = self.redis.get(cache_key)
        if cached is not None:
            found = [SearchHit(**h) for h in json.loads(cached)]
            return SearchOutcome(name, query, found, cached=True)
        rest_key = self.keys.key(f"rest:{name}")
        resting = self.redis.get(rest_key)
        if resting is not None and float(resting) > time.time():
            until = datetime.fromtimestamp(float(resting), UTC).strftime("%H:%M:%S")
            return SearchOutcome(
                name, query, [], error=f"{name}: resting after 429 until {until} UTC"
            )
        day = datetime.now(UTC).strftime("%Y%m%d")
        quota_key = self.keys.key(f"quota:{name}:{day}")
        used = int(self.redis.incr(quota_key))
        self.redis.expire(quota_key, 2 * 86400)
        if used > self.quotas[name]:
            return SearchOutcome(
                name, query, [], error=f"{name}: daily quota of {self.quotas[name]} queries used"
            )
        hits: list[SearchHit] = []
        for attempt in (0, 1):
            try:
                hits = provider.search(query, count=count)
                break
            except (RecursionError, UnicodeError, ValueError, TypeError, OSError) as exc:
                # A provider of our own making that broke on an answer: its one line.
                return SearchOutcome(name, query, [], error=f"{name}: {type(exc).__name__}: {exc}")
            except ProviderError as exc:
                wait = exc.retry_after if exc.retry_after is not None else 2.0
                if exc.reason.startswith("429") and attempt == 0 and wait <= self.max_wait:
                    self._sleep(wait)
                    continue
                if exc.reason.startswith("429"):
                    self.redis.set(rest_key, str(time.time() + max(wait, 60.0)), ex=86400)
                return SearchOutcome(name, query, [], error=str(exc))
        self.redis.set(
            cache_key,
            json.dumps([asdict(h) for h in hits], ensure_ascii=False),
            ex=max(1, self.cache_seconds),
        )
        return SearchOutcome(name, query, hits)
