"""The embedded index server started ahead of its first use: ``yinji ingest`` starts it
in a thread before importing the library's modules, so that the server loads
``redis.db`` (~0.5 s at 100 M characters, in its own process) while this one imports
(~0.3 s); ``tracker.indexes.redis_client.connect_embedded`` then takes the client made.

This module imports nothing of the index (the CLI calls it before those imports): the
caller hands over the function that starts the server.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from typing import Any

# db path -> (the starting thread, what it made: "client" or "error")
_STARTING: dict[str, tuple[threading.Thread, dict[str, Any]]] = {}
_LOCK = threading.Lock()


def begin(key: str, start: Callable[[], Any], stop: Callable[[Any], None]) -> None:
    """Run ``start()`` (a client of the server of db path ``key``) in a thread now.
    A client never taken is handed to ``stop`` at exit (the server saves and stops as
    every embedded server does)."""
    made: dict[str, Any] = {}

    def run() -> None:
        try:
            made["client"] = start()
        except BaseException as exc:  # raised again by ``take``, in its caller
            made["error"] = exc

    with _LOCK:
        if key in _STARTING:
            return
        thread = threading.Thread(target=run, name="yinji-redis-start", daemon=True)
        _STARTING[key] = (thread, made)
    thread.start()

    def unclaimed() -> None:
        client = take(key, reraise=False)
        if client is not None:
            stop(client)

    atexit.register(unclaimed)


def take(key: str, *, reraise: bool = True) -> Any:
    """The client started for db path ``key`` (waiting for its start), or None when
    none was begun; the start's error raised here (``reraise``)."""
    with _LOCK:
        started = _STARTING.pop(key, None)
    if started is None:
        return None
    thread, made = started
    thread.join()
    if "error" in made:
        if reraise:
            raise made["error"]
        return None
    return made["client"]
