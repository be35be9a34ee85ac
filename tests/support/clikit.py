"""The CLI run in the test's own process (click's runner), for commands that start no
process of their own: the same exit code, stdout and stderr as ``python -m tracker.cli``
without a new interpreter (and its imports) per call. An unexpected exception is kept
in ``result.exception`` rather than printed: a test that must see that no traceback
reaches the user runs the real command (a subprocess) instead."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result


def yinji_here(data_dir: Path, *args: str) -> Result:
    from tracker.cli import main

    return CliRunner().invoke(main, ["--data-dir", str(data_dir), *args])
