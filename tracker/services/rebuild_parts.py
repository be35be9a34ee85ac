"""A rebuild of an engine's index in parts that any process may run (the workers'
fan-out, ``workers.tasks.index``): the plan, each chunk's refill, the one load, and the
wait for a load another process holds the lock for. The same steps as
``IndexAdmin.rebuild`` runs one after the other, through the library's index admin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracker.indexes.refill import RefillChunk, RefillDone, RefillPlan
from tracker.services.results import RebuildResult

if TYPE_CHECKING:
    from tracker.library import Library
    from tracker.services.ingest import Progress


def plan_rebuild(library: Library, engine: str | None, chunk: int) -> RefillPlan:
    """The chunks of at most ``chunk`` mothers a rebuild of ``engine`` refills."""
    return library.indexes.plan_rebuild(engine, chunk)


def refill_chunk(
    library: Library, engine: str, chunk: RefillChunk, *, progress: Progress | None = None
) -> RefillDone:
    """One chunk's fingerprints stored (computed where missing); the index untouched."""
    return library.indexes.refill(engine, chunk, progress=progress)


def load_index(library: Library, engine: str, *, progress: Progress | None = None) -> RebuildResult:
    """The index cleared and bulk loaded from the stored fingerprints, under its lock
    (``IndexOutOfSync`` when another process holds it)."""
    return library.indexes.load(engine, progress=progress)


def wait_for_load(library: Library, engine: str, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the load another process runs to end; False
    when it still runs."""
    return library.indexes.tracker.wait_unlocked(engine, timeout)
