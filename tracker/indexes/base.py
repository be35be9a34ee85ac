"""The one small protocol of Yinji's indexes.

An index keeps *entries* ``(id, key)``: ``id`` a non-negative integer naming what is
indexed (a mother's ``seq``, or ``seq << 20 | row`` for one row of a mother's
fingerprints), ``key`` what a query is matched against. Each index says what its key is:

- ``RedisInvertedIndex`` (``tracker.indexes.inverted``): a mother's set of fingerprints
  (a uint64 array); queried by exact fingerprint (``lookup``);
- ``RedisHammingIndex`` / ``MemoryHammingIndex`` (``tracker.indexes.hamming``): one 64-bit
  fingerprint per id; queried within a Hamming distance (``query``/``query_many``);
- ``RedisLSH`` (``tracker.indexes.lsh``): one MinHash signature per id; queried by
  shared LSH band (``query``/``query_many``).

Queries differ because what they answer differs; changes do not. ``add`` and ``remove``
take any iterable of entries and are idempotent: adding an entry twice leaves the index
as adding it once, removing an entry the index does not hold changes nothing. Both
return how many postings they wrote or deleted, in the index's own unit (its docstring
says which), so a redelivered batch can be seen to be a no-op. ``clear`` deletes every
key of the index and no other (returns how many), ``stats`` reports sizes and settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar, runtime_checkable

from tracker.common.records import JSONObject

K_contra = TypeVar("K_contra", contravariant=True)


@runtime_checkable
class Index(Protocol[K_contra]):
    """What every index does with its entries ``(id, key)`` (see the module docstring)."""

    def add(self, items: Iterable[tuple[int, K_contra]]) -> int:
        """Index these entries; returns how many postings were new."""
        ...

    def remove(self, items: Iterable[tuple[int, K_contra]]) -> int:
        """Undo ``add`` for these entries; returns how many postings were deleted."""
        ...

    def clear(self) -> int:
        """Delete everything this index holds (nothing else); returns how much."""
        ...

    def stats(self) -> JSONObject:
        """Sizes and settings (JSON-serializable)."""
        ...
