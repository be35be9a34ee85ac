"""Where a report's times and page come from: the evidence log's records of a match
(capture or submission, check, verdict), the suspect and work records, and the timeline
built from recorded times only (a time not known is reported missing, never guessed;
times in an impossible order are flagged). ``page_source`` gives a takedown notice
(``tracker.cases.facts``) the same origin of a page as the report's timeline."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tracker.common.records import Match, Suspect
from tracker.common.timefmt import iso_utc, parse_utc
from tracker.reports.schema import (
    FETCHED_SOURCES,
    MISSING,
    SUBMITTED_NOTE,
    CaptureInfo,
    SuspectInfo,
    TimelineEvent,
    WorkInfo,
)

if TYPE_CHECKING:
    from tracker.evidence import Capture, EvidenceLog, Submission


def sha256_text(text: str) -> str:
    """SHA-256 of a text as UTF-8 (the digests reports and notices print)."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


class Logged:
    """What the evidence log says about a match (each None when it has no record)."""

    def __init__(self) -> None:
        self.capture: Capture | None = None
        self.capture_index: int | None = None
        self.submission: Submission | None = None
        self.checked_at: datetime | None = None
        self.verdict_at: datetime | None = None
        self.error: str | None = None


def from_log(log: EvidenceLog, match: Match) -> Logged:
    from tracker.evidence import Capture, Submission

    found = Logged()
    try:
        entries = log.entries(suspect_id=match.suspect_id, mother_id=match.mother_id)
        sources: dict[int, Capture | Submission] = {}
        check_source: int | None = None  # the capture/submission the last check used
        last_source: int | None = None
        for entry in entries:  # oldest first: the last of each kind wins
            kind, payload = entry.kind, entry.payload
            if kind == "capture":
                sources[entry.index] = Capture.from_json(payload)
                last_source = entry.index
            elif kind == "submission":
                sources[entry.index] = Submission.from_json(payload)
                last_source = entry.index
            elif kind == "check" and any(
                isinstance(m, Mapping) and m.get("mother_id") == match.mother_id
                for m in _list(payload.get("matches"))
            ):
                found.checked_at = _parse(payload.get("checked_at"))
                named = payload.get("capture_index")
                check_source = named if isinstance(named, int) else last_source
            elif kind == "verdict" and payload.get("mother_id") == match.mother_id:
                # The time of the decision the report shows (a later pending resets it).
                if payload.get("verdict") == match.verdict and match.verdict != "pending":
                    found.verdict_at = _parse(payload.get("at"))
                else:
                    found.verdict_at = None
        chosen = check_source if check_source in sources else last_source
        if chosen is not None:
            source = sources[chosen]
            if isinstance(source, Capture):
                found.capture, found.capture_index = source, chosen
            else:
                found.submission = source
    except Exception as exc:  # a damaged log must not stop the report: it says so
        found = Logged()
        found.error = f"{type(exc).__name__}: {exc}"
    return found


def _list(value: object) -> list[object]:
    """A JSON list of a log record, or none."""
    return value if isinstance(value, list) else []


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    if not re.search(r"(Z|[+-]\d\d:\d\d)$", value.strip()):
        return None  # a time without a zone cannot be placed
    try:
        return parse_utc(value)
    except ValueError:
        return None


def capture_info(capture: Capture | None, index: int | None) -> CaptureInfo | None:
    if capture is None:
        return None
    return {
        "log_index": index,
        "requested_url": capture.requested_url,
        "redirects": [f"{h.status} {h.url} -> {h.location}" for h in capture.redirects],
        "final_url": capture.final_url,
        "resolved_ip": capture.resolved_ip,
        "http_status": capture.http_status,
        "fetched_at": iso_utc(capture.fetched_at),
        "body_sha256": capture.body.sha256,
        "body_size": capture.body.size,
        "text_sha256": capture.text.sha256 if capture.text else None,
        "tls_subject": capture.tls.subject if capture.tls else None,
        "tls_fingerprint_sha256": capture.tls.fingerprint_sha256 if capture.tls else None,
        "screenshot_sha256": capture.screenshot.sha256 if capture.screenshot else None,
        "screenshot_none_reason": capture.screenshot_none_reason,
        "crawler_version": capture.crawler_version,
    }


