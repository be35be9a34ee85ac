"""EPUB books, read with ebooklib (a maintained EPUB 2/3 reader, rather than a
hand-written OPF/NCX parser).

- Chapters follow the spine (``linear="no"`` items and the navigation document itself
  skipped); chapter titles come from the navigation (EPUB 3 ``nav.xhtml``, else the
  EPUB 2 ``toc.ncx``). A spine file the navigation does not name continues the chapter
  before it (a chapter split over files); before the first named file it is front matter
  (cover, title page), dropped. Without a navigation, each spine file's own heading
  (``第N章`` …, else its ``<title>``/``<h1>``) names it. Several navigation entries in one
  file split it by its headings.
- Title, author, ISBN, language and series (``calibre:series`` / ``belongs-to-collection``)
  from the OPF metadata.
- Refused with a message naming the file: DRM (``META-INF/rights.xml``, or
  ``META-INF/encryption.xml`` encrypting anything but fonts), a manifest naming a file
  the archive lacks, no spine, more than ``MAX_EPUB_MEMBERS`` members, and the zip-bomb
  budget of every other archive (``tracker.plumbing.config.ReadLimits``). Spine entries naming no
  manifest item are skipped with a warning.
- Time is linear in the number of spine items (ids and file names are looked up in
  dictionaries, not ebooklib's linear ``get_item_with_id``).
"""

from __future__ import annotations

import io
import posixpath
import re
import warnings as pywarnings
import zipfile
from dataclasses import dataclass
from urllib.parse import unquote
from xml.etree import ElementTree

from tracker.books.headings import find_headings, split_chapters
from tracker.books.types import BookFileError, ParsedBook, ParsedChapter
from tracker.documents.readers import InputError, clean_text, decode_html_bytes
from tracker.plumbing.config import ReadLimits

MAX_EPUB_MEMBERS = 50_000
# Font obfuscation (IDPF and Adobe) is allowed in encryption.xml: it hides fonts, not text.
_FONT_OBFUSCATION = ("http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC")
_FONT_SUFFIXES = (".otf", ".ttf", ".woff", ".woff2")


@dataclass
class _Spine:
    href: str  # the file's path in the archive
    text: str
    page_title: str


def _check_archive(name: str, data: bytes, limits: ReadLimits) -> None:
    from tracker.books.markup import check_archive

    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise BookFileError(f"{name}: not a valid EPUB (zip) file ({exc})") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_EPUB_MEMBERS:
            raise BookFileError(
                f"{name}: EPUB of {len(infos)} files, over the {MAX_EPUB_MEMBERS} allowed: refused"
            )
        check_archive(name, data, limits)
        names = {i.filename for i in infos}
        if "META-INF/rights.xml" in names:
            raise BookFileError(f"{name}: DRM-protected EPUB (META-INF/rights.xml): refused")
        if "META-INF/encryption.xml" in names:
            _check_encryption(name, zf.read("META-INF/encryption.xml"))


def _check_encryption(name: str, xml: bytes) -> None:
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError:
        raise BookFileError(f"{name}: unreadable META-INF/encryption.xml (DRM?): refused") from None
    for data in root.iter():
        if not data.tag.endswith("EncryptedData"):
            continue
        method = next(
            (e.get("Algorithm", "") for e in data.iter() if e.tag.endswith("EncryptionMethod")), ""
        )
        target = next(
            (e.get("URI", "") for e in data.iter() if e.tag.endswith("CipherReference")), ""
        )
        if method in _FONT_OBFUSCATION or target.lower().endswith(_FONT_SUFFIXES):
            continue
        raise BookFileError(
            f"{name}: DRM-protected EPUB ({target or 'content'} is encrypted): refused"
        )


def _meta(book: object, field: str) -> list[str]:
    try:
        values = book.get_metadata("DC", field)  # type: ignore[attr-defined]
    except Exception:
        return []
    return [str(v[0]).strip() for v in values if v and v[0] and str(v[0]).strip()]


def _series(book: object) -> str:
    try:
        for value, attrs in book.get_metadata("OPF", "meta"):  # type: ignore[attr-defined]
            if (attrs or {}).get("name") == "calibre:series" and attrs.get("content"):
                return str(attrs["content"]).strip()
            if (attrs or {}).get("property") == "belongs-to-collection" and value:
                return str(value).strip()
    except Exception:
        return ""
    return ""


