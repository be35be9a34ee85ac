"""English evaluation harness (issue #40): recall, pair precision and negatives flagged per
kind of English copy, and check speed per character against a Chinese library of the same
size.

Usage: python bench/eval_english.py [--quick] [--cases 30] [--json] [--json-out FILE] [--no-speed]
       [--speed-chars 10000000] [--en-data DIR] [--data ../shared/data] [--seed 40]

Texts: the Project Gutenberg books of ``bench/english_data.py`` (run it first; it says
where every text comes from). Yinji is driven through its public Library API only
(``Library.open``, ``ingest``, ``check_text``), as ``bench/eval.py`` does, so the harness
measures whatever reads English under it.

Library: the eight library books, each cut at paragraph breaks into parts of about
``PART_CHARS`` characters (chapter-sized mothers, ids ``<book>-pNN``), beside the 121
simplified chapters of 红楼梦 from ``--data`` when it is there (a mixed library, as a
user's would be; ``--no-chinese`` leaves them out). Every suspect is built from the texts
with a seeded random stream (``--seed``), so two runs check the same suspects:

- ``edition``: 1,500-character slices of an independent edition of a library book (the
  1894 Pride and Prejudice, a paragraph-per-line Tale of Two Cities, an older
  transcription of the Adventures); the truth is every part of the book holding at least
  ``EDITION_PART_SHARE`` of the slice's word 5-grams; a slice whose word 5-grams the book
  holds under ``SOURCE_SHARE`` is "source not in library" and left out of recall;
- ``excerpt-150`` / ``-500`` / ``-1500`` / ``-3000``: a verbatim excerpt (cut at word
  boundaries) inside 2,000–4,000 characters of host text from books by other authors
  that are not in the library, placed at a sentence end;
- ``edits-10pct``: 1,000 characters with 10 % of the words edited (substituted, deleted,
  or a word inserted before them: ``edit_words``);
- ``homoglyphs``: 1,000 characters with half of the letters that have one written as a
  Cyrillic or Greek look-alike (``HOMOGLYPHS``);
- ``shuffled``: the sentences of 1,500 characters in random order (``shuffle_sentences``);
- ``rewrapped``: 1,500 characters re-wrapped at 40–72 columns with hard line breaks,
  long words hyphenated across lines (``rewrap``);
- ``zero-width``: 1,000 characters with zero-width characters and soft hyphens inside
  one word in three (``zero_width``);
- negatives: ``neg-same-author``, 2,000-character slices of other books by Austen,
  Dickens and Doyle of the same period (never in the library; twice as many cases), and
  ``neg-other``, slices of the host books.

Per kind: recall (the truth reported), pair precision (reported pairs that are true,
or real copies elsewhere: the longest passage's words read ≥ 0.8 alike), negatives
flagged (a negative with any match), warned (cases with a script warning), median check
time. Targets of #40: recall ≥ 0.95 each kind, pair precision ≥ 0.995, no negative
flagged.

Speed (not with ``--no-speed``): an English library of ``--speed-chars`` characters (the
library books, then the negative books, in parts) and a Chinese one of the same size
(``--data``: the novels' chapters, Lu Xun, Wikipedia, then laws), each in its own data
folder; 3,000-character suspects (1,500 copied inside 1,500 of host text) checked on
both, English and Chinese alternating, after one warm-up round (which counts the copies
found); medians per 1,000 characters of wall time, of this process's CPU time and of that
plus the Redis server's (``INFO cpu``: index look-ups run there), and their ratios. The
target of #40 (English within 2x of Chinese) is judged on the last, and only when the
English copies are found.

That Chinese results do not move is ``bench/eval.py`` (``--laws 0`` for the old cases):
run it before and after a change; this harness does not repeat it.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's tracker, installed or not
sys.path.insert(0, str(ROOT / "bench"))

from english_data import Source  # noqa: E402
from english_mutations import (  # noqa: E402
    SENTENCE_END,
    WORD,
    edit_words,
    homoglyphs,
    rewrap,
    shuffle_sentences,
    snap,
    words_of,
    zero_width,
)

PART_CHARS = 25_000
SOURCE_SHARE = 0.5
EDITION_PART_SHARE = 0.2
MAX_FAULTS = 40  # listed under the table; all of them in --json


# -- texts and cases ------------------------------------------------------------------
@dataclass
class Case:
    kind: str
    text: str
    truth: set[str]
    negative: bool = False
    source_missing: bool = False
    extra: dict[str, object] = field(default_factory=dict)


def split_parts(book_id: str, text: str, size: int = PART_CHARS) -> list[dict[str, str]]:
    """The book in parts of about ``size`` characters, cut at paragraph breaks."""
    parts, at = [], 0
    while at < len(text):
        end = min(len(text), at + size)
        if end < len(text):
            brk = text.find("\n\n", end)
            end = len(text) if brk < 0 or brk - at > 2 * size else brk
        if len(text) - end < size // 3:
            end = len(text)
        parts.append({"id": f"{book_id}-p{len(parts) + 1:02d}", "text": text[at:end]})
        at = end
    return parts


def grams(words: list[str], n: int = 5) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


class Builder:
    """Seeded suspects from the books (``english_data.load``)."""

    def __init__(self, texts: dict[str, tuple[Source, str]], seed: int) -> None:
        self.rng = random.Random(seed)
        by_role: dict[str, list[str]] = {}
        for key, (src, _text) in texts.items():
            by_role.setdefault(src.role, []).append(key)
        self.texts = {k: t for k, (_s, t) in texts.items()}
        self.sources = {k: s for k, (s, _t) in texts.items()}
        self.roles = by_role
        self.parts = {b: split_parts(b, self.texts[b]) for b in by_role["library"]}
        self.host_text = "\n\n".join(self.texts[h] for h in by_role["host"])
        # Replacement words: lower-case words of the host books.
        self.pool = sorted({w for w in WORD.findall(self.host_text[:200_000]) if w.islower()})

    def mothers(self) -> list[dict[str, str]]:
        return [p for b in self.roles["library"] for p in self.parts[b]]

    def excerpt(self, length: int) -> tuple[str, str]:
        """(part id, text) of a verbatim excerpt of about ``length`` characters."""
        while True:
            book = self.rng.choice(self.roles["library"])
            part = self.rng.choice(self.parts[book])
            text = part["text"]
            if len(text) > length + 400:
                a = self.rng.randrange(100, len(text) - length - 100)
                a, b = snap(text, a, a + length)
                if b - a >= length * 0.9:
                    return part["id"], text[a:b]

    def host(self, length: int) -> str:
        a = self.rng.randrange(0, len(self.host_text) - length - 1)
        a, b = snap(self.host_text, a, a + length)
        return self.host_text[a:b]

    def plant(self, piece: str) -> str:
        """``piece`` inside 2,000-4,000 characters of host text, after a sentence."""
        host = self.host(self.rng.randrange(2000, 4000))
        ends = [m.end() for m in SENTENCE_END.finditer(host)] or [len(host) // 2]
        cut = self.rng.choice(ends)
        return host[:cut] + "\n\n" + piece + "\n\n" + host[cut:].lstrip()

    def slice_of(self, book: str, length: int) -> str:
        text = self.texts[book]
        a = self.rng.randrange(len(text) // 20, len(text) - length - len(text) // 50)
        a, b = snap(text, a, a + length)
        return text[a:b]

    def edition_case(self, edition: str) -> Case:
        book = self.sources[edition].edition_of
        piece = self.slice_of(edition, 1500)
        have = grams(words_of(piece))
        truth, held = set(), set()
        for part in self.parts[book]:
            common = have & grams(words_of(part["text"]))
            if have and len(common) / len(have) >= EDITION_PART_SHARE:
                truth.add(part["id"])
            held |= common
        share = len(held) / len(have) if have else 0.0
        return Case(
            "edition",
            piece,
            truth,
            source_missing=share < SOURCE_SHARE or not truth,
            extra={"edition": edition, "source_share": round(share, 3)},
        )

    def build(self, n: int) -> list[Case]:
        cases: list[Case] = []
        editions = self.roles["edition"]
        for i in range(n):
            cases.append(self.edition_case(editions[i % len(editions)]))
        for length in (150, 500, 1500, 3000):
            for _ in range(n):
                pid, piece = self.excerpt(length)
                text = self.plant(piece)
                at = text.index("\n\n" + piece) + 2
                span = (at, at + len(piece))  # the copy in the suspect
                cases.append(Case(f"excerpt-{length}", text, {pid}, extra={"s_span": span}))
        for _ in range(n):
            pid, piece = self.excerpt(1000)
            text, edits = edit_words(piece, 0.10, self.rng, self.pool)
            cases.append(Case("edits-10pct", text, {pid}, extra={"edits": len(edits)}))
        for _ in range(n):
            pid, piece = self.excerpt(1000)
            cases.append(Case("homoglyphs", homoglyphs(piece, 0.5, self.rng), {pid}))
        for _ in range(n):
            pid, piece = self.excerpt(1500)
            cases.append(Case("shuffled", shuffle_sentences(piece, self.rng), {pid}))
        for _ in range(n):
            pid, piece = self.excerpt(1500)
            cases.append(Case("rewrapped", rewrap(piece, self.rng.randrange(40, 73)), {pid}))
        for _ in range(n):
            pid, piece = self.excerpt(1000)
            cases.append(Case("zero-width", zero_width(piece, 1 / 3, self.rng), {pid}))
        negatives = self.roles["negative"]
        for i in range(2 * n):
            piece = self.slice_of(negatives[i % len(negatives)], 2000)
            cases.append(Case("neg-same-author", piece, set(), negative=True))
        for _ in range(n):
            cases.append(Case("neg-other", self.host(2000), set(), negative=True))
        return cases


def chinese_chapters(data: Path) -> list[dict[str, str]]:
    path = data / "novels/hongloumeng.chapters.jsonl"
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as f:
        return [{"id": d["id"], "text": d["text"]} for d in (json.loads(x) for x in f if x.strip())]


# -- running ------------------------------------------------------------------------
@dataclass
class KindResult:
    kind: str
    n: int = 0
    negative: bool = False
    source_missing: int = 0
    recalled: int = 0
    pairs: int = 0
    true_pairs: int = 0
    flagged: int = 0
    warned: int = 0
    times_ms: list[float] = field(default_factory=list)

    def row(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "n": self.n}
        if self.negative:
            out["negatives_flagged"] = round(self.flagged / self.n, 4) if self.n else None
        else:
            out["recall"] = round(self.recalled / self.n, 4) if self.n else None
            out["pairs"] = self.pairs
            out["pair_precision"] = round(self.true_pairs / self.pairs, 4) if self.pairs else None
            out["source_missing"] = self.source_missing
        out["warned"] = round(self.warned / max(1, self.n + self.source_missing), 4)
        out["check_ms_median"] = round(statistics.median(self.times_ms), 2) if self.times_ms else 0
        return out


def open_library(folder: Path) -> object:
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    return Library.open(Settings(data_dir=folder))


def ingest(lib: object, mothers: list[dict[str, str]]) -> float:
    from tracker.documents.readers import Document

    t = time.perf_counter()
    lib.ingest(Document(id=m["id"], title="", text=m["text"]) for m in mothers)  # type: ignore[attr-defined]
    return time.perf_counter() - t


def real_copy(suspect: str, mother: str, match: object) -> bool:
    """The longest passage's words read ≥ 0.8 alike in both texts: a real copy held by a
    mother outside the case's truth (a corpus duplicate), not a false pair."""
    passages = getattr(match, "passages", [])
    if not passages:
        return False
    p = max(passages, key=lambda p: p.suspect_end - p.suspect_start)
    a = words_of(suspect[p.suspect_start : p.suspect_end])
    b = words_of(mother[p.mother_start : p.mother_end])
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= 0.8


