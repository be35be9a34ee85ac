"""Issue #26 through a real check: noise at a fixed rhythm, ad lines inside a copy,
reversed bidi text, and documents that are not Chinese (CLI, --json)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from textgen import work

from tracker.common.records import Suspect
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings

WORK = work(2601, 60)
COPY = WORK[700:1500]  # 800 characters copied


def prose(seed: int, sentences: int) -> str:
    """Sentences of 12-40 characters drawn at random from 4,000 CJK ideographs: no phrase
    repeats (textgen's phrase lists do, and then the alignment meets them elsewhere in
    the work, which is not what these tests are about)."""
    import random

    rng = random.Random(seed)
    return "".join(
        "".join(chr(rng.randrange(0x4E00, 0x4E00 + 4000)) for _ in range(rng.randint(12, 40)))
        + "。"
        for _ in range(sentences)
    )


PROSE = prose(26, 80)
# A list that repeats a string at a fixed rhythm in the work itself (real text does:
# lists of arbitration commissions in a law).
LIST = "".join(name[:2] + "仲裁委员会、" for name in prose(31, 40).split("。")[:40])
ADS = ["最新章节请到笔趣阁阅读", "天才一秒记住本站地址", "手机用户请浏览阅读"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("noise") / "data"
    with Library.open(Settings(data_dir=folder)) as lib:
        lib.ingest([Document(id="work-1", title="原作", text=WORK)])
        lib.ingest([Document(id="prose", title="散文", text=PROSE)])
        lib.ingest([Document(id="list", title="名录", text=work(5, 10) + LIST + work(6, 10))])
        lib.ingest([Document(id="other", title="别的", text=work(77, 60))])
    yield folder


@pytest.fixture(scope="module")
def library(data: Path) -> Iterator[Library]:
    with Library.open(Settings(data_dir=data)) as lib:
        yield lib


def test_a_copy_under_a_watermark_every_ten_characters_is_found(library: Library) -> None:
    suspect = "".join(COPY[i : i + 10] + "风花雪月" for i in range(0, len(COPY), 10))
    checked = library.check_suspect(Suspect(id="marked", text=suspect), save=False)
    (match,) = checked.matches
    assert match.mother_id == "work-1"
    # The evidence points into the suspect as it is, marks and all, over the copy.
    (p,) = match.passages
    assert p.suspect_start <= 10 and p.suspect_end >= len(suspect) - 14
    assert suspect[p.suspect_start : p.suspect_end].replace("风花雪月", "") in COPY
    assert WORK[p.mother_start : p.mother_end] == suspect[p.suspect_start : p.suspect_end].replace(
        "风花雪月", ""
    )
    line = checked.to_json()
    assert line["noise"] == [{"text": "风花雪月", "count": 80, "period": 14, "line": False}]
    assert line["warnings"] == []


def test_passages_leave_out_the_ad_lines(library: Library) -> None:
    copy = PROSE[500:1500]
    sentences = [s + "。" for s in copy.split("。") if s]
    text = ""
    for i, sentence in enumerate(sentences):
        text += sentence
        if i % 2 == 1:
            text += "\n" + ADS[i % 3] + "\n"
    checked = library.check_suspect(Suspect(id="ads", text=text), save=False)
    (match,) = checked.matches
    assert match.mother_id == "prose"
    inside = len(range(1, len(sentences) - 1, 2))  # ad lines with copied text after them
    assert len(match.passages) == inside + 1
    for p in match.passages:
        copied = text[p.suspect_start : p.suspect_end]
        assert "\n" not in copied and not any(ad in copied for ad in ADS), copied
        assert copied == PROSE[p.mother_start : p.mother_end]
    # Every copied sentence is in a passage (the full stops between them may not be).
    covered = "".join(text[p.suspect_start : p.suspect_end] for p in match.passages)
    assert len(covered) >= len(copy) - len(sentences)


def test_reversed_text_shown_right_to_left_is_read_as_shown(library: Library) -> None:
    shown = COPY[:300]
    result = library.check_text("\u202e" + shown[::-1] + "\u202c")
    assert [m.mother_id for m in result.matches] == ["work-1"]


def test_an_unreadable_script_is_never_a_silent_no_match(data: Path, tmp_path: Path) -> None:
    from tracker.cli import main

    russian = tmp_path / "russian.txt"
    russian.write_text("Все счастливые семьи похожи друг на друга. " * 30)
    few = tmp_path / "few.txt"
    few.write_text("他说：你好，朋友。")
    english = tmp_path / "english.txt"  # a script Yinji reads: no warning
    english.write_text("It was the best of times, it was the worst of times. " * 30)
    chinese = tmp_path / "copy.txt"
    chinese.write_text(COPY)
    args = ["--data-dir", str(data), "check", "--no-save", "--json"]
    r = CliRunner().invoke(main, [*args, str(russian), str(few), str(english), str(chinese)])
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    codes = [[w["code"] for w in line["warnings"]] for line in lines]
    assert codes == [["no-chinese"], ["few-chinese"], [], []]
    assert [len(line["matches"]) for line in lines] == [0, 0, 0, 1]
    warned = [x for x in r.stderr.splitlines() if x.startswith("warning:")]
    assert len(warned) == 2
    assert "russian.txt: no Chinese text" in warned[0]
    assert "few.txt: only 6 Chinese characters" in warned[1]


def test_a_copy_of_a_list_that_repeats_a_string_loses_nothing(library: Library) -> None:
    # The rhythm rule finds 仲裁委员会、 in it; the check also reads it as it is.
    checked = library.check_suspect(Suspect(id="list-copy", text=LIST), save=False)
    assert [n.text for n in checked.result.noise] == ["仲裁委员会、"]
    (match,) = checked.matches
    assert match.mother_id == "list"
    (p,) = match.passages
    assert (p.suspect_start, p.suspect_end) == (0, len(LIST) - 1)  # the last 、 is no initial
