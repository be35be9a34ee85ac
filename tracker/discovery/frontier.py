"""The crawl frontier in Redis, shared by every worker and surviving restarts.

One queue per host (a sorted set, score = priority, lower first) and a sorted set of
hosts by the time each may next be asked (the per-host politeness clock). ``claim``
runs in one Lua script: it takes back leases whose worker died (their URLs go back to
their queue), picks among the hosts whose clock has passed the one whose best URL has
the best priority and moves that URL to the leases (with a deadline). A host has one
request in flight at a time: it is not handed out again until that URL is done (or
given back), and then only after its interval (``set_interval``: the configured rate,
or robots.txt's Crawl-delay) counted from the end of that fetch. So two requests to one
host are always at least the interval apart where the server sees them, however late a
thread sends its request; and the clock is Redis's own (``TIME``), so workers on many
machines with skewed clocks share it.

A URL enters the frontier once (``seen``): ``add`` is one Lua script that checks and
records it, so two workers that find the same link queue it once. ``done`` ends a lease;
a URL is fetched again only through the revisit schedule (``schedule_revisit`` /
``requeue_due``). A worker killed mid-fetch loses nothing: its lease runs out and the
URL is claimed again.

Keys (``DiscoveryKeys``: all under one hash tag, so the scripts are cluster-safe; the
per-host queues are built inside the scripts from that same tag, i.e. the same slot):
``q:HOST``, ``hosts``, ``clock``, ``interval``, ``leased``, ``entry``, ``seen``,
``patterns``, ``revisit``, ``stats``, ``body`` (pages fetched and not yet checked),
``ready`` (those of them whose worker died).

A page is recorded the moment its body arrives (``fetched``: the page in ``body``, its
host's interval started), before it is checked; ``done`` ends it. A worker killed
between the two leaves the page in ``body`` under an expired lease: ``claim`` moves it
to ``ready`` and hands it out (``Claim.stored``) to be checked from the stored body, so
nothing whose body arrived is fetched twice (only a request in the air at the kill is
sent again).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, cast

from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.urls import TrapDetector, host_of, normalize_url, url_pattern

if TYPE_CHECKING:
    from tracker.engines.base import RedisClient

__all__ = ["Claim", "Frontier", "FrontierItem", "Link"]


@dataclass
class FrontierItem:
    """A URL waiting to be fetched, with why it is there."""

    url: str
    source: str  # the provider, site or "crawl" that found it
    priority: float = 10.0  # lower first
    kind: str = "page"  # page | index (a book's chapter list) | search (a site search)
    depth: int = 0  # links followed from a seed
    chain: int = 0  # links followed within one URL pattern (trap detection)
    parent: str = ""
    works: list[str] = field(default_factory=list)  # works the seed was found for
    hint: str = ""  # what a site search looked for (the work's title)
    run: str = ""  # the run that queued it
    attempts: int = 0  # transient failures so far
    fetched: bool = False  # its fetch ended (``Frontier.fetched``): the host is free

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str | bytes) -> FrontierItem:
        data = json.loads(raw)
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


_ADD = """
local tag, url, host, pri, entry = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
if redis.call('SADD', tag .. ':seen', url) == 0 then
  redis.call('HINCRBY', tag .. ':stats', 'duplicates', 1)
  return 0
end
redis.call('ZADD', tag .. ':q:' .. host, pri, url)
redis.call('HSET', tag .. ':entry', url, entry)
if not redis.call('ZSCORE', tag .. ':hosts', host) then
  local clock = tonumber(redis.call('HGET', tag .. ':clock', host) or '0')
  redis.call('ZADD', tag .. ':hosts', clock, host)
