"""English beside Chinese (issue 40): check time per character of a 10 M-character
suspect of each script, and the reading step (``tracker.text.units``) alone.

One library holds both: the chapters of 三国演义 (``../shared/data/novels``) and the English
texts given (default: the excerpt of *The Time Machine* in tests/data/english, plus any
``--english`` files). Each suspect is built the same way: text the library holds (the
pirate web copy of 三国演义; the English library texts) followed by text it does not hold
(three other Chinese novels; the English ``--host`` files, default the *Treasure Island*
excerpt of tests/data/english), repeated up to ``--size`` characters, so every part of it
holds copies and unrelated text. Each check runs in a fresh process, in turns (zh, en,
zh, en ...), ``--runs`` times; the CPU seconds of the check (``time.process_time``) are
reported as medians, per million characters, and the English/Chinese ratio pair by pair.

    python bench/bench_english_speed.py                 # 10 M characters, 3 runs
    python bench/bench_english_speed.py --size 1 --runs 1 --english more.txt
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

TESTS = ROOT / "tests" / "data" / "english"

CHILD = r"""
import json, sys, time
from pathlib import Path
from tracker.plumbing.config import Settings
from tracker.library import Library
from tracker.matching.matcher import Matcher
from tracker.text.units import read_units

data_dir, size, *parts = sys.argv[1:]
size = int(size)
mix = "".join(Path(p).read_text(encoding="utf-8") for p in parts)
text = (mix * (size // len(mix) + 1))[:size]
settings = Settings(data_dir=Path(data_dir), max_suspect_chars=10**9)
with Library.open(settings) as lib:
    lib.matcher()  # index health, embedded Redis up: not part of the check
    matcher = Matcher(lib.store, lib.engine(), policy=lib.policy)
    read_units("warm up")  # the tables, built once a process
    t0 = time.process_time()
    units = read_units(text)
    read_cpu = time.process_time() - t0
    t0, w0 = time.process_time(), time.perf_counter()
    result = matcher.match(text)
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
print(json.dumps({"chars": len(text), "units": len(units), "words": units.words,
                  "read_cpu": read_cpu, "cpu": cpu, "wall": wall,
                  "matches": len(result.matches)}))
"""


def build_library(data_dir: Path, zh_library: Path, english: list[Path]) -> None:
    from tracker.documents.readers import Document, iter_documents
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    with Library.open(Settings(data_dir=data_dir)) as lib:
        report = lib.ingest(iter_documents([zh_library]))
        docs = [
            Document(id=f"en-{i}", title=p.stem, text=p.read_text(encoding="utf-8"))
            for i, p in enumerate(english)
        ]
        report2 = lib.ingest(docs)
        print(f"library: {report.ingested} + {report2.ingested} works", file=sys.stderr)


def measure(data_dir: Path, size: int, parts: list[Path], timeout: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(data_dir), str(size), *map(str, parts)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--size", type=float, default=10.0, help="suspect size, M characters")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--english", type=Path, nargs="*", default=[], help="more library texts")
    ap.add_argument("--host", type=Path, nargs="*", default=[TESTS / "treasure_island_ch1_2.md"])
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--write", action="store_true", help="write docs/BENCHMARKS.md")
    args = ap.parse_args()
    started = time.time()
    english = [TESTS / "time_machine_ch2_3.txt", *args.english]
    novels = args.data / "novels"
    zh_copy, zh_host = novels / "sanguoyanyi.web-copy.txt", sorted((novels / "other").glob("*.txt"))
    size = int(args.size * 1_000_000)
    rows: dict[str, list[dict]] = {"zh": [], "en": []}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        build_library(data_dir, novels / "sanguoyanyi.chapters.jsonl", english)
        for _ in range(args.runs):
            rows["zh"].append(measure(data_dir, size, [zh_copy, *zh_host], args.timeout))
            rows["en"].append(measure(data_dir, size, [*english, *args.host], args.timeout))
    lines = [
        "| suspect | runs | units | check CPU s (median) | CPU s per M chars | wall s "
        "| reading CPU s | matches |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for lang in ("zh", "en"):
        r = rows[lang]
        cpu = statistics.median(x["cpu"] for x in r)
        lines.append(
            f"| {lang}, {r[0]['chars'] / 1e6:.1f} M chars | {len(r)} | {r[0]['units']:,} "
            f"| {cpu:.2f} | {cpu / (r[0]['chars'] / 1e6):.3f} "
            f"| {statistics.median(x['wall'] for x in r):.2f} "
            f"| {statistics.median(x['read_cpu'] for x in r):.2f} | {r[0]['matches']} |"
        )
    ratios = [e["cpu"] / z["cpu"] for z, e in zip(rows["zh"], rows["en"], strict=True)]
    lines += [
        "",
        f"English/Chinese check CPU per character, pair by pair: median "
        f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}); "
        "the target is at most 2.",
    ]
    publish("English check speed", "bench_english_speed.py", lines, started, args.write)


if __name__ == "__main__":
    main()
