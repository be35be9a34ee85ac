"""Huge suspects (issue 10): time and peak memory of checking one suspect of 1 M to 20 M
characters, windowed (``tracker.matching.longtext``) against the old unwindowed path measured in
the same run, and a whole pirated novel checked both ways (the same matches?).

The library holds the chapters of 三国演义 and 红楼梦 (241 works) from ../shared/data.
Suspects of N characters are the pirate-site copy of 三国演义 followed by three novels
the library does not hold, repeated up to N (so every size holds copies and noise).
Each check runs in a fresh process: its peak RSS (``ru_maxrss``) is what one worker
would need; "growth" is the peak minus the RSS before the check (libraries loaded,
text built). The embedded Redis server is another process and is not counted.

    python bench/bench_long_suspect.py                # 1, 4, 8, 20 M; old path to 8 M
    python bench/bench_long_suspect.py --sizes 1 4 --old-max 4 --runs 1
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, publish

DATA = ROOT.parent / "shared" / "data" / "novels"
LIBRARY_FILES = ["sanguoyanyi.chapters.jsonl", "hongloumeng.chapters.jsonl"]
PIRATE = DATA / "sanguoyanyi.web-copy.txt"
NOISE = sorted((DATA / "other").glob("*.txt"))
UNWINDOWED = 10**12  # a window longer than any text: the old path

CHILD = r"""
import hashlib, json, resource, sys, time
from pathlib import Path
from tracker.plumbing.config import Settings
from tracker.library import Library
from tracker.matching.matcher import Matcher

