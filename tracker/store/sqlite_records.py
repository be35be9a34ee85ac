"""The generic parts of the sqlite adapters, written once: ``SqliteCollection`` (records
of one kind in one table, as ``Table`` describes it) and ``SqliteKeyValues`` (JSON
values under string keys in a ``key``/``value`` table)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from tracker.common.records import JSONObject, JSONValue

from ._common import dumps
from .interfaces import Collection, Duplicate, KeyValues
from .sqlite_db import SqliteDatabase, _like

R = TypeVar("R")

#: A value as sqlite3 binds it.
SqlValue = str | int | float | bytes | None


@dataclass(frozen=True)
class Table(Generic[R]):
    """How records of one kind lie in one table: its key, the columns a record is read
    from (``brief``: those a listing reads), how a row becomes a record and a record a
    row, the columns a search looks in, the listing order and the scan's key."""

    name: str
    key: str
    columns: str
    brief: str
    decode: Callable[[sqlite3.Row], R]
    encode: Callable[[R], Mapping[str, SqlValue]] | None  # None: not written through here
    search: tuple[str, ...] = ()
    order: str = ""  # ORDER BY of a page (default: the key)
    scan_key: str = ""  # default: the key
    scan_start: str | int = ""  # below every scan key


class SqliteCollection(Collection[R]):
    """``Collection`` on one table of a ``SqliteDatabase``."""

    def __init__(self, db: SqliteDatabase, table: Table[R]) -> None:
        self.db = db
        self.table = table
        self.key_field = table.key

    def _columns(self, brief: bool) -> str:
        return self.table.brief if brief else self.table.columns

    def find_by(self, field: str, value: str) -> R | None:
        if not field.isidentifier():
            raise ValueError(f"not a column name: {field!r}")
        row = (
            self.db._conn()
            .execute(
                f"SELECT {self.table.columns} FROM {self.table.name} WHERE {field} = ?", (value,)
            )
            .fetchone()
        )
        return None if row is None else self.table.decode(row)

    def put(self, record: R) -> None:
        with self.db._tx() as c:
            self.put_in(c, record)

    def put_in(self, c: sqlite3.Connection, record: R) -> None:
        """``put`` inside the caller's transaction ``c``. An upsert, not INSERT OR
        REPLACE: that would silently delete another record holding a unique value."""
        if self.table.encode is None:
            raise TypeError(f"{self.table.name} are not written as plain records")
        row = self.table.encode(record)
        names = ", ".join(row)
        marks = ", ".join("?" * len(row))
        updates = ", ".join(f"{n} = excluded.{n}" for n in row if n != self.table.key)
        try:
            c.execute(
                f"INSERT INTO {self.table.name}({names}) VALUES ({marks}) "
                f"ON CONFLICT({self.table.key}) DO UPDATE SET {updates}",
                list(row.values()),
            )
        except sqlite3.IntegrityError as exc:  # another unique index than the key's
            raise Duplicate(f"{self.table.name}: {exc}") from exc

    def delete(self, key: str) -> bool:
        with self.db._tx() as c:
            cur = c.execute(f"DELETE FROM {self.table.name} WHERE {self.table.key} = ?", (key,))
            return cur.rowcount > 0

    def _where(self, search: str | None) -> tuple[str, list[SqlValue]]:
        if not search or not self.table.search:
            return "", []
        pattern = _like(search)
        ors = " OR ".join(f"{column} LIKE ? ESCAPE '\\'" for column in self.table.search)
        return f" WHERE ({ors})", [pattern] * len(self.table.search)

    def page(
        self, *, search: str | None = None, offset: int = 0, limit: int = 50, brief: bool = False
    ) -> list[R]:
        where, params = self._where(search)
        rows = self.db._conn().execute(
            f"SELECT {self._columns(brief)} FROM {self.table.name}{where} "
            f"ORDER BY {self.table.order or self.table.key} LIMIT ? OFFSET ?",
            [*params, max(0, limit), max(0, offset)],
        )
        return [self.table.decode(r) for r in rows]

    def count(self, *, search: str | None = None) -> int:
        where, params = self._where(search)
        row = self.db._conn().execute(f"SELECT count(*) FROM {self.table.name}{where}", params)
        return int(row.fetchone()[0])

    def scan(
        self, *, batch_size: int = 500, after: str | int | None = None, brief: bool = False
    ) -> Iterator[R]:
        # Keyset pagination: each batch is one short read, so no transaction stays
        # open while the caller works (a long reader would stall WAL checkpoints).
        key = self.table.scan_key or self.table.key
        last = self.table.scan_start if after is None else after
        while True:
            # Connection looked up per batch: the generator may be resumed on
            # another thread than the one that started it.
            rows = (
                self.db._conn()
                .execute(
                    f"SELECT {self._columns(brief)} FROM {self.table.name} "
                    f"WHERE {key} > ? ORDER BY {key} LIMIT ?",
                    (last, max(1, batch_size)),
                )
                .fetchall()
            )
            if not rows:
                return
            for row in rows:
                yield self.table.decode(row)
            last = rows[-1][key]


class SqliteKeyValues(KeyValues):
    """``KeyValues`` in a ``(key TEXT PRIMARY KEY, value TEXT)`` table of JSON texts."""

    def __init__(self, db: SqliteDatabase, table: str = "meta") -> None:
        self.db = db
        self.table = table

    def get(self, key: str) -> JSONValue:
        row = (
            self.db._conn()
            .execute(f"SELECT value FROM {self.table} WHERE key = ?", (key,))
            .fetchone()
        )
        return None if row is None else json.loads(row["value"])

    def set(self, key: str, value: JSONValue) -> None:
        text = dumps(value)  # fails here, before the transaction, if not JSON
        with self.db._tx() as c:
            c.execute(
                f"INSERT INTO {self.table}(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, text),
            )

    def init(self, key: str, value: JSONValue) -> JSONValue:
        text = dumps(value)
        with self.db._tx() as c:
            c.execute(f"INSERT OR IGNORE INTO {self.table}(key, value) VALUES (?, ?)", (key, text))
            row = c.execute(f"SELECT value FROM {self.table} WHERE key = ?", (key,)).fetchone()
        return json.loads(row["value"])

    def raise_to(self, key: str, value: int) -> int:
        with self.db._tx() as c:
            row = c.execute(f"SELECT value FROM {self.table} WHERE key = ?", (key,)).fetchone()
            current = int(json.loads(row["value"])) if row is not None else 0
            if int(value) > current:
                current = int(value)
                c.execute(
                    f"INSERT INTO {self.table}(key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, dumps(current)),
                )
        return current

    def delete(self, key: str) -> None:
        with self.db._tx() as c:
            c.execute(f"DELETE FROM {self.table} WHERE key = ?", (key,))

    def items(self, prefix: str) -> JSONObject:
        # A range on the primary key, not LIKE (whose wildcards the prefix may hold).
        rows = self.db._conn().execute(
            f"SELECT key, value FROM {self.table} WHERE key >= ? AND key < ? ORDER BY key",
            (prefix, prefix + "\U0010ffff"),
        )
        return {r["key"]: json.loads(r["value"]) for r in rows if r["key"].startswith(prefix)}
