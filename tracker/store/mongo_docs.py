"""The document store's collections in MongoDB: how each kind of record is read from a
document and written to one (``Documents`` descriptions for ``MongoCollection``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pymongo import (
    ASCENDING,
    DESCENDING,
)

from tracker.common.records import Region

from ._common import (
    check_id,
    to_utc,
)
from .base import (
    Match,
    Mother,
    Passage,
    Suspect,
    User,
    WatchItem,
)

if TYPE_CHECKING:
    from .mongo_client import MongoDocument

from .mongo_client import MongoDocument
from .mongo_records import Documents, _aware


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


def _user_doc(user: User) -> tuple[str, MongoDocument]:
    check_id(user.username, "username")
    doc: MongoDocument = {
        "password_hash": user.password_hash,
        "role": user.role,
        "created_at": to_utc(user.created_at),
    }
    if user.api_token_hash:  # absent, not null: the unique index is sparse
        doc["api_token_hash"] = user.api_token_hash
    return user.username, doc


def _watch_doc(item: WatchItem) -> tuple[str, MongoDocument]:
    check_id(item.url, "watch url")
    return item.url, {
        "kind": item.kind,
        "added_at": to_utc(item.added_at),
        "last_crawled_at": None if item.last_crawled_at is None else to_utc(item.last_crawled_at),
        "active": bool(item.active),
    }


MOTHERS: Documents[Mother] = Documents(
    decode=_mother,
    encode=None,  # written by replace_mother only: a seq comes with every version
    brief={"text": 0},
    search=("_id", "title"),
    order=(("ingested_at", DESCENDING), ("seq", DESCENDING)),
    scan_key="seq",
)
SUSPECTS: Documents[Suspect] = Documents(
    decode=_suspect,
    encode=lambda s: (s.id, _suspect_doc(s)),
    brief={"raw": 0},
    search=("_id", "title", "url"),
    order=(("fetched_at", DESCENDING), ("_id", DESCENDING)),
)
USERS: Documents[User] = Documents(decode=_user, encode=_user_doc)
WATCH: Documents[WatchItem] = Documents(
    decode=_watch, encode=_watch_doc, order=(("added_at", ASCENDING), ("_id", ASCENDING))
)
