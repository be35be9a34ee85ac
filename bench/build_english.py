"""Build tracker/data/english.npz: the English word table of ``tracker.text.units``.

Usage: python bench/build_english.py [--words 50000] [--out tracker/data/english.npz]

Needs ``wordfreq`` (a dev dependency: the package reads only the table). For the
``--words`` most frequent English words of wordfreq (its ``top_n_list('en')``, its Zipf
frequencies), folded as the reader folds them (``fold_word``; words with digits or
other characters are left out), it stores each word's hash, its three letters and its
Zipf frequency x10. The letters: words are taken most frequent first; each one's first
letter is the letter whose share of the running text assigned so far is furthest below
its target share, its second and third likewise (each adds a third of the word's
frequency to its letter's share). The target shares are the pinyin initials' frequencies in the
shipped Chinese reference (``tracker/data/reference.json``), so English units are spread
over the letters as Chinese ones are, and the Chinese reference's count distributions
normalise English windows too. The script prints the result's deviation from the target
shares on the table's own words.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from wordfreq import top_n_list, word_frequency, zipf_frequency

    from tracker.fingerprints.daguan import default_reference
    from tracker.text.pinyin import INITIAL_LETTERS
    from tracker.text.units import fold_word, hash_word

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int, default=50_000)
    ap.add_argument("--out", default=str(ROOT / "tracker" / "data" / "english.npz"))
    args = ap.parse_args()

    ref = default_reference()
    target = np.array([ref.freq[c] for c in INITIAL_LETTERS])
    target /= target.sum()
    seen: dict[int, tuple[str, float, float]] = {}
    for word in top_n_list("en", args.words):
        folded = fold_word(word)
        if not folded:
            continue
        h = hash_word(folded)
        if h in seen:  # e.g. "don't" and "dont": one folded word, frequencies added
            w, f, z = seen[h]
            seen[h] = (w, f + word_frequency(word, "en"), max(z, zipf_frequency(word, "en")))
        else:
            seen[h] = (folded, word_frequency(word, "en"), zipf_frequency(word, "en"))
    items = sorted(seen.items(), key=lambda kv: -kv[1][1])
    mass = np.zeros(len(INITIAL_LETTERS))
    first = np.zeros(len(items), dtype=np.uint8)
    second = np.zeros(len(items), dtype=np.uint8)
    third = np.zeros(len(items), dtype=np.uint8)
    for i, (_h, (_w, f, _z)) in enumerate(items):
        for out in (first, second, third):
            total = mass.sum() + f
            c = int(np.argmax(target * total - mass))
            out[i] = c
            mass[c] += f / 3
    hashes = np.array([h for h, _ in items], dtype=np.uint64)
    zipf10 = np.array([round(v[2] * 10) for _, v in items], dtype=np.uint8)
    order = np.argsort(hashes)
    np.savez_compressed(
        args.out,
        hashes=hashes[order],
        first=first[order],
        second=second[order],
        third=third[order],
        zipf10=zipf10[order],
        shares=target,
        source=np.array(f"wordfreq top_n_list('en', {args.words})"),
    )
    share = mass / mass.sum()
    print(f"{len(items)} words -> {args.out}")
    print(
        "max |share - target| over the table's own running text: "
        f"{np.abs(share - target).max():.4f}"
    )


if __name__ == "__main__":
    main()
