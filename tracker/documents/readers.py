"""Reading documents from files: .jsonl, .txt, .html/.htm, .docx, .zip and folders.

Every reader yields ``Document`` objects or ``DocumentError`` objects, never raises for
bad input: one bad file, line or zip member is reported with its name and the rest
goes on (any exception while reading one item becomes that item's error). The rules:

- ``.jsonl``: one JSON object per line with ``id``, ``title`` (optional) and ``text``;
  other fields are kept as metadata. Blank lines are skipped; a file without any line
  is an error. JSON is parsed strictly (``tracker.common.rules.parse_json``: no NaN/Infinity,
  bounded nesting and numbers) and ids follow ``tracker.common.rules.check_id``. Each line is
  decoded on its own, so a line in a stray encoding is that line's error.
- ``.txt``: one document per file, id = file stem, title = its first line when that is
  clearly a title (``tracker.common.rules.default_title``), else the file name. Encoding:
  BOM, else strict UTF-8, else GB18030, else Big5 (``tracker.text.textcodec``); bytes that
  decode as none of these are an error.
- ``.html``/``.htm``: title and main text extracted (trafilatura, lxml fallback).
- ``.docx``: the paragraphs of ``word/document.xml`` (no extra dependency).
- ``.epub`` and whole books in the formats above: with a ``BookReader`` (``books=``,
  what ``yinji ingest`` passes: ``tracker.books.service``) a file may be read as a
  book of chapters; without one an .epub is an error.
- ``.zip``: its members, read by the same rules, within the archive's budget
  (``tracker.plumbing.config.ReadLimits``): at most ``max_zip_members`` members (10,000) and
  ``max_zip_bytes`` expanded in all (256 MiB), checked on the declared sizes before
  anything is read and on the bytes really read; a member expanding more than 200
  times (above 4 KiB) is a zip bomb. Members with absolute paths or ``..`` are
  refused; nested zips are not opened.
- Folders: every file of a known type below them, in sorted order.
- Files with NUL bytes in a text format, empty documents and documents over
  ``max_document_bytes`` (64 MiB) are errors naming the file.

``read_path(path, name)`` reads a file on disk without holding it whole (a .jsonl line
by line, a .zip member by member); ``read_bytes(data, name)`` reads bytes in memory.
Both take the type from ``name``'s suffix.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import stat
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, BinaryIO
from xml.etree import ElementTree

from tracker.common.rules import check_id, check_metadata, default_title, parse_json
from tracker.plumbing.config import ReadLimits
from tracker.text.textcodec import InputError, clean_text, decode_text, utf16_without_bom
from tracker.text.textform import is_blank

# The defaults of ``tracker.plumbing.config.ReadLimits`` (each can be changed by its variable).
MAX_DOCUMENT_BYTES = ReadLimits.max_document_bytes
MAX_ZIP_TOTAL_BYTES = ReadLimits.max_zip_bytes
MAX_ZIP_MEMBERS = ReadLimits.max_zip_members
MAX_ZIP_RATIO = ReadLimits.max_zip_ratio
SUPPORTED_SUFFIXES = (".jsonl", ".txt", ".html", ".htm", ".docx", ".zip")
#: Files that may hold a whole book (``tracker.books``): read by a ``BookReader`` when
#: one is given. An .epub is only ever a book: read only with a ``BookReader``.
BOOK_SUFFIXES = (".txt", ".html", ".htm", ".docx", ".epub")


def _known(suffix: str, books: BookReader | None) -> bool:
    return suffix in SUPPORTED_SUFFIXES or (books is not None and suffix == ".epub")


@dataclass
class Document:
    id: str
    text: str
    title: str = ""
    source: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.id = clean_text(self.id)
        self.text = clean_text(self.text)
        self.title = clean_text(self.title)


@dataclass
class DocumentError:
    source: str  # file name, "file.jsonl:12", "archive.zip!member.txt"
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


#: ``(data, name, default id)`` of a file of ``BOOK_SUFFIXES`` → the documents it
#: gives as a book (its chapters), or None to read it as one document as usual
#: (``tracker.books.service.BookIngest.read_file``; ``yinji ingest`` passes one).
BookReader = Callable[[bytes, str, str], list[Document | DocumentError] | None]


def _check_text(text: str, name: str) -> None:
    if is_blank(text):  # spaces, zero-width and bidi characters only: nothing to read
        raise InputError(f"{name}: empty document (no visible character)")


def html_to_document(html: str, doc_id: str, source: str) -> Document:
    title, text = extract_html(html)
    _check_text(text, source)
    return Document(id=doc_id, text=text, title=title or default_title(text), source=source)


def extract_html(html: str) -> tuple[str, str]:
    """(title, main text) of an HTML page; robust to malformed markup and to any
    nesting depth. The crawler's extraction (``tracker.crawler.extraction.extract``),
    so an uploaded page reads exactly as the same page crawled."""
    from tracker.crawler.extraction import extract

    return extract(html, "")


def docx_text(data: bytes, name: str, limits: ReadLimits | None = None) -> str:
    limits = limits or ReadLimits.from_env()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            info = zf.getinfo("word/document.xml")
            if info.file_size > limits.max_document_bytes or _bomb_like(info, limits):
                raise InputError(f"{name}: document.xml too large or compressed like a zip bomb")
            with zf.open(info) as fh:
                xml = fh.read(info.file_size + 1)
            if len(xml) > info.file_size:
                raise InputError(f"{name}: document.xml larger than its header says")
    except (zipfile.BadZipFile, KeyError) as exc:
        raise InputError(f"{name}: not a valid .docx file ({exc})") from None
    ns = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError as exc:
        raise InputError(f"{name}: malformed .docx XML ({exc})") from None
    paragraphs = []
    for p in root.iter(f"{ns}p"):
        paragraphs.append("".join(t.text or "" for t in p.iter(f"{ns}t")))
    return "\n".join(paragraphs).strip()


def _file_stem(name: str) -> str:
    """A file's name without folder and suffix ("a.zip!书/第一章.txt" → "第一章")."""
    return PurePath(name.rsplit("!", 1)[-1].replace("\\", "/")).stem


