"""Starting an index rebuild from the web: the one path of the web admin's button and of
``POST /api/v1/index/rebuild`` (``workers.jobs.submit_rebuild``)."""

from __future__ import annotations

from workers import jobs

from .core import bad_request, library


def start_rebuild(engine: str | None) -> str:
    """Start the index rebuild on the workers (``jobs.submit_rebuild``: its chunks
    shared by the workers, then the load); ``jobs.RebuildRunning`` while one runs (a
    rebuild job, or a process holding the engine's index lock), 400 for an unknown
    engine. The one path of the web admin's button and of the API."""
    lib = library()
    with bad_request():
        name = lib.engine(engine).name

    def lock_owner() -> str | None:
        owner = lib.tracker.index_lock(name).owner()
        return None if owner is None else f"process {owner.pid} on {owner.host}"

    with bad_request():
        return jobs.submit_rebuild(name, lock_owner=lock_owner)
