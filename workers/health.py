"""Whether the job queue can take work now: the broker and the result backend answer
(``/healthz``), the Redis that holds them keeps an append-only file, and every queue
has a live consumer."""

from __future__ import annotations

import logging

from workers.app import QUEUES, get_celery
from workers.backend import backend_client
from workers.heartbeat import missing_queues

log = logging.getLogger(__name__)

HEALTH_TIMEOUT = 2.0  # seconds /healthz waits for the broker and the result backend


def queue_health() -> dict[str, str]:
    """``{"broker": "ok"|"unavailable", "results": "ok"|"unavailable"}``: whether the
    Celery broker and the result backend of the job app answer a PING now (each at
    most ``HEALTH_TIMEOUT`` seconds). Never raises: a broker that cannot be derived
    (``workers.app.broker_problem``) is "unavailable" too; the log has why."""
    app = get_celery()
    out = {"broker": "unavailable", "results": "unavailable"}
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=HEALTH_TIMEOUT)
            client = getattr(conn.default_channel, "client", None)
            if client is not None:
                client.ping()
        out["broker"] = "ok"
    except Exception:
        log.exception("health check: the broker does not answer")
    try:
        backend_client(app).ping()
        out["results"] = "ok"
    except Exception:
        log.exception("health check: the result backend does not answer")
    return out


def durability_problem() -> str | None:
    """Why a job accepted now could be lost by a crash of the Redis that holds the
    queue and the job records, or None: that Redis keeps no append-only file
    (``appendonly no``: a restart goes back to its last snapshot, and the jobs accepted
    since are gone). The embedded queue server always keeps one
    (``tracker.indexes.redis_client.QUEUE_SERVER_CONFIG``); a server of ``YINJI_REDIS_URL`` /
    ``YINJI_BROKER_URL`` needs ``appendonly yes`` (docker-compose.yml sets it). None
    too when the server does not say (INFO refused)."""
    try:
        info = backend_client(get_celery()).info("persistence")
    except Exception as exc:
        log.info("the broker's persistence is unknown: %s", exc)
        return None
    if str(info.get("aof_enabled", "1")) in ("0", "False"):
        return (
            "the Redis that holds the job queue keeps no append-only file (appendonly no): "
            "a crash of it loses the jobs accepted since its last snapshot; set "
            "'appendonly yes' on it (docs/WORKERS.md, Durability)"
        )
    return None


def missing_consumers() -> list[str]:
    """The queues no live worker consumes now (``workers.heartbeat.consumers``: every
    worker node says with its heartbeat which queues it reads, and a worker process
    ``yinji serve`` saw die is removed at once). Jobs sent there are kept and wait.
    Raises when the result backend does not answer."""
    return missing_queues(get_celery(), QUEUES)
