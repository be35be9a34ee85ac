"""The factory that picks the case store's adapter from the same settings the library
uses: ``YINJI_MONGO_URI`` set: MongoDB collections in the library's database; else
``cases.sqlite3`` in the data folder."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracker.store.files import DataFiles, StorageSettings

from .store import CaseStore

if TYPE_CHECKING:
    from pymongo import MongoClient

    from tracker.store.mongo_client import MongoDocument


def open_case_store(
    settings: StorageSettings, *, client: MongoClient[MongoDocument] | None = None
) -> CaseStore:
    """The case store the settings ask for: MongoDB when ``mongo_uri`` is set (on
    ``client`` when one is given, which its giver closes; else on a client of its
    own), else ``cases.sqlite3`` in the data folder (created if missing)."""
    if settings.mongo_uri:
        from .mongo_store import MongoCaseStore

        return MongoCaseStore(
            client if client is not None else settings.mongo_uri, settings.mongo_db
        )
    from .sqlite_store import SqliteCaseStore

    files = DataFiles(settings.data_dir)
    files.make_folder()
    return SqliteCaseStore(files.cases, blob_dir=files.case_blobs)
