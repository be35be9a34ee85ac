"""Reading documents from files: .jsonl, .txt, .html/.htm, .docx, .zip and folders.

Every reader yields ``Document`` objects or ``DocumentError`` objects, never raises for
bad input: one bad file, line or zip member is reported with its name and the rest
goes on. The rules:

- ``.jsonl``: one JSON object per line with ``id``, ``title`` (optional) and ``text``;
  other fields are kept as metadata. Blank lines are skipped.
- ``.txt``: one document per file, id = file stem, title = first non-empty line
  (at most 80 chars). Encoding: BOM, else strict UTF-8, else GB18030, else Big5;
  bytes that decode as none of these are an error.
- ``.html``/``.htm``: title and main text extracted (trafilatura, lxml fallback).
- ``.docx``: the paragraphs of ``word/document.xml`` (no extra dependency).
- ``.zip``: its members, read by the same rules. Members with absolute paths or
  ``..`` are refused, as are archives whose members expand past the size limit or
  compress suspiciously well (zip bombs); nested zips are not opened.
- Folders: every file of a known type below them, in sorted order.
- Files with NUL bytes in a text format, empty documents and documents over
  ``MAX_DOCUMENT_BYTES`` are errors naming the file.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from tracker.rules import check_id, check_metadata, default_title, parse_json

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
MAX_ZIP_TOTAL_BYTES = 1024 * 1024 * 1024
MAX_ZIP_MEMBERS = 100_000
MAX_ZIP_RATIO = 200  # uncompressed / compressed above this on a big member: a bomb
SUPPORTED_SUFFIXES = (".jsonl", ".txt", ".html", ".htm", ".docx", ".zip")


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Replace lone surrogates (which no UTF-8 store can hold, and which JSON such as
    "\\ud800" can carry) by U+FFFD: one code point for one, so offsets stay valid."""
    return _SURROGATE.sub("\ufffd", text)


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


class InputError(ValueError):
    """Bad input that names what was wrong."""


