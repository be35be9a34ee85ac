"""Helpers shared by the benchmark scripts: machine description and result files."""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine() -> str:
    return (
        f"{platform.platform()}, {cpu_name()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}"
    )


def evict(paths: Iterable[Path]) -> None:
    """Each file's pages out of the page cache, written back first (no root needed,
    unlike ``drop_caches``): the next reads are cold, as in a library larger than the
    machine's cache. Missing files and folders are passed over."""
    os.sync()
    for path in paths:
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def write_section(name: str, body: str, path: Path | None = None) -> Path:
    """Replace (or append) one benchmark's marked section of a markdown results file
    (default docs/benchmarks/engines.md)."""
    path = path or ROOT / "docs" / "benchmarks" / "engines.md"
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = path.read_text() if path.exists() else "# Engine benchmarks\n"
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def publish(section: str, script: str, parts: list[str], started: float, write: bool) -> str:
    """A run's report: when, where and how it ran, then ``parts``; printed, and written
    into ``section`` of docs/BENCHMARKS.md with ``write``. ``started``: ``time.time()``."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    cmd = f"python bench/{script} " + " ".join(sys.argv[1:])
    head = f"Run {when} on {machine()}; `{cmd.strip()}` ({time.time() - started:.0f} s in all)."
    body = "\n".join([head, "", *parts])
    print(body)
    if write:
        write_section(section, body, ROOT / "docs" / "BENCHMARKS.md")
    return body