end
redis.call('HINCRBY', tag .. ':stats', 'added', 1)
return 1
"""

_ADD_MANY = """
-- ARGV: tag, seen-before count, traps count, then per URL: url, host, priority, entry,
-- pattern. Each URL is queued unless seen (as ``_ADD``); its pattern counted when it is.
local tag = ARGV[1]
local out = {}
local dup = tonumber(ARGV[2])
redis.call('HINCRBY', tag .. ':stats', 'traps', tonumber(ARGV[3]))
for i = 4, #ARGV, 5 do
  local url, host, pri = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local entry, pattern = ARGV[i + 3], ARGV[i + 4]
  if redis.call('SADD', tag .. ':seen', url) == 0 then
    dup = dup + 1
    out[#out + 1] = 0
  else
    redis.call('ZADD', tag .. ':q:' .. host, pri, url)
    redis.call('HSET', tag .. ':entry', url, entry)
    if not redis.call('ZSCORE', tag .. ':hosts', host) then
      local clock = tonumber(redis.call('HGET', tag .. ':clock', host) or '0')
      redis.call('ZADD', tag .. ':hosts', clock, host)
    end
    redis.call('HINCRBY', tag .. ':patterns', pattern, 1)
    redis.call('HINCRBY', tag .. ':stats', 'added', 1)
    out[#out + 1] = 1
  end
end
redis.call('HINCRBY', tag .. ':stats', 'duplicates', dup)
return out
"""

_REQUEUE = """
local tag, url, host, pri = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
redis.call('ZADD', tag .. ':q:' .. host, pri, url)
if not redis.call('ZSCORE', tag .. ':hosts', host) then
  local clock = tonumber(redis.call('HGET', tag .. ':clock', host) or '0')
  redis.call('ZADD', tag .. ':hosts', clock, host)
end
return 1
"""

_RELEASE = """
local tag, url, host, default_iv = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local iv = tonumber(redis.call('HGET', tag .. ':interval', host) or default_iv)
redis.call('ZREM', tag .. ':leased', url)
redis.call('HSET', tag .. ':clock', host, now + iv)
if redis.call('ZCARD', tag .. ':q:' .. host) > 0 then
  redis.call('ZADD', tag .. ':hosts', now + iv, host)
else
  redis.call('ZREM', tag .. ':hosts', host)
end
return 1
"""

_CLAIM = """
local tag, lease_ms = ARGV[1], tonumber(ARGV[2])
local default_iv, scan = tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function enqueue(url, pri)
  local host = string.match(url, '^%a+://([^/?#]+)') or ''
  host = string.lower(host)
  redis.call('ZADD', tag .. ':q:' .. host, pri, url)
  if not redis.call('ZSCORE', tag .. ':hosts', host) then
    local clock = tonumber(redis.call('HGET', tag .. ':clock', host) or '0')
    redis.call('ZADD', tag .. ':hosts', clock, host)
  end
end
local expired = redis.call('ZRANGEBYSCORE', tag .. ':leased', '-inf', now, 'LIMIT', 0, 100)
for _, u in ipairs(expired) do
  redis.call('ZREM', tag .. ':leased', u)
  if redis.call('HEXISTS', tag .. ':body', u) == 1 then
    -- Its body arrived before its worker died: check the stored page, never fetch again.
    redis.call('RPUSH', tag .. ':ready', u)
    redis.call('HINCRBY', tag .. ':stats', 'recovered', 1)
  else
    local raw = redis.call('HGET', tag .. ':entry', u)
    local pri = 10
    if raw then pri = tonumber(cjson.decode(raw)['priority']) or 10 end
    enqueue(u, pri)
    redis.call('HINCRBY', tag .. ':stats', 'lease_expired', 1)
  end
end
local stored = redis.call('LPOP', tag .. ':ready')
if stored then  -- a page fetched by a worker that died: checked from its stored body
  redis.call('ZADD', tag .. ':leased', now + lease_ms, stored)
  return {stored, redis.call('HGET', tag .. ':entry', stored) or '', 0, 0,
          redis.call('HGET', tag .. ':body', stored) or ''}
end
local ready = redis.call('ZRANGEBYSCORE', tag .. ':hosts', '-inf', now, 'LIMIT', 0, scan)
local best_host, best_url, best_pri = nil, nil, nil
for _, h in ipairs(ready) do
  local head = redis.call('ZRANGE', tag .. ':q:' .. h, 0, 0, 'WITHSCORES')
  if #head == 0 then
    redis.call('ZREM', tag .. ':hosts', h)
  else
    local pri = tonumber(head[2])
    if best_pri == nil or pri < best_pri then
      best_host, best_url, best_pri = h, head[1], pri
    end
  end
end
if best_url == nil then
  local first = redis.call('ZRANGE', tag .. ':hosts', 0, 0, 'WITHSCORES')
  if #first == 0 then
    return {'', '', -1, redis.call('ZCARD', tag .. ':leased'), ''}
  end
  return {'', '', math.max(1, tonumber(first[2]) - now), redis.call('ZCARD', tag .. ':leased'), ''}
end
redis.call('ZREM', tag .. ':q:' .. best_host, best_url)
-- One request in flight per host: the host waits until this one is done (``_RELEASE``
-- sets its clock to the end of the fetch plus its interval) or its lease runs out.
redis.call('HSET', tag .. ':clock', best_host, now + lease_ms)
redis.call('ZADD', tag .. ':hosts', now + lease_ms, best_host)
redis.call('ZADD', tag .. ':leased', now + lease_ms, best_url)
redis.call('HINCRBY', tag .. ':stats', 'claimed', 1)
return {best_url, redis.call('HGET', tag .. ':entry', best_url) or '', 0, 0, ''}
"""


_FETCHED = """
local tag, url, host, default_iv, record = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local iv = tonumber(redis.call('HGET', tag .. ':interval', host) or default_iv)
if record ~= '' then
  redis.call('HSET', tag .. ':body', url, record)
  redis.call('HINCRBY', tag .. ':stats', 'fetched', 1)
end
redis.call('HSET', tag .. ':clock', host, now + iv)
if redis.call('ZCARD', tag .. ':q:' .. host) > 0 then
  redis.call('ZADD', tag .. ':hosts', now + iv, host)
else
  redis.call('ZREM', tag .. ':hosts', host)
end
return 1
"""


@dataclass(frozen=True)
class Link:
    """A link to queue from a page (``Frontier.add_links``)."""

    url: str
    priority: float
    kind: str = "page"
    depth: int | None = None  # None: one below the page it was found on


@dataclass(frozen=True)
class Claim:
    """What ``claim`` gave: an item, or how long to wait (``wait`` seconds; ``empty``
    when no URL is queued at all, ``leased`` URLs still being fetched elsewhere)."""

    item: FrontierItem | None
    stored: str = ""  # the page its dead worker fetched (``Page.to_record``): check this
    wait: float = 0.0
    empty: bool = False
    leased: int = 0


class Frontier:
    """The shared frontier (see the module docstring)."""

    def __init__(
        self,
        redis: RedisClient,
        keys: DiscoveryKeys | None = None,
        *,
        interval: float = 1.0,
        lease: float = 300.0,
        traps: TrapDetector | None = None,
    ) -> None:
        # Typed loosely inside: redis-py's stubs of RedisCluster lack register_script.
        self.redis: Any = cast(Any, redis)
        self.keys = keys or DiscoveryKeys()
        self.interval = interval
        self.lease = lease
        self.traps = traps or TrapDetector()
        self._add = self.redis.register_script(_ADD)
        self._add_many = self.redis.register_script(_ADD_MANY)
        self._requeue = self.redis.register_script(_REQUEUE)
        self._claim = self.redis.register_script(_CLAIM)
        self._release = self.redis.register_script(_RELEASE)
        self._fetched = self.redis.register_script(_FETCHED)

    # -- keys --
    def k(self, suffix: str) -> str:
        return self.keys.key(suffix)

    def _run(self, script: Any, args: list[Any]) -> Any:
        # Every key is built from the tag inside the script; the tag's queue key is
        # named so cluster clients route the script to the tag's slot.
        return script(keys=[self.k("hosts")], args=args)

    # -- writing --
    def set_interval(self, host: str, seconds: float) -> None:
        """The politeness interval of ``host`` (seconds between two requests)."""
        self.redis.hset(self.k("interval"), host.lower(), int(seconds * 1000))

    def add(self, item: FrontierItem) -> bool:
        """Queue ``item`` unless its (normalised) URL was ever queued; True if queued."""
        try:
            item.url = normalize_url(item.url)
        except ValueError:
            return False
        host = host_of(item.url)
        return bool(
            self._run(
                self._add,
                [self.keys.tag, item.url, host, repr(float(item.priority)), item.to_json()],
            )
        )

    def add_link(
        self,
        parent: FrontierItem,
        url: str,
        *,
        priority: float,
        kind: str = "page",
        depth: int | None = None,
    ) -> str:
        """Queue a link found on ``parent``'s page: "queued", "seen", "trap: REASON"
        or "invalid". ``depth``: the link's depth (default: one below ``parent``).
        One link through ``add_links``: the rules are written once."""
        return self.add_links(parent, [Link(url, priority, kind, depth)])[0]

    def add_links(self, parent: FrontierItem, links: Sequence[Link]) -> list[str]:
        """``add_link`` for every link of one page, in two round trips to Redis (one
        read of what is seen and the patterns' counts, one script that queues the rest):
        a verdict per link, in order."""
        verdicts = ["invalid"] * len(links)
        valid: list[tuple[int, str, str]] = []  # index, normalised URL, pattern
        for i, link in enumerate(links):
            try:
                norm = normalize_url(link.url)
            except ValueError:
                continue
            valid.append((i, norm, url_pattern(norm)))
        if not valid:
            return verdicts
        pipe = self.redis.pipeline(transaction=False)
        for _, norm, pattern in valid:
            pipe.sismember(self.k("seen"), norm)
            pipe.hget(self.k("patterns"), pattern)
        answers = pipe.execute()
        args: list[Any] = []
        pending: list[int] = []
        batch_urls: set[str] = set()  # queued by this very page
        batch_patterns: dict[str, int] = {}
        seen = traps = 0
        for n, (i, norm, pattern) in enumerate(valid):
            if answers[2 * n] or norm in batch_urls:
                verdicts[i] = "seen"
                seen += 1
                continue
            link = links[i]
            count = int(answers[2 * n + 1] or 0) + batch_patterns.get(pattern, 0)
            verdict = self.traps.judge(
                norm, parent=parent.url, parent_chain=parent.chain, pattern_count=count
            )
            if verdict.trap:
                verdicts[i] = f"trap: {verdict.reason}"
                traps += 1
                continue
            batch_urls.add(norm)
            batch_patterns[pattern] = batch_patterns.get(pattern, 0) + 1
            child = FrontierItem(
                url=norm,
                source=parent.source,
                priority=link.priority,
                kind=link.kind,
                depth=parent.depth + 1 if link.depth is None else link.depth,
                chain=verdict.chain,
                parent=parent.url,
                works=list(parent.works),
                hint=parent.hint,
                run=parent.run,
            )
            args += [norm, host_of(norm), repr(float(link.priority)), child.to_json(), pattern]
            pending.append(i)
        if not pending and not seen and not traps:
            return verdicts
        added = self._run(self._add_many, [self.keys.tag, seen, traps, *args])
        for i, ok in zip(pending, added, strict=True):
            verdicts[i] = "queued" if int(ok) else "seen"
        return verdicts

    def claim(self, *, scan: int = 64) -> Claim:
        """The next URL some host may be asked for now (see the module docstring)."""
        url, raw, wait_ms, leased, record = self._run(
            self._claim,
            [self.keys.tag, int(self.lease * 1000), int(self.interval * 1000), scan],
        )
        if isinstance(url, bytes):
            url = url.decode()
        if url:
            item = FrontierItem.from_json(raw) if raw else FrontierItem(url=url, source="crawl")
            if record:  # fetched by a worker that died before the check: not fetched again
                item.fetched = True
                text = record.decode() if isinstance(record, bytes) else record
                return Claim(item, stored=text)
            return Claim(item)
        wait = int(wait_ms)
        return Claim(None, wait=max(wait, 0) / 1000, empty=wait < 0, leased=int(leased))

    def fetched(self, item: FrontierItem, record: str | None) -> None:
        """The fetch of ``item`` ended: its host's interval starts now (Redis's clock),
        and its page (``Page.to_record``; None for a failed fetch) is kept until
        ``done``. The lease stays: if this worker dies before ``done``, the lease runs
        out and ``claim`` hands the stored page out to be checked, so a page
        whose body arrived is never fetched again."""
        host = host_of(item.url)
        args = [self.keys.tag, item.url, host, int(self.interval * 1000), record or ""]
        self._run(self._fetched, args)
        item.fetched = True

    def done(self, item: FrontierItem, *, failed: bool = False) -> None:
        """End ``item``'s lease: fetched and checked (or failed for good). It stays
        seen. Its host is freed here unless ``fetched`` did it already."""
        if not item.fetched:
            self._free(item.url)
        pipe = self.redis.pipeline(transaction=True)  # the page and its lease go together
        if item.fetched:
            pipe.zrem(self.k("leased"), item.url)
        pipe.hdel(self.k("entry"), item.url)
        pipe.hdel(self.k("body"), item.url)
        pipe.hincrby(self.k("stats"), "failed" if failed else "done", 1)
        pipe.execute()

    def _free(self, url: str) -> None:
        """End ``url``'s lease and start its host's interval now (Redis's clock)."""
        self._run(self._release, [self.keys.tag, url, host_of(url), int(self.interval * 1000)])

    def retry(self, item: FrontierItem, *, penalty: float = 5.0) -> None:
        """A transient failure: back into its host's queue, a little later in line."""
        item.priority += penalty
        item.fetched = False
        self.redis.hset(self.k("entry"), item.url, item.to_json())
        self._run(self._requeue, [self.keys.tag, item.url, host_of(item.url), repr(item.priority)])
        self._free(item.url)

    def schedule_revisit(self, item: FrontierItem, after_seconds: float) -> None:
        """Fetch ``item`` again after ``after_seconds`` (``requeue_due`` brings it back)."""
        import time

        self.redis.hset(self.k("revisit_entry"), item.url, item.to_json())
        self.redis.zadd(self.k("revisit"), {item.url: time.time() + after_seconds})

    def requeue_due(self, *, limit: int = 1000) -> int:
        """Put the URLs whose revisit is due back into their queues; how many."""
        import time

        due = self.redis.zrangebyscore(self.k("revisit"), "-inf", time.time(), start=0, num=limit)
        n = 0
        for raw_url in due:
            url = raw_url.decode() if isinstance(raw_url, bytes) else raw_url
            raw = self.redis.hget(self.k("revisit_entry"), url)
            item = FrontierItem.from_json(raw) if raw else FrontierItem(url=url, source="revisit")
            self.redis.hset(self.k("entry"), url, item.to_json())
            self._run(self._requeue, [self.keys.tag, url, host_of(url), repr(item.priority)])
            self.redis.zrem(self.k("revisit"), url)
            self.redis.hdel(self.k("revisit_entry"), url)
            n += 1
        return n

    # -- reading --
    def stats(self) -> dict[str, int]:
        raw = self.redis.hgetall(self.k("stats"))
        out = {(k.decode() if isinstance(k, bytes) else k): int(v) for k, v in raw.items()}
        out["queued"] = self.queued()
        out["leased"] = int(self.redis.zcard(self.k("leased")))
        out["seen"] = int(self.redis.scard(self.k("seen")))
        out["stored"] = int(self.redis.hlen(self.k("body")))  # fetched, not yet checked
        return out

    def queued(self) -> int:
        hosts = self.redis.zrange(self.k("hosts"), 0, -1)
        return sum(
            int(self.redis.zcard(self.k(f"q:{h.decode() if isinstance(h, bytes) else h}")))
            for h in hosts
        )

    def mark_seen(self, url: str) -> None:
        """Record ``url`` as fetched without queueing it (a redirect's target)."""
        with contextlib.suppress(ValueError):
            self.redis.sadd(self.k("seen"), normalize_url(url))

    def seen(self, url: str) -> bool:
        try:
            return bool(self.redis.sismember(self.k("seen"), normalize_url(url)))
        except ValueError:
            return False

    def clear(self) -> None:
        """Forget everything (a new crawl from scratch)."""
        hosts = self.redis.zrange(self.k("hosts"), 0, -1)
        names = [
            "hosts", "clock", "interval", "leased", "entry", "seen", "patterns",
            "revisit", "revisit_entry", "stats", "body", "ready",
        ]  # fmt: skip
        keys = [self.k(n) for n in names]
        keys += [self.k(f"q:{h.decode() if isinstance(h, bytes) else h}") for h in hosts]
        for key in keys:
            self.redis.delete(key)

    def hosts(self) -> Iterable[str]:
        return [
            h.decode() if isinstance(h, bytes) else h for h in self.redis.hkeys(self.k("clock"))
        ]
