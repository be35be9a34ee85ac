"""What every blueprint shares: the Library, the signed-in user, roles, errors,
dashboard filters and pagination."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import wraps
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlsplit

from flask import Response, abort, current_app, g, jsonify, request
from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import HTTPException

from tracker.common.rules import check_sort, check_verdict, normalize_domain
from tracker.common.timefmt import parse_utc
from tracker.library import Library, LibraryHandle
from tracker.services.records import LibraryRecords
from tracker.store import MatchQuery, User
from workers import jobs

from .accounts import role_at_least
from .apimodels.base import MAX_OFFSET, MAX_PAGE

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

MAX_EXPORT = 100_000  # rows of one list export
MAX_PAGE_NUMBER = 10**9  # the highest ?page= accepted
MAX_SHOWN_CHARS = 200_000  # a whole novel on one page would freeze the browser
JOB_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

# The English message id of each verdict (tracker.common.records.VERDICTS, in its order), for
# the forms, tabs, badges and flashes; translated where shown.
VERDICT_LABELS: dict[str, str] = {
    "pending": "Pending",
    "confirmed": "Confirmed",
    "dismissed": "Dismissed",
}


def state() -> LibraryHandle:
    """The app's ``LibraryHandle``: the settings and one ``Library``, opened on first
    use (so that ``create_app`` starts no Redis server) and shared by all threads."""
    return current_app.extensions["yinji"]


def library() -> Library:
    return state().library


def records() -> LibraryRecords:
    """The library's records (matches, works, suspects, users): web's one door to them."""
    return LibraryRecords.of(state().library)


@contextmanager
def bad_request() -> Iterator[None]:
    """A ``ValueError`` raised inside (a rule of ``tracker.common.rules``, a bad job item)
    becomes a 400 answer with its message."""
    try:
        yield
    except ValueError as exc:
        fail(400, str(exc))


def get_or_404(get: Callable[[str], T], key: str, message: str) -> T:
    """``get(key)``, or a 404 with ``message`` when the store has no such record."""
    try:
        return get(key)
    except KeyError:  # the stores' NotFound is a KeyError
        fail(404, message)
        raise  # unreachable: fail() raises


def job_status(job_id: str) -> jobs.JobStatus:
    """``workers.jobs.job_status``; a malformed, unknown or expired job id is a 404."""
    if not JOB_ID_RE.match(job_id):
        fail(404, f"no job {job_id[:128]!r}")
    try:
        return jobs.job_status(job_id)
    except KeyError:
        fail(404, f"no job {job_id!r} (unknown, or its record expired)")
        raise


def safe_next(target: str | None, default: str) -> str:
    """Where to go after a form: ``target`` only when it is a path on this site, else
    ``default``. Browsers drop tabs and newlines from URLs and read ``\\`` as ``/``, so
    ``/%09/evil.example/`` (a tab) would become ``//evil.example/``, another site: any
    whitespace, control character or backslash refuses the target (and keeps CR/LF out
    of the Location header)."""
    if not target or any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in target):
        return default
    if "\\" in target or not target.startswith("/") or target.startswith("//"):
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return default
    return target


def work_choices() -> list[tuple[str, str]]:
    """(id, title) of the works with the most matches, for the filter's suggestions:
    in a library of thousands of works, the ones that are being copied are the ones a
    person filters by."""
    stats = records().match_stats(MatchQuery(limit=0))
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


def fail(status: int, message: str) -> NoReturn:
    raise ApiError(status, message)


def json_error(status: int, message: str) -> Response:
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


_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,19}")


def query_int(args: MultiDict[str, str], name: str, default: int, lo: int, hi: int) -> int:
    """The one parser of integer query parameters (``limit``, ``offset``, ``page``,
    ``per_page``): absent or blank is ``default``; anything but ASCII digits (with a
    sign), or a value outside ``lo``..``hi``, is a ``ValueError`` naming the parameter
    and the value given."""
    raw = (args.get(name) or "").strip()
    if not raw:
        return default
    if not _WHOLE_NUMBER.fullmatch(raw):
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise ValueError(f"{name} must be a whole number, got {shown!r}")
    value = int(raw)
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, got {value}")
    return value


def int_arg(name: str, default: int, lo: int, hi: int) -> int:
    """``query_int`` over this request's query string; a bad value is a 400 answer."""
    with bad_request():
        return query_int(request.args, name, default, lo, hi)


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
        return parse_utc(raw)  # tracker.common.timefmt: naive means UTC
    except ValueError:
        raise ValueError(
            f"{name} must be a date like 2024-05-01 or an ISO 8601 time, got {raw!r}"
        ) from None


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
    if verdict:
        check_verdict(verdict)
    min_score, max_score = _float(args, "min_score"), _float(args, "max_score")
    if min_score is not None and max_score is not None and min_score > max_score:
        raise ValueError("min_score must not be above max_score")
    sort = check_sort((args.get("sort") or "-score").strip())
    since = parse_when(args.get("since", ""), "since")
    until = parse_when(args.get("until", ""), "until", end=True)
    if since and until and since >= until:
        raise ValueError("since must be before until")
    per_page = query_int(args, "per_page", default_per_page, 1, MAX_PAGE)
    per_page = query_int(args, "limit", per_page, 0, MAX_PAGE)
    page = query_int(args, "page", 1, 1, MAX_PAGE_NUMBER)
    offset = query_int(args, "offset", (page - 1) * per_page, 0, MAX_OFFSET)
    domain = normalize_domain(args.get("domain") or "") or None
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
        sort=sort,
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


def filter_args(args: MultiDict[str, str], **changes: str | int | None) -> dict[str, str]:
    """The current filter query parameters (for links that keep them), changed."""
    out = {k: args[k] for k in FILTER_KEYS if args.get(k)}
    for key, value in changes.items():
        if value is None or value == "":
            out.pop(key, None)
        else:
            out[key] = str(value)
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
    """The page of a web list (``?page=``): a page out of range is the nearest one, a
    value that is no number the first (a mistyped link still shows the list)."""
    raw = request.args.get("page", "")
    try:
        page = query_int(request.args, "page", 1, -(10**19), 10**19)
    except ValueError:
        current_app.logger.info("page %r is not a number: the first page is shown", raw)
        page = 1
    return max(1, min(page, MAX_PAGE_NUMBER)), default_per_page
