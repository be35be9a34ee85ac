"""Chapter order: the number in a chapter's title or link text (第N章, 第N回, 第N节,
Chapter N, "12. ..."), in Chinese or Arabic numerals (full-width too), with page order
as the tie-breaker. A pirate index that lists its "最新章节" first (3, 1, 2) is read
1, 2, 3; a title without a number keeps its place after the numbered ones.

Hand-written rather than a dependency: Chinese numerals below 万万 are a dozen lines
(``cn2an`` would bring PyYAML and a second package for this one conversion); the one
``chinese_number`` and ``chapter_number`` live in ``tracker.text.numerals`` (chapter
headings of whole books; the reader of a work's book, ``tracker.common.records.ChapterRef``,
numbers a legacy chapter by its heading with them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from tracker.text.numerals import chapter_number, chinese_number

__all__ = ["chapter_number", "chinese_number", "in_chapter_order"]

T = TypeVar("T")


def in_chapter_order(items: Sequence[T], text: Callable[[T], str | Iterable[str]]) -> list[T]:
    """``items`` sorted by the chapter number of ``text(item)`` (the first of several
    texts that states one); page order breaks ties, unnumbered items go last."""

    def key(pair: tuple[int, T]) -> tuple[int, int, int]:
        index, item = pair
        texts = text(item)
        for t in [texts] if isinstance(texts, str) else texts:
            number = chapter_number(t)
            if number is not None:
                return (0, number, index)
        return (1, 0, index)

    return [item for _, item in sorted(enumerate(items), key=key)]
