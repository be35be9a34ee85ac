"""Discovery's records of a library: the runs' reports and the registered sites (both
in the store's meta table, shared by every worker), for the web admin and the API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracker.discovery.report import RunHistory
from tracker.discovery.sites import SiteRegistry

if TYPE_CHECKING:
    from tracker.library import Library


def run_history(library: Library) -> RunHistory:
    """The last discovery runs of ``library``."""
    return RunHistory(library.store)


def site_registry(library: Library) -> SiteRegistry:
    """The pirate sites registered in ``library``."""
    return SiteRegistry(library.store)
