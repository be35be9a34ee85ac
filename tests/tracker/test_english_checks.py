"""English works through a real check (tracker.library): copies of 150 to 2,500
characters with evasions inside unrelated English text, other English text not flagged,
long suspects read in windows, and mixed texts (a Chinese chapter quoting English, an
English translation keeping Chinese names)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from textgen import work

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.matching.matcher import Matcher
from tracker.plumbing.config import Settings
from tracker.text.units import LOOKALIKES

DATA = Path(__file__).resolve().parents[1] / "data" / "english"
BOOK = (DATA / "time_machine_ch2_3.txt").read_text(encoding="utf-8")
HOST = (DATA / "treasure_island_ch1_2.md").read_text(encoding="utf-8")
QUOTE = (
    "The Time Traveller smiled round at us. Then, still smiling faintly, and with his "
    "hands deep in his trousers pockets, he walked slowly out of the room"
)
ZH = work(5001, 40)
NAMES = "Lin Feng (林风) and Su Qing (苏晴)"


def evade(text: str, rate: float, seed: int) -> str:
    rng = random.Random(seed)
    swap: dict[str, str] = {}
    for fake, latin in LOOKALIKES.items():
        if fake.islower():
            swap.setdefault(latin, fake)
    out = []
    for ch in text:
        out.append(swap[ch] if ch in swap and rng.random() < rate else ch)
        if ch.isalpha() and rng.random() < 0.02:
            out.append("\u200b")
    return "".join(out)


def rewrap(text: str, width: int) -> str:
    """The words of ``text`` in lines of at most ``width`` characters (a site's own
    line breaks), one word in twenty cut at the line end with a hyphen."""
    lines, line = [], ""
    for i, word in enumerate(text.split()):
        if len(line) + len(word) + 1 > width:
            if i % 20 == 0 and len(word) > 5:
                lines.append(f"{line} {word[:3]}-")
                line = word[3:]
                continue
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    folder = tmp_path_factory.mktemp("english") / "data"
    translation = (
        f"{NAMES} stood at the gate. " + " ".join(BOOK.split()[2000:2600]) + f" {NAMES} left."
    )
    with Library.open(Settings(data_dir=folder)) as lib:
        lib.ingest(
            [
                Document(id="time-machine", title="The Time Machine", text=BOOK),
                Document(id="zh-quoting", title="引文", text=ZH[:1500] + QUOTE + ZH[1500:3000]),
                Document(id="translation", title="Translation", text=translation),
            ]
        )
        yield lib


def at(text: str, length: int, seed: int) -> tuple[int, str]:
    a = random.Random(seed).randrange(0, len(text) - length)
    return a, text[a : a + length]


@pytest.mark.parametrize("length", [150, 300, 600, 1500, 2500])
def test_an_evaded_english_copy_inside_english_text_is_found_where_it_is(
    library: Library, length: int
) -> None:
    a, copied = at(BOOK, length, length)
    evaded = rewrap(evade(copied, 0.3, length), 64)
    page = HOST[:1200] + "\n\n" + evaded + "\n\n" + HOST[1200:]
    result = library.check_text(page)
    assert result.warnings == []
    # (The translation in the library holds words 2000-2600 of the book too.)
    assert {m.mother_id for m in result.matches} - {"translation"} == {"time-machine"}
    (match,) = [m for m in result.matches if m.mother_id == "time-machine"]
    start, end = 1202, 1202 + len(evaded)
    # At an edge a passage may take one word more or less (a unit of a word around the
    # copy can carry the same letter as the mother's by chance, as an initial can).
    for p in match.passages:
        assert start - 15 <= p.suspect_start and p.suspect_end <= end + 15
        assert a - 20 <= p.mother_start and p.mother_end <= a + length + 20
    covered = sum(p.suspect_end - p.suspect_start for p in match.passages)
    assert covered >= 0.8 * len(evaded)


def test_other_english_text_is_not_flagged(library: Library) -> None:
    assert library.check_text(HOST).matches == []
    # The same words in another order are no copy either.
    words = BOOK.split()[:400]
    random.Random(3).shuffle(words)
    assert library.check_text(" ".join(words)).matches == []


def test_a_long_english_suspect_is_read_in_windows(library: Library) -> None:
    text = (HOST + BOOK[5000:15000]) * 4
    matcher = Matcher(library.store, library.engine(), policy=library.policy, window_chars=12_000)
    windowed = matcher.match(text)
    assert {m.mother_id for m in windowed.matches} - {"translation"} == {"time-machine"}
    (match,) = [m for m in windowed.matches if m.mother_id == "time-machine"]
    copies = [text.index(BOOK[5000:5100], i) for i in (0, 14_000, 27_000, 40_000)]
    for c in copies:  # every copy is in a passage
        assert any(p.suspect_start <= c + 50 < p.suspect_end for p in match.passages)


def test_a_chinese_chapter_quoting_english_and_a_translation_keeping_names(
    library: Library,
) -> None:
    # The Chinese part and the quoted English sentence of a Chinese chapter.
    page = work(5002, 10) + ZH[1000:1500] + QUOTE + ZH[1500:1700] + work(5003, 10)
    (match,) = library.check_text(page).matches
    assert match.mother_id == "zh-quoting"
    # An English translation keeping the names in characters.
    words = " ".join(BOOK.split()[2100:2300])
    page = f"{HOST[:800]} {NAMES} stood at the gate. {words} {HOST[800:]}"
    found = {m.mother_id for m in library.check_text(page).matches}
    assert "translation" in found
