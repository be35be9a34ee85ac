"""The index lock (``tracker.indexes.lock``): held by an owner that keeps a heartbeat; a
live owner keeps it, a dead one (its process gone on this host, or its heartbeat expired)
loses it at once to the next taker; only the owner releases it; both keys in one Redis
Cluster slot. (A real SIGKILLed rebuild: tests/tracker/indexes/test_reliability_index.py.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any

import pytest
from redis.crc import key_slot

from tracker.indexes import lock as lockmod
from tracker.indexes.lock import IndexLock, LockHeld, Owner, lock_key


def _lock(redis: Any) -> IndexLock:
    return IndexLock(redis, lock_key("t", "daguan"))


def test_both_keys_hash_to_one_cluster_slot() -> None:
    lk = _lock(type("R", (), {"register_script": lambda self, s: s})())
    assert key_slot(lk.key.encode()) == key_slot(lk.beat_key.encode())
    assert lock_key("a", "x") != lock_key("a", "y")


def test_a_live_owner_keeps_it_and_only_the_owner_releases(redis_client: Any) -> None:
    lk = _lock(redis_client)
    with lk.hold():
        mine = lk.owner()
        assert mine is not None and mine.pid == os.getpid()
        with pytest.raises(LockHeld), lk.hold():
            pass
        lk.release(Owner("h", 1, "not-me"))  # nobody else's release counts
        assert lk.owner() == mine
    assert lk.owner() is None and not redis_client.exists(lk.beat_key)


def test_the_heartbeat_thread_keeps_a_long_holder_alive(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A TTL 20 beats long: a loaded machine can pause the beating thread for a while.
    monkeypatch.setattr(lockmod, "BEAT_TTL_MS", 1000)
    monkeypatch.setattr(lockmod, "BEAT_EVERY_S", 0.05)
    lk = _lock(redis_client)
    with lk.hold():
        held = lk.owner()
        # Several heartbeat TTLs later the owner still lives: its thread beats.
        assert not lk.wait_released(3.5, poll=0.05)
        assert lk.owner() == held


def test_a_dead_owner_on_this_host_loses_it_at_once(redis_client: Any) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = Owner(socket.gethostname(), child.pid, "gone")
    lk = _lock(redis_client)
    redis_client.set(lk.key, dead.id, px=600_000)
    redis_client.set(lk.beat_key, dead.id, px=600_000)  # its heartbeat has not expired yet
    assert lk.owner() is None and not redis_client.exists(lk.key)
    redis_client.set(lk.key, dead.id, px=600_000)
    with lk.hold():  # taken over
        assert lk.owner() != dead


def test_an_owner_elsewhere_lives_by_its_heartbeat(redis_client: Any) -> None:
    other = Owner("another-host", 4242, "t")
    lk = _lock(redis_client)
    redis_client.set(lk.key, other.id, px=600_000)
    redis_client.set(lk.beat_key, other.id, px=600_000)
    assert lk.owner() == other
    with pytest.raises(LockHeld, match="4242 on another-host"), lk.hold():
        pass
    redis_client.delete(lk.beat_key)  # its heartbeat expired
    with lk.hold():
        assert lk.owner() != other
    # A lock written before owners were kept ("host:pid:uuid", no heartbeat) is free.
    redis_client.set(lk.key, "old-host:12:abc", px=600_000)
    assert lk.owner() is None
