"""Book files to ``ParsedBook``: a whole book as .txt, .html/.htm, .docx or .epub
(``read_book``), or a folder or zip of chapter files (``book_from_files``,
``read_zip_files``). Pure: no storage, no network. The rules are in docs/BOOKS.md.

- Text is decoded as every other upload (``tracker.documents.readers.decode_text``: BOM, UTF-8,
  GB18030, Big5, UTF-16) and HTML with the crawler's decoder; chapters come from
  ``tracker.books.headings.split_chapters``.
- Title and author: the file's metadata (DOCX core properties, HTML ``<meta>``, EPUB
  OPF), else the front matter's ``书名：``/``作者：`` lines, a ``《书名》`` line (with the
  author after it), a ``[书名 / 作者 著]`` banner or a lone title line, else the file name.
- Bad input is a ``BookFileError`` whose message starts with the file's name.
"""

from __future__ import annotations

import contextlib
import io
import posixpath
import re
import threading
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from tracker.books.headings import (
    NUMERAL_CHARS,
    chinese_number,
    find_headings,
    split_chapters,
    strip_junk,
)
from tracker.books.markup import check_archive, html_meta, html_text
from tracker.books.titles import _QUOTED, guess_title
from tracker.books.types import BookFileError, ParsedBook, ParsedChapter
from tracker.documents.readers import InputError, clean_text, decode_html_bytes, decode_text
from tracker.plumbing.config import ReadLimits

__all__ = [
    "BookFileError",
    "ParsedBook",
    "ParsedChapter",
    "book_from_files",
    "book_from_folder",
    "read_book",
    "read_zip_files",
    "split_chapters",
]

# Files ``read_book`` reads as a whole book (a .zip: chapter files, an EPUB or a DOCX).
BOOK_SUFFIXES = (".txt", ".html", ".htm", ".xhtml", ".docx", ".epub", ".zip")
CHAPTER_FILE_SUFFIXES = (".txt", ".html", ".htm", ".xhtml", ".docx", ".md")
MAX_CHAPTERS = 20_000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def read_book(name: str, data: bytes, *, limits: ReadLimits | None = None) -> ParsedBook:
    """A whole book from one file's bytes; the type comes from ``name``'s suffix or the
    bytes themselves (a zip holding an EPUB, a DOCX or chapter files)."""
    limits = limits or ReadLimits.from_env()
    label = name or "<book>"
    if not data:
        raise BookFileError(f"{label}: empty file")
    if len(data) > limits.max_document_bytes:
        raise BookFileError(
            f"{label}: {len(data)} bytes, over the {limits.max_document_bytes} allowed per file "
            "(YINJI_MAX_DOCUMENT_MB): refused"
        )
    suffix = posixpath.splitext(label.lower())[1]
    if data.startswith(b"PK\x03\x04") or suffix in (".epub", ".docx", ".zip"):
        kind = _zip_kind(label, data)
        if kind == "epub":
            from tracker.books.epub import read_epub

            return read_epub(label, data, limits=limits)
        if kind == "docx":
            return _read_docx(label, data, limits)
        files, warnings = read_zip_files(label, data, limits=limits)
        book = book_from_files(label, files)
        book.warnings[:0] = warnings
        return book
    if data.startswith(b"%PDF"):
        raise BookFileError(f"{label}: a PDF file; books are read from TXT, HTML, DOCX or EPUB")
    if suffix in (".html", ".htm", ".xhtml") or _looks_html(data):
        return _read_html(label, data)
    return _read_txt(label, data)


def reads_as_txt(name: str, data: bytes, *, limits: ReadLimits | None = None) -> bool:
    """Whether ``read_book`` reads ``data`` as a plain-text book (``decode_book_text``
    then ``book_from_text``): not empty, within the size limit, not a zip, PDF or HTML.
    Lets a caller that needs the text itself (``BookIngest``) decode it once."""
    limits = limits or ReadLimits.from_env()
    suffix = posixpath.splitext((name or "<book>").lower())[1]
    return (
        0 < len(data) <= limits.max_document_bytes
        and suffix not in (".epub", ".docx", ".zip", ".html", ".htm", ".xhtml")
        and not data.startswith((b"PK\x03\x04", b"%PDF"))
        and not _looks_html(data)
    )


