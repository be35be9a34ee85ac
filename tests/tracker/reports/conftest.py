"""A library with one confirmed match of a hostile suspect page, shared by the report
tests (opening and closing the embedded Redis costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import Suspect

from .helpers import HOSTILE, MOTHER


@pytest.fixture(scope="package")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    # One library for the module: opening and closing the embedded Redis costs seconds.
    lib = Library.open(Settings(data_dir=tmp_path_factory.mktemp("reports") / "data"))
    try:
        lib.ingest(
            [Document(id="novel-1", title="长篇小说 第一章", text=MOTHER, source="novel.txt")]
        )
        yield lib
    finally:
        lib.close()


@pytest.fixture(scope="package")
def match_id(library: Library) -> str:
    text = "广告" * 20 + MOTHER[100:900] + HOSTILE + "本站收集整理" * 10
    result = library.check_suspect(
        Suspect(
            id="pirate-1",
            text=text,
            title=f"盗版{HOSTILE}",
            url="http://pirate.example/1.html",
            raw=b"<html>raw page</html>",
        )
    )
    assert result.matches
    mid = result.matches[0].id
    library.store.set_verdict(mid, "confirmed", f"已通知平台 {HOSTILE}")
    return mid
