"""Core benchmarks: initials, fingerprints, ingest, check latency and index memory.

Usage: python bench/bench_core.py [--data ../shared/data] [--out docs/benchmarks/core.md]

Every speed is a median of repeated runs and is quoted as a ratio against a peer
measured in the same run (pypinyin's ``lazy_pinyin``), because the machines are
shared and noisy.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import re
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import cpu_name

ROOT = Path(__file__).resolve().parents[1]


def median_time(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def load_texts(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def bench_pinyin(data: Path, out: list[str]) -> None:
    from pypinyin import Style, lazy_pinyin

    from tracker.fingerprints.daguan import Fingerprinter, FingerprintParams
    from tracker.text.pinyin import initials, initials_table

    text = "".join(d["text"] for d in load_texts(data / "novels/hongloumeng.chapters.jsonl"))
    sample = text[:200_000]
    initials_table()
    t_lazy = median_time(lambda: lazy_pinyin(sample, style=Style.FIRST_LETTER), repeat=3)
    t_ours = median_time(lambda: initials(text))
    fpr = Fingerprinter()
    t_fp = median_time(lambda: fpr.fingerprints(text))
    t_dense = median_time(lambda: fpr.fingerprints(text, stride=1))
    lazy_rate = len(sample) / t_lazy
    # Heteronyms: one fixed reading per character vs lazy_pinyin's phrase-aware choice.
    han = [c for c in sample if initials(c)]
    ours = initials("".join(han))
    joined = "".join(han)  # one string, so lazy_pinyin can use phrase context
    theirs = "".join(x[:1] for x in lazy_pinyin(joined, style=Style.FIRST_LETTER))
    agree = sum(a == b for a, b in zip(ours, theirs, strict=False)) / max(len(ours), 1)
    out += [
        "### Pinyin initials and fingerprints (红楼梦, "
        f"{len(text):,} characters; lazy_pinyin on the first {len(sample):,})",
        "",
        "| what | characters/s | vs lazy_pinyin |",
        "|---|---|---|",
        f"| `lazy_pinyin(text, style=Style.FIRST_LETTER)` | {lazy_rate / 1e6:.3f} M | 1x |",
        f"| `tracker.text.pinyin.initials` | {len(text) / t_ours / 1e6:.1f} M "
        f"| {len(text) / t_ours / lazy_rate:.0f}x |",
        f"| full fingerprinting, mother windows (stride {fpr.params.stride}) | "
        f"{len(text) / t_fp / 1e6:.1f} M | {len(text) / t_fp / lazy_rate:.0f}x |",
        f"| full fingerprinting, dense suspect pass (stride 1) | "
        f"{len(text) / t_dense / 1e6:.1f} M | {len(text) / t_dense / lazy_rate:.0f}x |",
        "",
        f"Initials agree with `lazy_pinyin` on {agree:.2%} of {len(ours):,} Han characters "
        "(the rest are heteronyms where lazy_pinyin uses phrase context).",
        "",
    ]
    # Quantile vs fixed-width normalization: how evenly fingerprints spread.
    rows = []
    for mode in ("quantile", "fixed"):
        f = Fingerprinter(FingerprintParams(mode=mode))
        v = f.fingerprints(text, stride=1).values
        _, counts = np.unique(v, return_counts=True)
        p = counts / counts.sum()
        entropy = float(-(p * np.log2(p)).sum())
        collide = float((p**2).sum())
        rows.append(f"| {mode} | {counts.size:,} | {entropy:.2f} | {collide:.2e} |")
    out += [
        "Normalization (dense windows of the same text; higher entropy and lower "
        "collision probability = fingerprints spread more evenly):",
        "",
        "| mode | distinct fingerprints | entropy (bits) | P(two windows collide) |",
        "|---|---|---|---|",
        *rows,
        "",
    ]


def corpus(data: Path) -> list[dict]:
    docs: list[dict] = []
    for rel in (
        "novels/hongloumeng.chapters.jsonl",
        "novels/sanguoyanyi.chapters.jsonl",
        "luxun/luxun_pieces.jsonl",
        "wiki/cmrc2018_paragraphs.simplified.jsonl",
        "laws/laws_national.jsonl",
        "novels/hongloumeng.trad.chapters.jsonl",
        "novels/sanguoyanyi.trad.chapters.jsonl",
        "wiki/drcd_paragraphs.traditional.jsonl",
    ):
        docs += load_texts(data / rel)
    extra = sorted((data / "novels/other").glob("*.txt")) + sorted(data.glob("novels/*.txt"))
    for p in extra:
        text = p.read_text(encoding="utf-8")
        for i in range(0, len(text), 20_000):
            docs.append({"id": f"{p.stem}-{i}", "title": p.stem, "text": text[i : i + 20_000]})
    # The shared corpus holds ~18 M characters; the 20 M point adds laws whose
    # sentences are shuffled (new text at window scale, same vocabulary).
    rng = random.Random(11)
    for d in load_texts(data / "laws/laws_national.jsonl")[:600]:
        sentences = [s for s in re.split(r"(?<=[。；])", d["text"]) if s]
        rng.shuffle(sentences)
        docs.append({"id": f"shuffled-{d['id']}", "title": "", "text": "".join(sentences)})
    return docs


def bench_library(data: Path, out: list[str]) -> None:
    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    docs = corpus(data)
    queries_src = load_texts(data / "novels/hongloumeng.trad.chapters.jsonl")
    rng = np.random.default_rng(3)
    rows = []
    for target in (1_000_000, 5_000_000, 20_000_000):
        chosen, total = [], 0
        for d in docs:
            if total >= target:
                break
            chosen.append(d)
            total += len(d["text"])
        with tempfile.TemporaryDirectory() as tmp:
            lib = Library.open(Settings(data_dir=Path(tmp)))
            try:
                mem0 = lib.redis.info("memory")["used_memory"]
                t = time.perf_counter()
                report = lib.ingest(
                    Document(id=d["id"], title=d.get("title", ""), text=d["text"]) for d in chosen
                )
                ingest_s = time.perf_counter() - t
                mem1 = lib.redis.info("memory")["used_memory"]
                stats = lib.engine().stats()
                times = []
                for _ in range(60):
                    src = queries_src[int(rng.integers(len(queries_src)))]["text"]
                    a = int(rng.integers(0, max(1, len(src) - 2000)))
                    q = src[a : a + 2000]
                    t = time.perf_counter()
                    lib.check_text(q)
                    times.append((time.perf_counter() - t) * 1000)
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                rows.append(
                    f"| {report.characters / 1e6:.1f} M | {report.ingested:,} | "
                    f"{report.characters / ingest_s / 1e6:.2f} M/s | "
                    f"{statistics.median(times):.1f} ms | "
                    f"{np.percentile(times, 95):.1f} ms | {stats['postings']:,} | "
                    f"{(mem1 - mem0) / max(stats['postings'], 1):.1f} B | "
                    f"{(mem1 - mem0) / 2**20:.1f} MiB | "
                    f"{rss:.0f} MiB |"
                )
            finally:
                lib.close()
    out += [
        "### Embedded library: ingest, check latency, index memory",
        "",
        "Suspects: 2,000-character slices of the traditional 红楼梦 chapters (so every "
        "check finds and verifies a real copy). Redis memory is `used_memory` before and "
        "after ingest, divided by the postings the index holds.",
        "",
        "| library | mothers | ingest | check median | check p95 | postings | Redis bytes/posting "
        "| Redis index | peak RSS (bench process) |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    data = Path(args.data)
    out = [
        f"## Core benchmarks ({datetime.date.today().isoformat()}, {cpu_name()}, "
        f"{platform.python_implementation()} {platform.python_version()}, one process)",
        "",
    ]
    # The library part first: each part is independent, and a fresh process state
    # keeps the embedded server start-up out of the pinyin timings.
    lib_part: list[str] = []
    bench_library(data, lib_part)
    bench_pinyin(data, out)
    out += lib_part
    text = "\n".join(out)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
