"""Build the shipped reference distribution (tracker/data/reference.json).

Usage: python bench/build_reference.py [../shared/data]

Equivalent to ``yinji reference build`` over a broad corpus: laws, Wikipedia
(simplified and traditional), Lu Xun and both novels, so that letter frequencies
reflect modern, legal, encyclopaedic and classical Chinese alike.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tracker.documents.readers import Document, iter_documents
from tracker.fingerprints.daguan import build_reference

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "../shared/data")
FILES = [
    "laws/laws_national.jsonl",
    "wiki/cmrc2018_paragraphs.simplified.jsonl",
    "wiki/drcd_paragraphs.traditional.jsonl",
    "luxun/luxun_pieces.jsonl",
    "novels/hongloumeng.chapters.jsonl",
    "novels/sanguoyanyi.chapters.jsonl",
]

if __name__ == "__main__":
    paths = [ROOT / f for f in FILES]
    texts = (doc.text for p in paths for doc in iter_documents([p]) if isinstance(doc, Document))
    ref = build_reference(texts, sources=FILES)
    out = Path(__file__).parents[1] / "tracker" / "data" / "reference.json"
    ref.save(out)
    print(f"{ref.chars} characters -> {out} ({out.stat().st_size} bytes)")
