"""The check pipeline (``tracker.services.check``): its stages give what
``Matcher.match`` gives, and what it stores and records depends on where the text came
from (``origin``): nothing, a submission, or a stored suspect checked again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textgen import work

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.services.check import Stored, Submitted
from tracker.store import MatchQuery, Suspect, open_store


@pytest.fixture()
def lib(tmp_path: Path, redis_client: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[Library]:
    monkeypatch.delenv("YINJI_TSA_URL", raising=False)
    settings = Settings(data_dir=tmp_path / "data", redis_prefix="pipe")
    library = Library(settings, open_store(settings), redis_client)
    library.ingest([Document(id=f"w{i}", title=f"作品{i}", text=work(i, 60)) for i in range(6)])
    yield library
    library.evidence.close()
    library.store.close()


def kinds(lib: Library, suspect_id: str) -> list[str]:
    return [e.kind for e in lib.evidence_log().entries(suspect_id=suspect_id)]


def test_the_stages_answer_as_the_matcher_does(lib: Library) -> None:
    text = work(90, 8) + work(2, 60)[300:1300] + work(91, 8) + work(4, 60)[0:700]
    checked = lib.checks.run(Suspect(id="s", text=text), save=False)
    direct = lib.matcher().match(text, suspect_id="s")
    assert [m.mother_id for m in checked.matches] == ["w2", "w4"]
    assert [(m.mother_id, m.score, m.passages) for m in checked.matches] == [
        (m.mother_id, m.score, m.passages) for m in direct.matches
    ]
    assert checked.result.candidates == direct.candidates
    # Not saved: nothing stored, nothing recorded.
    assert lib.store.count_suspects() == 0
    assert kinds(lib, "s") == []


def test_what_each_origin_stores_and_records(lib: Library) -> None:
    text = work(5, 60)[200:1200]
    lib.checks.run(Suspect(id="plain", text=text))
    assert lib.store.get_suspect("plain").checked_at is not None
    assert kinds(lib, "plain") == []  # stored, no evidence (Library.check_suspect)

    lib.checks.run(Suspect(id="handed", text=text, source="paste"), origin=Submitted())
    assert kinds(lib, "handed") == ["submission", "check"]

    # A stored suspect checked again: only the matches rewritten and the suspect marked
    # checked (not written back: a change made in memory stays there), the check recorded.
    lib.store.put_suspect(Suspect(id="old", text=text, title="旧标题"))
    stored = lib.store.get_suspect("old")
    assert stored.checked_at is None
    stored.title = "changed in memory"
    lib.checks.run(stored, origin=Stored())
    again = lib.store.get_suspect("old")
    assert (again.title, again.checked_at is not None) == ("旧标题", True)
    assert [m.mother_id for m in lib.store.query_matches(MatchQuery(suspect_id="old"))] == ["w5"]
    assert kinds(lib, "old") == ["check"]
