"""tracker.indexes.redis_client.process_alive: a zombie is gone (issue #14: every CLI call
waited seconds for the embedded server that had already exited)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tracker.indexes.redis_client import process_alive


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs procfs")
def test_exited_unreaped_child_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 60  # a loaded machine starts Python slowly
        while process_alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        # Not reaped yet: signal 0 still reaches the zombie, process_alive says gone.
        os.kill(child.pid, 0)
        assert not process_alive(child.pid)
    finally:
        child.wait()
    assert not process_alive(child.pid)


def test_running_process_is_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert process_alive(child.pid)
        assert process_alive(os.getpid())
    finally:
        child.kill()
        child.wait()
