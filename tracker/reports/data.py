"""The evidence report's data: ``report_data`` gathers everything a report shows, as a
typed, JSON-serialisable structure (the JSON report itself; the HTML and PDF renderers
read the same structure).

Honesty rules the renderers rely on:

- Every passage carries two similarities: on pinyin initials (what the engines match
  on, ``similarity`` / ``initials_similarity``) and on the characters themselves
  (``char_similarity``, from the record when the aligner gave one, else computed with
  ``tracker.textdiff``), and the character diff that marks what differs.
- A passage the aligner split into segment pairs (a reordered copy) lists them in
  ``segments``, each with its own offsets, texts, similarities and diff.
- The timeline (imported, fetched or submitted, checked, verdict) uses only times that
  were recorded; a time that is not known is reported missing, a pasted text has no
  fetch time, and times in an impossible order are flagged in ``timeline_problems``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from tracker import __version__
from tracker.records import ChapterRef, Match, Mother, Suspect
from tracker.store.base import match_sides
from tracker.textdiff import char_diff
from tracker.timefmt import iso_utc, parse_utc

if TYPE_CHECKING:
    from tracker.evidence import Capture, EvidenceLog, Submission
    from tracker.library import Library

# Suspect sources whose text was fetched from the web (the rest was handed in).
FETCHED_SOURCES = frozenset({"crawl", "book", "recheck"})
SUBMITTED_NOTE = "提交的文本，未抓取 / submitted text, not fetched"
MISSING = "未记录 / not recorded"

VERDICT_LABELS = {
    "pending": "待审核 / Pending",
    "confirmed": "已确认侵权 / Confirmed",
    "dismissed": "已排除 / Dismissed",
}

# Characters that reportlab and XML cannot carry (C0 controls except tab/newline,
# lone surrogates from hostile JSON): replaced so one bad byte cannot break a report.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


class WorkInfo(TypedDict):
    """The original work. Its text fields are None when it was deleted from the library."""

    id: str
    title: str
    source: str
    ingested_at: str | None
    characters: int | None
    sha256: str | None  # of the text, UTF-8
    #: The book the work is a chapter of (``ChapterRef``: the work's metadata); None /
    #: "" when it is in no book. ``chapter_zh``/``chapter_en`` name the chapter as
    #: notices do: ``《西游记》第四十一回 …`` / ``"西游记", chapter 41 (…)``.
    book_id: str | None
    book_title: str
    author: str
    chapter: str
    chapter_index: int | None
    chapter_zh: str
    chapter_en: str


class SuspectInfo(TypedDict):
    """The suspect page or text. Its text fields are None when the record was deleted."""

    id: str
    title: str
    url: str
    domain: str
    source: str
    fetched: bool  # fetched from the web (False: a text handed in)
    fetched_at: str | None  # None for a text handed in: it was never fetched
    received_at: str | None  # a text handed in: when Yinji received it
    checked_at: str | None
    characters: int | None
    sha256: str | None  # of the extracted text, UTF-8
    raw_sha256: str | None  # of the raw page bytes as fetched, when kept


class CaptureInfo(TypedDict):
    """The evidence log's capture of the page (``tracker.evidence.Capture``)."""

    log_index: int | None
    requested_url: str
    redirects: list[str]  # "301 http://a -> /b", in order
    final_url: str
    resolved_ip: str | None
    http_status: int
    fetched_at: str
    body_sha256: str
    body_size: int
    text_sha256: str | None
    tls_subject: str | None
    tls_fingerprint_sha256: str | None
    screenshot_sha256: str | None
    screenshot_none_reason: str | None
    crawler_version: str


class DiffData(TypedDict):
    """Character diff of a passage (``tracker.textdiff``): spans per side as
    ``[start, end, kind, detail]``, offsets relative to the passage text."""

    suspect: list[list[Any]]
    mother: list[list[Any]]
    counts: dict[str, int]


class SegmentData(TypedDict):
    """One aligned pair of segments inside a passage (a reordered copy has several)."""

    suspect_start: int
    suspect_end: int
    mother_start: int
    mother_end: int
    initials_similarity: float | None
    char_similarity: float | None
    suspect_text: str | None
    mother_text: str | None
    diff: DiffData | None


class PassageData(TypedDict):
    """One copied passage: offsets are Python string indices, end exclusive."""

    n: int  # 1-based, in suspect order
    suspect_start: int
    suspect_end: int
    mother_start: int
    mother_end: int
    similarity: float  # on pinyin initials (the engines' measure); = initials_similarity
    initials_similarity: float
    char_similarity: float | None  # on the characters; None when a text is missing
    char_similarity_source: Literal["record", "computed"] | None
    suspect_text: str | None
    mother_text: str | None
    diff: DiffData | None  # the whole passage's character diff (None: a text is missing)
    segments: list[SegmentData]  # the aligned segment pairs, when the aligner gave them


class ExcludedData(TypedDict):
    """Text inside a region the work does not hold there (an inserted ad or watermark
    line): suspect offsets, end exclusive."""

    suspect_start: int
    suspect_end: int
    suspect_text: str | None


class RegionData(TypedDict):
    """One copied stretch as a person reads it (``tracker.records.Region``): the
    passages between inserted lines taken together, the lines listed as excluded."""

    n: int  # 1-based, in suspect order
    suspect_start: int
    suspect_end: int
    mother_start: int
    mother_end: int
    similarity: float  # the region's own (its text less the excluded spans)
    excluded: list[ExcludedData]


class TimelineEvent(TypedDict):
    """One step of the evidence's history, in the order they must have happened."""

    event: Literal["imported", "fetched", "submitted", "checked", "verdict"]
    label: str  # bilingual
    at: str | None  # ISO 8601 UTC; None: not recorded (never guessed)
    note: str  # where the time comes from, or why there is none


class ReportData(TypedDict):
    """Everything an evidence report shows; times are ISO 8601 UTC (``...Z``)."""

    report: Literal["yinji-evidence"]
    version: int
    generator: str
    generated_at: str
    match_id: str
    case_id: str | None  # the takedown case this report was made for, when one
    notice: str | None  # the notice number (YJ-...) it is attached to, when one
    evidence_key: str | None  # the evidence log's public-key fingerprint (SHA-256), if read
    work: WorkInfo
    suspect: SuspectInfo
    score: float
    coverage: float
    mother_coverage: float
    engine: str
    verdict: str
    note: str
    created_at: str | None
    updated_at: str | None
    passages: list[PassageData]
    regions: list[RegionData]  # the passages by copied stretch (stored with the match)
    capture: CaptureInfo | None
    timeline: list[TimelineEvent]
    timeline_problems: list[str]  # times in an impossible order (shown loudly)
    warnings: list[str]


def clean_text(text: str) -> str:
    """``text`` with the characters reportlab and XML cannot carry replaced by U+FFFD."""
    return _UNPRINTABLE.sub("\ufffd", text or "")


def _key_fingerprint(evidence: EvidenceLog | None) -> str | None:
    """The evidence log's key fingerprint (``tracker.evidence.keys``), or None."""
    if evidence is None:
        return None
    try:
        return str(evidence.key_id)
    except Exception:  # a key that cannot be read: the report says nothing of it
        return None


def reference_line(d: ReportData) -> str:
    """The report's references: the case and the notice it is attached to (when made
    for one), then the match (suspect / work)."""
    parts = []
    if d.get("case_id"):
        parts.append(f"案件编号 Case: {d['case_id']}")
    if d.get("notice"):
        parts.append(f"通知编号 Notice: {d['notice']}")
    parts.append(f"匹配 Match: {d['match_id'].replace(chr(31), ' / ')}")
    if d.get("evidence_key"):
        from tracker.evidence.keys import format_fingerprint

        key = format_fingerprint(str(d["evidence_key"]))
        parts.append(f"证据日志公钥指纹 Evidence-log key SHA-256: {key}")
    return " | ".join(parts)


