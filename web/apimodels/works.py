"""The models of the works (mothers), checks, jobs, the index and the evidence log
(``web/handlers/api.py``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue

from .base import MAX_OFFSET, MAX_PAGE, ApiModel, TimeOrNull


class DocumentIn(ApiModel):
    """A work to import. Other fields are kept as metadata."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)
    id: str
    title: str | None = None
    text: str


class TextIn(ApiModel):
    """A suspect text to check."""

    id: str | None = None
    title: str | None = None
    text: str
    url: str | None = None


class MothersQuery(ApiModel):
    q: str | None = None
    """Text in id or title"""
    search: str | None = None
    """The same as q"""
    offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0
    limit: Annotated[int, Field(ge=0, le=MAX_PAGE)] = 50


class DocumentsIn(ApiModel):
    """POST /mothers as JSON."""

    documents: list[DocumentIn]


class FilesIn(ApiModel):
    """Files sent as multipart/form-data."""

    files: list[bytes] | None = None
    """.txt .html .htm .docx .jsonl .zip .epub"""
    book_mode: Literal["works", "auto", "book"] = "works"
    """works: each file one work (as before books existed); auto: a file with two or
    more chapter headings, and every .epub, becomes a book of chapter works (as
    `yinji ingest` decides); book: each file one book (a .zip holds one book's chapter
    files)"""


class Deleted(ApiModel):
    """What a DELETE removed."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)
    deleted: str | None = None


class ChecksIn(ApiModel):
    """POST /checks: texts and/or URLs."""

    texts: list[TextIn] | None = None
    urls: list[str] | None = None


class RebuildIn(ApiModel):
    engine: str | None = None
    """Default: YINJI_ENGINE"""


class RebuildRunning(ApiModel):
    """A rebuild is already running: its job, or a process holding the lock."""

    error: str
    job_id: str | None = None
    engine: str | None = None


class ConsistencyQuery(ApiModel):
    first: Annotated[int, Field(ge=0, le=2**62)]
    """The size of an earlier tree head"""
    second: Annotated[int | None, Field(ge=0, le=2**62)] = None
    """The size of a later one (default: the latest)"""


class TreeHead(ApiModel):
    """The evidence log's key fingerprint and its latest signed tree head."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)
    fingerprint: str | None = None
    public_key_pem: str | None = None


class ConsistencyProof(ApiModel):
    """RFC 6962 consistency proof (hex hashes)."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)
    first: int | None = None
    second: int | None = None
    first_root: str | None = None
    second_root: str | None = None
    proof: list[str] | None = None


class NoiseItem(ApiModel):
    text: str | None = None
    count: int | None = None
    period: int | None = None


class ScriptWarning(ApiModel):
    code: Literal["no-chinese", "few-chinese", "mostly-other"]
    read: int | None = None
    """characters the engine reads"""
    needed: int | None = None
    """minimum copied length"""
    other_words: int | None = None
    """words in scripts the engine does not read"""
    engine: str | None = None
    scripts: list[str] | None = None
    message: str


class Mother(ApiModel):
    id: str | None = None
    title: str | None = None
    source: str | None = None
    characters: int | None = None
    ingested_at: TimeOrNull = None
    metadata: dict[str, JsonValue] | None = None
    text: str | None = None


class MotherList(ApiModel):
    total: int | None = None
    offset: int | None = None
    limit: int | None = None
    mothers: list[Mother] | None = None


class CheckedSuspect(ApiModel):
    """One checked text in a check job's `results` (the line of `yinji check --json`, with `title`
    and `url`)"""

    suspect_id: str | None = None
    title: str | None = None
    url: str | None = None
    matches: list[dict[str, JsonValue]] | None = None
    text_sha256: str | None = None
    warnings: list[ScriptWarning] = Field(default_factory=list)
    """The engine reads too little of the text (not Chinese): never a silent 'no match'"""
    noise: list[NoiseItem] = Field(default_factory=list)
    """Strings found repeated at a fixed rhythm; the text was also checked without them"""