def _suffix(name: str) -> str:
    return posixpath.splitext(name.lower())[1]


def _stem(name: str) -> str:
    # "archive.zip!dir/file.txt" -> "file": the id comes from the member's own name.
    member = name.rsplit("!", 1)[-1].replace("\\", "/")
    return posixpath.splitext(posixpath.basename(member))[0]


def read_bytes(
    data: bytes,
    name: str,
    *,
    default_id: str | None = None,
    limits: ReadLimits | None = None,
    books: BookReader | None = None,
) -> Iterator[Document | DocumentError]:
    """Documents in one file's bytes; ``name`` gives the type by its suffix."""
    limits = limits or ReadLimits.from_env()
    suffix = _suffix(name)
    if suffix == ".jsonl":
        yield from _read_jsonl(io.BytesIO(data), name, limits)
    elif suffix == ".zip":
        yield from _read_zip(io.BytesIO(data), name, limits, books)
    else:
        yield from _read_single(data, name, default_id or _stem(name), limits, books)


def _read_single(
    data: bytes, name: str, doc_id: str, limits: ReadLimits, books: BookReader | None = None
) -> Iterator[Document | DocumentError]:
    """A file that holds one document (.txt .html .htm .docx), or, read by ``books``,
    a book of chapters (.epub always)."""
    suffix = _suffix(name)
    try:
        # The id made from a file name follows the one id rule (tracker.common.ids), as any.
        doc_id = check_id(doc_id, name)
    except ValueError as exc:
        reason = str(exc).removeprefix(f"{name}: ")
        if "not UTF-8" in reason:
            reason = "its name is not UTF-8, so it gives no id"
        yield DocumentError(
            name, f"{reason}: rename the file, or give its id in a .jsonl line or the API"
        )
        return
    try:
        if len(data) > limits.max_document_bytes:
            raise InputError(f"{name}: larger than {limits.max_document_bytes} bytes")
        if books is not None and suffix in BOOK_SUFFIXES:
            chapters = books(data, name, doc_id)
            if chapters is not None:
                yield from chapters
                return
        if suffix == ".epub":
            raise InputError(f"{name}: an .epub is a book: ingest it with `yinji ingest FILE`")
        if suffix == ".txt":
            text = decode_text(data, name)
            _check_text(text, name)
            title = default_title(text, _file_stem(name))
            yield Document(id=doc_id, text=text, title=title, source=name)
        elif suffix in (".html", ".htm"):
            yield html_to_document(decode_html_bytes(data, name), doc_id, name)
        elif suffix == ".docx":
            text = docx_text(data, name, limits)
            _check_text(text, name)
            title = default_title(text, _file_stem(name))
            yield Document(id=doc_id, text=text, title=title, source=name)
        else:
            raise InputError(f"{name}: unsupported file type (use {', '.join(SUPPORTED_SUFFIXES)})")
    except InputError as exc:
        yield DocumentError(name, str(exc).removeprefix(f"{name}: "))
    except Exception as exc:  # any failure of one file is that file's error, never the batch's
        yield DocumentError(name, unexpected(exc))