def decode_text(data: bytes, name: str = "<input>") -> str:
    """Decode a text file: BOM, else UTF-8, else GB18030, else Big5 (all strict)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data:
        raise InputError(f"{name}: binary file (contains NUL bytes), not text")
    # A file cut out of a longer UTF-8 text may start inside a character.
    head = 0
    while head < 3 and head < len(data) and 0x80 <= data[head] <= 0xBF:
        head += 1
    if head:
        try:
            return data[head:].decode("utf-8")
        except UnicodeDecodeError:
            pass
    decoded: list[str] = []
    for encoding in ("utf-8", "gb18030", "big5"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            # A file cut in the middle of its last character is still that encoding.
            if exc.reason != "unexpected end of data" or exc.start < len(data) - 3:
                continue
            text = data[: exc.start].decode(encoding)
        if encoding == "utf-8":
            return text  # strict UTF-8 of non-ASCII bytes is never an accident
        decoded.append(text)
    if not decoded:
        raise InputError(f"{name}: not valid UTF-8, GB18030 or Big5 text")
    # GB18030 accepts almost any byte string, Big5 bytes included: keep the reading
    # that looks most like Chinese text.
    return max(decoded, key=_plausibility)


def _plausibility(text: str) -> float:
    """Share of characters that are common in Chinese text (Han, ASCII, CJK punctuation)."""
    if not text:
        return 0.0
    good = sum(
        1
        for ch in text
        if "\u4e00" <= ch <= "\u9fff"
        or " " <= ch <= "~"
        or ch in "\n\r\t"
        or "\u3000" <= ch <= "\u303f"
        or "\uff00" <= ch <= "\uffef"
    )
    return good / len(text)


def _check_text(text: str, name: str) -> None:
    if not text.strip():
        raise InputError(f"{name}: empty document")


def html_to_document(html: str, doc_id: str, source: str) -> Document:
    title, text = extract_html(html)
    _check_text(text, source)
    return Document(id=doc_id, text=text, title=title or default_title(text), source=source)


def extract_html(html: str) -> tuple[str, str]:
    """(title, main text) of an HTML page; robust to malformed markup."""
    title = ""
    text = ""
    try:
        import trafilatura

        text = trafilatura.extract(html, include_comments=False, favor_recall=True) or ""
        meta = trafilatura.extract_metadata(html)
        if meta is not None and meta.title:
            title = meta.title
    except Exception:  # trafilatura failing on odd input must not lose the document
        text = ""
    if not text.strip() or not title:
        try:
            import lxml.html

            root = lxml.html.document_fromstring(html)
            if not title:
                found = root.findtext(".//title")
                title = (found or "").strip()
            if not text.strip():
                for bad in root.xpath("//script|//style|//noscript"):
                    bad.drop_tree()
                text = re.sub(r"[ \t\r\f\v]+", " ", root.text_content())
                text = re.sub(r"\n\s*\n+", "\n", text).strip()
        except Exception:
            pass
    return title.strip(), text.strip()


def docx_text(data: bytes, name: str) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            info = zf.getinfo("word/document.xml")
            if info.file_size > MAX_DOCUMENT_BYTES:
                raise InputError(f"{name}: document.xml too large")
            xml = zf.read(info)
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


def read_bytes(
    data: bytes, name: str, *, default_id: str | None = None
) -> Iterator[Document | DocumentError]:
    """Documents in one file's bytes; ``name`` gives the type by its suffix."""
    suffix = posixpath.splitext(name.lower())[1]
    # "archive.zip!dir/file.txt" -> "file": the id comes from the member's own name.
    member = name.rsplit("!", 1)[-1].replace("\\", "/")
    stem = posixpath.splitext(posixpath.basename(member))[0]
    doc_id = default_id or stem
    try:
        if len(data) > MAX_DOCUMENT_BYTES and suffix != ".zip" and suffix != ".jsonl":
            raise InputError(f"{name}: larger than {MAX_DOCUMENT_BYTES} bytes")
        if suffix == ".jsonl":
            yield from _read_jsonl(data, name)
        elif suffix == ".txt":
            text = decode_text(data, name)
            _check_text(text, name)
            yield Document(id=doc_id, text=text, title=default_title(text), source=name)
        elif suffix in (".html", ".htm"):
            yield html_to_document(decode_html_bytes(data, name), doc_id, name)
        elif suffix == ".docx":
            text = docx_text(data, name)
            _check_text(text, name)
            yield Document(id=doc_id, text=text, title=default_title(text), source=name)
        elif suffix == ".zip":
            yield from _read_zip(data, name)
        else:
            raise InputError(f"{name}: unsupported file type (use {', '.join(SUPPORTED_SUFFIXES)})")
    except InputError as exc:
        yield DocumentError(name, str(exc).removeprefix(f"{name}: "))
    except Exception as exc:  # any failure of one file is that file's error, never the batch's
        yield DocumentError(name, unexpected(exc))


def unexpected(exc: BaseException) -> str:
    """The message of an error no reader rule foresaw (a parser bug, a recursion limit,
    memory): its type and text, so the item is reported instead of sinking the batch."""
    text = str(exc)[:200]
    return f"cannot read ({type(exc).__name__}{': ' + text if text else ''})"


def decode_html_bytes(data: bytes, name: str) -> str:
    """HTML bytes to text, honouring a BOM or a declared charset, else detecting it."""
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"{name}: binary file (contains NUL bytes), not HTML")
    head = data[:4096].decode("ascii", errors="replace")
    declared = re.search(r"charset\s*=\s*[\"']?([A-Za-z0-9_\-]+)", head, re.I)
    if declared:
        enc = declared.group(1).lower()
        enc = {"gb2312": "gb18030", "gbk": "gb18030"}.get(enc, enc)
        try:
            return data.decode(enc)
        except (LookupError, UnicodeDecodeError):
            pass  # a wrong declaration is common on pirate sites: detect instead
    return decode_text(data, name)


