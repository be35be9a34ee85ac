"""From match to takedown: cases, notices, sending, removal checks, alerts and the
monitoring of whole pirate books (issue 12). See docs/TAKEDOWN.md.

Imports nothing heavy: the notice renderers (reportlab, python-docx), the crawler and
pymongo are loaded by the functions that need them.
"""

from __future__ import annotations

from .model import (
    STATES,
    TRANSITIONS,
    Case,
    CaseError,
    CaseEvent,
    CaseURL,
    ConcurrentUpdate,
    IllegalTransition,
    Profile,
)
from .service import CaseService, VerdictResult
from .store import CaseStore
from .store_factory import open_case_store

__all__ = [
    "STATES",
    "TRANSITIONS",
    "Case",
    "CaseError",
    "CaseEvent",
    "CaseService",
    "CaseStore",
    "CaseURL",
    "ConcurrentUpdate",
    "IllegalTransition",
    "Profile",
    "VerdictResult",
    "open_case_store",
]
