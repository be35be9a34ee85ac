"""The document store's tables in sqlite: the schema, and how each kind of record is
read from a row and written to one (``Table`` descriptions for ``SqliteCollection``).

Datetimes are stored as ISO 8601 text of aware UTC values floored to the millisecond
("2024-05-01T12:00:00.123+00:00"): fixed width, so text order is time order and indexes
on them sort correctly; substr(..., 1, 10) is the UTC day.
"""

from __future__ import annotations

import json
import sqlite3

from tracker.common.records import Region

from ._common import (
    check_id,
    dumps,
)
from .base import (
    Match,
    Mother,
    Passage,
    Suspect,
    User,
    WatchItem,
)
from .sqlite_db import (
    _dt,
    _odt,
    _ot,
    _t,
)
from .sqlite_records import SqlValue, Table

SCHEMA_VERSION = 1

# Datetimes are stored as ISO 8601 text of aware UTC values floored to the
# millisecond ("2024-05-01T12:00:00.123+00:00"): fixed width, so text order is time
# order and indexes on them sort correctly; substr(..., 1, 10) is the UTC day.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS mothers (
    id          TEXT PRIMARY KEY,
    seq         INTEGER NOT NULL,
    title       TEXT NOT NULL,
    text        TEXT NOT NULL,
    source      TEXT NOT NULL DEFAULT '',
    metadata    TEXT NOT NULL DEFAULT '{}',
    ingested_at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS mothers_seq ON mothers(seq);
CREATE INDEX IF NOT EXISTS mothers_ingested_at ON mothers(ingested_at, seq);

CREATE TABLE IF NOT EXISTS fingerprints (
    seq    INTEGER NOT NULL,
    engine TEXT NOT NULL,
    data   BLOB NOT NULL,
    PRIMARY KEY (seq, engine)
);

-- raw is the last column: listings that skip it never walk its overflow pages.
CREATE TABLE IF NOT EXISTS suspects (
    id         TEXT PRIMARY KEY,
    title      TEXT NOT NULL DEFAULT '',
    text       TEXT NOT NULL,
    url        TEXT NOT NULL DEFAULT '',
    domain     TEXT NOT NULL DEFAULT '',
    fetched_at TEXT NOT NULL,
    source     TEXT NOT NULL DEFAULT '',
    metadata   TEXT NOT NULL DEFAULT '{}',
    checked_at TEXT,
    raw        BLOB
);
CREATE INDEX IF NOT EXISTS suspects_fetched_at ON suspects(fetched_at, id);

