"""One sqlite3 file shared by threads and processes: ``SqliteDatabase``, the part of
the sqlite adapters that is not about what they store.

Concurrency model: every thread gets its own connection (sqlite3 connections must
not be shared across threads while in use), the file is in WAL mode so readers never
block the writer, and every write is one ``BEGIN IMMEDIATE`` transaction so that two
writers queue on ``busy_timeout`` instead of failing with a lock-upgrade deadlock.
Several processes (CLI, Celery worker, Flask app) can therefore share the file. A
folder that refuses writes opens the file read-only (``read_only``): reads work, every
write raises ``StoreError`` naming the folder.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tracker.plumbing.datadir import private_dir, private_file

from ._common import storage_problem, to_utc
from .interfaces import StoreError

BUSY_TIMEOUT_MS = 30_000
_CHUNK = 500  # ids per IN (...) list, well below SQLITE_MAX_VARIABLE_NUMBER


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


class SqliteDatabase(ABC):
    """Connections, transactions and failures of one sqlite3 file; subclasses create
    their tables (``_init_schema``) and name one (``_probe_table``) that a read-only
    open reads to make sure the file is theirs."""

    _probe_table: str = "sqlite_master"
    _schema_version: int = 0  # PRAGMA user_version of the newest schema this code knows
    read_only: bool = False

    @abstractmethod
    def _init_schema(self) -> None:
        """Create or upgrade the tables (one transaction; ``SCHEMA_VERSION`` checked)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if str(path) == ":memory:" or str(path).startswith("file::memory:"):
            # Each thread has its own connection, so each would see its own empty
            # in-memory database: refuse instead of losing data silently.
            raise ValueError("SqliteDatabase needs a file path (use a temporary file in tests)")
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
                self._conn().execute(f"SELECT count(*) FROM {self._probe_table}").fetchone()
            except sqlite3.Error:
                self.close()
                self._closed = False
                continue
            if version > self._schema_version:
                raise StoreError(
                    f"{self.path} has schema version {version}, newer than this code "
                    f"({self._schema_version})"
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
