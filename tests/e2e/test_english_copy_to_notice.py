"""Issue 40, done when: a library of one English book and one Chinese book; an English
pirate page (a local site on 127.0.0.1) copying a chapter with look-alike letters, zero-
width characters and soft hyphens inside unrelated English text is found, named and
noticed; a Chinese pirate page copying the Chinese book is found as before, by the same
commands (``yinji ingest``, ``yinji check URL --json``, ``yinji verdict``, ``yinji case
notice``)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from discokit import env_for
from legadokit import _Server
from textgen import work

from tracker.text.units import LOOKALIKES

DATA = Path(__file__).resolve().parents[1] / "data" / "english"
EN_TITLE = "The Time Machine"
ZH_TITLE = "寒江夜渡"


def yinji(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "tracker.cli", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"yinji {' '.join(map(str, args))}:\n{done.stdout}\n{done.stderr}"
    return done


def evade(text: str, seed: int) -> str:
    """What an English pirate does to a copy: a look-alike Cyrillic or Greek letter for
    one Latin letter in four that has one, a zero-width space or a soft hyphen inside
    some words."""
    rng = random.Random(seed)
    swap: dict[str, str] = {}
    for fake, latin in LOOKALIKES.items():
        if fake.islower():
            swap.setdefault(latin, fake)
    out = []
    for ch in text:
        if ch in swap and rng.random() < 0.25:
            out.append(swap[ch])
        else:
            out.append(ch)
            if ch.isalpha() and rng.random() < 0.03:
                out.append(rng.choice(["\u200b", "\u00ad"]))
    return "".join(out)


def html(title: str, paragraphs: list[str]) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs if p.strip())
    return (
        f"<html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><h1>{title}</h1><article>{body}</article></body></html>"
    ).encode()


class Site(_Server):
    def __init__(self, pages: dict[str, bytes]) -> None:
        super().__init__()
        self.pages = pages

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        if path in self.pages:
            return 200, "text/html; charset=utf-8", self.pages[path]
        return 404, "text/plain", b"not found"


def docx_text(path: Path) -> str:
    import docx

    doc = docx.Document(str(path))
    return "\n".join(p.text for p in doc.paragraphs)


@pytest.mark.slow
def test_an_english_copy_from_page_to_notice_and_a_chinese_copy_as_before(
    tmp_path: Path,
) -> None:
    english = (DATA / "time_machine_ch2_3.txt").read_text(encoding="utf-8")
    chapter3 = english[english.index("III\n") :]
    chinese = work(4001, 60)
    works = [
        {"id": "time-machine", "title": EN_TITLE, "author": "H. G. Wells", "text": english},
        {"id": "hanjiang", "title": ZH_TITLE, "text": chinese},
    ]
    library = tmp_path / "works.jsonl"
    library.write_text("".join(json.dumps(w, ensure_ascii=False) + "\n" for w in works), "utf-8")
    env = env_for(tmp_path / "data")
    yinji(env, "ingest", library)

    # The English page: a chapter of the book, evaded, between unrelated English text
    # (the opening of Treasure Island), paragraphs re-wrapped as a site shows them.
    host = (DATA / "treasure_island_ch1_2.md").read_text(encoding="utf-8")
    copied = [evade(" ".join(p.split()), 40) for p in chapter3.split("\n\n")[1:6]]
    en_page = html("Chapter 3 - free novels online", [host[:1400], *copied, host[1400:]])
    zh_copy = chinese[1500:2700]
    zh_page = html("第三章 免费阅读", [work(4002, 4), zh_copy, work(4003, 4)])
    with Site({"/en/ch3.html": en_page, "/zh/3.html": zh_page}) as site:
        en_url, zh_url = f"{site.base}/en/ch3.html", f"{site.base}/zh/3.html"
        done = yinji(env, "check", "--json", "--include-text", en_url, zh_url)
    en, zh = map(json.loads, done.stdout.splitlines())  # one line a page, in order

    # Found and named: the English book, over the copied paragraphs, no warning.
    assert en["warnings"] == []
    (match,) = en["matches"]
    assert match["mother_id"] == "time-machine" and match["title"] == EN_TITLE
    text = en["text"]
    # The copy stands between the two parts of the host text.
    start = text.index(host[1370:1400]) + 30
    end = text.index(host[1400:1430].strip())
    covered = sum(
        min(end, p["suspect_end"]) - max(start, p["suspect_start"])
        for p in match["passages"]
        if p["suspect_end"] > start and p["suspect_start"] < end
    )
    assert covered >= 0.9 * (end - start), match["passages"]
    assert all(
        p["suspect_start"] >= start - 5 and p["suspect_end"] <= end + 5 for p in match["passages"]
    )
    # The mother side points into the book's chapter III.
    offset = english.index(chapter3)
    assert all(p["mother_start"] >= offset - 5 for p in match["passages"])

    # The Chinese copy: found in the Chinese book, its span as copied.
    (zmatch,) = zh["matches"]
    assert zmatch["mother_id"] == "hanjiang" and zmatch["title"] == ZH_TITLE
    ztext = zh["text"]
    zs = ztext.index(zh_copy[:30])
    (zp,) = zmatch["passages"]
    assert abs(zp["suspect_start"] - zs) <= 3
    assert abs(zp["suspect_end"] - (zs + len(zh_copy))) <= 3
    assert abs(zp["mother_start"] - 1500) <= 3 and abs(zp["mother_end"] - 2700) <= 3

    # Confirmed, the English copy makes a case whose notice names the page and the book.
    yinji(env, "verdict", en["suspect_id"], match["mother_id"], "confirmed")
    cases = json.loads(yinji(env, "case", "list", "--json").stdout)
    (case,) = [c for c in cases if c["work_title"] == EN_TITLE]
    profile = ["--name", "Time Press", "--address", "1 Example Road", "--email", "r@example.com"]
    yinji(env, "case", "profile", "set", *profile)
    out = tmp_path / "notice.en.docx"
    yinji(env, "case", "notice", case["id"], "--format", "docx", "--lang", "en", "-o", out)
    notice = docx_text(out)
    (line,) = [x for x in notice.splitlines() if x.startswith(f"{en_url}: copies ")]
    assert f'"{EN_TITLE}"' in line, line
