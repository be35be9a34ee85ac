"""The index lock: one rebuild, reshard or growth of an engine's index at a time, held in
Redis by an owner that says it lives.

A lock that only expires (a TTL) blocks the library for that TTL when its owner dies: a
``yinji index rebuild`` killed by SIGKILL left every check waiting, then failing "another
process is rebuilding it" for ten minutes (issue #25). So the lock knows its owner:

- ``{prefix}:{index-lock:ENGINE}`` holds the owner's id ``host|pid|token`` (with a long
  TTL, ``LOCK_TTL_MS``, as a last resort);
- ``{prefix}:{index-lock:ENGINE}:beat`` holds the same id with a short TTL
  (``BEAT_TTL_MS``), refreshed every ``BEAT_EVERY_S`` by a thread of the owner.

An owner is alive while its heartbeat key names it and, when it runs on this host, while
its process runs. A dead owner's lock is taken over at once by the next process that wants
it (a compare-and-set on the dead owner's id, so two taking over cannot both win), and
readers asking whether the index is being rebuilt (``owner``) remove it. On another host a
dead owner is known when its heartbeat expires (``BEAT_TTL_MS``).

Both keys share a hash tag, so the scripts that read and write them together run on one
node of a Redis Cluster.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from tracker.indexes.redis_client import process_alive

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient

LOCK_TTL_MS = 10 * 60 * 1000  # a last resort: the heartbeat says sooner that an owner died
BEAT_TTL_MS = 15_000  # an owner on another host silent this long is taken for dead
BEAT_EVERY_S = 3.0  # how often the owner's thread refreshes its heartbeat

# KEYS: lock, beat. ARGV: my id, lock TTL, beat TTL, the dead owner to replace ('' for
# none). Returns the current owner's id when another holds it, else nothing (taken).
_ACQUIRE = """
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] and cur ~= ARGV[4] then return cur end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
return false
"""

# KEYS: lock, beat. ARGV: my id, lock TTL, beat TTL. 1 while I hold it, else 0.
_BEAT = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
return 1
"""

# KEYS: lock, beat. ARGV: the owner whose lock goes. Deletes both only if it still holds it.
_RELEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
"""


def lock_key(prefix: str, name: str) -> str:
    """The lock of ``name`` (an engine) under a key prefix; the braces are its hash tag."""
    return f"{prefix}:{{index-lock:{name}}}"


@dataclass(frozen=True)
class Owner:
    """Who holds a lock: ``host|pid|token``."""

    host: str
    pid: int
    token: str

    @property
    def id(self) -> str:
        return f"{self.host}|{self.pid}|{self.token}"

    @classmethod
    def parse(cls, value: bytes | str) -> Owner:
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        host, _, rest = text.partition("|")
        pid, _, token = rest.partition("|")
        # A lock written before owners were kept ("host:pid:uuid") has no pid to check:
        # its heartbeat, which it never had, decides.
        return cls(host, int(pid) if pid.isdigit() else 0, token)

    @classmethod
    def me(cls) -> Owner:
        return cls(socket.gethostname(), os.getpid(), uuid.uuid4().hex)


class LockHeld(RuntimeError):
    """Another process holds the lock and lives."""

    def __init__(self, key: str, owner: Owner) -> None:
        self.owner = owner
        super().__init__(f"{key} is held by process {owner.pid} on {owner.host}")


class IndexLock:
    """One named lock in Redis (``key``), owned by a process that keeps a heartbeat."""

    def __init__(self, redis: RedisClient, key: str) -> None:
        # Typed loosely inside: redis-py's stubs of RedisCluster lack register_script.
        self.redis: Any = cast(Any, redis)
        self.key = key
        self.beat_key = f"{key}:beat"
        self.host = socket.gethostname()
        self._acquire = self.redis.register_script(_ACQUIRE)
        self._beat = self.redis.register_script(_BEAT)
        self._release = self.redis.register_script(_RELEASE)

    # -- who holds it ---------------------------------------------------------------
    def alive(self, owner: Owner) -> bool:
        """Whether ``owner`` lives: its heartbeat names it, and (on this host) its
        process runs."""
        if owner.host == self.host and owner.pid and not process_alive(owner.pid):
            return False
        beat = self.redis.get(self.beat_key)
        return beat is not None and Owner.parse(beat) == owner

    def owner(self) -> Owner | None:
        """The live owner of the lock, or None: free, or held by a dead owner (whose lock
        is removed here, so that nobody waits for it)."""
        value = self.redis.get(self.key)
        if value is None:
            return None
        owner = Owner.parse(value)
        if self.alive(owner):
            return owner
        self._release(keys=[self.key, self.beat_key], args=[owner.id])
        return None

    # -- holding it -----------------------------------------------------------------
    def acquire(self, me: Owner) -> None:
        """Take the lock for ``me``, taking it over from a dead owner; ``LockHeld`` when
        a live one holds it."""
        dead = ""
        for _ in range(3):
            cur = self._acquire(
                keys=[self.key, self.beat_key],
                args=[me.id, LOCK_TTL_MS, BEAT_TTL_MS, dead],
            )
            if cur is None:
                return
            owner = Owner.parse(cur)
            if self.alive(owner):
                raise LockHeld(self.key, owner)
            dead = owner.id  # taken over only if that dead owner still holds it
        raise LockHeld(self.key, owner)

    def refresh(self, me: Owner) -> bool:
        """The heartbeat (and the lock's TTL) renewed; False when ``me`` no longer holds it."""
        return bool(
            self._beat(keys=[self.key, self.beat_key], args=[me.id, LOCK_TTL_MS, BEAT_TTL_MS])
        )

    def release(self, me: Owner) -> None:
        self._release(keys=[self.key, self.beat_key], args=[me.id])

    @contextlib.contextmanager
    def hold(self) -> Iterator[Callable[[], None]]:
        """Hold the lock (``LockHeld`` if a live owner has it) with a heartbeat thread;
        yields a ``refresh`` the holder may call too (between batches)."""
        me = Owner.me()
        self.acquire(me)
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(BEAT_EVERY_S):
                with contextlib.suppress(Exception):  # Redis away: the next beat retries
                    if not self.refresh(me):
                        return

        thread = threading.Thread(target=beat, name=f"yinji-lock-{self.key}", daemon=True)
        thread.start()

        def refresh() -> None:
            self.refresh(me)

        try:
            yield refresh
        finally:
            stop.set()
            thread.join(timeout=5)
            with contextlib.suppress(Exception):  # Redis gone: the lock expires by itself
                self.release(me)

    def wait_released(self, timeout: float, poll: float = 0.2) -> bool:
        """Wait up to ``timeout`` seconds until no live owner holds the lock."""
        deadline = time.monotonic() + timeout
        while self.owner() is not None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)
        return True
