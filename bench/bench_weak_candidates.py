"""The cost of daguan's ``weak_candidates`` on huge suspects (issue #13): the checks of
``bench/bench_long_suspect.py`` (a whole pirated novel, then suspects of N M characters,
windowed and the old path) with ``weak_candidates`` at its default (4) and at 0, in one
run on one library: only the engine option differs, set as ``yinji`` keeps engine options
(the store's meta ``engine:daguan:options``; a query-time option, no index rebuild).

    python bench/bench_weak_candidates.py --sizes 1 --old-max 1 --runs 1 --novel-runs 1
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import publish
from bench_long_suspect import PIRATE, build_library, run_novel, run_sizes


def set_weak(data_dir: Path, weak: int) -> None:
    """Keep ``weak_candidates`` with the library, the other daguan options as they are."""
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    with Library.open(Settings(data_dir=data_dir)) as lib:
        options = dict(lib.store.get_meta("engine:daguan:options") or {})
        options["weak_candidates"] = weak
        lib.store.set_meta("engine:daguan:options", options)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1], help="M characters")
    ap.add_argument("--old-max", type=float, default=1, help="largest size for the old path (M)")
    ap.add_argument("--runs", type=int, default=1, help="runs per size and path (median)")
    ap.add_argument("--novel-runs", type=int, default=1)
    ap.add_argument("--weak", type=int, nargs="+", default=[4, 0], help="values compared")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per check")
    ap.add_argument("--write", action="store_true", help="write docs/BENCHMARKS.md's section")
    args = ap.parse_args()
    if not PIRATE.exists():
        sys.exit(f"needs {PIRATE} (../shared/data)")
    started = time.time()
    parts: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        build_library(data_dir)
        for weak in args.weak:
            set_weak(data_dir, weak)
            novel = run_novel(data_dir, args.novel_runs, args.timeout)
            table = run_sizes(data_dir, args.sizes, args.old_max, args.runs, args.timeout)
            parts += [f"**weak_candidates = {weak}**", "", *novel, "", *table, ""]
    publish("weak-candidates", "bench_weak_candidates.py", parts, started, args.write)


if __name__ == "__main__":
    main()
