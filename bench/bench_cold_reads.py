"""Cold reads of candidates' texts: ``SqliteStore.get_mothers_by_seq`` with the store's
pages out of the page cache, its candidates read one after another on one connection
(the code before, ``_mothers_by_seq``) against side by side (``get_mothers_by_seq``).

At 1 B characters a check's candidates are random mothers of a 4 GB store: each text
is a cold read, ~15 pages of 4 KB that SQLite walks one after another (issue #28). This
bench builds a store through ``SqliteStore`` (works of 20,000 characters of real text and
a fingerprint blob beside each, as an ingest leaves them), then per round evicts the
store's pages (``posix_fadvise(DONTNEED)``: no root needed) and reads ``--calls`` sets
of ``--candidates`` random mothers each way, the ways alternating.

Two layouts not built are measured beside them, as the next step's evidence: the texts
compressed (zlib level 1) in a table of their own keyed by seq, and the texts in a file
of their own (one ``pread`` a text, after ``posix_fadvise(WILLNEED)`` for all of a call's
texts so that their reads wait on the disk together).

    python bench/bench_cold_reads.py                  # 20,000 works (~1.7 GB), 5 candidates
    python bench/bench_cold_reads.py --works 50000 --keep /tmp/cold  # the 1 B store's size
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import ROOT, evict, machine, write_section
from tracker.common.records import Mother
from tracker.store.sqlite import MOTHER_READERS, SqliteStore

HERE = Path(__file__).resolve().parents[1]
WORK_CHARS = 20_000
FINGERPRINT_BYTES = 24_000  # ~what an ingest stores beside a 20,000-character work


def corpus_text() -> str:
    """Real Chinese text to cut works from (``../shared/data``), else generated."""
    for data in (HERE.parent / "shared" / "data", HERE.parents[1] / "shared" / "data"):
        files = sorted((data / "novels").rglob("*.txt"))[:5]
        if files:
            return "".join(f.read_text(encoding="utf-8", errors="ignore") for f in files)
    rng = random.Random(3)
    return "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(2_000_000))


def build(path: Path, works: int) -> SqliteStore:
    """The store (and the two layouts not built beside it: ``texts_z`` in the same file,
    ``texts.bin`` with its offsets in ``texts.idx``)."""
    corpus = corpus_text()
    rng = random.Random(1)
    store = SqliteStore(path)
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("CREATE TABLE texts_z (seq INTEGER PRIMARY KEY, z BLOB NOT NULL)")
    batch: list[tuple[Mother, dict[str, bytes]]] = []
    offsets: list[str] = []
    with (path.parent / "texts.bin").open("wb") as pack:

        def flush() -> None:
            raw.execute("BEGIN")
            for saved, _ in store.replace_mothers(batch):
                data = saved.text.encode()
                raw.execute(
                    "INSERT INTO texts_z VALUES (?, ?)", (saved.seq, zlib.compress(data, 1))
                )
                offsets.append(f"{saved.seq} {pack.tell()} {len(data)}")
                pack.write(data)
            raw.execute("COMMIT")
            batch.clear()

        for i in range(works):
            start = rng.randrange(0, len(corpus) - WORK_CHARS)
            text = corpus[start : start + WORK_CHARS]
            mother = Mother(id=f"w{i:08d}", title=f"work {i}", text=text)
            batch.append((mother, {"daguan": rng.randbytes(FINGERPRINT_BYTES)}))
            if len(batch) == 200:
                flush()
        if batch:
            flush()
    raw.close()
    (path.parent / "texts.idx").write_text("\n".join(offsets))
    return store


class OtherLayouts:
    """Reads of the two layouts not built (see the module's docstring)."""

    def __init__(self, folder: Path) -> None:
        self.db = sqlite3.connect(folder / "store.db", check_same_thread=False)
        self.fd = os.open(folder / "texts.bin", os.O_RDONLY)
        self.at: dict[int, tuple[int, int]] = {}
        for line in (folder / "texts.idx").read_text().split("\n"):
            seq, offset, size = map(int, line.split())
            self.at[seq] = (offset, size)

    def compressed(self, seqs: list[int]) -> dict[int, str]:
        out = {}
        for seq in seqs:
            (z,) = self.db.execute("SELECT z FROM texts_z WHERE seq = ?", (seq,)).fetchone()
            out[seq] = zlib.decompress(z).decode()
        return out

    def own_file(self, seqs: list[int]) -> dict[int, str]:
        for seq in seqs:
            offset, size = self.at[seq]
            os.posix_fadvise(self.fd, offset, size, os.POSIX_FADV_WILLNEED)
        return {seq: os.pread(self.fd, self.at[seq][1], self.at[seq][0]).decode() for seq in seqs}

    def close(self) -> None:
        self.db.close()
        os.close(self.fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--works", type=int, default=20_000)
    ap.add_argument("--candidates", type=int, default=5, help="mothers read per call")
    ap.add_argument("--calls", type=int, default=40, help="calls per round and way")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", type=Path, default=None, help="store folder to keep / reuse")
    ap.add_argument("--no-write", action="store_true", help="print, do not update BENCHMARKS.md")
    args = ap.parse_args()

    folder = args.keep or Path(tempfile.mkdtemp(prefix="yinji-cold-"))
    path = folder / "store.db"
    try:
        if path.exists():
            store = SqliteStore(path)
        else:
            folder.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            store = build(path, args.works)
            print(f"built {args.works:,} works in {time.perf_counter() - t0:.0f} s")
        top = store.last_seq()
        size = path.stat().st_size
        other = OtherLayouts(folder)
        ways: dict[str, Callable[[list[int]], object]] = {
            "one connection": store._mothers_by_seq,  # the code before
            f"side by side ({MOTHER_READERS} readers)": store.get_mothers_by_seq,
            "not built: compressed, a table of their own": other.compressed,
            "not built: a file of their own, WILLNEED + pread": other.own_file,
        }
        rng = random.Random(7)
        took: dict[str, list[float]] = {name: [] for name in ways}
        rounds: dict[str, list[float]] = {name: [] for name in ways}
        for r in range(args.rounds):
            order = list(ways) if r % 2 == 0 else list(reversed(ways))  # drift hits all
            for name in order:
                calls = [
                    sorted(rng.sample(range(1, top + 1), args.candidates))
                    for _ in range(args.calls)
                ]
                evict([path, Path(f"{path}-wal"), path.parent / "texts.bin"])
                ms = []
                for seqs in calls:
                    t = time.perf_counter()
                    got = ways[name](seqs)
                    ms.append((time.perf_counter() - t) * 1000)
                    assert len(got) == len(seqs)  # type: ignore[arg-type]
                took[name] += ms
                rounds[name].append(statistics.median(ms))
                print(f"round {r} {name}: median {statistics.median(ms):.2f} ms a call")
        store.close()
        other.close()
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)

    def p(values: list[float], q: float) -> float:
        return sorted(values)[min(len(values) - 1, int(q / 100 * len(values)))]

    base = statistics.median(took["one connection"])
    rows = [
        "| way | median ms a call | p90 | medians of the rounds | vs one connection |",
        "|---|---|---|---|---|",
    ]
    for name, ms in took.items():
        rows.append(
            f"| {name} | {statistics.median(ms):.2f} | {p(ms, 90):.2f} | "
            + ", ".join(f"{x:.2f}" for x in rounds[name])
            + f" | {base / statistics.median(ms):.2f}x |"
        )
    body = (
        "## Cold reads of candidates' texts (issue #28)\n\n"
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {machine()}. "
        f"`python bench/bench_cold_reads.py --works {args.works}`: a store of "
        f"{args.works:,} works of {WORK_CHARS:,} characters ({size / 2**30:.1f} GB), "
        f"its pages evicted before each of {args.rounds} rounds; per round and way "
        f"{args.calls} calls of `get_mothers_by_seq` for {args.candidates} random mothers, "
        "the ways alternating.\n\n" + "\n".join(rows)
    )
    print(body)
    if not args.no_write:
        write_section("cold-reads", body, ROOT / "docs" / "BENCHMARKS.md")


if __name__ == "__main__":
    main()
