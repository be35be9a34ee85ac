"""Issue 36, done when: a book from file to notice, as a user runs it (the README's
"A book from file to notice" runs these commands).

A whole-book GBK TXT with a pirate download's banner and an EPUB of another book are
ingested (``yinji ingest``); a local pirate site on 127.0.0.1 (GBK pages, a search that
answers the book title, a chapter over ``2.html`` + ``2_2.html``) copies three chapters
of the first book and is imported from the Legado file readers share (``yinji discover
site import``); ``yinji discover run`` finds them through the site's search for the
book title; the three matches are confirmed (``yinji verdict``) and give one case for
the book holding four URLs in chapter order (``yinji case show --json``); the zh and en
notices name each page with its chapter (``yinji case notice``); after the notice went
out, ``yinji case recheck`` says ``still_online`` while ``2.html`` is gone but
``2_2.html`` still copies, and ``removed`` once every page is gone.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from discokit import env_for
from legadokit import GbkPostSite, gbk_source
from textgen import work

TITLE = "寒江夜渡"
AUTHOR = "林远"
HEADINGS = ["江口夜泊", "旧信重开", "渡船失灯", "雪里来人", "归帆"]


def yinji(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "tracker.cli", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"yinji {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def chapter_texts() -> list[str]:
    return [work(360 + n, 60) for n in range(len(HEADINGS))]


def numeral(n: int) -> str:
    return "零一二三四五六七八九十"[n]


def book_txt(chapters: list[str]) -> bytes:
    """A pirate download of the book: a site banner and ad lines on top, ``正文`` before
    each heading and an update line after it, GBK."""
    lines = [
        f"    [{TITLE} / {AUTHOR} 著 ]",
        f"    作品仅供读者预览,请在下载24小时内删除，不得用作商业用途；为了让作者 {AUTHOR}"
        "能提供更多更好的作品，请您购买正版图书!",
        "",
        " ------章节内容开始-------",
        "",
    ]
    for n, (heading, text) in enumerate(zip(HEADINGS, chapters, strict=True), 1):
        lines.append(f"    正文 第{numeral(n)}回 {heading}")
        lines.append(f"    更新时间:2007-11-16 7:55:5{n} 本章字数:{len(text)}")
        lines.append("")
        lines += ["　　" + s + "。" for s in text.split("。") if s]
        lines.append("")
    return "\r\n".join(lines).encode("gbk")


def book_epub() -> bytes:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("qingshi-xiangji")
    book.set_title("青石巷记")
    book.set_language("zh-CN")
    book.add_author("苏晴")
    chapters = []
    for n in range(1, 4):
        c = epub.EpubHtml(title=f"第{n}章 巷口", file_name=f"c{n}.xhtml", lang="zh")
        paras = "".join(f"<p>{s}。</p>" for s in work(700 + n, 30).split("。") if s)
        c.content = f"<html><body><h2>第{n}章 巷口</h2>{paras}</body></html>"
        chapters.append(c)
        book.add_item(c)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


class PirateSite(GbkPostSite):
    """The GBK pirate site of ``legadokit``; a path in ``gone`` answers 404."""

    def __init__(self, books: dict[str, tuple[str, list[str]]]) -> None:
        super().__init__(books)
        self.gone: set[str] = set()

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        if path in self.gone:
            return 404, "text/plain", b"not found"
        return super().answer(method, path, body)


def docx_text(path: Path) -> str:
    import docx

    doc = docx.Document(str(path))
    parts = [p.text for p in doc.paragraphs]
    for table in doc.tables:
        for row in table.rows:
            parts += [cell.text for cell in row.cells]
    return "\n".join(parts)


@pytest.mark.slow
def test_a_book_from_file_to_notice(tmp_path: Path) -> None:
    chapters = chapter_texts()
    (tmp_path / f"{TITLE}.txt").write_bytes(book_txt(chapters))
    (tmp_path / "青石巷记.epub").write_bytes(book_epub())
    env = env_for(tmp_path / "data")

    made = yinji(env, "ingest", str(tmp_path / f"{TITLE}.txt"))
    assert "1 book, 5 chapters" in made.stdout + made.stderr
    made = yinji(env, "ingest", str(tmp_path / "青石巷记.epub"))
    assert "1 book, 3 chapters" in made.stdout + made.stderr
    books = {b["title"]: b for b in json.loads(yinji(env, "book", "list", "--json").stdout)}
    assert books[TITLE]["author"] == AUTHOR and books[TITLE]["chapters"] == 5
    assert books["青石巷记"]["chapters"] == 3
    shown = json.loads(yinji(env, "book", "show", books[TITLE]["id"], "--json").stdout)
    works = {c["index"]: c["work_id"] for c in shown["chapters"]}
    assert [c["title"] for c in shown["chapters"]] == [
        f"第{numeral(n)}回 {h}" for n, h in enumerate(HEADINGS, 1)
    ]

    # The pirate site holds chapters 1-3 of the book; chapter 2 over two pages.
    with PirateSite({TITLE: (AUTHOR, chapters[:3])}) as site:
        sources = tmp_path / "书源.json"
        sources.write_text(json.dumps([gbk_source(site.base)], ensure_ascii=False), "utf-8")
        yinji(env, "discover", "site", "import", str(sources))
        ran = yinji(env, "discover", "run", "--json", "--interval", "0")
        searched = {_key(body) for _, path, body in site.requests if path.endswith("search.php")}
        assert searched == {TITLE, "青石巷记"}  # each book by its title, never an id
        lines = [json.loads(line) for line in ran.stdout.splitlines()]
        found = [(p["suspect_id"], m["mother_id"]) for p in lines for m in p["matches"]]
        assert sorted(m for _, m in found) == [works[1], works[2], works[3]], ran.stderr
        book = f"{site.base}/book/0"
        urls = [f"{book}/1.html", f"{book}/2.html", f"{book}/2_2.html", f"{book}/3.html"]
        (split,) = [p for p in lines if "pages" in p]  # chapter 2: one check of both pages
        assert split["url"] == urls[1] and split["pages"] == urls[1:3]

        for suspect_id, mother_id in found:
            yinji(env, "verdict", suspect_id, mother_id, "confirmed")

        cases = json.loads(yinji(env, "case", "list", "--json").stdout)
        assert len(cases) == 1, cases
        case = json.loads(yinji(env, "case", "show", cases[0]["id"], "--json").stdout)
        case_id = case["id"]
        assert case["work_title"] == TITLE
        assert case["urls"] == urls
        assert [(u["chapter_index"], u["page"]) for u in case["url_details"]] == [
            (1, 0),
            (2, 1),
            (2, 2),
            (3, 0),
        ]

        yinji(
            env,
            "case",
            "profile",
            "set",
            "--name",
            "寒江出版社",
            "--address",
            "北京市东城区示例路 1 号",
            "--email",
            "rights@example.com",
        )
        for lang in ("zh", "en"):
            out = tmp_path / f"notice.{lang}.docx"
            yinji(env, "case", "notice", case_id, "--format", "docx", "--lang", lang, "-o", out)
            text = docx_text(out)
            for url, n, page in zip(urls, (1, 2, 2, 3), (0, 1, 2, 0), strict=True):
                # The page's evidence line names the book, the chapter and its page.
                lead = f"{url}：复制自" if lang == "zh" else f"{url}: copies "
                (line,) = [x for x in text.splitlines() if x.startswith(lead)]
                heading = f"第{numeral(n)}回 {HEADINGS[n - 1]}"
                zh, en = f"《{TITLE}》{heading}", f'"{TITLE}", chapter {n} ({heading})'
                assert (zh if lang == "zh" else en) in line, (lang, line)
                if page:
                    assert (f"第 {page} 页" if lang == "zh" else f"page {page};") in line, line
            assert text.index(urls[1]) < text.index(urls[2]) < text.index(urls[3])
            assert ("第 1–2 页合计" if lang == "zh" else "pages 1–2 together") in text
            for url in urls:  # each page's own capture: the SHA-256 of the bytes it served
                served = site.answer("GET", url.removeprefix(site.base), b"")[2]
                assert hashlib.sha256(served).hexdigest() in text, (lang, url)

        yinji(env, "case", "mark-sent", case_id)
        site.gone.add("/book/0/2.html")  # the first page taken down, the second still up
        rechecked = json.loads(yinji(env, "case", "recheck", case_id, "--json").stdout)
        assert rechecked["after"] == "still_online", rechecked
        outcomes = {c["url"]: c["outcome"] for c in rechecked["checks"]}
        assert outcomes[urls[1]] == "gone" and outcomes[urls[2]] == "matching", outcomes

        site.gone |= {"/book/0/1.html", "/book/0/2_2.html", "/book/0/3.html"}
        rechecked = json.loads(yinji(env, "case", "recheck", case_id, "--json").stdout)
        assert rechecked["after"] == "removed", rechecked


def _key(body: bytes) -> str:
    """The search key of a POST to the site's search (GBK, percent-encoded)."""
    from urllib.parse import unquote_to_bytes

    return unquote_to_bytes(body.decode("ascii").removeprefix("searchkey=")).decode("gbk")
