"""What the evidence log's self-check costs (issue #24): ``check_consistency`` runs before
every tree head is signed or handed out (``yinji evidence head``, ``stamp``, ``export``,
the scheduled head). Measured on a sqlite log of ``--records`` records with a signed
head every ``--every`` records, beside the baseline of the same run: what ``tree_head``
read before (the log's size and the latest head), a full ``audit()``, and one export
(which also verifies the bundle before writing it).

    python bench/bench_evidence.py [--records 20000] [--every 100] [--runs 7] [--write]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import publish

from tracker.evidence import EvidenceLog, EvidenceSettings, SigningKey, export_bundle


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--write", action="store_true", help="write docs/BENCHMARKS.md")
    args = ap.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        log = EvidenceLog.open(tmp, key=SigningKey.generate(), evidence=EvidenceSettings())
        for i in range(args.records):
            log.record_case_state(suspect_id=f"s{i % 500}", state="notice_sent")
            if (i + 1) % args.every == 0:
                log.tree_head()
        heads = len(log.heads())
        base = median_ms(lambda: (log.size, log.backend.latest_head()), args.runs)
        check = median_ms(log.check_consistency, args.runs)
        head = median_ms(log.tree_head, args.runs)
        audit = median_ms(log.audit, max(1, args.runs // 3))
        export = median_ms(
            lambda: export_bundle(log, io.BytesIO(), suspect_id="s7"), max(1, args.runs // 2)
        )
        log.close()
    parts = [
        f"Evidence log self-check: {args.records:,} records, {heads} signed heads (sqlite); "
        f"medians of {args.runs} runs.",
        "",
        "| step | median ms | × baseline |",
        "|---|---:|---:|",
        f"| baseline: size + latest head (tree_head before #24) | {base:.2f} | 1 |",
        f"| check_consistency (every head's size, root, signature) | {check:.1f} | "
        f"{check / base:.0f} |",
        f"| tree_head, nothing new to sign (check + latest head) | {head:.1f} | "
        f"{head / base:.0f} |",
        f"| audit() (the daily full recomputation) | {audit:.0f} | {audit / base:.0f} |",
        f"| export of one suspect ({args.records // 500} records, verified before writing) | "
        f"{export:.0f} | {export / base:.0f} |",
    ]
    publish("evidence-selfcheck", "bench_evidence.py", parts, started, args.write)


if __name__ == "__main__":
    main()
