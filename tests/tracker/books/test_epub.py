"""EPUB books (tracker.books.epub), built in the test with ebooklib or by hand."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable

import pytest
from ebooklib import epub

from tracker.books.parse import BookFileError, read_book

BODY = "话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。及秦灭之后，楚、汉分争。"


def build(*, nav: bool = True, ncx: bool = True, headings_in_toc: bool = True) -> bytes:
    book = epub.EpubBook()
    book.set_identifier("urn:isbn:978-7-02-000873-5")
    book.set_title("西游记")
    book.set_language("zh-CN")
    book.add_author("吴承恩")
    book.add_metadata(None, "meta", "", {"name": "calibre:series", "content": "四大名著"})
    cover = epub.EpubHtml(title="封面", file_name="text/cover.xhtml", lang="zh")
    cover.content = "<html><body><p>西游记 吴承恩 著 人民文学出版社</p></body></html>"
    chapters = []
    names = [("一", "灵根育孕源流出"), ("二", "悟彻菩提真妙理"), ("三", "四海千山皆拱伏")]
    for i, (n, name) in enumerate(names, 1):
        c = epub.EpubHtml(title=f"第{n}回 {name}", file_name=f"text/c{i}.xhtml", lang="zh")
        c.content = (
            f"<html><head><title>第{n}回</title></head><body><h2>第{n}回 {name}</h2>"
            f"<p>{BODY}</p><p>{BODY}第{n}回完。</p></body></html>"
        )
        chapters.append(c)
    more = epub.EpubHtml(title="续", file_name="text/c2b.xhtml", lang="zh")
    more.content = f"<html><body><p>第二回的下半：{BODY}</p></body></html>"
    notes = epub.EpubHtml(title="注释", file_name="text/notes.xhtml", lang="zh")
    notes.content = "<html><body><p>注释不在正文里。</p></body></html>"
    for item in [cover, *chapters, more, notes]:
        book.add_item(item)
    book.toc = chapters if headings_in_toc else []
    if ncx:
        book.add_item(epub.EpubNcx())
    if nav:
        book.add_item(epub.EpubNav())
    book.spine = [
        *(["nav"] if nav else []),
        cover,
        chapters[0],
        chapters[1],
        more,
        chapters[2],
        (notes.id, "no"),
    ]
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


def rewrite(
    data: bytes,
    *,
    drop: set[str] = frozenset(),  # type: ignore[assignment]
    edit: dict[str, Callable[[bytes], bytes]] | None = None,
    add: dict[str, bytes] | None = None,
) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if info.filename in drop:
                continue
            body = src.read(info)
            if edit and info.filename in edit:
                body = edit[info.filename](body)
            dst.writestr(info, body)
        for name, body in (add or {}).items():
            dst.writestr(name, body)
    return out.getvalue()


def test_epub3_spine_navigation_and_metadata() -> None:
    book = read_book("xiyouji.epub", build())
    assert (book.title, book.author, book.language) == ("西游记", "吴承恩", "zh-CN")
    assert (book.isbn, book.series, book.source) == ("9787020008735", "四大名著", "xiyouji.epub")
    assert [(c.index, c.title) for c in book.chapters] == [
        (1, "第一回 灵根育孕源流出"),
        (2, "第二回 悟彻菩提真妙理"),
        (3, "第三回 四海千山皆拱伏"),
    ]
    # the heading line is not body text; a spine file without a navigation entry
    # continues the chapter before it; the linear="no" notes are left out
    assert book.chapters[0].text == f"{BODY}\n{BODY}第一回完。"
    assert book.chapters[1].text.endswith(f"第二回的下半：{BODY}")
    assert all("注释" not in c.text for c in book.chapters)
    assert any("before the first chapter of the navigation" in w for w in book.warnings)


def test_epub2_with_ncx_only() -> None:
    data = build(nav=False)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert not any(n.endswith("nav.xhtml") for n in zf.namelist())
    book = read_book("xyj.epub", data)
    assert [c.title for c in book.chapters] == [
        "第一回 灵根育孕源流出",
        "第二回 悟彻菩提真妙理",
        "第三回 四海千山皆拱伏",
    ]


def test_epub_without_navigation_titles_chapters_by_their_headings() -> None:
    data = build(nav=False, ncx=False, headings_in_toc=False)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        opf = next(n for n in zf.namelist() if n.endswith(".opf"))
    # ebooklib's writer names an NCX in the spine even when there is none
    data = rewrite(data, edit={opf: lambda body: body.replace(b' toc="ncx"', b"")})
    book = read_book("xyj.epub", data)
    # each spine file is a chapter: titled by its heading, else by its <title>
    assert [c.title for c in book.chapters] == [
        "封面",
        "第一回 灵根育孕源流出",
        "第二回 悟彻菩提真妙理",
        "续",
        "第三回 四海千山皆拱伏",
    ]
    assert book.chapters[1].text == f"{BODY}\n{BODY}第一回完。"


def test_drm_is_refused() -> None:
    data = build()
    rights = rewrite(data, add={"META-INF/rights.xml": b"<rights/>"})
    with pytest.raises(
        BookFileError, match=r"^drm.epub: DRM-protected EPUB \(META-INF/rights.xml\)"
    ):
        read_book("drm.epub", rights)
    encrypted = (
        b'<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        b'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
        b'<enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>'
        b'<enc:CipherData><enc:CipherReference URI="EPUB/text/c1.xhtml"/></enc:CipherData>'
        b"</enc:EncryptedData></encryption>"
    )
    with pytest.raises(
        BookFileError, match=r"DRM-protected EPUB \(EPUB/text/c1.xhtml is encrypted\)"
    ):
        read_book("drm.epub", rewrite(data, add={"META-INF/encryption.xml": encrypted}))
    fonts = encrypted.replace(
        b"http://www.w3.org/2001/04/xmlenc#aes128-cbc", b"http://www.idpf.org/2008/embedding"
    )
    fonts = fonts.replace(b"EPUB/text/c1.xhtml", b"EPUB/fonts/a.otf")
    assert (
        len(read_book("fonts.epub", rewrite(data, add={"META-INF/encryption.xml": fonts})).chapters)
        == 3
    )


def test_missing_spine_file_is_refused_naming_it() -> None:
    data = build()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        victim = next(n for n in zf.namelist() if n.endswith("c2.xhtml"))
    with pytest.raises(
        BookFileError, match=rf"^broken.epub: the EPUB lists {victim}, which is missing"
    ):
        read_book("broken.epub", rewrite(data, drop={victim}))


def test_spine_entry_naming_no_manifest_item_is_skipped_with_a_warning() -> None:
    data = build()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        opf = next(n for n in zf.namelist() if n.endswith(".opf"))

    def ghost(body: bytes) -> bytes:
        return body.replace(b"</spine>", b'<itemref idref="ghost"/></spine>')

    book = read_book("ghost.epub", rewrite(data, edit={opf: ghost}))
    assert len(book.chapters) == 3
    assert any(
        "ghost.epub: spine entries naming no file in the manifest skipped: ghost" in w
        for w in book.warnings
    )


def test_not_an_epub_and_no_spine() -> None:
    with pytest.raises(BookFileError, match=r"^x.epub: not a valid"):
        read_book("x.epub", b"PK\x03\x04 not really a zip")
    data = build()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        opf = next(n for n in zf.namelist() if n.endswith(".opf"))

    def empty_spine(body: bytes) -> bytes:
        start, end = body.index(b"<spine"), body.index(b"</spine>")
        return body[:start] + b"<spine></spine>" + body[end + len(b"</spine>") :]

    with pytest.raises(BookFileError, match=r"^nospine.epub: the EPUB has no spine"):
        read_book("nospine.epub", rewrite(data, edit={opf: empty_spine}))


def _big_epub(n: int) -> bytes:
    """An EPUB 2 of ``n`` spine items, written directly (ebooklib's writer is slow)."""
    manifest = "".join(
        f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>' for i in range(n)
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(n))
    points = "".join(
        f'<navPoint id="p{i}"><navLabel><text>第{i + 1}章</text></navLabel>'
        f'<content src="c{i}.xhtml"/></navPoint>'
        for i in range(n)
    )
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="2.0" '
        'unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>长篇</dc:title>'
        '<dc:identifier id="id">x</dc:identifier><dc:language>zh</dc:language></metadata>'
        '<manifest><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
        f"{manifest}</manifest>"
        f'<spine toc="ncx">{spine}</spine></package>'
    )
    ncx = (
        '<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/">'
        f"<navMap>{points}</navMap></ncx>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        zf.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" '
            'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        zf.writestr("OEBPS/content.opf", opf)
        zf.writestr("OEBPS/toc.ncx", ncx)
        for i in range(n):
            zf.writestr(
                f"OEBPS/c{i}.xhtml", f"<html><body><p>第{i + 1}章的正文。{BODY}</p></body></html>"
            )
    return out.getvalue()


def test_ten_thousand_spine_items() -> None:
    book = read_book("long.epub", _big_epub(10_000))
    assert book.title == "长篇" and len(book.chapters) == 10_000
    assert book.chapters[9_999].title == "第10000章"
    assert book.chapters[9_999].text.startswith("第10000章的正文。")


def test_epub_zip_bomb_is_refused() -> None:
    data = rewrite(build(), add={})
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
        dst.writestr("OEBPS/bomb.xhtml", b" " * 5_000_000)
    with pytest.raises(
        BookFileError, match=r"^bomb.epub!OEBPS/bomb.xhtml: too large or compressed like a zip bomb"
    ):
        read_book("bomb.epub", out.getvalue())


def test_volumes_from_nested_navigation() -> None:
    book = epub.EpubBook()
    book.set_identifier("v")
    book.set_title("长篇")
    book.set_language("zh")
    items = []
    for i, (file, title, body) in enumerate(
        [
            ("v1.xhtml", "第一卷 潜龙", ""),
            ("c1.xhtml", "第一章 少年", BODY),
            ("c2.xhtml", "第二章 出山", BODY),
            ("v2.xhtml", "第二卷 飞龙", "本卷写主角名动天下的经过，其间风波不断，恩怨纠缠。"),
            ("c3.xhtml", "第一章 入京", BODY),
        ]
    ):
        item = epub.EpubHtml(title=title, file_name=file, lang="zh", uid=f"i{i}")
        item.content = f"<html><body><h1>{title}</h1><p>{body}</p></body></html>"
        book.add_item(item)
        items.append(item)
    _v1, c1, c2, _v2, c3 = items
    book.toc = [
        (epub.Section("第一卷 潜龙", href="v1.xhtml"), [c1, c2]),
        (epub.Section("第二卷 飞龙", href="v2.xhtml"), [c3]),
    ]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    out = io.BytesIO()
    epub.write_epub(out, book)
    parsed = read_book("长篇.epub", out.getvalue())
    assert [(c.title, c.volume) for c in parsed.chapters] == [
        ("第一章 少年", "第一卷 潜龙"),
        ("第二章 出山", "第一卷 潜龙"),
        ("第二卷 飞龙", "第二卷 飞龙"),  # the volume's preface is kept
        ("第一章 入京", "第二卷 飞龙"),
    ]
    assert parsed.chapters[0].text == BODY


def test_gbk_chapter_files_in_an_epub() -> None:
    data = build()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        victim = next(n for n in zf.namelist() if n.endswith("c1.xhtml"))

    def to_gbk(body: bytes) -> bytes:
        text = body.decode("utf-8").replace('encoding="utf-8"', 'encoding="gbk"')
        if "encoding=" not in text[:100]:
            text = '<?xml version="1.0" encoding="gbk"?>' + text.split("?>", 1)[-1]
        return text.encode("gbk")

    book = read_book("gbk.epub", rewrite(data, edit={victim: to_gbk}))
    assert book.chapters[0].text == f"{BODY}\n{BODY}第一回完。"
