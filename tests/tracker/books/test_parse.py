"""Whole-book files and chapter files to ParsedBook (tracker.books.parse), on inputs built
here in the shapes real downloads have."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from tracker.books.parse import (
    BookFileError,
    book_from_files,
    book_from_folder,
    guess_title,
    natural_key,
    read_book,
    read_zip_files,
)
from tracker.plumbing.config import ReadLimits

BODY = (
    "话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。及秦灭之后，楚、汉分争，又并入于汉。"
)
BODY_TRAD = (
    "話說天下大勢，分久必合，合久必分。周末七國分爭，並入於秦。及秦滅之後，楚、漢分爭，又並入於漢。"
)
CHAPTERS = [
    "第一回 宴桃园豪杰三结义 斩黄巾英雄首立功",
    "第二回 张翼德怒鞭督邮 何国舅谋诛宦竖",
    "第三回 议温明董卓叱丁原 馈金珠李肃说吕布",
]


def pirate_txt() -> str:
    """The top of a real pirate-site TXT download: banner, disclaimer, 正文 headings with
    update lines, Windows line ends, the disclaimer again at the end."""
    lines = [
        "    [三国演义 / 罗贯中 著 ]",
        "    作品仅供读者预览,请在下载24小时内删除，不得用作商业用途；为了让作者 罗贯中能提供更多"
        "更好的作品，请您购买请购买正版图书!",
        "",
        " ------章节内容开始-------",
        "",
    ]
    for i, heading in enumerate(CHAPTERS):
        lines += [f"    正文 {heading}", f"    更新时间:2007-11-16 7:55:5{i} 本章字数:4804", "", ""]
        lines += [f"{BODY}第{i + 1}段。", f"　　{BODY}"]
    lines += ["", "作品仅供读者预览,请在下载24小时内删除，不得用作商业用途；请购买正版图书!"]
    return "\r\n".join(lines)


def test_gbk_pirate_download() -> None:
    book = read_book("sanguo.txt", pirate_txt().encode("gbk"))
    assert book.title == "三国演义" and book.author == "罗贯中"
    assert [c.title for c in book.chapters] == CHAPTERS
    assert [c.index for c in book.chapters] == [1, 2, 3]
    assert book.chapters[1].text == f"{BODY}第2段。\n　　{BODY}"
    assert book.source == "sanguo.txt"
    assert all("正版" not in c.text and "\r" not in c.text for c in book.chapters)
    assert any(
        w.startswith("sanguo.txt: ") and "before the first heading" in w for w in book.warnings
    )


@pytest.mark.parametrize("encoding", ["utf-8-sig", "gb18030", "big5", "utf-16"])
def test_encodings(encoding: str) -> None:
    text = f"《紅樓夢》曹雪芹\n\n第一回 甄士隱夢幻識通靈\n{BODY}\n第二回 賈夫人仙逝揚州城\n{BODY}\n"
    text = text.replace(BODY, BODY_TRAD)
    book = read_book("hlm.txt", text.encode(encoding))
    assert (book.title, book.author) == ("紅樓夢", "曹雪芹")
    assert [c.title for c in book.chapters] == [
        "第一回 甄士隱夢幻識通靈",
        "第二回 賈夫人仙逝揚州城",
    ]


@pytest.mark.parametrize(
    ("front", "name", "title", "author"),
    [
        ("书名：斗破苍穹\n作者：天蚕土豆\n", "x.txt", "斗破苍穹", "天蚕土豆"),
        ("《西游记》\n作者：吴承恩\n", "x.txt", "西游记", "吴承恩"),
        ("紅樓夢紅樓夢紅樓夢", "x.txt", "紅樓夢", ""),
        ("鏡花緣鏡花緣李汝珍著", "x.txt", "鏡花緣", "李汝珍"),
        ("", "《水浒传》作者：施耐庵.txt", "水浒传", "施耐庵"),
        ("", "books/三国演义(精校版).txt", "三国演义", ""),
        ("本书简介：这是一个很长的故事，讲的是很多人的事。", "雪中悍刀行.txt", "雪中悍刀行", ""),
        ("本书来自 www.example.com 整理\n内容简介\n一个故事", "剑来.txt", "剑来", ""),
    ],
)
def test_titles_and_authors(front: str, name: str, title: str, author: str) -> None:
    guess = guess_title(front, name)
    assert (guess.title, guess.author) == (title, author)


def test_a_book_without_headings_is_one_chapter() -> None:
    book = read_book("散文.txt", f"{BODY}\n{BODY}".encode())
    assert book.title == "散文" and len(book.chapters) == 1 and book.chapters[0].title == ""
    assert book.warnings == ["散文.txt: no chapter headings found: the book is one chapter"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),
        (b"   \n\t\n", "empty document"),
        (b"\x00\x01\x02\x03binary\x00" * 50, "binary"),
        (bytes(range(1, 32)) * 40, "binary data"),
        (b"%PDF-1.7\n...", "PDF"),
        (b"PK\x03\x04broken", "not a valid zip"),
    ],
)
def test_bad_files_name_the_file(data: bytes, message: str) -> None:
    with pytest.raises(BookFileError, match=message) as info:
        read_book("坏文件.txt", data)
    assert str(info.value).startswith("坏文件.txt: ")


def test_size_limit_names_the_file_and_the_setting() -> None:
    limits = ReadLimits(max_document_bytes=1024)
    with pytest.raises(
        BookFileError, match=r"大书.txt: 2048 bytes, over the 1024 .*YINJI_MAX_DOCUMENT_MB"
    ):
        read_book("大书.txt", b"a" * 2048, limits=limits)


@pytest.mark.slow  # 30 MB of input: seconds, not milliseconds
def test_a_30_mb_book() -> None:
    chapter = (BODY * 40 + "\n") * 16  # about 30 KB of GB18030 per chapter
    text = "".join(f"第{n}章 第{n}个故事\n{chapter}" for n in range(1, 1001))
    data = text.encode("gb18030")
    assert len(data) > 30_000_000
    book = read_book("big.txt", data)
    assert len(book.chapters) == 1000 and book.chapters[-1].title == "第1000章 第1000个故事"
    assert book.chapters[0].text == chapter.strip("\n")


def test_html_book() -> None:
    page = (
        "<!DOCTYPE html><html><head><meta charset='gbk'><title>西游记 - 某某小说网</title>"
        "<meta name='author' content='吴承恩'></head><body><div id='nav'>首页|原创书库|排行</div>"
        + "".join(f"<h2>第{n}回 标题{n}</h2><p>{BODY}</p><p>{BODY}</p>" for n in "一二三")
        + "</body></html>"
    )
    book = read_book("xyj.html", page.encode("gbk"))
    assert (book.title, book.author) == ("西游记", "吴承恩")
    assert [c.title for c in book.chapters] == ["第一回 标题一", "第二回 标题二", "第三回 标题三"]
    assert book.chapters[0].text == f"{BODY}\n{BODY}"


def test_docx_book_with_metadata_and_heading_styles() -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "红楼梦"
    document.core_properties.author = "曹雪芹"
    for name in ["甄士隐梦幻识通灵", "贾夫人仙逝扬州城"]:
        document.add_heading(name, level=1)
        document.add_paragraph(BODY)
        document.add_paragraph(BODY)
    out = io.BytesIO()
    document.save(out)
    book = read_book("hlm.docx", out.getvalue())
    assert (book.title, book.author) == ("红楼梦", "曹雪芹")
    assert [c.title for c in book.chapters] == ["甄士隐梦幻识通灵", "贾夫人仙逝扬州城"]
    assert book.chapters[1].text == f"{BODY}\n{BODY}"


def test_docx_with_chapter_headings_in_plain_paragraphs() -> None:
    import docx

    document = docx.Document()
    for n in "一二":
        document.add_paragraph(f"第{n}章 起")
        document.add_paragraph(BODY)
    out = io.BytesIO()
    document.save(out)
    book = read_book("无题.docx", out.getvalue())
    assert book.title == "无题" and [c.title for c in book.chapters] == ["第一章 起", "第二章 起"]


def test_chapter_files_in_natural_order() -> None:
    files = [
        ("书/第十章.txt", f"第十章 十\n{BODY}".encode()),
        ("书/第二章.txt", f"第二章 二\n{BODY}".encode("gbk")),
        ("书/第一章.txt", BODY.encode()),
        ("书/cover.jpg", b"\xff\xd8\xff"),
        ("书/.DS_Store", b"\x00"),
    ]
    book = book_from_files("三体", files)
    assert book.title == "三体"
    assert [(c.index, c.title) for c in book.chapters] == [
        (1, "第一章"),
        (2, "第二章 二"),
        (3, "第十章 十"),
    ]
    assert book.chapters[0].text == BODY
    assert any("1 files of other types skipped (cover.jpg)" in w for w in book.warnings)
    assert natural_key("第二章.txt") < natural_key("第十章.txt") < natural_key("第十一章.txt")
    assert sorted(["10.txt", "2.txt", "1.txt"], key=natural_key) == ["1.txt", "2.txt", "10.txt"]


def test_chapter_file_holding_several_chapters_and_a_bad_file() -> None:
    files = [
        ("01.txt", f"第一章 甲\n{BODY}\n第二章 乙\n{BODY}".encode()),
        ("02.txt", b"\x00\x01binary\x00"),
        ("03.txt", f"第三章 丙\n{BODY}".encode()),
    ]
    book = book_from_files("书", files)
    assert [c.title for c in book.chapters] == ["第一章 甲", "第二章 乙", "第三章 丙"]
    assert any(w.startswith("书!02.txt: binary") and w.endswith("(skipped)") for w in book.warnings)
    with pytest.raises(BookFileError, match=r"^空: no readable chapter file"):
        book_from_files("空", [("a.jpg", b"x")])


class _GbkName(zipfile.ZipInfo):
    """A member name stored as GBK bytes without the UTF-8 flag (Chinese Windows zip tools)."""

    def _encodeFilenameFlags(self) -> tuple[bytes, int]:
        return self.filename.encode("gbk"), self.flag_bits


def _zip(members: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in members:
            zf.writestr(info, data)
    return out.getvalue()


def test_zip_of_chapters_with_gbk_names() -> None:
    data = _zip(
        [
            (_GbkName("三国/第二回.txt"), f"第二回 张翼德怒鞭督邮\n{BODY}".encode("gbk")),
            (_GbkName("三国/第一回.txt"), f"第一回 宴桃园豪杰三结义\n{BODY}".encode("gbk")),
            (_GbkName("三国/第十回.txt"), f"第十回 勤王室马腾举义\n{BODY}".encode("gbk")),
        ]
    )
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert all(not i.flag_bits & 0x800 for i in zf.infolist())  # really stored without the flag
    files, warnings = read_zip_files("三国.zip", data)
    assert {n for n, _ in files} == {"三国/第一回.txt", "三国/第二回.txt", "三国/第十回.txt"}
    book = read_book("三国演义.zip", data)
    assert book.title == "三国演义"
    assert [c.title for c in book.chapters] == [
        "第一回 宴桃园豪杰三结义",
        "第二回 张翼德怒鞭督邮",
        "第十回 勤王室马腾举义",
    ]
    assert warnings == [] and book.warnings == []


def test_zip_bomb_and_unsafe_members() -> None:
    bomb = _zip([("第一章.txt", b"0" * 5_000_000)])
    with pytest.raises(BookFileError, match=r"^书.zip!第一章.txt: .*zip bomb"):
        read_book("书.zip", bomb)
    unsafe = _zip(
        [("../evil.txt", f"第一章\n{BODY}".encode()), ("ok.txt", f"第二章\n{BODY}".encode())]
    )
    book = read_book("书.zip", unsafe)
    assert [c.title for c in book.chapters] == ["第二章"]
    assert any("书.zip!../evil.txt: unsafe path" in w for w in book.warnings)
    many = _zip([(f"{i}.txt", b"x") for i in range(12)])
    with pytest.raises(BookFileError, match="archive of 12 members, over the 10 allowed"):
        read_book("多.zip", many, limits=ReadLimits(max_zip_members=10))


def test_folder_of_chapters(tmp_path: Path) -> None:
    folder = tmp_path / "雪中悍刀行"
    folder.mkdir()
    (folder / "第2章.txt").write_bytes(f"第二章 二\n{BODY}".encode("gbk"))
    (folder / "第1章.txt").write_text(f"第一章 一\n{BODY}", encoding="utf-8")
    book = book_from_folder(folder)
    assert book.title == "雪中悍刀行" and [c.title for c in book.chapters] == [
        "第一章 一",
        "第二章 二",
    ]
    with pytest.raises(BookFileError, match="not a folder"):
        book_from_folder(tmp_path / "missing")


@pytest.mark.parametrize("encoding", ["gb18030", "big5", "utf-8", "utf-16-le"])
def test_large_files_decode_as_the_project_decoder_does(encoding: str) -> None:
    from tracker.books.parse import decode_book_text
    from tracker.documents.readers import decode_text

    text = "".join(f"第{n}回 第{n}個故事\n{BODY_TRAD * 20}\n" for n in range(1, 400))
    data = text.encode(encoding)
    assert len(data) > 300_000
    assert decode_book_text("big.txt", data) == decode_text(data, "big.txt") == text


def test_chapter_files_with_a_site_banner_each() -> None:
    banner = "笔趣阁 www.example.com 最快更新\n天才一秒记住本站地址：www.example.com\n"
    files = [(f"{n}.html", f"{banner}第{n}章 标题{n}\n{BODY}".encode()) for n in (1, 2)]
    book = book_from_files("书", [(name.replace(".html", ".txt"), data) for name, data in files])
    assert [(c.title, c.text) for c in book.chapters] == [
        ("第1章 标题1", BODY),
        ("第2章 标题2", BODY),
    ]


def test_docx_zip_bomb_is_refused_before_python_docx_reads_it() -> None:
    import docx

    document = docx.Document()
    document.add_paragraph(BODY)
    out = io.BytesIO()
    document.save(out)
    bomb = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(out.getvalue())) as src,
        zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "word/document.xml":
                body = body.replace(b"</w:body>", b"<!--" + b" " * 5_000_000 + b"--></w:body>")
            dst.writestr(info.filename, body)
    with pytest.raises(BookFileError, match=r"^b.docx!word/document.xml: .*zip bomb"):
        read_book("b.docx", bomb.getvalue())


def test_html_chapter_files() -> None:
    def page(n: int, heading: bool) -> bytes:
        head = f"<h1>第{n}章 标题{n}</h1>" if heading else ""
        return (
            f"<html><head><meta charset='gbk'><title>第{n}页 - 某站</title></head>"
            f"<body>{head}<p>{BODY}</p></body></html>"
        ).encode("gbk")

    book = book_from_files("书.zip", [("2.html", page(2, True)), ("1.htm", page(1, False))])
    assert [(c.title, c.text) for c in book.chapters] == [
        ("第1页 - 某站", BODY),  # no heading in the page: its <title>
        ("第2章 标题2", BODY),
    ]
