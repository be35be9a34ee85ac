"""Discovery's queries for an English work (issue 40): distinctive English sentences,
spread over the work, quoted; a Chinese work's queries as before."""

from __future__ import annotations

from pathlib import Path

from textgen import work

from tracker.discovery.queries import (
    LibraryStats,
    english_score,
    english_sentences,
    is_english,
    work_queries,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "english"
BOOK = (DATA / "time_machine_ch2_3.txt").read_text(encoding="utf-8")
OTHER = (DATA / "treasure_island_ch1_2.md").read_text(encoding="utf-8")


def test_english_sentences_join_wrapped_lines() -> None:
    text = "He looked at the ma-\nchine and\nsmiled. Then he left; it was late."
    assert english_sentences(text) == [
        "He looked at the machine and smiled.",
        "Then he left",
        "it was late.",
    ]


def test_rare_words_score_higher_than_common_ones() -> None:
    assert english_score("loomed indistinctly beyond the rhododendrons") > english_score(
        "it was the best of times and it was"
    )


def test_an_english_work_gets_distinctive_english_sentences() -> None:
    stats = LibraryStats([BOOK, OTHER])
    assert is_english(BOOK) and not is_english(work(1, 20))
    queries = work_queries("tm", "The Time Machine", BOOK, stats, limit=8, author="H. G. Wells")
    assert queries[0].text == '"The Time Machine" H. G. Wells' and queries[0].kind == "title"
    sentences = [q for q in queries if q.kind == "sentence"]
    assert len(sentences) == 7
    flat = " ".join(BOOK.split())
    for q in sentences:
        phrase = q.text.strip('"')
        assert 6 <= len(phrase.split()) <= 16
        assert not any(ch.isdigit() for ch in phrase)
        # Each is the book's own words, as a search engine reads them (lines joined).
        assert phrase.rstrip(".?!") in flat.replace("-\n", ""), phrase
    # Spread over the work: from both chapters.
    positions = sorted(flat.index(q.text.strip('"').rstrip(".?!")) for q in sentences)
    assert positions[0] < len(flat) / 2 < positions[-1]


def test_a_chinese_work_is_queried_by_its_chinese_sentences() -> None:
    text = work(7, 40)
    queries = work_queries("zh", "寒江夜渡", text, LibraryStats([text]), limit=5)
    assert [q.kind for q in queries][:1] == ["title"]
    assert all(len(q.text) <= 40 for q in queries if q.kind == "sentence")
