"""A suspect's evidence bundle numbers its matches' reports in chapter order of the
works (issue #37), not in the order of their scores or of when they were found."""

from __future__ import annotations

import io
import zipfile
from dataclasses import replace
from pathlib import Path

from textgen import work

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings


def test_bundle_reports_are_numbered_in_chapter_order(tmp_path: Path) -> None:
    chapters = {"c3": "雾城旧梦 第三章", "c1": "雾城旧梦 第一章", "c2": "雾城旧梦 第二章"}
    texts = {mid: work(4100 + n, 12) for n, mid in enumerate(chapters)}
    with Library.open(Settings(data_dir=tmp_path / "data")) as lib:
        lib.ingest([Document(id=m, title=t, text=texts[m]) for m, t in chapters.items()])
        suspect = "".join(texts[m][:300] for m in ("c2", "c3", "c1"))
        (result,) = lib.check([Document(id="pirate", title="盗版", text=suspect)])
        assert sorted(m.mother_id for m in result.matches) == ["c1", "c2", "c3"]
        # Scores that order them 3, 2, 1: the numbering must not follow them.
        scored = {"c3": 0.99, "c2": 0.95, "c1": 0.90}
        lib.store.put_matches(
            "pirate", [replace(m, score=scored[m.mother_id]) for m in result.matches]
        )
        sink = io.BytesIO()
        _, covered = lib.export_evidence(sink, "pirate")
    assert covered == 3
    names = sorted(
        n for n in zipfile.ZipFile(io.BytesIO(sink.getvalue())).namelist() if n.endswith(".pdf")
    )
    assert names == [
        "report/report-01-c1.pdf",
        "report/report-02-c2.pdf",
        "report/report-03-c3.pdf",
    ]
