"""The mutations of the English evaluation (``bench/eval_english.py``), pure functions of
a text and a seeded random stream: look-alike letters, word edits, sentence shuffles,
re-wrapped lines, zero-width characters. ``tests/bench/test_english_mutations.py`` proves
each does what it says.
"""

from __future__ import annotations

import random
import re
import unicodedata

# Look-alike letters: Cyrillic and Greek letters that read as these Latin ones.
HOMOGLYPHS: dict[str, str] = {
    "a": "а",
    "c": "с",
    "e": "е",
    "i": "і",
    "j": "ј",
    "o": "оο",
    "p": "р",
    "s": "ѕ",
    "v": "ν",
    "x": "х",
    "y": "у",
    "A": "АΑ",
    "B": "ВΒ",
    "C": "С",
    "E": "ЕΕ",
    "H": "НΗ",
    "I": "ІΙ",
    "K": "КΚ",
    "M": "МΜ",
    "N": "Ν",
    "O": "ОΟ",
    "P": "РΡ",
    "T": "ТΤ",
    "X": "ХΧ",
    "Y": "Υ",
    "Z": "Ζ",
}
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# A sentence ends at . ! or ? (closing quotes kept with it) before space and a capital.
SENTENCE_END = re.compile(r"[.!?][\"'”’)]*(?=\s+[\"'“‘(]?[A-Z])")


# The harness's own judge undoes its mutations before it compares words.
UNDO = str.maketrans(
    {g: k for k, v in HOMOGLYPHS.items() for g in v} | {z: None for z in ZERO_WIDTH}
)


def words_of(text: str) -> list[str]:
    """The words of a text, casefolded, accents, look-alike letters and zero-width
    characters undone (how the harness compares texts to judge a pair)."""
    plain = unicodedata.normalize("NFKD", text.translate(UNDO).casefold())
    return WORD.findall("".join(c for c in plain if not unicodedata.combining(c)))


def snap(text: str, a: int, b: int) -> tuple[int, int]:
    """[a, b) moved inward to word boundaries: it starts and ends with whole words."""
    while 0 < a < len(text) and not text[a - 1].isspace():
        a += 1
    while a < len(text) and text[a].isspace():
        a += 1
    while a < b < len(text) and not text[b].isspace():
        b -= 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def sentences(text: str) -> list[str]:
    """The sentences of a text, whitespace inside each made single spaces."""
    flat = " ".join(text.split())
    out, at = [], 0
    for m in SENTENCE_END.finditer(flat):
        out.append(flat[at : m.end()].strip())
        at = m.end()
    out.append(flat[at:].strip())
    return [s for s in out if s]


def shuffle_sentences(text: str, rng: random.Random) -> str:
    """The sentences in another order (when there are two or more), one space between."""
    sents = sentences(text)
    order = list(range(len(sents)))
    if len(sents) > 1:
        while order == sorted(order):
            rng.shuffle(order)
    return " ".join(sents[i] for i in order)


def edit_words(
    text: str, rate: float, rng: random.Random, pool: list[str]
) -> tuple[str, list[tuple[str, int]]]:
    """``rate`` of the words edited: each chosen word substituted by a word of ``pool``
    (60 %), deleted (20 %) or preceded by an inserted word (20 %). The edits, as
    (operation, word index), are returned with the text."""
    tokens = re.split(r"(\s+)", text)
    word_at = [i for i, t in enumerate(tokens) if t and not t.isspace()]
    k = max(1, round(rate * len(word_at)))
    chosen = sorted(rng.sample(range(len(word_at)), k))
    edits: list[tuple[str, int]] = []
    for w in chosen:
        i = word_at[w]
        r = rng.random()
        if r < 0.6:
            tokens[i] = rng.choice([p for p in pool if p != tokens[i]])
            edits.append(("sub", w))
        elif r < 0.8:
            tokens[i] = ""
            if i + 1 < len(tokens):  # the space after it goes too
                tokens[i + 1] = ""
            edits.append(("del", w))
        else:
            tokens[i] = rng.choice(pool) + " " + tokens[i]
            edits.append(("ins", w))
    return "".join(tokens).strip(), edits


def homoglyphs(text: str, rate: float, rng: random.Random) -> str:
    """Letters that have a Cyrillic or Greek look-alike replaced by one with chance
    ``rate``."""
    return "".join(
        rng.choice(HOMOGLYPHS[c]) if c in HOMOGLYPHS and rng.random() < rate else c for c in text
    )


def zero_width(text: str, rate: float, rng: random.Random) -> str:
    """A zero-width character or soft hyphen inside words, one word in ``1/rate``."""

    def mark(m: re.Match[str]) -> str:
        w = m.group(0)
        if len(w) < 2 or rng.random() >= rate:
            return w
        at = rng.randrange(1, len(w))
        return w[:at] + rng.choice(ZERO_WIDTH) + w[at:]

    return re.sub(r"\S+", mark, text)


def rewrap(text: str, width: int) -> str:
    """Hard line breaks at ``width`` columns; a word of six letters or more that does not
    fit is hyphenated across the break (``neigh-`` / ``bourhood``) when three or more
    letters fit."""
    lines, line = [], ""
    for word in text.split():
        room = width - len(line) - (1 if line else 0)
        if len(word) <= room:
            line = f"{line} {word}" if line else word
            continue
        if word.isalpha() and len(word) >= 6 and room >= 4:
            cut = min(room - 1, len(word) - 3)
            if cut >= 3:
                lines.append(f"{line} {word[:cut]}-" if line else f"{word[:cut]}-")
                line = word[cut:]
                continue
        if line:
            lines.append(line)
        line = word
    if line:
        lines.append(line)
    return "\n".join(lines)


def unwrap(text: str) -> str:
    """``rewrap`` undone: hyphen-newline joined, newlines made spaces."""
    return text.replace("-\n", "").replace("\n", " ")
