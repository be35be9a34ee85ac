"""Removal checks: re-crawl the URLs of a case and move it by what the pages show.

Each URL is fetched through ``tracker.crawler.Crawler`` (SSRF guard, robots.txt, rate
limit; ``YINJI_ALLOW_PRIVATE_URLS=1`` for local servers) and classified:

- ``gone``: the site answered HTTP 404 or 410;
- ``changed``: the page answers but the check against the library finds no copy of the
  case's work in it any more (the text was taken down, the URL now shows something else);
- ``matching``: the copy is still there;
- ``unreachable``: no answer from the site (the host does not resolve, the connection
  is refused or times out): nothing is concluded, the URL is not "removed" (removal
  needs an answer from the site) and the state does not move;
- ``error``: anything else (5xx, robots.txt, refused address): nothing is concluded
  and the state does not move.

Each page of a chapter a site splits over pages is its own URL of the case and is
checked on its own. A URL filed before pages were (one URL for a chapter whose text
was assembled from several pages, its suspect's ``pages``) is checked over all those
pages: gone only when every page is gone, else the text of the pages that answer is
checked together.

A URL Yinji never fetched (a submitted text's URL, ``unverified``) is fetched like any
other: a copy found there makes it ``online``; a 404 or a page without the copy leaves
it ``unverified`` (nobody saw the copy there, so nothing was removed) and it is never
counted as removed.

Then the case moves: every URL removed (gone or changed after it was seen online) →
``removed``; a URL still matching after a notice → ``still_online`` (one page of a
split chapter that still copies keeps the case there); a URL matching again in a
``removed`` case → re-opened (``open``).

Each fetch is a ``recheck`` event in the history (time, HTTP status, outcome, the
SHA-256 of the bytes served, which are kept as a blob) and the state change a
``transition`` event, written together.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tracker.common.records import JSONObject, NotFound
from tracker.common.timefmt import iso_utc

from .model import RECHECK_STATES, Case, CaseEvent, CaseURL, check_transition, now
from .service import CaseService

if TYPE_CHECKING:
    from tracker.crawler.crawler import Crawler
    from tracker.crawler.results import Page
    from tracker.library import Library

log = logging.getLogger(__name__)

GONE_STATUSES = frozenset({404, 410})
WHO = "system:recheck"


@dataclass
class URLCheck:
    url: str
    outcome: str  # gone, changed, matching, unreachable, error
    http_status: int | None = None
    reason: str = ""
    fetched_at: datetime = field(default_factory=now)
    sha256: str | None = None
    score: float | None = None
    capture: str | None = None  # the evidence-log record of the page served
    pages: list[str] = field(default_factory=list)  # a legacy URL checked over its pages
    unverified: bool = False  # never seen online: gone/changed is not counted as removed

    def to_dict(self) -> JSONObject:
        return {
            "url": self.url,
            "outcome": self.outcome,
            "http_status": self.http_status,
            "reason": self.reason,
            "fetched_at": iso_utc(self.fetched_at),
            "sha256": self.sha256,
            "score": None if self.score is None else round(self.score, 4),
            "evidence_capture": self.capture,
            "pages": self.pages,
            "unverified": self.unverified,
        }


@dataclass
class RecheckResult:
    case_id: str
    before: str
    after: str
    checks: list[URLCheck]

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def to_dict(self) -> JSONObject:
        return {
            "case_id": self.case_id,
            "before": self.before,
            "after": self.after,
            "checks": [c.to_dict() for c in self.checks],
        }


def check_url(
    url: str,
    mother_ids: Iterable[str],
    *,
    crawler: Crawler,
    library: Library,
    keep: Callable[[bytes], str] | None = None,
    capture: Callable[[Page], str | None] | None = None,
) -> URLCheck:
    """Fetch ``url`` and classify it against ``mother_ids`` (see the module docstring).
    ``keep`` stores the raw bytes served and returns their key (sha256); ``capture``
    records the page in the evidence log and returns the record's reference."""
    from tracker.crawler import CrawlError, HTTPStatusError, Unreachable

    try:
        page = crawler.crawl_page(url)
    except HTTPStatusError as exc:
        outcome = "gone" if exc.status in GONE_STATUSES else "error"
        return URLCheck(url, outcome, exc.status, str(exc))
    except Unreachable as exc:
        return URLCheck(url, "unreachable", None, str(exc))  # no answer: not removed
    except CrawlError as exc:
        return URLCheck(url, "error", getattr(exc, "status", None), str(exc))
    sha = None
    if keep is not None and page.raw:
        try:
            sha = keep(page.raw)
        except ValueError as exc:  # too large to keep: the hash still says what was served
            log.warning("re-crawl of %s not kept: %s", url, exc)
    if sha is None and page.raw:
        import hashlib

        sha = hashlib.sha256(page.raw).hexdigest()
    ref = None
    if capture is not None:
        try:
            ref = capture(page)
        except Exception as exc:  # the case history still records the re-crawl
            log.warning("re-crawl of %s not captured in the evidence log: %s", url, exc)
    wanted = set(mother_ids)
    text = page.text or ""
    if not text.strip():
        empty = "the page has no text"
        return URLCheck(url, "changed", page.status, empty, page.fetched_at, sha, None, ref)
    result = library.check_text(text)
    hits = [m.score for m in result.matches if m.mother_id in wanted]
    if hits:
        return URLCheck(url, "matching", page.status, "", page.fetched_at, sha, max(hits), ref)
    reason = "no copy of the work found"
    return URLCheck(url, "changed", page.status, reason, page.fetched_at, sha, 0.0, ref)


