"""Normalisation shared by the two adapters, so that both give the same answers.

Everything here is pure Python (no sqlite3, no pymongo): the adapters only translate
the normalised values into SQL or into a MongoDB filter.
"""

from __future__ import annotations

import errno
import ipaddress
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from tracker.common.records import SORTS, JSONObject, Match, MatchQuery, Suspect
from tracker.common.rules import check_sort, check_verdict, domain_of, normalize_domain

# sort key of MatchQuery -> (field, descending), derived from the one list of sort keys
SORT_FIELDS: dict[str, tuple[str, bool]] = {key: (key.lstrip("-"), key[0] == "-") for key in SORTS}

TOP_N = 10  # length of the top lists of match_stats

# Fields of a match that a (re-)check computes; everything else (verdict, note,
# created_at) belongs to the person reviewing it and survives a re-check.
MACHINE_FIELDS: tuple[str, ...] = (
    "suspect_id",
    "mother_id",
    "score",
    "coverage",
    "mother_coverage",
    "passages",
    "regions",
    "engine",
    "mother_title",
    "suspect_title",
    "suspect_url",
    "domain",
    "rdomain",
    "updated_at",
)


# --- time ---------------------------------------------------------------------
def to_utc(value: datetime) -> datetime:
    """Aware UTC, floored to the millisecond.

    MongoDB keeps milliseconds only. Flooring in both adapters means that what a
    caller reads back equals what it got from ``put_*``, and that the two adapters
    compare the same instants. Naive datetimes are taken to be UTC.
    """
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


def opt_utc(value: datetime | None) -> datetime | None:
    return None if value is None else to_utc(value)


def ceil_utc(value: datetime) -> datetime:
    """Exclusive upper bound on millisecond-floored values: ``v < until`` for the
    original instant ``v`` implies ``floor(v) < ceil(until)``."""
    exact = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    floored = to_utc(exact)
    return floored if floored == exact else floored + timedelta(milliseconds=1)


# --- domains (``domain_of`` and ``normalize_domain`` are in tracker.common.rules) --------------
def reverse_domain(domain: str) -> str:
    """``www.example.com`` -> ``com.example.www``.

    Stored next to the domain so that "this host or any sub-domain of it" becomes a
    prefix range on an indexed field instead of a suffix scan. An IP address has no
    parent domains: it is kept whole, in brackets, so that only an exact query
    matches it (``0.0.1`` must not select ``127.0.0.1``).
    """
    if not domain:
        return ""
    try:
        ipaddress.ip_address(domain)
    except ValueError:
        return ".".join(reversed(domain.split(".")))
    return f"[{domain}]"


def domain_bounds(rdomain: str) -> tuple[str, str]:
    """Range ``[lo, hi)`` of the reversed domains strictly below ``rdomain``:
    ``com.example.`` <= r < ``com.example/`` ("/" is the character after ".").
    ``com.exampleX`` and ``com.example-x`` fall outside, so ``badexample.com``
    never matches ``example.com``."""
    return rdomain + ".", rdomain + "/"


