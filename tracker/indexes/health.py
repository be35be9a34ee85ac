"""Does an engine's index agree with the store? Knowing it, so that a lost or partial
index is repaired or refused instead of silently answering "no match".

The store is the source of truth and the Redis index is derived from it (see
``tracker.library``). They can disagree after: Redis emptied or its ``redis.db`` lost;
Redis restarted from an older snapshot (writes since the last save gone); a writer
killed or cut off from Redis between its store write and its index write. Three marks
tell these apart, at the cost of one Redis ``HGETALL`` and three small store reads:

- a **token** per engine, chosen when the index is first built and at every rebuild,
  kept in the store (meta ``index:{engine}:token``) and in Redis (hash
  ``{prefix}:index-state:{engine}``, field ``token``). A Redis without the token, or with
  another one, does not hold this store's index: *lost*.
- a **generation** per engine: Redis ``HINCRBY``s its field ``gen`` after every batch of
  index writes, and the store raises meta ``index:{engine}:gen`` to the value Redis
  returned. Redis' snapshot holds the counter with the postings written before it, so
  a Redis generation below the store's means Redis lost writes: *behind*.
- a **writer mark** per ingest (meta ``index-writer:{id}``: engine, host, pid, the last
  seq handed out before it began, a heartbeat), written before its first store write
  and removed after its last index write. A mark whose writer is dead (failed, its pid
  gone on this host, or no heartbeat for ``WRITER_LEASE`` seconds) means mothers above
  its seq may be missing from the index: *partial*; re-adding them (from the stored
  fingerprints; adds are idempotent) repairs it.

A library indexed before these marks existed has fingerprints but no token: *unknown*,
repaired by one rebuild. While a rebuild runs (the index lock, ``tracker.indexes.lock``:
an owner with a heartbeat, so that a killed rebuild frees it at once) the index is
*rebuilding*.

What ``tracker.library.Library`` does with it: repairs a partial index, and rebuilds a
lost, behind or unknown one, by itself when the work is at most
``Settings.auto_rebuild_max_postings`` postings; otherwise it raises ``IndexOutOfSync``,
whose message says to run ``yinji index rebuild``.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from tracker.common.records import JSONObject, json_int
from tracker.indexes.lock import IndexLock, LockHeld, Owner
from tracker.indexes.lock import lock_key as _lock_key
from tracker.indexes.redis_client import process_alive

if TYPE_CHECKING:
    from tracker.engines.base import RedisClient
    from tracker.store.base import Store

WRITER_PREFIX = "index-writer:"
WRITER_LEASE = 3600.0  # seconds without a heartbeat after which a writer is taken for dead

State = Literal["ok", "empty", "partial", "behind", "lost", "unknown", "rebuilding"]


class IndexOutOfSync(RuntimeError):
    """The index of an engine disagrees with the store and was not repaired here: a
    check would miss matches. The message says what is wrong and what to do."""

    def __init__(self, engine: str, reason: str, advice: str | None = None) -> None:
        self.engine = engine
        self.reason = reason
        super().__init__(
            f"the {engine} index does not match the store: {reason}. "
            + (advice or f"Run `yinji index rebuild --engine {engine}`, then try again.")
        )


@dataclass
class Health:
    engine: str
    state: State
    reason: str = ""
    dead_writers: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        """The index answers for every stored mother (or there is none)."""
        return self.state in ("ok", "empty")

    def to_dict(self) -> JSONObject:
        return {"state": self.state, "reason": self.reason}


def _now() -> datetime:
    return datetime.now(UTC)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class IndexTracker:
    """The marks of one library (a store, a Redis connection, a key prefix)."""

    def __init__(self, store: Store, redis: RedisClient, prefix: str) -> None:
        self.store = store
        self.redis = redis
        self.prefix = prefix
        self.host = socket.gethostname()

    # -- keys -------------------------------------------------------------------
    def state_key(self, engine: str) -> str:
        return f"{self.prefix}:index-state:{engine}"

    def lock_key(self, engine: str) -> str:
        return _lock_key(self.prefix, engine)

    def index_lock(self, engine: str) -> IndexLock:
        return IndexLock(self.redis, self.lock_key(engine))

    def health_clearing_dead_lock(self, engine: str) -> tuple[Health, str]:
        """The engine's health, after removing its index lock if the lock's owner is gone
        (a ``yinji index rebuild``, reshard or growth killed while it held it); and what
        to tell the operator about it ("" when no dead lock was found): that it was
        cleared, and the state the dead owner left the index in: in sync with the store
        (killed before it changed the index, or after the new one went live), or lost
        (killed while it loaded it: rebuilt next, by ``IndexAdmin.ensure``)."""
        lock = self.index_lock(engine)
        value = lock.redis.get(lock.key)
        dead = Owner.parse(value) if value is not None else None
        if dead is None or lock.alive(dead):
            return self.health(engine), ""
        lock.release(dead)  # only if that dead owner still holds it
        health = self.health(engine)
        who = f"process {dead.pid} on {dead.host}" if dead.pid else f"a process on {dead.host}"
        note = (
            f"the {engine} index lock was held by {who}, which is gone (a rebuild, reshard "
            "or growth was killed): cleared it"
        )
        if health.state == "lost":
            # The rebuild had taken the index's sync token away (``begin_rebuild``) and
            # died before it gave the new one (``finish_rebuild``).
            reason = f"a rebuild by {who} was killed before it finished loading it"
            return Health(engine, "lost", reason, health.dead_writers), note
        if health.state == "ok":
            note += (
                "; the index still matches the store (same sync token and generation), "
                "so it was not rebuilt"
            )
        return health, note

    @staticmethod
    def token_meta(engine: str) -> str:
        return f"index:{engine}:token"

    @staticmethod
    def gen_meta(engine: str) -> str:
        return f"index:{engine}:gen"

    # -- the verdict --------------------------------------------------------------
    def health(self, engine: str) -> Health:
        store_token = self.store.get_meta(self.token_meta(engine))
        raw = self.redis.hgetall(self.state_key(engine)) or {}
        state = {_text(k): _text(v) for k, v in raw.items()}
        redis_token = state.get("token")
        if store_token is None:
            rows, _ = self.store.fingerprint_totals(engine)
            if rows == 0:
                return Health(engine, "empty")
            return Health(
                engine, "unknown", "this library's index predates index tracking (or its mark)"
            )
        if redis_token != store_token:
            if self.index_lock(engine).owner() is not None:
                return Health(engine, "rebuilding", "another process is rebuilding it")
            if redis_token is None:
                why = "Redis holds none of it (emptied, restarted without its data, redis.db lost)"
            else:
                why = "Redis holds an index built for another store or another rebuild"
            return Health(engine, "lost", why)
        store_gen = json_int(self.store.get_meta(self.gen_meta(engine)))
        redis_gen = int(state.get("gen") or 0)
        if redis_gen < store_gen:
            return Health(
                engine,
                "behind",
                f"Redis lost recent index writes (generation {redis_gen} < {store_gen}: "
                "restarted from an older snapshot?)",
            )
        dead = self.dead_writers(engine)
        if dead:
            first = min(json_int(m.get("floor", 0)) for m in dead.values())
            return Health(
                engine,
                "partial",
                f"{len(dead)} ingest(s) stopped between the store and the index "
                f"(mothers after seq {first} may be missing)",
                dead,
            )
        return Health(engine, "ok")

    # -- tokens and generations -----------------------------------------------------
    def adopt(self, engine: str) -> bool:
        """Before the first write to an engine's index: the store and Redis get one
        token (the first writer's). False when Redis already holds another token (an
        index of another store under the same prefix)."""
        token = str(self.store.init_meta(self.token_meta(engine), uuid.uuid4().hex))
        key = self.state_key(engine)
        self.redis.hsetnx(key, "token", token)
        return _text(self.redis.hget(key, "token")) == token

    def bump(self, engine: str) -> None:
        """After a batch of index writes: one more generation, in Redis then the store."""
        gen = int(self.redis.hincrby(self.state_key(engine), "gen", 1))
        self.store.raise_meta(self.gen_meta(engine), gen)

    def begin_rebuild(self, engine: str) -> None:
        """The index is being rebuilt from nothing: checks must not trust it meanwhile."""
        self.redis.hdel(self.state_key(engine), "token")

    def finish_rebuild(self, engine: str, dead_before: dict[str, JSONObject]) -> None:
        """The index holds every stored mother: a new token for both sides, a Redis
        generation not below the store's, and the dead writers it covered forgotten."""
        token = uuid.uuid4().hex
        key = self.state_key(engine)
        store_gen = json_int(self.store.get_meta(self.gen_meta(engine)))
        redis_gen = int(_text(self.redis.hget(key, "gen")) or 0)
        if store_gen > redis_gen:
            # HINCRBY, not HSET: a concurrent ingest's increment is never overwritten.
            self.redis.hincrby(key, "gen", store_gen - redis_gen)
        self.redis.hset(key, "token", token)
        self.store.set_meta(self.token_meta(engine), token)
        self.forget_writers(engine, dead_before)

    # -- writers ------------------------------------------------------------------
    def begin_write(self, engines: list[str]) -> str:
        """Mark an ingest into these engines' indexes before its first store write;
        returns the mark's key."""
        key = f"{WRITER_PREFIX}{uuid.uuid4().hex}"
        now = _now().isoformat()
        self.store.set_meta(
            key,
            {
                "engines": list(engines),
                "host": self.host,
                "pid": os.getpid(),
                "floor": self.store.last_seq(),
                "since": now,
                "beat": now,
                "failed": False,
            },
        )
        return key

    def heartbeat(self, key: str) -> None:
        mark = self.store.get_meta(key)
        if isinstance(mark, dict):
            mark["beat"] = _now().isoformat()
            self.store.set_meta(key, mark)

    def end_write(self, key: str) -> None:
        self.store.delete_meta(key)

    def fail_write(self, key: str) -> None:
        """The ingest stopped after store writes its index may lack: say so at once (a
        long-lived worker's pid stays alive, so the pid alone would not tell)."""
        mark = self.store.get_meta(key)
        if isinstance(mark, dict):
            mark["failed"] = True
            self.store.set_meta(key, mark)

    def dead_writers(self, engine: str) -> dict[str, JSONObject]:
        dead: dict[str, JSONObject] = {}
        now = _now()
        for key, mark in self.store.meta_items(WRITER_PREFIX).items():
            if not isinstance(mark, dict) or engine not in (mark.get("engines") or []):
                continue
            try:
                beat = datetime.fromisoformat(str(mark.get("beat")))
            except ValueError:
                beat = now - timedelta(seconds=2 * WRITER_LEASE)
            gone = mark.get("host") == self.host and not process_alive(int(mark.get("pid", 0)))
            if mark.get("failed") or gone or (now - beat).total_seconds() > WRITER_LEASE:
                dead[key] = mark
        return dead

    def forget_writers(self, engine: str, marks: dict[str, JSONObject]) -> None:
        """These dead writers' mothers are in ``engine``'s index now (repaired or
        rebuilt): take the engine off their marks, and a mark with none left away."""
        for key in marks:
            mark = self.store.get_meta(key)
            if not isinstance(mark, dict):
                continue
            left = [e for e in mark.get("engines") or [] if e != engine]
            if left:
                self.store.set_meta(key, {**mark, "engines": left})
            else:
                self.store.delete_meta(key)

    # -- the rebuild lock ---------------------------------------------------------------
    @contextmanager
    def lock(self, engine: str) -> Iterator[Callable[[], None]]:
        """Hold the engine's index lock (``tracker.indexes.lock``: taken over from a dead
        owner at once); ``IndexOutOfSync`` if another live process holds it. Yields a
        ``refresh`` to call between batches (a thread keeps the heartbeat anyway)."""
        try:
            with self.index_lock(engine).hold() as refresh:
                yield refresh
        except LockHeld as held:
            raise IndexOutOfSync(
                engine,
                f"another process is rebuilding it (process {held.owner.pid} on {held.owner.host})",
                "Wait for that rebuild to finish, then try again.",
            ) from None

    def wait_unlocked(self, engine: str, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a rebuild by another live process to end."""
        return self.index_lock(engine).wait_released(timeout)
