"""Issue 36, cases opened per chapter before books: four confirmed chapters of 水浒传 on
one site had four cases (the library's legacy ``{"work": "shuihu", "work_title":
"水浒传"}`` metadata, docs/TAKEDOWN.md's own example). The one-time migration (the
first ``sync``, or `yinji case merge-books`) merges them into one case titled 水浒传 with
every URL in chapter order and the history carried over; the merged cases are closed
with a pointer; a verdict that arrives later merges a late per-chapter case on the fly;
a URL is in at most one open case. A URL filed before pages were URLs (its text joined
from two pages) is named in the notice with "pages 1–2 together"."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tracker.books.model import MIGRATED_META
from tracker.cases import CaseService
from tracker.cases.alerts import Alerter, digest_data
from tracker.cases.cli import case
from tracker.cases.grouping import book_of, page_in_url
from tracker.cases.model import Case, CaseEvent, CaseURL, page_label, verify_chain
from tracker.cases.notices import build_notice
from tracker.cases.service import MERGED_KEY
from tracker.cases.settings import CaseSettings
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.common.records import ChapterRef, Match, Mother, Passage, Suspect
from tracker.common.rules import site_of
from tracker.plumbing.config import Settings
from tracker.store import SqliteStore

LEGACY = {"work": "shuihu", "work_title": "水浒传"}
HEADINGS = {
    3: "第三回 史大郎夜走华阴县 鲁提辖拳打镇关西",
    4: "第四回 赵员外重修文殊院 鲁智深大闹五台山",
    5: "第五回 小霸王醉入销金帐 花和尚大闹桃花村",
    6: "第六回 九纹龙剪径赤松林 鲁智深火烧瓦罐寺",
    7: "第七回 花和尚倒拔垂杨柳 豹子头误入白虎堂",
}
SITE = "http://127.0.0.1:8123"
HOLDER = {"name": "梁山出版社", "address": "山东省济宁市梁山县", "email": "legal@ls.example"}


def _chapter(store: SqliteStore, n: int, *, joined: bool = False) -> Match:
    """A legacy chapter mother, its copy fetched at ``SITE/book/n.html`` (with
    ``joined``, a text assembled from ``n.html`` + ``n_2.html`` as book runs stored it
    before pages were URLs), and the confirmed match."""
    mid = f"shuihu-{n:02d}"
    store.put_mother(Mother(id=mid, title=HEADINGS[n], text="正文" * 60, metadata=LEGACY))
    url = f"{SITE}/book/{n}.html"
    meta = {"pages": [url, f"{SITE}/book/{n}_2.html"]} if joined else {}
    store.put_suspect(
        Suspect(
            id=f"s{n}",
            text="正文" * 50,
            url=url,
            source="book" if joined else "crawl",
            raw=f"<html>{n}</html>".encode(),
            metadata=meta,
        )
    )
    match = Match(
        suspect_id=f"s{n}",
        mother_id=mid,
        score=0.9,
        coverage=0.8,
        mother_coverage=0.5,
        passages=[Passage(0, 80, 0, 80, 0.97)],
        mother_title=HEADINGS[n],
        suspect_url=url,
        verdict="confirmed",
    )
    store.put_matches(f"s{n}", [match])
    return store.get_match(match.id)


def _legacy_case(svc: CaseService, match: Match) -> str:
    """A case as the code before books opened it: per chapter (work = the mother id),
    on the host alone."""
    c = svc.open_case(
        work=match.mother_id, domain="127.0.0.1", who="old", work_title=match.mother_title
    )

    def add(x):
        x.urls.append(
            CaseURL(url=match.suspect_url, suspect_id=match.suspect_id, mother_id=match.mother_id)
        )
        x.mother_ids.append(match.mother_id)
        return [CaseEvent(x.id, "url_added", "old", data={"url": match.suspect_url})]

    return svc.update(c.id, add).id


def _open_urls(svc: CaseService) -> list[str]:
    return [u.url for c in svc.list_cases() if c.state != "closed" for u in c.urls]


def test_per_chapter_cases_merge_into_one_book_case(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "yinji.sqlite3")
    svc = CaseService(SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "b"))
    try:
        matches = {n: _chapter(store, n, joined=n == 5) for n in (3, 4, 5, 6)}
        legacy = {n: _legacy_case(svc, matches[n]) for n in (6, 4, 5, 3)}  # in any order
        svc.mark_sent(legacy[4], who="alice", note="邮件已发")
        svc.add_note(legacy[5], "平台客服已回复", who="bob")
        before = {cid: svc.history(cid) for cid in legacy.values()}
        assert len({c.id for c in svc.list_cases()}) == 4
        # A combined notice of the four cases names the book once, not four times.
        svc.set_profile(**HOLDER)
        combined = build_notice(svc, list(legacy.values()), "zh", matches=store).text
        assert combined.count("作品名称") == 1 and "作品名称：《水浒传》（案件编号" in combined
        assert all(cid in combined for cid in legacy.values())

        assert svc.sync(store) == 0  # the first sync: the one-time migration
        (kept,) = [c for c in svc.list_cases() if c.state != "closed"]
        assert kept.id == legacy[4]  # the case a notice went out for stays
        assert (kept.work, kept.work_title, kept.kind) == ("shuihu", "水浒传", "book")
        assert kept.domain == "127.0.0.1:8123" and kept.state == "notice_sent"
        assert [u.url for u in kept.urls] == [f"{SITE}/book/{n}.html" for n in (3, 4, 5, 6)]
        assert [u.chapter_index for u in kept.urls] == [3, 4, 5, 6]
        assert [u.chapter for u in kept.urls] == [HEADINGS[n] for n in (3, 4, 5, 6)]
        history = svc.history(kept.id)
        assert verify_chain(history) == []
        for n in (3, 5, 6):  # every event of each merged case, carried over verbatim
            merged = svc.get(legacy[n])
            assert merged.state == "closed" and merged.metadata["merged_into"] == kept.id
            last = svc.history(merged.id)[-1]
            assert last.to_state == "closed" and last.data == {"merged_into": kept.id}
            carried = [
                e.data["event"]
                for e in history
                if e.kind == "merged" and e.data.get("from_case") == merged.id
            ]
            assert [e["hash"] for e in carried] == [e.hash for e in before[merged.id]]
            assert any(
                e.kind == "merged" and e.data.get("merged_case") == merged.id for e in history
            )
        notes = [e.data["event"]["note"] for e in history if "event" in e.data]
        assert "平台客服已回复" in notes and "邮件已发" in [e.note for e in history]
        assert sorted(kept.metadata["merged_from"]) == sorted(legacy[n] for n in (3, 5, 6))
        assert svc.store.get_meta(MERGED_KEY) is not None
        urls = _open_urls(svc)
        assert len(urls) == len(set(urls)) == 4

        # The notice names the book once, each chapter, and says which figures cover
        # two pages together (the chapter-5 text was joined from 5.html + 5_2.html).
        zh = build_notice(svc, [kept.id], "zh", matches=store).text
        en = build_notice(svc, [kept.id], "en", matches=store).text
        assert zh.count("作品名称") == 1 and "作品名称：《水浒传》" in zh
        assert "《水浒传》第五回 小霸王醉入销金帐 花和尚大闹桃花村" in zh
        line = next(x for x in zh.splitlines() if x.startswith(f"- {SITE}/book/5.html："))
        assert (
            f"第 1–2 页合计（{SITE}/book/5.html、{SITE}/book/5_2.html）的文字中复制部分占" in line
        )
        line = next(x for x in en.splitlines() if x.startswith(f"- {SITE}/book/5.html: "))
        assert "of the text of pages 1–2 together" in line
        line = next(x for x in zh.splitlines() if x.startswith(f"- {SITE}/book/4.html："))
        assert "页面文字中复制部分占" in line and "合计" not in line

        # After the migration an old worker opens one more per-chapter case; the next
        # verdict of the book on the site merges it on the fly.
        late = _legacy_case(svc, _chapter(store, 7))
        assert len(_open_urls(svc)) == 5 and svc.get(late).state == "open"
        store.set_verdict(matches[6].id, "pending", None)
        result = svc.apply_verdict(store, "s6", "shuihu-06", "confirmed", who="alice")
        assert result.case is not None and result.case.id == kept.id
        assert svc.get(late).metadata["merged_into"] == kept.id
        (only,) = [c for c in svc.list_cases() if c.state != "closed"]
        assert [u.chapter_index for u in only.urls] == [3, 4, 5, 6, 7]
        urls = _open_urls(svc)
        assert len(urls) == len(set(urls)) == 5
    finally:
        svc.store.close()
        store.close()


def test_cli_merge_books(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    from tracker.cases.store_factory import open_case_store

    with SqliteStore(data / "yinji.sqlite3") as store:
        matches = [_chapter(store, n) for n in (3, 4)]
    svc = CaseService(open_case_store(settings), settings)
    try:
        ids = [_legacy_case(svc, m) for m in matches]
        svc.store.set_meta(MERGED_KEY, {"at": "before"})  # as if the first sync had run
    finally:
        svc.close()
        svc.store.close()
    r = CliRunner().invoke(case, ["merge-books", "--json"], obj={"data_dir": data})
    assert r.exit_code == 0, r.output
    (kept,) = json.loads(r.stdout)
    assert kept["work_title"] == "水浒传" and kept["domain"] == "127.0.0.1:8123"
    assert len(kept["urls"]) == 2 and kept["id"] in ids
    r = CliRunner().invoke(case, ["merge-books"], obj={"data_dir": data})
    assert r.exit_code == 0 and "0 case(s) regrouped" in r.output
    r = CliRunner().invoke(case, ["show", kept["id"]], obj={"data_dir": data})
    assert "[第三回 史大郎夜走华阴县 鲁提辖拳打镇关西]" in r.output


def test_books_and_sites_are_read_as_the_contract_says(tmp_path: Path) -> None:
    legacy = ChapterRef.of(Mother(id="shuihu-05", title=HEADINGS[5], text="", metadata=LEGACY))
    assert legacy is not None and (legacy.book_id, legacy.book_title) == ("shuihu", "水浒传")
    assert (legacy.chapter, legacy.chapter_index) == (HEADINGS[5], 5)
    assert legacy.label("en") == f'"水浒传", chapter 5 ({HEADINGS[5]})'
    contract = ChapterRef.of(
        Mother(
            id="xyj-0041",
            title="《西游记》第四十一回 心猿遭火败 木母被魔擒",
            text="",
            metadata={
                "book_id": "xyj",
                "book_title": "西游记",
                "author": "吴承恩",
                "chapter": "第四十一回 心猿遭火败 木母被魔擒",
                "chapter_index": 41,
            },
        )
    )
    assert contract is not None and contract.label("zh") == (
        "《西游记》第四十一回 心猿遭火败 木母被魔擒"
    )
    assert contract.label("en") == '"西游记", chapter 41 (第四十一回 心猿遭火败 木母被魔擒)'
    assert contract.author == "吴承恩"
    titled = Mother(id="m", title="《三国演义》宴桃园豪杰三结义", text="")
    # a 《书名》章节名 title names a book only in a library stored before books
    assert ChapterRef.of(titled) is None
    found = ChapterRef.of(titled, from_title=True)
    assert found is not None and (found.book_title, found.chapter) == (
        "三国演义",
        "宴桃园豪杰三结义",
    )
    with SqliteStore(tmp_path / "lib.sqlite3") as store:
        store.put_mother(titled)
        assert book_of(store, "m") == found  # not migrated yet: read as the migration will
        store.set_meta(MIGRATED_META, {"at": "now"})
        assert book_of(store, "m") is None  # since books: only metadata names a book
    assert ChapterRef.of(Mother(id="m", title="一篇散文", text=""), from_title=True) is None
    named = ChapterRef.of(Mother(id="m", title="第四回", text="", metadata={"book": "红楼梦"}))
    assert named is not None and (named.book_id, named.book_title) == ("红楼梦", "红楼梦")
    alone = ChapterRef.of(
        Mother(id="m", title="第一章 雾起", text="", metadata={"work_title": "雾城旧梦"})
    )
    assert alone is not None and (alone.book_id, alone.chapter) == ("雾城旧梦", "第一章 雾起")
    assert site_of("http://127.0.0.1:8001/a") == "127.0.0.1:8001"
    assert site_of("https://Pirate.Example:443/a") == "pirate.example"
    assert site_of("http://pirate.example/a") == "pirate.example"
    assert site_of("not a url") == ""
    assert [page_in_url(u) for u in ("/b/2.html", "/b/2_2.html", "/read?id=2&page=3")] == [
        None,
        2,
        3,
    ]


class _Kept(Alerter):
    """An alerter that keeps what it would deliver (the delivery is tested elsewhere)."""

    def __init__(self) -> None:
        super().__init__(CaseSettings(webhook_url="http://hook.invalid/", webhook_secret="s"))
        self.sent: list[tuple[str, dict, str, str]] = []

    def send(self, event, data, *, subject, text):
        self.sent.append((event, dict(data), subject, text))
        return []


def test_alerts_name_book_and_chapter(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "yinji.sqlite3")
    svc = CaseService(SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "b"))
    try:
        matches = [_chapter(store, n) for n in (3, 4)]
        for m in matches:
            svc.apply_verdict(store, m.suspect_id, m.mother_id, "confirmed", who="alice")
        (c,) = svc.list_cases()
        alerts = _Kept()
        alerts.new_matches(matches, store)
        ((event, data, subject, text),) = alerts.sent
        assert event == "match.new"
        assert [(i["book_title"], i["chapter"], i["chapter_index"]) for i in data["matches"]] == [
            ("水浒传", HEADINGS[3], 3),
            ("水浒传", HEADINGS[4], 4),
        ]
        assert f"《水浒传》{HEADINGS[3]}" in text
        alerts.case_removed(c)
        (event, data, subject, text) = alerts.sent[-1]
        assert event == "case.removed" and "《水浒传》" in subject
        assert data["book_title"] == "水浒传" and data["book_id"] == "shuihu"
        assert [(p["chapter_index"], p["url"]) for p in data["pages"]] == [
            (3, f"{SITE}/book/3.html"),
            (4, f"{SITE}/book/4.html"),
        ]
        assert f"《水浒传》{HEADINGS[4]}  {SITE}/book/4.html" in text
        digest = digest_data(svc, store)
        assert {(m["book_title"], m["chapter"]) for m in digest["top_matches"]} == {
            ("水浒传", HEADINGS[3]),
            ("水浒传", HEADINGS[4]),
        }
    finally:
        svc.store.close()
        store.close()


def test_a_case_url_names_its_chapter_and_page_as_the_notices_do() -> None:
    case = Case(id="c", work="shuihu", domain="127.0.0.1:8123", work_title="水浒传", kind="book")
    case.metadata["author"] = "施耐庵"
    u = CaseURL(url=f"{SITE}/book/5_2.html", chapter=HEADINGS[5], chapter_index=5, page=2)
    ref = u.chapter_ref(case)
    assert ref is not None and ref.author == "施耐庵"
    assert ref.label("zh") == f"《水浒传》{HEADINGS[5]}"
    assert ref.label("en") == f'"水浒传", chapter 5 ({HEADINGS[5]})'
    assert (page_label(u.page, "zh"), page_label(u.page, "en")) == ("第 2 页", "page 2")
    assert page_label(0) == ""
    assert CaseURL(url=f"{SITE}/x.html").chapter_ref(case) is None  # no chapter recorded
    page_case = Case(id="p", work="essay", domain="x", kind="page")
    assert u.chapter_ref(page_case) is None  # not a book's case
