"""Evaluation harness: recall, precision and PAN passage measures per transformation.

Usage: python bench/eval.py [--data ../shared/data] [--cases 60] [--engine daguan]
       [--set ENGINE.OPTION=VALUE ...] [--detail] [--out docs/EVALUATION.md]

``--engine all`` (or a comma-separated list) runs every engine on the SAME suspects, each
in a fresh library, and prints one comparison table: per transformation and engine the
recall, pair precision and passage F1, then negatives flagged, median check time and
ingest time per engine (docs/ENGINES.md). ``--set`` passes engine options (as
``yinji`` keeps them, in the store's meta) for parameter sweeps.

"Candidate recall" (single-engine table) is the fraction of cases whose true mother is
among the candidates the engine hands the verifier: the engine's own recall, before the
alignment that every engine shares.

Mother corpus: both novels' simplified chapters, Lu Xun and the simplified Wikipedia
paragraphs. Suspects are built from the shared corpus as its README describes, with a
known answer (true mother and, where it is exact, the copied spans in both texts):

- ``trad-chapter``: a whole chapter of the machine-converted traditional edition;
- ``excerpt-300`` / ``excerpt-150``: an excerpt inside unrelated host text;
- ``homophone``: 500 characters with homophones (same pinyin) substituted;
- ``s2t``: 500 characters converted to traditional characters (OpenCC);
- ``edits-5pct`` / ``excerpt-150-edits``: 5 % of characters replaced at random;
- ``watermark``: pirate-site watermarks inserted and punctuation stripped;
- ``reordered``: the sentences of a 600-character excerpt shuffled;
- ``web-copy`` / ``alt-edition`` / ``trad-edition``: 1,500-character slices of the
  independent editions, the truth being the chapters the slice overlaps;
- negatives: slices of three unrelated novels, laws and traditional Wikipedia.

Passage measures follow PAN text alignment (character level, both documents):
precision = |detected ∩ true| / |detected|, recall = |detected ∩ true| / |true|,
micro-averaged over the cases of a transformation.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMERALS = "一二三四五六七八九十百零〇○"


@dataclass
class Case:
    kind: str
    text: str
    truth: set[str]  # mother ids that are right answers
    s_span: tuple[int, int] | None = None  # copied region in the suspect
    m_span: tuple[int, int] | None = None  # source region in the (first) true mother
    negative: bool = False
    extra: dict = field(default_factory=dict)


def load_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def chinese_number(s: str) -> int:
    """一百二十 -> 120, 十八 -> 18, 一百零五 -> 105, and positional 一零五 -> 105."""
    digits = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "○": 0}
    if "十" not in s and "百" not in s:
        return int("".join(str(digits[c]) for c in s)) if s else 0
    total, current = 0, 0
    for ch in s:
        if ch in digits:
            current = digits[ch]
        elif ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
    return total + current


def split_chapters(text: str) -> list[tuple[int, int]]:
    """Chapter spans from 第N回 headings: the first heading of chapter 1, 2, 3 ... in
    order, so a heading quoted inside a chapter ("见第五回") does not split it."""
    heads: list[int] = []
    for m in re.finditer(f"第([{NUMERALS}]+)回", text):
        if chinese_number(m.group(1)) == len(heads) + 1:
            heads.append(m.start())
    return [(a, b) for a, b in zip(heads, [*heads[1:], len(text)], strict=True)]


def homophone_map(chars: str) -> dict[str, str]:
    """A different character with the same toneless pinyin, among characters seen."""
    from pypinyin import Style, lazy_pinyin

    by_sound: dict[str, list[str]] = defaultdict(list)
    for ch in sorted(set(chars)):
        if "\u4e00" <= ch <= "\u9fff":
            by_sound[lazy_pinyin(ch, style=Style.NORMAL)[0]].append(ch)
    out = {}
    for group in by_sound.values():
        for i, ch in enumerate(group):
            if len(group) > 1:
                out[ch] = group[(i + 1) % len(group)]
    return out


def build_cases(data: Path, n: int, seed: int = 7) -> tuple[list[dict], list[Case]]:
    import opencc

    rng = random.Random(seed)
    hlm = load_jsonl(data / "novels/hongloumeng.chapters.jsonl")
    sgy = load_jsonl(data / "novels/sanguoyanyi.chapters.jsonl")
    trad = {d["id"]: d for d in load_jsonl(data / "novels/hongloumeng.trad.chapters.jsonl")}
    trad.update({d["id"]: d for d in load_jsonl(data / "novels/sanguoyanyi.trad.chapters.jsonl")})
    mothers = hlm + sgy + load_jsonl(data / "luxun/luxun_pieces.jsonl")
    mothers += load_jsonl(data / "wiki/cmrc2018_paragraphs.simplified.jsonl")
    chapters = hlm + sgy
    others = [p.read_text(encoding="utf-8") for p in sorted((data / "novels/other").glob("*.txt"))]
    host_text = "".join(others)
    hmap = homophone_map("".join(d["text"] for d in chapters[:40]))
    s2t = opencc.OpenCC("s2t")
    pool = "天地人和春夏秋冬东南西北风花雪月山水云雨金木火土日星辰江河湖海"

    def host(length: int) -> str:
        a = rng.randrange(0, len(host_text) - length)
        return host_text[a : a + length]

    def excerpt(length: int) -> tuple[dict, int, str]:
        while True:
            d = rng.choice(chapters)
            if len(d["text"]) > length + 200:
                a = rng.randrange(100, len(d["text"]) - length - 50)
                return d, a, d["text"][a : a + length]

    cases: list[Case] = []
    for _ in range(n):
        d = rng.choice(chapters)
        tid = d["id"].replace("-", "-trad-", 1)
        cases.append(Case("trad-chapter", trad[tid]["text"], {d["id"]}))
    for kind, length in (("excerpt-300", 300), ("excerpt-150", 150)):
        for _ in range(n):
            d, a, ex = excerpt(length)
            h = host(1500)
            cut = rng.randrange(200, 1300)
            text = h[:cut] + ex + h[cut:]
            cases.append(Case(kind, text, {d["id"]}, (cut, cut + length), (a, a + length)))
    for _ in range(n):
        d, a, ex = excerpt(500)
        cases.append(
            Case(
                "homophone", "".join(hmap.get(c, c) for c in ex), {d["id"]}, (0, 500), (a, a + 500)
            )
        )
    for _ in range(n):
        d, a, ex = excerpt(500)
        cases.append(Case("s2t", s2t.convert(ex), {d["id"]}, (0, 500), (a, a + 500)))
    for kind, length in (("edits-5pct", 500), ("excerpt-150-edits", 150)):
        for _ in range(n):
            d, a, ex = excerpt(length)
            edited = "".join(
                rng.choice(pool) if "\u4e00" <= c <= "\u9fff" and rng.random() < 0.05 else c
                for c in ex
            )
            h = host(1000)
            cases.append(
                Case(
                    kind,
                    h[:500] + edited + h[500:],
                    {d["id"]},
                    (500, 500 + length),
                    (a, a + length),
                )
            )
    marks = [
        "本书首发笔趣阁www.biquge.example",
        "手机用户请浏览m.xs.example阅读",
        "天才一秒记住本站地址",
        "最新章节请到起点中文网",
        "【求月票】",
    ]
    for _ in range(n):
        d, a, ex = excerpt(800)
        parts = re.split(r"[，。！？；：、“”‘’\s]", ex)
        text = ""
        for i, part in enumerate(parts):
            text += part
            if i % 6 == 5:
                text += rng.choice(marks)
        cases.append(Case("watermark", text, {d["id"]}, (0, len(text)), (a, a + 800)))
    for _ in range(n):
        d, a, ex = excerpt(600)
        sents = [s for s in re.split(r"(?<=[。！？])", ex) if s]
        rng.shuffle(sents)
        cases.append(Case("reordered", "".join(sents), {d["id"]}, (0, 600), (a, a + 600)))

    # Independent editions: slices mapped to chapters through their 第N回 headings and
    # the chapter numbers in the mothers' titles (红楼梦 has two mothers for chapter 103).
    def ids_by_number(docs: list[dict]) -> dict[int, set[str]]:
        out: dict[int, set[str]] = defaultdict(set)
        for d in docs:
            m = re.search(f"第([{NUMERALS}]+)回", d.get("title", ""))
            if m:
                out[chinese_number(m.group(1))].add(d["id"])
        return out

    editions = [
        ("web-copy", data / "novels/sanguoyanyi.web-copy.txt", ids_by_number(sgy)),
        ("alt-edition", data / "novels/sanguoyanyi.alt-edition.txt", ids_by_number(sgy)),
        ("alt-edition", data / "novels/hongloumeng.alt-edition.txt", ids_by_number(hlm)),
        ("trad-edition", data / "novels/sanguoyanyi.trad-edition.txt", ids_by_number(sgy)),
        ("trad-edition", data / "novels/hongloumeng.trad-edition.txt", ids_by_number(hlm)),
    ]
    for kind, path, by_number in editions:
        text = path.read_text(encoding="utf-8")
        bounds = split_chapters(text)
        if len(bounds) < len(by_number):
            # The headings stop early (the 三国演义 Gutenberg scrape lost the zeros of
            # 第一○○回): the last found chapter's end is unknown, so it is left out.
            print(
                f"{path.name}: chapters 1-{len(bounds) - 1} of {len(by_number)} used",
                file=sys.stderr,
            )
            bounds = bounds[:-1]
        end = bounds[-1][1]
        for _ in range(n // 2):
            a = rng.randrange(bounds[0][0], end - 1500)
            truth = {
                mid
                for i, (s, e) in enumerate(bounds)
                if s < a + 1500 and e > a
                for mid in by_number[i + 1]
            }
            cases.append(Case(kind, text[a : a + 1500], truth))
    # Negatives.
    laws = load_jsonl(data / "laws/laws_national.jsonl")
    drcd = load_jsonl(data / "wiki/drcd_paragraphs.traditional.jsonl")
    for _ in range(n):
        cases.append(Case("neg-novels", host(2000), set(), negative=True))
    for d in rng.sample(laws, n):
        cases.append(Case("neg-laws", d["text"][:3000], set(), negative=True))
    for d in rng.sample(drcd, n):
        cases.append(Case("neg-wiki-trad", d["text"], set(), negative=True))
    return mothers, cases


def overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def union_len(spans: list[tuple[int, int]]) -> int:
    total, cur = 0, None
    for s, e in sorted(spans):
        if cur is None or s > cur[1]:
            if cur:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (cur[1] - cur[0] if cur else 0)


def is_real_copy(lib, suspect_text: str, match) -> bool:
    import difflib

    from tracker.pinyin import initials

    mother = lib.store.get_mother(match.mother_id).text
    p = max(match.passages, key=lambda p: p.suspect_end - p.suspect_start)
    a = initials(suspect_text[p.suspect_start : p.suspect_end])
    b = initials(mother[p.mother_start : p.mother_end])
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= 0.8


@dataclass
class EngineRun:
    """One engine's results on the cases: per-transformation sums, times."""

    engine: str
    options: dict
    rows: dict[str, dict[str, float]]
    times: list[float]  # check time per case, ms
    ingest_s: float
    candidates: list[int] = field(default_factory=list)  # candidates verified per case

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times) if self.times else 0.0

    def flagged(self) -> tuple[int, int]:
        neg = [r for kind, r in self.rows.items() if kind.startswith("neg")]
        return int(sum(r["flagged"] for r in neg)), int(sum(r["n"] for r in neg))

    def measures(self, kind: str) -> dict[str, float | None]:
        """recall, candidate recall, pair precision, passage P/R/F1 (None: not measured),
        or the flagged rate of a negative transformation."""
        r = self.rows[kind]
        n = r["n"]
        if kind.startswith("neg"):
            return {"flagged": r["flagged"] / n}
        out: dict[str, float | None] = {
            "recall": r["recall"] / n,
            "cand_recall": r["cand_recall"] / n,
            "precision": r["true_pairs"] / r["pairs"] if r["pairs"] else 1.0,
            "pp": None,
            "pr": None,
            "f1": None,
        }
        if r["true"]:
            pp = r["hit"] / r["det"] if r["det"] else 0.0
            pr = r["hit"] / r["true"]
            out.update(pp=pp, pr=pr, f1=2 * pp * pr / (pp + pr) if pp + pr else 0.0)
        return out