def read_path(
    path: str | os.PathLike[str],
    name: str | None = None,
    *,
    default_id: str | None = None,
    limits: ReadLimits | None = None,
    books: BookReader | None = None,
) -> Iterator[Document | DocumentError]:
    """Documents in one file on disk, read without holding it whole in memory: a .jsonl
    line by line, a .zip member by member (each bounded), other files whole after a
    size check. ``name`` labels the documents and errors and gives the type by its
    suffix (an upload saved under a temporary name keeps its client name); default: the
    path. Only a regular file is read: a FIFO, a device or a folder is an error, found
    before anything is read (the check is made on the opened file, so swapping the
    path meanwhile does not help)."""
    limits = limits or ReadLimits.from_env()
    label = file_label(name if name is not None else os.fsdecode(path))
    suffix = _suffix(label)
    if not _known(suffix, books):
        yield DocumentError(label, f"unsupported file type (use {', '.join(SUPPORTED_SUFFIXES)})")
        return
    try:
        fh = open_regular(path, label)
    except InputError as exc:
        yield DocumentError(label, str(exc).removeprefix(f"{label}: "))
        return
    with fh:
        try:
            if suffix == ".jsonl":
                yield from _read_jsonl(fh, label, limits)
            elif suffix == ".zip":
                yield from _read_zip(fh, label, limits, books)
            else:
                size = os.fstat(fh.fileno()).st_size
                if size > limits.max_document_bytes:
                    yield DocumentError(
                        label,
                        f"file of {size} bytes is over the {limits.max_document_bytes}-byte "
                        "document limit (YINJI_MAX_DOCUMENT_MB)",
                    )
                    return
                data = fh.read(limits.max_document_bytes + 1)  # a file growing meanwhile
                yield from _read_single(data, label, default_id or _stem(label), limits, books)
        except OSError as exc:
            yield DocumentError(label, f"cannot read ({exc.strerror or exc})")


def file_label(name: str) -> str:
    """A file name as a label: bytes that are not UTF-8 (kept by the OS as lone
    surrogates) shown as ``\\xff`` escapes, so the label can be printed and stored."""
    if not any("\ud800" <= ch <= "\udfff" for ch in name):
        return name
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte stands for
        raw = name.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


def open_regular(path: str | os.PathLike[str], label: str | None = None) -> io.BufferedReader:
    """``path`` opened for reading if it is a regular file; else ``InputError`` naming
    ``label``. Opened without blocking (a FIFO would block ``open`` until a writer
    comes), then checked with ``fstat`` on the open file."""
    label = label if label is not None else str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{label}: no such file or folder") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot open ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{label}: not a regular file ({_kind(st.st_mode)}): refused")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "a special file"


