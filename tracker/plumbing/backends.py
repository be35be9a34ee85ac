"""Where a library's data lives, opened in one place: ``open_backends(settings)``.

The settings choose once (``YINJI_MONGO_URI`` set: MongoDB, else the data folder):

- MongoDB: ONE ``MongoClient`` (``tracker.store.mongo_client``: one timeout rule)
  shared by the document store, the case store and the evidence log, which use
  collections of one database; ``Backends.close`` closes it after them.
- the data folder: the sqlite files and blob folders named in ``DataFiles``.

This module sits above what it opens: each part has a factory of its own that picks
its adapter (``tracker.store.open_store``, ``tracker.cases.store_factory.open_case_store``,
``EvidenceLog.open``/``from_settings``), and none of them imports this module.
``Library`` opens its store and evidence log from one ``Backends``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracker.plumbing.config import Settings
from tracker.store.files import DataFiles
from tracker.store.mongo_client import MongoDocument, mongo_client

if TYPE_CHECKING:
    from pymongo import MongoClient

    from tracker.cases.store import CaseStore
    from tracker.evidence.log import EvidenceLog
    from tracker.evidence.settings import EvidenceSettings
    from tracker.store.base import Store


class Backends:
    """The backends of one library (see the module's docstring). The objects it opens
    are the caller's to close; their MongoDB connection is this object's."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.files = DataFiles(settings.data_dir)
        self.mongo: MongoClient[MongoDocument] | None = (
            mongo_client(settings.mongo_uri) if settings.mongo_uri else None
        )

    def store(self) -> Store:
        """The document store: MongoDB, or the sqlite file of the data folder (created
        if missing; read-only when the folder is, see ``Store.read_only``)."""
        from tracker.store.factory import open_store

        return open_store(self.settings, client=self.mongo)

    def case_store(self) -> CaseStore:
        """Cases: collections beside the library's, or ``cases.sqlite3``."""
        from tracker.cases.store_factory import open_case_store

        return open_case_store(self.settings, client=self.mongo)

    def evidence_log(self, evidence: EvidenceSettings | None = None) -> EvidenceLog:
        """The evidence log: ``evidence_*`` collections and GridFS, or the data folder."""
        from tracker.evidence.log import EvidenceLog

        return EvidenceLog.from_settings(self.settings, evidence=evidence, client=self.mongo)

    def close(self) -> None:
        """Close the MongoDB connection (after what was opened from it)."""
        if self.mongo is not None:
            self.mongo.close()
            self.mongo = None


def open_backends(settings: Settings) -> Backends:
    """The backends ``settings`` choose (no server is contacted yet)."""
    return Backends(settings)


__all__ = [
    "Backends",
    "open_backends",
]
