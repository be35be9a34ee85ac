"""The evidence log in one sqlite file (``evidence.sqlite3`` in the data folder):
``SqliteBackend``; triggers abort any UPDATE or DELETE."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tracker.plumbing.datadir import private_file

from .canonical import (
    format_time,
    parse_time,
)
from .keys import SignedTreeHead, TreeHead
from .merkle import node_hash as merkle_node
from .records import ONCE_PREFIX, Appended, BackendRecord, Stamp

SQLITE_FILE = "evidence.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leaves (
    idx INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    suspect_id TEXT,
    mother_id TEXT,
    data BLOB NOT NULL,
    leaf_hash BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS leaves_subject ON leaves (suspect_id, mother_id);
CREATE TABLE IF NOT EXISTS nodes (
    level INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    hash BLOB NOT NULL,
    PRIMARY KEY (level, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS heads (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    size INTEGER NOT NULL,
    root_hash BLOB NOT NULL,
    timestamp_ms INTEGER NOT NULL,
    log_id TEXT NOT NULL,
    signature BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS stamps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    head_id INTEGER NOT NULL REFERENCES heads (id),
    at TEXT NOT NULL,
    tsa_url TEXT NOT NULL,
    response BLOB,
    error TEXT
);
CREATE INDEX IF NOT EXISTS stamps_head ON stamps (head_id);
"""
_TABLES = ("meta", "leaves", "nodes", "heads", "stamps")