def is_fetched(suspect: Suspect | None, capture: Capture | None) -> bool:
    if capture is not None:
        return True
    if suspect is None:
        return False
    return (
        suspect.source in FETCHED_SOURCES
        or bool(suspect.raw)
        or "final_url" in (suspect.metadata or {})
    )


def suspect_info(
    match: Match,
    suspect: Suspect | None,
    capture: Capture | None,
    submission: Submission | None,
) -> SuspectInfo:
    fetched = is_fetched(suspect, capture) and submission is None
    fetched_at: str | None = None
    received_at: str | None = None
    if capture is not None:
        fetched_at = iso_utc(capture.fetched_at)
    elif fetched and suspect is not None:
        fetched_at = iso_utc(suspect.fetched_at)
    if not fetched:
        if submission is not None:
            received_at = iso_utc(submission.received_at)
        elif suspect is not None:
            # The record's time of a text handed in is when it was received.
            received_at = iso_utc(suspect.fetched_at)
    return {
        "id": match.suspect_id,
        "title": suspect.title if suspect else match.suspect_title,
        "url": suspect.url if suspect else match.suspect_url,
        "domain": (suspect.domain if suspect else "") or match.domain,
        "source": suspect.source if suspect else "",
        "fetched": fetched,
        "fetched_at": fetched_at,
        "received_at": received_at,
        "checked_at": iso_utc(suspect.checked_at) if suspect and suspect.checked_at else None,
        "characters": len(suspect.text) if suspect else None,
        "sha256": sha256_text(suspect.text) if suspect else None,
        "raw_sha256": hashlib.sha256(suspect.raw).hexdigest()
        if suspect is not None and suspect.raw
        else None,
    }


_ORDER_LABELS = {
    "imported": "作品入库 / work imported",
    "fetched": "页面抓取 / page fetched",
    "submitted": "文本提交 / text submitted",
    "checked": "检测 / checked",
    "verdict": "审核结论 / verdict",
}


def timeline_of(
    match: Match,
    work: WorkInfo,
    suspect: SuspectInfo,
    record: Suspect | None,
    found: Logged,
    verdict_at: datetime | None,
) -> list[TimelineEvent]:
    """Imported, fetched (or submitted), checked, verdict: recorded times only."""
    events: list[TimelineEvent] = [
        {
            "event": "imported",
            "label": _ORDER_LABELS["imported"],
            "at": work["ingested_at"],
            "note": "作品库记录 / library record" if work["ingested_at"] else MISSING,
        }
    ]
    if suspect["fetched"]:
        events.append(
            {
                "event": "fetched",
                "label": _ORDER_LABELS["fetched"],
                "at": suspect["fetched_at"],
                "note": (
                    ("证据日志抓取记录 / evidence log capture" if found.capture else "")
                    or ("疑似页面记录 / suspect record" if suspect["fetched_at"] else MISSING)
                ),
            }
        )
    else:
        events.append(
            {
                "event": "submitted",
                "label": _ORDER_LABELS["submitted"],
                "at": suspect["received_at"],
                "note": SUBMITTED_NOTE,
            }
        )
    checked = found.checked_at
    checked_at = iso_utc(checked) if checked else suspect["checked_at"]
    if checked is None and checked_at is None and record is None:
        # The suspect record is gone: the match's first check time is still recorded.
        checked_at = iso_utc(match.created_at)
    events.append(
        {
            "event": "checked",
            "label": _ORDER_LABELS["checked"],
            "at": checked_at,
            "note": (
                "证据日志检测记录 / evidence log check"
                if checked
                else "疑似页面记录 / suspect record"
                if suspect["checked_at"]
                else "首次检测 / first check of this match"
                if checked_at
                else MISSING
            ),
        }
    )
    events.append(_verdict_event(match, record, verdict_at))
    return events


