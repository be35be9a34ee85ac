"""Where a library's data lives, opened in one place: ``open_backends(settings)``.

The settings choose once (``YINJI_MONGO_URI`` set: MongoDB, else the data folder):

- MongoDB: ONE ``MongoClient`` (``mongo_client``: one timeout rule) shared by the
  document store, the case store and the evidence log, which use collections of one
  database; ``Backends.close`` closes it after them.
- the data folder: the sqlite files and blob folders named in ``DataFiles``.

``tracker.store.open_store``, ``tracker.cases.open_case_store`` and
``EvidenceLog.from_settings`` stay as thin wrappers for callers that need one of them
alone (each then owns a connection of its own, made by the same rule); ``Library``
opens its store and evidence log from one ``Backends``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from tracker.config import Settings
from tracker.datadir import private_dir

if TYPE_CHECKING:
    from pymongo import MongoClient

    from tracker.cases.store import CaseStore
    from tracker.evidence import EvidenceLog
    from tracker.evidence.settings import EvidenceSettings
    from tracker.store import Store

#: How long a MongoDB server that does not answer is waited for, unless the URI says
#: (``serverSelectionTimeoutMS=``): pymongo's own default is 30 s, too long for a
#: command or a web request to say "the database is down".
MONGO_TIMEOUT_MS = 10_000

#: A document as the stores read it from MongoDB: BSON values (datetimes, ObjectIds,
#: bytes, nested documents) under string keys, which pymongo does not type (its own
#: default document type). The one ``Any`` left in tracker's public signatures, named.
MongoDocument: TypeAlias = dict[str, Any]


def mongo_client(uri: str) -> MongoClient[MongoDocument]:
    """A client of ``uri`` (timezone-aware datetimes), the one timeout rule applied:
    ``MONGO_TIMEOUT_MS`` unless the URI sets ``serverSelectionTimeoutMS``."""
    import pymongo

    options: dict[str, Any] = {"tz_aware": True}
    if "serverselectiontimeoutms" not in uri.lower():
        options["serverSelectionTimeoutMS"] = MONGO_TIMEOUT_MS
    return pymongo.MongoClient(uri, **options)


def client_of(
    uri_or_client: str | MongoClient[MongoDocument],
) -> tuple[MongoClient[MongoDocument], bool]:
    """(the client, whether the caller owns it and closes it) for a store opened on a
    ``mongodb://`` URI (a client of its own, ``mongo_client``'s timeout rule) or on a
    client it is given (pymongo's or ``mongomock.MongoClient()``; the giver closes it)."""
    if isinstance(uri_or_client, str):
        return mongo_client(uri_or_client), True
    return uri_or_client, False


@dataclass(frozen=True)
class DataFiles:
    """The files of the embedded default, all under one data folder."""

    data_dir: Path

    @property
    def store(self) -> Path:
        """Mothers, fingerprints, suspects, matches, users, watch list."""
        return self.data_dir / "yinji.sqlite3"

    @property
    def cases(self) -> Path:
        return self.data_dir / "cases.sqlite3"

    @property
    def case_blobs(self) -> Path:
        return self.data_dir / "cases" / "blobs"

    @property
    def evidence(self) -> Path:
        """The evidence log's folder (``evidence.sqlite3``, ``evidence/blobs``, the
        signing key): the data folder itself."""
        return self.data_dir

    def make_folder(self) -> None:
        """Create the data folder, or ``StoreError`` saying how to choose another."""
        from tracker.store import StoreError

        try:
            private_dir(self.data_dir)  # mode 700 (tracker.datadir)
        except OSError as exc:
            raise StoreError(
                f"cannot create the data folder {self.data_dir} ({exc.strerror or exc}): "
                "create it, or choose another with --data-dir or YINJI_DATA_DIR"
            ) from None


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
        if self.mongo is not None:
            from tracker.store.mongo import MongoStore

            return MongoStore(self.mongo, db_name=self.settings.mongo_db)
        from tracker.store.sqlite import SqliteStore

        self.files.make_folder()
        return SqliteStore(self.files.store)

    def case_store(self) -> CaseStore:
        """Cases: collections beside the library's, or ``cases.sqlite3``."""
        if self.mongo is not None:
            from tracker.cases.mongo_store import MongoCaseStore

            return MongoCaseStore(self.mongo, db_name=self.settings.mongo_db)
        from tracker.cases.sqlite_store import SqliteCaseStore

        self.files.make_folder()
        return SqliteCaseStore(self.files.cases, blob_dir=self.files.case_blobs)

    def evidence_log(self, evidence: EvidenceSettings | None = None) -> EvidenceLog:
        """The evidence log: ``evidence_*`` collections and GridFS, or the data folder."""
        from tracker.evidence import EvidenceLog

        mongo_db = self.mongo[self.settings.mongo_db] if self.mongo is not None else None
        return EvidenceLog.open(self.files.evidence, mongo_db=mongo_db, evidence=evidence)

    def close(self) -> None:
        """Close the MongoDB connection (after what was opened from it)."""
        if self.mongo is not None:
            self.mongo.close()
            self.mongo = None


def open_backends(settings: Settings) -> Backends:
    """The backends ``settings`` choose (no server is contacted yet)."""
    return Backends(settings)
