"""The case service of an installation opened and closed as one thing: its case store
is opened with it and closed with it (``CaseService.close`` leaves the store to the
caller that opened it)."""

from __future__ import annotations

from tracker.cases import CaseService, open_case_store
from tracker.plumbing.config import Settings


def open_case_service(settings: Settings) -> CaseService:
    """The case service of ``settings`` on a case store of its own."""
    return CaseService(open_case_store(settings), settings)


def close_case_service(service: CaseService) -> None:
    """Close what ``open_case_service`` opened: the service, then its store."""
    try:
        service.close()
    finally:
        service.store.close()
