"""``CaseStore`` on one sqlite3 file (``cases.sqlite3`` in the data folder).

On the document store's ``SqliteDatabase``: one connection per thread, WAL so readers
never block the writer, every write one ``BEGIN IMMEDIATE`` transaction (several
processes share the file). A case update and its events are written in the same
transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracker.common.records import JSONValue, NotFound
from tracker.store.sqlite_db import SqliteDatabase
from tracker.store.sqlite_records import SqliteKeyValues

from .model import Case, CaseEvent, ConcurrentUpdate
from .store import MAX_BLOB_BYTES, CaseStore, blob_key, chain, check_blob_key

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cases (
    id         TEXT PRIMARY KEY,
    work       TEXT NOT NULL,
    domain     TEXT NOT NULL,
    state      TEXT NOT NULL,
    version    INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    doc        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS cases_work_domain ON cases(work, domain, created_at);
CREATE INDEX IF NOT EXISTS cases_state ON cases(state, updated_at);
CREATE TABLE IF NOT EXISTS case_events (
    case_id      TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    at           TEXT NOT NULL,
    kind         TEXT NOT NULL,
    hash         TEXT NOT NULL,
    doc          TEXT NOT NULL,
    evidence_ref TEXT,
    PRIMARY KEY (case_id, seq)
);
CREATE TABLE IF NOT EXISTS case_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
)
"""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class SqliteCaseStore(SqliteDatabase, CaseStore):
    """``CaseStore`` on one sqlite3 file; connections, transactions and a read-only
    folder as the document store's (``SqliteDatabase``), settings in ``case_meta``
    (``SqliteKeyValues``)."""

    _probe_table = "cases"

    def __init__(self, path: str | os.PathLike[str], *, blob_dir: str | os.PathLike[str]) -> None:
        self.blob_dir = Path(blob_dir)
        self.meta_values = SqliteKeyValues(self, "case_meta")
        super().__init__(path)  # rights holders' details: mode 600 (tracker.plumbing.datadir)

    def _init_schema(self) -> None:
        self._conn().execute("PRAGMA journal_mode = WAL")
        with self._tx() as c:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    c.execute(statement)

    # --- cases -----------------------------------------------------------------------
    @staticmethod
    def _row(case: Case) -> tuple[Any, ...]:
        d = case.to_dict()
        return (
            case.id,
            case.work,
            case.domain,
            case.state,
            case.version,
            d["created_at"],
            d["updated_at"],
            _dumps(d),
        )

    def create_case(self, case: Case, events: Sequence[CaseEvent] = ()) -> bool:
        case.version = 1
        with self._tx() as c:
            if c.execute("SELECT 1 FROM cases WHERE id = ?", (case.id,)).fetchone():
                return False
            c.execute("INSERT INTO cases VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self._row(case))
            self._append(c, case.id, events)
        return True

    def get_case(self, case_id: str) -> Case:
        row = self._conn().execute("SELECT doc FROM cases WHERE id = ?", (case_id,)).fetchone()
        if row is None:
            raise NotFound(f"no case {case_id!r}")
        return Case.from_dict(json.loads(row["doc"]))

    def update_case(
        self, case: Case, expected_version: int, events: Sequence[CaseEvent] = ()
    ) -> Case:
        with self._tx() as c:
            row = c.execute("SELECT version FROM cases WHERE id = ?", (case.id,)).fetchone()
            if row is None:
                raise NotFound(f"no case {case.id!r}")
            if row["version"] != expected_version:
                raise ConcurrentUpdate(f"case {case.id} changed meanwhile")
            case.version = expected_version + 1
            c.execute(
                "UPDATE cases SET work=?, domain=?, state=?, version=?, created_at=?, "
                "updated_at=?, doc=? WHERE id=?",
                (*self._row(case)[1:], case.id),
            )
            self._append(c, case.id, events)
        return case

    def list_cases(
        self,
        *,
        states: Sequence[str] | None = None,
        domain: str | None = None,
        work: str | None = None,
    ) -> list[Case]:
        clauses: list[str] = []
        params: list[Any] = []
        if states is not None:
            if not states:
                return []
            clauses.append(f"state IN ({','.join('?' * len(states))})")
            params += list(states)
        if domain is not None:
            clauses.append("domain = ?")
            params.append(domain)
        if work is not None:
            clauses.append("work = ?")
            params.append(work)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self._conn().execute(
            f"SELECT doc FROM cases{where} ORDER BY created_at DESC, id DESC", params
        )
        return [Case.from_dict(json.loads(r["doc"])) for r in rows]

    def case_ids_for(self, work: str, domain: str) -> list[str]:
        rows = self._conn().execute(
            "SELECT id FROM cases WHERE work = ? AND domain = ? ORDER BY created_at, id",
            (work, domain),
        )
        return [r["id"] for r in rows]

    # --- history ---------------------------------------------------------------------
    def _append(
        self, c: sqlite3.Connection, case_id: str, events: Sequence[CaseEvent]
    ) -> list[CaseEvent]:
        if not events:
            return []
        row = c.execute(
            "SELECT doc FROM case_events WHERE case_id = ? ORDER BY seq DESC LIMIT 1", (case_id,)
        ).fetchone()
        last = CaseEvent.from_dict(json.loads(row["doc"])) if row else None
        for ev in events:
            ev.case_id = case_id
        out = chain(last, events)
        c.executemany(
            "INSERT INTO case_events(case_id, seq, at, kind, hash, doc) VALUES (?,?,?,?,?,?)",
            [(case_id, e.seq, e.body()["at"], e.kind, e.hash, _dumps(e.to_dict())) for e in out],
        )
        return out

    def append_events(self, case_id: str, events: Sequence[CaseEvent]) -> list[CaseEvent]:
        with self._tx() as c:
            return self._append(c, case_id, events)

    def list_events(self, case_id: str) -> list[CaseEvent]:
        rows = self._conn().execute(
            "SELECT doc, evidence_ref FROM case_events WHERE case_id = ? ORDER BY seq",
            (case_id,),
        )
        out = []
        for r in rows:
            ev = CaseEvent.from_dict(json.loads(r["doc"]))
            ev.evidence_ref = r["evidence_ref"]
            out.append(ev)
        return out

    def set_evidence_ref(self, case_id: str, seq: int, ref: str) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE case_events SET evidence_ref = ? WHERE case_id = ? AND seq = ?",
                (ref, case_id, seq),
            )

    # --- settings --------------------------------------------------------------------
    def get_meta(self, key: str) -> JSONValue:
        return self.meta_values.get(key)

    def set_meta(self, key: str, value: JSONValue) -> None:
        self.meta_values.set(key, value)

    # --- blobs -------------------------------------------------------------------------
    def _blob_path(self, key: str) -> Path:
        return self.blob_dir / key[:2] / key

    def put_blob(self, data: bytes) -> str:
        if len(data) > MAX_BLOB_BYTES:
            raise ValueError(f"file of {len(data)} bytes exceeds the {MAX_BLOB_BYTES}-byte cap")
        key = blob_key(data)
        path = self._blob_path(key)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)  # atomic: a reader never sees half a blob
        return key

    def get_blob(self, key: str) -> bytes:
        path = self._blob_path(check_blob_key(key))
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise NotFound(f"no blob {key}") from None