def _zip_kind(name: str, data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
            mimetype = zf.read("mimetype")[:64] if "mimetype" in names else b""
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise BookFileError(f"{name}: not a valid zip/EPUB/DOCX file ({exc})") from None
    if b"epub" in mimetype or "META-INF/container.xml" in names:
        return "epub"
    if "word/document.xml" in names:
        return "docx"
    return "zip"


def _looks_html(data: bytes) -> bool:
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return (
        head.startswith((b"<!doctype html", b"<html", b"<?xml")) and b"<html" in data[:4096].lower()
    )


class _Decoded(threading.local):
    """The last text ``decode_book_text`` made inside ``decoding_once`` (this thread)."""

    on = False
    last: tuple[bytes, str, str] | None = None  # (the bytes object, name, text)


_DECODED = _Decoded()


@contextlib.contextmanager
def decoding_once() -> Iterator[None]:
    """Inside: ``decode_book_text`` of the same bytes object and name decodes once
    (``BookIngest`` reads a TXT's text to see whether it is a book, then ``read_book``
    reads it again: a 5 M-character GBK book costs ~0.3 s a decoding)."""
    _DECODED.on, _DECODED.last = True, None
    try:
        yield
    finally:
        _DECODED.on, _DECODED.last = False, None


def decode_book_text(name: str, data: bytes) -> str:
    """A text file's characters (the project's decoder), or a ``BookFileError`` for
    binary or empty files."""
    last = _DECODED.last
    if last is not None and last[0] is data and last[1] == name:
        return last[2]
    text = _decode_book_text(name, data)
    if _DECODED.on:
        _DECODED.last = (data, name, text)
    return text


def _decode_book_text(name: str, data: bytes) -> str:
    try:
        text = _decode(name, data)
    except InputError as exc:
        raise BookFileError(str(exc)) from None
    sample = text[:20_000]
    if sample and len(_CONTROL.findall(sample)) > max(3, len(sample) // 200):
        raise BookFileError(f"{name}: binary data (control characters), not text")
    text = clean_text(text).lstrip("\ufeff")
    if not text.strip():
        raise BookFileError(f"{name}: empty document (no visible character)")
    return text


_SAMPLE = 64 * 1024


def _decode(name: str, data: bytes) -> str:
    """``tracker.documents.readers.decode_text``'s reading of ``data``. That function decodes a
    GB18030/Big5 file whole in every candidate encoding and scores each character in
    Python (about 2 M characters/s); for a whole book it picks the encoding on the first
    64 KiB, then decodes the rest strictly in that encoding (and falls back to the full
    rule when that fails)."""
    if (
        len(data) <= _SAMPLE
        or data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"))
        or b"\x00" in data[:_SAMPLE]  # UTF-16 without a BOM, or binary: decode_text's rules
    ):
        return decode_text(data, name)
    try:
        return data.decode("utf-8")  # what decode_text returns for strict UTF-8
    except UnicodeDecodeError:
        pass
    cut = data.rfind(b"\n", 0, _SAMPLE)  # a line end: never inside a GBK/Big5 character
    head = data[: cut + 1 if cut > 0 else _SAMPLE]
    sample = decode_text(head, name)
    for codec in ("gb18030", "big5"):
        try:
            if head.decode(codec, errors="ignore")[:4096] != sample[:4096]:
                continue
            return data.decode(codec)
        except UnicodeDecodeError:
            break
    return decode_text(data, name)


def _read_txt(name: str, data: bytes) -> ParsedBook:
    return book_from_text(name, decode_book_text(name, data))


def book_from_text(
    name: str, text: str, *, title: str = "", author: str = "", warnings: Iterable[str] = ()
) -> ParsedBook:
    """A book from a whole book's text; ``title``/``author`` (metadata) win over what the
    text and the file name say."""
    front, chapters, found = split_chapters(text)
    if len(chapters) > MAX_CHAPTERS:
        raise BookFileError(
            f"{name}: {len(chapters)} chapters, over the {MAX_CHAPTERS} allowed: refused"
        )
    if not chapters:
        raise BookFileError(f"{name}: no text")
    guess = guess_title(front, name)
    notes = [*warnings, *(f"{name}: {w}" for w in found)]
    if front.strip():
        notes.append(
            f"{name}: {_visible(front)} characters before the first heading kept out of the book"
        )
    return ParsedBook(
        title=title.strip() or guess.title,
        author=author.strip() or guess.author,
        chapters=chapters,
        source=name,
        warnings=notes,
    )


def _visible(text: str) -> int:
    return sum(map(len, text.split()))


# ---------------------------------------------------------------- HTML and DOCX
def _read_html(name: str, data: bytes) -> ParsedBook:
    try:
        markup = decode_html_bytes(data, name)
    except InputError as exc:
        raise BookFileError(str(exc)) from None
    page_title, text = html_text(markup)
    if not text.strip():
        raise BookFileError(f"{name}: no text in the page")
    meta = html_meta(markup)
    title = meta.get("dc.title") or meta.get("og:title") or meta.get("book:title") or ""
    author = meta.get("author") or meta.get("dc.creator") or meta.get("book:author") or ""
    if not title and page_title:
        # "三国演义 - 某某小说网" / "三国演义_全文阅读": the part before the site's name.
        first = re.split(r"\s+[-|_–—]\s+|[_|]", page_title)[0].strip()
        title = first.strip("《》") if _QUOTED.fullmatch(first) or first else ""
    return book_from_text(name, text, title=title, author=author)


def _read_docx(name: str, data: bytes, limits: ReadLimits | None = None) -> ParsedBook:
    import docx  # python-docx

    check_archive(name, data, limits)
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises many kinds on a broken package
        raise BookFileError(
            f"{name}: not a readable .docx file ({type(exc).__name__}: {exc})"
        ) from None
    paragraphs = [p.text for p in document.paragraphs]
    styled = {
        i
        for i, p in enumerate(document.paragraphs)
        if p.text.strip()
        and (p.style is not None and (p.style.name or "").lower().startswith(("heading", "标题")))
    }
    text = clean_text("\n".join(paragraphs))
    if not text.strip():
        raise BookFileError(f"{name}: empty document (no visible character)")
    props = document.core_properties
    title, author = (props.title or "").strip(), (props.author or "").strip()
    if not find_headings(text) and len(styled) >= 2:
        # No 第N章 headings, but Word heading styles: those paragraphs are the chapters.
        chapters: list[ParsedChapter] = []
        marks = sorted(styled)
        for k, i in enumerate(marks):
            end = marks[k + 1] if k + 1 < len(marks) else len(paragraphs)
            body = "\n".join(paragraphs[i + 1 : end]).strip()
            if body:
                chapters.append(
                    ParsedChapter(len(chapters) + 1, paragraphs[i].strip(), clean_text(body))
                )
        if chapters:
            guess = guess_title("\n".join(paragraphs[: marks[0]]), name)
            return ParsedBook(
                title=title or guess.title,
                author=author or guess.author,
                chapters=chapters,
                source=name,
            )
    return book_from_text(name, text, title=title, author=author)


# ---------------------------------------------------------------- chapter files
def _member_label(name: str) -> str:
    return posixpath.splitext(posixpath.basename(name.replace("\\", "/")))[0]


_NUMBERED = re.compile(rf"第[ \t]?([{NUMERAL_CHARS}]+)|(\d+)")


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key reading numbers as numbers: ``2.txt`` < ``10.txt``, ``第二章`` < ``第十章``."""
    key: list[tuple[int, int | str]] = []
    for part in name.replace("\\", "/").split("/"):
        pos = 0
        for m in _NUMBERED.finditer(part):
            if m.start() > pos:
                key.append((1, part[pos : m.start()].lower()))
            number = chinese_number(m.group(1) or m.group(2))
            key.append((0, number if number is not None else 0))
            pos = m.end()
        if pos < len(part):
            key.append((1, part[pos:].lower()))
        key.append((2, ""))
    return tuple(key)


def _file_text(name: str, data: bytes) -> tuple[str, str]:
    """(title from metadata or "", text) of one chapter file."""
    suffix = posixpath.splitext(name.lower())[1]
    if suffix in (".html", ".htm", ".xhtml"):
        try:
            markup = decode_html_bytes(data, name)
        except InputError as exc:
            raise BookFileError(str(exc)) from None
        page_title, text = html_text(markup)
        return page_title, clean_text(text)
    if suffix == ".docx":
        book = _read_docx(name, data)
        return "", "\n\n".join((c.title + "\n" if c.title else "") + c.text for c in book.chapters)
    return "", decode_book_text(name, data)


def book_from_files(name: str, files: list[tuple[str, bytes]]) -> ParsedBook:
    """A book from chapter files (a folder's or a zip's members: ``(path, bytes)``), in
    file-name order with numbers read as numbers. A file is one chapter titled by the
    heading on its first lines (else by its file name); a file holding several headings
    gives those chapters. Files of other types are skipped, unreadable ones reported."""
    label = name or "<files>"
    warnings: list[str] = []
    chapters: list[ParsedChapter] = []
    other: list[str] = []
    for path, data in sorted(files, key=lambda f: natural_key(f[0])):
        base = posixpath.basename(path.replace("\\", "/"))
        where = f"{label}!{path}" if label != path else path
        if base.startswith(".") or "__MACOSX" in path:
            continue
        if not base.lower().endswith(CHAPTER_FILE_SUFFIXES):
            other.append(base)
            continue
        try:
            if not data:
                raise BookFileError(f"{where}: empty file")
            meta_title, text = _file_text(where, data)
        except BookFileError as exc:
            warnings.append(f"{exc} (skipped)")
            continue
        front, parts, found = split_chapters(text)
        headed = [p for p in parts if p.title]
        if len(headed) >= 2:
            chapters.extend(parts)
            warnings.extend(f"{where}: {w}" for w in found)
            continue
        if headed and _visible(strip_junk(front)) < 40:
            title, body = headed[0].title, headed[0].text
        else:
            title, body = meta_title or _member_label(path), text.strip()
        if not body.strip():
            warnings.append(f"{where}: no text (skipped)")
            continue
        chapters.append(ParsedChapter(0, title, body))
    if other:
        shown = ", ".join(other[:5]) + (f" and {len(other) - 5} more" if len(other) > 5 else "")
        warnings.append(f"{label}: {len(other)} files of other types skipped ({shown})")
    if not chapters:
        raise BookFileError(f"{label}: no readable chapter file (.txt, .html, .docx)")
    if len(chapters) > MAX_CHAPTERS:
        raise BookFileError(
            f"{label}: {len(chapters)} chapters, over the {MAX_CHAPTERS} allowed: refused"
        )
    for i, chapter in enumerate(chapters, 1):
        chapter.index = i
    stem = _member_label(label.rstrip("/\\"))
    guess = guess_title("", stem)
    return ParsedBook(
        title=guess.title, author=guess.author, chapters=chapters, source=label, warnings=warnings
    )


def book_from_folder(path: str | Path, *, limits: ReadLimits | None = None) -> ParsedBook:
    """A book from a folder of chapter files (sub-folders included, symlinks leading out
    of it refused), read within the zip budget (``ReadLimits.max_zip_bytes``)."""
    limits = limits or ReadLimits.from_env()
    root = Path(path)
    if not root.is_dir():
        raise BookFileError(f"{root}: not a folder")
    files: list[tuple[str, bytes]] = []
    budget = limits.max_zip_bytes
    resolved = root.resolve()
    for file in sorted(root.rglob("*")):
        if not file.is_file():
            continue
        rel = file.relative_to(root).as_posix()
        if not file.resolve().is_relative_to(resolved):
            raise BookFileError(f"{root}/{rel}: points outside the folder: refused")
        if not rel.lower().endswith(CHAPTER_FILE_SUFFIXES):
            files.append((rel, b""))
            continue
        size = file.stat().st_size
        if size > limits.max_document_bytes:
            raise BookFileError(
                f"{root}/{rel}: {size} bytes, over the {limits.max_document_bytes} allowed"
            )
        budget -= size
        if budget < 0:
            raise BookFileError(
                f"{root}: over {limits.max_zip_bytes} bytes of chapter files (YINJI_MAX_ZIP_MB)"
            )
        files.append((rel, file.read_bytes()))
    return book_from_files(str(root), files)


def _member_name(info: zipfile.ZipInfo) -> str:
    """A member's name as its maker meant it: names without the UTF-8 flag are bytes in
    the maker's code page (GBK from Chinese Windows), which zipfile read as cp437."""
    if info.flag_bits & 0x800:
        return info.filename
    try:
        raw = info.filename.encode("cp437")
    except UnicodeEncodeError:
        return info.filename
    try:
        return decode_text(raw, info.filename)
    except InputError:
        return info.filename


def read_zip_files(
    name: str, data: bytes, *, limits: ReadLimits | None = None
) -> tuple[list[tuple[str, bytes]], list[str]]:
    """The chapter files of a zip (``(member name, bytes)``, names decoded) and warnings
    about skipped members; the archive budget of ``tracker.documents.readers`` (member count,
    expanded size, zip-bomb ratio, unsafe paths) applies."""
    from tracker.documents.readers import _bomb_like, _safe_member_name

    limits = limits or ReadLimits.from_env()
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise BookFileError(f"{name}: not a valid zip file ({exc})") from None
    warnings: list[str] = []
    files: list[tuple[str, bytes]] = []
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > limits.max_zip_members:
            raise BookFileError(
                f"{name}: archive of {len(infos)} members, over the "
                f"{limits.max_zip_members} allowed "
                "(YINJI_MAX_ZIP_MEMBERS): refused"
            )
        declared = sum(i.file_size for i in infos)
        if declared > limits.max_zip_bytes:
            raise BookFileError(
                f"{name}: archive expands to {declared} bytes, over the "
                f"{limits.max_zip_bytes} allowed "
                "(YINJI_MAX_ZIP_MB; a zip bomb?): refused"
            )
        budget = limits.max_zip_bytes
        for info in infos:
            member = _member_name(info)
            where = f"{name}!{member}"
            if not _safe_member_name(member):
                warnings.append(f"{where}: unsafe path in zip (absolute or '..'): skipped")
                continue
            if not member.lower().endswith(CHAPTER_FILE_SUFFIXES):
                files.append((member, b""))  # counted as "other types" by book_from_files
                continue
            if info.file_size > limits.max_document_bytes or _bomb_like(info, limits):
                raise BookFileError(
                    f"{where}: member too large or compressed like a zip bomb: refused"
                )
            try:
                with zf.open(info) as fh:
                    body = fh.read(min(info.file_size, budget) + 1)
            except Exception as exc:  # bad CRC, zlib errors, encrypted members
                warnings.append(
                    f"{where}: cannot read member ({type(exc).__name__}: {exc}): skipped"
                )
                continue
            if len(body) > info.file_size:
                raise BookFileError(f"{where}: member larger than its header says: refused")
            budget -= len(body)
            if budget < 0:
                raise BookFileError(f"{name}: archive expands past its budget: refused")
            files.append((member, body))
    return files, warnings