def check_pages(
    url: str,
    pages: list[str],
    mother_ids: Iterable[str],
    *,
    crawler: Crawler,
    library: Library,
    keep: Callable[[bytes], str] | None = None,
    capture: Callable[[Page], str | None] | None = None,
) -> URLCheck:
    """Check a URL whose text was assembled from ``pages`` (a chapter over several
    pages filed as one URL before pages were URLs of their own): gone only when every
    page is gone; else the text of the pages that answer, together."""
    import hashlib

    from tracker.crawler import CrawlError, HTTPStatusError, Unreachable

    texts: list[str] = []
    statuses: list[int | None] = []
    outcomes: list[str] = []
    first: Page | None = None
    refs: list[str] = []
    for page_url in pages:
        try:
            page = crawler.crawl_page(page_url)
        except HTTPStatusError as exc:
            outcomes.append("gone" if exc.status in GONE_STATUSES else "error")
            statuses.append(exc.status)
            continue
        except Unreachable:
            outcomes.append("unreachable")
            statuses.append(None)
            continue
        except CrawlError as exc:
            outcomes.append("error")
            statuses.append(getattr(exc, "status", None))
            continue
        outcomes.append("fetched")
        statuses.append(page.status)
        first = first or page
        texts.append(page.text or "")
        if keep is not None and page.raw:
            try:
                keep(page.raw)
            except ValueError as exc:
                log.warning("re-crawl of %s not kept: %s", page_url, exc)
        if capture is not None:
            try:
                ref = capture(page)
            except Exception as exc:
                log.warning("re-crawl of %s not captured in the evidence log: %s", page_url, exc)
            else:
                if ref:
                    refs.append(ref)
    together = f"pages 1–{len(pages)} together"
    status = statuses[0] if statuses else None
    if first is None:
        if all(o == "gone" for o in outcomes):
            return URLCheck(url, "gone", status, f"every page gone ({together})", pages=pages)
        kind = "unreachable" if "unreachable" in outcomes else "error"
        return URLCheck(url, kind, status, f"no page answered ({together})", pages=pages)
    sha = hashlib.sha256(first.raw).hexdigest() if first.raw else None
    text = "\n".join(t for t in texts if t.strip())
    ref = ",".join(refs) or None
    wanted = set(mother_ids)
    hits = [m.score for m in library.check_text(text).matches if m.mother_id in wanted]
    if hits:
        return URLCheck(
            url, "matching", status, together, first.fetched_at, sha, max(hits), ref, pages
        )
    if len(texts) < len(pages) and any(o in ("error", "unreachable") for o in outcomes):
        why = f"a page did not answer and the others hold no copy ({together})"
        return URLCheck(url, "error", status, why, first.fetched_at, sha, 0.0, ref, pages)
    why = f"no copy of the work found ({together})"
    return URLCheck(url, "changed", status, why, first.fetched_at, sha, 0.0, ref, pages)


def _assembled_pages(library: Library, case: Case, u: CaseURL) -> list[str]:
    """The pages a legacy URL's text was assembled from (its suspect's ``pages``,
    the URL first), when more than one and not URLs of the case themselves."""
    if not u.suspect_id:
        return []
    try:
        suspect = library.store.get_suspect(u.suspect_id)
    except (KeyError, NotFound):
        return []
    pages = (suspect.metadata or {}).get("pages")
    if not isinstance(pages, list) or len(pages) < 2 or pages[0] != u.url:
        return []
    if any(case.url(str(p)) is not None for p in pages[1:]):
        return []
    return [str(p) for p in pages]


