"""The one way a MongoDB client is made: ``mongo_client(uri)`` (one timeout rule) and
``client_of`` (a store opened on a URI owns its client; one opened on a client given to
it does not). Every MongoDB adapter (documents, cases, the evidence log) takes its
client from here; nothing here knows what they store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from pymongo import MongoClient

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
