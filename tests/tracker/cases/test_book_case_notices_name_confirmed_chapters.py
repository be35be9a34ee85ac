"""Issue #23, "Done when": a local pirate site whose book index lists chapters 3, 1, 2;
`yinji case book`; two of the three chapter matches confirmed; the notices (zh and en,
PDF and DOCX) name exactly those two URLs, each with its own chapter, in chapter order,
with the capture's fetch time; a pasted text's notice says submitted, not fetched; a
re-run of `case book` changes no case count."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from casekit import PageServer, html
from click.testing import CliRunner
from textgen import homophones, work

from tracker.cases.cli import case, verdict
from tracker.common.timefmt import human_utc
from tracker.documents.readers import Document
from tracker.evidence import Capture, EvidenceLog
from tracker.evidence.keys import format_fingerprint
from tracker.library import Library
from tracker.plumbing.config import Settings

CHAPTERS = {n: work(300 + n, 40) for n in (1, 2, 3)}
TITLES = {1: "《雾城旧梦》第一章 雾起", 2: "《雾城旧梦》第二章 旧人", 3: "《雾城旧梦》第三章 夜雨"}
HOLDER = {
    "name": "青简文化有限公司",
    "contact": "李明",
    "email": "legal@qingjian.example",
    "address": "北京市海淀区中关村大街1号",
}
PASTED = work(303, 40)[:600]


def _site() -> dict[str, tuple[int, bytes, str]]:
    links = "".join(  # the "最新章节" link first: the page lists 3, 1, 2
        f"<li><a href='/book/9527/{n}.html'>{TITLES[n].split('》', 1)[1]}</a></li>"
        for n in (3, 1, 2)
    )
    index = html("雾城旧梦", "目录", extra=f"<ul>{links}</ul>")
    pages = {"/book/9527/index.html": (200, index, "text/html")}
    for n, text in CHAPTERS.items():
        body = homophones(text) if n == 2 else text
        pages[f"/book/9527/{n}.html"] = (200, html(TITLES[n], body), "text/html")
    return pages


def _chapter(n: int, lang: str) -> str:
    """How a notice names chapter ``n``: zh 《雾城旧梦》第一章 雾起, en "雾城旧梦",
    chapter 1 (第一章 雾起)."""
    if lang == "zh":
        return TITLES[n]
    return f'"雾城旧梦", chapter {n} ({TITLES[n].split("》", 1)[1]})'


def _flat(text: str) -> str:
    return "".join(text.split())


def _pdf_text(data: bytes) -> str:
    from pypdf import PdfReader

    return "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(data)).pages)


def _docx_text(data: bytes) -> str:
    from docx import Document as Docx

    return "\n".join(p.text for p in Docx(io.BytesIO(data)).paragraphs)


def _run(obj: dict, command, args: list[str]) -> str:
    r = CliRunner().invoke(command, args, obj=obj, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def _cases(obj: dict) -> list[dict]:
    return json.loads(_run(obj, case, ["list", "--json", "--no-sync"]))


@pytest.mark.slow
def test_done_when(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    with Library.open(settings) as lib:
        lib.ingest([Document(id=f"wc-{n}", text=t, title=TITLES[n]) for n, t in CHAPTERS.items()])
    monkeypatch.setenv("YINJI_ALLOW_PRIVATE_URLS", "1")
    monkeypatch.setenv("YINJI_CRAWL_MIN_INTERVAL", "0")
    obj = {"data_dir": data}
    _run(obj, case, ["profile", "set", *[f"--{k}={v}" for k, v in HOLDER.items()]])
    with PageServer() as server:
        server.pages.update(_site())
        index = server.url("/book/9527/index.html")
        report = json.loads(_run(obj, case, ["book", index, "--json"]))
        url = {n: server.url(f"/book/9527/{n}.html") for n in (1, 2, 3)}
        # The book's chapters in chapter order, whatever the index's order.
        assert [c["url"] for c in report["chapters"]] == [url[1], url[2], url[3]]
        assert report["matched_chapters"] == 3
        (book_case,) = _cases(obj)
        cid = book_case["id"]

        # Pending matches only: no notice, no mark-sent.
        out = tmp_path / "early.pdf"
        r = CliRunner().invoke(
            case, ["notice", cid, "--format", "pdf", "--lang", "zh", "-o", str(out)], obj=obj
        )
        assert r.exit_code == 1 and "no URL with a confirmed match" in r.output
        r = CliRunner().invoke(case, ["mark-sent", cid], obj=obj)
        assert r.exit_code == 1 and "confirmed" in r.output

        # Confirm chapters 3 and 1 (in that order); chapter 2 stays pending.
        chapter = {c["url"]: c for c in report["chapters"]}
        for n in (3, 1):
            ch = chapter[url[n]]
            (m,) = [m for m in ch["matches"] if m["mother_id"] == f"wc-{n}"]
            _run(obj, verdict, [ch["suspect_id"], m["mother_id"], "confirmed"])
        assert [c["id"] for c in _cases(obj)] == [cid]  # the verdicts found the book's case

        # The capture times the evidence log holds for each chapter page.
        fetched = {}
        with EvidenceLog.from_settings(settings) as log:
            key = format_fingerprint(log.key_id)  # printed on every notice
            for n in (1, 3):
                (entry,) = [
                    e
                    for e in log.entries(suspect_id=chapter[url[n]]["suspect_id"])
                    if e.kind == "capture"
                ]
                fetched[n] = human_utc(Capture.from_json(entry.payload).fetched_at)

        texts = {}
        for lang in ("zh", "en"):
            for fmt in ("pdf", "docx"):
                path = tmp_path / f"notice-{lang}.{fmt}"
                args = ["notice", cid, "--format", fmt, "--lang", lang, "-o", str(path)]
                said = CliRunner().invoke(case, args, obj=obj).output
                assert f"not in the notice: {url[2]} (its match is pending" in said
                raw = path.read_bytes()
                texts[(lang, fmt)] = _pdf_text(raw) if fmt == "pdf" else _docx_text(raw)

        for (lang, fmt), text in texts.items():
            flat = _flat(text)
            where = f"{lang} {fmt}"
            assert _flat(url[2]) not in flat, where  # pending: not named
            assert _flat(url[1]) in flat and _flat(url[3]) in flat, where
            # Chapter order: chapter 1's statements come before chapter 3's.
            assert flat.index(_flat(url[1])) < flat.index(_flat(url[3])), where
            assert "《《" not in flat and "》》" not in flat, where
            for n in (1, 3):
                other = 3 if n == 1 else 1
                sep = "：" if lang == "zh" else ":"
                start = flat.index(_flat(url[n]) + sep)
                line = flat[start : start + 600].split(_flat(url[other]) + sep)[0]
                assert _flat(_chapter(n, lang)) in line, (where, line)  # its own chapter
                assert _flat(_chapter(other, lang)) not in line, (where, line)
                assert _flat(fetched[n]) in line, (where, line)  # the capture's fetch time
            assert _flat(key) in flat, where
            if lang == "zh":
                assert "签名或盖章" in flat
        pdf_zh = tmp_path / "notice-zh.pdf"
        assert re.search(r"1\s*/\s*\d", _pdf_text(pdf_zh.read_bytes()))  # pages "n / N"

        # A pasted text with a URL, confirmed: its notice says submitted, not fetched.
        paste = tmp_path / "paste.jsonl"
        paste.write_text(
            json.dumps({"id": "paste-1", "text": PASTED, "url": "https://blog.example/p/1"}) + "\n",
            encoding="utf-8",
        )
        with Library.open(settings) as lib:
            from tracker.documents.readers import iter_documents

            (res,) = list(lib.check(iter_documents([paste]), save=True))
        assert any(m.mother_id == "wc-3" for m in res.matches)
        _run(obj, verdict, [res.suspect.id, "wc-3", "confirmed"])
        (blog,) = [c for c in _cases(obj) if c["domain"] == "blog.example"]
        for lang, said, not_said in (
            ("zh", "提交的文本，未抓取", "抓取时间"),
            ("en", "submitted text, not fetched", "; fetched"),
        ):
            path = tmp_path / f"paste-{lang}.docx"
            args = ["notice", blog["id"], "--format", "docx", "--lang", lang, "-o", str(path)]
            _run(obj, case, args)
            text = _docx_text(path.read_bytes())
            assert said in text and not_said not in text and "/tmp" not in text

        # Re-running the book changes no case count.
        before = len(_cases(obj))
        again = json.loads(_run(obj, case, ["book", index, "--json"]))
        assert again["case_id"] == cid and len(_cases(obj)) == before
        said = CliRunner().invoke(case, ["book", index], obj=obj).output
        assert f"case {cid} (open)" in said and "1 chapter URL(s) of the case have no" in said
        assert len(_cases(obj)) == before
