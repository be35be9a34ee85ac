"""Scale benchmark: libraries of 10 M, 100 M and 1 B characters on the embedded default.

For each size it

1. samples a library of unrelated works from a character bigram model trained on
   ``../shared/data`` (realistic character, hence pinyin-initial, statistics; many
   Markov chains sampled side by side with numpy, ~10 M chars/s), written as .jsonl
   files of ~8 M characters each;
2. runs ``yinji --data-dir D ingest FILES`` as a user would (its defaults), timed, with
   the peak RSS of the CLI process;
3. reads index size from the embedded Redis (``used_memory`` minus the empty server's)
   and the postings count from ``index stats``; the data folder's bytes;
4. checks planted 2,000-character suspects in-process (``Library.check_text``, nothing
   saved): copies of library works (verbatim, an excerpt inside fresh text, homophones,
   5 % random edits) and negatives (fresh text from the same model), and reports
   latency p50/p90/p99, recall (the planted mother among the matches) and negatives
   flagged;
5. takes a snapshot of the index (``yinji index snapshot``: seconds, size) and checks
   the same suspects again with lookups from it: latency, and how many answers differ
   from step 4 (must be none).

Results go to the ``scale`` section of docs/BENCHMARKS.md with machine and date.

    python bench/bench_scale.py --sizes 10M,100M          # CI does not run this
    python bench/bench_scale.py --sizes 1B --keep /big/dir # the manual billion run

Texts are generated, never stored in git; ``--keep`` keeps the data folder and files.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# ``--code DIR``: measure another checkout's tracker (e.g. main at an earlier commit)
# with this script; the CLI subprocesses get it through PYTHONPATH.
if "--code" in sys.argv:
    CODE = Path(sys.argv[sys.argv.index("--code") + 1]).resolve()
    sys.path.insert(0, str(CODE))
    os.environ["PYTHONPATH"] = str(CODE) + os.pathsep + os.environ.get("PYTHONPATH", "")

import contextlib

from bench._common import ROOT, evict, machine, write_section

# ../shared/data beside this checkout (a worktree under /work/wt: two levels up).
HERE = Path(__file__).resolve().parents[1]
DATA = next(
    (
        p
        for p in (HERE.parent / "shared" / "data", HERE.parents[1] / "shared" / "data")
        if p.is_dir()
    ),
    HERE.parent / "shared" / "data",
)
WORK_CHARS = 20_000  # one generated work: a long chapter or a news dossier
FILE_CHARS = 8_000_000  # characters per generated .jsonl file
SUSPECT_CHARS = 2_000


# -- the text model ---------------------------------------------------------------
def training_text(data: Path = DATA, limit: int = 30_000_000) -> str:
    """Simplified Chinese from the shared corpus: novels, Lu Xun, laws, Wikipedia."""
    files = [
        data / "novels" / "hongloumeng.chapters.jsonl",
        data / "novels" / "sanguoyanyi.chapters.jsonl",
        data / "luxun" / "luxun_pieces.jsonl",
        data / "laws" / "laws_national.jsonl",
        data / "wiki" / "cmrc2018_paragraphs.simplified.jsonl",
    ]
    parts: list[str] = []
    total = 0
    for path in files:
        if not path.exists():
            continue
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                text = json.loads(line).get("text", "")
                parts.append(text)
                total += len(text)
                if total >= limit:
                    return "\n".join(parts)
    if not parts:
        raise SystemExit(f"no training text under {data} (the shared corpus is needed here)")
    return "\n".join(parts)


@dataclass
class BigramModel:
    """P(next char | previous char) as a CSR table of cumulative counts.

    Sampling ``n`` chains at once is one ``searchsorted`` per step: the target
    ``cum_before[state] + u * total[state]`` falls inside the state's own segment of the
    global cumulative array, so no per-chain loop is needed."""

    vocab: np.ndarray  # code points, int32
    indptr: np.ndarray  # segment of each previous char in ``nexts``/``cum``
    nexts: np.ndarray  # next-char ids, grouped by previous char
    cum: np.ndarray  # global cumulative counts, float64
    start_p: np.ndarray  # unigram distribution for chain starts

    @classmethod
    def train(cls, text: str) -> BigramModel:
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        vocab, ids = np.unique(codes, return_inverse=True)
        ids = ids.astype(np.int64)
        v = len(vocab)
        pairs, counts = np.unique(ids[:-1] * v + ids[1:], return_counts=True)
        prev, nexts = pairs // v, pairs % v
        indptr = np.zeros(v + 1, dtype=np.int64)
        np.add.at(indptr, prev + 1, 1)
        indptr = np.cumsum(indptr)
        unigram = np.bincount(ids, minlength=v).astype(np.float64)
        return cls(
            vocab=vocab.astype(np.int32),
            indptr=indptr,
            nexts=nexts.astype(np.int32),
            cum=np.cumsum(counts.astype(np.float64)),
            start_p=unigram / unigram.sum(),
        )

    def sample(self, chains: int, length: int, rng: np.random.Generator) -> np.ndarray:
        """``chains`` independent texts of ``length`` characters (char ids)."""
        out = np.empty((chains, length), dtype=np.int32)
        state = rng.choice(len(self.vocab), size=chains, p=self.start_p)
        seg_start, seg_end = self.indptr[:-1], self.indptr[1:]
        before = np.where(seg_start > 0, self.cum[np.maximum(seg_start - 1, 0)], 0.0)
        total = np.where(seg_end > seg_start, self.cum[np.maximum(seg_end - 1, 0)] - before, 0.0)
        for t in range(length):
            out[:, t] = state
            dead = total[state] == 0  # the corpus's last character: restart the chain
            u = rng.random(chains)
            target = before[state] + u * total[state]
            j = np.searchsorted(self.cum, target, side="right")
            nxt = self.nexts[np.minimum(j, len(self.nexts) - 1)]
            if dead.any():
                nxt[dead] = rng.choice(len(self.vocab), size=int(dead.sum()), p=self.start_p)
            state = nxt
        return out

    def texts(self, chains: int, length: int, rng: np.random.Generator) -> list[str]:
        ids = self.sample(chains, length, rng)
        codes = self.vocab[ids].astype("<u4")
        return [row.tobytes().decode("utf-32-le") for row in codes]


# -- planted suspects -------------------------------------------------------------
def homophone_map(vocab: np.ndarray) -> dict[str, str]:
    from pypinyin import Style, lazy_pinyin

    by_sound: dict[str, list[str]] = {}
    for code in vocab.tolist():
        ch = chr(code)
        if "\u4e00" <= ch <= "\u9fff":
            by_sound.setdefault(lazy_pinyin(ch, style=Style.NORMAL)[0], []).append(ch)
    out: dict[str, str] = {}
    for group in by_sound.values():
        for i, ch in enumerate(group):
            if len(group) > 1:
                out[ch] = group[(i + 1) % len(group)]
    return out


def random_edits(text: str, rate: float, rng: random.Random, pool: str) -> str:
    return "".join(
        rng.choice(pool) if "\u4e00" <= ch <= "\u9fff" and rng.random() < rate else ch
        for ch in text
    )


@dataclass
class Planted:
    kind: str
    text: str
    mother: str | None  # None: a negative


def plant(
    model: BigramModel,
    works: dict[str, str],
    per_kind: int,
    rng: np.random.Generator,
) -> list[Planted]:
    """Copies of library works and negatives, each SUSPECT_CHARS long."""
    prng = random.Random(int(rng.integers(1 << 31)))
    homo = homophone_map(model.vocab)
    pool = "".join(c for c in map(chr, model.vocab.tolist()) if "\u4e00" <= c <= "\u9fff")[:3000]
    ids = sorted(works)
    fresh = iter(model.texts(per_kind * 3, SUSPECT_CHARS, rng))
    cases: list[Planted] = []
    for kind in ("verbatim", "excerpt", "homophones", "edits5"):
        for _ in range(per_kind):
            wid = prng.choice(ids)
            work = works[wid]
            start = prng.randrange(0, len(work) - SUSPECT_CHARS)
            copy = work[start : start + SUSPECT_CHARS]
            if kind == "excerpt":
                host = next(fresh)
                part = copy[:600]
                text = host[:700] + part + host[700 : SUSPECT_CHARS - 600]
            elif kind == "homophones":
                text = "".join(homo.get(c, c) if prng.random() < 0.3 else c for c in copy)
            elif kind == "edits5":
                text = random_edits(copy, 0.05, prng, pool)
            else:
                text = copy
            cases.append(Planted(kind, text, wid))
    for _ in range(per_kind * 2):
        cases.append(Planted("negative", next(fresh), None))
    return cases


# -- one size ---------------------------------------------------------------------
@dataclass
class SizeResult:
    chars: int
    works: int
    ingest_seconds: float = 0.0
    ingest_rss_mb: float = 0.0
    postings: int = 0
    redis_bytes: int = 0
    data_bytes: int = 0
    check_rss_mb: float = 0.0
    latency: dict[str, list[float]] = field(default_factory=dict)
    snapshot_seconds: float = float("nan")
    snapshot_bytes: int = 0
    snapshot_differs: int = 0  # checks answered otherwise from the snapshot (must be 0)
    found: dict[str, list[bool]] = field(default_factory=dict)
    stats: dict = field(default_factory=dict)


def folder_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(root) / name).stat().st_size
    return total


def parse_size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9}.get(text[-1:], 1)
    return int(float(text.rstrip("KMBG")) * scale)


def generate_library(
    model: BigramModel,
    chars: int,
    folder: Path,
    rng: np.random.Generator,
    keep_works: int,
    id_prefix: str = "w",
) -> tuple[list[Path], dict[str, str]]:
    """Write works of WORK_CHARS to .jsonl files; return the files and a sample of works
    (the ones suspects are planted from)."""
    n_works = max(1, chars // WORK_CHARS)
    per_file = max(1, FILE_CHARS // WORK_CHARS)
    kept: dict[str, str] = {}
    keep_ids = set(rng.choice(n_works, size=min(keep_works, n_works), replace=False).tolist())
    files: list[Path] = []
    done = 0
    batch = 512  # chains sampled side by side
    fh = None
    while done < n_works:
        take = min(batch, n_works - done)
        for text in model.texts(take, WORK_CHARS, rng):
            if done % per_file == 0:
                if fh:
                    fh.close()
                files.append(folder / f"{id_prefix}works-{len(files):05d}.jsonl")
                fh = files[-1].open("w", encoding="utf-8")
            wid = f"{id_prefix}{done:08d}"
            assert fh is not None
            fh.write(
                json.dumps(
                    {"id": wid, "title": f"生成作品 {done}", "text": text}, ensure_ascii=False
                )
                + "\n"
            )
            if done in keep_ids:
                kept[wid] = text
            done += 1
    if fh:
        fh.close()
    return files, kept


def run_size(
    model: BigramModel, chars: int, work_dir: Path, per_kind: int, seed: int, engine: str | None
) -> SizeResult:
    rng = np.random.default_rng(seed)
    src, data = work_dir / "src", work_dir / "data"
    src.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    files, kept = generate_library(model, chars, src, rng, keep_works=per_kind * 4)
    print(f"  generated {chars:,} chars in {len(files)} files ({time.perf_counter() - t0:.0f} s)")
    res = SizeResult(chars=chars, works=max(1, chars // WORK_CHARS))
    cmd = [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), "ingest", *map(str, files)]
    env = dict(os.environ)
    if engine:
        env["YINJI_ENGINE"] = engine
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    res.ingest_seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    res.ingest_rss_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    print(f"  ingest {res.ingest_seconds:.0f} s: {chars / res.ingest_seconds / 1e6:.2f} M chars/s")

    measure(model, data, kept, per_kind, rng, res)
    return res


WEAK_CANDIDATES: int | None = None  # --weak-candidates


def measure(
    model: BigramModel,
    data: Path,
    kept: dict[str, str],
    per_kind: int,
    rng: np.random.Generator,
    res: SizeResult,
) -> None:
    """Index size and planted checks of the library in ``data`` (into ``res``); with
    ``WEAK_CANDIDATES`` set (``--weak-candidates``), daguan's option for the checks."""
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    settings = replace(Settings.from_env(), data_dir=data)
    lib = Library.open(settings)
    try:
        if WEAK_CANDIDATES is not None:
            lib.configure_candidates(weak_candidates=WEAK_CANDIDATES)
        stats = lib.index_stats()
        res.stats = stats
        eng_stats = next(iter(stats["engines"].values()), {})
        res.postings = int(eng_stats.get("postings", 0))
        info = lib.redis.info("memory")
        res.redis_bytes = int(info["used_memory"]) - int(info.get("used_memory_startup", 0))
        res.data_bytes = folder_bytes(data)
        cases = plant(model, kept, per_kind, rng)
        for case in cases[:10]:  # warm-up: caches, connections
            lib.check_text(case.text)
        answers = []
        for case in cases:
            t = time.perf_counter()
            result = lib.check_text(case.text)
            ms = (time.perf_counter() - t) * 1000
            group = "negative" if case.mother is None else "copy"
            res.latency.setdefault(group, []).append(ms)
            ids = {m.mother_id for m in result.matches}
            answers.append(sorted(ids))
            hit = bool(ids) if case.mother is None else case.mother in ids
            res.found.setdefault(case.kind, []).append(hit)
        # The same checks with lookups from a local copy of the index (yinji index
        # snapshot): its take time and size, and that it answers the same.
        t = time.perf_counter()
        info = lib.snapshot_index()
        res.snapshot_seconds = time.perf_counter() - t
        res.snapshot_bytes = int(info["bytes"])
        for case in cases[:10]:
            lib.check_text(case.text)
        for case, before in zip(cases, answers, strict=True):
            t = time.perf_counter()
            result = lib.check_text(case.text)
            ms = (time.perf_counter() - t) * 1000
            group = "negative" if case.mother is None else "copy"
            res.latency.setdefault(group + "-snapshot", []).append(ms)
            res.snapshot_differs += sorted(m.mother_id for m in result.matches) != before
        res.check_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    finally:
        lib.close()


