"""The property of every notice: each statement derives from a stored fact.

Cases are generated (hypothesis): chapters of a book, numbered in Chinese or Arabic
numerals, titles with or without 《》, pages fetched (raw bytes, a fetch time) or texts
handed in (a receipt time), copies with a known number of changed characters (so the
similarity on characters is known independently of the code under test), verdicts
confirmed, pending or dismissed, URLs filed in random order. For each generated case the
notice (zh and en) must:

- name exactly the confirmed URLs, in chapter order, and refuse when there are none;
- state, on each URL's evidence line, only that URL's own facts: its work and chapter,
  its similarity on characters and on initials, its fetch time and page hash, or
  "submitted, not fetched" with its receipt time; no other URL's time, hash or title;
- quote titles once (no 《《…》》).
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textgen import work

from tracker.cases import CaseService
from tracker.cases.facts import NoConfirmedURL, bare_title, zh_title
from tracker.cases.notices import build_notice
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.common.records import Match, Mother, Passage, Suspect
from tracker.common.timefmt import human_utc
from tracker.plumbing.config import Settings
from tracker.store import SqliteStore

ZH_NUMBERS = ["一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二"]
HOLDER = {"name": "青简文化", "address": "北京市海淀区", "email": "legal@qingjian.example"}
SUBMITTED = {"zh": "提交的文本，未抓取", "en": "submitted text, not fetched"}
FETCHED = {"zh": "抓取时间", "en": "; fetched "}
PASSAGE = 60  # characters copied per page
SWAP = "甲乙丙丁戊己庚辛壬癸"  # never in textgen's texts: each swap is one changed character

page = st.fixed_dictionaries(
    {
        "arabic": st.booleans(),
        "quoted": st.booleans(),
        "fetched": st.booleans(),
        "verdict": st.sampled_from(["confirmed", "confirmed", "pending", "dismissed"]),
        "changed": st.integers(min_value=0, max_value=12),
        "initials": st.integers(min_value=80, max_value=100),
        "minutes": st.integers(min_value=0, max_value=60 * 24 * 30),
    }
)
books = st.tuples(
    st.lists(page, min_size=1, max_size=6),
    st.randoms(use_true_random=False),
    st.booleans(),  # the mothers carry the book's work_title metadata
)


def _fill(store: SqliteStore, svc: CaseService, pages: list[dict], rng, meta: bool) -> list[dict]:
    """Store one mother, suspect and match per page; file each page's URL into one book
    case in a shuffled order (as a book run does, whatever the verdicts); return the
    facts the test expects, per page."""
    base = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)
    facts = []
    for n, p in enumerate(pages, 1):
        number = str(n) if p["arabic"] else ZH_NUMBERS[n - 1]
        title = f"雾城旧梦 第{number}章 夜话{n}"
        # One library writes its titles one way: with 《》 (then the title names the book,
        # issue 36) or without, for every chapter.
        if pages[0]["quoted"]:
            title = f"《雾城旧梦》第{number}章 夜话{n}"
        mother_text = work(100 + n, 8)
        copied = list(mother_text[:PASSAGE])
        for i in range(p["changed"]):  # one changed character every 5: a known diff
            copied[i * 5] = SWAP[i % len(SWAP)]
        suspect_text = "".join(copied) + work(900 + n, 1)
        meta_ = {"work_title": "雾城旧梦"} if meta else {}
        store.put_mother(Mother(id=f"m{n}", title=title, text=mother_text, metadata=meta_))
        url = f"https://pirate.example/book/9527/{n}.html"
        at = base + timedelta(minutes=p["minutes"], milliseconds=n * 7)
        raw = f"<html><body>{suspect_text}</body></html>".encode() if p["fetched"] else None
        store.put_suspect(
            Suspect(
                id=f"s{n}",
                text=suspect_text,
                url=url,
                source="crawl" if p["fetched"] else "text",
                raw=raw,
                fetched_at=at,
            )
        )
        initials = p["initials"] / 100
        match = Match(
            suspect_id=f"s{n}",
            mother_id=f"m{n}",
            score=initials,
            coverage=PASSAGE / len(suspect_text),
            mother_coverage=0.5,
            passages=[Passage(0, PASSAGE, 0, PASSAGE, initials)],
            mother_title=title,
            suspect_url=url,
            verdict=p["verdict"],
        )
        store.put_matches(f"s{n}", [match])
        facts.append(
            {
                "n": n,
                "url": url,
                "confirmed": p["verdict"] == "confirmed",
                "fetched": p["fetched"],
                "at": human_utc(at),
                "sha": hashlib.sha256(raw).hexdigest() if raw else None,
                "chars": f"{(PASSAGE - p['changed']) / PASSAGE:.2f}",
                "initials": f"{initials:.2f}",
                "title": bare_title(title),
                # How the notice names the chapter: a mother with the book's title in
                # its metadata or in 《》 is a chapter of 雾城旧梦 (its heading and place).
                "zh": f"《雾城旧梦》第{number}章 夜话{n}"
                if meta or pages[0]["quoted"]
                else f"《{bare_title(title)}》",
                "en": f'"雾城旧梦", chapter {n} (第{number}章 夜话{n})'
                if meta or pages[0]["quoted"]
                else f'"{bare_title(title)}"',
            }
        )
    case = svc.open_case(work="wucheng", domain="pirate.example", who="t", kind="book")
    order = list(facts)
    rng.shuffle(order)

    def file_all(c):
        from tracker.cases.model import CaseEvent, CaseURL

        for f in order:
            c.urls.append(
                CaseURL(url=f["url"], suspect_id=f"s{f['n']}", mother_id=f"m{f['n']}", score=1.0)
            )
        return [CaseEvent(c.id, "book", "t")]

    svc.update(case.id, file_all)
    return facts


def _evidence_lines(text: str, urls: list[str]) -> dict[str, str]:
    """URL → the list item of section 3 that states its evidence (it starts with the URL
    followed by a colon)."""
    out = {}
    for line in text.splitlines():
        for url in urls:
            if line.startswith(f"- {url}：") or line.startswith(f"- {url}: "):
                out[url] = line
    return out


def _check_notice(text: str, lang: str, facts: list[dict]) -> None:
    confirmed = [f for f in facts if f["confirmed"]]
    others = [f for f in facts if not f["confirmed"]]
    for f in others:  # a URL without a confirmed match is not named at all
        assert f["url"] not in text
    lines = _evidence_lines(text, [f["url"] for f in confirmed])
    assert list(lines) == [f["url"] for f in confirmed]  # every one, in chapter order
    assert "《《" not in text and "》》" not in text
    all_times = {f["at"] for f in facts}
    all_shas = {f["sha"] for f in facts if f["sha"]}
    for f in confirmed:
        line = lines[f["url"]]
        assert f[lang] in line  # its own work and chapter, as stored
        for other in facts:  # no other page's chapter
            if other is not f:
                assert f"夜话{other['n']}；" not in line and f"夜话{other['n']};" not in line
        assert f["chars"] in line and f["initials"] in line  # its own similarities
        # The only times and hashes on the line are its own.
        times = set(re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", line))
        shas = set(re.findall(r"\b[0-9a-f]{64}\b", line))
        assert times == {f["at"]} and times <= all_times
        if f["fetched"]:
            assert FETCHED[lang] in line and SUBMITTED[lang] not in line
            assert shas == {f["sha"]} and shas <= all_shas
        else:
            assert SUBMITTED[lang] in line and FETCHED[lang] not in line
            assert shas == set()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(books)
def test_every_statement_of_a_notice_derives_from_a_stored_fact(book) -> None:
    pages, rng, meta = book
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = SqliteStore(folder / "yinji.sqlite3")
        svc = CaseService(
            SqliteCaseStore(folder / "cases.sqlite3", blob_dir=folder / "b"),
            Settings(data_dir=folder / "data"),
        )
        try:
            facts = _fill(store, svc, pages, rng, meta)
            svc.set_profile(**HOLDER)
            (case,) = svc.list_cases()
            if not any(f["confirmed"] for f in facts):
                with pytest.raises(NoConfirmedURL, match="no URL with a confirmed match"):
                    build_notice(svc, [case.id], "zh", matches=store)
                return
            for lang in ("zh", "en"):
                notice = build_notice(svc, [case.id], lang, matches=store)
                _check_notice(notice.text, lang, facts)
                assert notice.urls == [f["url"] for f in facts if f["confirmed"]]
                assert {x.url for x in notice.left_out} == {
                    f["url"] for f in facts if not f["confirmed"]
                }
        finally:
            svc.store.close()
            store.close()


@pytest.mark.parametrize(
    ("title", "bare", "quoted"),
    [
        ("《雾城旧梦》", "雾城旧梦", "《雾城旧梦》"),
        ("雾城旧梦", "雾城旧梦", "《雾城旧梦》"),
        ("《雾城旧梦》第一章 夜话", "《雾城旧梦》第一章 夜话", "《雾城旧梦》第一章 夜话"),
        ("《《雾城旧梦》》", "雾城旧梦", "《雾城旧梦》"),
        ("《甲》与《乙》", "《甲》与《乙》", "《甲》与《乙》"),
    ],
)
def test_titles_are_quoted_once(title: str, bare: str, quoted: str) -> None:
    assert bare_title(title) == bare and zh_title(title) == quoted
