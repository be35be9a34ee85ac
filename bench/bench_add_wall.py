"""An add into a big library as a user waits for it (issue #37): ``yinji ingest NEW``
into a copy of a kept library, wall time from outside (interpreter and embedded Redis
start, the ingest, the snapshot it leaves, the final save), two checkouts in turn.

    python bench/bench_add_wall.py --data KEPT/default-path/data --docs NEW.jsonl ... \\
        --code A=CHECKOUT_A --code B=CHECKOUT_B --rounds 2

Each run gets a fresh copy of ``--data`` (the copy not timed), then runs the CLI of its
checkout (``PYTHONPATH``) in a new process: A B A B ... Prints each run (wall; the
ingest's own seconds and the snapshot's, from its report; the CPU seconds of the ingest
process, user + system, which the machine's load does not inflate as it does the wall;
the embedded server's are not counted) and the medians, with the rate in characters a
second of wall and the ratio A/B of each pair.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def chars_of(files: list[Path]) -> int:
    import json

    total = 0
    for path in files:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                total += len(json.loads(line)["text"])
    return total


def run(code: Path, data: Path, files: list[Path], scratch: Path) -> dict[str, float]:
    target = scratch / "data"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(data, target, symlinks=True)
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "PYTHONPATH": str(code),
    }
    cmd = [sys.executable, "-m", "tracker.cli", "--data-dir", str(target), "ingest"]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*cmd, *map(str, files)], capture_output=True, text=True, env=env, cwd=scratch
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed ({proc.returncode}):\n{proc.stderr}")
    own = re.search(r"characters in ([0-9.]+) s", proc.stderr)
    snap = re.search(r"snapshot of the index refreshed in ([0-9.]+) s", proc.stderr)
    shutil.rmtree(target)
    return {
        "wall": wall,
        "cpu": cpu,
        "own": float(own.group(1)) if own else float("nan"),
        "snapshot": float(snap.group(1)) if snap else 0.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the kept library's data folder")
    ap.add_argument("--docs", type=Path, nargs="+", required=True, help="the new works")
    ap.add_argument("--code", action="append", required=True, help="LABEL=CHECKOUT (twice)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scratch", type=Path, default=None, help="where the copies go")
    args = ap.parse_args()
    codes = [(c.split("=", 1)[0], Path(c.split("=", 1)[1]).resolve()) for c in args.code]
    scratch = args.scratch or args.data.parent.parent / "add-wall"
    scratch.mkdir(parents=True, exist_ok=True)
    chars = chars_of(args.docs)
    runs: dict[str, list[dict[str, float]]] = {label: [] for label, _ in codes}
    for r in range(args.rounds):
        for label, code in codes:
            got = run(code, args.data, args.docs, scratch)
            runs[label].append(got)
            print(
                f"round {r + 1} {label}: wall {got['wall']:.2f} s "
                f"({chars / got['wall'] / 1e6:.2f} M chars/s), own {got['own']:.2f} s "
                f"({chars / got['own'] / 1e6:.2f}), snapshot {got['snapshot']:.2f} s, "
                f"cpu {got['cpu']:.2f} s",
                flush=True,
            )
    print(f"{chars:,} characters added; medians:")
    for label, got in runs.items():
        wall = statistics.median(g["wall"] for g in got)
        own = statistics.median(g["own"] for g in got)
        snap = statistics.median(g["snapshot"] for g in got)
        cpu = statistics.median(g["cpu"] for g in got)
        print(
            f"  {label}: wall {wall:.2f} s = {chars / wall / 1e6:.2f} M chars/s; own "
            f"{own:.2f} s = {chars / own / 1e6:.2f}; snapshot {snap:.2f} s; outside the "
            f"ingest's own {wall - own:.2f} s; cpu {cpu:.2f} s"
        )
    if len(codes) == 2:
        (a, ra), (b, rb) = runs.items()
        ratios = [x["wall"] / y["wall"] for x, y in zip(ra, rb, strict=True)]
        print(f"  wall {a}/{b} pair by pair: {', '.join(f'{q:.2f}' for q in ratios)}")


if __name__ == "__main__":
    main()