def unexpected(exc: BaseException) -> str:
    """The message of an error no reader rule foresaw (a parser bug, a recursion limit,
    memory): its type and text, so the item is reported instead of sinking the batch."""
    text = str(exc)[:200]
    return f"cannot read ({type(exc).__name__}{': ' + text if text else ''})"


def decode_html_bytes(data: bytes, name: str) -> str:
    """HTML bytes to text with the crawler's decoder (``tracker.crawler.decode_html``:
    BOM, declared charsets checked against the bytes, GB/Big5 detection), so an
    uploaded page reads exactly as the same page crawled; UTF-16 without a BOM is
    recognised here first."""
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        utf16 = utf16_without_bom(data, min_score=0.95)
        if utf16 is None:
            raise InputError(f"{name}: binary file (contains NUL bytes), not HTML")
        return utf16
    from tracker.crawler import decode_html

    text, _codec = decode_html(data)
    return text


def _lines(fh: BinaryIO | io.RawIOBase, limit: int) -> Iterator[bytes | None]:
    """The lines of a binary stream, each at most ``limit`` bytes; a longer line is
    skipped without being held in memory and yields None in its place."""
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while True:  # drop the rest of this line
                rest = fh.readline(1024 * 1024)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def _read_jsonl(fh: BinaryIO, name: str, limits: ReadLimits) -> Iterator[Document | DocumentError]:
    """Lines are decoded one by one (a line in another encoding is that line's
    problem, not the file's); a UTF-16 file (BOM) is decoded whole."""
    head = fh.read(3)
    lines: Iterable[str | bytes | None]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        data = head + fh.read(limits.max_zip_bytes + 1)
        if len(data) > limits.max_zip_bytes:
            yield DocumentError(name, "UTF-16 .jsonl file over the size limit: refused")
            return
        try:
            lines = decode_text(data, name).splitlines()
        except InputError as exc:
            yield DocumentError(name, str(exc).removeprefix(f"{name}: "))
            return
    else:
        first = head.removeprefix(b"\xef\xbb\xbf")
        lines = _lines(_Prefixed(first, fh), limits.max_line_bytes)
    found = False
    for lineno, line in enumerate(lines, 1):
        where = f"{name}:{lineno}"
        if line is None:
            found = True
            yield DocumentError(
                where,
                f"line longer than {limits.max_line_bytes} bytes (YINJI_MAX_DOCUMENT_MB + 1 MiB): "
                "skipped, not parsed; put a work this big in a .txt file",
            )
            continue
        if not line.strip():
            continue
        found = True
        try:
            text = line if isinstance(line, str) else decode_text(line, where)
            yield jsonl_document(text, where, limits)
        except ValueError as exc:  # InputError included
            yield DocumentError(where, str(exc).removeprefix(f"{where}: "))
        except Exception as exc:  # one line's failure is that line's error
            yield DocumentError(where, unexpected(exc))
    if not found:
        yield DocumentError(name, "empty file: no JSON lines")


