"""Where cases live: the ``CaseStore`` interface, written by two adapters
(``sqlite_store``, ``mongo_store``; ``store_factory.open_case_store`` picks one from
the settings).

Blobs (proof-of-ownership attachments, pages captured by re-checks) are stored
content-addressed by their sha256: files under ``<data folder>/cases/blobs`` with
sqlite, a ``case_blobs`` collection with MongoDB.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence

from tracker.common.records import JSONValue

from .model import Case, CaseEvent

MAX_BLOB_BYTES = 15 * 1024 * 1024  # under MongoDB's 16 MB document limit


def blob_key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_blob_key(key: str) -> str:
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"not a sha256 hex digest: {key!r}")
    return key


class CaseStore(ABC):
    """Cases, their append-only histories, settings (the profile) and blobs."""

    # --- cases ---------------------------------------------------------------------
    @abstractmethod
    def create_case(self, case: Case, events: Sequence[CaseEvent] = ()) -> bool:
        """Insert ``case`` (version 1) and its first events; False if the id exists."""

    @abstractmethod
    def get_case(self, case_id: str) -> Case:
        """Raise ``tracker.common.records.NotFound`` if absent."""

    @abstractmethod
    def update_case(
        self, case: Case, expected_version: int, events: Sequence[CaseEvent] = ()
    ) -> Case:
        """Replace the case if its stored version is still ``expected_version`` (then
        bump it) and append ``events``; raise ``ConcurrentUpdate`` otherwise."""

    @abstractmethod
    def list_cases(
        self,
        *,
        states: Sequence[str] | None = None,
        domain: str | None = None,
        work: str | None = None,
    ) -> list[Case]:
        """Newest first; filters are exact values."""

    @abstractmethod
    def case_ids_for(self, work: str, domain: str) -> list[str]:
        """Every case id ever opened for (work, domain), oldest first."""

    # --- history -------------------------------------------------------------------
    @abstractmethod
    def append_events(self, case_id: str, events: Sequence[CaseEvent]) -> list[CaseEvent]:
        """Append events (seq, prev_hash and hash assigned here) and return them."""

    @abstractmethod
    def list_events(self, case_id: str) -> list[CaseEvent]:
        """The case's history, oldest first."""

    @abstractmethod
    def set_evidence_ref(self, case_id: str, seq: int, ref: str) -> None:
        """Note the evidence-log record that mirrors an event (outside the hash)."""

    # --- settings --------------------------------------------------------------------
    @abstractmethod
    def get_meta(self, key: str) -> JSONValue: ...

    @abstractmethod
    def set_meta(self, key: str, value: JSONValue) -> None:
        """``value`` must be JSON-serialisable."""

    # --- blobs ---------------------------------------------------------------------
    @abstractmethod
    def put_blob(self, data: bytes) -> str:
        """Store ``data`` (idempotent) and return its sha256 hex digest."""

    @abstractmethod
    def get_blob(self, key: str) -> bytes:
        """Raise ``NotFound`` if absent."""

    # --- lifecycle -----------------------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> CaseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def chain(last: CaseEvent | None, events: Sequence[CaseEvent]) -> list[CaseEvent]:
    """Number and hash ``events`` after ``last`` (both adapters call this)."""
    seq = last.seq if last is not None else 0
    prev = last.hash if last is not None else "0" * 64
    out = []
    for ev in events:
        seq += 1
        ev.seq, ev.prev_hash = seq, prev
        ev.hash = ev.compute_hash()
        prev = ev.hash
        out.append(ev)
    return out