def public_source(source: str) -> str:
    """A work's source as a document for others may show it: a web address as is, a
    local file only by its name (``/tmp/x/wucheng.jsonl:1`` → ``wucheng.jsonl:1``): no
    local path leaves the machine."""
    text = (source or "").strip()
    if re.match(r"^https?://", text, re.I):
        return text
    return re.split(r"[\\/]", text)[-1]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def report_data(
    library: Library,
    match_id: str,
    *,
    evidence: EvidenceLog | None = None,
    capture: Capture | None = None,
    submission: Submission | None = None,
    verdict_at: datetime | None = None,
    case_id: str | None = None,
    notice: str | None = None,
) -> ReportData:
    """Everything a report shows, as JSON-serialisable data (the JSON report itself).
    ``case_id`` and ``notice`` (the notice number) tie a report attached to a takedown
    notice to its case and notice.

    Raises ``tracker.store.NotFound`` (a ``KeyError``) when the match does not exist.
    The mother or suspect may have been deleted since (a confirmed match is kept as
    evidence): their texts are then missing and the report says so.

    ``evidence`` (a ``tracker.evidence.EvidenceLog``) supplies the page's latest
    capture (or submission), the check time and the time of the verdict; ``capture``,
    ``submission`` and ``verdict_at`` give them directly and take precedence.
    """
    store = library.store
    match: Match = store.get_match(match_id)
    mother, suspect = match_sides(store, match)
    found = _from_log(evidence, match) if evidence is not None else _Logged()
    capture = capture or found.capture
    submission = submission or found.submission
    verdict_at = verdict_at or found.verdict_at
    suspect_info = _suspect_info(match, suspect, capture, submission)
    work = _work_info(match, mother)
    timeline = _timeline(match, work, suspect_info, suspect, found, verdict_at)
    problems = _timeline_problems(timeline, iso_utc(match.created_at))
    capture_info = _capture_info(capture, found.capture_index if capture is found.capture else None)
    return {
        "report": "yinji-evidence",
        "version": 2,
        "generator": f"音迹 Yinji {__version__}",
        "generated_at": iso_utc(datetime.now(UTC)),
        "match_id": match.id,
        "case_id": case_id,
        "notice": notice,
        "evidence_key": _key_fingerprint(evidence),
        "work": work,
        "suspect": suspect_info,
        "score": round(float(match.score), 4),
        "coverage": round(float(match.coverage), 4),
        "mother_coverage": round(float(match.mother_coverage), 4),
        "engine": match.engine,
        "verdict": match.verdict,
        "note": match.note,
        "created_at": iso_utc(match.created_at),
        "updated_at": iso_utc(match.updated_at),
        "passages": _passages(match, mother, suspect),
        "regions": _regions(match, suspect),
        "capture": capture_info,
        "timeline": timeline,
        "timeline_problems": problems,
        "warnings": _warnings(match, mother, suspect, found),
    }


class _Logged:
    """What the evidence log says about a match (each None when it has no record)."""

    def __init__(self) -> None:
        self.capture: Capture | None = None
        self.capture_index: int | None = None
        self.submission: Submission | None = None
        self.checked_at: datetime | None = None
        self.verdict_at: datetime | None = None
        self.error: str | None = None


def _from_log(log: EvidenceLog, match: Match) -> _Logged:
    from tracker.evidence import Capture, Submission

    found = _Logged()
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
        found = _Logged()
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


def _capture_info(capture: Capture | None, index: int | None) -> CaptureInfo | None:
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


