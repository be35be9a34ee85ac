"""The records of the takedown workflow: cases, their URLs, their history, the
rights-holder profile, and the state machine.

A *case* is one work copied on one site (domain): a pirate site usually copies a whole
book, so every confirmed match of the same work on the same domain joins one case with
its URLs. States (the command line and the API use these exact names) follow a
platform's complaint flow, 线索 → 初审 → 材料审核 → 删除下架 / 赔偿::

    open (线索 clue) ──► notice_sent (初审 review) ──► documents (材料审核)
      │                      │  ▲                          │
      │                      ▼  │                          ▼
      │                  still_online ──────────► removed (删除下架) ──► closed
      │                                              │  └──► open (the page came back)
      │                                              ▼
      │                                  compensated (赔偿) ──► closed
      └──► disputed (争议) ──► open / notice_sent / documents / removed / closed

Every change is a ``CaseEvent`` (who, when, note, from and to state) appended to the
case's history; each event's ``hash`` chains the previous one (sha256 over the previous
hash and the event's canonical JSON), so the history is an audit table that the evidence
log can adopt or cross-check.

Times are aware UTC datetimes, kept to the millisecond (as the document store does),
and serialised as fixed-width ISO 8601 text, so text order is time order in both
adapters.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Required, TypedDict, cast, get_args

from tracker.common.records import ChapterRef, JSONObject, JSONValue, utcnow
from tracker.common.timefmt import iso_utc, parse_utc

CaseState = Literal[
    "open",
    "notice_sent",
    "documents",
    "removed",
    "compensated",
    "still_online",
    "disputed",
    "closed",
]
STATES: tuple[str, ...] = get_args(CaseState)

# The one table of legal moves; anything else is refused with IllegalTransition.
TRANSITIONS: dict[str, frozenset[str]] = {
    "open": frozenset({"notice_sent", "removed", "disputed", "closed"}),
    "notice_sent": frozenset(
        {"documents", "removed", "compensated", "still_online", "disputed", "closed"}
    ),
    "documents": frozenset(
        {"notice_sent", "removed", "compensated", "still_online", "disputed", "closed"}
    ),
    "still_online": frozenset({"notice_sent", "documents", "removed", "disputed", "closed"}),
    "removed": frozenset({"open", "compensated", "closed"}),
    "compensated": frozenset({"closed"}),
    "disputed": frozenset({"open", "notice_sent", "documents", "removed", "closed"}),
    "closed": frozenset(),
}
# The one wording of each state for people (Chinese, English): the web (board, case
# page, badges, messages) and the command line (``yinji case``) both read it.
STATE_LABELS: dict[str, tuple[str, str]] = {
    "open": ("待处理", "Open"),
    "notice_sent": ("已发通知", "Notice sent"),
    "documents": ("材料审核", "Documents requested"),
    "removed": ("已删除", "Removed"),
    "compensated": ("已赔偿", "Compensated"),
    "still_online": ("仍在线", "Still online"),
    "disputed": ("有争议", "Disputed"),
    "closed": ("已结案", "Closed"),
}


def state_label(state: str, lang: str = "zh") -> str:
    """``state`` as people read it in ``lang`` (``zh`` or ``en``; ``STATE_LABELS``); an
    unknown state is shown as its name."""
    zh, en = STATE_LABELS.get(state, (state, state))
    return en if lang == "en" else zh


# Each state's step in the platforms' complaint flow (Chinese, English): the case page
# draws the flow with these step names; the state itself reads as ``STATE_LABELS``.
STATE_FLOW: dict[str, tuple[str, str]] = {
    "open": ("线索", "clue"),
    "notice_sent": ("初审", "review"),
    "documents": ("材料审核", "documents"),
    "removed": ("删除下架", "removed"),
    "compensated": ("赔偿", "compensated"),
    "still_online": ("仍在线", "still online"),
    "disputed": ("争议", "disputed"),
    "closed": ("结案", "closed"),
}
ACTIVE_STATES: tuple[str, ...] = tuple(s for s in STATES if s != "closed")
# States whose URLs the daily re-check visits: a notice went out (did the page go?),
# or the page went (did it come back?).
RECHECK_STATES: tuple[str, ...] = ("notice_sent", "documents", "still_online", "removed")

EventKind = Literal[
    "created",
    "transition",
    "url_added",
    "url_removed",
    "recheck",
    "notice",
    "note",
    "book",
    "merged",
]
# unverified: a submitted text's URL Yinji never fetched (not "online", never "removed").
URLStatus = Literal["online", "removed", "unknown", "unverified"]
CaseKind = Literal["page", "book"]


class CaseError(ValueError):
    """A request the workflow refuses (bad state name, bad input); the message says why."""


class IllegalTransition(CaseError):
    """A state change the state machine does not allow."""

    def __init__(self, case_id: str, current: str, wanted: str) -> None:
        allowed = ", ".join(sorted(TRANSITIONS.get(current, ()))) or "none (closed is final)"
        super().__init__(
            f"case {case_id}: cannot go from {current} to {wanted} (allowed from {current}: "
            f"{allowed})"
        )
        self.case_id, self.current, self.wanted = case_id, current, wanted


class ConcurrentUpdate(RuntimeError):
    """Someone else changed the case between read and write; read it again and retry."""


def check_state(state: object) -> str:
    if not isinstance(state, str) or state not in STATES:
        raise CaseError(f"state must be one of {', '.join(STATES)}, got {state!r}")
    return state


def check_transition(case_id: str, current: str, wanted: str) -> None:
    check_state(wanted)
    if wanted not in TRANSITIONS[check_state(current)]:
        raise IllegalTransition(case_id, current, wanted)


# --- time -------------------------------------------------------------------------------
def ms(value: datetime) -> datetime:
    """Aware UTC floored to the millisecond (what both adapters keep)."""
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


def iso(value: datetime | None) -> str | None:
    """The one machine format (``tracker.common.timefmt.iso_utc``: ``…T09:26:15.794Z``)."""
    return iso_utc(value)


def _legacy_iso(value: datetime) -> str:
    """How times were written before ``iso_utc`` (``…T09:26:15.794+00:00``): events
    hashed then still verify (``CaseEvent.matches_hash``)."""
    return ms(value).isoformat(timespec="milliseconds")


def parse_iso(value: str | None) -> datetime | None:
    return None if value is None else ms(parse_utc(value))


def now() -> datetime:
    return ms(utcnow())


# --- records ----------------------------------------------------------------------------
# The stored shapes (``to_dict``), as ``from_dict`` reads them: keys a record written by an
# older version may lack are optional.
class CaseURLRecord(TypedDict, total=False):
    url: Required[str]
    suspect_id: str
    mother_id: str
    score: float
    coverage: float
    added_at: str | None
    status: URLStatus
    last_checked_at: str | None
    last_http_status: int | None
    last_outcome: str
    label: str
    chapter: str
    chapter_index: int | None
    page: int


class CaseRecord(TypedDict, total=False):
    id: Required[str]
    work: Required[str]
    domain: Required[str]
    work_title: str
    mother_ids: list[str]
    state: str
    kind: CaseKind
    urls: list[str]
    url_details: list[CaseURLRecord]
    created_at: str | None
    updated_at: str | None
    state_changed_at: str | None
    notice_sent_at: str | None
    removed_at: str | None
    metadata: JSONObject
    version: int


class CaseEventRecord(TypedDict, total=False):
    case_id: Required[str]
    kind: Required[str]
    seq: int
    who: str
    note: str
    from_state: str | None
    to_state: str | None
    data: JSONObject
    at: str | None
    prev_hash: str
    hash: str
    evidence_ref: str | None


class AttachmentRecord(TypedDict, total=False):
    name: Required[str]
    sha256: Required[str]
    size: Required[int]
    content_type: str


class ProfileRecord(TypedDict, total=False):
    name: str
    contact: str
    email: str
    phone: str
    address: str
    attachments: list[AttachmentRecord]
    updated_at: str | None


def page_label(page: int, lang: str = "zh") -> str:
    """A page of a chapter split over several on a site, as notices and the case page
    name it: ``第 2 页`` / ``page 2``; "" when the page was not recorded (0)."""
    if not page:
        return ""
    return f"page {page}" if lang == "en" else f"第 {page} 页"


@dataclass
class CaseURL:
    """One infringing address of a case, with what its last re-check found."""

    url: str
    suspect_id: str = ""
    mother_id: str = ""
    score: float = 0.0
    coverage: float = 0.0
    added_at: datetime = field(default_factory=now)
    status: URLStatus = "online"
    last_checked_at: datetime | None = None
    last_http_status: int | None = None
    last_outcome: str = ""  # gone, changed, matching, error: <reason>
    label: str = ""  # the page's own title
    chapter: str = ""  # the book's chapter the page copies (its heading), "" if none
    chapter_index: int | None = None  # that chapter's 1-based place in the book
    page: int = 0  # the page of the chapter on the site (1, 2, ...); 0: not recorded

    def chapter_ref(self, case: Case) -> ChapterRef | None:
        """The book chapter this URL copies, as the (book) case recorded it; None
        when the case is not a book's or the URL's chapter was not recorded."""
        if case.kind != "book" or not (self.chapter or self.chapter_index is not None):
            return None
        author = case.metadata.get("author")
        return ChapterRef(
            case.work,
            case.work_title or case.work,
            self.chapter,
            self.chapter_index,
            author=author if isinstance(author, str) else "",
        )

    def to_dict(self) -> JSONObject:
        return {
            "url": self.url,
            "suspect_id": self.suspect_id,
            "mother_id": self.mother_id,
            "score": round(float(self.score), 4),
            "coverage": round(float(self.coverage), 4),
            "added_at": iso(self.added_at),
            "status": self.status,
            "last_checked_at": iso(self.last_checked_at),
            "last_http_status": self.last_http_status,
            "last_outcome": self.last_outcome,
            "label": self.label,
            "chapter": self.chapter,
            "chapter_index": self.chapter_index,
            "page": self.page,
        }

    @classmethod
    def from_dict(cls, d: CaseURLRecord) -> CaseURL:
        return cls(
            url=d["url"],
            suspect_id=d.get("suspect_id", ""),
            mother_id=d.get("mother_id", ""),
            score=float(d.get("score", 0.0)),
            coverage=float(d.get("coverage", 0.0)),
            added_at=parse_iso(d.get("added_at")) or now(),
            status=d.get("status", "online"),
            last_checked_at=parse_iso(d.get("last_checked_at")),
            last_http_status=d.get("last_http_status"),
            last_outcome=d.get("last_outcome", ""),
            label=d.get("label", ""),
            chapter=d.get("chapter", ""),
            chapter_index=d.get("chapter_index"),
            page=int(d.get("page") or 0),
        )


@dataclass
class Case:
    """One book (or one work outside any book) copied on one site.

    ``work`` is the grouping key: the book's id (``tracker.common.records.ChapterRef`` of its
    chapters'
    mothers, or the legacy ``work``/``book``; ``tracker.cases.grouping``), else the
    mother id; ``work_title`` the book's title; ``domain`` the site, host and port
    (``tracker.common.rules.site_of``); ``mother_ids`` every mother whose copies the case holds (a
    re-check that still finds one of them means the copy is still online).
    """

    id: str
    work: str
    domain: str
    work_title: str = ""
    mother_ids: list[str] = field(default_factory=list)
    state: str = "open"
    kind: CaseKind = "page"
    urls: list[CaseURL] = field(default_factory=list)
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)
    state_changed_at: datetime = field(default_factory=now)
    notice_sent_at: datetime | None = None  # first notice
    removed_at: datetime | None = None  # latest move to removed
    metadata: dict[str, Any] = field(default_factory=dict)
    version: int = 0  # bumped by every write (optimistic concurrency)

    def url(self, url: str) -> CaseURL | None:
        return next((u for u in self.urls if u.url == url), None)

    def to_dict(self) -> JSONObject:
        """The JSON shape of ``yinji case list --json`` and of the API."""
        return {
            "id": self.id,
            "state": self.state,
            "kind": self.kind,
            "work": self.work,
            "work_title": self.work_title,
            "mother_ids": list(self.mother_ids),
            "domain": self.domain,
            "urls": [u.url for u in self.urls],
            "url_details": [u.to_dict() for u in self.urls],
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "state_changed_at": iso(self.state_changed_at),
            "notice_sent_at": iso(self.notice_sent_at),
            "removed_at": iso(self.removed_at),
            "metadata": self.metadata,
            "version": self.version,
        }

    @classmethod
    def from_dict(cls, d: CaseRecord) -> Case:
        return cls(
            id=d["id"],
            work=d["work"],
            domain=d["domain"],
            work_title=d.get("work_title", ""),
            mother_ids=list(d.get("mother_ids") or []),
            state=d.get("state", "open"),
            kind=d.get("kind", "page"),
            urls=[CaseURL.from_dict(u) for u in d.get("url_details") or []],
            created_at=parse_iso(d.get("created_at")) or now(),
            updated_at=parse_iso(d.get("updated_at")) or now(),
            state_changed_at=parse_iso(d.get("state_changed_at")) or now(),
            notice_sent_at=parse_iso(d.get("notice_sent_at")),
            removed_at=parse_iso(d.get("removed_at")),
            metadata=dict(d.get("metadata") or {}),
            version=int(d.get("version", 0)),
        )


GENESIS = "0" * 64


@dataclass
class CaseEvent:
    """One entry of a case's history. ``seq``, ``prev_hash`` and ``hash`` are set by the
    store when it appends the event."""

    case_id: str
    kind: str
    who: str
    note: str = ""
    from_state: str | None = None
    to_state: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    at: datetime = field(default_factory=now)
    seq: int = 0
    prev_hash: str = GENESIS
    hash: str = ""
    evidence_ref: str | None = None  # id of the evidence-log record, when one was written

    def body(self) -> JSONObject:
        """The hashed content (everything but ``hash`` and ``evidence_ref``)."""
        return {
            "case_id": self.case_id,
            "seq": self.seq,
            "kind": self.kind,
            "who": self.who,
            "note": self.note,
            "from_state": self.from_state,
            "to_state": self.to_state,
            "data": self.data,
            "at": iso(self.at),
            "prev_hash": self.prev_hash,
        }

    def compute_hash(self, *, legacy_time: bool = False) -> str:
        body = self.body()
        if legacy_time:
            body["at"] = _legacy_iso(self.at)
        canonical = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def matches_hash(self) -> bool:
        """Whether ``hash`` is this content's hash (events recorded before times were
        written as ``iso_utc`` were hashed with ``+00:00``; they verify as they were)."""
        return self.hash in (self.compute_hash(), self.compute_hash(legacy_time=True))

    def to_dict(self) -> JSONObject:
        return {**self.body(), "hash": self.hash, "evidence_ref": self.evidence_ref}

    @classmethod
    def from_dict(cls, d: CaseEventRecord) -> CaseEvent:
        return cls(
            case_id=d["case_id"],
            kind=d["kind"],
            who=d.get("who", ""),
            note=d.get("note", ""),
            from_state=d.get("from_state"),
            to_state=d.get("to_state"),
            data=dict(d.get("data") or {}),
            at=parse_iso(d.get("at")) or now(),
            seq=int(d.get("seq", 0)),
            prev_hash=d.get("prev_hash", GENESIS),
            hash=d.get("hash", ""),
            evidence_ref=d.get("evidence_ref"),
        )


def verify_chain(events: list[CaseEvent]) -> list[str]:
    """Problems in a case's history (empty when every hash and link checks out)."""
    problems: list[str] = []
    prev = GENESIS
    for i, ev in enumerate(events, 1):
        if ev.seq != i:
            problems.append(f"event {ev.seq}: expected sequence number {i}")
        if ev.prev_hash != prev:
            problems.append(f"event {ev.seq}: does not link to the event before it")
        if not ev.matches_hash():
            problems.append(f"event {ev.seq}: content does not match its hash")
        prev = ev.hash
    return problems


