"""Build the shipped table of common character 4-grams (tracker/data/rarity.npz).

Usage: python bench/build_rarity.py [../shared/data] [--min-df 5]

The reference corpus is ordinary text of the kinds that share stock wording: the PRC
national laws (legal formulas) and the traditional Wikipedia paragraphs of DRCD
(encyclopaedic phrasing), every other line of each file (the lines at even positions;
the evaluation draws its news-reprint hosts and simplified-Wikipedia negatives from the
odd ones, so they are text the table has not seen), and three classical novels that no
library of the evaluation holds (儒林外史, 镜花缘, 老残游记: the formulas of classical
fiction), traditional text converted to simplified with OpenCC, each novel cut into
3,000-character documents. A 4-gram enters the table when at least ``--min-df``
documents hold it. The novels of the evaluation's library (红楼梦, 三国演义), Lu Xun
and the simplified Wikipedia paragraphs (CMRC) stay out: the table must say what is
ordinary, not what the library holds.
(tracker/text/rarity.py; docs/FINGERPRINTS.md, "Short copies".)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracker.text.rarity import DATA_FILE, build_reference_grams  # noqa: E402

SOURCES = (
    "laws/laws_national.jsonl (even lines)",
    "wiki/drcd_paragraphs.traditional.jsonl (even lines, t2s)",
    "novels/other/*.trad.txt (t2s, 3,000-character documents)",
)
NOVEL_CHUNK = 3000


def load_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def documents(data: Path) -> Iterator[str]:
    import opencc

    t2s = opencc.OpenCC("t2s")
    for name, convert in (
        ("laws/laws_national.jsonl", False),
        ("wiki/drcd_paragraphs.traditional.jsonl", True),
    ):
        for doc in load_jsonl(data / name)[::2]:
            yield t2s.convert(doc["text"]) if convert else doc["text"]
    for path in sorted((data / "novels/other").glob("*.txt")):
        text = t2s.convert(path.read_text(encoding="utf-8"))
        for i in range(0, len(text), NOVEL_CHUNK):
            yield text[i : i + NOVEL_CHUNK]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--min-df", type=int, default=5)
    args = ap.parse_args()
    ref = build_reference_grams(documents(Path(args.data)), min_df=args.min_df, sources=SOURCES)
    out = ROOT / "tracker" / "data" / DATA_FILE
    ref.save(str(out))
    print(
        f"{ref.grams.size} 4-grams in >= {ref.min_df} of {ref.documents} documents "
        f"-> {out} ({out.stat().st_size} bytes)"
    )


if __name__ == "__main__":
    main()
