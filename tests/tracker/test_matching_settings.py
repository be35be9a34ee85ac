"""The library's minimum copied length (issue #13): raised, a short copy is no longer
reported; lowered, a shorter one is; a bad value is refused and nothing is stored."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from textgen import work

from tracker.documents.readers import Document
from tracker.library import MATCHING_META, Library
from tracker.matching.matcher import MatchPolicy
from tracker.plumbing.config import DEFAULT_MIN_COPIED, SURE_COPIED, Settings
from tracker.store import open_store
from tracker.text.pinyin import initials


@pytest.fixture()
def lib(tmp_path, redis_client):
    settings = Settings(data_dir=tmp_path, redis_prefix="t")
    library = Library(settings, open_store(settings), redis_client)
    library.ingest(
        [Document(id=f"work-{i}", title=f"作品{i}", text=work(300 + i, 60)) for i in range(4)]
    )
    yield library
    library.store.close()


def _suspect(chars: int) -> tuple[str, int]:
    """``chars`` characters of work-1 from a sentence start, after unrelated text (the
    copy ends the suspect, so it is exactly what was copied), and how many initials."""
    mother = work(301, 60)
    start = mother.index("。", 900) + 1
    excerpt = mother[start : start + chars]
    return work(399, 20)[:300] + "。" + excerpt, len(initials(excerpt))


def test_raising_the_minimum_copied_length_drops_a_short_copy(lib) -> None:
    text, copied = _suspect(110)
    assert 80 < copied < 110
    assert [m.mother_id for m in lib.check_text(text).matches] == ["work-1"]
    lib.configure_matching(min_copied=150)
    assert lib.min_copied() == 150
    assert lib.check_text(text).matches == []
    lib.configure_matching(min_copied=SURE_COPIED)
    assert [m.mother_id for m in lib.check_text(text).matches] == ["work-1"]


def test_it_is_the_floor_of_a_short_distinctive_copy(lib) -> None:
    # 60-85 initials: under the length from which any copy that reads alike counts
    # (SURE_COPIED), over the default floor: reported as a distinctive short copy until
    # the library raises its floor above it.
    text, copied = _suspect(70)
    assert DEFAULT_MIN_COPIED < 60 < copied < SURE_COPIED
    assert [m.mother_id for m in lib.check_text(text).matches] == ["work-1"]
    lib.configure_matching(min_copied=copied + 1)
    assert lib.check_text(text).matches == []


def test_lowering_it_reports_a_shorter_copy(lib) -> None:
    text, copied = _suspect(50)
    assert 40 < copied < DEFAULT_MIN_COPIED
    assert lib.check_text(text).matches == []
    lib.configure_matching(min_copied=40)
    assert [m.mother_id for m in lib.check_text(text).matches] == ["work-1"]


@pytest.mark.parametrize("bad", [0, 19, 5001, "80", 80.0, True])
def test_a_bad_value_is_refused_and_nothing_is_stored(lib, bad) -> None:
    with pytest.raises(ValueError, match="minimum copied length"):
        lib.configure_matching(min_copied=bad)
    assert lib.store.get_meta(MATCHING_META) is None
    assert lib.min_copied() == MatchPolicy().min_copied == DEFAULT_MIN_COPIED


def test_a_damaged_stored_value_is_an_error_naming_the_setting(lib) -> None:
    lib.store.set_meta(MATCHING_META, {"min_copied": "many"})
    with pytest.raises(ValueError, match=f"library setting {MATCHING_META}.*'many'"):
        lib.check_text(_suspect(110)[0])


def test_index_configure_min_copied_from_the_command_line(tmp_path) -> None:
    from tracker.cli import main

    data = tmp_path / "data"
    runner = CliRunner()
    bad = runner.invoke(main, ["--data-dir", str(data), "index", "configure", "--min-copied", "5"])
    assert bad.exit_code == 2 and "from 20 to 5000, got 5" in bad.output
    assert not data.exists()  # refused before anything was read or created
    data.mkdir()  # an existing library (only ingest starts one)
    ok = runner.invoke(main, ["--data-dir", str(data), "index", "configure", "--min-copied", "120"])
    assert ok.exit_code == 0, ok.output
    assert "minimum copied length 120" in ok.output and "index rebuilt" not in ok.output
    with Library.open(Settings(data_dir=data)) as lib:
        assert lib.min_copied() == 120


def test_daguan_candidate_options_from_the_command_line(tmp_path) -> None:
    """`index configure --min-hits/--weak-candidates`: stored with the engine's options,
    used by the next check, no rebuild; bad values refused and nothing stored."""
    import json

    from tracker.cli import main

    data = tmp_path / "data"
    base = ["--data-dir", str(data)]
    works = tmp_path / "works.jsonl"
    works.write_text(
        json.dumps({"id": "w", "title": "作品", "text": work(310, 40)}, ensure_ascii=False),
        "utf-8",
    )
    runner = CliRunner()
    assert runner.invoke(main, [*base, "ingest", str(works)]).exit_code == 0
    bad = runner.invoke(main, [*base, "index", "configure", "--weak-candidates", "-1"])
    assert bad.exit_code == 2 and "weak_candidates must be a whole number from 0 to 64" in (
        bad.output
    )
    ok = runner.invoke(
        main, [*base, "index", "configure", "--min-hits", "3", "--weak-candidates", "0"]
    )
    assert ok.exit_code == 0, ok.output
    assert "min_hits 3, weak_candidates 0" in ok.output and "index rebuilt" not in ok.output
    with Library.open(Settings(data_dir=data)) as lib:
        options = lib.store.get_meta("engine:daguan:options")
        assert (options["min_hits"], options["weak_candidates"]) == (3, 0)
        eng = lib.engine("daguan")
        assert (eng.min_hits, eng.weak_candidates) == (3, 0)
        assert lib.index_health("daguan").state == "ok"  # nothing was rebuilt or lost
