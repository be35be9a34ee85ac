"""The embedded document store: one sqlite3 file in the data folder.

Concurrency model: every thread gets its own connection (sqlite3 connections must
not be shared across threads while in use), the file is in WAL mode so readers never
block the writer, and every write is one ``BEGIN IMMEDIATE`` transaction so that two
writers queue on ``busy_timeout`` instead of failing with a lock-upgrade deadlock.
Several processes (CLI, Celery worker, Flask app) can therefore share the file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tracker.datadir import private_dir, private_file
from tracker.records import JSONObject, JSONValue, Region
from tracker.rules import check_verdict

from ._common import (
    MACHINE_FIELDS,
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
    storage_problem,
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
    StoreError,
    Suspect,
    User,
    WatchItem,
    check_batch_ids,
    utcnow,
)

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 30_000
_CHUNK = 500  # ids per IN (...) list, well below SQLITE_MAX_VARIABLE_NUMBER

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


class _Connection(sqlite3.Connection):
    """Only so that connections can be held in a WeakSet (the C type has no
    ``__weakref__``): a thread's connection is closed when the thread ends."""


def _t(value: datetime) -> str:
    return to_utc(value).isoformat(timespec="milliseconds")


def _ot(value: datetime | None) -> str | None:
    return None if value is None else _t(value)


