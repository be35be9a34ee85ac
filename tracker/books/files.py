"""Whole-book files read for an ingest (issue #36): which files are books
(``may_be_book``, ``parse_book_file``), their ids (``book_id_for``, ``chapter_work_id``),
and ``EarlyReads``, the files ``yinji ingest`` reads while the library opens. The
reading itself is ``tracker.books.parse``'s; ``tracker.books.service.BookIngest`` makes
the chapter documents."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tracker.common.ids import check_id, id_problem
from tracker.documents.readers import (
    DocumentError,
    decode_html_bytes,
    decode_text,
    docx_text,
    extract_html,
    file_label,
)

from .types import ParsedBook

#: How ``yinji ingest`` takes files: books where found (``auto``), every file a book
#: (``--book``), every file one work (``--as-works``).
IngestMode = Literal["auto", "book", "works"]

# A numbered chapter heading anywhere in a text: the cheap test that decides whether a
# file is worth reading as a book at all (``tracker.books.parse`` decides for real).
_HEADING = re.compile(
    r"第\s*[0-9０-９零〇一二三四五六七八九十百千万两壹贰叁肆伍陆柒捌玖拾佰仟]+\s*[章回囘节節卷集]"
)


def may_be_book(text: str) -> bool:
    """True when ``text`` names at least two numbered chapters (第N章/回/节/卷/集):
    only then is a plain file read by the book reader in ``auto`` mode."""
    return any(n >= 1 for n, _ in enumerate(_HEADING.finditer(text)))


def book_from_file(name: str, data: bytes) -> ParsedBook:
    """A whole-book file (.txt .html .htm .docx .epub) read into chapters
    (``tracker.books.parse.read_book``); ``BookFileError`` naming the file."""
    from tracker.books.parse import read_book

    return read_book(name, data)


def book_from_chapter_files(name: str, files: list[tuple[str, bytes]]) -> ParsedBook:
    """A folder or zip of chapter files read as one book
    (``tracker.books.parse.book_from_files``)."""
    from tracker.books.parse import book_from_files

    return book_from_files(name, files)


def chapter_work_id(book_id: str, index: int) -> str:
    return f"{book_id}-{index:04d}"


def book_id_for(name: str, title: str = "") -> str:
    """A book id from a file or folder name (its stem), else from a digest of the name
    and title (a stem that is no valid id)."""
    stem = Path(name.rsplit("!", 1)[-1].replace("\\", "/")).stem
    if stem and id_problem(stem) is None and len(stem) <= 120:
        return check_id(stem)
    digest = hashlib.sha1(f"{name}\x1f{title}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"book-{digest[:12]}"


def parse_book_file(data: bytes, name: str, mode: IngestMode) -> ParsedBook | DocumentError | None:
    """A file's book as ``BookIngest.read_file`` takes it: the parsed book, its error
    named, or None to read the file as one work (``mode`` "works", or in "auto" a file
    without two chapter headings)."""
    suffix = Path(name).suffix.lower()
    if mode == "works" and suffix != ".epub":
        return None
    with _decoding_once():  # a TXT read here and by the book reader: decoded once
        if mode == "auto" and suffix != ".epub":
            try:
                text = _plain_text(data, name, suffix)
            except ValueError:
                return None  # the document reader says what is wrong with it
            if not may_be_book(text):
                return None
        try:
            parsed = book_from_file(name, data)
        except ValueError as exc:  # BookFileError, named by the reader
            return DocumentError(name, str(exc).removeprefix(f"{name}: "))
    if mode == "auto" and suffix != ".epub" and len(parsed.chapters) < 2:
        return None  # a plain work after all
    return parsed


@dataclass
class _EarlyRead:
    data: bytes
    parsed: ParsedBook | DocumentError | None


class EarlyReads:
    """Whole-book files read and parsed in a thread of their own while the caller opens
    the library (``yinji ingest``: the embedded index server starts meanwhile). Only
    plain files given by path are read early; ``BookIngest.read_file`` takes a file's
    result when the bytes it was handed are the same, else reads them itself."""

    SUFFIXES = (".txt", ".html", ".htm", ".docx", ".epub")

    def __init__(
        self, paths: Iterable[str | Path], mode: IngestMode, max_bytes: int = 64 << 20
    ) -> None:
        self.mode = mode
        files = [Path(p) for p in paths]
        self._wanted = [
            f for f in files if f.suffix.lower() in self.SUFFIXES and _small_file(f, max_bytes)
        ]
        self._done: dict[str, _EarlyRead] = {}
        self._thread = threading.Thread(target=self._read_all, name="yinji-book-read", daemon=True)
        if self._wanted and mode != "works":
            self._thread.start()

    def _read_all(self) -> None:
        for f in self._wanted:
            name = file_label(os.fsdecode(f))
            try:
                data = f.read_bytes()
                self._done[name] = _EarlyRead(data, parse_book_file(data, name, self.mode))
            except Exception:  # read again (and its error said) by the ingest
                continue

    def wait(self) -> None:
        """Until every file is read (at once when none was to be read early)."""
        if self._thread.ident is not None:
            self._thread.join()

    def take(self, name: str, data: bytes) -> _EarlyRead | None:
        """The early read of ``name`` when it read these bytes (waiting for the reader);
        None when it read none, or other bytes (the file changed meanwhile)."""
        self.wait()
        read = self._done.pop(name, None)
        return read if read is not None and read.data == data else None


def _small_file(path: Path, max_bytes: int) -> bool:
    try:
        return path.is_file() and path.stat().st_size <= max_bytes
    except OSError:
        return False


def _decoding_once() -> contextlib.AbstractContextManager[None]:
    from tracker.books.parse import decoding_once

    return decoding_once()


def _txt_text(data: bytes, name: str) -> str:
    """A TXT's text as the book reader reads it (``decode_book_text``: decoded once in
    ``_decoding_once``), or as the document reader does when that refuses it."""
    from tracker.books.parse import decode_book_text, reads_as_txt

    if reads_as_txt(name, data):
        with contextlib.suppress(ValueError):
            return decode_book_text(name or "<book>", data)
    return decode_text(data, name)


def _plain_text(data: bytes, name: str, suffix: str) -> str:
    if suffix == ".txt":
        return _txt_text(data, name)
    if suffix in (".html", ".htm"):
        return extract_html(decode_html_bytes(data, name))[1]
    if suffix == ".docx":
        return docx_text(data, name)
    return ""
