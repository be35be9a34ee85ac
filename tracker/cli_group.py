"""The ``yinji`` command group: the commands of ``workers`` and ``web`` added on demand
(entry-point group ``yinji.commands``; ``--help`` reads their help without importing
them), an outage said in one message instead of a traceback, and SIGTERM/SIGHUP ending
a command like Ctrl-C."""

from __future__ import annotations

import contextlib
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import click

from tracker.plumbing.config import SettingError, Settings


class YinjiGroup(click.Group):
    """Adds the commands of ``workers`` and ``web`` (entry-point group ``yinji.commands``)
    on demand: tracker imports neither, and ``yinji check`` never loads Flask or Celery."""

    def _plugins(self) -> dict[str, Any]:
        from importlib.metadata import entry_points

        return {ep.name: ep for ep in entry_points(group="yinji.commands")}

    def invoke(self, ctx: click.Context) -> object:
        """Run the command; an outage or environment failure (Redis or MongoDB down,
        data folder read-only or full, index out of step) is said in one message with
        what to do, and exit status 1, instead of a traceback."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            stopped = stopped_by_signal(exc)
            if stopped is not None:
                # SIGTERM/SIGHUP landed mid-write and the unwinding hit an error (a store
                # transaction cut in two): the command still ends as the signal asked.
                raise stopped from exc
            from tracker.plumbing.errors import describe_failure, with_notes

            settings = (ctx.obj or {}).get("settings")
            if settings is None:
                with contextlib.suppress(SettingError):
                    settings = Settings.from_env((ctx.obj or {}).get("data_dir"))
            message = describe_failure(exc, settings)
            if message is None:
                raise
            raise click.ClickException(with_notes(message, exc)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._plugins()))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """``yinji --help`` lists every command with its first line of help, read from
        the plugin's source (``_described``) instead of importing it: listing ``serve``
        must not load Flask and Celery (issue #37: what a person waits for ≤ 0.5 s)."""
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        ep = self._plugins().get(cmd_name)
        if ep is None:
            return None
        if getattr(self, "_listing", False):
            described = _described(cmd_name, ep.value)
            if described is not None:
                return described
        try:
            return ep.load()
        except ImportError as exc:
            message = f"command {cmd_name!r} is unavailable: {exc}"

            @click.command(cmd_name, help=message)
            def unavailable() -> None:
                raise click.ClickException(message)

            return unavailable


def _described(name: str, target: str) -> click.Command | None:
    """A stand-in of the plugin command ``target`` (``module:function``) that only
    carries its help, the docstring of ``function`` in the module's source (found and
    parsed, not imported); None when it cannot be read so (the command is loaded)."""
    import ast
    from importlib.util import find_spec

    module, _, attr = target.partition(":")
    top, *rest = module.split(".")
    try:
        spec = find_spec(top)  # a top-level name: found, not imported
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations)), *rest).with_suffix(".py")
        tree = ast.parse(path.read_bytes())
    except (ImportError, OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr:
            doc = ast.get_docstring(node)
            return click.Command(name, help=doc) if doc else None
    return None


def stopped_by_signal(exc: BaseException) -> SystemExit | None:
    """The ``SystemExit`` of a SIGTERM/SIGHUP (``exit_cleanly_on_signals``) that
    ``exc`` was raised while handling, if any."""
    codes = {128 + getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)}
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, SystemExit) and cur.code in codes:
            return cur
        cur = cur.__context__
    return None


def exit_cleanly_on_signals() -> None:
    """SIGTERM and SIGHUP end the command like Ctrl-C: through ``finally`` and ``with``
    blocks and atexit, so the library closes and an embedded Redis server this
    process started is stopped (Python's default would end at once and leak it)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name) and signal.getsignal(getattr(signal, name)) in (
            signal.SIG_DFL,
            None,
        ):
            signal.signal(getattr(signal, name), stop)