def _next_state(case: Case, checks: list[URLCheck]) -> tuple[str, str, dict[str, Any]]:
    """(state, note, data) after the checks applied to ``case.urls``; ``data["auto"]``
    names the reason (``back``, ``still_online``, ``removed``) so that each interface
    can say it in its own language."""
    matching = [c.url for c in checks if c.outcome == "matching"]
    if matching:
        if case.state == "removed":
            data = {"auto": "back", "url": matching[0]}
            return "open", f"页面恢复 / page is back: {matching[0]}", data
        if case.state == "notice_sent":
            data = {"auto": "still_online", "url": matching[0]}
            return "still_online", f"仍在线 / still online: {matching[0]}", data
        return case.state, "", {}
    concluded = [c for c in checks if c.outcome in ("gone", "changed") and not c.unverified]
    all_removed = bool(case.urls) and all(u.status == "removed" for u in case.urls)
    movable = case.state in ("open", "notice_sent", "documents", "still_online", "disputed")
    if concluded and all_removed and movable:
        gone = sum(1 for c in concluded if c.outcome == "gone")
        changed = len(concluded) - gone
        note = f"{gone} 个已删除（404/410），{changed} 个不再复制 / {gone} gone, {changed} changed"
        return "removed", note, {"auto": "removed", "gone": gone, "changed": changed}
    return case.state, "", {}


def _capturer(svc: CaseService, suspect_id: str) -> Callable[[Page], str | None]:
    def capture(page: Page) -> str | None:
        return svc.evidence.capture(suspect_id, page)

    return capture


def recheck_case(
    svc: CaseService,
    case_id: str,
    *,
    crawler: Crawler,
    library: Library,
    who: str = WHO,
    on_removed: Callable[[Case], object] | None = None,
) -> RecheckResult:
    """Re-crawl every URL of the case now and move it (see the module docstring)."""
    case = svc.get(case_id)
    mother_ids = case.mother_ids or [case.work]
    checks = []
    for u in case.urls:
        pages = _assembled_pages(library, case, u)
        if pages:
            chk = check_pages(
                u.url,
                pages,
                mother_ids,
                crawler=crawler,
                library=library,
                keep=svc.store.put_blob,
                capture=_capturer(svc, u.suspect_id),
            )
        else:
            chk = check_url(
                u.url,
                mother_ids,
                crawler=crawler,
                library=library,
                keep=svc.store.put_blob,
                capture=_capturer(svc, u.suspect_id),
            )
        if u.status == "unverified" and chk.outcome in ("gone", "changed"):
            chk.unverified = True
            chk.reason = (
                f"{chk.reason}; " if chk.reason else ""
            ) + "never seen online: unverified, not counted as removed"
        checks.append(chk)
    by_url = {c.url: c for c in checks}
    before = case.state

    def change(c: Case) -> list[CaseEvent]:
        events: list[CaseEvent] = []
        for u in c.urls:
            chk = by_url.get(u.url)
            if chk is None:
                continue
            u.last_checked_at = chk.fetched_at
            u.last_http_status = chk.http_status
            u.last_outcome = chk.outcome if not chk.reason else f"{chk.outcome}: {chk.reason}"
            if chk.outcome in ("gone", "changed"):
                u.status = "unverified" if chk.unverified else "removed"
            elif chk.outcome == "matching":
                u.status = "online"
            elif chk.outcome == "unreachable" and u.status not in ("removed", "unverified"):
                u.status = "unknown"
            events.append(CaseEvent(c.id, "recheck", who, data=chk.to_dict()))
        state, note, data = _next_state(c, checks)
        if state != c.state:
            check_transition(c.id, c.state, state)
            events.append(svc.state_event(c, state, who, note, data))
        return events

    saved = svc.update(case_id, change) if checks else case
    if saved.state == "removed" and before != "removed" and on_removed is not None:
        try:
            on_removed(saved)
        except Exception as exc:  # an alert failing must not fail the check
            log.warning("removal alert of case %s failed: %s", case_id, exc)
    return RecheckResult(case_id, before, saved.state, checks)


def recheck_cases(
    svc: CaseService,
    *,
    crawler: Crawler,
    library: Library,
    case_ids: Iterable[str] | None = None,
    who: str = WHO,
    on_removed: Callable[[Case], object] | None = None,
) -> list[RecheckResult]:
    """Re-check the given cases, or every case whose state asks for it (notice sent,
    still online, removed: did it go, did it come back?). The daily beat task calls this."""
    ids = (
        list(case_ids)
        if case_ids is not None
        else [c.id for c in svc.store.list_cases(states=list(RECHECK_STATES))]
    )
    return [
        recheck_case(svc, cid, crawler=crawler, library=library, who=who, on_removed=on_removed)
        for cid in ids
    ]
