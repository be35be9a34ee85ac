"""The import direction the design rests on: web → workers → tracker, web → tracker.

``tracker`` imports neither ``web`` nor ``workers`` (not even inside a function), and
``workers`` never imports ``web``; importing ``tracker`` starts no server.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from repo import REPO

ROOT = REPO


def imported_packages(path: Path) -> set[str]:
    """Top-level package names a module imports, anywhere in its body."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value.split(".")[0])
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("tracker", {"web", "workers"}), ("workers", {"web"})],
)
def test_import_direction(package: str, forbidden: set[str]) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & forbidden)
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    offenders = {name: bad for name, bad in offenders.items() if bad}
    assert offenders == {}, f"{package} must not import {sorted(forbidden)}: {offenders}"


def test_the_scanner_sees_function_level_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    from web.core import store\n    import workers.jobs\n"
        "    importlib.import_module('web.app')\n",
        encoding="utf-8",
    )
    assert {"web", "workers"} <= imported_packages(module)


def test_importing_tracker_starts_no_server(tmp_path: Path) -> None:
    # Every tracker module is imported in a fresh interpreter whose data folder is
    # empty: nothing may be created there and no child process may be left.
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "tracker").rglob("*.py")
    )
    code = (
        "import importlib, os, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "def parent(pid):\n"
        "    # A process may exit between listing /proc and reading it; the command\n"
        "    # name (in parentheses) may hold spaces, so split after its last ')'.\n"
        "    try:\n"
        "        with open(f'/proc/{pid}/stat') as fh:\n"
        "            return fh.read().rsplit(')', 1)[1].split()[1]\n"
        "    except (OSError, IndexError):\n"
        "        return None\n"
        "children = [p for p in os.listdir('/proc') if p.isdigit() "
        "and parent(p) == str(os.getpid())]\n"
        "print(len(children))\n"
    )
    data_dir = tmp_path / "data"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "YINJI_DATA_DIR": str(data_dir), "HOME": str(tmp_path)},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"
    assert not data_dir.exists()
    assert not (tmp_path / "yinji-data").exists()


SERVICE_PATH = [
    ROOT / "tracker" / "library.py",
    *sorted((ROOT / "tracker" / "services").glob("*.py")),
    ROOT / "tracker" / "indexes" / "admin.py",  # the index service (``IndexAdmin``)
]


@pytest.mark.parametrize("path", SERVICE_PATH, ids=lambda p: p.name)
def test_the_service_path_asks_engines_by_type(path: Path) -> None:
    """Capabilities are declared (``tracker.engines.capabilities``) and asked for with
    isinstance: no getattr/hasattr probing, no silenced attribute errors; and each
    module stays small enough to read (issue #27: under ~400 lines, the façade 480)."""
    text = path.read_text(encoding="utf-8")
    probes = [
        node.lineno
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
    ]
    assert probes == [], f"{path.name}: getattr/hasattr at lines {probes}"
    assert "type: ignore[attr-defined]" not in text
    assert text.count("\n") <= (480 if path.name == "library.py" else 400)


# --- the fast tier (tests/support/fasttier.py) ---------------------------------------------
@pytest.mark.slow  # its inner pytest starts servers
def test_the_fast_tier_guard_names_what_a_test_starts(tmp_path: Path) -> None:
    """A test outside ``slow`` that starts a server fails, naming it; marked, it passes;
    one that starts nothing passes. (An inner pytest in a child process: pytester's
    in-process runs would load its plugin into this session.)"""
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: starts servers\n")
    (tmp_path / "test_inner.py").write_text(
        "import socket\n"
        "import pytest\n\n"
        "def _serve():\n"
        "    with socket.socket() as s:\n"
        "        s.bind(('127.0.0.1', 0))\n"
        "        s.listen()\n\n"
        "def test_unmarked_server():\n"
        "    _serve()\n\n"
        "@pytest.mark.slow\n"
        "def test_marked_server():\n"
        "    _serve()\n\n"
        "def test_nothing():\n"
        "    assert 1 + 1 == 2\n"
    )
    # Third-party plugins stay out of the inner runs: they only slow its start.
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "tests" / "support"),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }

    def inner(*args: str) -> str:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "fasttier",
                "-q",
                "-p",
                "no:cacheprovider",
                *args,
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return run.stdout

    everything = inner()
    assert "3 passed, 1 error" in everything, everything
    assert re.search(
        r"test_unmarked_server starts a server listening on \('127\.0\.0\.1', \d+\)"
        r": mark it @pytest\.mark\.slow",
        everything,
    ), everything
    fast = inner("-m", "not slow")
    assert "2 passed, 1 deselected, 1 error" in fast, fast


@pytest.mark.parametrize(
    ("argv", "counted"),
    [
        ([sys.executable, "-m", "tracker.cli", "--data-dir", "d", "check"], True),
        (["/usr/bin/yinji", "ingest", "x"], True),
        ([sys.executable, "-m", "celery", "-A", "workers.app", "worker"], True),
        ("yinji serve --port 0", True),
        (["/usr/bin/chromium", "--headless"], True),
        ([sys.executable, "-c", "import time; time.sleep(1)"], False),
        (["/usr/bin/redis-server", "--port", "0"], False),  # the embedded store
        (["mount", "--bind", "a", "a"], False),
    ],
)
def test_which_processes_the_fast_tier_may_not_start(argv: object, counted: bool) -> None:
    from fasttier import started_by

    assert (started_by(argv) is not None) is counted