def parse_options(pairs: list[str]) -> dict[str, dict]:
    """``--set simhash.k=4 --set minhash.normalization=chars`` -> per-engine options
    (values parsed as JSON when they are JSON, else kept as strings)."""
    out: dict[str, dict] = defaultdict(dict)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        engine, dot, option = key.partition(".")
        if not sep or not dot:
            raise SystemExit(f"--set expects ENGINE.OPTION=VALUE, got {pair!r}")
        try:
            out[engine][option] = json.loads(value)
        except json.JSONDecodeError:
            out[engine][option] = value
    return dict(out)


def run_engine(engine: str, options: dict, mothers: list[dict], cases: list[Case]) -> EngineRun:
    """Ingest the mothers into a fresh library with this engine, then check every case."""
    from tracker.config import Settings
    from tracker.documents import Document
    from tracker.library import Library

    rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    times: list[float] = []
    n_cands: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        lib = Library.open(Settings(data_dir=Path(tmp)))
        try:
            if options:  # how `yinji` keeps engine options: the store's meta
                lib.store.set_meta(f"engine:{engine}:options", options)
            t0 = time.perf_counter()
            lib.ingest(
                (Document(id=m["id"], title=m.get("title", ""), text=m["text"]) for m in mothers),
                engine=engine,
            )
            ingest_s = time.perf_counter() - t0
            eng = lib.engine(engine)
            for case in cases:
                t = time.perf_counter()
                result = lib.check_text(case.text, engine=engine)
                times.append((time.perf_counter() - t) * 1000)
                n_cands.append(result.candidates)
                r = rows[case.kind]
                r["n"] += 1
                found = {m.mother_id for m in result.matches}
                if case.negative:
                    r["flagged"] += bool(found)
                    continue
                r["recall"] += bool(found & case.truth)
                # Candidate recall: was a true mother among the candidates the verifier saw
                # (the engine's own recall, before alignment); asked again, outside timing.
                policy = lib.policy  # the matcher's budget grows with the suspect's length
                limit = max(policy.candidates, len(case.text) // policy.chars_per_candidate)
                cands = eng.candidates(case.text, limit=limit)
                by_seq = lib.store.get_mothers_by_seq(seq for seq, _strength in cands)
                r["cand_recall"] += bool({m.id for m in by_seq.values()} & case.truth)
                r["pairs"] += len(found)
                r["true_pairs"] += len(found & case.truth)
                # The corpus has real duplicates (chapters sharing text, a Wikipedia
                # paragraph quoting a novel). A pair outside the truth whose mother
                # passage really holds the suspect passage is a correct find.
                for m in result.matches:
                    if m.mother_id not in case.truth and is_real_copy(lib, case.text, m):
                        r["true_pairs"] += 1
                        r["corpus_duplicates"] += 1
                if case.s_span and case.m_span:
                    true_mother = next(iter(case.truth))
                    det_s = [
                        (p.suspect_start, p.suspect_end) for m in result.matches for p in m.passages
                    ]
                    det_m_true = [
                        (p.mother_start, p.mother_end)
                        for m in result.matches
                        if m.mother_id == true_mother
                        for p in m.passages
                    ]
                    det_m_other = sum(
                        p.mother_end - p.mother_start
                        for m in result.matches
                        if m.mother_id != true_mother
                        for p in m.passages
                    )
                    ds, dm = union_len(det_s), union_len(det_m_true)
                    hit_s = union_len(
                        [
                            (max(a, case.s_span[0]), min(b, case.s_span[1]))
                            for a, b in det_s
                            if overlap((a, b), case.s_span)
                        ]
                    )
                    hit_m = union_len(
                        [
                            (max(a, case.m_span[0]), min(b, case.m_span[1]))
                            for a, b in det_m_true
                            if overlap((a, b), case.m_span)
                        ]
                    )
                    r["det"] += ds + dm + det_m_other
                    r["hit"] += hit_s + hit_m
                    r["true"] += (case.s_span[1] - case.s_span[0]) + (
                        case.m_span[1] - case.m_span[0]
                    )
        finally:
            lib.close()
    return EngineRun(engine, options, rows, times, ingest_s, n_cands)


def _f(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def engine_table(run: EngineRun, mothers: list[dict], n_cases: int) -> str:
    """The detailed table of one engine."""
    opts = f" options `{json.dumps(run.options, sort_keys=True)}`;" if run.options else ""
    lines = [
        f"Mothers: {len(mothers)} documents, {sum(len(m['text']) for m in mothers):,} characters "
        f"(ingested in {run.ingest_s:.1f} s); engine `{run.engine}`;{opts} {n_cases} suspects; "
        f"check time median {run.median_ms:.1f} ms; "
        f"{statistics.mean(run.candidates or [0]):.1f} candidates verified per suspect.",
        "",
        "| transformation | n | recall | candidate recall | pair precision | corpus duplicates "
        "| negatives flagged | passage P | passage R | passage F1 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, r in run.rows.items():
        n = int(r["n"])
        m = run.measures(kind)
        if kind.startswith("neg"):
            lines.append(f"| {kind} | {n} | | | | | {_f(m['flagged'])} | | | |")
            continue
        lines.append(
            f"| {kind} | {n} | {_f(m['recall'])} | {_f(m['cand_recall'])} | "
            f"{_f(m['precision'])} | {int(r['corpus_duplicates'])} | | {_f(m['pp'])} | "
            f"{_f(m['pr'])} | {_f(m['f1'])} |"
        )
    return "\n".join(lines)


def comparison_table(runs: list[EngineRun], mothers: list[dict], n_cases: int) -> str:
    """One table, every engine on the same suspects: recall / pair precision / passage F1
    per transformation and engine, then negatives flagged, check and ingest times."""
    names = [r.engine for r in runs]
    head = (
        "| transformation | n | "
        + " | ".join(f"{e} recall | {e} pair P | {e} passage F1" for e in names)
        + " |"
    )
    lines = [
        f"Mothers: {len(mothers)} documents, {sum(len(m['text']) for m in mothers):,} "
        f"characters; {n_cases} suspects, the same for every engine; engines "
        + ", ".join(
            f"`{r.engine}`" + (f" {json.dumps(r.options, sort_keys=True)}" if r.options else "")
            for r in runs
        )
        + ".",
        "",
        head,
        "|---|---|" + "---|---|---|" * len(runs),
    ]
    kinds = list(runs[0].rows)
    for kind in kinds:
        n = int(runs[0].rows[kind]["n"])
        cells = []
        for run in runs:
            m = run.measures(kind)
            if kind.startswith("neg"):
                cells += [f"flagged {_f(m['flagged'])}", "", ""]
            else:
                cells += [_f(m["recall"]), _f(m["precision"]), _f(m["f1"])]
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    flagged = []
    for run in runs:
        f, total = run.flagged()
        flagged += [f"{f} / {total}", "", ""]
    lines.append("| **negatives flagged** | | " + " | ".join(flagged) + " |")
    for label, values in (
        ("check ms (median)", [f"{r.median_ms:.1f}" for r in runs]),
        ("ingest s", [f"{r.ingest_s:.1f}" for r in runs]),
        ("candidates / suspect", [f"{statistics.mean(r.candidates or [0]):.1f}" for r in runs]),
    ):
        cells = [c for v in values for c in (v, "", "")]
        lines.append(f"| **{label}** | | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def evaluate(args: argparse.Namespace) -> str:
    from tracker.engines import ENGINES

    engines = list(ENGINES) if args.engine == "all" else args.engine.split(",")
    for e in engines:
        if e not in ENGINES:
            raise SystemExit(f"unknown engine {e!r} (choose from {', '.join(ENGINES)} or all)")
    options = parse_options(args.set or [])
    mothers, cases = build_cases(Path(args.data), args.cases)
    runs = []
    for e in engines:
        runs.append(run_engine(e, options.get(e, {}), mothers, cases))
        print(f"[{e}] done: check median {runs[-1].median_ms:.1f} ms", file=sys.stderr)
    if len(runs) == 1:
        return engine_table(runs[0], mothers, len(cases))
    out = comparison_table(runs, mothers, len(cases))
    if args.detail:
        out += "\n\n" + "\n\n".join(engine_table(r, mothers, len(cases)) for r in runs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument(
        "--engine",
        default="daguan",
        help="an engine, several separated by commas, or 'all': every engine on the same "
        "suspects, one comparison table",
    )
    ap.add_argument(
        "--set",
        action="append",
        metavar="ENGINE.OPTION=VALUE",
        help="engine option for this run (repeatable), e.g. simhash.k=4",
    )
    ap.add_argument(
        "--detail", action="store_true", help="with several engines, also each engine's table"
    )
    ap.add_argument("--out", default=None, help="append the table to this markdown file")
    args = ap.parse_args()
    table = evaluate(args)
    print(table)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("\n" + table + "\n")


if __name__ == "__main__":
    main()