def _warnings(
    match: Match, mother: Mother | None, suspect: Suspect | None, found: _Logged
) -> list[str]:
    warnings: list[str] = []
    if found.error:
        warnings.append(f"证据日志无法读取 / The evidence log could not be read: {found.error}")
    if mother is None:
        warnings.append("作品已从作品库删除，无法显示原文 / The work was deleted from the library.")
    elif mother.ingested_at > match.updated_at:
        # Offsets point into the text that was checked; a replaced work may differ.
        warnings.append(
            "该作品在本次检测之后被重新导入，原文偏移可能不一致 / The work was re-imported "
            "after this check: its offsets may not match the current text."
        )
    if suspect is None:
        warnings.append("疑似页面记录已删除 / The suspect record was deleted.")
    return warnings


def _diff(suspect_text: str | None, mother_text: str | None) -> DiffData | None:
    if suspect_text is None or mother_text is None:
        return None
    diff = char_diff(suspect_text, mother_text)
    return {
        "suspect": [span.to_json() for span in diff.suspect],
        "mother": [span.to_json() for span in diff.mother],
        "counts": diff.counts(),
    }


def _ratio(diff: DiffData | None, stext: str | None, mtext: str | None) -> float | None:
    if diff is None or stext is None or mtext is None:
        return None
    total = len(stext) + len(mtext)
    return round(2.0 * diff["counts"]["same"] / total, 4) if total else 1.0


def _number(value: Any) -> float | None:
    try:
        return None if value is None else round(float(value), 4)
    except (TypeError, ValueError):
        return None


def _segment_offsets(item: Any) -> tuple[int, int, int, int, Any, Any] | None:
    """A segment pair from the aligner, as an object with offset attributes, a dict or
    a (suspect_start, suspect_end, mother_start, mother_end[, similarity]) tuple."""
    names = ("suspect_start", "suspect_end", "mother_start", "mother_end")
    try:
        if isinstance(item, dict):
            values = [int(item[n]) for n in names]
            sim, char = item.get("similarity"), item.get("char_similarity")
        elif isinstance(item, list | tuple):
            values = [int(v) for v in item[:4]]
            sim, char = (item[4] if len(item) > 4 else None), None
        else:
            values = [int(getattr(item, n)) for n in names]
            sim, char = getattr(item, "similarity", None), getattr(item, "char_similarity", None)
    except (KeyError, AttributeError, TypeError, ValueError, IndexError):
        return None
    if len(values) != 4:
        return None
    return values[0], values[1], values[2], values[3], sim, char


def _segments(
    raw: Iterable[Any] | None, mother: Mother | None, suspect: Suspect | None
) -> list[SegmentData]:
    segments: list[SegmentData] = []
    for item in raw or ():
        found = _segment_offsets(item)
        if found is None:
            continue
        ss, se, ms, me, sim, char = found
        stext = suspect.text[ss:se] if suspect else None
        mtext = mother.text[ms:me] if mother else None
        diff = _diff(stext, mtext)
        segments.append(
            {
                "suspect_start": ss,
                "suspect_end": se,
                "mother_start": ms,
                "mother_end": me,
                "initials_similarity": _number(sim),
                "char_similarity": (
                    _number(char) if char is not None else _ratio(diff, stext, mtext)
                ),
                "suspect_text": stext,
                "mother_text": mtext,
                "diff": diff,
            }
        )
    return segments


def _regions(match: Match, suspect: Suspect | None) -> list[RegionData]:
    return [
        {
            "n": n,
            "suspect_start": r.suspect_start,
            "suspect_end": r.suspect_end,
            "mother_start": r.mother_start,
            "mother_end": r.mother_end,
            "similarity": round(float(r.similarity), 4),
            "excluded": [
                {
                    "suspect_start": a,
                    "suspect_end": b,
                    "suspect_text": suspect.text[a:b] if suspect else None,
                }
                for a, b in r.excluded
            ],
        }
        for n, r in enumerate(sorted(match.regions, key=lambda r: r.suspect_start), 1)
    ]