def run_cases(
    mothers: list[dict[str, str]], cases: list[Case], faults: list[str] | None = None
) -> tuple[dict[str, KindResult], float]:
    """Ingest ``mothers`` into a fresh library and check every case; a line for each
    missed case, false pair and flagged negative goes into ``faults``."""
    texts = {m["id"]: m["text"] for m in mothers}
    rows: dict[str, KindResult] = {}
    faults = faults if faults is not None else []
    with tempfile.TemporaryDirectory() as tmp:
        lib = open_library(Path(tmp))
        try:
            ingest_s = ingest(lib, mothers)
            for no, case in enumerate(cases):
                r = rows.setdefault(case.kind, KindResult(case.kind, negative=case.negative))
                t = time.perf_counter()
                result = lib.check_text(case.text)  # type: ignore[attr-defined]
                r.times_ms.append((time.perf_counter() - t) * 1000)
                r.warned += bool(result.warnings)
                found = {m.mother_id for m in result.matches}
                what = f"case {no} {case.kind} ({len(case.text):,} characters)"
                if case.negative:
                    r.n += 1
                    r.flagged += bool(found)
                    if found:
                        faults.append(f"{what}: flagged, reported {', '.join(sorted(found))}")
                    continue
                if case.source_missing:
                    r.source_missing += 1
                else:
                    r.n += 1
                    r.recalled += bool(found & case.truth)
                    if not found & case.truth:
                        faults.append(
                            f"{what}: missed {', '.join(sorted(case.truth))}; reported "
                            + (", ".join(sorted(found)) or "nothing")
                        )
                for m in result.matches:
                    r.pairs += 1
                    good = m.mother_id in case.truth or real_copy(
                        case.text, texts.get(m.mother_id, ""), m
                    )
                    r.true_pairs += good
                    if not good:
                        faults.append(f"{what}: false pair {m.mother_id}")
        finally:
            lib.close()  # type: ignore[attr-defined]
    return rows, ingest_s


