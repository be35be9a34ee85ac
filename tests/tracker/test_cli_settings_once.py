"""``yinji check`` reads the environment once (``Settings.from_env``) and builds one
matcher per checked input, none just to validate the engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from textgen import work

from tracker.cli import main
from tracker.matching import matcher as matching
from tracker.plumbing.config import Settings


@pytest.mark.slow  # the embedded Redis server starts
def test_check_reads_settings_once_and_builds_no_spare_matcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    works = tmp_path / "works"
    works.mkdir()
    for i in range(4):
        (works / f"w{i}.txt").write_text(work(i, 50), encoding="utf-8")
    suspects = [tmp_path / "a.txt", tmp_path / "b.txt"]
    suspects[0].write_text(work(1, 50)[100:900], encoding="utf-8")
    suspects[1].write_text(work(80, 30), encoding="utf-8")
    data = str(tmp_path / "data")
    monkeypatch.delenv("YINJI_TSA_URL", raising=False)
    runner = CliRunner()
    assert runner.invoke(main, ["--data-dir", data, "ingest", str(works)]).exit_code == 0

    reads: list[object] = []
    real_from_env = Settings.from_env.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        Settings, "from_env", classmethod(lambda cls, *a: reads.append(a) or real_from_env(cls, *a))
    )
    built: list[object] = []
    real_init = matching.Matcher.__init__
    monkeypatch.setattr(
        matching.Matcher,
        "__init__",
        lambda self, *a, **kw: built.append(a) or real_init(self, *a, **kw),
    )
    result = runner.invoke(main, ["--data-dir", data, "check", "--json", *map(str, suspects)])
    assert result.exit_code == 0, result.output
    assert len(reads) == 1
    assert len(built) == len(suspects)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 2 and '"mother_id": "w1"' in lines[0] and '"matches": []' in lines[1]