def _read_jsonl(data: bytes, name: str) -> Iterator[Document | DocumentError]:
    """Lines are decoded one by one (a line in another encoding is that line's
    problem, not the file's); a UTF-16 file (BOM) is decoded whole."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            lines: Iterable[str | bytes] = decode_text(data, name).splitlines()
        except InputError as exc:
            yield DocumentError(name, str(exc).removeprefix(f"{name}: "))
            return
    else:
        lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    found = False
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        found = True
        where = f"{name}:{lineno}"
        try:
            text = line if isinstance(line, str) else decode_text(line, where)
            yield jsonl_document(text, where)
        except ValueError as exc:  # InputError included
            yield DocumentError(where, str(exc).removeprefix(f"{where}: "))
        except Exception as exc:  # one line's failure is that line's error
            yield DocumentError(where, unexpected(exc))
    if not found:
        yield DocumentError(name, "empty file: no JSON lines")


def jsonl_document(line: str | bytes, where: str) -> Document:
    """The document of one ``.jsonl`` line; ``ValueError`` naming ``where`` when the
    line is not a valid document (the rules of ``tracker.rules``: id, JSON values)."""
    obj = parse_json(line, where)
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object")
    if obj.get("id") is None:
        raise ValueError(f"{where}: missing 'id'")
    doc_id = check_id(obj["id"], where)
    body = obj.get("text")
    if not isinstance(body, str):
        raise ValueError(f"{where}: missing 'text' (a string)")
    if not body.strip():
        raise ValueError(f"{where}: empty document {doc_id!r}")
    if len(body) > MAX_DOCUMENT_BYTES:
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


def _read_zip(data: bytes, name: str) -> Iterator[Document | DocumentError]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        yield DocumentError(name, f"not a valid zip file ({exc})")
        return
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_ZIP_MEMBERS:
            yield DocumentError(name, f"too many members ({len(infos)} > {MAX_ZIP_MEMBERS})")
            return
        declared = sum(i.file_size for i in infos)
        if declared > MAX_ZIP_TOTAL_BYTES:
            yield DocumentError(name, f"expands to {declared} bytes, over the limit: refused")
            return
        for info in sorted(infos, key=lambda i: i.filename):
            where = f"{name}!{info.filename}"
            if not _safe_member_name(info.filename):
                yield DocumentError(where, "unsafe path in zip (absolute or '..'): refused")
                continue
            lower = info.filename.lower()
            if lower.endswith(".zip"):
                yield DocumentError(where, "nested zip files are not opened")
                continue
            if not lower.endswith(SUPPORTED_SUFFIXES) or posixpath.basename(lower).startswith("."):
                continue  # unrelated files in an archive (images, __MACOSX) are skipped silently
            if info.file_size > MAX_DOCUMENT_BYTES or (
                info.file_size > 1024 * 1024
                and info.compress_size
                and info.file_size / info.compress_size > MAX_ZIP_RATIO
            ):
                yield DocumentError(
                    where, "member too large or compressed like a zip bomb: refused"
                )
                continue
            try:
                # Read at most the declared size + 1: a lying header cannot blow memory.
                with zf.open(info) as fh:
                    body = fh.read(min(info.file_size, MAX_DOCUMENT_BYTES) + 1)
                if len(body) > info.file_size:
                    yield DocumentError(where, "member larger than its header says: refused")
                    continue
            except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
                yield DocumentError(where, f"cannot read member ({exc})")
                continue
            except Exception as exc:  # zlib errors, lying headers: this member's error
                yield DocumentError(where, unexpected(exc))
                continue
            yield from read_bytes(body, where)


def iter_documents(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Document | DocumentError]:
    """Documents from files and folders, in order; errors as ``DocumentError`` values."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES
            )
            if not files:
                yield DocumentError(str(path), "folder holds no supported files")
            for p in files:
                yield from _read_path(p)
        else:
            yield from _read_path(path)


def _read_path(path: Path) -> Iterator[Document | DocumentError]:
    name = str(path)
    if not path.exists():
        yield DocumentError(name, "no such file or folder")
        return
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        yield DocumentError(name, f"unsupported file type (use {', '.join(SUPPORTED_SUFFIXES)})")
        return
    try:
        size = path.stat().st_size
        limit = MAX_ZIP_TOTAL_BYTES if path.suffix.lower() in (".zip", ".jsonl") else None
        if size > (limit or MAX_DOCUMENT_BYTES):
            yield DocumentError(name, f"file of {size} bytes is over the size limit")
            return
        data = path.read_bytes()
    except OSError as exc:
        yield DocumentError(name, f"cannot read ({exc.strerror or exc})")
        return
    yield from read_bytes(data, name, default_id=path.stem)


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
