"""English/Chinese check speed at 10 M characters with default settings (issue #40): the
speed part of ``bench/eval_english.py`` as is (``eval_english.speed``: two libraries of
``--size`` characters opened with ``Settings(data_dir=folder)``, so the snapshot floor
``YINJI_SNAPSHOT_MIN_CHARS`` is at its default), run ``--runs`` times from each tree
given, in turn (A B A B ...), one JSON line a run: the ratios are paired within a run.

    python bench/bench_snapshot_floor.py --tree . --tree /path/to/before \
        [--data ../shared/data] [--en-data bench/data/english] [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_RUN = """
import json, sys, time
from pathlib import Path
tree, data, en_data, size, n = sys.argv[1:6]
sys.path[:0] = [str(Path(tree) / "bench"), tree]
import english_data
from eval_english import Builder, speed
builder = Builder(english_data.load(english_data.data_dir(en_data)), 40)
builder.build(30)
started = time.time()
out = speed(builder, Path(data), int(size), int(n), 40)
out["tree"], out["s"] = tree, round(time.time() - started)
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, help="a source tree (repeat)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--en-data", default=str(ROOT / "bench" / "data" / "english"))
    ap.add_argument("--size", type=int, default=10_000_000)
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    for _ in range(args.runs):
        for tree in args.tree:
            tree = str(Path(tree).resolve())
            env = {**os.environ, "PYTHONPATH": tree}
            argv = [args.data, args.en_data, str(args.size), str(args.cases)]
            line = (
                subprocess.run(
                    [sys.executable, "-c", _RUN, tree, *argv],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            run = json.loads(line)
            ratio = run["cpu_with_redis_ms_per_1000_chars"]["ratio"]
            print(json.dumps(run), flush=True)
            print(f"# {tree}: en/zh CPU with the Redis server {ratio}", file=sys.stderr)


if __name__ == "__main__":
    main()
