"""The evidence log's MongoDB backend (pymongo, or mongomock in tests).

Collections: ``evidence_meta``, ``evidence_leaves`` (``_id`` = leaf index),
``evidence_nodes`` (``_id`` = ``"level:index"``), ``evidence_heads`` (``_id`` = head id)
and ``evidence_stamps``. MongoDB cannot refuse an update the way sqlite triggers do:
``EvidenceLog.audit`` is what notices one. Only single-document operations are used.

A record's index is allocated by inserting ``_id = current size``; the unique ``_id``
makes a concurrent writer's insert fail, and it retries with the next index: no index
repeats and none is skipped, whatever the crash.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import BulkWriteError, DuplicateKeyError

from .canonical import format_time, parse_time
from .keys import SignedTreeHead, TreeHead
from .records import ONCE_PREFIX, Appended, BackendRecord, EvidenceError, Stamp

if TYPE_CHECKING:
    from pymongo.database import Database

    from tracker.store.mongo_client import MongoDocument

_RETRIES = 1000


class MongoBackend:
    def __init__(self, db: Database[MongoDocument]) -> None:
        self.db = db
        self.meta = db["evidence_meta"]
        self.leaves = db["evidence_leaves"]
        self.nodes_ = db["evidence_nodes"]
        self.heads_ = db["evidence_heads"]
        self.stamps_ = db["evidence_stamps"]
        self.leaves.create_index(
            [("suspect_id", ASCENDING), ("mother_id", ASCENDING)], name="subject"
        )
        self.leaves.create_index([("once", ASCENDING)], name="once", sparse=True)
        self.stamps_.create_index([("head_id", ASCENDING)], name="head_id")

    @staticmethod
    def _next_id(collection: Any) -> int:
        last = collection.find_one({}, projection={"_id": 1}, sort=[("_id", DESCENDING)])
        return 0 if last is None else int(last["_id"]) + 1

    def _insert_next(self, collection: Any, doc: dict[str, Any]) -> int:
        for _ in range(_RETRIES):
            index = self._next_id(collection)
            try:
                collection.insert_one({**doc, "_id": index})
            except DuplicateKeyError:
                continue
            return index
        raise EvidenceError(f"could not append to {collection.name}: too many concurrent writers")

    def size(self) -> int:
        return self._next_id(self.leaves)

    def append(
        self, data: bytes, leaf: bytes, kind: str, suspect_id: str | None, mother_id: str | None
    ) -> int:
        return self.append_many([BackendRecord(data, leaf, kind, suspect_id, mother_id)])[0].index

    def _kept(self, keys: Sequence[str]) -> dict[str, int]:
        """The records already appended under these ``once`` keys: in the record's own
        document (since group commit), or in ``evidence_meta`` (before it)."""
        kept: dict[str, int] = {}
        for doc in self.leaves.find({"once": {"$in": list(keys)}}, projection={"once": 1}):
            kept.setdefault(str(doc["once"]), int(doc["_id"]))
        for doc in self.meta.find({"_id": {"$in": [ONCE_PREFIX + k for k in keys]}}):
            kept.setdefault(str(doc["_id"]).removeprefix(ONCE_PREFIX), int(doc["value"]))
        return kept

    def append_many(self, records: Sequence[BackendRecord]) -> list[Appended]:
        """One ordered ``insert_many`` at consecutive ``_id``s (one round trip); a
        concurrent writer's insert makes the rest retry at the next free index. The
        ``once`` key is a field of the record's document (one write: never a record
        without its key), and also kept in ``evidence_meta`` afterwards."""
        keys = [r.once for r in records if r.once is not None]
        kept = self._kept(keys) if keys else {}
        placed: list[Appended | None] = []
        docs: list[tuple[int, dict[str, Any]]] = []  # (position in records, document)
        batch_keys: set[str] = set()
        for pos, r in enumerate(records):
            if r.once is not None and r.once in kept:
                placed.append(Appended(kept[r.once], False))
                continue
            placed.append(None)
            if r.once is not None and r.once in batch_keys:
                continue  # a second record of the same key in this batch: not appended
            doc: dict[str, Any] = {
                "kind": r.kind,
                "suspect_id": r.suspect_id,
                "mother_id": r.mother_id,
                "data": r.data,
                "leaf_hash": r.leaf,
            }
            if r.once is not None:
                doc["once"] = r.once
                batch_keys.add(r.once)
            docs.append((pos, doc))
        for _ in range(_RETRIES):
            if not docs:
                break
            first = self._next_id(self.leaves)
            batch = [{**doc, "_id": first + i} for i, (_, doc) in enumerate(docs)]
            try:
                self.leaves.insert_many(batch, ordered=True)
                inserted = len(batch)
            except BulkWriteError as exc:
                inserted = int(exc.details.get("nInserted", 0))
            for i in range(inserted):
                placed[docs[i][0]] = Appended(first + i, True)
            docs = docs[inserted:]
        else:
            if docs:
                raise EvidenceError(
                    "could not append to evidence_leaves: too many concurrent writers"
                )
        out: list[Appended] = []
        for r, where in zip(records, placed, strict=True):
            if where is None:  # the same key twice in one batch: the first one's record
                assert r.once is not None
                where = next(
                    p for q, p in zip(records, placed, strict=True) if q.once == r.once and p
                )
                where = Appended(where.index, False)
            elif where.new and r.once is not None:
                self.put_meta_once(ONCE_PREFIX + r.once, str(where.index))
            out.append(where)
        return out

    def entry(self, index: int) -> tuple[bytes, bytes] | None:
        doc = self.leaves.find_one({"_id": index})
        return (bytes(doc["data"]), bytes(doc["leaf_hash"])) if doc else None

    def entries(self, lo: int, hi: int) -> Iterator[tuple[int, bytes, bytes]]:
        cursor = self.leaves.find({"_id": {"$gte": lo, "$lt": hi}}).sort("_id", ASCENDING)
        for doc in cursor:
            yield int(doc["_id"]), bytes(doc["data"]), bytes(doc["leaf_hash"])

    def find(
        self, suspect_id: str, mother_id: str | None, kinds: Sequence[str] | None
    ) -> list[int]:
        query: dict[str, Any] = {"suspect_id": suspect_id}
        if mother_id is not None:
            query["mother_id"] = {"$in": [None, mother_id]}
        if kinds:
            query["kind"] = {"$in": list(kinds)}
        cursor = self.leaves.find(query, projection={"_id": 1}).sort("_id", ASCENDING)
        return [int(d["_id"]) for d in cursor]

    def get_node(self, level: int, index: int) -> bytes | None:
        doc = self.nodes_.find_one({"_id": f"{level}:{index}"})
        return bytes(doc["hash"]) if doc else None

    def put_node(self, level: int, index: int, value: bytes) -> None:
        # A concurrent writer may have stored it first: the value is the same.
        with contextlib.suppress(DuplicateKeyError):
            self.nodes_.insert_one(
                {"_id": f"{level}:{index}", "level": level, "index": index, "hash": value}
            )

    def nodes(self) -> Iterator[tuple[int, int, bytes]]:
        for doc in self.nodes_.find({}):
            yield int(doc["level"]), int(doc["index"]), bytes(doc["hash"])

    def get_meta(self, key: str) -> str | None:
        doc = self.meta.find_one({"_id": key})
        return str(doc["value"]) if doc else None

    def put_meta_once(self, key: str, value: str) -> str:
        with contextlib.suppress(DuplicateKeyError):
            self.meta.insert_one({"_id": key, "value": value})
        stored = self.get_meta(key)
        assert stored is not None
        return stored

    def add_head(self, signed: SignedTreeHead) -> int:
        h = signed.head
        doc = {
            "size": h.size,
            "root_hash": h.root_hash,
            "timestamp_ms": h.timestamp_ms,
            "log_id": h.log_id,
            "signature": signed.signature,
        }
        return self._insert_next(self.heads_, doc)

    @staticmethod
    def _head(doc: dict[str, Any]) -> tuple[int, SignedTreeHead]:
        head = TreeHead(
            int(doc["size"]), bytes(doc["root_hash"]), int(doc["timestamp_ms"]), doc["log_id"]
        )
        return int(doc["_id"]), SignedTreeHead(head, bytes(doc["signature"]))

    def heads(self) -> list[tuple[int, SignedTreeHead]]:
        return [self._head(d) for d in self.heads_.find({}).sort("_id", ASCENDING)]

    def latest_head(self) -> tuple[int, SignedTreeHead] | None:
        doc = self.heads_.find_one({}, sort=[("_id", DESCENDING)])
        return self._head(doc) if doc else None

    def add_stamp(self, stamp: Stamp) -> None:
        self.stamps_.insert_one(
            {
                "head_id": stamp.head_id,
                "at": format_time(stamp.at),
                "tsa_url": stamp.tsa_url,
                "response": stamp.response,
                "error": stamp.error,
            }
        )

    def stamps(self, head_id: int) -> list[Stamp]:
        docs = self.stamps_.find({"head_id": head_id}).sort("_id", ASCENDING)
        return [
            Stamp(
                int(d["head_id"]),
                parse_time(d["at"]),
                d["tsa_url"],
                bytes(d["response"]) if d.get("response") is not None else None,
                d.get("error"),
            )
            for d in docs
        ]

    def close(self) -> None:
        pass  # the client belongs to whoever opened it
