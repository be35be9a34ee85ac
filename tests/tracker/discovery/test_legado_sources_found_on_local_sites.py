"""Issue #38's "Done when": one Legado file with three sources — POST + GBK with bare-CSS
rules and a chapter over two pages, a JSON API read by JSONPath, and one whose search
needs JavaScript — imported; discovery against local sites built to the first two finds
every planted chapter on both and reports the third as needing JavaScript."""

from __future__ import annotations

import pytest
from legadokit import AD, GbkPostSite, JsonApiSite, legado_file
from textgen import work

from tracker.crawler import Crawler, CrawlerConfig
from tracker.discovery.legado.importer import import_path
from tracker.discovery.run import DiscoveryRun, RunOptions
from tracker.discovery.sites import SiteRegistry
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings


def _chapters(seed: int, n: int = 3) -> list[str]:
    text = work(seed, 30 * n)
    sentences = [s + "。" for s in text.split("。") if s]
    return ["".join(sentences[i * 30 : (i + 1) * 30]) for i in range(n)]


BOOKS = {
    "寒江夜渡": ("林远", _chapters(11)),
    "青石巷记": ("苏晴", _chapters(22)),
}


def _docs() -> list[Document]:
    out = []
    for b, (title, (author, chapters)) in enumerate(BOOKS.items()):
        for i, text in enumerate(chapters, 1):
            out.append(
                Document(
                    id=f"b{b}-{i:04d}",
                    title=f"《{title}》第{i}章",
                    text=text,
                    metadata={
                        "book_id": f"b{b}",
                        "book_title": title,
                        "author": author,
                        "chapter": f"第{i}章",
                        "chapter_index": i,
                    },
                )
            )
    return out


@pytest.mark.slow
def test_import_three_sources_and_find_every_planted_chapter(tmp_path):
    gbk_books = {"寒江夜渡": BOOKS["寒江夜渡"]}
    json_books = {"青石巷记": BOOKS["青石巷记"]}
    with GbkPostSite(gbk_books) as gbk, JsonApiSite(json_books) as api:
        ports = {gbk.port, api.port}
        crawler = Crawler(
            CrawlerConfig(
                allow_address=lambda ip, port: str(ip) == "127.0.0.1" and port in ports,
                min_interval=0.0,
                retries=0,
                respect_robots=False,
            )
        )
        path = tmp_path / "sources.json"
        path.write_text(legado_file(gbk.base, api.base), encoding="utf-8")
        with Library.open(Settings.from_env(tmp_path / "data")) as lib:
            lib.ingest(_docs())
            verdicts = {v.name: v for v in import_path(lib, str(path))}
            run = DiscoveryRun(
                lib,
                RunOptions(interval=0.0, max_pages=100, read_processes=0, search=False),
                providers=[],
                crawler=crawler,
            )
            report = run.run()
            sites = {s.note: s for s in SiteRegistry(lib.store).list()}
    # The import: two usable, the third named as needing JavaScript.
    assert verdicts["GBK 笔趣阁"].status == "imported", verdicts["GBK 笔趣阁"].reasons
    assert any("explore" in r for r in verdicts["GBK 笔趣阁"].reasons)  # left out, named
    assert verdicts["JSON 小说 API"].status == "imported", verdicts["JSON 小说 API"].reasons
    js = verdicts["要脚本的站"]
    assert js.status == "partial" and any("needs JavaScript" in r for r in js.reasons)
    assert sites["GBK 笔趣阁"].origin == str(path)
    # Every planted chapter found, on both sites.
    found = {m["mother_id"] for m in report.matches}
    assert found >= {f"b0-{i:04d}" for i in (1, 2, 3)} | {f"b1-{i:04d}" for i in (1, 2, 3)}, (
        report.summary_lines()
    )
    by_site = {m["source"] for m in report.matches}
    assert by_site == {f"site:127.0.0.1:{gbk.port}", f"site:127.0.0.1:{api.port}"}
    # The search went by POST with the key in GBK; chapter 2 was read over its two pages.
    posts = [(m, p, b) for m, p, b in gbk.requests if m == "POST"]
    assert posts and b"searchkey=%BA%AE%BD%AD%D2%B9%B6%C9" in {b for _, _, b in posts}
    two = next(m for m in report.matches if m["mother_id"] == "b0-0002")
    assert [u.rsplit("/", 1)[1] for u in two["pages"]] == ["2.html", "2_2.html"]
    assert any(p.endswith("index_2.html") for _, p, _ in gbk.requests)  # contents page 2
    # The other book searched on each site: not found, said so.
    assert any("no book 《青石巷记》" in line for line in report.not_found)
    assert any("no book 《寒江夜渡》" in line for line in report.not_found)
    # Health: the last search of each site was ok.
    assert sites["GBK 笔趣阁"].health["ok"] is True
    assert AD not in str(report.to_dict())


@pytest.mark.slow
def test_import_from_a_folder_and_a_url_a_bad_file_costing_only_itself(tmp_path):
    import json

    from discokit import LocalServer
    from legadokit import gbk_source, json_source

    from tracker.discovery.service import import_sources

    folder = tmp_path / "sources"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps([gbk_source("http://a.test")]), "utf-8")
    (folder / "b.txt").write_text("this is not JSON", "utf-8")
    (folder / "c.js").write_text("var sources = " + json.dumps(json_source("http://c.test")))
    shared = json.dumps([json_source("http://d.test", name="网上的源")]).encode()

    def route(path: str):  # type: ignore[no-untyped-def]
        return 200, {"Content-Type": "application/json"}, shared

    with LocalServer(route) as web, Library.open(Settings.from_env(tmp_path / "d")) as lib:
        verdicts = import_path(lib, str(folder))
        crawler = Crawler(
            CrawlerConfig(allow_address=lambda ip, port: port == web.port, respect_robots=False)
        )
        from_url = import_sources(lib, url=f"{web.base}/sources.json", crawler=crawler)
        sites = {s.note: s for s in SiteRegistry(lib.store).list()}
    assert [(v.name, v.status) for v in verdicts] == [
        ("GBK 笔趣阁", "imported"),
        ("b.txt", "refused"),
        ("JSON 小说 API", "imported"),
    ]
    assert "b.txt" in verdicts[1].reasons[0] and "not Legado book sources" in verdicts[1].reasons[0]
    assert [v.status for v in from_url] == ["imported"]
    assert sites["网上的源"].origin == f"{web.base}/sources.json"
