"""``GET /healthz``: no sign-in, for Docker and load-balancer health checks."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, jsonify

from workers import jobs

from ..core import library

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Any:
    """200 when the store, Redis, the broker and the result backend answer, 503 naming
    the part that failed otherwise.

    Anyone may call it, so the answer never carries the exception: its text can hold
    host names, paths or a connection URI with a password. The log has it."""
    checks: dict[str, str] = {"store": "unchecked", "redis": "unchecked"}
    part = "store"
    try:
        lib = library()
        lib.store.get_meta("engines")
        checks["store"] = "ok"
        part = "redis"
        lib.redis.ping()
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
    return jsonify({"status": "ok", **checks}), 200
