"""What a book file reads as (the contract of issue #36, shared with
``tracker.books.parse``): a ``ParsedBook`` of ``ParsedChapter`` objects, or a
``BookFileError`` naming the file. Plain dataclasses, no behaviour: the reader
(``tracker.books.parse``) makes them, ``tracker.books.service`` stores them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ParsedChapter:
    index: int  # 1-based position in the book, file order
    title: str  # the heading as in the book ("第四十一回 心猿遭火败 木母被魔擒"); "" if none
    text: str  # the chapter's body text (heading line not included)
    volume: str = ""  # the volume heading it sits under ("第一卷 …"), if any


@dataclass
class ParsedBook:
    title: str  # from metadata, a 《书名》 heading/title line, or the file name, in that order
    author: str = ""
    chapters: list[ParsedChapter] = field(default_factory=list)
    source: str = ""  # file name / path
    series: str = ""
    isbn: str = ""
    language: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def characters(self) -> int:
        """Characters of chapter text in all (headings not counted)."""
        return sum(len(c.text) for c in self.chapters)


class BookFileError(ValueError):
    """A book file that cannot be read; the message names the file."""
