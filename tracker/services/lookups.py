"""Single reads the background tasks make of a library's records, and the crawl's
near-duplicate filter shared by every worker through the library's Redis."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracker.common.records import NotFound

if TYPE_CHECKING:
    from tracker.crawler.pagesim import NearDuplicateFilter
    from tracker.library import Library
    from tracker.store import Suspect


def find_suspect(library: Library, suspect_id: str) -> Suspect | None:
    """The stored suspect, or None."""
    try:
        return library.store.get_suspect(suspect_id)
    except NotFound:
        return None


def stored_as_given(library: Library, mother_id: str, text: str) -> bool:
    """True when the work ``mother_id`` is stored with exactly ``text``."""
    try:
        return library.store.get_mother(mother_id).text == text
    except NotFound:
        return False


def near_duplicates(library: Library, name: str) -> NearDuplicateFilter:
    """The near-duplicate filter ``name`` of pages, kept in the library's Redis so that
    a page another worker saw under another URL of its site is known here too."""
    from tracker.crawler.pagesim import NearDuplicateFilter

    return NearDuplicateFilter(redis=library.redis, prefix=library.settings.redis_prefix, name=name)
