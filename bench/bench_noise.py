"""What the suspect read stage (tracker/text/noise.py) finds in real text, and what it costs.

Usage: python bench/bench_noise.py [--data ../shared/data] [--chunk 3000]

Every work of the shared corpus (both novels' chapters and editions, the other novels, Lu
Xun, both Wikipedia sets, the laws), cut into suspects of ``--chunk`` characters: how many
would be read without a string found at a fixed rhythm (``find_noise``) or a repeated line
(``find_lines``), which strings, and the median time of ``read_suspect`` per suspect of
700 and 3,000 characters. Real text should have next to none: what is found there is
checked with and without it (``Matcher.find``), so it costs a second check, not a copy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def corpus(data: Path) -> list[str]:
    texts: list[str] = []
    for path in sorted(data.rglob("*.jsonl")):
        for line in path.open(encoding="utf-8"):
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                texts.append(item["text"])
    texts += [p.read_text(encoding="utf-8", errors="ignore") for p in sorted(data.rglob("*.txt"))]
    return texts


def main() -> None:
    from tracker.text.noise import find_lines, find_noise, read_suspect

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--chunk", type=int, default=3000)
    args = ap.parse_args()
    texts = corpus(Path(args.data))
    chunks = [t[a : a + args.chunk] for t in texts for a in range(0, len(t), args.chunk)]
    rhythm, lines = Counter(), Counter()
    n_rhythm = n_lines = 0
    for c in chunks:
        found = find_noise(c)
        n_rhythm += bool(found)
        rhythm.update(n.text for n, _ in found)
        found = find_lines(c)
        n_lines += bool(found)
        lines.update(n.text for n, _ in found)
    print(f"{len(texts)} texts, {sum(map(len, texts)):,} characters, {len(chunks)} suspects")
    print(f"rhythm strings found in {n_rhythm} suspects: {rhythm.most_common(12)}")
    print(f"repeated lines found in {n_lines} suspects: {lines.most_common(12)}")
    for size in (700, 3000):
        sample = [t[:size] for t in texts if len(t) >= size][:2000]
        times = []
        for t in sample:
            t0 = time.perf_counter()
            read_suspect(t)
            times.append((time.perf_counter() - t0) * 1000)
        print(f"read_suspect, {size} characters: median {statistics.median(times):.3f} ms")


if __name__ == "__main__":
    main()
