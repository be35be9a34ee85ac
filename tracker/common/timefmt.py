"""Times, written one way everywhere: the REST API, JSON output, cases, notices, reports
and evidence all format an instant through these functions, so one event never reads as
two different times in two documents.

- ``iso_utc``: RFC 3339 in UTC with milliseconds and ``Z`` (``2026-11-25T09:26:15.794Z``),
  for machines: the API, ``--json`` output, manifests. Milliseconds because a capture's
  fetch time is stored to the millisecond and a notice must be able to quote it exactly.
- ``human_utc``: the same instant for people (``2026-11-25 09:26:15 UTC``), seconds cut,
  never rounded, so it never reads as later than the instant it stands for.
- ``parse_utc``: the inverse of ``iso_utc`` (also accepts ``+00:00`` and naive values,
  which are taken as UTC).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


def to_utc(value: datetime) -> datetime:
    """``value`` in UTC; a naive datetime is taken to be UTC already."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@overload
def iso_utc(value: datetime) -> str: ...
@overload
def iso_utc(value: None) -> None: ...
def iso_utc(value: datetime | None) -> str | None:
    """``value`` for machines; ``None`` (a time not recorded) stays ``None``."""
    if value is None:
        return None
    utc = to_utc(value)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def human_utc(value: datetime) -> str:
    return to_utc(value).strftime("%Y-%m-%d %H:%M:%S UTC")


def parse_utc(text: str) -> datetime:
    """A time written by ``iso_utc`` (or any ISO 8601 form) as an aware UTC datetime.
    Raises ``ValueError`` naming the text when it is not a time."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an ISO 8601 time: {text!r}") from None
    return to_utc(value)
