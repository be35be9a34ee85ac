"""The factory that picks the document store's backend from the settings, as
datasketch's ``ordered_storage(config)`` picks its storage by ``config["type"]``:
``YINJI_MONGO_URI`` set: MongoDB; else the sqlite file of the data folder."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Store
from .files import DataFiles, StorageSettings

if TYPE_CHECKING:
    from pymongo import MongoClient

    from .mongo_client import MongoDocument


def open_store(
    settings: StorageSettings, *, client: MongoClient[MongoDocument] | None = None
) -> Store:
    """The document store ``settings`` ask for: MongoDB when ``mongo_uri`` is set (on
    ``client`` when one is given, which its giver closes; else on a client of its own,
    closed by ``close``), else the sqlite file of the data folder (the folder created
    if missing; opened read-only when the folder is, see ``Store.read_only``).
    Importing this module loads no pymongo: the MongoDB adapter is imported here."""
    if settings.mongo_uri:
        from .mongo import MongoStore

        return MongoStore(client if client is not None else settings.mongo_uri, settings.mongo_db)
    from .sqlite import SqliteStore

    files = DataFiles(settings.data_dir)
    files.make_folder()
    return SqliteStore(files.store)
