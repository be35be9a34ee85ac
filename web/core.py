"""What every blueprint shares: the Library, the signed-in user, roles, errors,
dashboard filters and pagination."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import urlsplit

from flask import abort, current_app, g, jsonify, request
from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import HTTPException

from tracker.library import LibraryHandle
from tracker.store import VERDICTS, Match, MatchQuery, User

from .accounts import role_at_least

F = TypeVar("F", bound=Callable[..., Any])

SORTS = ("-score", "score", "-created_at", "created_at", "-coverage", "coverage")
MAX_PAGE = 200  # rows per page a client may ask for
MAX_EXPORT = 100_000  # rows of one list export


class YinjiState(LibraryHandle):
    """Per-app state: the settings and one ``Library``, opened on first use (so that
    ``create_app`` starts no Redis server by itself) and shared by all threads."""


def state() -> YinjiState:
    return current_app.extensions["yinji"]


def library() -> Any:
    return state().library


def store() -> Any:
    return state().library.store


def jobs() -> Any:
    """The ``workers.jobs`` module (imported on first use)."""
    from workers import jobs as workers_jobs

    return workers_jobs


def submit_job(kind: str, *args: Any, **kwargs: Any) -> str:
    """``workers.jobs.submit_<kind>``; its ``ValueError`` (a bad item) becomes a 400."""
    try:
        return getattr(jobs(), f"submit_{kind}")(*args, **kwargs)
    except ValueError as exc:
        fail(400, str(exc))
        raise  # unreachable: fail() raises


def job_status(job_id: str) -> dict[str, Any]:
    """``workers.jobs.job_status``; an unknown or expired job is a 404."""
    try:
        return jobs().job_status(job_id)
    except KeyError:
        fail(404, f"no job {job_id!r} (unknown, or its record expired)")
        raise


def work_choices() -> list[tuple[str, str]]:
    """(id, title) of the works with the most matches, for the filter's suggestions:
    in a library of thousands of works, the ones that are being copied are the ones a
    person filters by."""
    stats = store().match_stats(MatchQuery(limit=0))
    return [(mid, title or mid) for mid, title, _ in stats["top_mothers"]]


def current_user() -> User | None:
    return getattr(g, "user", None)


def is_api() -> bool:
    return request.path.startswith("/api/")


class ApiError(HTTPException):
    """An error answered as JSON ``{"error": message}`` on the API and as an error
    page elsewhere."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(description=message)
        self.code = status


def fail(status: int, message: str) -> None:
    raise ApiError(status, message)


def json_error(status: int, message: str) -> Any:
    response = jsonify({"error": message})
    response.status_code = status
    return response


def role_required(role: str) -> Callable[[F], F]:
    """The signed-in user must have at least ``role`` (viewer < analyst < admin).
    Sign-in itself is enforced for every route in ``before_request``."""

    def decorator(view: F) -> F:
        @wraps(view)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            user = current_user()
            if user is None:
                abort(401)
            if not role_at_least(user.role, role):
                fail(403, f"this needs the {role} role; you are {user.role}")
            return view(*args, **kwargs)

        wrapped.required_role = role  # type: ignore[attr-defined]
        return wrapped  # type: ignore[return-value]

    return decorator


def can(role: str) -> bool:
    user = current_user()
    return user is not None and role_at_least(user.role, role)


