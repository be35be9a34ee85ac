"""The fast tier: ``pytest -m "not slow"`` starts no server, worker or browser.

- Tests using a fixture of ``SLOW_FIXTURES`` are marked ``slow`` at collection.
- Every other test runs under a guard: one that starts a server (a socket that
  listens), a CLI or worker process or a browser fails, naming what it started, so the
  marker cannot be forgotten. The session's embedded redis-server and a library's own
  embedded Redis are the embedded default store and are not counted (they listen in
  another process, started as ``redis-server``).

Loaded by ``tests/conftest.py`` (``pytest_plugins``).
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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


def started_by(argv: object) -> str | None:
    """What a new process is, when it is one the fast tier must not start: the CLI (it
    starts an embedded Redis server), a Celery worker or a browser."""
    words = [str(a) for a in argv] if isinstance(argv, list | tuple) else str(argv).split()
    name = Path(words[0]).name if words else ""
    if name in ("yinji", "celery") or any(
        w == "celery" or w.startswith(("tracker.cli", "workers.")) for w in words[1:]
    ):
        return f"a CLI or worker process ({' '.join(words)[:120]})"
    if "chrom" in name or "playwright" in name or "firefox" in name:
        return f"a browser ({name})"
    return None


@pytest.fixture(autouse=True)
def _fast_tier_starts_nothing(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test not marked ``slow`` that starts a server (a socket that listens), a CLI or
    worker process or a browser fails, naming what it started: the marker cannot be
    forgotten. (The session's embedded redis-server and a library's own embedded Redis
    are the embedded default store, not counted: they listen in another process.)"""
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    started: list[str] = []
    listen = socket.socket.listen
    popen_init = subprocess.Popen.__init__

    def listening(sock: socket.socket, *args: Any) -> None:
        started.append(f"a server listening on {sock.getsockname()}")
        listen(sock, *args)

    def starting(proc: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        what = started_by(args)
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