def _isbn(book: object) -> str:
    for value in _meta(book, "identifier"):
        digits = re.sub(r"[^0-9Xx]", "", value.removeprefix("urn:isbn:"))
        if len(digits) in (10, 13) and (
            "isbn" in value.lower() or digits.startswith(("978", "979"))
        ):
            return digits.upper()
    return ""


@dataclass
class _NavEntry:
    file: str  # the file it points to, as a path in the archive
    title: str
    volume: str  # the title of the entry it is nested under ("第一卷 …"), if any
    parent: bool  # it has entries nested under it (a volume's own page)


def _nav_entries(toc: object) -> list[_NavEntry]:
    """The navigation's entries (``book.toc``), in reading order."""
    from ebooklib import epub

    out: list[_NavEntry] = []

    def label(entry: object) -> tuple[str, str]:
        href = getattr(entry, "href", "") or getattr(entry, "file_name", "") or ""
        title = " ".join((getattr(entry, "title", "") or "").split())
        return unquote(href).partition("#")[0], title

    def walk(entries: object, volume: str) -> None:
        for entry in entries if isinstance(entries, (list, tuple)) else [entries]:
            if isinstance(entry, tuple) and len(entry) == 2:
                head, children = entry
                file, title = label(head)
                if file and title:
                    out.append(_NavEntry(posixpath.normpath(file), title, volume, True))
                walk(children, title or volume)
            elif isinstance(entry, (epub.Link, epub.Section, epub.EpubHtml)):
                file, title = label(entry)
                if file and title:
                    out.append(_NavEntry(posixpath.normpath(file), title, volume, False))

    walk(toc, "")
    return out


def read_epub(name: str, data: bytes, *, limits: ReadLimits | None = None) -> ParsedBook:
    """An EPUB's chapters and metadata; see the module's rules."""
    from ebooklib import epub

    from tracker.books.markup import html_text
    from tracker.books.titles import guess_title

    limits = limits or ReadLimits.from_env()
    _check_archive(name, data, limits)
    try:
        with pywarnings.catch_warnings():
            pywarnings.simplefilter("ignore")
            book = epub.read_epub(io.BytesIO(data), options={"ignore_ncx": False})
    except KeyError as exc:
        missing = str(exc.args[0]) if exc.args else str(exc)
        found = re.search(r"named '([^']+)'", missing)
        raise BookFileError(
            f"{name}: the EPUB lists {found.group(1) if found else missing}, "
            "which is missing from the archive: refused"
        ) from None
    except Exception as exc:  # ebooklib's EpubException, lxml errors on broken OPF/NCX
        raise BookFileError(f"{name}: not a readable EPUB ({type(exc).__name__}: {exc})") from None
    warnings: list[str] = []
    by_id = {item.get_id(): item for item in book.get_items()}
    if not book.spine:
        raise BookFileError(f"{name}: the EPUB has no spine (no reading order): refused")
    nav_ids = {item.get_id() for item in book.get_items() if isinstance(item, epub.EpubNav)}
    spine: list[_Spine] = []
    broken: list[str] = []
    for entry in book.spine:
        idref, linear = (entry if isinstance(entry, tuple) else (entry, "yes"))[:2]
        if idref in nav_ids or str(linear).lower() == "no":
            continue
        item = by_id.get(idref)
        if item is None:
            broken.append(str(idref))
            continue
        content = item.content  # the file's bytes (get_content() re-renders XHTML items)
        if isinstance(content, bytes):
            try:
                # EPUB text is UTF-8 or UTF-16 by the standard; older Chinese tools
                # wrote GBK with an XML declaration: the crawler's decoder reads both.
                content = content.decode("utf-8")
            except UnicodeDecodeError:
                try:
                    content = decode_html_bytes(content, f"{name}!{item.get_name()}")
                except InputError as exc:
                    warnings.append(f"{exc} (skipped)")
                    continue
        page_title, text = html_text(content)
        spine.append(_Spine(posixpath.normpath(item.get_name()), clean_text(text), page_title))
    if broken:
        shown = ", ".join(broken[:5]) + (f" and {len(broken) - 5} more" if len(broken) > 5 else "")
        warnings.append(f"{name}: spine entries naming no file in the manifest skipped: {shown}")
    if not spine:
        raise BookFileError(f"{name}: the EPUB's spine names no readable file: refused")
    chapters = _chapters(name, spine, _nav_entries(book.toc), warnings)
    if not chapters:
        raise BookFileError(f"{name}: no text in the EPUB")
    titles, authors = _meta(book, "title"), _meta(book, "creator")
    guess = guess_title("", name) if not titles else None
    languages = _meta(book, "language")
    return ParsedBook(
        title=titles[0] if titles else guess.title if guess else name,
        author=authors[0] if authors else (guess.author if guess else ""),
        chapters=chapters,
        source=name,
        series=_series(book),
        isbn=_isbn(book),
        language=languages[0] if languages else "",
        warnings=warnings,
    )