def _verdict_event(
    match: Match, record: Suspect | None, verdict_at: datetime | None
) -> TimelineEvent:
    label = _ORDER_LABELS["verdict"]
    if match.verdict == "pending":
        return {"event": "verdict", "label": label, "at": None, "note": "待审核 / pending"}
    if verdict_at is not None:
        note = "证据日志审核记录 / evidence log verdict"
        return {"event": "verdict", "label": label, "at": iso_utc(verdict_at), "note": note}
    # Without the log, the match's last update is the verdict's time only when no check
    # came after it (a re-check also updates the match).
    checked = record.checked_at if record is not None else None
    if checked is not None and _utc(match.updated_at) > _utc(checked):
        note = "审核记录更新时间 / when the verdict was last changed"
        return {"event": "verdict", "label": label, "at": iso_utc(match.updated_at), "note": note}
    note = f"{MISSING}（之后曾重新检测 / re-checked since）"
    return {"event": "verdict", "label": label, "at": None, "note": note}


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def timeline_problems(timeline: list[TimelineEvent], first_check: str | None) -> list[str]:
    """Recorded times in an impossible order: a check before its work was imported or
    its page fetched (or text submitted), a verdict before the match's first check."""
    at = {e["event"]: e["at"] for e in timeline}
    problems = []

    def before(first: str, a: str | None, then: str, b: str | None, why: str = "") -> None:
        if a is not None and b is not None and a > b:
            problems.append(
                f"时间顺序矛盾 / Times contradict each other: {_ORDER_LABELS[then]} {b} "
                f"is before {_ORDER_LABELS[first]} {a}{why}"
            )

    before(
        "imported",
        at.get("imported"),
        "checked",
        at.get("checked"),
        " (the work was re-imported after this check, or a clock was wrong)",
    )
    before("fetched", at.get("fetched"), "checked", at.get("checked"))
    before("submitted", at.get("submitted"), "checked", at.get("checked"))
    before("checked", first_check, "verdict", at.get("verdict"), " (the match's first check)")
    return problems


# --- facts a takedown notice quotes (tracker.cases.facts) -------------------------------------
class PageSource:
    """Where a suspect's text came from, as recorded: fetched (the evidence log's capture,
    else the suspect record's fetch time and raw-page hash) or submitted (the time Yinji
    received it; never a fetch time). The same rules as the report's timeline."""

    def __init__(
        self,
        *,
        fetched: bool,
        at: datetime | None,
        content_sha256: str | None,
        from_capture: bool,
        log_error: str | None = None,
    ) -> None:
        self.fetched = fetched
        self.at = at  # fetch time (fetched) or receipt time (submitted); None: not recorded
        self.content_sha256 = content_sha256  # the bytes as served (fetched pages only)
        self.from_capture = from_capture
        self.log_error = log_error


def page_source(
    match: Match, suspect: Suspect | None, evidence: EvidenceLog | None = None
) -> PageSource:
    """The recorded origin of ``match``'s suspect text (see ``PageSource``)."""
    found = from_log(evidence, match) if evidence is not None else Logged()
    if found.capture is not None and found.submission is None:
        return PageSource(
            fetched=True,
            at=found.capture.fetched_at,
            content_sha256=found.capture.body.sha256,
            from_capture=True,
        )
    fetched = is_fetched(suspect, None) and found.submission is None
    if fetched and suspect is not None:
        raw = hashlib.sha256(suspect.raw).hexdigest() if suspect.raw else None
        return PageSource(
            fetched=True,
            at=suspect.fetched_at,
            content_sha256=raw,
            from_capture=False,
            log_error=found.error,
        )
    received = found.submission.received_at if found.submission is not None else None
    if received is None and suspect is not None:
        received = suspect.fetched_at  # a text handed in: the record's time is its receipt
    return PageSource(
        fetched=False, at=received, content_sha256=None, from_capture=False, log_error=found.error
    )
