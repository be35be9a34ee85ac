"""Check time with and without the short-copy rule (issue #26), interleaved in one run.

Usage: python bench/bench_short_copies.py [--data ../shared/data] [--cases 30] [--laws 0]
       [--rounds 3]

One library (the evaluation's mothers, ``bench/eval.py``), two matchers on it: "before"
(``AlignParams(min_copied=85, formula_span=0)``, ``MatchPolicy(min_copied=85)``: the
verifier before issue #26, whose floor and sure length were both 85, without the
formula-text rule) and "after" (the defaults).
Every suspect of the evaluation (with ``--evasions``' kinds) is checked by both, in
alternating order, ``--rounds`` times; the medians per suspect and their ratio are
printed, so machine load hits both alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import machine  # noqa: E402
from eval import build_cases, build_evasion_cases, build_law_suite  # noqa: E402


def main() -> None:
    from dataclasses import replace

    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.matching.align import AlignParams
    from tracker.matching.matcher import Matcher
    from tracker.plumbing.config import SURE_COPIED, Settings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--laws", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    data = Path(args.data)
    mothers, cases = build_cases(data, args.cases)
    cases += build_evasion_cases(data, args.cases)
    if args.laws:
        suite = build_law_suite(data, args.cases, args.laws, cases)
        mothers, cases = mothers + suite.library, cases + suite.cases
    with tempfile.TemporaryDirectory() as tmp:
        lib = Library.open(Settings(data_dir=Path(tmp)))
        try:
            lib.ingest(Document(id=m["id"], title="", text=m["text"]) for m in mothers)
            after = lib.matcher()
            before = Matcher(
                lib.store,
                after.engine,
                policy=replace(after.policy, min_copied=SURE_COPIED),
                align_params=AlignParams(min_copied=SURE_COPIED, formula_span=0),
                cache=after.cache,
            )
            times: dict[str, list[float]] = {"before": [], "after": []}
            for case in cases:  # warm the cache of prepared mothers for both
                after.match(case.text)
            for r in range(args.rounds):
                for i, case in enumerate(cases):
                    order = [("before", before), ("after", after)]
                    if (i + r) % 2:
                        order.reverse()
                    for name, matcher in order:
                        t = time.perf_counter()
                        matcher.match(case.text)
                        times[name].append((time.perf_counter() - t) * 1000)
        finally:
            lib.close()
    b, a = statistics.median(times["before"]), statistics.median(times["after"])
    mb, ma = statistics.mean(times["before"]), statistics.mean(times["after"])
    print(f"{machine()}; {len(mothers)} mothers, {len(cases)} suspects x {args.rounds} rounds")
    print(f"median check ms: before {b:.2f}, after {a:.2f}, ratio {a / b:.3f}")
    print(f"mean check ms: before {mb:.2f}, after {ma:.2f}, ratio {ma / mb:.3f}")


if __name__ == "__main__":
    main()
