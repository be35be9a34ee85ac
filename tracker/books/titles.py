"""A book's title and author from the text before its first chapter (its front
matter) or its file name: ``guess_title`` (``tracker.books.parse`` and ``epub`` read
with it)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from tracker.books.headings import strip_junk


@dataclass
class TitleGuess:
    """Title and author read from a book's front matter or name ("" when not found)."""

    title: str = ""
    author: str = ""


_BOOK_LINE = re.compile(
    r"^[ \t\u3000]*(?:书名|書名|书 名|作品名称|作品名稱)[ \t\u3000]*[:：]"
    r"[ \t\u3000]*(.+?)[ \t\u3000]*$",
    re.M,
)
_AUTHOR_LINE = re.compile(
    r"(?:作者|作 者|著者)[ \t\u3000]*[:：][ \t\u3000]*([^\s，,。；;|/]{1,20})", re.M
)
_QUOTED = re.compile(r"《([^》\n]{1,40})》")
_BANNER = re.compile(
    r"^[ \t\u3000]*[\[【]\s*([^/\]】\n]{1,40}?)\s*/\s*([^/\]】\n]{1,20}?)\s*著?\s*[\]】]", re.M
)
_AFTER_QUOTE = re.compile(
    r"^[ \t\u3000]*(?:作者[:：]?|著)?[ \t\u3000]*([\u4e00-\u9fff·]{2,5})"
    r"[ \t\u3000]*著?[ \t\u3000]*$"
)
_WROTE = re.compile(r"([\u4e00-\u9fff·]{2,4})[ \t\u3000]*[著撰]$")
_FILE_NOISE = re.compile(
    r"(?:txt|TXT)?(?:全集|全本|精校版|校对版|完整版|完结|全文|下载|未删节|无删减)|"
    r"[(（\[【][^)）\]】]{0,20}[)）\]】]$"
)


# Lone first lines that are not a book's title.
_NOT_TITLES = frozenset(
    [
        "简介",
        "簡介",
        "内容简介",
        "內容簡介",
        "作品简介",
        "目录",
        "目錄",
        "正文",
        "前言",
        "序",
        "序言",
        "楔子",
    ]
)


def _split_author(line: str) -> tuple[str, str]:
    """``鏡花緣鏡花緣李汝珍著`` → (``鏡花緣鏡花緣``, ``李汝珍``): a name of two to four
    characters before 著/撰, the length that leaves a repeated title preferred."""
    wrote = _WROTE.search(line)
    if not wrote:
        return line, ""
    end = wrote.end() - 1
    for size in (3, 2, 4):
        rest = line[: end - size]
        if len(rest) >= 1 and end - size >= wrote.start() and _collapse(rest) != rest:
            return rest, line[end - size : end]
    size = min(3, end - wrote.start())
    return line[: end - size], line[end - size : end]


def _collapse(title: str) -> str:
    """``紅樓夢紅樓夢紅樓夢`` → ``紅樓夢`` (a scraped title repeated)."""
    for size in range(1, len(title) // 2 + 1):
        if len(title) % size == 0 and title[:size] * (len(title) // size) == title:
            return title[:size]
    return title


def guess_title(front: str, name: str) -> TitleGuess:
    """Title and author from a book's front matter, else from its file name."""
    guess = TitleGuess()
    m = _BOOK_LINE.search(front)
    if m:
        guess.title = m.group(1).strip("《》 ")
    m = _AUTHOR_LINE.search(front)
    if m:
        guess.author = m.group(1)
    if not guess.title:
        banner = _BANNER.search(front)
        if banner:
            guess.title = banner.group(1).strip("《》 ")
            guess.author = guess.author or banner.group(2).strip()
    if not guess.title:
        for q in _QUOTED.finditer(front):
            if not q.group(1).strip():
                continue
            guess.title = q.group(1).strip()
            line_end = front.find("\n", q.end())
            after = front[q.end() : line_end if line_end >= 0 else len(front)]
            who = _AFTER_QUOTE.match(after)
            if who and not guess.author:
                guess.author = who.group(1)
            break
    if not guess.title:
        for line in strip_junk(front).splitlines():
            line = line.strip(" \t\u3000")
            if not line:
                continue
            if line in _NOT_TITLES:
                break
            if len(line) <= 40 and not re.search(r"[，。！？；：,.!?;:|/\\]", line):
                line, author = _split_author(line)
                guess.author = guess.author or author
                line = _collapse(line)
                if 1 <= len(line) <= 20:
                    guess.title = line
            break
    if not guess.title:
        base = posixpath.basename(name.replace("\\", "/").rsplit("!", 1)[-1])
        stem = posixpath.splitext(base)[0]
        cleaned = _FILE_NOISE.sub("", stem).strip(" _-.") or stem
        from_name = guess_title(cleaned, "") if name else TitleGuess()
        if from_name.title:
            guess.title = from_name.title
            guess.author = guess.author or from_name.author
        else:
            guess.title = cleaned or "untitled"
    return guess
