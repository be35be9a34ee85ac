"""Wall time of one small `yinji check one.txt` (issue #14: target ≤ 1 s, median of 3).

Runs the real CLI in a fresh process on a small embedded library (20 works), three
times, for this checkout and, when ``--base REV`` is given, for that revision checked
out in a temporary git worktree (the baseline, measured in the same run):

    python bench/bench_cli.py --base 0c44245
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POEM = "春眠不觉晓处处闻啼鸟夜来风雨声花落知多少"


def _yinji(code_dir: Path, data: Path, *args: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(code_dir), "YINJI_SCREENSHOTS": "off"}
    cmd = [sys.executable, "-c", "from tracker.cli import main; main()", "--data-dir", str(data)]
    start = time.perf_counter()
    subprocess.run(
        [*cmd, *args], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def measure(code_dir: Path, work: Path, runs: int) -> list[float]:
    data = work / f"data-{code_dir.name}"
    lib = work / "lib.jsonl"
    one = work / "one.txt"
    if not lib.exists():
        lines = [
            json.dumps({"id": f"m{i}", "title": f"作品{i}", "text": (POEM * 30)[i:] + f"第{i}章"})
            for i in range(20)
        ]
        lib.write_text("\n".join(lines), encoding="utf-8")
        one.write_text(POEM * 5, encoding="utf-8")
    _yinji(code_dir, data, "ingest", str(lib))
    _yinji(code_dir, data, "check", str(one))  # warm: pinyin table cache, bytecode
    return [_yinji(code_dir, data, "check", str(one)) for _ in range(runs)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--base", help="git revision to measure beside this checkout")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = [("this checkout", measure(ROOT, work, args.runs))]
        if args.base:
            base = work / "base"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base],
                check=True,
                capture_output=True,
            )
            try:
                rows.append((f"base {args.base}", measure(base, work, args.runs)))
            finally:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                    check=True,
                )
    print("| code | runs (s) | median (s) |")
    print("|---|---|---|")
    for name, times in rows:
        runs = ", ".join(f"{t:.2f}" for t in times)
        print(f"| {name} | {runs} | {statistics.median(times):.2f} |")


if __name__ == "__main__":
    main()
