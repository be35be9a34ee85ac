"""Templated text in the library: national laws as mothers, negatives and hosts (issue #13).

National laws are written from shared models: formula sentences recur across unrelated
laws with small changes ("违反本条例规定，……由……责令改正，给予警告"). This suite puts
``n_library`` laws into the library beside the novels, Lu Xun and Wikipedia, and builds
from laws unrelated to every library law:

- ``neg-law-law``: unrelated laws (up to 6,000 characters): nothing may be flagged;
- planted excerpts inside a 2,000-character window of an unrelated law (the host), cut in
  at a sentence boundary:
  ``law-excerpt-300`` (a library law, verbatim), ``law-homophone-300`` (homophones
  substituted), ``law-s2t-300`` (traditional characters), ``law-shuffled-600`` (its
  sentences shuffled), ``novel-excerpt-300`` (a novel chapter or a Lu Xun piece, verbatim)
  and ``verse-shuffled-1000`` (a 1,000-character verse-heavy window of a novel chapter:
  poems and couplets, at least ``VERSE_SHARE`` of its characters in lines of equal
  length, with its sentences shuffled).

Relatedness (``LawFamilies``): two laws are related when a name of one (its
title without 中华人民共和国, brackets and version, a title quoted in 《》 inside it,
or the title without 实施条例/实施细则/实施办法/修正案/的解释) is contained in a name of the
other, when one cites the other's name in its first 300 characters (the
enabling clause 根据《……》，制定本条例) or anywhere as a whole title in 《》 (a quotation
may follow), or when they share specific text: at least ``SPECIFIC_GRAMS``
character 13-grams (punctuation and spacing dropped) that at most
``SPECIFIC_DF`` laws of the whole collection contain, i.e. more than about one
sentence of verbatim text that is not a formula (sibling laws such as 人民法院组织法
/ 人民检察院组织法 share whole articles; a decision amending judicial interpretations
holds their text). Related laws really share text, so they are never a
negative or a host of each other, and a related library law reported for a
planted law excerpt is a corpus duplicate, not a false pair. Every other law
reported for a suspect of this suite is a false pair: what is left between
unrelated laws is formula text (sentences many laws share, or one sentence
written from the same model with small changes), the templated text of issue
#13.

Everything is seeded; the same data and arguments give the same suspects.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LAW_PREFIX = "law/"
HOST_CHARS = 2000
NEG_CHARS = 6000
VERSE_SHARE = 0.25  # share of a window's characters in verse lines: "verse-heavy"
SPECIFIC_GRAMS = 40  # shared specific 13-grams that make two laws related
SPECIFIC_DF = 3  # a 13-gram in at most this many laws is specific, not a formula
NAME_SUFFIXES = ("实施条例", "实施细则", "实施办法", "修正案", "的解释")
_BRACKETS = re.compile(r"[（(][^）)]*[）)]")
_QUOTED = re.compile(r"《([^》]+)》")
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
# A sentence with its closing marks; verse lines end in ．/。 or a line break.
_SENTENCE = re.compile(r"[^。！？．；\n]+[。！？．；\n”’」]*")
_BOUNDARY = re.compile(r"[。；\n]")


def is_law(mother_id: str) -> bool:
    return mother_id.startswith(LAW_PREFIX)


def _clean_name(name: str) -> str:
    return _BRACKETS.sub("", name.replace("中华人民共和国", "")).strip()


def law_names(doc: dict[str, Any]) -> set[str]:
    """The names a law is known by (see the module docstring)."""
    out: set[str] = set()
    for raw in [doc.get("title", ""), *_QUOTED.findall(doc.get("title", ""))]:
        name = _clean_name(raw)
        if len(name) < 2:
            continue
        out.add(name)
        for suffix in NAME_SUFFIXES:
            if name.endswith(suffix) and len(name) - len(suffix) >= 2:
                out.add(name[: -len(suffix)])
    return out


def char_grams(text: str, k: int = 13) -> np.ndarray:
    """Distinct hashes of the character k-grams of ``text`` (letters, digits and Han
    characters only), a polynomial hash over code points (deterministic)."""
    cp = np.frombuffer(_chars(text).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    n = cp.size
    if n < k:
        return np.zeros(0, dtype=np.uint64)
    h = np.zeros(n - k + 1, dtype=np.uint64)
    for j in range(k):
        h = h * np.uint64(1_000_003) + cp[j : n - k + 1 + j]
    return np.unique(h)


def shared_specific(
    texts: list[str], k: int = 13, max_df: int = SPECIFIC_DF
) -> dict[tuple[int, int], int]:
    """(i, j) with i < j -> how many character k-grams texts i and j share among those
    that at most ``max_df`` texts contain (pairs sharing none are left out)."""
    grams = [char_grams(t, k) for t in texts]
    allg = np.concatenate(grams) if grams else np.zeros(0, np.uint64)
    owner = np.concatenate([np.full(g.size, i, dtype=np.int32) for i, g in enumerate(grams)])
    order = np.argsort(allg, kind="stable")
    allg, owner = allg[order], owner[order]
    _, start, count = np.unique(allg, return_index=True, return_counts=True)
    out: dict[tuple[int, int], int] = {}
    for s, c in zip(
        start[(count >= 2) & (count <= max_df)].tolist(),
        count[(count >= 2) & (count <= max_df)].tolist(),
        strict=True,
    ):
        holders = owner[s : s + c].tolist()
        for a in range(c):
            for b in range(a + 1, c):
                key = (min(holders[a], holders[b]), max(holders[a], holders[b]))
                out[key] = out.get(key, 0) + 1
    return out


class LawFamilies:
    """Which laws are related (share text for a reason): see the module docstring."""

    def __init__(self, laws: list[dict[str, Any]]) -> None:
        self.laws = laws
        self.names = [law_names(d) for d in laws]
        self.texts = [d["text"].replace("中华人民共和国", "") for d in laws]
        self.heads = [t[:300] for t in self.texts]
        self.shared = shared_specific([d["text"] for d in laws])

    def related(self, i: int, j: int) -> bool:
        if i == j:
            return True
        if self.shared.get((min(i, j), max(i, j)), 0) >= SPECIFIC_GRAMS:
            return True
        for a in self.names[i]:
            for b in self.names[j]:
                if a in b or b in a:
                    return True
        return self._cites(i, j) or self._cites(j, i)

    def _cites(self, i: int, j: int) -> bool:
        """Law i cites law j: in its enabling clause, or anywhere by its whole name."""
        return any(
            len(a) >= 3 and ("《" + a in self.heads[i] or "《" + a + "》" in self.texts[i])
            for a in self.names[j]
        )

    def related_to_any(self, i: int, group: Iterable[int]) -> bool:
        return any(self.related(i, j) for j in group)


def verse_mask(text: str) -> np.ndarray:
    """True for characters in verse: at least four consecutive Han clauses of equal
    length 4, 5 or 7 separated only by punctuation or line breaks (poems, couplets,
    parallel prose)."""
    mask = np.zeros(len(text), dtype=bool)
    clauses = [(m.start(), m.end()) for m in _HAN_RUN.finditer(text)]
    i = 0
    while i < len(clauses):
        size = clauses[i][1] - clauses[i][0]
        j = i
        while (
            j + 1 < len(clauses)
            and clauses[j + 1][1] - clauses[j + 1][0] == size
            and clauses[j + 1][0] - clauses[j][1] <= 4
        ):
            j += 1
        if size in (4, 5, 7) and j - i + 1 >= 4:
            mask[clauses[i][0] : clauses[j][1]] = True
        i = j + 1
    return mask


def verse_windows(
    chapters: list[dict[str, Any]], length: int, share: float = VERSE_SHARE, step: int = 50
) -> list[tuple[int, int]]:
    """(chapter index, start) of every ``length``-character window (starts every
    ``step`` characters) with at least ``share`` of its characters in verse."""
    out: list[tuple[int, int]] = []
    for ci, d in enumerate(chapters):
        text = d["text"]
        if len(text) <= length:
            continue
        csum = np.concatenate([[0], np.cumsum(verse_mask(text))])
        starts = np.arange(0, len(text) - length, step)
        shares = (csum[starts + length] - csum[starts]) / length
        out.extend((ci, int(a)) for a in starts[shares >= share])
    return out


def shuffle_sentences(text: str, rng: random.Random) -> str:
    """The sentences of ``text`` in a random order (verse: one line or couplet each)."""
    sentences = _SENTENCE.findall(text)
    rng.shuffle(sentences)
    return "".join(sentences)


@dataclass
class LawSuite:
    """The laws put into the library and the suite's suspects (as ``eval.Case`` values)."""

    library: list[dict[str, Any]]
    cases: list[Any]
    free: list[str] = field(default_factory=list)  # ids of laws unrelated to the library


