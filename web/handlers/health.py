"""``GET /healthz``: no sign-in, for Docker and load-balancer health checks."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify
from flask.typing import ResponseReturnValue

from tracker.services.probes import ping_redis, ping_store
from workers import jobs

from ..apimodels.base import Health
from ..core import library
from ..openapi import Reply, operation

bp = Blueprint("health", __name__)


@bp.get("/healthz")
@operation(
    "Health check (no authentication)",
    {200: Reply("Healthy", Health), 503: Reply("Unhealthy", Health)},
    public=True,
)
def healthz() -> ResponseReturnValue:
    """200 when the store, Redis, the broker and the result backend answer and some
    worker consumes every queue; 503 naming the part that failed otherwise
    (``"status": "unavailable"``), or the queues nobody consumes (``"status":
    "degraded"``, ``"workers": "no worker consumes: check, …"``).

    Anyone may call it, so the answer never carries the exception: its text can hold
    host names, paths or a connection URI with a password. The log has it."""
    checks: dict[str, str] = {"store": "unchecked", "redis": "unchecked"}
    part = "store"
    try:
        lib = library()
        ping_store(lib)
        checks["store"] = "ok"
        part = "redis"
        ping_redis(lib)
        checks["redis"] = "ok"
    except Exception:  # a health check reports every failure, it never raises
        current_app.logger.exception("health check: the %s does not answer", part)
        checks[part] = "unavailable"
        checks["error"] = f"the {part} does not answer; see the server log"
        return jsonify({"status": "unavailable", **checks}), 503
    # Jobs go through the broker and come back through the result backend: a web app
    # that answers while they are down accepts work nobody will run.
    queues = jobs.queue_health()
    checks.update(queues)
    down = [name for name, value in queues.items() if value != "ok"]
    if down:
        checks["error"] = f"not answering: {', '.join(down)}; see the server log"
        return jsonify({"status": "unavailable", **checks}), 503
    # Accepted jobs are kept (docs/RELIABILITY.md), but a queue nobody consumes is work
    # that does not move: say which, instead of "ok" (a dead worker, `--no-worker`
    # without `yinji worker`).
    try:
        missing = jobs.missing_consumers()
    except Exception:
        current_app.logger.exception("health check: the worker heartbeats cannot be read")
        missing = None
    if missing is None:
        checks["workers"] = "unknown"
    elif missing:
        checks["workers"] = f"no worker consumes: {', '.join(missing)}"
        checks["error"] = (
            f"no worker consumes the queue(s) {', '.join(missing)}: jobs sent there are "
            "kept and wait; start a worker (yinji worker), or wait for yinji serve to "
            "replace the one that stopped"
        )
        return jsonify({"status": "degraded", **checks}), 503
    else:
        checks["workers"] = "ok"
    return jsonify({"status": "ok", **checks}), 200
