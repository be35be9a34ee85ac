"""Worker-side options, read from environment variables like ``tracker.config.Settings``.

- ``YINJI_VISIBILITY_TIMEOUT``: seconds after which a message that a worker took but
  never acknowledged (the worker died) is delivered again (default 3600). Keep it above
  the longest task: a task still running after that long is delivered a second time.
- ``YINJI_RESULT_EXPIRES``: seconds job results, task markers and reports are kept
  (default 604800, a week).
- ``YINJI_TIMEZONE``: time zone of the beat schedule (default ``UTC``).
- ``YINJI_RECRAWL_AT`` / ``YINJI_CHECK_MOTHERS_AT``: daily ``HH:MM`` of the watch-list
  re-crawl (default ``03:00``) and of the check of new mothers (default ``04:30``).
- ``YINJI_SITE_CRAWL_LIMIT``: pages of one watched site crawled per run: its start page
  plus at most this many same-host links found on it (default 20).
- ``YINJI_CRAWL_MIN_INTERVAL``: seconds between two requests to one host (default: the
  crawler's own, 1 s).
- ``YINJI_INGEST_CHUNK``: documents per ingest task (default 200): a big upload becomes
  several tasks that several workers can run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


def _env_int(name: str, default: int, minimum: int = 1) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(float(raw))
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    return max(minimum, value)


def _env_float(name: str) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None


def _env_time(name: str, default: str) -> tuple[int, int]:
    raw = (os.environ.get(name) or default).strip()
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", raw)
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise ValueError(f"{name} must be a time HH:MM, got {raw!r}")
    return int(m.group(1)), int(m.group(2))


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

    @classmethod
    def from_env(cls) -> WorkerSettings:
        return cls(
            visibility_timeout=_env_int("YINJI_VISIBILITY_TIMEOUT", 3600),
            result_expires=_env_int("YINJI_RESULT_EXPIRES", 7 * 24 * 3600, minimum=60),
            timezone=os.environ.get("YINJI_TIMEZONE") or "UTC",
            recrawl_at=_env_time("YINJI_RECRAWL_AT", "03:00"),
            check_mothers_at=_env_time("YINJI_CHECK_MOTHERS_AT", "04:30"),
            site_crawl_limit=_env_int("YINJI_SITE_CRAWL_LIMIT", 20, minimum=0),
            crawl_min_interval=_env_float("YINJI_CRAWL_MIN_INTERVAL"),
            ingest_chunk=_env_int("YINJI_INGEST_CHUNK", 200),
        )