# -- speed --------------------------------------------------------------------------
def fill(docs: Iterator[dict[str, str]], size: int) -> list[dict[str, str]]:
    """Documents in order until ``size`` characters (the last one cut to fit)."""
    out, total = [], 0
    for d in docs:
        take = d["text"][: size - total]
        if take:
            out.append({"id": d["id"], "text": take})
            total += len(take)
        if total >= size:
            break
    return out


def chinese_docs(data: Path) -> Iterator[dict[str, str]]:
    for name in (
        "novels/hongloumeng.chapters.jsonl",
        "novels/sanguoyanyi.chapters.jsonl",
        "luxun/luxun_pieces.jsonl",
        "wiki/cmrc2018_paragraphs.simplified.jsonl",
        "laws/laws_national.jsonl",
    ):
        with (data / name).open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    d = json.loads(line)
                    yield {"id": d["id"], "text": d["text"]}


def server_cpu(lib: object) -> float:
    """CPU seconds the library's Redis server has used (``INFO cpu``; 0 when the server
    does not say): index look-ups run there, outside this process's CPU time."""
    try:
        info = lib.redis.info("cpu")  # type: ignore[attr-defined]
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    except Exception:  # a client without INFO: this process's time only
        return 0.0


def speed(builder: Builder, data: Path, size: int, n: int, seed: int) -> dict[str, object]:
    """Check time per 1,000 characters, English vs Chinese libraries of ``size`` chars."""
    rng = random.Random(seed + 1)
    en_docs = fill(
        (p for role in ("library", "negative") for b in builder.roles[role]
         for p in (builder.parts[b] if b in builder.parts else split_parts(b, builder.texts[b]))),
        size,
    )  # fmt: skip
    zh_docs = fill(chinese_docs(data), size)
    chapters = [d for d in zh_docs if d["id"].startswith(("hongloumeng", "sanguoyanyi"))]
    zh_host = "".join(
        p.read_text(encoding="utf-8") for p in sorted((data / "novels/other").glob("*.txt"))
    )
    # 1,500 copied characters between two halves of 1,500 characters of host text.
    en_cases, zh_cases = [], []
    for _ in range(n):
        pid, piece = builder.excerpt(1500)
        host = builder.host(1500)
        cut = snap(host, len(host) // 2, len(host))[0]
        en_cases.append((pid, host[:cut] + piece + " " + host[cut:]))
    for _ in range(n):
        d = rng.choice([c for c in chapters if len(c["text"]) > 2000])
        a = rng.randrange(0, len(d["text"]) - 1600)
        h = rng.randrange(0, len(zh_host) - 1600)
        text = zh_host[h : h + 750] + d["text"][a : a + 1500] + zh_host[h + 750 : h + 1500]
        zh_cases.append((d["id"], text))
    en_chars = statistics.mean(len(t) for _, t in en_cases)
    zh_chars = statistics.mean(len(t) for _, t in zh_cases)
    out: dict[str, object] = {
        "library_chars": {"en": sum(len(d["text"]) for d in en_docs),
                          "zh": sum(len(d["text"]) for d in zh_docs)},
        "mothers": {"en": len(en_docs), "zh": len(zh_docs)},
        "suspects": n,
        "suspect_chars": {"en": round(en_chars), "zh": round(zh_chars)},
    }  # fmt: skip
    wall: dict[str, list[float]] = {"en": [], "zh": []}
    cpu: dict[str, list[float]] = {"en": [], "zh": []}
    both: dict[str, list[float]] = {"en": [], "zh": []}  # this process + Redis server
    with tempfile.TemporaryDirectory() as t1, tempfile.TemporaryDirectory() as t2:
        libs = {"en": open_library(Path(t1)), "zh": open_library(Path(t2))}
        try:
            out["ingest_s"] = {
                "en": round(ingest(libs["en"], en_docs), 1),
                "zh": round(ingest(libs["zh"], zh_docs), 1),
            }
            found = {"en": 0, "zh": 0}  # the copy's mother reported (warm-up round)
            for lang, cases in (("en", en_cases), ("zh", zh_cases)):
                for truth, text in cases:
                    result = libs[lang].check_text(text)  # type: ignore[attr-defined]
                    found[lang] += any(m.mother_id == truth for m in result.matches)
            out["found"] = found
            for i in range(n):
                order = [("en", en_cases[i][1]), ("zh", zh_cases[i][1])]
                for lang, text in order if i % 2 else order[::-1]:
                    r = server_cpu(libs[lang])
                    w, c = time.perf_counter(), time.process_time()
                    libs[lang].check_text(text)  # type: ignore[attr-defined]
                    wall[lang].append((time.perf_counter() - w) * 1e6 / len(text))
                    cpu[lang].append((time.process_time() - c) * 1e6 / len(text))
                    r = server_cpu(libs[lang]) - r
                    both[lang].append(cpu[lang][-1] + r * 1e6 / len(text))
        finally:
            for lib in libs.values():
                lib.close()  # type: ignore[attr-defined]
    for name, series in (("wall", wall), ("cpu", cpu), ("cpu_with_redis", both)):
        en, zh = statistics.median(series["en"]), statistics.median(series["zh"])
        out[f"{name}_ms_per_1000_chars"] = {"en": round(en, 3), "zh": round(zh, 3),
                                            "ratio": round(en / zh, 2) if zh else None}  # fmt: skip
    return out


# -- output -------------------------------------------------------------------------
def _f(x: object) -> str:
    return "–" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def markdown(report: dict[str, object]) -> str:
    lines = [
        str(report["header"]),
        "",
        "| kind | n | recall | pair precision (pairs) | negatives flagged | warned "
        "| check ms (median) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report["kinds"]:  # type: ignore[attr-defined]
        n = f"{row['n']}" + (f" (+{row['source_missing']} source not in library)"
                             if row.get("source_missing") else "")  # fmt: skip
        if "negatives_flagged" in row:
            cells = ["", "", _f(row["negatives_flagged"])]
        else:
            prec = _f(row["pair_precision"]) + f" ({row['pairs']})"
            cells = [_f(row["recall"]), prec, ""]
        cells += [_f(row["warned"]), f"{row['check_ms_median']:.1f}"]
        lines.append(f"| {row['kind']} | {n} | " + " | ".join(cells) + " |")
    s = report["summary"]
    lines += [
        "",
        f"- negatives flagged: {s['flagged']} / {s['negatives']}",  # type: ignore[index]
        f"- pair precision, all cases: {_f(s['pair_precision'])} "  # type: ignore[index]
        f"({s['false_pairs']} false of {s['pairs']} pairs)",  # type: ignore[index]
        f"- lowest recall: {_f(s['lowest_recall'])} ({s['lowest_kind']})",  # type: ignore[index]
        "- targets of #40 (recall ≥ 0.95 each kind, pair precision ≥ 0.995, no negative "
        f"flagged): {'met' if s['targets_met'] else 'not met'}",  # type: ignore[index]
    ]
    faults = report.get("faults") or []
    if faults and len(faults) <= MAX_FAULTS:
        lines += ["", "Missed cases, false pairs and flagged negatives:", ""]
        lines += [f"- {x}" for x in faults]  # type: ignore[attr-defined]
    elif faults:
        lines += ["", f"{len(faults)} missed cases, false pairs and flagged negatives "  # type: ignore[arg-type]
                  f"(listed with --json)."]  # fmt: skip
    sp = report.get("speed")
    if sp:
        lc, ing = sp["library_chars"], sp["ingest_s"]  # type: ignore[index]
        lines += [
            "",
            f"Speed: libraries of {lc['en']:,} English / {lc['zh']:,} Chinese characters "
            f"({sp['mothers']['en']} / {sp['mothers']['zh']} mothers; ingest "  # type: ignore[index]
            f"{ing['en']} s / {ing['zh']} s); {sp['suspects']} suspects of each, "
            f"{sp['suspect_chars']['en']:,} / {sp['suspect_chars']['zh']:,} characters, "  # type: ignore[index]
            "alternating, medians:",
            "",
            "| check time per 1,000 characters | English | Chinese | English / Chinese |",
            "|---|---|---|---|",
        ]
        for key, label in (
            ("wall_ms_per_1000_chars", "wall ms"),
            ("cpu_ms_per_1000_chars", "CPU ms, this process"),
            ("cpu_with_redis_ms_per_1000_chars", "CPU ms, with the Redis server"),
        ):
            v = sp[key]  # type: ignore[index]
            lines.append(f"| {label} | {v['en']:.2f} | {v['zh']:.2f} | {_f(v['ratio'])} |")
        ratio = sp["cpu_with_redis_ms_per_1000_chars"]["ratio"]  # type: ignore[index]
        found, n = sp["found"], sp["suspects"]  # type: ignore[index]
        verdict = "met" if ratio is not None and ratio <= 2 else "not met"
        if found["en"] < 0.95 * n:  # type: ignore[operator]
            verdict = "not measured: a check that finds no English copy is no measure of it"
        lines += [
            "",
            f"- copies found in the speed run: English {found['en']} / {n}, Chinese "
            f"{found['zh']} / {n}",
            f"- target of #40 (English within 2x of Chinese, CPU time with the Redis server): "
            f"{verdict}",
        ]
    return "\n".join(lines)


def evaluate(args: argparse.Namespace) -> dict[str, object]:
    import english_data
    from _common import machine

    texts = english_data.load(english_data.data_dir(args.en_data))
    builder = Builder(texts, args.seed)
    cases = builder.build(args.cases)
    mothers = builder.mothers()
    english_mothers = len(mothers)
    data = Path(args.data)
    if not args.no_chinese:
        more = chinese_chapters(data)
        if not more:
            print(f"no Chinese corpus at {data}: an English-only library", file=sys.stderr)
        mothers = mothers + more
    faults: list[str] = []
    rows, ingest_s = run_cases(mothers, cases, faults)
    kinds = [r.row() for r in rows.values()]
    pos = [r for r in rows.values() if not r.negative]
    neg = [r for r in rows.values() if r.negative]
    pairs, true_pairs = sum(r.pairs for r in pos), sum(r.true_pairs for r in pos)
    recalls = [(r.recalled / r.n if r.n else 0.0, r.kind) for r in pos]
    low = min(recalls)
    prec = true_pairs / pairs if pairs else None
    flagged = sum(r.flagged for r in neg)
    summary = {
        "negatives": sum(r.n for r in neg),
        "flagged": flagged,
        "pairs": pairs,
        "false_pairs": pairs - true_pairs,
        "pair_precision": round(prec, 4) if prec is not None else None,
        "lowest_recall": round(low[0], 4),
        "lowest_kind": low[1],
        "targets_met": low[0] >= 0.95 and (prec is None or prec >= 0.995) and flagged == 0,
    }
    chars = sum(len(m["text"]) for m in mothers)
    header = (
        f"Mothers: {len(mothers)} documents, {chars:,} characters ({english_mothers} parts of "
        f"8 English books"
        + (", 121 chapters of 红楼梦" if len(mothers) > english_mothers else "")
        + f"; ingested in {ingest_s:.1f} s); {len(cases)} suspects, seed {args.seed}; "
        f"{machine()}; {time.strftime('%Y-%m-%d', time.gmtime())}."
    )
    report: dict[str, object] = {
        "header": header,
        "kinds": kinds,
        "summary": summary,
        "faults": faults,
    }
    if not args.no_speed:
        if (data / "laws/laws_national.jsonl").exists():
            report["speed"] = speed(builder, data, args.speed_chars, args.speed_cases, args.seed)
        else:
            print(f"speed skipped: no Chinese corpus at {data}", file=sys.stderr)
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--en-data", default=None, help="English data folder (english_data.py)")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"), help="Chinese corpus")
    ap.add_argument("--cases", type=int, default=30, help="suspects per kind")
    ap.add_argument("--seed", type=int, default=40)
    ap.add_argument("--quick", action="store_true", help="6 cases a kind, speed at 2 M chars")
    ap.add_argument("--no-chinese", action="store_true", help="no Chinese chapters in library")
    ap.add_argument("--no-speed", action="store_true", help="skip the speed comparison")
    ap.add_argument("--speed-chars", type=int, default=10_000_000)
    ap.add_argument("--speed-cases", type=int, default=40)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--json-out", default=None, help="also write the results as JSON here")
    args = ap.parse_args()
    if args.quick:
        args.cases, args.speed_chars, args.speed_cases = 6, 2_000_000, 12
    report = evaluate(args)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n")
    print(json.dumps(report, ensure_ascii=False, indent=1) if args.json else markdown(report))


if __name__ == "__main__":
    main()
