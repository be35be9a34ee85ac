"""Reordered copies are reported as the segment pairs that really align (issue #15).

Four sentences of a work copied in reverse order used to be one passage 0–160 ↔ 0–160
with similarity 1.00 although the two slices read very differently; the passage now also
lists each suspect sentence with its mother sentence, and the report shows those pairs
with their own character similarity.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

import pytest
from textgen import work

from tracker.common.records import Passage, Segment, Suspect, match_id
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.matching.align import align
from tracker.plumbing.config import Settings
from tracker.reports.data import report_data

# Four sentences; the seam 太阳。春 (S1 → S0) in the reversed copy meets 太阳。城 in the
# work: 春 and 城 share the initial c, so only the characters can tell where S1's pair
# ends and S0's begins.
S = [
    "春风又绿江南岸明月何时照我还京口瓜洲一水间钟山只隔数重山他站在城楼上远远望着故乡的方向",
    "那一年的冬天特别寒冷河面上结了厚厚的冰孩子们在冰上奔跑嬉戏老人们坐在屋檐下晒太阳",
    "城东的集市每逢初五开张卖菜的卖布的说书的唱戏的把一条长街挤得水泄不通热闹非凡",
    "夜深了灯火一盏一盏熄灭只剩下更夫的梆子声在空荡荡的巷子里回响直到天边泛白",
]
MOTHER = "。".join(S) + "。"
REVERSED = "。".join(reversed(S)) + "。"


def _pairs(suspect: str, mother: str, p: Passage) -> list[tuple[str, str]]:
    return [
        (suspect[g.suspect_start : g.suspect_end], mother[g.mother_start : g.mother_end])
        for g in p.segments
    ]


def test_reversed_sentences_are_four_pairs_each_with_its_own_sentence() -> None:
    a = align(REVERSED, MOTHER)
    assert len(a.passages) == 1
    p = a.passages[0]
    # Each suspect sentence is paired with the same sentence of the work, exactly
    # (the seam 春/城 goes to the right side).
    assert _pairs(REVERSED, MOTHER, p) == [(s, s) for s in reversed(S)]
    assert [g.similarity for g in p.segments] == [1.0] * 4
    # The passage's own spans read alike only in pieces: that is why the pairs are there.
    whole = difflib.SequenceMatcher(
        None, REVERSED[p.suspect_start : p.suspect_end], MOTHER[p.mother_start : p.mother_end]
    ).ratio()
    assert whole < 0.5


def test_a_copy_in_order_has_no_segments_and_no_key() -> None:
    text = work(41, 12)
    pirate = "本站首发" + text[50:700] + "请收藏本站"
    a = align(pirate, text)
    assert len(a.passages) == 1
    assert a.passages[0].segments == []
    assert "segments" not in a.passages[0].to_dict()


def test_homophone_reordered_copy_pairs_show_the_differing_characters() -> None:
    # Homophones in two sentences: same initials, other characters.
    swapped = [S[0].replace("江南", "姜楠"), S[1], S[2].replace("集市", "极市"), S[3]]
    suspect = "。".join([swapped[2], swapped[0], swapped[3], swapped[1]]) + "。"
    p = align(suspect, MOTHER).passages[0]
    pairs = _pairs(suspect, MOTHER, p)
    assert [m for _s, m in pairs] == [S[2], S[0], S[3], S[1]]
    assert [s for s, _m in pairs] == [swapped[2], swapped[0], swapped[3], swapped[1]]
    assert all(g.similarity == 1.0 for g in p.segments)  # initials cannot see homophones


def test_passage_round_trips_with_its_segments() -> None:
    p = Passage(0, 10, 20, 30, 0.9, [Segment(0, 4, 26, 30, 1.0), Segment(5, 10, 20, 25, 0.8)])
    d = p.to_dict()
    assert d["segments"][1] == {
        "suspect_start": 5,
        "suspect_end": 10,
        "mother_start": 20,
        "mother_end": 25,
        "similarity": 0.8,
    }
    assert Passage.from_dict(d) == p
    # Records written before segments existed still read.
    del d["segments"]
    assert Passage.from_dict(d).segments == []


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    lib = Library.open(Settings(data_dir=tmp_path_factory.mktemp("segments") / "data"))
    try:
        # The four sentences inside a longer work, so the copy is a small part of it.
        lib.ingest([Document(id="work-1", title="作品", text=work(42, 10) + MOTHER + work(43, 10))])
        yield lib
    finally:
        lib.close()


def test_stored_check_and_report_show_the_pairs_with_their_character_similarity(
    library: Library,
) -> None:
    swapped = S[2].replace("集市", "极市")
    suspect = "。".join([S[3], swapped, S[1], S[0]]) + "。"
    result = library.check_suspect(Suspect(id="page-1", text=suspect, title="盗版"))
    assert [m.mother_id for m in result.matches] == ["work-1"]
    stored = library.store.get_match(match_id("page-1", "work-1"))
    (passage,) = stored.passages
    assert len(passage.segments) == 4  # kept by the store
    data = report_data(library, match_id("page-1", "work-1"))
    (p,) = data["passages"]
    segs = p["segments"]
    assert [s["suspect_text"] for s in segs] == [S[3], swapped, S[1], S[0]]
    assert [s["mother_text"] for s in segs] == [S[3], S[2], S[1], S[0]]
    assert [s["initials_similarity"] for s in segs] == [1.0] * 4
    chars = [s["char_similarity"] for s in segs]
    assert chars[0] == chars[2] == chars[3] == 1.0
    assert 0.9 < chars[1] < 1.0  # 集市 → 极市: two characters of 38 differ
    assert p["char_similarity"] is not None and p["char_similarity"] < 0.5


def test_html_and_pdf_reports_list_the_pairs(library: Library) -> None:
    from pypdf import PdfReader

    from tracker.reports import build_report

    suspect = "。".join([S[3], S[2], S[1], S[0]]) + "。"
    library.check_suspect(Suspect(id="page-2", text=suspect, title="盗版"))
    html = build_report(library, match_id("page-2", "work-1"), "html").decode()
    assert all(f">1.{i}<" in html for i in range(1, 5))
    import io

    pdf = PdfReader(io.BytesIO(build_report(library, match_id("page-2", "work-1"), "pdf")))
    text = "".join(page.extract_text() for page in pdf.pages)
    assert all(f"1.{i}" in text for i in range(1, 5))


def test_check_table_lists_the_pairs(tmp_path: object) -> None:
    import json
    from pathlib import Path

    from click.testing import CliRunner

    from tracker.cli import main

    root = Path(str(tmp_path))
    (root / "lib.jsonl").write_text(
        json.dumps({"id": "w", "title": "作品", "text": work(42, 10) + MOTHER}, ensure_ascii=False),
        encoding="utf-8",
    )
    (root / "page.txt").write_text(REVERSED, encoding="utf-8")
    data = ["--data-dir", str(root / "data")]
    assert CliRunner().invoke(main, [*data, "ingest", str(root / "lib.jsonl")]).exit_code == 0
    out = CliRunner().invoke(main, [*data, "check", str(root / "page.txt")]).output
    assert "4 reordered pairs" in out
    start = len(work(42, 10)) + MOTHER.index(S[3])  # the last sentence, copied first
    lines = [ln.strip() for ln in out.splitlines()]
    assert f"0-{len(S[3])} <- {start}-{start + len(S[3])} (1.00)" in lines