class SqliteBackend:
    """The log in one sqlite file; UPDATE and DELETE are refused by triggers."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        private_file(self.path)  # mode 600 (tracker.plumbing.datadir)
        self.db = sqlite3.connect(
            str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False
        )
        with self._lock:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA recursive_triggers=ON")  # REPLACE fires DELETE triggers
            self.db.executescript(_SCHEMA)
            for table in _TABLES:
                for op in ("UPDATE", "DELETE"):
                    self.db.execute(
                        f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} "
                        f"BEFORE {op} ON {table} BEGIN SELECT RAISE(ABORT, "
                        f"'the evidence log is append-only: {table} rows cannot be "
                        f"{'changed' if op == 'UPDATE' else 'deleted'}'); END"
                    )

    def size(self) -> int:
        with self._lock:
            row = self.db.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM leaves").fetchone()
        return int(row[0])

    def append(
        self, data: bytes, leaf: bytes, kind: str, suspect_id: str | None, mother_id: str | None
    ) -> int:
        return self.append_many([BackendRecord(data, leaf, kind, suspect_id, mother_id)])[0].index

    def append_many(self, records: Sequence[BackendRecord]) -> list[Appended]:
        """One ``BEGIN IMMEDIATE`` transaction: the records, their completed tree nodes
        and their ``once`` keys commit together or not at all (a crash before the
        COMMIT leaves none of them; one fsync for all)."""
        if not records:
            return []
        done: list[Appended] = []
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                row = self.db.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM leaves").fetchone()
                index = int(row[0])
                for r in records:
                    if r.once is not None:
                        kept = self.db.execute(
                            "SELECT value FROM meta WHERE key = ?", (ONCE_PREFIX + r.once,)
                        ).fetchone()
                        if kept is not None:
                            done.append(Appended(int(kept[0]), False))
                            continue
                    self.db.execute(
                        "INSERT INTO leaves (idx, kind, suspect_id, mother_id, data, leaf_hash) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (index, r.kind, r.suspect_id, r.mother_id, r.data, r.leaf),
                    )
                    self._complete_nodes(index, r.leaf)
                    if r.once is not None:
                        self.db.execute(
                            "INSERT INTO meta (key, value) VALUES (?, ?)",
                            (ONCE_PREFIX + r.once, str(index)),
                        )
                    done.append(Appended(index, True))
                    index += 1
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        return done

    def _complete_nodes(self, index: int, leaf: bytes) -> None:
        """Inside the append's transaction: store the perfect subtrees the new leaf
        completes (one commit per record instead of one per node)."""
        level, i, value = 0, index, leaf
        while i & 1:
            if level == 0:
                row = self.db.execute(
                    "SELECT leaf_hash FROM leaves WHERE idx = ?", (i - 1,)
                ).fetchone()
            else:
                row = self.db.execute(
                    "SELECT hash FROM nodes WHERE level = ? AND idx = ?", (level, i - 1)
                ).fetchone()
            if row is None:
                return  # a hole in the cache: proofs fill it in when they need it
            value = merkle_node(bytes(row[0]), value)
            level += 1
            i >>= 1
            self.db.execute(
                "INSERT OR IGNORE INTO nodes (level, idx, hash) VALUES (?, ?, ?)",
                (level, i, value),
            )

    def entry(self, index: int) -> tuple[bytes, bytes] | None:
        with self._lock:
            row = self.db.execute(
                "SELECT data, leaf_hash FROM leaves WHERE idx = ?", (index,)
            ).fetchone()
        return (bytes(row[0]), bytes(row[1])) if row else None

    def entries(self, lo: int, hi: int) -> Iterator[tuple[int, bytes, bytes]]:
        step = 2000
        for start in range(lo, hi, step):
            with self._lock:
                rows = self.db.execute(
                    "SELECT idx, data, leaf_hash FROM leaves WHERE idx >= ? AND idx < ? "
                    "ORDER BY idx",
                    (start, min(hi, start + step)),
                ).fetchall()
            for idx, data, leaf in rows:
                yield int(idx), bytes(data), bytes(leaf)

    def find(
        self, suspect_id: str, mother_id: str | None, kinds: Sequence[str] | None
    ) -> list[int]:
        sql = "SELECT idx FROM leaves WHERE suspect_id = ?"
        args: list[Any] = [suspect_id]
        if mother_id is not None:
            sql += " AND (mother_id IS NULL OR mother_id = ?)"
            args.append(mother_id)
        if kinds:
            sql += f" AND kind IN ({', '.join('?' for _ in kinds)})"
            args.extend(kinds)
        with self._lock:
            rows = self.db.execute(sql + " ORDER BY idx", args).fetchall()
        return [int(r[0]) for r in rows]

    def get_node(self, level: int, index: int) -> bytes | None:
        with self._lock:
            row = self.db.execute(
                "SELECT hash FROM nodes WHERE level = ? AND idx = ?", (level, index)
            ).fetchone()
        return bytes(row[0]) if row else None

    def put_node(self, level: int, index: int, value: bytes) -> None:
        with self._lock:
            self.db.execute(
                "INSERT OR IGNORE INTO nodes (level, idx, hash) VALUES (?, ?, ?)",
                (level, index, value),
            )

    def nodes(self) -> Iterator[tuple[int, int, bytes]]:
        with self._lock:
            rows = self.db.execute("SELECT level, idx, hash FROM nodes").fetchall()
        for level, idx, value in rows:
            yield int(level), int(idx), bytes(value)

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def put_meta_once(self, key: str, value: str) -> str:
        with self._lock:
            self.db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
        stored = self.get_meta(key)
        assert stored is not None
        return stored

    def add_head(self, signed: SignedTreeHead) -> int:
        h = signed.head
        with self._lock:
            cur = self.db.execute(
                "INSERT INTO heads (size, root_hash, timestamp_ms, log_id, signature) "
                "VALUES (?, ?, ?, ?, ?)",
                (h.size, h.root_hash, h.timestamp_ms, h.log_id, signed.signature),
            )
        assert cur.lastrowid is not None
        return int(cur.lastrowid)

    @staticmethod
    def _head(row: Any) -> tuple[int, SignedTreeHead]:
        hid, size, root, ts, log_id, sig = row
        return int(hid), SignedTreeHead(
            TreeHead(int(size), bytes(root), int(ts), log_id), bytes(sig)
        )

    def heads(self) -> list[tuple[int, SignedTreeHead]]:
        with self._lock:
            rows = self.db.execute(
                "SELECT id, size, root_hash, timestamp_ms, log_id, signature FROM heads ORDER BY id"
            ).fetchall()
        return [self._head(r) for r in rows]

    def latest_head(self) -> tuple[int, SignedTreeHead] | None:
        with self._lock:
            row = self.db.execute(
                "SELECT id, size, root_hash, timestamp_ms, log_id, signature FROM heads "
                "ORDER BY id DESC LIMIT 1"
            ).fetchone()
        return self._head(row) if row else None

    def add_stamp(self, stamp: Stamp) -> None:
        with self._lock:
            self.db.execute(
                "INSERT INTO stamps (head_id, at, tsa_url, response, error) VALUES (?, ?, ?, ?, ?)",
                (stamp.head_id, format_time(stamp.at), stamp.tsa_url, stamp.response, stamp.error),
            )

    def stamps(self, head_id: int) -> list[Stamp]:
        with self._lock:
            rows = self.db.execute(
                "SELECT head_id, at, tsa_url, response, error FROM stamps WHERE head_id = ? "
                "ORDER BY id",
                (head_id,),
            ).fetchall()
        return [
            Stamp(int(h), parse_time(at), url, bytes(resp) if resp is not None else None, err)
            for h, at, url, resp, err in rows
        ]

    def close(self) -> None:
        with self._lock:
            self.db.close()
