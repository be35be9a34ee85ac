"""``workers.children``: worker processes that do not come up are stopped and said so
(``yinji serve`` then falls back to in-process consumers); stop() ends live ones."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tracker.plumbing.config import Settings
from workers import children


def test_children_that_exit_at_once_give_none(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    fail = [sys.executable, "-c", "import sys; sys.exit(3)"]
    # no broker: a ping nobody answers (the job app would start the data folder's
    # queue server, and nothing here would stop it)
    app = SimpleNamespace(configured=True, control=SimpleNamespace(ping=lambda timeout: []))
    monkeypatch.setattr(children, "get_celery", lambda: app)
    monkeypatch.setattr(children, "_command", lambda data_dir, loglevel, role, gen=0: ("a@x", fail))
    started = time.monotonic()
    # The children are gone in a moment (longer on a loaded machine): far below the
    # start timeout, which waiting for a ping of the dead would reach.
    assert children.start(Settings(data_dir=tmp_path), timeout=120) is None
    assert time.monotonic() - started < 60  # no waiting for a ping of the dead


def test_stop_ends_a_running_child(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    group = children.ChildWorkers(children=[children.Child("work", "x@y", proc, time.monotonic())])
    assert group.alive()
    group.stop(timeout=10)
    assert proc.poll() is not None and not group.alive()


def test_the_commands_split_checks_and_alerts(tmp_path: Path) -> None:
    (work_name, work), (alert_name, alerts) = children._commands(tmp_path, "WARNING")
    assert work[work.index("-Q") + 1].split(",") and "alerts" not in work[work.index("-Q") + 1]
    assert work[work.index("-P") + 1] == "solo"
    assert alerts[alerts.index("-Q") + 1] == "alerts"
    assert work_name != alert_name and str(tmp_path) in work