def _chapters(
    name: str, spine: list[_Spine], nav: list[_NavEntry], warnings: list[str]
) -> list[ParsedChapter]:
    by_file: dict[str, list[_NavEntry]] = {}
    for entry in nav:
        by_file.setdefault(entry.file, []).append(entry)
    # Navigation hrefs are relative to the nav file; spine names to the OPF. Match by
    # the full path, else by the file name alone when that is unambiguous.
    names = {s.href for s in spine}
    by_base: dict[str, list[str]] = {}
    for href in names:
        by_base.setdefault(posixpath.basename(href), []).append(href)
    resolved: dict[str, list[_NavEntry]] = {}
    for file, entries in by_file.items():
        if file in names:
            resolved.setdefault(file, entries)
            continue
        match = by_base.get(posixpath.basename(file), [])
        if len(match) == 1:
            resolved.setdefault(match[0], entries)
    chapters: list[ParsedChapter] = []
    front = 0
    volume = ""
    for part in spine:
        named = resolved.get(part.href)
        if named is None and resolved:
            if not part.text.strip():
                continue
            if chapters:  # a chapter continued in the next file
                chapters[-1].text = f"{chapters[-1].text}\n{part.text}".strip()
            else:
                front += sum(map(len, part.text.split()))
            continue
        if named is not None:
            first = named[0]
            volume = first.title if first.parent else first.volume
            text = _drop_title_line(part.text, first.title)
            if first.parent and len(named) == 1:
                if sum(map(len, text.split())) >= 20:  # a volume's preface
                    chapters.append(ParsedChapter(0, first.title, text, volume))
                continue  # a volume's title page: the chapters follow
            if len(named) > 1:
                _front, split, _warn = split_chapters(part.text)
                if len(split) > 1 and all(c.title for c in split):
                    for c in split:
                        c.volume = c.volume or volume
                    chapters.extend(split)
                    continue
            if text.strip():
                chapters.append(ParsedChapter(0, first.title, text, volume))
            continue
        title, text = _own_heading(part)
        if text.strip():
            chapters.append(ParsedChapter(0, title, text, volume))
    if front:
        warnings.append(
            f"{name}: {front} characters before the first chapter of the navigation "
            "kept out of the book"
        )
    for i, chapter in enumerate(chapters, 1):
        chapter.index = i
    return chapters


def _drop_title_line(text: str, title: str) -> str:
    """A chapter file's text without its own heading line when that repeats the title."""
    lines = text.split("\n")
    squeeze = "".join(title.split())
    for i, line in enumerate(lines[:3]):
        if line.strip() and "".join(line.split()) == squeeze:
            return "\n".join(lines[i + 1 :]).strip()
    return text.strip()


def _own_heading(part: _Spine) -> tuple[str, str]:
    """(title, body) of a spine file without a navigation entry."""
    heads = find_headings(part.text)
    if heads and heads[0].start < 200:
        head = heads[0]
        return head.title, part.text[head.end :].strip()
    first = part.text.strip().split("\n", 1)
    if part.page_title and first and "".join(first[0].split()) == "".join(part.page_title.split()):
        return part.page_title, first[1].strip() if len(first) > 1 else ""
    return part.page_title, part.text.strip()
