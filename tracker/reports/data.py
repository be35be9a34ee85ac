"""The evidence report's data: ``report_data`` gathers everything a report shows, as a
typed, JSON-serialisable structure (the JSON report itself; the HTML and PDF renderers
read the same structure)."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, TypedDict, overload

from tracker import __version__
from tracker.records import Match, Mother, NotFound, Suspect

if TYPE_CHECKING:
    from tracker.library import Library

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


class SuspectInfo(TypedDict):
    """The suspect page or text. Its text fields are None when the record was deleted."""

    id: str
    title: str
    url: str
    domain: str
    source: str
    fetched_at: str | None
    checked_at: str | None
    characters: int | None
    sha256: str | None  # of the extracted text, UTF-8
    raw_sha256: str | None  # of the raw page bytes as fetched, when kept


class PassageData(TypedDict):
    """One copied passage: offsets are Python string indices, end exclusive."""

    n: int  # 1-based, in suspect order
    suspect_start: int
    suspect_end: int
    mother_start: int
    mother_end: int
    similarity: float
    suspect_text: str | None
    mother_text: str | None


class ReportData(TypedDict):
    """Everything an evidence report shows; times are ISO 8601 UTC (``...Z``)."""

    report: Literal["yinji-evidence"]
    version: int
    generator: str
    generated_at: str
    match_id: str
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
    warnings: list[str]


def clean_text(text: str) -> str:
    """``text`` with the characters reportlab and XML cannot carry replaced by U+FFFD."""
    return _UNPRINTABLE.sub("\ufffd", text or "")


@overload
def iso_utc(value: datetime) -> str: ...
@overload
def iso_utc(value: None) -> None: ...
def iso_utc(value: datetime | None) -> str | None:
    """``2024-05-01T12:00:00Z``; a naive datetime is taken as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def report_data(library: Library, match_id: str) -> ReportData:
    """Everything a report shows, as JSON-serialisable data (the JSON report itself).

    Raises ``tracker.store.NotFound`` (a ``KeyError``) when the match does not exist.
    The mother or suspect may have been deleted since (a confirmed match is kept as
    evidence): their texts are then missing and the report says so.
    """
    store = library.store
    match: Match = store.get_match(match_id)
    mother: Mother | None
    suspect: Suspect | None
    try:
        mother = store.get_mother(match.mother_id)
    except (NotFound, KeyError):
        mother = None
    try:
        suspect = store.get_suspect(match.suspect_id)
    except (NotFound, KeyError):
        suspect = None
    return {
        "report": "yinji-evidence",
        "version": 1,
        "generator": f"音迹 Yinji {__version__}",
        "generated_at": iso_utc(datetime.now(UTC)),
        "match_id": match.id,
        "work": _work_info(match, mother),
        "suspect": _suspect_info(match, suspect),
        "score": round(float(match.score), 4),
        "coverage": round(float(match.coverage), 4),
        "mother_coverage": round(float(match.mother_coverage), 4),
        "engine": match.engine,
        "verdict": match.verdict,
        "note": match.note,
        "created_at": iso_utc(match.created_at),
        "updated_at": iso_utc(match.updated_at),
        "passages": _passages(match, mother, suspect),
        "warnings": _warnings(match, mother, suspect),
    }


def _warnings(match: Match, mother: Mother | None, suspect: Suspect | None) -> list[str]:
    warnings: list[str] = []
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


def _passages(match: Match, mother: Mother | None, suspect: Suspect | None) -> list[PassageData]:
    passages: list[PassageData] = []
    for n, p in enumerate(sorted(match.passages, key=lambda p: p.suspect_start), 1):
        passages.append(
            {
                "n": n,
                "suspect_start": p.suspect_start,
                "suspect_end": p.suspect_end,
                "mother_start": p.mother_start,
                "mother_end": p.mother_end,
                "similarity": round(float(p.similarity), 4),
                "suspect_text": suspect.text[p.suspect_start : p.suspect_end] if suspect else None,
                "mother_text": mother.text[p.mother_start : p.mother_end] if mother else None,
            }
        )
    return passages


def _work_info(match: Match, mother: Mother | None) -> WorkInfo:
    return {
        "id": match.mother_id,
        "title": mother.title if mother else match.mother_title,
        "source": mother.source if mother else "",
        "ingested_at": iso_utc(mother.ingested_at) if mother else None,
        "characters": len(mother.text) if mother else None,
        "sha256": _sha256(mother.text) if mother else None,
    }


def _suspect_info(match: Match, suspect: Suspect | None) -> SuspectInfo:
    return {
        "id": match.suspect_id,
        "title": suspect.title if suspect else match.suspect_title,
        "url": suspect.url if suspect else match.suspect_url,
        "domain": (suspect.domain if suspect else "") or match.domain,
        "source": suspect.source if suspect else "",
        "fetched_at": iso_utc(suspect.fetched_at) if suspect else None,
        "checked_at": iso_utc(suspect.checked_at or match.updated_at)
        if suspect
        else iso_utc(match.updated_at),
        "characters": len(suspect.text) if suspect else None,
        "sha256": _sha256(suspect.text) if suspect else None,
        "raw_sha256": hashlib.sha256(suspect.raw).hexdigest()
        if suspect is not None and suspect.raw
        else None,
    }
