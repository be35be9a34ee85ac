"""Canonical JSON and time stamps: the byte encodings a log record is hashed in.

A record's hash is computed over bytes, and the bytes are kept: a lawyer never has to
re-serialize anything, only hash a file. These rules say how those bytes are made, so
that anyone can also rebuild them from the data:

- JSON (RFC 8259), encoded as UTF-8, characters outside ASCII written as themselves
  (not ``\\uXXXX`` escapes);
- object keys sorted by code point (all keys Yinji writes are ASCII, where this is the
  same order as RFC 8785's);
- no whitespace at all: ``,`` and ``:`` separators, no trailing newline;
- numbers: integers as decimal digits; the few fractions (scores, similarities, rounded
  to 4 decimals) as the shortest decimal that reads back to the same binary64 value;
  NaN and infinities are refused;
- times: UTC, ISO 8601 with milliseconds and a ``Z``, e.g. ``2024-11-22T08:30:05.123Z``.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

from tracker.common.records import JSONObject
from tracker.common.timefmt import iso_utc


class CanonicalError(ValueError):
    """A value cannot be written as canonical JSON."""


def _check(value: object, path: str) -> None:
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalError(f"{path}: {value!r} is not a finite number")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalError(f"{path}: key {key!r} is not a string")
            _check(item, f"{path}.{key}")
        return
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check(item, f"{path}[{i}]")
        return
    raise CanonicalError(f"{path}: {type(value).__name__} cannot be written as JSON")


def canonical_json(value: object) -> bytes:
    """The canonical UTF-8 bytes of ``value`` (dicts, lists, str, int, finite float,
    bool, None). Raises ``CanonicalError`` naming the first value it cannot encode."""
    _check(value, "$")
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def parse_json_object(data: bytes, what: str) -> JSONObject:
    """Parse UTF-8 JSON that must be an object; errors name ``what``."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CanonicalError(f"{what}: not UTF-8 JSON ({exc})") from None
    if not isinstance(value, dict):
        raise CanonicalError(f"{what}: a JSON object was expected")
    return value


def hex_path(obj: JSONObject, key: str) -> list[bytes]:
    """``obj[key]`` of a hostile proof: a list of hex strings, as bytes. Raises
    ``KeyError`` (no such key), ``TypeError`` (not a list of strings) or ``ValueError``
    (not hex), as its readers expect."""
    items = obj[key]
    if not isinstance(items, list):
        raise TypeError(f"{key}: a list of hex strings was expected")
    hexes = [h for h in items if isinstance(h, str)]
    if len(hexes) != len(items):
        raise TypeError(f"{key}: a list of hex strings was expected")
    return [bytes.fromhex(h) for h in hexes]


def format_time(when: datetime) -> str:
    """``2024-11-22T08:30:05.123Z``: UTC with milliseconds. Naive times are refused
    (a time without a zone cannot be placed)."""
    if when.tzinfo is None:
        raise CanonicalError(f"time {when!r} has no time zone")
    return iso_utc(when)


def parse_time(text: str, what: str = "time") -> datetime:
    """The inverse of ``format_time`` (also accepts other ISO 8601 forms with a zone)."""
    if not isinstance(text, str):
        raise CanonicalError(f"{what}: expected an ISO 8601 time string, got {text!r}")
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CanonicalError(f"{what}: {text!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise CanonicalError(f"{what}: {text!r} has no time zone")
    return when.astimezone(UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def time_from_ms(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def ms_from_time(when: datetime) -> int:
    if when.tzinfo is None:
        raise CanonicalError(f"time {when!r} has no time zone")
    return (when - _EPOCH) // timedelta(milliseconds=1)