class _Prefixed(io.RawIOBase):
    """A binary stream with ``prefix`` put back in front (bytes already read)."""

    def __init__(self, prefix: bytes, fh: BinaryIO) -> None:
        self._prefix = prefix
        self._fh = fh

    def readable(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> bytes:
        if self._prefix:
            if b"\n" in self._prefix:
                cut = self._prefix.index(b"\n") + 1
                if size is not None and 0 <= size < cut:
                    cut = size
                line, self._prefix = self._prefix[:cut], self._prefix[cut:]
                return line
            line, self._prefix = self._prefix, b""
            if size is None or size < 0:
                return line + self._fh.readline()
            if size <= len(line):
                line, self._prefix = line[:size], line[size:]
                return line
            return line + self._fh.readline(size - len(line))
        return self._fh.readline(-1 if size is None else size)


def jsonl_document(line: str | bytes, where: str, limits: ReadLimits | None = None) -> Document:
    """The document of one ``.jsonl`` line; ``ValueError`` naming ``where`` when the
    line is not a valid document (the rules of ``tracker.common.rules``: id, JSON values)."""
    limits = limits or ReadLimits.from_env()
    obj = parse_json(line, where)
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object")
    if obj.get("id") is None:
        raise ValueError(f"{where}: missing 'id'")
    doc_id = check_id(obj["id"], where)
    body = obj.get("text")
    if not isinstance(body, str):
        raise ValueError(f"{where}: missing 'text' (a string)")
    if is_blank(body):
        raise ValueError(f"{where}: empty document {doc_id!r} (no visible character)")
    if len(body) > limits.max_document_bytes:
        raise ValueError(f"{where}: document {doc_id!r} larger than the limit")
    title = obj.get("title")
    if title is not None and not isinstance(title, str | int | float):
        raise ValueError(f"{where}: 'title' must be a string")
    meta = check_metadata({k: v for k, v in obj.items() if k not in ("id", "title", "text")}, where)
    return Document(
        id=doc_id,
        text=body,
        title=str(title) if title is not None and str(title).strip() else default_title(body),
        source=where,
        metadata=meta,
    )


def _safe_member_name(member: str) -> bool:
    if member.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", member):
        return False
    parts = member.replace("\\", "/").split("/")
    return ".." not in parts


def _bomb_like(info: zipfile.ZipInfo, limits: ReadLimits) -> bool:
    """Expands more than ``max_zip_ratio`` times its compressed size (members of at most
    4 KiB are exempt: deflate's own overhead makes their ratio meaningless, and the
    archive's budget bounds them anyway)."""
    return info.file_size > 4096 and info.file_size > limits.max_zip_ratio * max(
        info.compress_size, 1
    )


def _read_zip(
    fh: BinaryIO, name: str, limits: ReadLimits, books: BookReader | None = None
) -> Iterator[Document | DocumentError]:
    """The members of an archive, each read within the archive's budget: at most
    ``max_zip_members`` members, at most ``max_zip_bytes`` expanded in all (declared
    sizes checked before anything is read, bytes really read counted as they come)."""
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        yield DocumentError(name, f"not a valid zip file ({exc})")
        return
    except Exception as exc:
        yield DocumentError(name, unexpected(exc))
        return
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > limits.max_zip_members:
            yield DocumentError(
                name,
                f"archive of {len(infos)} members, over the {limits.max_zip_members} allowed "
                "(YINJI_MAX_ZIP_MEMBERS): refused",
            )
            return
        declared = sum(i.file_size for i in infos)
        if declared > limits.max_zip_bytes:
            yield DocumentError(
                name,
                f"archive expands to {declared} bytes, over the {limits.max_zip_bytes} bytes "
                "allowed per archive (YINJI_MAX_ZIP_MB; a zip bomb?): refused",
            )
            return
        budget = limits.max_zip_bytes
        for info in sorted(infos, key=lambda i: i.filename):
            where = f"{name}!{info.filename}"
            if not _safe_member_name(info.filename):
                yield DocumentError(where, "unsafe path in zip (absolute or '..'): refused")
                continue
            lower = info.filename.lower()
            if lower.endswith(".zip"):
                yield DocumentError(where, "nested zip files are not opened")
                continue
            if not _known(_suffix(lower), books) or posixpath.basename(lower).startswith("."):
                continue  # unrelated files in an archive (images, __MACOSX) are skipped silently
            single = not lower.endswith(".jsonl")
            if (single and info.file_size > limits.max_document_bytes) or _bomb_like(info, limits):
                yield DocumentError(
                    where, "member too large or compressed like a zip bomb: refused"
                )
                continue
            try:
                # Read at most the declared size + 1: a lying header cannot blow memory.
                with zf.open(info) as member:
                    body = member.read(min(info.file_size, budget) + 1)
            except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
                yield DocumentError(where, f"cannot read member ({exc})")
                continue
            except Exception as exc:  # zlib errors, lying headers: this member's error
                yield DocumentError(where, unexpected(exc))
                continue
            budget -= len(body)
            if len(body) > info.file_size:
                yield DocumentError(where, "member larger than its header says: refused")
                continue
            if budget < 0:
                yield DocumentError(where, "archive expands past its budget: refused")
                return
            yield from read_bytes(body, where, limits=limits, books=books)


def iter_documents(
    paths: Iterable[str | os.PathLike[str]],
    *,
    limits: ReadLimits | None = None,
    books: BookReader | None = None,
) -> Iterator[Document | DocumentError]:
    """Documents from files and folders, in order; errors as ``DocumentError`` values.

    A path given is read if it is a regular file (a link to one included: it was
    named on purpose). Inside a folder only regular files within the folder are read:
    a symbolic link whose target lies outside it (a file such as /etc/passwd, a device,
    another folder) is skipped and reported; links to folders are not followed;
    FIFOs, devices and sockets with a document suffix are reported, never opened; other
    files are reported as unsupported; hidden files and folders (.git, .DS_Store) are
    passed over silently."""
    limits = limits or ReadLimits.from_env()
    for raw in paths:
        path = Path(raw)
        try:
            is_dir = stat.S_ISDIR(os.stat(path).st_mode)
        except OSError:
            is_dir = False  # read_path names the problem
        if is_dir:
            yield from _read_folder(path, limits, books)
        else:
            yield from read_path(path, default_id=path.stem, limits=limits, books=books)


def _within(target: str, root: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def _read_folder(
    folder: Path, limits: ReadLimits, books: BookReader | None = None
) -> Iterator[Document | DocumentError]:
    root = os.path.realpath(folder)
    found: list[tuple[str, Path, str | None]] = []  # (sort key, path, refusal)
    walk_errors: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(
        folder, followlinks=False, onerror=walk_errors.append
    ):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]  # .git, .cache: not works
        for name in dirnames:
            link = Path(dirpath, name)
            if link.is_symlink():
                target = os.path.realpath(link)
                where = "outside the folder" if not _within(target, root) else "inside the folder"
                found.append(
                    (str(link), link, f"symbolic link to a folder {where} ({target}): not followed")
                )
        for name in filenames:
            if name.startswith("."):
                continue  # hidden (.DS_Store, swap files): as in archives, not a work
            p = Path(dirpath, name)
            try:
                mode = os.lstat(p).st_mode
            except OSError as exc:
                found.append((str(p), p, f"cannot read ({exc.strerror or exc})"))
                continue
            if stat.S_ISLNK(mode):
                target = os.path.realpath(p)
                if not _within(target, root):
                    found.append(
                        (str(p), p, f"symbolic link to {target}, outside the folder: skipped")
                    )
                    continue
            if _known(p.suffix.lower(), books):
                found.append((str(p), p, None))
            else:
                # Every file passed over is said: a .pdf among the chapters must not vanish.
                kinds = ", ".join(SUPPORTED_SUFFIXES)
                found.append((str(p), p, f"unsupported file type (use {kinds})"))
    for problem in walk_errors:
        name = problem.filename if problem.filename is not None else str(folder)
        reason = problem.strerror or problem
        found.append((str(name), Path(name), f"cannot read folder ({reason})"))
    if not any(refusal is None for _, _, refusal in found):
        yield DocumentError(str(folder), "folder holds no supported files")
    for _, p, refusal in sorted(found, key=lambda item: item[0]):
        if refusal is not None:
            yield DocumentError(file_label(str(p)), refusal)
        else:
            yield from read_path(p, default_id=p.stem, limits=limits, books=books)


def split_documents(
    items: Iterable[Document | DocumentError],
) -> tuple[list[Document], list[DocumentError]]:
    docs: list[Document] = []
    errors: list[DocumentError] = []
    for item in items:
        if isinstance(item, DocumentError):
            errors.append(item)
        else:
            docs.append(item)
    return docs, errors
