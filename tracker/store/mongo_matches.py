"""The matches in MongoDB (``MongoMatches``: ``MatchStore`` on the ``matches``
collection): a check's results written with the person's verdicts kept (one atomic
upsert a match, a chunk of checks in six commands), the match list's filters and
pages, and the analytics page's counts (aggregation pipelines)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pymongo import (
    ASCENDING,
    DESCENDING,
    DeleteMany,
    ReplaceOne,
    ReturnDocument,
    UpdateOne,
)

from tracker.common.rules import check_verdict

from ._common import (
    TOP_N,
    check_id,
    domain_bounds,
    filters_of,
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
    NotFound,
    Suspect,
    utcnow,
)

if TYPE_CHECKING:
    from .mongo_client import MongoDocument

from .interfaces import MatchStore
from .mongo_client import MongoDocument
from .mongo_docs import _match, _suspect, _suspect_doc
from .mongo_records import _regex

if TYPE_CHECKING:
    from pymongo.collection import Collection as MongoCollectionType

_CHUNK = 1000  # values per $in list


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


class MongoMatches(MatchStore):
    """``MatchStore`` on MongoDB (``MongoStore`` is one): the results in ``matches``,
    read beside ``suspects`` and ``mothers`` (titles, urls)."""

    matches: MongoCollectionType[MongoDocument]
    suspects: MongoCollectionType[MongoDocument]
    mothers: MongoCollectionType[MongoDocument]

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
                ops.append(ReplaceOne({"_id": s.id}, _suspect_doc(s), upsert=True))
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