def build_law_cases(
    laws: list[dict[str, Any]],
    chapters: list[dict[str, Any]],
    prose: list[dict[str, Any]],
    *,
    n: int,
    n_library: int,
    make_case: Callable[..., Any],
    hmap: dict[str, str],
    s2t: Callable[[str], str],
    exclude: set[str] | None = None,
    seed: int = 13,
) -> LawSuite:
    """The suite's library laws and suspects.

    ``chapters``: novel chapters (library works; verse windows come from them);
    ``prose``: further library works for ``novel-excerpt-300`` (chapters, Lu Xun);
    ``make_case(kind, text, truth, s_span, m_span, negative, extra)`` builds one case;
    ``exclude``: law ids used elsewhere as negatives (neither they nor their relatives
    enter the library).
    """
    rng = random.Random(seed)
    families = LawFamilies(laws)
    by_id = {d["id"]: i for i, d in enumerate(laws)}
    excluded = [by_id[x] for x in sorted(exclude or ()) if x in by_id]
    eligible = [i for i in range(len(laws)) if not families.related_to_any(i, excluded)]
    library = sorted(rng.sample(eligible, min(n_library, len(eligible))))
    lib_set = set(library)
    free = [
        i
        for i in range(len(laws))
        if i not in lib_set
        and laws[i]["id"] not in (exclude or set())
        and not families.related_to_any(i, library)
    ]
    rng.shuffle(free)
    n_neg = min(2 * n, len(free) // 2)
    negatives, hosts = free[:n_neg], [i for i in free[n_neg:] if len(laws[i]["text"]) >= 800]
    if not hosts:
        raise ValueError("no unrelated laws left to host planted excerpts")
    cases: list[Any] = []
    for i in negatives:
        text = laws[i]["text"]
        if len(text) > NEG_CHARS:
            a = rng.randrange(0, len(text) - NEG_CHARS)
            text = text[a : a + NEG_CHARS]
        cases.append(
            make_case(
                "neg-law-law", text, set(), None, None, True, {"suite": "laws", "id": laws[i]["id"]}
            )
        )

    host_order: list[int] = []

    def host() -> tuple[str, str, int]:
        # Every host law once before any is used again (varied hosts).
        if not host_order:
            host_order.extend(rng.sample(hosts, len(hosts)))
        d = laws[host_order.pop()]
        text = d["text"]
        if len(text) > HOST_CHARS:
            a = rng.randrange(0, len(text) - HOST_CHARS)
            text = text[a : a + HOST_CHARS]
        cuts = [m.end() for m in _BOUNDARY.finditer(text)] or [len(text) // 2]
        return d["id"], text, rng.choice(cuts)

    def source_excerpt(pool: list[dict[str, Any]], length: int) -> tuple[dict[str, Any], int]:
        while True:
            d = rng.choice(pool)
            if len(d["text"]) > length + 200:
                return d, rng.randrange(100, len(d["text"]) - length - 50)

    lib_laws = [laws[i] for i in library]

    def plant(kind: str, d: dict[str, Any], a: int, length: int, piece: str) -> None:
        host_id, text, cut = host()
        dups: set[str] = set()
        if is_law(d["id"]):
            src = by_id[d["id"]]
            dups = {laws[j]["id"] for j in library if j != src and families.related(src, j)}
        cases.append(
            make_case(
                kind,
                text[:cut] + piece + text[cut:],
                {d["id"]},
                (cut, cut + len(piece)),
                (a, a + length),
                False,
                {"suite": "laws", "host": host_id, "dups": dups},
            )
        )

    for kind, transform in (
        ("law-excerpt-300", lambda s: s),
        ("law-homophone-300", lambda s: "".join(hmap.get(c, c) for c in s)),
        ("law-s2t-300", s2t),
    ):
        for _ in range(n):
            d, a = source_excerpt(lib_laws, 300)
            plant(kind, d, a, 300, transform(d["text"][a : a + 300]))
    for _ in range(n):
        d, a = source_excerpt(lib_laws, 600)
        plant("law-shuffled-600", d, a, 600, shuffle_sentences(d["text"][a : a + 600], rng))
    for _ in range(n):
        d, a = source_excerpt(prose, 300)
        plant("novel-excerpt-300", d, a, 300, d["text"][a : a + 300])
    windows = verse_windows(chapters, 1000)
    if not windows:
        raise ValueError("no verse-heavy chapter windows found")
    for _ in range(n):
        ci, a = rng.choice(windows)
        d = chapters[ci]
        plant("verse-shuffled-1000", d, a, 1000, shuffle_sentences(d["text"][a : a + 1000], rng))
    return LawSuite(lib_laws, cases, [laws[i]["id"] for i in free])


# -- passage features ----------------------------------------------------------------


class GramTable:
    """Collection frequency: in how many library mothers each k-gram of pinyin
    initials occurs (the seeds the verifier aligns with)."""

    def __init__(self, ids: list[str], texts: list[str], k: int = 8) -> None:
        from tracker.matching.align import prepare

        self.k = k
        self.ids = ids
        self.pos = {m: i for i, m in enumerate(ids)}
        grams, owners = [], []
        for i, text in enumerate(texts):
            g = np.unique(prepare(text, k).grams)
            grams.append(g)
            owners.append(np.full(g.size, i, dtype=np.int32))
        g = np.concatenate(grams) if grams else np.zeros(0, np.uint64)
        o = np.concatenate(owners) if owners else np.zeros(0, np.int32)
        order = np.argsort(g, kind="stable")
        self.grams = g[order]
        self.owners = o[order]

    def df(self, grams: np.ndarray) -> np.ndarray:
        lo = np.searchsorted(self.grams, grams, side="left")
        hi = np.searchsorted(self.grams, grams, side="right")
        return hi - lo

    def df_among(self, grams: np.ndarray, allowed: np.ndarray) -> np.ndarray:
        """Per gram, how many of the mothers flagged in ``allowed`` (a boolean array over
        the table's mothers) hold it."""
        lo = np.searchsorted(self.grams, grams, side="left")
        hi = np.searchsorted(self.grams, grams, side="right")
        count = hi - lo
        total = int(count.sum())
        if total == 0:
            return np.zeros(grams.size, dtype=np.int64)
        first = np.repeat(np.cumsum(count) - count, count)
        idx = np.repeat(lo, count) + (np.arange(total) - first)
        which = np.repeat(np.arange(grams.size), count)
        return np.bincount(which, weights=allowed[self.owners[idx]], minlength=grams.size).astype(
            np.int64
        )

    def holders(self, grams: np.ndarray) -> np.ndarray:
        """Per mother: how many of ``grams`` (distinct) it contains."""
        grams = np.unique(grams)
        lo = np.searchsorted(self.grams, grams, side="left")
        hi = np.searchsorted(self.grams, grams, side="right")
        count = hi - lo
        total = int(count.sum())
        if total == 0:
            return np.zeros(len(self.ids), dtype=np.int64)
        first = np.repeat(np.cumsum(count) - count, count)
        idx = np.repeat(lo, count) + (np.arange(total) - first)
        return np.bincount(self.owners[idx], minlength=len(self.ids))


class WindowTable:
    """Window-level collection frequency as the Daguan engine sees it, without its stop
    words: in how many library mothers each window fingerprint occurs (exact counts; the
    index answers nothing for a fingerprint past ``stop_df``)."""

    def __init__(self, engine: Any, texts: list[str]) -> None:
        self.engine = engine
        fps = [engine.mother_fingerprints(t) for t in texts]
        allv = np.concatenate(fps) if fps else np.zeros(0, np.uint64)
        self.values, self.counts = np.unique(allv, return_counts=True)
        # Postings: which mothers hold each fingerprint (sorted by fingerprint).
        owners = np.concatenate([np.full(f.size, i, dtype=np.int64) for i, f in enumerate(fps)])
        order = np.argsort(allv, kind="stable")
        self.p_values, self.p_owners = allv[order], owners[order]
        self.stride = int(engine.params.stride)
        self.window = int(engine.params.granularity)
        self.stop_df = int(engine.index.stop_df)

    def positions(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Dense window starts (initials), df summed over a stride of consecutive windows
        (the engine's boilerplate test: each mother holding the text counts once), and
        each window's exact df."""
        dense = self.engine.fingerprinter.fingerprints(text, stride=1)
        at = np.searchsorted(self.values, dense.values)
        at = np.minimum(at, max(0, self.values.size - 1))
        hit = self.values.size > 0
        df = np.where(hit & (self.values[at] == dense.values), self.counts[at], 0)
        n, s = df.size, self.stride
        csum = np.concatenate([[0], np.cumsum(df)])
        idx = np.arange(n)
        back = csum[idx + 1] - csum[np.maximum(idx + 1 - s, 0)]
        fwd = csum[np.minimum(idx + s, n)] - csum[idx]
        return dense.starts, np.maximum(back, fwd), df

    def postings(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(window start, mother) pairs: every dense window of ``text`` and each library
        mother holding its fingerprint, as the engine's index lookup returns them."""
        dense = self.engine.fingerprinter.fingerprints(text, stride=1)
        lo = np.searchsorted(self.p_values, dense.values, side="left")
        hi = np.searchsorted(self.p_values, dense.values, side="right")
        count = hi - lo
        total = int(count.sum())
        if total == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        first = np.repeat(np.cumsum(count) - count, count)
        idx = np.repeat(lo, count) + (np.arange(total) - first)
        return np.repeat(dense.starts, count), self.p_owners[idx]

    def own_masks(
        self, postings: tuple[np.ndarray, np.ndarray], me: int, n: int, levels: Iterable[int]
    ) -> dict[int, np.ndarray]:
        """Per level C, a boolean array over the suspect's ``n`` initials: covered by a
        window that mother ``me`` holds (within a stride, the phase of its sparse
        windows) while fewer than C other mothers hold a window within a stride of it.
        The window-level "own evidence" the engine could compute from its lookups."""
        starts, owners = postings
        s, w = self.stride, self.window
        out = {}
        if starts.size == 0:
            return {c: np.zeros(n, dtype=bool) for c in levels}
        # Near-me: positions within a stride of a window that ``me`` holds.
        near = np.zeros(n + 1, dtype=np.int64)
        mine = starts[owners == me]
        np.add.at(near, np.clip(mine - s + 1, 0, n), 1)
        np.add.at(near, np.clip(mine + s, 0, n), -1)
        near_me = np.cumsum(near)[:n] > 0
        # Distinct other mothers within a stride: merge each mother's intervals first.
        sel = owners != me
        o, p = owners[sel], starts[sel]
        others = np.zeros(n, dtype=np.int64)
        if o.size:
            order = np.lexsort((p, o))
            o, a = o[order], np.clip(p[order] - s + 1, 0, n)
            b = np.clip(p[order] + s, 0, n)
            big = n + 2 * s + 1
            run_end = np.maximum.accumulate(o * big + b) - o * big
            prev_end = np.concatenate([[-1], run_end[:-1]])
            new = np.concatenate([[True], o[1:] != o[:-1]]) | (a > prev_end)
            ga = np.minimum.reduceat(a, np.flatnonzero(new))
            gb = np.maximum.reduceat(b, np.flatnonzero(new))
            diff = np.zeros(n + 1, dtype=np.int64)
            np.add.at(diff, ga, 1)
            np.add.at(diff, gb, -1)
            others = np.cumsum(diff)[:n]
        for c in levels:
            own_pos = np.flatnonzero(near_me & (others < c))
            cov = np.zeros(n + 1, dtype=np.int64)
            np.add.at(cov, np.clip(own_pos, 0, n), 1)
            np.add.at(cov, np.clip(own_pos + w, 0, n), -1)
            out[c] = np.cumsum(cov)[:n] > 0
        return out


def window_features(
    windows: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    i0: int,
    i1: int,
    window: int,
    stop_df: int,
) -> dict[str, float | None]:
    """Shares of a passage's windows (inside [i0, i1)) held by >= 2 / 3 / 5 mothers
    (stride-summed df) and of stop-word windows (exact df > stop_df)."""
    keys = ("wcf2", "wcf3", "wcf5", "stopped")
    if windows is None:
        return dict.fromkeys(keys)
    starts, summed, df = windows
    sel = (starts >= i0) & (starts + window <= i1)
    if not sel.any():
        return dict.fromkeys(keys)
    sm, ex = summed[sel], df[sel]
    return {
        "wcf2": round(float((sm >= 2).mean()), 4),
        "wcf3": round(float((sm >= 3).mean()), 4),
        "wcf5": round(float((sm >= 5).mean()), 4),
        "stopped": round(float((ex > stop_df).mean()), 4),
    }


_WORD = re.compile(r"\w")
OWN_LEVELS = (1, 2, 3, 5)  # "own" initials: covered by grams fewer than C other mothers hold


def _chars(text: str) -> str:
    """Letters, digits and Han characters only (punctuation and spacing dropped)."""
    return "".join(_WORD.findall(text))


def _ratio(a: str, b: str, cap: int = 2500) -> float | None:
    if len(a) > cap or len(b) > cap:
        return None
    return round(difflib.SequenceMatcher(None, a, b, autojunk=False).ratio(), 4)


def _share(positions: np.ndarray | None, window: int, start: int, end: int) -> float | None:
    """Share of [start, end) covered by windows of ``window`` initials at ``positions``."""
    if positions is None:
        return None
    if end <= start:
        return 0.0
    covered = np.zeros(end - start, dtype=bool)
    for p in positions[(positions > start - window) & (positions < end)].tolist():
        covered[max(0, p - start) : min(end - start, p + window - start)] = True
    return round(float(covered.mean()), 4)


def passage_features(
    suspect_text: str,
    mother_text: str,
    passage: Any,
    mother_id: str,
    table: GramTable,
    *,
    s_offsets: np.ndarray,
    s_grams: np.ndarray,
    evidence: np.ndarray | None = None,
    common: np.ndarray | None = None,
    window: int = 24,
    planted: tuple[int, int] | None = None,
    windows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    stop_df: int = 16,
    s_sorted: np.ndarray | None = None,
    m_sorted: np.ndarray | None = None,
    masks: dict[str, np.ndarray] | None = None,
    win_masks: dict[int, np.ndarray] | None = None,
    candidates: np.ndarray | None = None,
) -> dict[str, Any]:
    """What may tell a templated passage from a copy (docs/EVALUATION.md):

    lengths (characters, initials), ``similarity`` (the verifier's seed coverage),
    ``char_sim`` / ``init_sim`` (difflib ratios on characters and on initials),
    ``verbatim8`` (share of the suspect passage's character 8-grams found verbatim in
    the mother passage), collection frequency of its initial 8-grams shared with the
    mother (``cf_median``: other mothers holding a gram, median; ``cf1``/``cf3``: share
    of the grams held by ≥ 1 / ≥ 3 other mothers; ``unique_init``: initials covered by
    grams no other mother holds, ``ownC``: by grams fewer than C other mothers hold;
    ``mothers_half``: other mothers holding ≥ half of the grams), the engine's
    ``supported``/``common`` shares as the verifier sees them today, window-level
    collection frequency (``window_features``: ``wcf2``/``wcf3``/``wcf5``, ``stopped``),
    repetition inside the documents (``s_repeat``: share of the passage's grams that
    occur twice or more in the whole suspect, given ``s_sorted``, its sorted grams;
    ``m_repeat``: of the shared grams in the whole mother, given ``m_sorted``) and
    ``planted``: share of the passage inside the planted span (None: no planted span).
    ``wown``: initials weighted by 1 / (1 + cf) of the rarest shared gram covering them;
    ``cwown``: the same with cf counted among ``candidates`` (a boolean array over the
    table's mothers: the engine's candidates for this suspect) only;
    ``win_ownC``: initials covered by window-level own evidence (``WindowTable.own_masks``,
    given as ``win_masks``).
    ``masks`` (suspect-long arrays keyed "init", "ownC" (boolean) and "wown" (float))
    receive the passage's initials and own evidence, for pair totals without double
    counting.
    """
    from tracker.matching.align import prepare
    from tracker.text.pinyin import initials

    k = table.k
    s_part = suspect_text[passage.suspect_start : passage.suspect_end]
    m_part = mother_text[passage.mother_start : passage.mother_end]
    i0 = int(np.searchsorted(s_offsets, passage.suspect_start, side="left"))
    i1 = int(np.searchsorted(s_offsets, passage.suspect_end, side="left"))
    grams = s_grams[i0 : max(i0, i1 - k + 1)]
    m_grams = np.unique(prepare(m_part, k).grams)
    shared_mask = np.isin(grams, m_grams)
    shared = grams[shared_mask]
    me = table.pos.get(mother_id)
    other = table.df(shared) - (1 if me is not None else 0)
    other = np.maximum(other, 0)
    # Initials covered by grams that fewer than c other mothers hold ("own" evidence).
    shared_at = np.flatnonzero(shared_mask)
    own: dict[str, int] = {}
    for c in OWN_LEVELS:
        cov = np.zeros(max(0, i1 - i0), dtype=bool)
        for j in shared_at[other < c].tolist():
            cov[j : j + k] = True
        own[f"own{c}"] = int(cov.sum())
        if masks is not None and f"own{c}" in masks:
            masks[f"own{c}"][i0 : i0 + cov.size] |= cov
    # Evidence weighted by collection frequency: each initial counts 1 / (1 + cf) of the
    # rarest gram covering it (cf: other mothers holding the gram).
    weight = np.zeros(max(0, i1 - i0), dtype=np.float64)
    for j, o in zip(shared_at.tolist(), other.tolist(), strict=True):
        np.maximum(weight[j : j + k], 1.0 / (1.0 + o), out=weight[j : j + k])
    if masks is not None and "init" in masks:
        masks["init"][i0:i1] = True
    # The same, with cf counted among the engine's candidates only (no new index needed).
    cweight = None
    if candidates is not None:
        allowed = candidates.copy()
        if me is not None:
            allowed[me] = False
        other_c = table.df_among(shared, allowed)
        cweight = np.zeros(max(0, i1 - i0), dtype=np.float64)
        for j, o in zip(shared_at.tolist(), other_c.tolist(), strict=True):
            np.maximum(cweight[j : j + k], 1.0 / (1.0 + o), out=cweight[j : j + k])
        if masks is not None and "cwown" in masks:
            seg = masks["cwown"][i0 : i0 + cweight.size]
            np.maximum(seg, cweight, out=seg)
    if masks is not None and "wown" in masks:
        np.maximum(
            masks["wown"][i0 : i0 + weight.size], weight, out=masks["wown"][i0 : i0 + weight.size]
        )
    s_rep = m_rep = None
    if s_sorted is not None and grams.size:
        cnt = np.searchsorted(s_sorted, grams, "right") - np.searchsorted(s_sorted, grams, "left")
        s_rep = round(float((cnt >= 2).mean()), 4)
    if m_sorted is not None and shared.size:
        cnt = np.searchsorted(m_sorted, shared, "right") - np.searchsorted(m_sorted, shared, "left")
        m_rep = round(float((cnt >= 2).mean()), 4)
    holders = table.holders(shared)
    if me is not None:
        holders[me] = 0
    s8 = _chars(s_part)
    m8 = _chars(m_part)
    s_set = [s8[j : j + 8] for j in range(max(0, len(s8) - 7))]
    m_set = {m8[j : j + 8] for j in range(max(0, len(m8) - 7))}
    inside = None
    if planted is not None:
        a = max(planted[0], passage.suspect_start)
        b = min(planted[1], passage.suspect_end)
        inside = round(max(0, b - a) / max(1, passage.suspect_end - passage.suspect_start), 4)
    return {
        "s_chars": passage.suspect_end - passage.suspect_start,
        "m_chars": passage.mother_end - passage.mother_start,
        "s_init": i1 - i0,
        "similarity": passage.similarity,
        "char_sim": _ratio(s8, m8),
        "init_sim": _ratio(initials(s_part), initials(m_part), cap=4000),
        "verbatim8": round(sum(g in m_set for g in s_set) / len(s_set), 4) if s_set else 0.0,
        "grams": int(shared.size),
        "cf_median": float(np.median(other)) if other.size else 0.0,
        "cf1": round(float((other >= 1).mean()), 4) if other.size else 0.0,
        "cf3": round(float((other >= 3).mean()), 4) if other.size else 0.0,
        "wown": round(float(weight.sum()), 1),
        "cwown": round(float(cweight.sum()), 1) if cweight is not None else None,
        **{f"win_own{c}": int(m[i0:i1].sum()) for c, m in (win_masks or {}).items()},
        "unique_init": own["own1"],
        **own,
        "mothers_half": int((holders * 2 >= max(1, shared.size)).sum()) if shared.size else 0,
        "supported": _share(evidence, window, i0, i1),
        "common": _share(common, window, i0, i1),
        "s_repeat": s_rep,
        "m_repeat": m_rep,
        "planted": inside,
        **window_features(windows, i0, i1, window, stop_df),
        "suspect": s_part,
        "mother": m_part,
    }