data_dir, size, window, pirate, *noise = sys.argv[1:]
size, window = int(size), int(window)
text = Path(pirate).read_text(encoding="utf-8")
if size:
    mix = text + "".join(Path(p).read_text(encoding="utf-8") for p in noise)
    text = (mix * (size // len(mix) + 1))[:size]
settings = Settings(data_dir=Path(data_dir), max_suspect_chars=10**9)
with Library.open(settings) as lib:
    lib.matcher()  # index health, embedded Redis up: not part of the check
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    matcher = Matcher(lib.store, lib.engine(), policy=lib.policy, window_chars=window)
    start = time.perf_counter()
    result = matcher.match(text)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
summary = sorted(
    (m.mother_id, m.score, m.coverage, m.mother_coverage, [p.to_dict() for p in m.passages])
    for m in result.matches
)
print(json.dumps({
    "chars": len(text), "seconds": seconds, "peak_mb": peak / 1024, "before_mb": before / 1024,
    "matches": len(result.matches),
    "digest": hashlib.sha256(json.dumps(summary).encode()).hexdigest()[:12],
    "summary": summary if not size else None,
}))
"""


def build_library(data_dir: Path) -> None:
    from tracker.documents.readers import iter_documents
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    with Library.open(Settings(data_dir=data_dir)) as lib:
        report = lib.ingest(iter_documents([DATA / f for f in LIBRARY_FILES]))
        print(f"library: {report.ingested} works", file=sys.stderr)


def measure(data_dir: Path, size: int, window: int, timeout: float) -> dict | None:
    """One check in a fresh process; None when it did not finish within ``timeout``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", CHILD, str(data_dir), str(size), str(window), str(PIRATE)]
    try:
        out = subprocess.run(
            [*args, *map(str, NOISE)],
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as exc:
        # The old path can fail outright on a huge text (say so, go on).
        last = (exc.stderr or "").strip().splitlines()[-1:] or ["no message"]
        return {"failed": last[0][:160]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_of(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def run_sizes(
    data_dir: Path, sizes: list[float], old_max: float, runs: int, timeout: float
) -> list[str]:
    from tracker.matching.longtext import WINDOW_CHARS

    lines = [
        "| suspect | path | runs | median s | M chars/s | peak RSS MB | growth MB | matches "
        "| same matches |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in sizes:
        size = int(m * 1_000_000)
        found: dict[str, list[dict]] = {}
        for label, window in (("windowed", WINDOW_CHARS), ("old", UNWINDOWED)):
            if label == "old" and m > old_max:
                lines.append(
                    f"| {m:g} M | old | — | not run (over --old-max {old_max:g} M) | | | | | |"
                )
                continue
            rows = []
            for _ in range(runs):
                row = measure(data_dir, size, window, timeout)
                if row is None or "failed" in row:
                    why = row["failed"] if row else f"not done in {timeout:.0f} s"
                    lines.append(f"| {m:g} M | {label} | 1 | failed: {why} | | | | | |")
                    break
                rows.append(row)
                print(
                    f"{m:g} M {label}: {row['seconds']:.1f} s {row['peak_mb']:.0f} MB",
                    file=sys.stderr,
                )
            if rows:
                found[label] = rows
        for label, rows in found.items():
            same = ""
            if "old" in found and "windowed" in found:
                same = (
                    "yes" if found["old"][0]["digest"] == found["windowed"][0]["digest"] else "NO"
                )
            secs = median_of(rows, "seconds")
            speed = rows[0]["chars"] / secs / 1e6
            lines.append(
                f"| {m:g} M | {label} | {len(rows)} | {secs:.1f} | {speed:.2f} "
                f"| {median_of(rows, 'peak_mb'):.0f} "
                f"| {median_of(rows, 'peak_mb') - median_of(rows, 'before_mb'):.0f} "
                f"| {rows[0]['matches']} | {same} |"
            )
    return lines


def run_novel(data_dir: Path, runs: int, timeout: float) -> list[str]:
    from tracker.matching.longtext import WINDOW_CHARS

    rows: dict[str, list[dict]] = {}
    for label, window in (("windowed", WINDOW_CHARS), ("old", UNWINDOWED)):
        rows[label] = [r for r in (measure(data_dir, 0, window, timeout) for _ in range(runs)) if r]
    w, o = rows["windowed"][0], rows["old"][0]
    same_ids = {s[0] for s in w["summary"]} == {s[0] for s in o["summary"]}
    by_id = {s[0]: s for s in o["summary"]}
    identical = sum(1 for s in w["summary"] if by_id.get(s[0]) == s)
    w_s, w_mb = median_of(rows["windowed"], "seconds"), median_of(rows["windowed"], "peak_mb")
    o_s, o_mb = median_of(rows["old"], "seconds"), median_of(rows["old"], "peak_mb")
    lines = [
        f"Whole pirated novel: `{PIRATE.name}` ({w['chars']:,} characters, site adverts and "
        f"headers left in) against the library: windowed {w_s:.1f} s, peak RSS {w_mb:.0f} MB; "
        f"old path {o_s:.1f} s, {o_mb:.0f} MB "
        f"(medians of {runs}). Matches: {w['matches']} windowed, {o['matches']} old; same works: "
        f"{'yes' if same_ids else 'NO'}; identical (passages, offsets, coverage, score): "
        f"{identical} of {w['matches']}."
    ]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=float, nargs="+", default=[1, 4, 8, 20], help="M characters")
    ap.add_argument("--old-max", type=float, default=8, help="largest size for the old path (M)")
    ap.add_argument("--runs", type=int, default=1, help="runs per size and path (median)")
    ap.add_argument("--novel-runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per check")
    ap.add_argument("--write", action="store_true", help="write docs/BENCHMARKS.md's section")
    args = ap.parse_args()
    if not PIRATE.exists():
        sys.exit(f"needs {PIRATE} (../shared/data)")
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        build_library(data_dir)
        novel = run_novel(data_dir, args.novel_runs, args.timeout)
        table = run_sizes(data_dir, args.sizes, args.old_max, args.runs, args.timeout)
    publish("long-suspect", "bench_long_suspect.py", [*novel, "", *table], started, args.write)


if __name__ == "__main__":
    main()