# --- JSON -----------------------------------------------------------------------
def dumps(value: object) -> str:
    """Strict JSON: NaN and Infinity raise ``ValueError`` (no store holds what a JSON
    client could not read back)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def json_normalize(value: Mapping[str, object]) -> JSONObject:
    """What a JSON round trip gives (tuples -> lists, int keys -> str): both
    adapters return metadata in this shape, whatever they store."""
    return json.loads(dumps(value))


# --- validation -------------------------------------------------------------------
def check_id(value: str, what: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")


# --- storage failures ---------------------------------------------------------------
def storage_problem(exc: BaseException, where: str) -> str | None:
    """The cause, in words, of a sqlite or file-system error on ``where``; None when
    it is none of the known environment problems."""
    text = str(exc).lower()
    number = getattr(exc, "errno", None)
    if type(exc).__module__ == "sqlite3":  # sqlite3.OperationalError, DatabaseError
        if "disk is full" in text or "disk i/o" in text:
            return f"{where} is full (or the disk failed): free space, then run the command again"
        if "readonly" in text or "read-only" in text:
            return f"{where} is read-only: make it writable, or use only reading commands"
        if "unable to open" in text:
            return f"{where} cannot be opened (missing, or no permission to read it)"
        if "locked" in text or "busy" in text:
            return f"{where} stayed locked by another process: try again when it is done"
        if "malformed" in text or "not a database" in text:
            return f"{where} is damaged ({exc}): restore it from a backup"
        return None
    if isinstance(exc, OSError):
        if number in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return f"{where} is full ({exc.strerror}): free space, then run the command again"
        if number in (errno.EROFS, errno.EACCES, errno.EPERM):
            return f"{where} is not writable ({exc.strerror}): make it writable"
    return None


# --- records ----------------------------------------------------------------------
def prepare_suspect(suspect: Suspect) -> Suspect:
    """The suspect as stored: UTC times, lower-case domain (taken from the URL when
    the caller left it empty), JSON-shaped metadata."""
    check_id(suspect.id, "suspect id")
    domain = normalize_domain(suspect.domain) or domain_of(suspect.url)
    return replace(
        suspect,
        domain=domain,
        fetched_at=to_utc(suspect.fetched_at),
        checked_at=opt_utc(suspect.checked_at),
        metadata=json_normalize(suspect.metadata or {}),
        raw=bytes(suspect.raw) if suspect.raw is not None else None,
    )


def prepare_matches(
    suspect_id: str,
    matches: Iterable[Match],
    mother_titles: dict[str, str],
    suspect: Suspect | None,
    now: datetime,
) -> list[Match]:
    """Validate and complete the matches of one ``put_matches`` call.

    Duplicates in the input collapse (last wins), so a batch can never create two
    rows for one id. Denormalised fields the caller left empty are filled from the
    stored mother and suspect, so dashboard search and domain filters work on them.
    """
    out: dict[str, Match] = {}
    for m in matches:
        if m.suspect_id != suspect_id:
            raise ValueError(
                f"match for suspect {m.suspect_id!r} passed to put_matches({suspect_id!r})"
            )
        check_id(m.mother_id, "mother id")
        check_verdict(m.verdict)
        url = m.suspect_url or (suspect.url if suspect else "")
        domain = normalize_domain(m.domain) or domain_of(url) or (suspect.domain if suspect else "")
        out[m.id] = replace(
            m,
            score=float(m.score),
            coverage=float(m.coverage),
            mother_coverage=float(m.mother_coverage),
            passages=list(m.passages),
            regions=list(m.regions),
            mother_title=m.mother_title or mother_titles.get(m.mother_id, ""),
            suspect_title=m.suspect_title or (suspect.title if suspect else ""),
            suspect_url=url,
            domain=domain,
            created_at=to_utc(m.created_at),
            updated_at=now,
        )
    return list(out.values())


@dataclass(frozen=True)
class Filters:
    """A MatchQuery's filters, validated and normalised (empty strings from web
    forms mean "no filter")."""

    verdict: str | None
    min_score: float | None
    max_score: float | None
    mother_id: str | None
    suspect_id: str | None
    rdomain: str | None
    since: datetime | None
    until: datetime | None
    search: str | None


def filters_of(query: MatchQuery | None) -> Filters:
    q = query or MatchQuery()
    if q.verdict:
        check_verdict(q.verdict)
    domain = normalize_domain(q.domain) if q.domain else ""
    return Filters(
        verdict=q.verdict or None,
        min_score=None if q.min_score is None else float(q.min_score),
        max_score=None if q.max_score is None else float(q.max_score),
        mother_id=q.mother_id or None,
        suspect_id=q.suspect_id or None,
        rdomain=reverse_domain(domain) or None,
        since=opt_utc(q.since),
        until=None if q.until is None else ceil_utc(q.until),
        search=q.search or None,
    )


def sort_of(query: MatchQuery) -> tuple[str, bool]:
    return SORT_FIELDS[check_sort(query.sort)]


def page_of(query: MatchQuery) -> tuple[int, int]:
    """(offset, limit); a non-positive limit selects nothing (it never means "all":
    MongoDB would read ``limit(0)`` as unlimited, sqlite as none)."""
    return max(0, int(query.offset)), max(0, int(query.limit))