# --- filters ------------------------------------------------------------------------------
def _float(args: MultiDict[str, str], name: str) -> float | None:
    raw = (args.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number between 0 and 1, got {raw!r}") from None
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise ValueError(f"{name} must be a number between 0 and 1, got {raw!r}")
    return value


def _int(args: MultiDict[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = (args.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, got {value}")
    return value


def parse_when(raw: str, name: str, *, end: bool = False) -> datetime | None:
    """A date (``2024-05-01``) or an ISO 8601 time; naive means UTC. A date used as the
    end of a range includes that whole day."""
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        if len(raw) == 10:
            day = datetime.strptime(raw, "%Y-%m-%d").replace(tzinfo=UTC)
            return day + timedelta(days=1) if end else day
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{name} must be a date like 2024-05-01 or an ISO 8601 time, got {raw!r}"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass
class MatchFilters:
    query: MatchQuery
    page: int
    per_page: int


def parse_match_filters(args: MultiDict[str, str], *, default_per_page: int = 25) -> MatchFilters:
    """Dashboard / API filters from query parameters; ``ValueError`` says what is wrong.

    ``verdict``, ``min_score``, ``max_score``, ``work`` (or ``mother_id``),
    ``suspect`` (or ``suspect_id``), ``domain``, ``since``, ``until``, ``q`` (or
    ``search``), ``sort``, and ``page``/``per_page`` or ``offset``/``limit``.
    """
    verdict = (args.get("verdict") or "").strip() or None
    if verdict and verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    min_score, max_score = _float(args, "min_score"), _float(args, "max_score")
    if min_score is not None and max_score is not None and min_score > max_score:
        raise ValueError("min_score must not be above max_score")
    sort = (args.get("sort") or "-score").strip()
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}, got {sort!r}")
    since = parse_when(args.get("since", ""), "since")
    until = parse_when(args.get("until", ""), "until", end=True)
    if since and until and since >= until:
        raise ValueError("since must be before until")
    per_page = _int(args, "per_page", default_per_page, 1, MAX_PAGE)
    per_page = _int(args, "limit", per_page, 0, MAX_PAGE)
    page = _int(args, "page", 1, 1, 10**9)
    offset = _int(args, "offset", (page - 1) * per_page, 0, 10**12)
    domain = (args.get("domain") or "").strip() or None
    if domain and "://" in domain:
        domain = (urlsplit(domain).hostname or "").lower() or None
    query = MatchQuery(
        verdict=verdict,
        min_score=min_score,
        max_score=max_score,
        mother_id=(args.get("work") or args.get("mother_id") or "").strip() or None,
        suspect_id=(args.get("suspect") or args.get("suspect_id") or "").strip() or None,
        domain=domain,
        since=since,
        until=until,
        search=(args.get("q") or args.get("search") or "").strip() or None,
        sort=sort,  # type: ignore[arg-type]
        offset=offset,
        limit=per_page,
    )
    return MatchFilters(
        query=query, page=offset // per_page + 1 if per_page else 1, per_page=per_page
    )


FILTER_KEYS = (
    "verdict",
    "min_score",
    "max_score",
    "work",
    "suspect",
    "domain",
    "since",
    "until",
    "q",
    "sort",
)


def filter_args(args: MultiDict[str, str], **changes: Any) -> dict[str, Any]:
    """The current filter query parameters (for links that keep them), changed."""
    out = {k: args[k] for k in FILTER_KEYS if args.get(k)}
    for key, value in changes.items():
        if value is None or value == "":
            out.pop(key, None)
        else:
            out[key] = value
    return out


@dataclass
class Page:
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page)) if self.per_page else 1

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    @property
    def first(self) -> int:
        return min(self.total, self.offset + 1)

    @property
    def last(self) -> int:
        return min(self.total, self.offset + self.per_page)

    def window(self, size: int = 7) -> list[int]:
        lo = max(1, min(self.page - size // 2, self.pages - size + 1))
        return list(range(lo, min(self.pages, lo + size - 1) + 1))


def page_arg(default_per_page: int = 25) -> tuple[int, int]:
    try:
        page = max(1, min(int(request.args.get("page", "1")), 10**9))
    except ValueError:
        page = 1
    return page, default_per_page


# --- JSON shapes ------------------------------------------------------------------------
def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def match_json(m: Match, *, passages: bool = True) -> dict[str, Any]:
    from .ids import encode_id

    out: dict[str, Any] = {
        "id": m.id,
        "ref": encode_id(m.id),
        "suspect_id": m.suspect_id,
        "mother_id": m.mother_id,
        "mother_title": m.mother_title,
        "suspect_title": m.suspect_title,
        "suspect_url": m.suspect_url,
        "domain": m.domain,
        "score": m.score,
        "coverage": m.coverage,
        "mother_coverage": m.mother_coverage,
        "engine": m.engine,
        "verdict": m.verdict,
        "note": m.note,
        "created_at": iso(m.created_at),
        "updated_at": iso(m.updated_at),
    }
    if passages:
        out["passages"] = [p.to_dict() for p in m.passages]
    else:
        out["passage_count"] = len(m.passages)
    return out
