"""The evidence report's data: ``report_data`` gathers everything a report shows, as a
typed, JSON-serialisable structure (the JSON report itself; the HTML and PDF renderers
read the same structure).

Honesty rules the renderers rely on:

- Every passage carries two similarities: on pinyin initials (what the engines match
  on, ``similarity`` / ``initials_similarity``) and on the characters themselves
  (``char_similarity``, from the record when the aligner gave one, else computed with
  ``tracker.matching.textdiff``), and the character diff that marks what differs.
- A passage the aligner split into segment pairs (a reordered copy) lists them in
  ``segments``, each with its own offsets, texts, similarities and diff.
- The regions are the match's stored ones (``tracker.common.records.Region``), each with its
  text, the text of its excluded spans and the numbers of the passages inside it.
- The timeline (imported, fetched or submitted, checked, verdict) uses only times that
  were recorded; a time that is not known is reported missing, a pasted text has no
  fetch time, and times in an impossible order are flagged in ``timeline_problems``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from tracker import __version__
from tracker.common.records import ChapterRef, Match, Mother, Suspect
from tracker.common.timefmt import iso_utc
from tracker.matching.textdiff import char_diff
from tracker.reports.provenance import (
    Logged,
    PageSource,
    capture_info,
    from_log,
    page_source,
    sha256_text,
    suspect_info,
    timeline_of,
    timeline_problems,
)
from tracker.reports.schema import (
    FETCHED_SOURCES,
    VERDICT_LABELS,
    CaptureInfo,
    DiffData,
    PassageData,
    RegionData,
    ReportData,
    SegmentData,
    SuspectInfo,
    TimelineEvent,
    WorkInfo,
)
from tracker.store.base import match_sides

if TYPE_CHECKING:
    from tracker.evidence import Capture, EvidenceLog, Submission
    from tracker.store import Store

__all__ = [
    "FETCHED_SOURCES",
    "VERDICT_LABELS",
    "CaptureInfo",
    "DiffData",
    "HasStore",
    "PageSource",
    "PassageData",
    "ReportData",
    "SegmentData",
    "SuspectInfo",
    "TimelineEvent",
    "WorkInfo",
    "clean_text",
    "match_similarities",
    "page_source",
    "public_source",
    "reference_line",
    "report_data",
]


class HasStore(Protocol):
    """What a report reads matches from: a ``tracker.library.Library`` (or anything
    with its ``store``). A protocol, so that the reports need not import the library
    that makes them (``Library.export_evidence`` builds reports)."""

    @property
    def store(self) -> Store: ...


_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


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


def report_data(
    library: HasStore,
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
    found = from_log(evidence, match) if evidence is not None else Logged()
    capture = capture or found.capture
    submission = submission or found.submission
    verdict_at = verdict_at or found.verdict_at
    page = suspect_info(match, suspect, capture, submission)
    work = _work_info(match, mother)
    timeline = timeline_of(match, work, page, suspect, found, verdict_at)
    problems = timeline_problems(timeline, iso_utc(match.created_at))
    passages = _passages(match, mother, suspect)
    captured = capture_info(capture, found.capture_index if capture is found.capture else None)
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
        "suspect": page,
        "score": round(float(match.score), 4),
        "coverage": round(float(match.coverage), 4),
        "mother_coverage": round(float(match.mother_coverage), 4),
        "engine": match.engine,
        "verdict": match.verdict,
        "note": match.note,
        "created_at": iso_utc(match.created_at),
        "updated_at": iso_utc(match.updated_at),
        "passages": passages,
        "regions": _regions(match, mother, suspect, passages),
        "capture": captured,
        "timeline": timeline,
        "timeline_problems": problems,
        "warnings": _warnings(match, mother, suspect, found),
    }


def _warnings(
    match: Match, mother: Mother | None, suspect: Suspect | None, found: Logged
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


def _regions(
    match: Match, mother: Mother | None, suspect: Suspect | None, passages: list[PassageData]
) -> list[RegionData]:
    """The stored regions in suspect order, each with its text, the text of its
    excluded spans, and the passages (by number) that lie inside it."""
    out: list[RegionData] = []
    for n, r in enumerate(sorted(match.regions, key=lambda r: r.suspect_start), 1):
        inside = [
            p["n"]
            for p in passages
            if r.suspect_start <= p["suspect_start"] and p["suspect_end"] <= r.suspect_end
        ]
        out.append(
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
                "region_characters": (r.suspect_end - r.suspect_start)
                - sum(b - a for a, b in r.excluded),
                "passages": inside,
                "suspect_text": suspect.text[r.suspect_start : r.suspect_end] if suspect else None,
                "mother_text": mother.text[r.mother_start : r.mother_end] if mother else None,
            }
        )
    return out


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
        "sha256": sha256_text(mother.text) if mother else None,
        "book_id": ref.book_id if ref is not None else None,
        "book_title": ref.book_title if ref is not None else "",
        "author": ref.author if ref is not None else "",
        "chapter": ref.chapter if ref is not None else "",
        "chapter_index": ref.chapter_index if ref is not None else None,
        "chapter_zh": ref.label("zh") if ref is not None else "",
        "chapter_en": ref.label("en") if ref is not None else "",
    }


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