CREATE TABLE IF NOT EXISTS matches (
    id              TEXT PRIMARY KEY,
    suspect_id      TEXT NOT NULL,
    mother_id       TEXT NOT NULL,
    score           REAL NOT NULL,
    coverage        REAL NOT NULL,
    mother_coverage REAL NOT NULL,
    passages        TEXT NOT NULL DEFAULT '[]',
    engine          TEXT NOT NULL,
    regions         TEXT NOT NULL DEFAULT '[]',
    verdict         TEXT NOT NULL DEFAULT 'pending',
    note            TEXT NOT NULL DEFAULT '',
    mother_title    TEXT NOT NULL DEFAULT '',
    suspect_title   TEXT NOT NULL DEFAULT '',
    suspect_url     TEXT NOT NULL DEFAULT '',
    domain          TEXT NOT NULL DEFAULT '',
    rdomain         TEXT NOT NULL DEFAULT '',
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS matches_suspect ON matches(suspect_id);
CREATE INDEX IF NOT EXISTS matches_mother ON matches(mother_id);
-- The match list's pages: each sort read in index order, ties by id as the query
-- orders them (ORDER BY field DESC, id ASC: the ascending sorts scan it backwards for
-- the field), with and without the verdict filter, so LIMIT/OFFSET stop early and the
-- total is counted on the same index. They replace single-column indexes.
DROP INDEX IF EXISTS matches_verdict_score;
DROP INDEX IF EXISTS matches_score;
DROP INDEX IF EXISTS matches_coverage;
DROP INDEX IF EXISTS matches_created_at;
CREATE INDEX IF NOT EXISTS matches_list_score ON matches(score DESC, id);
CREATE INDEX IF NOT EXISTS matches_list_created ON matches(created_at DESC, id);
CREATE INDEX IF NOT EXISTS matches_list_coverage ON matches(coverage DESC, id);
CREATE INDEX IF NOT EXISTS matches_list_verdict_score ON matches(verdict, score DESC, id);
CREATE INDEX IF NOT EXISTS matches_list_verdict_created ON matches(verdict, created_at DESC, id);
CREATE INDEX IF NOT EXISTS matches_domain ON matches(domain);
CREATE INDEX IF NOT EXISTS matches_rdomain ON matches(rdomain);

CREATE TABLE IF NOT EXISTS users (
    username       TEXT PRIMARY KEY,
    password_hash  TEXT NOT NULL,
    role           TEXT NOT NULL,
    api_token_hash TEXT,
    created_at     TEXT NOT NULL
);
-- NULLs are distinct in a unique index: users without a token do not collide.
CREATE UNIQUE INDEX IF NOT EXISTS users_token ON users(api_token_hash);

CREATE TABLE IF NOT EXISTS watch (
    url             TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,
    added_at        TEXT NOT NULL,
    last_crawled_at TEXT,
    active          INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS watch_active ON watch(active, added_at);

CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

_MOTHER_COLS = "id, seq, title, text, source, metadata, ingested_at"
_SUSPECT_COLS = "id, title, text, url, domain, fetched_at, source, metadata, checked_at"
_MATCH_COLS = (
    "suspect_id, mother_id, score, coverage, mother_coverage, passages, engine, verdict, note, "
    "mother_title, suspect_title, suspect_url, domain, created_at, updated_at, regions"
)


def _mother(row: sqlite3.Row) -> Mother:
    keys = row.keys()
    text = row["text"] if "text" in keys else ""
    return Mother(
        id=row["id"],
        title=row["title"],
        text=text,
        source=row["source"],
        metadata=json.loads(row["metadata"]),
        ingested_at=_dt(row["ingested_at"]),
        seq=row["seq"],
        chars=row["chars"] if "chars" in keys else len(text),
    )


def _suspect(row: sqlite3.Row) -> Suspect:
    columns = row.keys()  # sqlite3.Row: ``in`` would look among the values
    raw = row["raw"] if "raw" in columns else None
    return Suspect(
        id=row["id"],
        text=row["text"],
        title=row["title"],
        url=row["url"],
        domain=row["domain"],
        fetched_at=_dt(row["fetched_at"]),
        source=row["source"],
        metadata=json.loads(row["metadata"]),
        raw=None if raw is None else bytes(raw),
        checked_at=_odt(row["checked_at"]),
    )


def _match(row: sqlite3.Row) -> Match:
    return Match(
        suspect_id=row["suspect_id"],
        mother_id=row["mother_id"],
        score=row["score"],
        coverage=row["coverage"],
        mother_coverage=row["mother_coverage"],
        passages=[Passage.from_dict(d) for d in json.loads(row["passages"])],
        engine=row["engine"],
        verdict=row["verdict"],
        note=row["note"],
        mother_title=row["mother_title"],
        suspect_title=row["suspect_title"],
        suspect_url=row["suspect_url"],
        domain=row["domain"],
        created_at=_dt(row["created_at"]),
        updated_at=_dt(row["updated_at"]),
        regions=[Region.from_dict(d) for d in json.loads(row["regions"])],
    )


def _user(row: sqlite3.Row) -> User:
    return User(
        username=row["username"],
        password_hash=row["password_hash"],
        role=row["role"],
        api_token_hash=row["api_token_hash"],
        created_at=_dt(row["created_at"]),
    )


def _watch(row: sqlite3.Row) -> WatchItem:
    return WatchItem(
        url=row["url"],
        kind=row["kind"],
        added_at=_dt(row["added_at"]),
        last_crawled_at=_odt(row["last_crawled_at"]),
        active=bool(row["active"]),
    )


def _suspect_row(s: Suspect) -> dict[str, SqlValue]:
    return {
        "id": s.id,
        "title": s.title,
        "text": s.text,
        "url": s.url,
        "domain": s.domain,
        "fetched_at": _t(s.fetched_at),
        "source": s.source,
        "metadata": dumps(s.metadata),
        "checked_at": _ot(s.checked_at),
        "raw": None if s.raw is None else bytes(s.raw),
    }


def _user_row(user: User) -> dict[str, SqlValue]:
    check_id(user.username, "username")
    return {
        "username": user.username,
        "password_hash": user.password_hash,
        "role": user.role,
        "api_token_hash": user.api_token_hash or None,  # NULLs do not collide
        "created_at": _t(user.created_at),
    }


def _watch_row(item: WatchItem) -> dict[str, SqlValue]:
    check_id(item.url, "watch url")
    return {
        "url": item.url,
        "kind": item.kind,
        "added_at": _t(item.added_at),
        "last_crawled_at": _ot(item.last_crawled_at),
        "active": 1 if item.active else 0,
    }


_USER_COLS = "username, password_hash, role, api_token_hash, created_at"
_WATCH_COLS = "url, kind, added_at, last_crawled_at, active"

MOTHERS: Table[Mother] = Table(
    name="mothers",
    key="id",
    columns=_MOTHER_COLS,
    brief="id, seq, title, source, metadata, ingested_at, length(text) AS chars",
    decode=_mother,
    encode=None,  # written by replace_mother only: a seq comes with every version
    search=("id", "title"),
    order="ingested_at DESC, seq DESC",
    scan_key="seq",
    scan_start=0,
)
SUSPECTS: Table[Suspect] = Table(
    name="suspects",
    key="id",
    columns=f"{_SUSPECT_COLS}, raw",
    brief=_SUSPECT_COLS,
    decode=_suspect,
    encode=_suspect_row,
    search=("id", "title", "url"),
    order="fetched_at DESC, id DESC",
)
USERS: Table[User] = Table(
    name="users",
    key="username",
    columns=_USER_COLS,
    brief=_USER_COLS,
    decode=_user,
    encode=_user_row,
)
WATCH: Table[WatchItem] = Table(
    name="watch",
    key="url",
    columns=_WATCH_COLS,
    brief=_WATCH_COLS,
    decode=_watch,
    encode=_watch_row,
    order="added_at, url",
)
