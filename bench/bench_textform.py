"""Display order of bidi overrides (issue 25): ``tracker.text.textform.reading_order``
(python-bidi, the full UAX #9) against a minimal own resolver (reverse each U+202E ...
U+202C run, nothing else), on the same texts in one run: speed (median of 5) and what
each gets right.

    python bench/bench_textform.py [--chars 1000000] [--write]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from _common import publish
from textgen import work

from tracker.text.textform import reading_order

_RUN = re.compile("\u202e([^\u202c\n]*)\u202c?")


def minimal(text: str) -> str:
    """The own resolver considered: each RLO run reversed, the controls dropped."""
    return _RUN.sub(lambda m: m.group(1)[::-1], text)


def median_seconds(fn, text: str, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chars", type=int, default=1_000_000)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    started = time.time()
    plain = work(1, args.chars // 30)[: args.chars]
    lines = [plain[i : i + 100] for i in range(0, len(plain), 100)]
    # every line: 60 characters shown reversed by an override, as a pirate page stores them
    reversed_lines = "\n".join(f"{ln[:40]}\u202e{ln[40:][::-1]}\u202c" for ln in lines)
    rows = []
    for name, text in (("no controls", plain), ("an override per line", reversed_lines)):
        a = median_seconds(reading_order, text)
        b = median_seconds(minimal, text)
        rows.append(
            f"| {name} | {len(text):,} | {a * 1000:.1f} ms ({len(text) / a / 1e6:.1f} M/s) | "
            f"{b * 1000:.1f} ms ({len(text) / b / 1e6:.1f} M/s) | {a / b:.1f} |"
        )
    cases = {
        "RLO run": ("前\u202e" + "甲乙丙"[::-1] + "\u202c后", "前甲乙丙后"),
        "nested LRO in RLO": ("\u202e丙\u202dab\u202c乙\u202c", "乙ab丙"),
        "RLE embedding (Han stays LTR)": ("\u202b甲乙\u202c", "甲乙"),
    }
    right = []
    for name, (text, shown) in cases.items():
        ours, own = reading_order(text), minimal(text)
        right.append(
            f"| {name} | {'yes' if ours == shown else 'no: ' + ours} | "
            f"{'yes' if own == shown else 'no: ' + own} |"
        )
    parts = [
        "| text | characters | python-bidi (reading_order) | minimal resolver | ratio |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "| case | python-bidi right | minimal right |",
        "|---|---|---|",
        *right,
    ]
    publish("Display order", "bench_textform.py", parts, started, args.write)


if __name__ == "__main__":
    main()
