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

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pymongo import (
    ASCENDING,
    DESCENDING,
    DeleteMany,
    InsertOne,
    ReplaceOne,
    ReturnDocument,
    UpdateOne,
)
from pymongo.errors import BulkWriteError, DuplicateKeyError

from tracker.records import JSONObject, JSONValue, Region
from tracker.rules import check_verdict

from ._common import (
    TOP_N,
    check_id,
    domain_bounds,
    dumps,
    filters_of,
    json_normalize,
    page_of,
    prepare_matches,
    prepare_suspect,
    reverse_domain,
    sort_of,
    to_utc,
)
from .base import (
    VERDICTS,
    CheckWrite,
    Match,
    MatchQuery,
    MatchStats,
    Mother,
    NotFound,
    Passage,
    Replaced,
    Store,
    Suspect,
    User,
    WatchItem,
    check_batch_ids,
    utcnow,
)
from .mongo_client import client_of

if TYPE_CHECKING:
    from pymongo import MongoClient

    from .mongo_client import MongoDocument

_CHUNK = 1000  # values per $in list
_SEQ_COUNTER = "mother_seq"
_UNSIZED_BLOB = 1024 * 1024
_DUPLICATE_KEY = 11000


def _aware(value: datetime | None) -> datetime | None:
    """BSON dates come back naive unless the client is ``tz_aware`` (a client passed
    in, such as mongomock's, may not be): they are UTC either way."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _regex(text: str) -> dict[str, str]:
    """Case-insensitive substring: user input is escaped, never a pattern."""
    return {"$regex": re.escape(text), "$options": "i"}


def _mother(doc: dict[str, Any]) -> Mother:
    return Mother(
        id=doc["_id"],
        title=doc.get("title", ""),
        text=doc.get("text", ""),
        source=doc.get("source", ""),
        metadata=doc.get("metadata") or {},
        ingested_at=_aware(doc["ingested_at"]),  # type: ignore[arg-type]
        seq=int(doc["seq"]),
        chars=int(doc["chars"]) if "chars" in doc else len(doc.get("text", "")),
    )


def _suspect(doc: dict[str, Any]) -> Suspect:
    raw = doc.get("raw")
    return Suspect(
        id=doc["_id"],
        text=doc.get("text", ""),
        title=doc.get("title", ""),
        url=doc.get("url", ""),
        domain=doc.get("domain", ""),
        fetched_at=_aware(doc["fetched_at"]),  # type: ignore[arg-type]
        source=doc.get("source", ""),
        metadata=doc.get("metadata") or {},
        raw=bytes(raw) if raw is not None else None,
        checked_at=_aware(doc.get("checked_at")),
    )


def _match(doc: dict[str, Any]) -> Match:
    return Match(
        suspect_id=doc["suspect_id"],
        mother_id=doc["mother_id"],
        score=float(doc["score"]),
        coverage=float(doc["coverage"]),
        mother_coverage=float(doc["mother_coverage"]),
        passages=[Passage.from_dict(p) for p in doc.get("passages") or []],
        regions=[Region.from_dict(r) for r in doc.get("regions") or []],
        engine=doc.get("engine", ""),
        verdict=doc.get("verdict", "pending"),
        note=doc.get("note", ""),
        mother_title=doc.get("mother_title", ""),
        suspect_title=doc.get("suspect_title", ""),
        suspect_url=doc.get("suspect_url", ""),
        domain=doc.get("domain", ""),
        created_at=_aware(doc["created_at"]),  # type: ignore[arg-type]
        updated_at=_aware(doc["updated_at"]),  # type: ignore[arg-type]
    )


def _user(doc: dict[str, Any]) -> User:
    return User(
        username=doc["_id"],
        password_hash=doc["password_hash"],
        role=doc.get("role", "viewer"),
        api_token_hash=doc.get("api_token_hash"),
        created_at=_aware(doc["created_at"]),  # type: ignore[arg-type]
    )


def _watch(doc: dict[str, Any]) -> WatchItem:
    return WatchItem(
        url=doc["_id"],
        kind=doc.get("kind", "url"),
        added_at=_aware(doc["added_at"]),  # type: ignore[arg-type]
        last_crawled_at=_aware(doc.get("last_crawled_at")),
        active=bool(doc.get("active", True)),
    )


def _and(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    if not clauses:
        return {}
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _bounds(ops: dict[str, object]) -> dict[str, object]:
    """A range condition of the bounds given (``{"$gte": low, "$lt": high}``, None left out)."""
    return {op: value for op, value in ops.items() if value is not None}


def _match_filter(query: MatchQuery | None) -> dict[str, Any]:
    f = filters_of(query)
    clauses: list[dict[str, Any]] = []
    if f.verdict is not None:
        clauses.append({"verdict": f.verdict})
    score = _bounds({"$gte": f.min_score, "$lte": f.max_score})
    if score:
        clauses.append({"score": score})
    if f.mother_id is not None:
        clauses.append({"mother_id": f.mother_id})
    if f.suspect_id is not None:
        clauses.append({"suspect_id": f.suspect_id})
    if f.rdomain is not None:
        # The host itself or anything below it, as two index range scans on the
        # reversed domain (see _common.domain_bounds).
        lo, hi = domain_bounds(f.rdomain)
        clauses.append({"$or": [{"rdomain": f.rdomain}, {"rdomain": {"$gte": lo, "$lt": hi}}]})
    created = _bounds({"$gte": f.since, "$lt": f.until})
    if created:
        clauses.append({"created_at": created})
    if f.search is not None:
        rx = _regex(f.search)
        clauses.append({"$or": [{"mother_title": rx}, {"suspect_title": rx}, {"suspect_url": rx}]})
    return _and(clauses)


class MongoStore(Store):
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

    def get_mother(self, mother_id: str) -> Mother:
        doc = self.mothers.find_one({"_id": mother_id})
        if doc is None:
            raise NotFound(mother_id)
        return _mother(doc)

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

    @staticmethod
    def _mother_filter(search: str | None) -> dict[str, Any]:
        if not search:
            return {}
        rx = _regex(search)
        return {"$or": [{"_id": rx}, {"title": rx}]}

    def list_mothers(
        self,
        *,
        search: str | None = None,
        offset: int = 0,
        limit: int = 50,
        with_text: bool = True,
    ) -> list[Mother]:
        if limit <= 0:
            return []
        projection = None if with_text else {"text": 0}
        cursor = (
            self.mothers.find(self._mother_filter(search), projection)
            .sort([("ingested_at", DESCENDING), ("seq", DESCENDING)])
            .skip(max(0, offset))
            .limit(limit)
        )
        return [_mother(d) for d in cursor]

    def count_mothers(self, *, search: str | None = None) -> int:
        return self.mothers.count_documents(self._mother_filter(search))

    def iter_mothers(self, *, batch_size: int = 500, after_seq: int = 0) -> Iterator[Mother]:
        # Keyset pagination on seq: no cursor stays open while the caller works
        # (server cursors time out after 10 minutes of idleness).
        last = int(after_seq)
        while True:
            docs = list(
                self.mothers.find({"seq": {"$gt": last}})
                .sort("seq", ASCENDING)
                .limit(max(1, batch_size))
            )
            if not docs:
                return
            for doc in docs:
                yield _mother(doc)
            last = int(docs[-1]["seq"])

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
    @staticmethod
    def _suspect_doc(s: Suspect) -> dict[str, Any]:
        """The stored document of a prepared suspect (its ``_id`` is the filter's)."""
        return {
            "title": s.title,
            "text": s.text,
            "url": s.url,
            "domain": s.domain,
            "fetched_at": s.fetched_at,
            "source": s.source,
            "metadata": s.metadata,
            "raw": s.raw,
            "checked_at": s.checked_at,
        }

    def put_suspect(self, suspect: Suspect) -> Suspect:
        s = prepare_suspect(suspect)
        self.suspects.replace_one({"_id": s.id}, self._suspect_doc(s), upsert=True)
        return s

    def get_suspect(self, suspect_id: str) -> Suspect:
        doc = self.suspects.find_one({"_id": suspect_id})
        if doc is None:
            raise NotFound(suspect_id)
        return _suspect(doc)

    @staticmethod
    def _suspect_filter(search: str | None) -> dict[str, Any]:
        if not search:
            return {}
        rx = _regex(search)
        return {"$or": [{"_id": rx}, {"title": rx}, {"url": rx}]}

    def list_suspects(
        self, *, search: str | None = None, offset: int = 0, limit: int = 50
    ) -> list[Suspect]:
        if limit <= 0:
            return []
        cursor = (
            self.suspects.find(self._suspect_filter(search), projection={"raw": 0})
            .sort([("fetched_at", DESCENDING), ("_id", DESCENDING)])
            .skip(max(0, offset))
            .limit(limit)
        )
        return [_suspect(d) for d in cursor]

    def count_suspects(self, *, search: str | None = None) -> int:
        return self.suspects.count_documents(self._suspect_filter(search))

    def iter_suspects(self, *, batch_size: int = 500) -> Iterator[Suspect]:
        """Every suspect in id order, without ``raw`` (re-checks need the text)."""
        last: str | None = None
        while True:
            flt = {} if last is None else {"_id": {"$gt": last}}
            docs = list(
                self.suspects.find(flt, projection={"raw": 0})
                .sort("_id", ASCENDING)
                .limit(max(1, batch_size))
            )
            if not docs:
                return
            for doc in docs:
                yield _suspect(doc)
            last = docs[-1]["_id"]

    def mark_checked(self, suspect_id: str, when: datetime | None = None) -> None:
        result = self.suspects.update_one(
            {"_id": suspect_id}, {"$set": {"checked_at": to_utc(when or utcnow())}}
        )
        if result.matched_count == 0:
            raise NotFound(suspect_id)

    # --- matches -----------------------------------------------------------------
    def put_matches(self, suspect_id: str, matches: Sequence[Match]) -> None:
        check_id(suspect_id, "suspect id")
        now = to_utc(utcnow())
        sdoc = self.suspects.find_one({"_id": suspect_id}, projection={"raw": 0})
        suspect = _suspect(sdoc) if sdoc is not None else None
        titles = self._mother_titles({m.mother_id for m in matches})
        prepared = prepare_matches(suspect_id, matches, titles, suspect, now)
        for m in prepared:
            self.matches.update_one({"_id": m.id}, self._match_update(m), upsert=True)
        # Last: drop earlier machine results this check no longer finds. The
        # verdict condition is evaluated per document by the server, so a match a
        # person has just confirmed is not deleted.
        self.matches.delete_many(self._stale_matches(suspect_id, prepared))

    def _mother_titles(self, mother_ids: Iterable[str]) -> dict[str, str]:
        ids = sorted(mother_ids)
        titles: dict[str, str] = {}
        for i in range(0, len(ids), _CHUNK):
            for doc in self.mothers.find(
                {"_id": {"$in": ids[i : i + _CHUNK]}}, projection={"title": 1}
            ):
                titles[doc["_id"]] = doc.get("title", "")
        return titles

    @staticmethod
    def _match_update(m: Match) -> dict[str, Any]:
        """One atomic upsert per match: machine fields are $set, the reviewer's fields
        only on insert. A set_verdict racing with a re-check is never overwritten, and a
        redelivered task writes the same document again."""
        return {
            "$set": {
                "suspect_id": m.suspect_id,
                "mother_id": m.mother_id,
                "score": m.score,
                "coverage": m.coverage,
                "mother_coverage": m.mother_coverage,
                "passages": [p.to_dict() for p in m.passages],
                "regions": [r.to_dict() for r in m.regions],
                "engine": m.engine,
                "mother_title": m.mother_title,
                "suspect_title": m.suspect_title,
                "suspect_url": m.suspect_url,
                "domain": m.domain,
                "rdomain": reverse_domain(m.domain),
                "updated_at": m.updated_at,
            },
            "$setOnInsert": {
                "verdict": m.verdict,
                "note": m.note,
                "created_at": m.created_at,
            },
        }

    @staticmethod
    def _stale_matches(suspect_id: str, kept: Sequence[Match]) -> dict[str, Any]:
        """The suspect's pending matches a check no longer finds."""
        return {
            "suspect_id": suspect_id,
            "verdict": "pending",
            "_id": {"$nin": [m.id for m in kept]},
        }

    def save_checks(self, writes: Sequence[CheckWrite]) -> list[bool]:
        """A chunk's writes in six commands whatever its size (one by one: 4 a check and
        one a match): which re-checked suspects still exist; the suspects (one update
        command: put whole, or only ``checked_at`` set); the written suspects read back
        and the matched mothers' titles; the matches (one update command of upserts, then
        one delete command of each suspect's stale pending matches). Without
        transactions (they need a replica set) a crash between two steps can leave
        suspects written without their matches; a redelivered chunk writes every one
        again (all upserts)."""
        if not writes:
            return []
        for w in writes:
            check_id(w.suspect.id, "suspect id")
        recheck = sorted({w.suspect.id for w in writes if not w.rewrite})
        alive: set[str] = set()
        for i in range(0, len(recheck), _CHUNK):
            alive.update(
                d["_id"]
                for d in self.suspects.find(
                    {"_id": {"$in": recheck[i : i + _CHUNK]}}, projection={"_id": 1}
                )
            )
        done = [w.rewrite or w.suspect.id in alive for w in writes]
        kept = [w for w, ok in zip(writes, done, strict=True) if ok]
        ops: list[Any] = []
        for w in kept:
            if w.rewrite:
                s = prepare_suspect(w.suspect)
                ops.append(ReplaceOne({"_id": s.id}, self._suspect_doc(s), upsert=True))
            else:
                when = to_utc(w.suspect.checked_at or utcnow())
                ops.append(UpdateOne({"_id": w.suspect.id}, {"$set": {"checked_at": when}}))
        if ops:
            self.suspects.bulk_write(ops, ordered=True)
        ids = sorted({w.suspect.id for w in kept})
        suspects: dict[str, Suspect] = {}
        for i in range(0, len(ids), _CHUNK):
            for doc in self.suspects.find(
                {"_id": {"$in": ids[i : i + _CHUNK]}}, projection={"raw": 0}
            ):
                suspects[doc["_id"]] = _suspect(doc)
        titles = self._mother_titles({m.mother_id for w in kept for m in w.matches})
        now = to_utc(utcnow())
        upserts: list[Any] = []
        stale: list[Any] = []
        for w in kept:
            sid = w.suspect.id
            prepared = prepare_matches(sid, w.matches, titles, suspects.get(sid), now)
            upserts += [
                UpdateOne({"_id": m.id}, self._match_update(m), upsert=True) for m in prepared
            ]
            stale.append(DeleteMany(self._stale_matches(sid, prepared)))
        # Every upsert, then every drop (a suspect's drop spares its own upserts): two
        # commands, where interleaving them would make an ordered bulk one per run.
        self.matches.bulk_write([*upserts, *stale], ordered=True)
        return done

    def get_match(self, match_id: str) -> Match:
        doc = self.matches.find_one({"_id": match_id})
        if doc is None:
            raise NotFound(match_id)
        return _match(doc)

    def set_verdict(self, match_id: str, verdict: str, note: str | None = None) -> Match:
        check_verdict(verdict)
        changes: dict[str, Any] = {"verdict": verdict, "updated_at": to_utc(utcnow())}
        if note is not None:
            changes["note"] = note
        doc = self.matches.find_one_and_update(
            {"_id": match_id}, {"$set": changes}, return_document=ReturnDocument.AFTER
        )
        if doc is None:
            raise NotFound(match_id)
        return _match(doc)

    def query_matches(self, query: MatchQuery) -> list[Match]:
        flt = _match_filter(query)
        field, desc = sort_of(query)
        offset, limit = page_of(query)
        if limit == 0:
            return []
        cursor = (
            self.matches.find(flt)
            .sort([(field, DESCENDING if desc else ASCENDING), ("_id", ASCENDING)])
            .skip(offset)
            .limit(limit)
        )
        return [_match(d) for d in cursor]

    def count_matches(self, query: MatchQuery) -> int:
        return self.matches.count_documents(_match_filter(query))

    def match_stats(self, query: MatchQuery | None = None) -> MatchStats:
        flt = _match_filter(query)
        head = [{"$match": flt}] if flt else []
        by_day = [
            (d["_id"], int(d["n"]))
            for d in self.matches.aggregate(
                [
                    *head,
                    {
                        "$group": {
                            "_id": {"$dateToString": {"format": "%Y-%m-%d", "date": "$created_at"}},
                            "n": {"$sum": 1},
                        }
                    },
                    {"$sort": {"_id": 1}},
                ]
            )
        ]
        by_verdict = dict.fromkeys(VERDICTS, 0)
        for d in self.matches.aggregate([*head, {"$group": {"_id": "$verdict", "n": {"$sum": 1}}}]):
            by_verdict[d["_id"]] = int(d["n"])
        top_mothers = [
            (d["_id"], d.get("title") or "", int(d["n"]))
            for d in self.matches.aggregate(
                [
                    *head,
                    {
                        "$group": {
                            "_id": "$mother_id",
                            "title": {"$max": "$mother_title"},
                            "n": {"$sum": 1},
                        }
                    },
                    {"$sort": {"n": -1, "_id": 1}},
                    {"$limit": TOP_N},
                ]
            )
        ]
        top_domains = [
            (d["_id"], int(d["n"]))
            for d in self.matches.aggregate(
                [
                    {"$match": _and([c for c in (flt, {"domain": {"$ne": ""}}) if c])},
                    {"$group": {"_id": "$domain", "n": {"$sum": 1}}},
                    {"$sort": {"n": -1, "_id": 1}},
                    {"$limit": TOP_N},
                ]
            )
        ]
        return {
            "by_day": by_day,
            "by_verdict": by_verdict,
            "top_mothers": top_mothers,
            "top_domains": top_domains,
        }

    # --- users -------------------------------------------------------------------
    def put_user(self, user: User) -> None:
        check_id(user.username, "username")
        doc: dict[str, Any] = {
            "password_hash": user.password_hash,
            "role": user.role,
            "created_at": to_utc(user.created_at),
        }
        if user.api_token_hash:  # absent, not null: the unique index is sparse
            doc["api_token_hash"] = user.api_token_hash
        try:
            self.users.replace_one({"_id": user.username}, doc, upsert=True)
        except DuplicateKeyError as exc:
            raise ValueError("API token already belongs to another user") from exc

    def get_user(self, username: str) -> User | None:
        doc = self.users.find_one({"_id": username})
        return None if doc is None else _user(doc)

    def get_user_by_token_hash(self, token_hash: str) -> User | None:
        if not token_hash:
            return None
        doc = self.users.find_one({"api_token_hash": token_hash})
        return None if doc is None else _user(doc)

    def list_users(self) -> list[User]:
        return [_user(d) for d in self.users.find().sort("_id", ASCENDING)]

    def delete_user(self, username: str) -> None:
        self.users.delete_one({"_id": username})

    # --- watch list --------------------------------------------------------------
    def put_watch(self, item: WatchItem) -> None:
        check_id(item.url, "watch url")
        self.watch.replace_one(
            {"_id": item.url},
            {
                "kind": item.kind,
                "added_at": to_utc(item.added_at),
                "last_crawled_at": None
                if item.last_crawled_at is None
                else to_utc(item.last_crawled_at),
                "active": bool(item.active),
            },
            upsert=True,
        )

    def list_watch(self, *, active_only: bool = True) -> list[WatchItem]:
        flt = {"active": True} if active_only else {}
        cursor = self.watch.find(flt).sort([("added_at", ASCENDING), ("_id", ASCENDING)])
        return [_watch(d) for d in cursor]

    def delete_watch(self, url: str) -> None:
        self.watch.delete_one({"_id": url})

    # --- meta ----------------------------------------------------------------------
    def get_meta(self, key: str) -> JSONValue:
        doc = self.meta.find_one({"_id": key})
        return None if doc is None else json.loads(doc["value"])

    def set_meta(self, key: str, value: JSONValue) -> None:
        # Kept as JSON text: exactly what was given comes back (keys with "." or
        # "$", big ints, nested lists), the same as in the sqlite adapter.
        self.meta.replace_one({"_id": key}, {"value": dumps(value)}, upsert=True)

    def init_meta(self, key: str, value: JSONValue) -> JSONValue:
        text = dumps(value)
        # A concurrent upsert may insert it first (DuplicateKeyError): its value stands.
        with contextlib.suppress(DuplicateKeyError):
            self.meta.update_one({"_id": key}, {"$setOnInsert": {"value": text}}, upsert=True)
        doc = self.meta.find_one({"_id": key})
        return json.loads(doc["value"]) if doc is not None else value

    def raise_meta(self, key: str, value: int) -> int:
        value = int(value)
        # Only a document holding less (or none) is written: one atomic conditional
        # upsert; when a larger value is there the upsert's insert collides on _id.
        with contextlib.suppress(DuplicateKeyError):
            self.meta.update_one(
                {"_id": key, "n": {"$lt": value}},
                {"$set": {"n": value, "value": dumps(value)}},
                upsert=True,
            )
        doc = self.meta.find_one({"_id": key})
        return value if doc is None else int(doc.get("n", json.loads(doc["value"])))

    def delete_meta(self, key: str) -> None:
        self.meta.delete_one({"_id": key})

    def meta_items(self, prefix: str) -> JSONObject:
        cursor = self.meta.find({"_id": {"$regex": "^" + re.escape(prefix)}}).sort("_id", ASCENDING)
        return {doc["_id"]: json.loads(doc["value"]) for doc in cursor}


__all__ = ["MongoStore"]
