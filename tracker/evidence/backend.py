"""The storage interface of one evidence log (``Backend``), written by two adapters:
``tracker.evidence.sqlite`` (``evidence.sqlite3``) and ``tracker.evidence.mongo``
(collections ``evidence_*``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from .keys import SignedTreeHead
from .records import Appended, BackendRecord, Stamp


class Backend(Protocol):
    """Storage of one evidence log. Append-only: nothing is ever updated or deleted."""

    def size(self) -> int: ...

    def append(
        self, data: bytes, leaf: bytes, kind: str, suspect_id: str | None, mother_id: str | None
    ) -> int:
        """Insert a record at index = current size (atomically); return the index."""
        ...

    def append_many(self, records: Sequence[BackendRecord]) -> list[Appended]:
        """Insert records at consecutive indexes from the current size, with their
        ``once`` keys (meta ``once:<key>``), in one commit where the database allows
        (group commit: one fsync for a chunk's records). A record whose ``once`` key is
        kept already is not inserted (``Appended.new`` False, its stored index)."""
        ...

    def entry(self, index: int) -> tuple[bytes, bytes] | None:
        """(data, leaf hash) of a record, or None."""
        ...

    def entries(self, lo: int, hi: int) -> Iterator[tuple[int, bytes, bytes]]:
        """(index, data, leaf hash) of records lo <= index < hi, in order."""
        ...

    def find(
        self, suspect_id: str, mother_id: str | None, kinds: Sequence[str] | None
    ) -> list[int]:
        """Indexes of the records about a suspect (and, when given, a mother: records
        naming that mother or none), in order."""
        ...

    def get_node(self, level: int, index: int) -> bytes | None: ...

    def put_node(self, level: int, index: int, value: bytes) -> None:
        """Insert if absent (values are deterministic: a concurrent insert is the same)."""
        ...

    def nodes(self) -> Iterator[tuple[int, int, bytes]]: ...

    def get_meta(self, key: str) -> str | None: ...

    def put_meta_once(self, key: str, value: str) -> str:
        """Set ``key`` if unset; return the value now stored (maybe another process's)."""
        ...

    def add_head(self, signed: SignedTreeHead) -> int: ...

    def heads(self) -> list[tuple[int, SignedTreeHead]]:
        """All stored heads, oldest first."""
        ...

    def latest_head(self) -> tuple[int, SignedTreeHead] | None: ...

    def add_stamp(self, stamp: Stamp) -> None: ...

    def stamps(self, head_id: int) -> list[Stamp]: ...

    def close(self) -> None: ...
