"""A .jsonl line is refused by its size before it is parsed (issue 25): a line longer
than a document and its metadata can be is skipped before parsing, the next lines read."""

from __future__ import annotations

import json
from pathlib import Path

from tracker.documents.readers import Document, DocumentError, read_path
from tracker.plumbing.config import MIB, ReadLimits


def test_a_line_over_a_document_is_skipped_before_parsing(tmp_path: Path, monkeypatch) -> None:
    limits = ReadLimits(max_document_bytes=MIB)
    parsed: list[int] = []
    import tracker.documents.readers as documents

    real = documents.parse_json

    def spy(text, where=""):
        parsed.append(len(text))
        return real(text, where)

    monkeypatch.setattr(documents, "parse_json", spy)
    path = tmp_path / "works.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "huge", "text": "a" * (3 * MIB)}) + "\n")
        fh.write(json.dumps({"id": "ok", "text": "一个正常的作品"}, ensure_ascii=False) + "\n")
    first, second = list(read_path(path, limits=limits))
    assert isinstance(first, DocumentError) and "line longer than" in first.message
    assert first.source.endswith("works.jsonl:1") and ".txt" in first.message
    assert isinstance(second, Document) and second.id == "ok"
    assert max(parsed) < 2 * MIB  # the huge line never reached the parser
