"""One set of environment parsers for the CLI, the workers and the web app: a bad value
is an error naming the variable and the value, in every process."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tracker.plumbing.config import (
    SettingError,
    Settings,
    WebSettings,
    WorkerSettings,
    env_bool,
    env_float,
    env_int,
    env_time,
)


def test_parsers_read_good_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YINJI_X", " 42 ")
    assert env_int("YINJI_X", 7) == 42
    monkeypatch.setenv("YINJI_X", "0.25")
    assert env_float("YINJI_X", None) == 0.25
    for raw, value in [("1", True), ("TRUE", True), ("on", True), ("no", False), ("0", False)]:
        monkeypatch.setenv("YINJI_X", raw)
        assert env_bool("YINJI_X", default=not value) is value
    monkeypatch.setenv("YINJI_X", "7:05")
    assert env_time("YINJI_X", (3, 0)) == (7, 5)
    # Unset or empty: the default.
    monkeypatch.setenv("YINJI_X", "  ")
    assert env_int("YINJI_X", 7) == 7 and env_bool("YINJI_X", True) is True
    monkeypatch.delenv("YINJI_X")
    assert env_float("YINJI_X", None) is None and env_time("YINJI_X", (3, 0)) == (3, 0)


@pytest.mark.parametrize(
    ("parse", "raw", "reason"),
    [
        (lambda: env_int("YINJI_X", 1), "ten", "whole number"),
        (lambda: env_int("YINJI_X", 1), "1.5", "whole number"),
        (lambda: env_int("YINJI_X", 1, minimum=1), "0", "at least 1"),
        (lambda: env_int("YINJI_X", 1, minimum=1, maximum=9), "10", "1 to 9"),
        (lambda: env_float("YINJI_X", None), "fast", "a number"),
        (lambda: env_float("YINJI_X", None), "-1", "at least 0"),
        (lambda: env_float("YINJI_X", None), "nan", "at least 0"),
        (lambda: env_bool("YINJI_X"), "maybe", "1/true/yes/on"),
        (lambda: env_time("YINJI_X", (3, 0)), "25:00", "HH:MM"),
    ],
)
def test_a_bad_value_names_the_variable_and_the_value(
    monkeypatch: pytest.MonkeyPatch, parse: object, raw: str, reason: str
) -> None:
    monkeypatch.setenv("YINJI_X", raw)
    with pytest.raises(SettingError) as info:
        parse()  # type: ignore[operator]
    assert "YINJI_X" in str(info.value) and repr(raw) in str(info.value)
    assert reason in str(info.value)


@pytest.mark.parametrize(
    ("name", "raw", "read"),
    [
        ("YINJI_ALLOW_PRIVATE_URLS", "yes please", Settings.from_env),
        ("YINJI_VISIBILITY_TIMEOUT", "1h", WorkerSettings.from_env),
        ("YINJI_INGEST_CHUNK", "0", WorkerSettings.from_env),
        ("YINJI_MAX_UPLOAD_MB", "lots", WebSettings.from_env),
        ("YINJI_SECURE_COOKIES", "sure", WebSettings.from_env),
    ],
)
def test_every_settings_class_raises(
    monkeypatch: pytest.MonkeyPatch, name: str, raw: str, read: object
) -> None:
    monkeypatch.setenv(name, raw)
    with pytest.raises(SettingError, match=name):
        read()  # type: ignore[operator]


def test_the_web_app_refuses_a_bad_number(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """It used to fall back to the default in silence (and the workers raised)."""
    from web import create_app

    monkeypatch.setenv("YINJI_MAX_UPLOAD_MB", "200MB")
    with pytest.raises(SettingError, match="YINJI_MAX_UPLOAD_MB must be a whole number"):
        create_app(Settings(data_dir=tmp_path), testing=True)
    monkeypatch.setenv("YINJI_MAX_UPLOAD_MB", "3")
    monkeypatch.setenv("YINJI_SECURE_COOKIES", "on")  # used to count as false
    app = create_app(Settings(data_dir=tmp_path), testing=True)
    assert app.config["MAX_CONTENT_LENGTH"] == 3 * 1024 * 1024
    assert app.config["SESSION_COOKIE_SECURE"] is True


def test_the_command_line_says_which_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tracker.cli import main

    monkeypatch.setenv("YINJI_ALLOW_PRIVATE_URLS", "perhaps")
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "index", "stats"])
    assert result.exit_code != 0
    assert "YINJI_ALLOW_PRIVATE_URLS" in result.output and "'perhaps'" in result.output
    assert "Traceback" not in result.output

    monkeypatch.delenv("YINJI_ALLOW_PRIVATE_URLS")
    monkeypatch.setenv("YINJI_RESULT_EXPIRES", "a week")
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "watch", "list"])
    assert result.exit_code != 0 and "YINJI_RESULT_EXPIRES" in result.output
