"""What a copy's slow checks wait on (issue #37): the checks of a kept ``bench_scale.py
--default-path --keep DIR`` library, each split into where its time went.

    python bench/bench_tail.py DIR [--rounds 3] [--code CHECKOUT]

Opens ``DIR/default-path/data`` as a check does (``Library.open``), warms it with ten
checks, then runs every planted case of ``DIR/default-path/cases.json`` (the late ones
too when the run added them) ``--rounds`` times, in process, nothing saved, timing for
each check: the garbage collector's pauses (``gc.callbacks``), the snapshot lookups
(``SnapshotFolder.lookup``), Redis round trips (``redis`` client ``execute_command`` and
pipelines), the candidates' texts (``get_mothers_by_seq``) and the rest (fingerprints,
alignment). Also per check: CPU seconds of this process (``time.process_time``: the
reader threads too; the Redis server's are not counted) and of the calling thread
(``time.thread_time``), and its work: candidates verified, mothers prepared for alignment
(``tracker.matching.align.prepare`` calls that missed the cache, and their characters) and
alignments made (``align_prepared`` calls, and the initials of both sides). Prints p50 /
p90 / p99 / max of the copies (wall and CPU), the phases' share of the slowest 1 %, the
work per kind, and the worst checks one by one.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

if "--code" in sys.argv:
    CODE = Path(sys.argv[sys.argv.index("--code") + 1]).resolve()
    sys.path.insert(0, str(CODE))
else:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PHASES = ("gc", "snapshot", "redis", "texts")
WORK = ("prepared", "prepared_chars", "aligned", "aligned_initials")


@dataclass
class Clock:
    """Seconds per phase of the current check (nested phases are not double counted:
    only the outermost timed call of each phase counts)."""

    spent: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    depth: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PHASES, 0))
    gc_started: float = 0.0
    gc_collections: list[int] = field(default_factory=lambda: [0, 0, 0])
    work: dict[str, int] = field(default_factory=lambda: dict.fromkeys(WORK, 0))

    def reset(self) -> None:
        self.spent = dict.fromkeys(PHASES, 0.0)
        self.gc_collections = [0, 0, 0]
        self.work = dict.fromkeys(WORK, 0)


CLOCK = Clock()


def _timed(phase: str, fn):  # type: ignore[no-untyped-def]
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        if CLOCK.depth[phase]:
            return fn(*args, **kwargs)
        CLOCK.depth[phase] += 1
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            CLOCK.spent[phase] += time.perf_counter() - t
            CLOCK.depth[phase] -= 1

    return wrapper


def _on_gc(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        CLOCK.gc_started = time.perf_counter()
    else:
        CLOCK.spent["gc"] += time.perf_counter() - CLOCK.gc_started
        CLOCK.gc_collections[info["generation"]] += 1


def instrument() -> None:
    import redis.client

    from tracker.indexes.snapshot import SnapshotFolder
    from tracker.store.sqlite import SqliteStore

    SnapshotFolder.lookup = _timed("snapshot", SnapshotFolder.lookup)  # type: ignore[method-assign]
    redis.client.Redis.execute_command = _timed("redis", redis.client.Redis.execute_command)  # type: ignore[method-assign]
    redis.client.Pipeline.execute = _timed("redis", redis.client.Pipeline.execute)  # type: ignore[method-assign]
    SqliteStore.get_mothers_by_seq = _timed("texts", SqliteStore.get_mothers_by_seq)  # type: ignore[method-assign]
    gc.callbacks.append(_on_gc)
    import tracker.matching.matcher as matching

    real_prepare, real_align = matching.prepare, matching.align_prepared

    def prepare(text, k, *args, **kwargs):  # type: ignore[no-untyped-def]
        CLOCK.work["prepared"] += 1
        CLOCK.work["prepared_chars"] += len(text)
        return real_prepare(text, k, *args, **kwargs)

    def align_prepared(suspect, mother, *args, **kwargs):  # type: ignore[no-untyped-def]
        CLOCK.work["aligned"] += 1
        CLOCK.work["aligned_initials"] += int(suspect.n) + int(mother.n)
        return real_align(suspect, mother, *args, **kwargs)

    matching.prepare = prepare  # the suspect's (one a check) and the cache's misses
    matching.align_prepared = align_prepared


def pct(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(values, q)) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path, help="a bench_scale.py --keep folder")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--code", type=Path, default=None, help="the checkout whose tracker runs")
    ap.add_argument("--json", type=Path, default=None, help="write the per-check rows here")
    args = ap.parse_args()
    folder = args.dir / "default-path"
    saved = json.loads((folder / "cases.json").read_text())
    added = any((folder / "src").glob("xworks-*.jsonl"))
    cases = saved["cases"] + (saved["late"] if added else [])
    import tracker
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    instrument()
    lib = Library.open(replace(Settings.from_env(), data_dir=folder / "data"))
    rows: list[dict[str, object]] = []
    try:
        for case in cases[:10]:
            lib.check_text(case["text"])
        for r in range(args.rounds):
            for i, case in enumerate(cases):
                CLOCK.reset()
                cpu, own = time.process_time(), time.thread_time()
                t = time.perf_counter()
                result = lib.check_text(case["text"])
                ms = (time.perf_counter() - t) * 1000
                cpu_ms = (time.process_time() - cpu) * 1000
                thread_ms = (time.thread_time() - own) * 1000
                rows.append(
                    {
                        "round": r,
                        "case": i,
                        "kind": case["kind"],
                        "ms": ms,
                        "cpu_ms": cpu_ms,
                        "thread_ms": thread_ms,
                        "candidates": result.candidates,
                        "matches": sorted(m.mother_id for m in result.matches),
                        **CLOCK.work,
                        "gc_collections": list(CLOCK.gc_collections),
                        **{p: CLOCK.spent[p] * 1000 for p in PHASES},
                    }
                )
    finally:
        lib.close()
    copies = [r for r in rows if r["kind"] != "negative"]
    ms = [float(r["ms"]) for r in copies]  # type: ignore[arg-type]
    print(f"code: {tracker.__file__}; pid {os.getpid()}; {len(rows)} checks, {len(copies)} copies")
    print(
        "copies p50 / p90 / p99 / max: "
        + " / ".join(f"{pct(ms, q):.1f}" for q in (50, 90, 99))
        + f" / {max(ms):.1f} ms"
    )
    cpu = [float(r["cpu_ms"]) for r in copies]  # type: ignore[arg-type]
    print(
        "copies CPU ms (process) p50 / p90 / p99 / max: "
        + " / ".join(f"{pct(cpu, q):.1f}" for q in (50, 90, 99))
        + f" / {max(cpu):.1f}"
    )
    print("per kind: wall p50 | CPU p50 / p99 | candidates | prepared (chars) | aligned (initials)")
    for kind in sorted({str(r["kind"]) for r in rows}):
        mine = [r for r in rows if r["kind"] == kind]

        def mean(key: str, mine: list[dict[str, object]] = mine) -> float:
            return sum(float(r[key]) for r in mine) / len(mine)  # type: ignore[arg-type]

        k_cpu = [float(r["cpu_ms"]) for r in mine]  # type: ignore[arg-type]
        print(
            f"  {kind:<10} {pct([float(r['ms']) for r in mine], 50):6.1f} ms | "  # type: ignore[arg-type]
            f"{pct(k_cpu, 50):5.1f} / {pct(k_cpu, 99):5.1f} ms | {mean('candidates'):.2f} | "
            f"{mean('prepared'):.2f} ({mean('prepared_chars'):,.0f}) | "
            f"{mean('aligned'):.2f} ({mean('aligned_initials'):,.0f})"
        )
    cut = pct(ms, 99)
    slow = [r for r in copies if float(r["ms"]) >= cut]  # type: ignore[arg-type]
    total = sum(float(r["ms"]) for r in slow)  # type: ignore[arg-type]
    shares = {p: sum(float(r[p]) for r in slow) / total for p in PHASES}  # type: ignore[arg-type]
    print(
        f"the slowest 1 % ({len(slow)} checks, ≥ {cut:.1f} ms): "
        + ", ".join(f"{p} {s:.0%}" for p, s in shares.items())
    )
    gen2 = sum(1 for r in copies if r["gc_collections"][2])  # type: ignore[index]
    print(f"checks with a full (generation 2) collection: {gen2} of {len(copies)}")
    print("worst checks: ms | cpu ms | kind | candidates | gc | snapshot | redis | texts | gc gens")
    for r in sorted(rows, key=lambda r: -float(r["ms"]))[:12]:  # type: ignore[arg-type]
        print(
            f"  {float(r['ms']):7.1f} | {float(r['cpu_ms']):6.1f} | {r['kind']:<10} | "  # type: ignore[arg-type]
            f"{r['candidates']:>3} | "
            + " | ".join(f"{float(r[p]):6.1f}" for p in PHASES)  # type: ignore[arg-type]
            + f" | {r['gc_collections']}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows))


if __name__ == "__main__":
    main()
