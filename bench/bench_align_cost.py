"""Verification cost (issue #28): the candidates of planted suspects aligned by this
checkout's ``tracker.matching.align`` and by another checkout's (``--base DIR``, e.g. main before
the change), in one process, alternating, on the same prepared inputs; the answers must
be identical (every passage of every alignment compared).

    python bench/bench_align_cost.py --library DATA_DIR --works WORKS.jsonl --base /tmp/base

``DATA_DIR``: a library (``yinji --data-dir``) holding the works of ``WORKS.jsonl``;
suspects are 2,000-character slices of those works, every third with 5 % of its
characters replaced.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def load_align(path: Path, name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", type=Path, required=True)
    ap.add_argument("--works", type=Path, required=True)
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--cases", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    from tracker.library import Library
    from tracker.matching import align as new
    from tracker.plumbing.config import Settings

    old = load_align(args.base / "tracker" / "align.py", "align_base")
    texts = [json.loads(line)["text"] for line in args.works.open(encoding="utf-8")]
    rng = random.Random(3)
    cases = []
    for i in range(args.cases):
        t = rng.choice(texts)
        s = rng.randrange(0, len(t) - 2000)
        c = t[s : s + 2000]
        if i % 3 == 1:
            c = "".join(ch if rng.random() > 0.05 else "的" for ch in c)
        cases.append(c)
    lib = Library.open(replace(Settings.from_env(), data_dir=args.library))
    try:
        matcher = lib.checks.matcher()
        work = []  # (suspect text, [(candidate, mother text)])
        for text in cases:
            cands = matcher.candidates(text)
            mothers = lib.store.get_mothers_by_seq(c.seq for c in cands)
            work.append((text, [(c, mothers[c.seq].text) for c in cands if c.seq in mothers]))
        p = matcher.align_params
        window = matcher.engine.window
        times: dict[str, list[float]] = {"base": [], "new": []}
        answers: dict[str, list[object]] = {}
        for r in range(args.rounds):
            for label, mod in (
                (("base", old), ("new", new))
                if r % 2 == 0
                else (
                    ("new", new),
                    ("base", old),
                )
            ):
                out = []
                # Mothers prepared outside the timing, not indexed: met for the first
                # time (a big library seldom meets a mother twice in the matcher's cache).
                prepared = [[mod.prepare(m, p.k) for _, m in cs] for _, cs in work]
                t0 = time.perf_counter()
                for (text, cs), pms in zip(work, prepared, strict=True):
                    suspect = mod.prepare(text, p.k)
                    for (cand, _), pm in zip(cs, pms, strict=True):
                        a = mod.align_prepared(
                            suspect,
                            pm,
                            p,
                            evidence=cand.evidence,
                            common=cand.common,
                            evidence_window=window,
                        )
                        out.append([asdict(x) for x in a.passages])
                times[label].append((time.perf_counter() - t0) * 1000 / len(work))
                answers[label] = out
        same = json.dumps(answers["base"], default=str) == json.dumps(answers["new"], default=str)
        pairs = sum(len(cs) for _, cs in work)
        print(
            f"{len(work)} suspects, {pairs} candidates ({pairs / len(work):.1f} a suspect); "
            f"verify ms a suspect, median of {args.rounds}: base "
            f"{np.median(times['base']):.2f}, new {np.median(times['new']):.2f} "
            f"(ratio {np.median(times['new']) / np.median(times['base']):.2f}); "
            f"answers identical: {same}"
        )
    finally:
        lib.close()


if __name__ == "__main__":
    main()
