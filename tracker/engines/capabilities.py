"""What an engine can do beyond ``Engine``, each declared as a small protocol.

Every engine implements ``tracker.engines.base.Engine`` (fingerprints, add, remove,
candidates). Some can do more, and the services ask for that by type
(``isinstance(engine, Growable)``), never by probing for attribute names:

- ``LocalCopies``: lookups may answer from a local copy of the index (snapshots,
  ``tracker.indexes.snapshot``): daguan.
- ``Growable``: an index in buckets that is resharded as it grows, or on demand
  (``yinji index reshard``): daguan.
- ``BulkLoading``: an empty index loaded at once from everything gathered (ingest into
  an empty library, ``yinji index rebuild``), and a big ingest into a non-empty one
  loaded as a tail segment beside it: daguan. ``BulkLoad`` is the loader.
- ``CandidateOptions``: query-time candidate options, ``min_hits`` and
  ``weak_candidates`` (``yinji index configure``): daguan.

The protocols are ``runtime_checkable``: ``isinstance`` checks that the members exist
(not their types; mypy checks those where an engine is declared).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from tracker.indexes.inverted import RedisInvertedIndex
    from tracker.indexes.snapshot import SnapshotFolder


@runtime_checkable
class LocalCopies(Protocol):
    """An engine whose index can be copied to local files (``take_snapshot(index)``)
    and whose lookups then answer from the copy at the index's current version
    (``snapshots``, set by the library; None: always Redis)."""

    index: RedisInvertedIndex
    snapshots: SnapshotFolder | None


@runtime_checkable
class Growable(Protocol):
    """An index kept in buckets that must grow with it (Redis' compact encoding)."""

    def needs_growth(self, extra: int = 0) -> bool:
        """Whether adding ``extra`` fingerprints would overfill the buckets."""
        ...

    def grow(self, extra: int = 0) -> int | None:
        """Reshard before the buckets overfill (the caller holds the index lock)."""
        ...

    def reshard(self, bits: int | None = None) -> int:
        """Move to ``2**bits`` buckets (default: what the size calls for); the bits."""
        ...


class BulkLoad(Protocol):
    """A bulk load of an empty index: ``extend`` gathers ``(seq, fingerprints)``,
    ``finish`` writes them all, ``take_back`` removes the postings of given seqs
    again (mothers replaced meanwhile), ``close`` deletes its temporary files."""

    seqs: list[int]  # every mother gathered, in arrival order

    def extend(self, items: Iterable[tuple[int, np.ndarray]]) -> None: ...

    def finish(
        self,
        between: Callable[[], None] | None = None,
        grow: Callable[[int], None] | None = None,
    ) -> int: ...

    def take_back(self, seqs: set[int]) -> int: ...

    def record(self) -> None:
        """Keep the rows this load writes, for the snapshot taken after it."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class BulkLoading(Protocol):
    """An engine that loads an empty index in bulk."""

    def bulk_loader(self, folder: Path, *, chars: int = 0) -> BulkLoad | None:
        """A loader spilling under ``folder`` when the index is empty, or when about
        ``chars`` characters are coming, enough for a tail segment of a non-empty index
        (``tracker.indexes.tail``); else None (then ``add`` as the mothers come)."""
        ...


@runtime_checkable
class CandidateOptions(Protocol):
    """Query-time options of the candidate stage (nothing stored depends on them)."""

    min_hits: int  # distinct fingerprints a mother must share to be a candidate
    weak_candidates: int  # mothers with fewer, but a fingerprint no other holds


__all__ = ["BulkLoad", "BulkLoading", "CandidateOptions", "Growable", "LocalCopies"]
