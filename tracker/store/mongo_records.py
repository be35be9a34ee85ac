"""The generic parts of the MongoDB adapters, written once: ``MongoCollection`` (records
of one kind in one collection, as ``Documents`` describes them) and ``MongoKeyValues``
(JSON values under string keys)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Generic, TypeVar

from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from tracker.common.records import JSONObject, JSONValue

from ._common import dumps
from .interfaces import Collection, Duplicate, KeyValues
from .mongo_client import MongoDocument

if TYPE_CHECKING:
    from pymongo.collection import Collection as MongoCollectionType

R = TypeVar("R")


def _aware(value: datetime | None) -> datetime | None:
    """BSON dates come back naive unless the client is ``tz_aware`` (a client passed
    in, such as mongomock's, may not be): they are UTC either way."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _regex(text: str) -> dict[str, str]:
    """Case-insensitive substring: user input is escaped, never a pattern."""
    return {"$regex": re.escape(text), "$options": "i"}


@dataclass(frozen=True)
class Documents(Generic[R]):
    """How records of one kind lie in one collection (their key is ``_id``): how a
    document becomes a record and a record (key, document), what a listing leaves out
    (``brief``), the fields a search looks in, the listing order and the scan's key."""

    decode: Callable[[MongoDocument], R]
    encode: Callable[[R], tuple[str, MongoDocument]] | None  # None: not written through here
    brief: dict[str, int] | None = None  # projection of a listing
    search: tuple[str, ...] = ()
    order: tuple[tuple[str, int], ...] = (("_id", ASCENDING),)
    scan_key: str = "_id"


class MongoCollection(Collection[R]):
    """``Collection`` on one MongoDB collection."""

    key_field = "_id"

    def __init__(
        self, collection: MongoCollectionType[MongoDocument], documents: Documents[R]
    ) -> None:
        self.collection = collection
        self.documents = documents

    def find_by(self, field: str, value: str) -> R | None:
        doc = self.collection.find_one({field: value})
        return None if doc is None else self.documents.decode(doc)

    def put(self, record: R) -> None:
        if self.documents.encode is None:
            raise TypeError(f"{self.collection.name} are not written as plain records")
        key, doc = self.documents.encode(record)
        try:
            self.collection.replace_one({"_id": key}, doc, upsert=True)
        except DuplicateKeyError as exc:  # another unique index than _id's
            raise Duplicate(f"{self.collection.name}: {exc}") from exc

    def delete(self, key: str) -> bool:
        return self.collection.delete_one({"_id": key}).deleted_count > 0

    def _filter(self, search: str | None) -> MongoDocument:
        if not search or not self.documents.search:
            return {}
        rx = _regex(search)
        return {"$or": [{name: rx} for name in self.documents.search]}

    def page(
        self, *, search: str | None = None, offset: int = 0, limit: int = 50, brief: bool = False
    ) -> list[R]:
        if limit <= 0:  # MongoDB reads limit(0) as "no limit"
            return []
        cursor = (
            self.collection.find(self._filter(search), self.documents.brief if brief else None)
            .sort(list(self.documents.order))
            .skip(max(0, offset))
            .limit(limit)
        )
        return [self.documents.decode(d) for d in cursor]

    def count(self, *, search: str | None = None) -> int:
        return self.collection.count_documents(self._filter(search))

    def scan(
        self, *, batch_size: int = 500, after: str | int | None = None, brief: bool = False
    ) -> Iterator[R]:
        # Keyset pagination: no cursor stays open while the caller works (server
        # cursors time out after 10 minutes of idleness).
        key = self.documents.scan_key
        last = after
        while True:
            flt = {} if last is None else {key: {"$gt": last}}
            docs = list(
                self.collection.find(flt, self.documents.brief if brief else None)
                .sort(key, ASCENDING)
                .limit(max(1, batch_size))
            )
            if not docs:
                return
            for doc in docs:
                yield self.documents.decode(doc)
            last = docs[-1][key]


class MongoKeyValues(KeyValues):
    """``KeyValues`` in a collection of ``{_id: key, value: JSON text}`` documents (a
    raised integer also as ``n``, so the server can compare it)."""

    def __init__(self, collection: MongoCollectionType[MongoDocument]) -> None:
        self.collection = collection

    def get(self, key: str) -> JSONValue:
        doc = self.collection.find_one({"_id": key})
        return None if doc is None else json.loads(doc["value"])

    def set(self, key: str, value: JSONValue) -> None:
        # Kept as JSON text: exactly what was given comes back (keys with "." or
        # "$", big ints, nested lists), the same as in the sqlite adapter.
        self.collection.replace_one({"_id": key}, {"value": dumps(value)}, upsert=True)

    def init(self, key: str, value: JSONValue) -> JSONValue:
        text = dumps(value)
        # A concurrent upsert may insert it first (DuplicateKeyError): its value stands.
        with contextlib.suppress(DuplicateKeyError):
            self.collection.update_one({"_id": key}, {"$setOnInsert": {"value": text}}, upsert=True)
        doc = self.collection.find_one({"_id": key})
        return json.loads(doc["value"]) if doc is not None else value

    def raise_to(self, key: str, value: int) -> int:
        value = int(value)
        # Only a document holding less (or none) is written: one atomic conditional
        # upsert; when a larger value is there the upsert's insert collides on _id.
        with contextlib.suppress(DuplicateKeyError):
            self.collection.update_one(
                {"_id": key, "n": {"$lt": value}},
                {"$set": {"n": value, "value": dumps(value)}},
                upsert=True,
            )
        doc = self.collection.find_one({"_id": key})
        return value if doc is None else int(doc.get("n", json.loads(doc["value"])))

    def delete(self, key: str) -> None:
        self.collection.delete_one({"_id": key})

    def items(self, prefix: str) -> JSONObject:
        cursor = self.collection.find({"_id": {"$regex": "^" + re.escape(prefix)}}).sort(
            "_id", ASCENDING
        )
        return {doc["_id"]: json.loads(doc["value"]) for doc in cursor}
