"""The embedded document store: one sqlite3 file in the data folder (``SqliteStore``).

Connections, transactions and read-only folders are ``SqliteDatabase``'s
(``tracker.store.sqlite_db``); mothers, suspects, users and the watch list are read and
written by the generic ``SqliteCollection`` and the settings by ``SqliteKeyValues``
(``tracker.store.sqlite_records``), the matches by ``SqliteMatches``
(``tracker.store.sqlite_matches``); the tables are in ``tracker.store.sqlite_tables``.
What is left here is what only this store does: a mother's seq and fingerprints.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime

from tracker.common.records import JSONValue

from ._common import (
    check_id,
    dumps,
    json_normalize,
    prepare_suspect,
    to_utc,
)
from .base import (
    CheckWrite,
    Mother,
    NotFound,
    Replaced,
    Store,
    Suspect,
    WatchItem,
    check_batch_ids,
    utcnow,
)
from .sqlite_db import (
    MOTHER_READERS,
    _chunks,
    _Connection,
    _t,
)
from .sqlite_matches import SqliteMatches
from .sqlite_records import SqliteCollection, SqliteKeyValues
from .sqlite_tables import (
    _MOTHER_COLS,
    _SCHEMA,
    MOTHERS,
    SCHEMA_VERSION,
    SUSPECTS,
    USERS,
    WATCH,
    _mother,
    _watch,
)


class SqliteStore(SqliteMatches, Store):
    """``Store`` on one sqlite3 file (stdlib only)."""

    suspect_records: SqliteCollection[Suspect]  # its writes join a chunk's transaction
    _probe_table = "mothers"
    _schema_version = SCHEMA_VERSION

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.mother_records = SqliteCollection(self, MOTHERS)
        self.suspect_records = SqliteCollection(self, SUSPECTS)
        self.user_records = SqliteCollection(self, USERS)
        self.watch_records = SqliteCollection(self, WATCH)
        self.meta_values = SqliteKeyValues(self, "meta")
        super().__init__(path)

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
        self.suspect_records.put_in(c, s)
        return s

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

    # --- watch list --------------------------------------------------------------
    def list_watch(self, *, active_only: bool = True) -> list[WatchItem]:
        where = " WHERE active = 1" if active_only else ""
        rows = self._conn().execute(f"SELECT * FROM watch{where} ORDER BY added_at, url")
        return [_watch(r) for r in rows]

    # --- meta ----------------------------------------------------------------------
