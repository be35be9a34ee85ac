"""Whether the library's storage answers, for ``GET /healthz``: each probe raises what
the part raises when it does not answer, and does nothing else."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracker.library import Library


def ping_store(library: Library) -> None:
    """One read of the store (its engines' record)."""
    library.store.get_meta("engines")


def ping_redis(library: Library) -> None:
    """Redis' PING."""
    library.redis.ping()
