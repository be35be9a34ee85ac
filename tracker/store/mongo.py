"""The production document store: MongoDB (also runs on mongomock in tests).

Imported only when ``YINJI_MONGO_URI`` is set (see ``tracker.store.open_store``), so
the embedded default never loads pymongo.

Written for a real server first: regex searches are escaped, filters are plain
server-side queries that indexes can serve, and every multi-document write is a
sequence of single-document atomic operations ordered so that a crash or a
concurrent writer leaves a consistent state (no multi-document transactions, which
need a replica set). Ingest writes a batch of mothers in a fixed handful of round
trips (``replace_mothers``: bulk inserts and a conditional ``bulk_write``), not a few
per mother, and a chunk of saved checks in six commands (``save_checks``). mongomock's
own ``bulk_write`` fails on ``ReplaceOne`` and ``UpdateOne`` with pymongo >= 4.10, so the
tests talk to this adapter through a real pymongo client and a wire-protocol server on
mongomock (``tests/mongo_wire.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pymongo import (
    ASCENDING,
    DESCENDING,
    InsertOne,
    ReplaceOne,
    ReturnDocument,
)
from pymongo.errors import BulkWriteError

from tracker.common.records import JSONValue

from ._common import (
    check_id,
    json_normalize,
    to_utc,
)
from .base import (
    Mother,
    NotFound,
    Replaced,
    Store,
    WatchItem,
    check_batch_ids,
    utcnow,
)
from .mongo_client import client_of
from .mongo_docs import MOTHERS, SUSPECTS, USERS, WATCH, _mother, _watch
from .mongo_matches import MongoMatches
from .mongo_records import MongoCollection, MongoKeyValues

if TYPE_CHECKING:
    from pymongo import MongoClient

    from .mongo_client import MongoDocument

_CHUNK = 1000  # values per $in list
_SEQ_COUNTER = "mother_seq"
_UNSIZED_BLOB = 1024 * 1024
_DUPLICATE_KEY = 11000


class MongoStore(MongoMatches, Store):
    """``Store`` on MongoDB. ``uri_or_client`` is a ``mongodb://`` URI or a
    pymongo-compatible client (``mongomock.MongoClient()`` in tests); a client passed
    in belongs to the caller and is not closed by ``close``."""

    def __init__(
        self, uri_or_client: str | MongoClient[MongoDocument], db_name: str = "yinji"
    ) -> None:
        self._client, self._owns_client = client_of(uri_or_client)
        self.db = self._client[db_name]
        self.mothers = self.db["mothers"]
        self.fingerprints = self.db["fingerprints"]
        self.suspects = self.db["suspects"]
        self.matches = self.db["matches"]
        self.users = self.db["users"]
        self.watch = self.db["watch"]
        self.meta = self.db["meta"]
        self.counters = self.db["counters"]
        self.mother_records = MongoCollection(self.mothers, MOTHERS)
        self.suspect_records = MongoCollection(self.suspects, SUSPECTS)
        self.user_records = MongoCollection(self.users, USERS)
        self.watch_records = MongoCollection(self.watch, WATCH)
        self.meta_values = MongoKeyValues(self.meta)
        self.create_indexes()

    def create_indexes(self) -> None:
        """Idempotent: ``create_index`` on an existing identical index is a no-op.
        Ids are ``_id`` (unique by construction): mother id, suspect id, match id,
        username, watch url, meta key."""
        self.mothers.create_index([("seq", ASCENDING)], unique=True, name="seq")
        self.mothers.create_index(
            [("ingested_at", ASCENDING), ("seq", ASCENDING)], name="ingested_at"
        )
        self.fingerprints.create_index(
            [("seq", ASCENDING), ("engine", ASCENDING)], unique=True, name="seq_engine"
        )
        self.suspects.create_index([("fetched_at", ASCENDING), ("_id", ASCENDING)], name="fetched")
        self.matches.create_index([("suspect_id", ASCENDING)], name="suspect_id")
        self.matches.create_index([("mother_id", ASCENDING)], name="mother_id")
        # The match list's pages: each sort in index order with the query's tie-break
        # (field descending, _id ascending; ascending sorts read it backwards), with and
        # without the verdict filter (as in the sqlite store).
        for field in ("score", "created_at", "coverage"):
            self.matches.create_index(
                [(field, DESCENDING), ("_id", ASCENDING)], name=f"list_{field}"
            )
        for field in ("score", "created_at"):
            self.matches.create_index(
                [("verdict", ASCENDING), (field, DESCENDING), ("_id", ASCENDING)],
                name=f"list_verdict_{field}",
            )
        self.matches.create_index([("domain", ASCENDING)], name="domain")
        self.matches.create_index([("rdomain", ASCENDING)], name="rdomain")
        # Sparse: users without a token have no field and do not collide.
        self.users.create_index(
            [("api_token_hash", ASCENDING)], unique=True, sparse=True, name="api_token_hash"
        )
        self.watch.create_index([("active", ASCENDING), ("added_at", ASCENDING)], name="active")

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    # --- mothers ---------------------------------------------------------------
    def _next_seq(self) -> int:
        # One atomic $inc on one document: concurrent writers never get the same
        # value and a value is never handed out again, even after deletes.
        doc = self.counters.find_one_and_update(
            {"_id": _SEQ_COUNTER},
            {"$inc": {"value": 1}},
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )
        assert doc is not None  # upserted, returned after the update
        return int(doc["value"])

    def replace_mother(
        self, mother: Mother, fingerprints: Mapping[str, bytes] | None = None
    ) -> tuple[Mother, Replaced | None]:
        check_id(mother.id, "mother id")
        stored = Mother(
            id=mother.id,
            title=mother.title,
            text=mother.text,
            source=mother.source,
            metadata=json_normalize(mother.metadata or {}),
            ingested_at=to_utc(mother.ingested_at),
            seq=self._next_seq(),
        )
        # Fingerprints of the new seq first: a crash after this leaves blobs of a seq no
        # mother has (never read), never a mother without its fingerprints.
        for engine, data in (fingerprints or {}).items():
            self.put_fingerprints(stored.seq, engine, data)
        # One atomic replace decides which version this write displaced.
        old = self.mothers.find_one_and_replace(
            {"_id": stored.id},
            {
                "seq": stored.seq,
                "title": stored.title,
                "text": stored.text,
                "chars": len(stored.text),  # so listings can leave the text out
                "source": stored.source,
                "metadata": stored.metadata,
                "ingested_at": stored.ingested_at,
            },
            upsert=True,
            return_document=ReturnDocument.BEFORE,
            projection={"seq": 1},
        )
        replaced: Replaced | None = None
        if old is not None and old.get("seq") != stored.seq:
            old_seq = int(old["seq"])
            replaced = Replaced(
                old_seq,
                {
                    doc["engine"]: bytes(doc["data"])
                    for doc in self.fingerprints.find({"seq": old_seq})
                },
            )
            # The replaced version's fingerprints are dead weight now.
            self.fingerprints.delete_many({"seq": old_seq})
        return stored, replaced

    @staticmethod
    def _mother_doc(mother: Mother) -> dict[str, Any]:
        return {
            "seq": mother.seq,
            "title": mother.title,
            "text": mother.text,
            "chars": len(mother.text),  # so listings can leave the text out
            "source": mother.source,
            "metadata": mother.metadata,
            "ingested_at": mother.ingested_at,
        }

    def _take_fingerprints(self, seqs: Sequence[int]) -> dict[int, dict[str, bytes]]:
        """The fingerprints of replaced versions, read and deleted (a query and a
        delete per 1,000 seqs)."""
        out: dict[int, dict[str, bytes]] = {int(s): {} for s in seqs}
        for i in range(0, len(seqs), _CHUNK):
            part = [int(s) for s in seqs[i : i + _CHUNK]]
            for doc in self.fingerprints.find({"seq": {"$in": part}}):
                out[int(doc["seq"])][doc["engine"]] = bytes(doc["data"])
            self.fingerprints.delete_many({"seq": {"$in": part}})
        return out

    def replace_mothers(
        self, items: Sequence[tuple[Mother, Mapping[str, bytes] | None]]
    ) -> list[tuple[Mother, Replaced | None]]:
        """A batch in a fixed number of commands whatever its size (up to 1,000 mothers
        and 48 MB of fingerprints; more is split by pymongo): one ``$inc`` reserving the
        batch's seqs, one insert of all fingerprints, one query for the versions the ids
        have now, one ``bulk_write`` (an insert command for new ids, an update command
        for the others), and for replacements one query and one delete of the replaced
        fingerprints. Each replacement is conditional on the version read (``_id`` and
        ``seq``), so, as with ``find_one_and_replace``, each writer learns exactly the
        version it displaced; a mother that lost a race to a concurrent writer is
        written again alone (``replace_mother``)."""
        check_batch_ids(items)
        if not items:
            return []
        for mother, _ in items:
            check_id(mother.id, "mother id")
        n = len(items)
        # Seqs first: one atomic $inc reserves n values no other writer gets.
        top = self.counters.find_one_and_update(
            {"_id": _SEQ_COUNTER},
            {"$inc": {"value": n}},
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )
        assert top is not None  # upserted, returned after the update
        first = int(top["value"]) - n + 1
        stored = [
            Mother(
                id=mother.id,
                title=mother.title,
                text=mother.text,
                source=mother.source,
                metadata=json_normalize(mother.metadata or {}),
                ingested_at=to_utc(mother.ingested_at),
                seq=first + i,
            )
            for i, (mother, _) in enumerate(items)
        ]
        # Fingerprints of the new seqs before the mothers (as in replace_mother): a crash
        # in between leaves blobs no mother points at, never a mother without them.
        blobs = [
            {"seq": m.seq, "engine": engine, "data": bytes(data), "size": len(data)}
            for m, (_, fps) in zip(stored, items, strict=True)
            for engine, data in (fps or {}).items()
        ]
        if blobs:
            self.fingerprints.insert_many(blobs, ordered=False)
        ids = [m.id for m in stored]
        old_seq: dict[str, int] = {}
        for i in range(0, n, _CHUNK):
            for doc in self.mothers.find({"_id": {"$in": ids[i : i + _CHUNK]}}, {"seq": 1}):
                old_seq[doc["_id"]] = int(doc["seq"])
        ops: list[Any] = [
            ReplaceOne({"_id": m.id, "seq": old_seq[m.id]}, self._mother_doc(m))
            if m.id in old_seq
            else InsertOne({"_id": m.id, **self._mother_doc(m)})
            for m in stored
        ]
        try:
            result = self.mothers.bulk_write(ops, ordered=False)
            written = result.inserted_count + result.matched_count
        except BulkWriteError as exc:
            # Only an insert that met a concurrent insert of the same id is expected.
            others = [e for e in exc.details["writeErrors"] if e["code"] != _DUPLICATE_KEY]
            if others:
                raise
            written = int(exc.details["nInserted"]) + int(exc.details["nMatched"])
        won = set(ids)
        if written < n:
            # Someone else wrote some of these ids between our read and our write: find
            # which writes landed (by our seqs), drop the others' unused blobs, and write
            # those mothers again, each alone.
            ours = {m.seq for m in stored}
            landed = self.current_seqs(ours)
            won = {m.id for m in stored if m.seq in landed}
            lost = [m.seq for m in stored if m.id not in won]
            for i in range(0, len(lost), _CHUNK):
                self.fingerprints.delete_many({"seq": {"$in": lost[i : i + _CHUNK]}})
        displaced = [old_seq[m.id] for m in stored if m.id in won and m.id in old_seq]
        replaced_fps = self._take_fingerprints(displaced) if displaced else {}
        out: list[tuple[Mother, Replaced | None]] = []
        for m, (mother, fps) in zip(stored, items, strict=True):
            if m.id not in won:
                out.append(self.replace_mother(mother, fps))
            elif m.id in old_seq:
                seq = old_seq[m.id]
                out.append((m, Replaced(seq, replaced_fps.get(seq, {}))))
            else:
                out.append((m, None))
        return out

    def current_seqs(self, seqs: Iterable[int]) -> set[int]:
        wanted = sorted({int(s) for s in seqs})
        found: set[int] = set()
        for i in range(0, len(wanted), _CHUNK):
            cursor = self.mothers.find({"seq": {"$in": wanted[i : i + _CHUNK]}}, {"seq": 1})
            found.update(int(doc["seq"]) for doc in cursor)
        return found

    def get_mothers_by_seq(self, seqs: Iterable[int]) -> dict[int, Mother]:
        wanted = sorted({int(s) for s in seqs})
        out: dict[int, Mother] = {}
        for i in range(0, len(wanted), _CHUNK):
            for doc in self.mothers.find({"seq": {"$in": wanted[i : i + _CHUNK]}}):
                out[int(doc["seq"])] = _mother(doc)
        return out

    def delete_mother(self, mother_id: str) -> Mother | None:
        doc = self.mothers.find_one_and_delete({"_id": mother_id})
        if doc is None:
            return None
        # Mother first: once it is gone nothing new points at it, then the cascade.
        self.fingerprints.delete_many({"seq": doc["seq"]})
        self.matches.delete_many({"mother_id": mother_id})
        return _mother(doc)

    def update_mother_metadata(
        self, mother_id: str, metadata: Mapping[str, JSONValue], *, title: str | None = None
    ) -> bool:
        fields: dict[str, Any] = {"metadata": json_normalize(metadata)}
        if title is not None:
            fields["title"] = title
        return self.mothers.update_one({"_id": mother_id}, {"$set": fields}).matched_count > 0

    def mothers_since(self, since: datetime) -> list[Mother]:
        cursor = self.mothers.find({"ingested_at": {"$gte": to_utc(since)}}).sort(
            [("ingested_at", ASCENDING), ("seq", ASCENDING)]
        )
        return [_mother(d) for d in cursor]

    # --- fingerprints ------------------------------------------------------------
    def put_fingerprints(self, seq: int, engine: str, data: bytes) -> None:
        self.fingerprints.replace_one(
            {"seq": int(seq), "engine": engine},
            {"seq": int(seq), "engine": engine, "data": bytes(data), "size": len(data)},
            upsert=True,
        )

    def last_seq(self) -> int:
        doc = self.counters.find_one({"_id": _SEQ_COUNTER})
        return 0 if doc is None else int(doc["value"])

    def iter_fingerprints(
        self, engine: str, *, batch_size: int = 500
    ) -> Iterator[tuple[int, bytes | None]]:
        # The mothers' seqs only (no text), then their blobs: two queries a batch.
        last = 0
        while True:
            seqs = [
                int(d["seq"])
                for d in self.mothers.find({"seq": {"$gt": last}}, {"seq": 1})
                .sort("seq", ASCENDING)
                .limit(max(1, batch_size))
            ]
            if not seqs:
                return
            blobs = {
                int(d["seq"]): bytes(d["data"])
                for d in self.fingerprints.find(
                    {"seq": {"$in": seqs}, "engine": engine}, {"seq": 1, "data": 1}
                )
            }
            for seq in seqs:
                yield seq, blobs.get(seq)
            last = seqs[-1]

    def fingerprint_totals(self, engine: str, *, after_seq: int = 0) -> tuple[int, int]:
        count = total = 0
        flt = {"engine": engine, "seq": {"$gt": int(after_seq)}}
        for doc in self.fingerprints.find(flt, {"size": 1}):
            count += 1
            # Blobs written before sizes were kept count as 1 MiB: an estimate on the
            # safe side (a rebuild judged too big to run by itself is asked for).
            total += int(doc.get("size", _UNSIZED_BLOB))
        return count, total

    def get_fingerprints(self, seq: int, engine: str) -> bytes | None:
        doc = self.fingerprints.find_one({"seq": int(seq), "engine": engine})
        return None if doc is None else bytes(doc["data"])

    # --- suspects --------------------------------------------------------------
    def mark_checked(self, suspect_id: str, when: datetime | None = None) -> None:
        result = self.suspects.update_one(
            {"_id": suspect_id}, {"$set": {"checked_at": to_utc(when or utcnow())}}
        )
        if result.matched_count == 0:
            raise NotFound(suspect_id)

    # --- watch list --------------------------------------------------------------
    def list_watch(self, *, active_only: bool = True) -> list[WatchItem]:
        flt = {"active": True} if active_only else {}
        cursor = self.watch.find(flt).sort([("added_at", ASCENDING), ("_id", ASCENDING)])
        return [_watch(d) for d in cursor]


__all__ = ["MongoStore"]