def check_existing(
    model: BigramModel,
    folder: Path,
    chars: int,
    per_kind: int,
    seed: int,
    ingest_seconds: float,
) -> SizeResult:
    """Measure a library a kept run already built (``--keep``: ``folder/src`` and
    ``folder/data``), e.g. after its ingest was timed and its index rebuilt. The works
    suspects are planted from are the same as that run's (the same first draw of the
    seed); the planted passages are drawn anew (seed + 1)."""
    rng = np.random.default_rng(seed)
    n_works = max(1, chars // WORK_CHARS)
    keep_ids = rng.choice(n_works, size=min(per_kind * 4, n_works), replace=False).tolist()
    wanted = {f"w{i:08d}" for i in keep_ids}
    kept: dict[str, str] = {}
    for path in sorted((folder / "src").glob("works-*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line[8:17] in wanted:  # '{"id": "w00001234"'
                    doc = json.loads(line)
                    kept[doc["id"]] = doc["text"]
    res = SizeResult(chars=chars, works=n_works, ingest_seconds=ingest_seconds)
    measure(model, folder / "data", kept, per_kind, np.random.default_rng(seed + 1), res)
    return res


# -- issue #28: the default path right after an ingest, and after a second one ----
INGEST_RE = r"characters in ([0-9.]+) s"
SNAPSHOT_RE = r"snapshot of the index refreshed in ([0-9.]+) s"


def cli_ingest(data: Path, files: list[Path], engine: str | None) -> dict[str, float]:
    """``yinji ingest FILES`` as a user runs it: wall seconds, the ingest's own seconds
    (its report: no interpreter start, no embedded server start or final save) and the
    seconds of the snapshot refresh it did after (0: none)."""
    import re

    cmd = [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), "ingest", *map(str, files)]
    t0 = time.perf_counter()
    # cwd: not this checkout (``-m`` would import its tracker before PYTHONPATH's)
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=dict(os.environ), cwd=data.parent
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    own = re.search(INGEST_RE, proc.stderr)
    snap = re.search(SNAPSHOT_RE, proc.stderr)
    return {
        "wall": wall,
        "own": float(own.group(1)) if own else wall,
        "snapshot": float(snap.group(1)) if snap else 0.0,
    }


def default_checks(data: Path, cases: list[Planted], *, stats: bool = True) -> dict[str, object]:
    """The planted checks in a fresh process's library, as a check runs by default
    (nothing taken by hand): latency per case, found or not, the mothers matched
    (``stats``: and the index's size, a scan of all of it: ~3.5 min at 1 B)."""
    # The collector's pauses inside each check (issue #37: what the slow tail waits on).
    import gc

    from tracker.library import Library
    from tracker.plumbing.config import Settings

    paused = [0.0, 0.0, 0]  # (pause started, ms this check, oldest generation + 1)

    def pause(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            paused[0] = time.perf_counter()
        else:
            paused[1] += (time.perf_counter() - paused[0]) * 1000
            paused[2] = max(int(paused[2]), info["generation"] + 1)

    lib = Library.open(replace(Settings.from_env(), data_dir=data))
    try:
        # The index's size from the snapshot that answers (cheap); the full scan of
        # ``index_stats`` (3.5-4 min at 1 B) only when asked: waiting on it, the checks
        # were no longer "right after the ingest" (the store's pages went cold meanwhile).
        eng = next(iter(lib.index_stats()["engines"].values()), {}) if stats else {}
        if not stats:
            for name in lib.indexes.engines.indexed():
                engine = lib.indexes.engines.get(name)
                snaps = getattr(engine, "snapshots", None)
                if snaps is not None:
                    state = snaps.state(engine.index)  # type: ignore[attr-defined]
                    eng = {"postings": state.get("postings", 0), "snapshot": state}
        for case in cases[:10]:  # warm-up: caches, connections, the snapshot's pages
            lib.check_text(case.text)
        ms: list[float] = []
        found: list[bool] = []
        answers: list[list[str]] = []
        verified: list[int] = []
        gc_ms: list[float] = []
        gc_gen: list[int] = []
        gc.callbacks.append(pause)
        for case in cases:
            paused[1], paused[2] = 0.0, 0
            t = time.perf_counter()
            result = lib.check_text(case.text)
            ms.append((time.perf_counter() - t) * 1000)
            gc_ms.append(float(paused[1]))
            gc_gen.append(int(paused[2]) - 1)
            verified.append(result.candidates)
            ids = sorted({m.mother_id for m in result.matches})
            answers.append(ids)
            found.append(bool(ids) if case.mother is None else case.mother in ids)
        info = lib.redis.info("memory")
        return {
            "ms": ms,
            "found": found,
            "answers": answers,
            "verified": verified,  # candidates verified (aligned) per case
            "gc_ms": gc_ms,  # the collector's pauses inside each check
            "gc_generation": gc_gen,  # the oldest generation it collected (-1: none)
            "kinds": [c.kind for c in cases],
            "postings": int(eng.get("postings", 0)),
            "snapshot": eng.get("snapshot", {}).get("state", "?"),
            "redis_bytes": int(info["used_memory"]) - int(info.get("used_memory_startup", 0)),
        }
    finally:
        gc.callbacks.remove(pause)
        lib.close()


def run_default_path(
    model: BigramModel, chars: int, work_dir: Path, per_kind: int, seed: int, add_share: float
) -> dict[str, object]:
    """A fresh library of ``chars`` ingested, checked; ``add_share`` more ingested
    into it, checked again (copies planted from both parts)."""
    rng = np.random.default_rng(seed)
    src, data = work_dir / "src", work_dir / "data"
    src.mkdir(parents=True, exist_ok=True)
    files, kept = generate_library(model, chars, src, rng, keep_works=per_kind * 4)
    extra = int(chars * add_share)
    files2, kept2 = generate_library(model, extra, src, rng, per_kind * 4, id_prefix="x")
    cases = plant(model, kept, per_kind, rng)
    late_cases = plant(model, kept2, max(1, per_kind // 2), rng)
    # Kept beside the library: ``--recheck-default`` measures other code on the same cases.
    (work_dir / "cases.json").write_text(
        json.dumps({"cases": [asdict(c) for c in cases], "late": [asdict(c) for c in late_cases]})
    )
    import tracker

    out: dict[str, object] = {"chars": chars, "added": extra, "code": tracker.__file__}
    out["ingest"] = cli_ingest(data, files, None)
    print(f"  ingest {chars:,}: {out['ingest']}")
    out["after_ingest"] = default_checks(data, cases, stats=False)
    out["add"] = cli_ingest(data, files2, None)
    print(f"  add {extra:,}: {out['add']}")
    out["after_add"] = default_checks(data, cases + late_cases, stats=False)
    out["data_bytes"] = folder_bytes(data)
    return out


def default_path_table(runs: dict[str, dict[str, object]]) -> str:
    """before/after rows of ``run_default_path`` results (same library, same cases)."""
    rows = [
        "| code | library | ingest M chars/s (wall; of it snapshot s) | checks after the "
        "ingest: p50 / p90 / p99 ms (copies) | p50 / p99 (negatives) | snapshot | add "
        "M chars/s: the ingest's own / wall (of it snapshot s) | checks after the add: p50 / "
        "p90 / p99 ms (copies) | p50 / p99 (negatives) | snapshot | recall after the add "
        "(verbatim / excerpt / homophones / edits5) | negatives flagged | postings |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in runs.items():
        ing, add = r["ingest"], r["add"]
        a1, a2 = r["after_ingest"], r["after_add"]

        def lat(c: dict, neg: bool) -> list[float]:
            return [m for m, k in zip(c["ms"], c["kinds"], strict=True) if (k == "negative") == neg]

        def rec(c: dict, kind: str) -> str:
            hits = [f for f, k in zip(c["found"], c["kinds"], strict=True) if k == kind]
            return f"{np.mean(hits):.2f}" if hits else "-"

        negs = [f for f, k in zip(a2["found"], a2["kinds"], strict=True) if k == "negative"]
        cols = [
            label,
            human(r["chars"]),
            f"{r['chars'] / ing['wall'] / 1e6:.2f} ({ing['snapshot']:.1f} s)",
            " / ".join(f"{pct(lat(a1, False), q):.1f}" for q in (50, 90, 99)),
            " / ".join(f"{pct(lat(a1, True), q):.1f}" for q in (50, 99)),
            a1["snapshot"],
            f"{r['added'] / add['own'] / 1e6:.2f} / {r['added'] / add['wall'] / 1e6:.2f} "
            f"({add['snapshot']:.1f} s)",
            " / ".join(f"{pct(lat(a2, False), q):.1f}" for q in (50, 90, 99)),
            " / ".join(f"{pct(lat(a2, True), q):.1f}" for q in (50, 99)),
            a2["snapshot"],
            " / ".join(rec(a2, k) for k in ("verbatim", "excerpt", "homophones", "edits5")),
            f"{sum(negs)} of {len(negs)}",
            f"{a2['postings']:,}",
        ]
        rows.append("| " + " | ".join(str(c) for c in cols) + " |")
    labels = list(runs)
    if len(labels) == 2:
        a, b = (runs[x] for x in labels)
        for step in ("after_ingest", "after_add"):
            differ = sum(
                x != y for x, y in zip(a[step]["answers"], b[step]["answers"], strict=True)
            )
            rows.append(
                f"\nAnswers differing between {labels[0]} and {labels[1]}, {step}: "
                f"{differ} of {len(a[step]['answers'])}."
            )
    rows.append("\n" + by_kind(runs))
    return "\n".join(rows)


def by_kind(runs: dict[str, dict[str, object]]) -> str:
    """Per kind of suspect: check p50 (ms) and the candidates verified a check (mean),
    after the ingest and after the add (runs without the counts show '-')."""
    rows = [
        "| code | after | " + " | ".join(KINDS) + " |",
        "|---|---|" + "---|" * len(KINDS),
    ]
    for label, r in runs.items():
        for step in ("after_ingest", "after_add"):
            c = r[step]
            cells = []
            for kind in KINDS:
                at = [i for i, k in enumerate(c["kinds"]) if k == kind]
                p50 = pct([c["ms"][i] for i in at], 50)
                got = c.get("verified")
                mean = f"{np.mean([got[i] for i in at]):.1f}" if got and at else "-"
                cells.append(f"{p50:.1f} ms, {mean}")
            rows.append(f"| {label} | {step.split('_')[1]} | " + " | ".join(cells) + " |")
    return "Per kind: check p50 and candidates verified a check (mean):\n\n" + "\n".join(rows)


KINDS = ("verbatim", "excerpt", "homophones", "edits5", "negative")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def human(n: float) -> str:
    for unit, div in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= div:
            return f"{n / div:g} {unit}"
    return str(int(n))


def table(results: list[SizeResult]) -> str:
    rows = [
        "| library | works | ingest M chars/s | postings | bucket bits | index bytes/posting | "
        "data folder | "
        "ingest RSS | check p50 / p90 / p99 ms (copies) | p50 / p99 ms (negatives) | recall "
        "(verbatim / excerpt / homophones / edits5) | negatives flagged | snapshot: take s, "
        "MiB | from snapshot: p50 / p90 / p99 ms (copies) | p50 / p99 ms (negatives) | "
        "answers differing |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        copies, negs = r.latency.get("copy", []), r.latency.get("negative", [])
        s_copies = r.latency.get("copy-snapshot", [])
        s_negs = r.latency.get("negative-snapshot", [])
        recall = " / ".join(
            f"{np.mean(r.found.get(k, [0])):.2f}"
            for k in ("verbatim", "excerpt", "homophones", "edits5")
        )
        flagged = r.found.get("negative", [])
        eng = next(iter(r.stats.get("engines", {}).values()), {})
        bits = eng.get("bucket_bits", "?")  # the old fixed layout: 14
        rows.append(
            f"| {human(r.chars)} | {r.works:,} | {r.chars / r.ingest_seconds / 1e6:.2f} | "
            f"{r.postings:,} | {bits} | {r.redis_bytes / max(r.postings, 1):.1f} | "
            f"{r.data_bytes / 2**30:.2f} GiB | {r.ingest_rss_mb:.0f} MB | "
            f"{pct(copies, 50):.1f} / {pct(copies, 90):.1f} / {pct(copies, 99):.1f} | "
            f"{pct(negs, 50):.1f} / {pct(negs, 99):.1f} | {recall} | "
            f"{sum(flagged)} of {len(flagged)} | "
            f"{r.snapshot_seconds:.1f} s, {r.snapshot_bytes / 2**20:.0f} | "
            f"{pct(s_copies, 50):.1f} / {pct(s_copies, 90):.1f} / {pct(s_copies, 99):.1f} | "
            f"{pct(s_negs, 50):.1f} / {pct(s_negs, 99):.1f} | {r.snapshot_differs} |"
        )
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10M,100M", help="library sizes, e.g. 1M,10M,100M,1B")
    ap.add_argument("--per-kind", type=int, default=50, help="planted suspects per kind")
    ap.add_argument("--engine", default=None, help="engine (default: the library default)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--keep", type=Path, default=None, help="work folder to keep (default: temp)")
    ap.add_argument("--no-write", action="store_true", help="print, do not update BENCHMARKS.md")
    ap.add_argument("--label", default="", help="what this run measures (goes into the heading)")
    ap.add_argument(
        "--check-existing",
        type=Path,
        default=None,
        help="only measure the library a --keep run left in this folder (one size)",
    )
    ap.add_argument(
        "--ingest-seconds", type=float, default=float("nan"), help="with --check-existing"
    )
    ap.add_argument(
        "--weak-candidates",
        type=int,
        default=None,
        help="daguan's weak_candidates for the checks (default: the library's)",
    )
    ap.add_argument("--code", type=Path, default=None, help="the checkout whose tracker runs")
    ap.add_argument(
        "--default-path",
        type=Path,
        default=None,
        help="issue #28: ingest, check, add --add-share more, check; results as JSON here",
    )
    ap.add_argument("--add-share", type=float, default=0.1)
    ap.add_argument(
        "--evict",
        action="store_true",
        help="with --recheck-default: the data folder's pages out of the page cache first",
    )
    ap.add_argument(
        "--recheck-default",
        type=Path,
        default=None,
        help="DIR: the checks of a kept --default-path run again (DIR/default-path: its data "
        "and cases.json), with this code, after an ingest's checks; results as JSON to "
        "--default-path",
    )
    ap.add_argument(
        "--combine",
        nargs="+",
        default=None,
        help="LABEL=RESULT.json ...: the --default-path results as one table",
    )
    args = ap.parse_args()
    if args.combine:
        runs = {
            x.split("=", 1)[0]: json.loads(Path(x.split("=", 1)[1]).read_text())
            for x in args.combine
        }
        body = default_path_table(runs)
        print(body)
        return
    global WEAK_CANDIDATES
    WEAK_CANDIDATES = args.weak_candidates
    if args.recheck_default is not None:
        folder = args.recheck_default / "default-path"
        saved = json.loads((folder / "cases.json").read_text())
        cases = [Planted(**c) for c in saved["cases"]]
        late = [Planted(**c) for c in saved["late"]]
        import tracker

        # After the add if the kept run made one (its late cases are in the library).
        step = "after_add" if any((folder / "src").glob("xworks-*.jsonl")) else "after_ingest"
        if args.evict:
            evict((folder / "data").rglob("*"))
        checks = default_checks(
            folder / "data", cases + late if step == "after_add" else cases, stats=False
        )
        out = {"code": tracker.__file__, "step": step, step: checks}
        if args.default_path is not None:
            args.default_path.write_text(json.dumps(out))
        lat = [m for m, k in zip(checks["ms"], checks["kinds"], strict=True) if k != "negative"]
        print(
            f"{step}: copies p50 / p90 / p99 "
            + " / ".join(f"{pct(lat, q):.1f}" for q in (50, 90, 99))
            + " ms"
        )
        for kind in KINDS:
            at = [i for i, k in enumerate(checks["kinds"]) if k == kind]
            ms = [checks["ms"][i] for i in at]
            got = np.mean([checks["verified"][i] for i in at]) if at else float("nan")
            print(f"  {kind}: p50 {pct(ms, 50):.1f} ms, {got:.1f} candidates verified a check")
        return

    t0 = time.perf_counter()
    model = BigramModel.train(training_text())
    took = time.perf_counter() - t0
    print(f"model: {len(model.vocab):,} chars, {len(model.nexts):,} bigrams ({took:.0f} s)")
    results: list[SizeResult] = []
    if args.default_path is not None:
        base = args.keep or Path(tempfile.mkdtemp(prefix="yinji-scale-"))
        try:
            chars = parse_size(args.sizes.split(",")[0])
            folder = base / "default-path"
            if folder.exists():
                shutil.rmtree(folder)
            out = run_default_path(model, chars, folder, args.per_kind, args.seed, args.add_share)
        finally:
            if args.keep is None:
                shutil.rmtree(base, ignore_errors=True)
        args.default_path.write_text(json.dumps(out))
        print(default_path_table({"this": out}))
        return
    if args.check_existing is not None:
        chars = parse_size(args.sizes.split(",")[0])
        res = check_existing(
            model, args.check_existing, chars, args.per_kind, args.seed, args.ingest_seconds
        )
        print(table([res]))
        return
    base = args.keep or Path(tempfile.mkdtemp(prefix="yinji-scale-"))
    try:
        for size in args.sizes.split(","):
            chars = parse_size(size)
            print(f"library of {human(chars)} characters")
            folder = base / size.strip()
            if folder.exists():
                shutil.rmtree(folder)
            results.append(run_size(model, chars, folder, args.per_kind, args.seed, args.engine))
            print(table(results[-1:]))
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    body = (
        f"## Scale: libraries of {', '.join(human(r.chars) for r in results)} characters"
        f"{' — ' + args.label if args.label else ''}\n\n"
        f"{date.today().isoformat()}, {machine()}. "
        f"`python bench/bench_scale.py --sizes {args.sizes}`: "
        f"works of {WORK_CHARS:,} characters sampled from a character bigram model of "
        f"`../shared/data`; {args.per_kind} planted {SUSPECT_CHARS:,}-character suspects per kind "
        f"and {args.per_kind * 2} negatives; ingest through the CLI with its defaults; checks "
        "in-process without saving. Index bytes per posting = Redis `used_memory` above the empty "
        "server's, divided by postings.\n\n" + table(results)
    )
    print(body)
    if not args.no_write:
        name = "scale" + (f"-{args.label}" if args.label else "")
        write_section(name, body, ROOT / "docs" / "BENCHMARKS.md")


if __name__ == "__main__":
    main()
