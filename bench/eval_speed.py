"""Check time with and without the work of issue #39, interleaved in one run.

Usage: python bench/eval_speed.py [--data ../shared/data] [--cases 20] [--laws 0]
       [--rounds 2] [--after OPTION=VALUE ...] [--only-regions] [--stdlib-difflib]

One library (the evaluation's mothers with ``--evasions`` and ``--reprints``' kinds,
``bench/eval.py``), two matchers on it sharing one cache of prepared mothers: "before"
(``AlignParams.reprint_runs`` = 0 and ``long_fine`` = 0, and no regions built:
``tracker.matching.matcher.regions`` replaced by a function returning none while it checks)
and "after" (the defaults).
``--only-regions``: "before" is the defaults too, without regions (what building them
costs on its own).
``--stdlib-difflib``: both also with the standard library's difflib reading passages
instead of the compiled one (``cydifflib``, ``tracker.matching.align_passages``), four
matchers in turn on every suspect, each first in turn.
Every suspect is checked by both, in alternating order (A B, then B A), ``--rounds``
times; medians and means per matcher and their ratios are printed, of the CPU time of
the process (``time.process_time``: what other jobs on a loaded machine take is not
counted) and of the wall time, so machine load hits both alike.
"""

from __future__ import annotations

import argparse
import difflib
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import machine  # noqa: E402
from eval import (  # noqa: E402
    Case,
    build_cases,
    build_evasion_cases,
    build_law_suite,
    load_jsonl,
)
from eval_reprints import build_reprint_cases  # noqa: E402


def main() -> None:
    from dataclasses import replace

    import tracker.matching.align_passages as passages
    import tracker.matching.matcher as matching
    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.matching.matcher import Matcher
    from tracker.plumbing.config import Settings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--laws", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--after",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="an AlignParams value of the after matcher (repeatable): attribute the cost",
    )
    ap.add_argument(
        "--stdlib-difflib",
        action="store_true",
        help="also check every suspect with both matchers reading with the standard "
        "library's difflib (before-stdlib, after-stdlib) instead of the compiled one",
    )
    ap.add_argument(
        "--only-regions",
        action="store_true",
        help="before = the defaults without regions: the cost of building regions alone",
    )
    args = ap.parse_args()
    data = Path(args.data)
    mothers, cases = build_cases(data, args.cases)
    cases += build_evasion_cases(data, args.cases)
    chapters = load_jsonl(data / "novels/hongloumeng.chapters.jsonl")
    chapters += load_jsonl(data / "novels/sanguoyanyi.chapters.jsonl")
    host = "".join(
        p.read_text(encoding="utf-8") for p in sorted((data / "novels/other").glob("*.txt"))
    )
    more, reprints = build_reprint_cases(data, args.cases, chapters, host, load_jsonl, Case)
    mothers, cases = mothers + more, cases + reprints
    if args.laws:
        suite = build_law_suite(data, args.cases, args.laws, cases)
        mothers, cases = mothers + suite.library, cases + suite.cases
    built, compiled = matching.regions, passages.SequenceMatcher
    with tempfile.TemporaryDirectory() as tmp:
        lib = Library.open(Settings(data_dir=Path(tmp)))
        try:
            lib.ingest(Document(id=m["id"], title="", text=m["text"]) for m in mothers)
            after = lib.matcher()
            if args.after:
                changes = {k: float(v) for k, v in (x.split("=", 1) for x in args.after)}
                after.align_params = replace(after.align_params, **changes)
            before = Matcher(
                lib.store,
                after.engine,
                policy=after.policy,
                align_params=(
                    after.align_params
                    if args.only_regions
                    else replace(after.align_params, reprint_runs=0, long_fine=0)
                ),
                cache=after.cache,
            )
            # (name, matcher, builds regions, difflib's SequenceMatcher used)
            runs: list[tuple[str, Matcher, bool, type]] = [
                ("before", before, False, compiled),
                ("after", after, True, compiled),
            ]
            if args.stdlib_difflib:
                runs += [
                    ("before-stdlib", before, False, difflib.SequenceMatcher),
                    ("after-stdlib", after, True, difflib.SequenceMatcher),
                ]
            times: dict[str, list[float]] = {name: [] for name, *_ in runs}
            cpu: dict[str, list[float]] = {name: [] for name, *_ in runs}
            for case in cases:  # warm the cache of prepared mothers for both
                after.match(case.text)
            for r in range(args.rounds):
                for i, case in enumerate(cases):
                    # A B / B A (with four: each in each place in turn)
                    at = (i + r) % len(runs)
                    order = runs[at:] + runs[:at] if len(runs) > 2 else runs[:: 1 - 2 * at]
                    for name, matcher, with_regions, reader in order:
                        matching.regions = built if with_regions else _none
                        passages.SequenceMatcher = reader
                        c, t = time.process_time(), time.perf_counter()
                        matcher.match(case.text)
                        times[name].append((time.perf_counter() - t) * 1000)
                        cpu[name].append((time.process_time() - c) * 1000)
        finally:
            matching.regions = built
            passages.SequenceMatcher = compiled
            lib.close()
    print(f"{machine()}; {len(mothers)} mothers, {len(cases)} suspects x {args.rounds} rounds")
    pairs = [("after", "before")]
    if args.stdlib_difflib:
        pairs += [("after-stdlib", "before-stdlib"), ("after", "after-stdlib")]
        pairs += [("before", "before-stdlib"), ("after", "before-stdlib")]
    for label, got in (("CPU", cpu), ("wall", times)):
        for a_name, b_name in pairs:
            b, a = statistics.median(got[b_name]), statistics.median(got[a_name])
            mb, ma = statistics.mean(got[b_name]), statistics.mean(got[a_name])
            print(f"{label} median check ms: {b_name} {b:.2f}, {a_name} {a:.2f}, ratio {a / b:.3f}")
            print(
                f"{label} mean check ms: {b_name} {mb:.2f}, {a_name} {ma:.2f}, ratio {ma / mb:.3f}"
            )


def _none(*_args: object, **_kwargs: object) -> list[object]:
    return []


if __name__ == "__main__":
    main()
