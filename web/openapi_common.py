"""Schemas every part of the OpenAPI document shares (``web.openapi`` and the parts
merged into it, such as ``web.openapi_discover``)."""

from __future__ import annotations

from typing import Any

# Every time in every answer: UTC with milliseconds and Z (tracker.timefmt.iso_utc).
TIME: dict[str, Any] = {
    "type": "string",
    "format": "date-time",
    "description": "UTC, milliseconds, Z: 2026-11-25T09:26:15.794Z",
}
TIME_OR_NULL: dict[str, Any] = {**TIME, "type": ["string", "null"]}