def _passages(match: Match, mother: Mother | None, suspect: Suspect | None) -> list[PassageData]:
    passages: list[PassageData] = []
    for n, p in enumerate(sorted(match.passages, key=lambda p: p.suspect_start), 1):
        stext = suspect.text[p.suspect_start : p.suspect_end] if suspect else None
        mtext = mother.text[p.mother_start : p.mother_end] if mother else None
        diff = _diff(stext, mtext)
        recorded = _number(getattr(p, "char_similarity", None))
        char = recorded if recorded is not None else _ratio(diff, stext, mtext)
        initials = round(float(p.similarity), 4)
        passages.append(
            {
                "n": n,
                "suspect_start": p.suspect_start,
                "suspect_end": p.suspect_end,
                "mother_start": p.mother_start,
                "mother_end": p.mother_end,
                "similarity": initials,
                "initials_similarity": initials,
                "char_similarity": char,
                "char_similarity_source": (
                    "record" if recorded is not None else "computed" if char is not None else None
                ),
                "suspect_text": stext,
                "mother_text": mtext,
                "diff": diff,
                "segments": _segments(getattr(p, "segments", None), mother, suspect),
            }
        )
    return passages


def _work_info(match: Match, mother: Mother | None) -> WorkInfo:
    ref = ChapterRef.of(mother) if mother is not None else match.book
    return {
        "id": match.mother_id,
        "title": mother.title if mother else match.mother_title,
        "source": public_source(mother.source) if mother else "",
        "ingested_at": iso_utc(mother.ingested_at) if mother else None,
        "characters": len(mother.text) if mother else None,
        "sha256": _sha256(mother.text) if mother else None,
        "book_id": ref.book_id if ref is not None else None,
        "book_title": ref.book_title if ref is not None else "",
        "author": ref.author if ref is not None else "",
        "chapter": ref.chapter if ref is not None else "",
        "chapter_index": ref.chapter_index if ref is not None else None,
        "chapter_zh": ref.label("zh") if ref is not None else "",
        "chapter_en": ref.label("en") if ref is not None else "",
    }


def _is_fetched(suspect: Suspect | None, capture: Capture | None) -> bool:
    if capture is not None:
        return True
    if suspect is None:
        return False
    return (
        suspect.source in FETCHED_SOURCES
        or bool(suspect.raw)
        or "final_url" in (suspect.metadata or {})
    )


def _suspect_info(
    match: Match,
    suspect: Suspect | None,
    capture: Capture | None,
    submission: Submission | None,
) -> SuspectInfo:
    fetched = _is_fetched(suspect, capture) and submission is None
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
        "sha256": _sha256(suspect.text) if suspect else None,
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


def _timeline(
    match: Match,
    work: WorkInfo,
    suspect: SuspectInfo,
    record: Suspect | None,
    found: _Logged,
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


def _timeline_problems(timeline: list[TimelineEvent], first_check: str | None) -> list[str]:
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
    found = _from_log(evidence, match) if evidence is not None else _Logged()
    if found.capture is not None and found.submission is None:
        return PageSource(
            fetched=True,
            at=found.capture.fetched_at,
            content_sha256=found.capture.body.sha256,
            from_capture=True,
        )
    fetched = _is_fetched(suspect, None) and found.submission is None
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


def match_similarities(
    match: Match, mother: Mother | None, suspect: Suspect | None
) -> tuple[float | None, float | None]:
    """(on pinyin initials, on characters) over every copied passage, each passage
    weighted by its length in the suspect; None where no passage gives the measure
    (a text deleted since). The report shows the same figures passage by passage."""
    initials_sum = char_sum = 0.0
    initials_weight = char_weight = 0
    for p in _passages(match, mother, suspect):
        weight = max(1, p["suspect_end"] - p["suspect_start"])
        initials_sum += p["initials_similarity"] * weight
        initials_weight += weight
        if p["char_similarity"] is not None:
            char_sum += p["char_similarity"] * weight
            char_weight += weight
    return (
        round(initials_sum / initials_weight, 4) if initials_weight else None,
        round(char_sum / char_weight, 4) if char_weight else None,
    )
