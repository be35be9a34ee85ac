"""``CaseStore`` on MongoDB: collections ``cases``, ``case_events``, ``case_meta`` and
``case_blobs`` in the library's database (runs on mongomock in tests).

Single-document atomic operations only (no transactions, which need a replica set):
a case update is a compare-and-set on its ``version``; events are inserted after it
with a unique (case_id, seq) index, so two writers can never both take one place in
the chain (the loser re-reads the last event and retries).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError

from tracker.common.records import JSONValue, NotFound
from tracker.store.mongo_client import client_of

from .model import Case, CaseEvent, CaseEventRecord, CaseRecord, ConcurrentUpdate
from .store import MAX_BLOB_BYTES, CaseStore, blob_key, chain, check_blob_key

if TYPE_CHECKING:
    from pymongo import MongoClient

    from tracker.store.mongo_client import MongoDocument


def _doc(case: Case) -> dict[str, Any]:
    d = case.to_dict()
    d["_id"] = case.id
    return d


def _case(doc: dict[str, Any]) -> Case:
    doc = dict(doc)
    doc.pop("_id", None)
    return Case.from_dict(cast(CaseRecord, doc))


class MongoCaseStore(CaseStore):
    def __init__(
        self, uri_or_client: str | MongoClient[MongoDocument], db_name: str = "yinji"
    ) -> None:
        self._client, self._owns_client = client_of(uri_or_client)
        db = self._client[db_name]
        self.cases = db["cases"]
        self.events = db["case_events"]
        self.meta = db["case_meta"]
        self.blobs = db["case_blobs"]
        self.cases.create_index(
            [("work", ASCENDING), ("domain", ASCENDING), ("created_at", ASCENDING)],
            name="work_domain",
        )
        self.cases.create_index([("state", ASCENDING), ("updated_at", DESCENDING)], name="state")
        self.events.create_index(
            [("case_id", ASCENDING), ("seq", ASCENDING)], unique=True, name="case_seq"
        )

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    # --- cases -----------------------------------------------------------------------
    def create_case(self, case: Case, events: Sequence[CaseEvent] = ()) -> bool:
        case.version = 1
        try:
            self.cases.insert_one(_doc(case))
        except DuplicateKeyError:
            return False
        self.append_events(case.id, events)
        return True

    def get_case(self, case_id: str) -> Case:
        doc = self.cases.find_one({"_id": case_id})
        if doc is None:
            raise NotFound(f"no case {case_id!r}")
        return _case(doc)

    def update_case(
        self, case: Case, expected_version: int, events: Sequence[CaseEvent] = ()
    ) -> Case:
        case.version = expected_version + 1
        result = self.cases.replace_one({"_id": case.id, "version": expected_version}, _doc(case))
        if result.matched_count == 0:
            case.version = expected_version
            if self.cases.count_documents({"_id": case.id}) == 0:
                raise NotFound(f"no case {case.id!r}")
            raise ConcurrentUpdate(f"case {case.id} changed meanwhile")
        self.append_events(case.id, events)
        return case

    def list_cases(
        self,
        *,
        states: Sequence[str] | None = None,
        domain: str | None = None,
        work: str | None = None,
    ) -> list[Case]:
        query: dict[str, Any] = {}
        if states is not None:
            query["state"] = {"$in": list(states)}
        if domain is not None:
            query["domain"] = domain
        if work is not None:
            query["work"] = work
        cursor = self.cases.find(query).sort([("created_at", DESCENDING), ("_id", DESCENDING)])
        return [_case(d) for d in cursor]

    def case_ids_for(self, work: str, domain: str) -> list[str]:
        cursor = self.cases.find({"work": work, "domain": domain}, {"_id": 1}).sort(
            [("created_at", ASCENDING), ("_id", ASCENDING)]
        )
        return [d["_id"] for d in cursor]

    # --- history ---------------------------------------------------------------------
    def _last(self, case_id: str) -> CaseEvent | None:
        doc = self.events.find_one({"case_id": case_id}, sort=[("seq", DESCENDING)])
        if doc is None:
            return None
        doc.pop("_id", None)
        return CaseEvent.from_dict(cast(CaseEventRecord, doc))

    def append_events(self, case_id: str, events: Sequence[CaseEvent]) -> list[CaseEvent]:
        out: list[CaseEvent] = []
        for ev in events:
            ev.case_id = case_id
            for _attempt in range(50):
                (chained,) = chain(self._last(case_id), [ev])
                try:
                    self.events.insert_one(chained.to_dict())
                    break
                except DuplicateKeyError:
                    continue  # another writer took this seq: link to its event instead
            else:
                raise ConcurrentUpdate(f"case {case_id}: could not append to the history")
            out.append(ev)
        return out

    def list_events(self, case_id: str) -> list[CaseEvent]:
        out = []
        for doc in self.events.find({"case_id": case_id}).sort([("seq", ASCENDING)]):
            doc.pop("_id", None)
            out.append(CaseEvent.from_dict(cast(CaseEventRecord, doc)))
        return out

    def set_evidence_ref(self, case_id: str, seq: int, ref: str) -> None:
        self.events.update_one({"case_id": case_id, "seq": seq}, {"$set": {"evidence_ref": ref}})

    # --- settings --------------------------------------------------------------------
    def get_meta(self, key: str) -> JSONValue:
        doc = self.meta.find_one({"_id": key})
        return None if doc is None else doc.get("value")

    def set_meta(self, key: str, value: JSONValue) -> None:
        self.meta.replace_one({"_id": key}, {"_id": key, "value": value}, upsert=True)

    # --- blobs -------------------------------------------------------------------------
    def put_blob(self, data: bytes) -> str:
        if len(data) > MAX_BLOB_BYTES:
            raise ValueError(f"file of {len(data)} bytes exceeds the {MAX_BLOB_BYTES}-byte cap")
        key = blob_key(data)
        with contextlib.suppress(DuplicateKeyError):  # content-addressed: already there
            self.blobs.insert_one({"_id": key, "data": data, "size": len(data)})
        return key

    def get_blob(self, key: str) -> bytes:
        doc = self.blobs.find_one({"_id": check_blob_key(key)})
        if doc is None:
            raise NotFound(f"no blob {key}")
        return bytes(doc["data"])