@dataclass
class Attachment:
    """A proof-of-ownership file of the profile, kept content-addressed in the case store."""

    name: str
    sha256: str
    size: int
    content_type: str = "application/octet-stream"

    def to_dict(self) -> JSONObject:
        return {
            "name": self.name,
            "sha256": self.sha256,
            "size": self.size,
            "content_type": self.content_type,
        }

    @classmethod
    def from_dict(cls, d: AttachmentRecord) -> Attachment:
        return cls(d["name"], d["sha256"], int(d["size"]), d.get("content_type", ""))


@dataclass
class Profile:
    """The rights holder, once per library: who sends the notices."""

    name: str = ""
    contact: str = ""  # contact person or department
    email: str = ""
    phone: str = ""
    address: str = ""
    attachments: list[Attachment] = field(default_factory=list)
    updated_at: datetime | None = None

    def missing(self) -> list[str]:
        """Fields both laws require that are still empty."""
        out = []
        if not self.name.strip():
            out.append("name")
        if not self.address.strip():
            out.append("address")
        if not (self.email.strip() or self.phone.strip()):
            out.append("email or phone")
        return out

    def to_dict(self) -> JSONObject:
        return {
            "name": self.name,
            "contact": self.contact,
            "email": self.email,
            "phone": self.phone,
            "address": self.address,
            "attachments": [a.to_dict() for a in self.attachments],
            "updated_at": iso(self.updated_at),
        }

    @classmethod
    def from_dict(cls, value: JSONValue) -> Profile:
        """From the stored profile (None: not set yet, an empty one)."""
        d = cast(ProfileRecord, value if isinstance(value, dict) else {})
        return cls(
            name=d.get("name", ""),
            contact=d.get("contact", ""),
            email=d.get("email", ""),
            phone=d.get("phone", ""),
            address=d.get("address", ""),
            attachments=[Attachment.from_dict(a) for a in d.get("attachments") or []],
            updated_at=parse_iso(d.get("updated_at")),
        )
