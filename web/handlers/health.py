"""``GET /healthz``: no sign-in, for Docker and load-balancer health checks."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify

from ..core import library

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Any:
    """200 when the store and Redis answer, 503 (with the failing part) otherwise."""
    checks: dict[str, str] = {}
    status = 200
    try:
        lib = library()
        lib.store.get_meta("engines")
        checks["store"] = "ok"
        lib.redis.ping()
        checks["redis"] = "ok"
    except Exception as exc:  # a health check reports every failure, it never raises
        checks["error"] = f"{type(exc).__name__}: {exc}"[:200]
        status = 503
    body = {"status": "ok" if status == 200 else "unavailable", **checks}
    return jsonify(body), status