def _dt(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _odt(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _like(text: str) -> str:
    r"""``%text%`` with LIKE's wildcards escaped (used with ``ESCAPE '\'``).

    LIKE is case-insensitive for ASCII letters, which is what search promises;
    Chinese has no case."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


#: Threads that read candidates' texts side by side (``get_mothers_by_seq``). In a
#: large library a candidate is a random mother, its text a cold read of ~15 pages
#: that SQLite walks one after another (an overflow chain): read on one connection, the
#: candidates of a check wait on the disk one by one; on one connection each they wait
#: together (``bench/bench_cold_reads.py``).
MOTHER_READERS = 8


def _chunks(items: list[Any], size: int = _CHUNK) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


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


def _suspect(row: sqlite3.Row, raw: bool) -> Suspect:
    return Suspect(
        id=row["id"],
        text=row["text"],
        title=row["title"],
        url=row["url"],
        domain=row["domain"],
        fetched_at=_dt(row["fetched_at"]),
        source=row["source"],
        metadata=json.loads(row["metadata"]),
        raw=bytes(row["raw"]) if raw and row["raw"] is not None else None,
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


def _match_where(query: MatchQuery | None) -> tuple[str, list[Any]]:
    f = filters_of(query)
    clauses: list[str] = []
    params: list[Any] = []
    if f.verdict is not None:
        clauses.append("verdict = ?")
        params.append(f.verdict)
    if f.min_score is not None:
        clauses.append("score >= ?")
        params.append(f.min_score)
    if f.max_score is not None:
        clauses.append("score <= ?")
        params.append(f.max_score)
    if f.mother_id is not None:
        clauses.append("mother_id = ?")
        params.append(f.mother_id)
    if f.suspect_id is not None:
        clauses.append("suspect_id = ?")
        params.append(f.suspect_id)
    if f.rdomain is not None:
        lo, hi = domain_bounds(f.rdomain)
        clauses.append("(rdomain = ? OR (rdomain >= ? AND rdomain < ?))")
        params += [f.rdomain, lo, hi]
    if f.since is not None:
        clauses.append("created_at >= ?")
        params.append(_t(f.since))
    if f.until is not None:
        clauses.append("created_at < ?")
        params.append(_t(f.until))
    if f.search is not None:
        pattern = _like(f.search)
        clauses.append(
            "(mother_title LIKE ? ESCAPE '\\' OR suspect_title LIKE ? ESCAPE '\\'"
            " OR suspect_url LIKE ? ESCAPE '\\')"
        )
        params += [pattern, pattern, pattern]
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class SqliteStore(Store):
    """``Store`` on one sqlite3 file (stdlib only)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if str(path) == ":memory:" or str(path).startswith("file::memory:"):
            # Each thread has its own connection, so each would see its own empty
            # in-memory database: refuse instead of losing data silently.
            raise ValueError("SqliteStore needs a file path (use a temporary file in tests)")
        self.path = Path(path)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._pid = os.getpid()
        self._closed = False
        self._readers: ThreadPoolExecutor | None = None  # made on first use
        self._readers_pid = 0
        self._uri: str | None = None  # set when opened read-only
        self.read_only = False
        try:
            private_dir(self.path.parent)
            private_file(self.path)  # works and password hashes: mode 600
            self._init_schema()
        except (sqlite3.Error, OSError) as exc:
            if not self._cannot_write(exc):
                raise self._failure(exc) from exc
            self._open_read_only(exc)

    # --- read-only and storage failures --------------------------------------------
    def _cannot_write(self, exc: BaseException) -> bool:
        """The folder or the file refuses writes (read-only mount, permissions)."""
        text = str(exc).lower()
        if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return self.path.exists()
        if not self.path.exists():
            return False
        return (
            "readonly" in text
            or "read-only" in text
            or not os.access(self.path.parent, os.W_OK)
            or not os.access(self.path, os.W_OK)
            or ("unable to open" in text and not os.access(self.path.parent, os.W_OK))
        )

    def _open_read_only(self, cause: BaseException) -> None:
        """Open the file for reading only: ``mode=ro`` (which reads a WAL left by a
        writer), else ``immutable=1`` (a WAL database in a folder where its -shm file
        cannot be made). Every write then raises ``StoreError``."""
        self.close()
        self._closed = False
        self.read_only = True
        base = "file:" + quote(str(self.path.resolve()))
        for uri in (f"{base}?mode=ro", f"{base}?immutable=1"):
            self._uri = uri
            self._local = threading.local()
            try:
                version = self._conn().execute("PRAGMA user_version").fetchone()[0]
                self._conn().execute("SELECT count(*) FROM mothers").fetchone()
            except sqlite3.Error:
                self.close()
                self._closed = False
                continue
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has schema version {version}, newer than this code "
                    f"({SCHEMA_VERSION})"
                )
            return
        raise StoreError(
            f"the data folder {self.path.parent} is not writable ({cause}) and "
            f"{self.path.name} cannot be read either"
        ) from cause

    def _failure(self, exc: BaseException) -> BaseException:
        """``StoreError`` naming the folder and the cause for a known storage problem
        (full, read-only, unreadable), else ``exc`` itself."""
        cause = storage_problem(exc, f"the data folder {self.path.parent}")
        return StoreError(f"{cause} ({exc})") if cause else exc

    # --- connections -----------------------------------------------------------
    def _open(self) -> _Connection:
        conn = sqlite3.connect(
            self._uri or self.path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,  # autocommit; transactions are explicit (see _tx)
            check_same_thread=False,  # close() may run on another thread
            factory=_Connection,
            uri=self._uri is not None,
        )
        conn.row_factory = sqlite3.Row
        if self._uri is not None:
            return conn
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # WAL makes a commit an append; NORMAL skips the fsync per commit (the WAL is
        # synced at checkpoints): durable against a crash of the process, and bulk
        # ingestion does not turn into an fsync storm.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")  # cascades are explicit; kept for safety
        return conn

    def _conn(self) -> _Connection:
        if self._closed:
            raise RuntimeError(f"store {self.path} is closed")
        if os.getpid() != self._pid:
            # Forked (Celery prefork): connections inherited from the parent must not
            # be used nor closed here; start afresh.
            with self._lock:
                if os.getpid() != self._pid:
                    self._pid = os.getpid()
                    self._local = threading.local()
                    self._conns = weakref.WeakSet()
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
            with self._lock:
                self._conns.add(conn)
        return conn

    @contextmanager
    def _tx(self) -> Iterator[_Connection]:
        """One write transaction. IMMEDIATE takes the write lock up front, so a
        concurrent writer waits on busy_timeout instead of failing mid-way."""
        if self.read_only:
            raise StoreError(
                f"the data folder {self.path.parent} is read-only: this library can be "
                "read (check --no-save, index stats, list) but not changed here"
            )
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise self._failure(exc) from exc
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            # Also when COMMIT itself fails (disk full): nothing of it stays, and the
            # connection is ready for the next transaction.
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise self._failure(exc) from exc
            raise

    def _init_schema(self) -> None:
        conn = self._conn()
        # Persistent in the file; harmless when it already is WAL.
        conn.execute("PRAGMA journal_mode = WAL")
        with self._tx() as c:
            version = c.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path} has schema version {version}, newer than this code "
                    f"({SCHEMA_VERSION})"
                )
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    c.execute(statement)
            # A store made before regions (issue #39): the column is added, empty.
            if "regions" not in {row[1] for row in c.execute("PRAGMA table_info(matches)")}:
                c.execute("ALTER TABLE matches ADD COLUMN regions TEXT NOT NULL DEFAULT '[]'")
            c.execute("INSERT OR IGNORE INTO counters(name, value) VALUES ('mother_seq', 0)")
            c.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _reader_pool(self) -> ThreadPoolExecutor:
        """The threads of ``get_mothers_by_seq``, this process's own (a pool inherited
        through a fork has no threads)."""
        self._conn()  # a fork resets the connections first
        with self._lock:
            if self._readers is None or self._readers_pid != self._pid:
                self._readers = ThreadPoolExecutor(MOTHER_READERS, "yinji-store-read")
                self._readers_pid = self._pid
            return self._readers

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns = list(self._conns) if os.getpid() == self._pid else []
            self._conns = weakref.WeakSet()
            readers, self._readers = self._readers, None
        if readers is not None and self._readers_pid == os.getpid():
            readers.shutdown(wait=True)
        for conn in conns:
            conn.close()
        self._local = threading.local()

    # --- mothers ---------------------------------------------------------------
    def replace_mother(
        self, mother: Mother, fingerprints: Mapping[str, bytes] | None = None
    ) -> tuple[Mother, Replaced | None]:
        with self._tx() as c:
            return self._replace_in(c, mother, fingerprints)

    def replace_mothers(
        self, items: Sequence[tuple[Mother, Mapping[str, bytes] | None]]
    ) -> list[tuple[Mother, Replaced | None]]:
        """A batch in one transaction (one commit instead of one per mother)."""
        check_batch_ids(items)
        for mother, _ in items:
            check_id(mother.id, "mother id")
        with self._tx() as c:
            return [self._replace_in(c, mother, fps) for mother, fps in items]

    def _replace_in(
        self, c: _Connection, mother: Mother, fingerprints: Mapping[str, bytes] | None
    ) -> tuple[Mother, Replaced | None]:
        check_id(mother.id, "mother id")
        stored_at = to_utc(mother.ingested_at)
        metadata = json_normalize(mother.metadata or {})
        replaced: Replaced | None = None
        # The counter only ever grows, so a seq is never handed out twice, even
        # after the mother holding it was deleted.
        seq = c.execute(
            "UPDATE counters SET value = value + 1 WHERE name = 'mother_seq' RETURNING value"
        ).fetchone()[0]
        old = c.execute("SELECT seq FROM mothers WHERE id = ?", (mother.id,)).fetchone()
        if old is not None:
            # The old version's fingerprints go (returned, for the index).
            replaced = Replaced(
                old["seq"],
                {
                    row["engine"]: bytes(row["data"])
                    for row in c.execute(
                        "SELECT engine, data FROM fingerprints WHERE seq = ?", (old["seq"],)
                    )
                },
            )
            c.execute("DELETE FROM fingerprints WHERE seq = ?", (old["seq"],))
        # Upsert (not delete + insert): the row keeps its identity, only the seq
        # and the content change; matches refer to the id and stay.
        c.execute(
            f"INSERT INTO mothers({_MOTHER_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, title = excluded.title, "
            "text = excluded.text, source = excluded.source, "
            "metadata = excluded.metadata, ingested_at = excluded.ingested_at",
            (
                mother.id,
                seq,
                mother.title,
                mother.text,
                mother.source,
                dumps(metadata),
                _t(stored_at),
            ),
        )
        c.executemany(
            "INSERT INTO fingerprints(seq, engine, data) VALUES (?, ?, ?)",
            [
                (seq, engine, sqlite3.Binary(bytes(data)))
                for engine, data in (fingerprints or {}).items()
            ],
        )
        stored = Mother(
            id=mother.id,
            title=mother.title,
            text=mother.text,
            source=mother.source,
            metadata=metadata,
            ingested_at=stored_at,
            seq=seq,
        )
        return stored, replaced

    def current_seqs(self, seqs: Iterable[int]) -> set[int]:
        wanted = sorted({int(s) for s in seqs})
        found: set[int] = set()
        conn = self._conn()
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(f"SELECT seq FROM mothers WHERE seq IN ({marks})", chunk)
            found.update(row[0] for row in rows)
        return found

    def get_mother(self, mother_id: str) -> Mother:
        row = (
            self._conn()
            .execute(f"SELECT {_MOTHER_COLS} FROM mothers WHERE id = ?", (mother_id,))
            .fetchone()
        )
        if row is None:
            raise NotFound(mother_id)
        return _mother(row)

    def get_mothers_by_seq(self, seqs: Iterable[int]) -> dict[int, Mother]:
        wanted = sorted({int(s) for s in seqs})
        if len(wanted) < 2 or self._conn().in_transaction:
            return self._mothers_by_seq(wanted)  # (inside a transaction: its own view)
        pool = self._reader_pool()
        parts = min(len(wanted), MOTHER_READERS)
        out: dict[int, Mother] = {}
        for part in pool.map(self._mothers_by_seq, [wanted[i::parts] for i in range(parts)]):
            out.update(part)
        return out

    def _mothers_by_seq(self, wanted: list[int]) -> dict[int, Mother]:
        out: dict[int, Mother] = {}
        conn = self._conn()
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(
                f"SELECT {_MOTHER_COLS} FROM mothers WHERE seq IN ({marks})", chunk
            ):
                out[row["seq"]] = _mother(row)
        return out

    def delete_mother(self, mother_id: str) -> Mother | None:
        with self._tx() as c:
            row = c.execute(
                f"SELECT {_MOTHER_COLS} FROM mothers WHERE id = ?", (mother_id,)
            ).fetchone()
            if row is None:
                return None
            # Explicit cascade, in the same transaction: matches refer to the mother
            # by id, fingerprints by seq.
            c.execute("DELETE FROM fingerprints WHERE seq = ?", (row["seq"],))
            c.execute("DELETE FROM matches WHERE mother_id = ?", (mother_id,))
            c.execute("DELETE FROM mothers WHERE id = ?", (mother_id,))
        return _mother(row)

    def update_mother_metadata(
        self, mother_id: str, metadata: Mapping[str, JSONValue], *, title: str | None = None
    ) -> bool:
        text = dumps(json_normalize(metadata))
        with self._tx() as c:
            if title is None:
                cur = c.execute("UPDATE mothers SET metadata = ? WHERE id = ?", (text, mother_id))
            else:
                cur = c.execute(
                    "UPDATE mothers SET metadata = ?, title = ? WHERE id = ?",
                    (text, title, mother_id),
                )
            return cur.rowcount > 0

    @staticmethod
    def _mother_where(search: str | None) -> tuple[str, list[Any]]:
        if not search:
            return "", []
        pattern = _like(search)
        return " WHERE (id LIKE ? ESCAPE '\\' OR title LIKE ? ESCAPE '\\')", [pattern, pattern]

    def list_mothers(
        self,
        *,
        search: str | None = None,
        offset: int = 0,
        limit: int = 50,
        with_text: bool = True,
    ) -> list[Mother]:
        where, params = self._mother_where(search)
        cols = (
            _MOTHER_COLS
            if with_text
            else "id, seq, title, source, metadata, ingested_at, length(text) AS chars"
        )
        rows = self._conn().execute(
            f"SELECT {cols} FROM mothers{where} "
            "ORDER BY ingested_at DESC, seq DESC LIMIT ? OFFSET ?",
            [*params, max(0, limit), max(0, offset)],
        )
        return [_mother(r) for r in rows]

    def count_mothers(self, *, search: str | None = None) -> int:
        where, params = self._mother_where(search)
        return self._conn().execute(f"SELECT count(*) FROM mothers{where}", params).fetchone()[0]

    def iter_mothers(self, *, batch_size: int = 500, after_seq: int = 0) -> Iterator[Mother]:
        # Keyset pagination: each batch is one short read, so no transaction stays
        # open while the caller works (a long reader would stall WAL checkpoints).
        last = int(after_seq)
        while True:
            # Connection looked up per batch: the generator may be resumed on
            # another thread than the one that started it.
            rows = (
                self._conn()
                .execute(
                    f"SELECT {_MOTHER_COLS} FROM mothers WHERE seq > ? ORDER BY seq LIMIT ?",
                    (last, max(1, batch_size)),
                )
                .fetchall()
            )
            if not rows:
                return
            for row in rows:
                yield _mother(row)
            last = rows[-1]["seq"]

    def mothers_since(self, since: datetime) -> list[Mother]:
        rows = self._conn().execute(
            f"SELECT {_MOTHER_COLS} FROM mothers WHERE ingested_at >= ? ORDER BY ingested_at, seq",
            (_t(since),),
        )
        return [_mother(r) for r in rows]

    # --- fingerprints ------------------------------------------------------------
    def put_fingerprints(self, seq: int, engine: str, data: bytes) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO fingerprints(seq, engine, data) VALUES (?, ?, ?) "
                "ON CONFLICT(seq, engine) DO UPDATE SET data = excluded.data",
                (int(seq), engine, sqlite3.Binary(bytes(data))),
            )

    def iter_fingerprints(
        self, engine: str, *, batch_size: int = 500
    ) -> Iterator[tuple[int, bytes | None]]:
        # Keyset pagination as iter_mothers, the texts never read.
        last = 0
        while True:
            rows = (
                self._conn()
                .execute(
                    "SELECT m.seq, f.data FROM mothers m LEFT JOIN fingerprints f "
                    "ON f.seq = m.seq AND f.engine = ? WHERE m.seq > ? ORDER BY m.seq LIMIT ?",
                    (engine, last, max(1, batch_size)),
                )
                .fetchall()
            )
            if not rows:
                return
            for row in rows:
                yield int(row[0]), None if row[1] is None else bytes(row[1])
            last = int(rows[-1][0])

    def fingerprint_totals(self, engine: str, *, after_seq: int = 0) -> tuple[int, int]:
        # length() of a BLOB reads its size from the record header, not the blob.
        row = (
            self._conn()
            .execute(
                "SELECT count(*), coalesce(sum(length(data)), 0) FROM fingerprints "
                "WHERE engine = ? AND seq > ?",
                (engine, int(after_seq)),
            )
            .fetchone()
        )
        return int(row[0]), int(row[1])

    def last_seq(self) -> int:
        row = (
            self._conn().execute("SELECT value FROM counters WHERE name = 'mother_seq'").fetchone()
        )
        return 0 if row is None else int(row[0])

    def get_fingerprints(self, seq: int, engine: str) -> bytes | None:
        row = (
            self._conn()
            .execute(
                "SELECT data FROM fingerprints WHERE seq = ? AND engine = ?", (int(seq), engine)
            )
            .fetchone()
        )
        return None if row is None else bytes(row["data"])

    # --- suspects --------------------------------------------------------------
    def put_suspect(self, suspect: Suspect) -> Suspect:
        with self._tx() as c:
            return self._put_suspect_in(c, suspect)

    def save_checks(self, writes: Sequence[CheckWrite]) -> list[bool]:
        """One transaction (one commit) for a chunk's suspects and matches."""
        done: list[bool] = []
        with self._tx() as c:
            for w in writes:
                if w.rewrite:
                    self._put_suspect_in(c, w.suspect)
                elif not self._mark_checked_in(c, w.suspect.id, w.suspect.checked_at):
                    done.append(False)  # deleted meanwhile
                    continue
                self._put_matches_in(c, w.suspect.id, w.matches)
                done.append(True)
        return done

    def _put_suspect_in(self, c: _Connection, suspect: Suspect) -> Suspect:
        s = prepare_suspect(suspect)
        c.execute(
            f"INSERT OR REPLACE INTO suspects({_SUSPECT_COLS}, raw) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                s.id,
                s.title,
                s.text,
                s.url,
                s.domain,
                _t(s.fetched_at),
                s.source,
                dumps(s.metadata),
                _ot(s.checked_at),
                None if s.raw is None else sqlite3.Binary(s.raw),
            ),
        )
        return s

    def get_suspect(self, suspect_id: str) -> Suspect:
        row = (
            self._conn()
            .execute(f"SELECT {_SUSPECT_COLS}, raw FROM suspects WHERE id = ?", (suspect_id,))
            .fetchone()
        )
        if row is None:
            raise NotFound(suspect_id)
        return _suspect(row, raw=True)

    @staticmethod
    def _suspect_where(search: str | None) -> tuple[str, list[Any]]:
        if not search:
            return "", []
        p = _like(search)
        return (
            " WHERE (id LIKE ? ESCAPE '\\' OR title LIKE ? ESCAPE '\\' OR url LIKE ? ESCAPE '\\')",
            [p, p, p],
        )

    def list_suspects(
        self, *, search: str | None = None, offset: int = 0, limit: int = 50
    ) -> list[Suspect]:
        where, params = self._suspect_where(search)
        rows = self._conn().execute(
            f"SELECT {_SUSPECT_COLS} FROM suspects{where} "
            "ORDER BY fetched_at DESC, id DESC LIMIT ? OFFSET ?",
            [*params, max(0, limit), max(0, offset)],
        )
        return [_suspect(r, raw=False) for r in rows]

    def count_suspects(self, *, search: str | None = None) -> int:
        where, params = self._suspect_where(search)
        return self._conn().execute(f"SELECT count(*) FROM suspects{where}", params).fetchone()[0]

    def iter_suspects(self, *, batch_size: int = 500) -> Iterator[Suspect]:
        """Every suspect in id order, without ``raw`` (re-checks need the text)."""
        last = ""
        while True:
            rows = (
                self._conn()
                .execute(
                    f"SELECT {_SUSPECT_COLS} FROM suspects WHERE id > ? ORDER BY id LIMIT ?",
                    (last, max(1, batch_size)),
                )
                .fetchall()
            )
            if not rows:
                return
            for row in rows:
                yield _suspect(row, raw=False)
            last = rows[-1]["id"]

    def mark_checked(self, suspect_id: str, when: datetime | None = None) -> None:
        with self._tx() as c:
            if not self._mark_checked_in(c, suspect_id, when):
                raise NotFound(suspect_id)

    @staticmethod
    def _mark_checked_in(c: _Connection, suspect_id: str, when: datetime | None) -> bool:
        cur = c.execute(
            "UPDATE suspects SET checked_at = ? WHERE id = ?", (_t(when or utcnow()), suspect_id)
        )
        return cur.rowcount > 0

    # --- matches -----------------------------------------------------------------
    def put_matches(self, suspect_id: str, matches: Sequence[Match]) -> None:
        with self._tx() as c:
            self._put_matches_in(c, suspect_id, matches)

    def _put_matches_in(self, c: _Connection, suspect_id: str, matches: Sequence[Match]) -> None:
        check_id(suspect_id, "suspect id")
        now = to_utc(utcnow())
        srow = c.execute(
            f"SELECT {_SUSPECT_COLS} FROM suspects WHERE id = ?", (suspect_id,)
        ).fetchone()
        suspect = _suspect(srow, raw=False) if srow is not None else None
        mother_ids = sorted({m.mother_id for m in matches})
        titles: dict[str, str] = {}
        for chunk in _chunks(mother_ids):
            marks = ",".join("?" * len(chunk))
            for row in c.execute(f"SELECT id, title FROM mothers WHERE id IN ({marks})", chunk):
                titles[row["id"]] = row["title"]
        prepared = prepare_matches(suspect_id, matches, titles, suspect, now)
        # Upsert: machine fields are overwritten, verdict/note/created_at are
        # only written when the row is new (a re-check keeps the person's work).
        updates = ", ".join(f"{f} = excluded.{f}" for f in MACHINE_FIELDS)
        c.executemany(
            f"INSERT INTO matches(id, {_MATCH_COLS}, rdomain) "
            f"VALUES ({','.join('?' * 18)}) ON CONFLICT(id) DO UPDATE SET {updates}",
            [
                (
                    m.id,
                    m.suspect_id,
                    m.mother_id,
                    m.score,
                    m.coverage,
                    m.mother_coverage,
                    dumps([p.to_dict() for p in m.passages]),
                    m.engine,
                    m.verdict,
                    m.note,
                    m.mother_title,
                    m.suspect_title,
                    m.suspect_url,
                    m.domain,
                    _t(m.created_at),
                    _t(m.updated_at),
                    dumps([r.to_dict() for r in m.regions]),
                    reverse_domain(m.domain),
                )
                for m in prepared
            ],
        )
        # Earlier machine results that this check no longer finds go away,
        # unless a person confirmed or dismissed them.
        keep = {m.id for m in prepared}
        stale = [
            (row["id"],)
            for row in c.execute(
                "SELECT id FROM matches WHERE suspect_id = ? AND verdict = 'pending'",
                (suspect_id,),
            )
            if row["id"] not in keep
        ]
        c.executemany("DELETE FROM matches WHERE id = ?", stale)

    def get_match(self, match_id: str) -> Match:
        row = (
            self._conn()
            .execute(f"SELECT {_MATCH_COLS} FROM matches WHERE id = ?", (match_id,))
            .fetchone()
        )
        if row is None:
            raise NotFound(match_id)
        return _match(row)

    def set_verdict(self, match_id: str, verdict: str, note: str | None = None) -> Match:
        check_verdict(verdict)
        now = _t(utcnow())
        with self._tx() as c:
            if note is None:
                cur = c.execute(
                    "UPDATE matches SET verdict = ?, updated_at = ? WHERE id = ?",
                    (verdict, now, match_id),
                )
            else:
                cur = c.execute(
                    "UPDATE matches SET verdict = ?, note = ?, updated_at = ? WHERE id = ?",
                    (verdict, note, now, match_id),
                )
            if cur.rowcount == 0:
                raise NotFound(match_id)
            row = c.execute(
                f"SELECT {_MATCH_COLS} FROM matches WHERE id = ?", (match_id,)
            ).fetchone()
        return _match(row)

    def query_matches(self, query: MatchQuery) -> list[Match]:
        where, params = _match_where(query)
        field, desc = sort_of(query)
        offset, limit = page_of(query)
        rows = self._conn().execute(
            f"SELECT {_MATCH_COLS} FROM matches{where} "
            f"ORDER BY {field} {'DESC' if desc else 'ASC'}, id ASC LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [_match(r) for r in rows]

    def count_matches(self, query: MatchQuery) -> int:
        where, params = _match_where(query)
        return self._conn().execute(f"SELECT count(*) FROM matches{where}", params).fetchone()[0]

    def match_stats(self, query: MatchQuery | None = None) -> MatchStats:
        where, params = _match_where(query)
        conn = self._conn()
        by_day = [
            (r[0], r[1])
            for r in conn.execute(
                f"SELECT substr(created_at, 1, 10) AS day, count(*) FROM matches{where} "
                "GROUP BY day ORDER BY day",
                params,
            )
        ]
        by_verdict = dict.fromkeys(VERDICTS, 0)
        for r in conn.execute(
            f"SELECT verdict, count(*) FROM matches{where} GROUP BY verdict", params
        ):
            by_verdict[r[0]] = r[1]
        top_mothers = [
            (r[0], r[1], r[2])
            for r in conn.execute(
                f"SELECT mother_id, max(mother_title), count(*) AS n FROM matches{where} "
                "GROUP BY mother_id ORDER BY n DESC, mother_id LIMIT ?",
                [*params, TOP_N],
            )
        ]
        domain_where = f"{where} AND domain != ''" if where else " WHERE domain != ''"
        top_domains = [
            (r[0], r[1])
            for r in conn.execute(
                f"SELECT domain, count(*) AS n FROM matches{domain_where} "
                "GROUP BY domain ORDER BY n DESC, domain LIMIT ?",
                [*params, TOP_N],
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
        try:
            with self._tx() as c:
                c.execute(
                    # Not INSERT OR REPLACE: that would silently delete another
                    # user whose token hash collides instead of failing.
                    "INSERT INTO users"
                    "(username, password_hash, role, api_token_hash, created_at) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT(username) DO UPDATE SET "
                    "password_hash = excluded.password_hash, role = excluded.role, "
                    "api_token_hash = excluded.api_token_hash, "
                    "created_at = excluded.created_at",
                    (
                        user.username,
                        user.password_hash,
                        user.role,
                        user.api_token_hash or None,
                        _t(user.created_at),
                    ),
                )
        except sqlite3.IntegrityError as exc:
            # The only unique constraint that can fail here is the token hash: one
            # token must never authenticate two users.
            raise ValueError("API token already belongs to another user") from exc

    def get_user(self, username: str) -> User | None:
        row = self._conn().execute("SELECT * FROM users WHERE username = ?", (username,)).fetchone()
        return None if row is None else _user(row)

    def get_user_by_token_hash(self, token_hash: str) -> User | None:
        if not token_hash:
            return None
        row = (
            self._conn()
            .execute("SELECT * FROM users WHERE api_token_hash = ?", (token_hash,))
            .fetchone()
        )
        return None if row is None else _user(row)

    def list_users(self) -> list[User]:
        return [_user(r) for r in self._conn().execute("SELECT * FROM users ORDER BY username")]

    def delete_user(self, username: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM users WHERE username = ?", (username,))

    # --- watch list --------------------------------------------------------------
    def put_watch(self, item: WatchItem) -> None:
        check_id(item.url, "watch url")
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO watch(url, kind, added_at, last_crawled_at, active) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    item.url,
                    item.kind,
                    _t(item.added_at),
                    _ot(item.last_crawled_at),
                    1 if item.active else 0,
                ),
            )

    def list_watch(self, *, active_only: bool = True) -> list[WatchItem]:
        where = " WHERE active = 1" if active_only else ""
        rows = self._conn().execute(f"SELECT * FROM watch{where} ORDER BY added_at, url")
        return [_watch(r) for r in rows]

    def delete_watch(self, url: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM watch WHERE url = ?", (url,))

    # --- meta ----------------------------------------------------------------------
    def get_meta(self, key: str) -> JSONValue:
        row = self._conn().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row["value"])

    def set_meta(self, key: str, value: JSONValue) -> None:
        text = dumps(value)  # fails here, before the transaction, if not JSON
        with self._tx() as c:
            c.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, text),
            )

    def init_meta(self, key: str, value: JSONValue) -> JSONValue:
        text = dumps(value)
        with self._tx() as c:
            c.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (key, text))
            row = c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row["value"])

    def raise_meta(self, key: str, value: int) -> int:
        with self._tx() as c:
            row = c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            current = int(json.loads(row["value"])) if row is not None else 0
            if int(value) > current:
                current = int(value)
                c.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, dumps(current)),
                )
        return current

    def delete_meta(self, key: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM meta WHERE key = ?", (key,))

    def meta_items(self, prefix: str) -> JSONObject:
        # A range on the primary key, not LIKE (whose wildcards the prefix may hold).
        rows = self._conn().execute(
            "SELECT key, value FROM meta WHERE key >= ? AND key < ? ORDER BY key",
            (prefix, prefix + "\U0010ffff"),
        )
        return {r["key"]: json.loads(r["value"]) for r in rows if r["key"].startswith(prefix)}


__all__ = ["SqliteStore"]
