"""The commands load through ``yinji``'s entry-point group exactly as they will be
registered (``case = "tracker.cases.cli:case"``, ``verdict = "tracker.cases.cli:verdict"``):
a throw-away distribution declares them, and ``python -m tracker.cli`` runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from casekit import add_match, library_store
from repo import REPO

ENTRY_POINTS = """[yinji.commands]
case = tracker.cases.cli:case
verdict = tracker.cases.cli:verdict
"""


@pytest.mark.slow
def test_commands_through_the_yinji_entry_point_group(tmp_path: Path) -> None:
    dist = tmp_path / "ep" / "yinji_cases_contract-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: yinji-cases-contract\nVersion: 0\n"
    )
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "ep"), str(REPO)])}
    data = tmp_path / "data"
    data.mkdir()
    with library_store(data) as store:
        add_match(store, "s1", "w1", "https://pirate.example/1.html", title="春山记")

    def yinji(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    r = yinji("verdict", "s1", "w1", "confirmed", "--note", "checked")
    assert r.returncode == 0, r.stderr
    r = yinji("case", "list", "--json")
    assert r.returncode == 0, r.stderr
    (c,) = json.loads(r.stdout)
    assert c["state"] == "open" and c["urls"] == ["https://pirate.example/1.html"]
    r = yinji("case", "mark-sent", c["id"])
    assert r.returncode == 0 and "notice_sent" in r.stdout
    assert "case" in yinji("--help").stdout
