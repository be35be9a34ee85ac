"""What every ``yinji`` command shares (``tracker.cli`` and the command groups of
``tracker.books.cli``, ``tracker.discovery.cli``): the command's settings, read once;
the library it opens; a progress line; counts and rates in words."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from tracker.plumbing.config import SettingError, Settings

if TYPE_CHECKING:
    from tracker.library import Library


def command_settings(ctx: click.Context) -> Settings:
    """The settings of this command, read from the environment once (then kept)."""
    obj = ctx.find_root().ensure_object(dict)
    if obj.get("settings") is None:
        try:
            obj["settings"] = Settings.from_env(obj.get("data_dir"))
        except SettingError as exc:  # a bad environment variable: say which, no traceback
            raise click.ClickException(str(exc)) from None
    settings: Settings = obj["settings"]
    return settings


def open_library(ctx: click.Context, *, create: bool = False) -> Library:
    """The library of the data folder; only ``create`` (ingest) may start a new one: a
    mistyped --data-dir is refused before anything is created."""
    from tracker.library import Library

    settings = command_settings(ctx)
    if not create:
        try:
            settings.require_data_dir()
        except SettingError as exc:
            raise click.ClickException(str(exc)) from None
    return Library.open(settings)


class Progress:
    """A one-line progress display on a terminal; silent when stderr is not a tty."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty()

    def __call__(self, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        if total:
            width = 30
            filled = int(width * done / max(total, 1))
            bar = "#" * filled + "-" * (width - filled)
            sys.stderr.write(f"\r{self.label} [{bar}] {done}/{total}")
        else:
            sys.stderr.write(f"\r{self.label} {done} documents")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def say_repairs(lib: Library) -> None:
    for note in lib.repairs:
        click.echo(f"note: {note}", err=True)
    lib.repairs.clear()


def plural(n: int, word: str) -> str:
    """'1 error', '2 errors' — counts in summaries read as English."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def rate_text(chars_per_second: float) -> str:
    """A throughput in units that stay readable for small inputs (not '0.00 M chars/s')."""
    if chars_per_second >= 1e6:
        return f"{chars_per_second / 1e6:.2f} M chars/s"
    if chars_per_second >= 1e3:
        return f"{chars_per_second / 1e3:.1f} k chars/s"
    return f"{chars_per_second:.0f} chars/s"
