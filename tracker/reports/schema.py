"""The evidence report's typed structure (``ReportData`` and its parts) and the
bilingual labels it carries: what ``tracker.reports.data.report_data`` returns and the
HTML and PDF renderers read."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

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
    """Character diff of a passage (``tracker.matching.textdiff``): spans per side as
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
    """One copied stretch as a person reads it (``tracker.common.records.Region``): the
    passages between inserted lines taken together, the lines listed as excluded."""

    n: int  # 1-based, in suspect order
    suspect_start: int
    suspect_end: int
    mother_start: int
    mother_end: int
    similarity: float  # the region's own (its text less the excluded spans), on initials
    excluded: list[ExcludedData]
    region_characters: int  # of the suspect: the region's span less its excluded spans
    # (gaps and edits between its passages included: not a count of copied characters)
    passages: list[int]  # the numbers (``PassageData.n``) of the passages inside it
    suspect_text: str | None  # the region's text (None: the record was deleted)
    mother_text: str | None


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
