"""The evidence log's records and what its parts hand each other: a record's bytes
(``encode_entry``, ``LogEntry``), the records waiting to be appended and as a backend
stores them, signed tree heads with their timestamps, and the log's errors. See
``tracker.evidence.log`` for the log itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tracker.common.records import JSONObject

from .canonical import (
    canonical_json,
    format_time,
    parse_json_object,
    parse_time,
)
from .keys import SignedTreeHead, TreeHead

ENTRY_VERSION = "yinji-log-entry/1"
ONCE_PREFIX = "once:"  # meta keys of ``EvidenceLog.append(once=...)``
KINDS = ("capture", "submission", "check", "verdict", "case_state", "export")


class EvidenceError(Exception):
    """The evidence log cannot do what was asked (the message says why)."""


class NoEvidence(EvidenceError):
    """Nothing was recorded about what was asked for (a suspect, a match)."""


class LogInconsistent(EvidenceError):
    """The log no longer holds what a tree head it signed says (truncated, rewritten,
    or a head not signed by its key): nothing more is signed until it is restored."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        shown = "; ".join(self.problems[:5])
        more = f" (and {len(self.problems) - 5} more)" if len(self.problems) > 5 else ""
        super().__init__(
            f"the evidence log is not consistent with the tree heads it signed, so no "
            f"tree head was signed: {shown}{more}. Restore evidence.sqlite3 (or the "
            "evidence_* collections) from a backup; `yinji evidence audit` lists every "
            "problem"
        )


@dataclass(frozen=True)
class LogEntry:
    """One record: its position (leaf index), its exact bytes and their leaf hash."""

    index: int
    data: bytes
    leaf_hash: bytes

    @property
    def envelope(self) -> JSONObject:
        return parse_json_object(self.data, f"log record {self.index}")

    @property
    def kind(self) -> str:
        return str(self.envelope["kind"])

    @property
    def payload(self) -> JSONObject:
        payload = self.envelope["payload"]
        assert isinstance(payload, dict)
        return payload

    @property
    def logged_at(self) -> datetime:
        return parse_time(str(self.envelope["logged_at"]), f"log record {self.index}")


def encode_entry(kind: str, payload: Mapping[str, object], logged_at: datetime) -> bytes:
    if kind not in KINDS:
        raise EvidenceError(f"unknown record kind {kind!r} (one of {', '.join(KINDS)})")
    if not isinstance(payload, Mapping):
        raise EvidenceError(f"a {kind} record's payload must be an object")
    return canonical_json(
        {
            "kind": kind,
            "logged_at": format_time(logged_at),
            "payload": dict(payload),
            "version": ENTRY_VERSION,
        }
    )


@dataclass(frozen=True)
class PendingRecord:
    """A record to append (``EvidenceLog.append_many``): its kind and payload, the
    suspect and mother it is indexed under (default: the payload's own fields), and
    its ``once`` key (see ``EvidenceLog.append``)."""

    kind: str
    payload: Mapping[str, object]
    suspect_id: str | None = None
    mother_id: str | None = None
    once: str | None = None


@dataclass(frozen=True)
class BackendRecord:
    """An encoded record as a backend stores it (``Backend.append_many``)."""

    data: bytes
    leaf: bytes
    kind: str
    suspect_id: str | None
    mother_id: str | None
    once: str | None = None


@dataclass(frozen=True)
class Appended:
    """Where ``Backend.append_many`` put a record: its index, and whether it was
    inserted now (False: its ``once`` key was kept already, the index is that
    record's)."""

    index: int
    new: bool


@dataclass(frozen=True)
class Stamp:
    """The outcome of asking a TSA for a token for one tree head."""

    head_id: int
    at: datetime
    tsa_url: str
    response: bytes | None  # the TimeStampResp (DER), when granted and verified
    error: str | None  # why there is no token

    @property
    def ok(self) -> bool:
        return self.response is not None


@dataclass(frozen=True)
class HeadRecord:
    """A stored signed tree head, with its timestamp (if any)."""

    id: int
    signed: SignedTreeHead
    stamps: tuple[Stamp, ...] = ()

    @property
    def head(self) -> TreeHead:
        return self.signed.head

    @property
    def token(self) -> bytes | None:
        """The first verified TimeStampResp for this head, or None (unstamped)."""
        return next((s.response for s in self.stamps if s.response is not None), None)

    @property
    def stamp_error(self) -> str | None:
        if self.token is not None or not self.stamps:
            return None
        return self.stamps[-1].error


@dataclass(frozen=True)
class Publication:
    """What ``EvidenceLog.publish`` did: the head now covering the log, whether it was
    signed in this run, and the timestamp requests made (granted or not)."""

    head: HeadRecord
    new_head: bool
    attempts: tuple[Stamp, ...] = ()

    def to_json(self) -> JSONObject:
        granted = [s for s in self.attempts if s.ok]
        return {
            **self.head.head.to_json(),
            "head_id": self.head.id,
            "new_head": self.new_head,
            "timestamped": self.head.token is not None,
            "stamp_error": self.head.stamp_error,
            "stamps_requested": len(self.attempts),
            "stamps_granted": len(granted),
            "heads_stamped": sorted({s.head_id for s in granted}),
        }


@dataclass
class AuditReport:
    """What ``EvidenceLog.audit`` found; ``ok`` when ``problems`` is empty."""

    size: int = 0
    heads: int = 0
    stamped_heads: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems
