"""The 发现 Discovery page and /api/v1/discover: sites registered through the API (the
search form found on a local GBK pirate site), a run started through the API on the
in-process worker, the page listing runs per source with links to the evidence view."""

from __future__ import annotations

import io
import json
import time

import pytest
from discokit import FakePirateSite
from textgen import work
from webkit import NO_CRAWL_PAUSE, WebSystem, csrf, web_system

from tracker.documents.readers import Document

system = web_system(allow_private_urls=True, env=NO_CRAWL_PAUSE)
TEXT = work(707, 45)


def auth(system: WebSystem, role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {system.tokens[role]}"}


@pytest.mark.slow
def test_discovery_page_and_api(system: WebSystem) -> None:
    system.library.ingest([Document(id="w-web", title="夜航船记", text=TEXT)])
    sentences = [s + "。" for s in TEXT.split("。") if s]
    chapters = ["".join(sentences[i : i + 15]) for i in range(0, 45, 15)]
    api = system.app.test_client()
    with FakePirateSite({"夜航船记": chapters}) as pirate:
        refused = api.post("/api/v1/discover/sites", json={"url": pirate.base + "/"},
                           headers=auth(system, "viewer"))  # fmt: skip
        assert refused.status_code == 403
        bad = api.post("/api/v1/discover/sites", json={"url": "ftp://x.test/"},
                       headers=auth(system, "analyst"))  # fmt: skip
        assert bad.status_code == 400 and "ftp://x.test/" in bad.get_json()["error"]
        added = api.post("/api/v1/discover/sites", json={"url": pirate.base + "/"},
                         headers=auth(system, "analyst"))  # fmt: skip
        assert added.status_code == 201, added.get_data(as_text=True)
        site = added.get_json()
        assert site["profile"] == "jieqi" and site["encoding"] == "gbk"

        wrong = api.post("/api/v1/discover/runs", json={"max_pages": "lots"},
                         headers=auth(system, "analyst"))  # fmt: skip
        assert wrong.status_code == 400 and "max_pages" in wrong.get_json()["error"]
        started = api.post("/api/v1/discover/runs", json={"max_pages": 20},
                           headers=auth(system, "analyst"))  # fmt: skip
        assert started.status_code == 202 and started.get_json()["task_id"]
        assert started.get_json()["progress"] == f"/api/v1/jobs/{started.get_json()['task_id']}"
        job = api.get(started.get_json()["progress"], headers=auth(system, "viewer")).get_json()
        assert job["kind"] == "discover"
        live = system.client("viewer").get(
            f"/discover?job={started.get_json()['task_id']}&run={started.get_json()['run_id']}"
            "&lang=zh"
        )
        text = live.get_data(as_text=True)
        assert 'id="job-progress"' in text and f"运行 {started.get_json()['run_id']}" in text
        assert f"/api/v1/discover/runs/{started.get_json()['run_id']}" in text

        deadline = time.monotonic() + 90
        run: dict = {}
        while time.monotonic() < deadline:
            runs = api.get("/api/v1/discover/runs", headers=auth(system, "viewer")).get_json()
            if runs["runs"] and runs["runs"][0]["checked"] >= 3:
                run = runs["runs"][0]
                break
            time.sleep(0.5)
        assert run, "the run did not check the three chapters in 90 s"
    host = site["url"].split("//")[1].rstrip("/")
    assert run["sources"][f"site:{host}"]["matched"] == 3
    assert {m["mother_id"] for m in run["matches"]} == {"w-web"}
    one = api.get(f"/api/v1/discover/runs/{run['id']}", headers=auth(system, "viewer"))
    assert one.status_code == 200 and one.get_json()["matched"] == 3
    assert api.get("/api/v1/discover/runs/nope", headers=auth(system, "viewer")).status_code == 404

    page = system.client("analyst")
    html = page.get("/discover?lang=zh").get_data(as_text=True)
    assert "发现" in html and "盗版网站" in html and host in html
    evidence = run["matches"][0]["evidence_url"]
    assert evidence in html
    assert page.get(evidence).status_code == 200  # the evidence view of the match

    token = csrf(page, "/discover")
    gone = page.post(f"/discover/sites/{host}/delete", data={"csrf_token": token})
    assert gone.status_code == 302
    assert api.get("/api/v1/discover/sites", headers=auth(system, "viewer")).get_json() == {
        "sites": []
    }
    doc = json.loads(api.get("/api/v1/openapi.json").data)
    assert {"/api/v1/discover", "/api/v1/discover/runs", "/api/v1/discover/sites"} <= set(
        doc["paths"]
    )


@pytest.mark.slow
def test_legado_sources_imported_from_the_page_and_the_api(system: WebSystem) -> None:
    from legadokit import gbk_source, js_source, json_source

    api = system.app.test_client()
    body = [gbk_source("http://gbk-site.test"), json_source("http://api-site.test"), js_source()]
    refused = api.post("/api/v1/discover/sites/import", json=body,
                       headers=auth(system, "viewer"))  # fmt: skip
    assert refused.status_code == 403
    done = api.post("/api/v1/discover/sites/import", json=body,
                    headers=auth(system, "analyst"))  # fmt: skip
    assert done.status_code == 200, done.get_data(as_text=True)
    answer = done.get_json()
    assert answer["counts"] == {"imported": 2, "partial": 1, "refused": 0}
    js = next(s for s in answer["sources"] if s["name"] == "要脚本的站")
    assert any("needs JavaScript" in r for r in js["reasons"])
    bad = api.post("/api/v1/discover/sites/import", data=b"{not json",
                   content_type="application/json", headers=auth(system, "analyst"))  # fmt: skip
    assert bad.status_code == 400
    sites = api.get("/api/v1/discover/sites", headers=auth(system, "viewer")).get_json()["sites"]
    assert {s["note"] for s in sites if s["profile"] == "legado"} == {
        "GBK 笔趣阁", "JSON 小说 API", "要脚本的站"
    }  # fmt: skip
    host = next(s["url"] for s in sites if s["note"] == "GBK 笔趣阁").split("//")[1].strip("/")
    off = api.post(f"/api/v1/discover/sites/{host}/enable", json={"enabled": False},
                   headers=auth(system, "analyst"))  # fmt: skip
    assert off.status_code == 200 and off.get_json()["meta"]["health"]["disabled"] is True

    # The page: an upload of a user's file, the verdicts flashed, the sites listed.
    page = system.client("analyst")
    token = csrf(page, "/discover")
    upload = json.dumps([json_source("http://other-api.test", name="上传的源")]).encode()
    sent = page.post(
        "/discover/sites/import",
        data={"csrf_token": token, "file": (io.BytesIO(upload), "sources.json")},
        content_type="multipart/form-data",
    )
    assert sent.status_code == 302
    html = page.get("/discover?lang=zh").get_data(as_text=True)
    assert "阅读书源：1 个已导入，0 个部分导入，0 个被拒绝。" in html
    assert "上传的源" in html and "sources.json" in html and "阅读书源" in html
    assert "尚未搜索" in html and "已停用" in html
    assert "发现的链接数" not in html or "抓取的页面数" in html
    broken = page.post(
        "/discover/sites/import",
        data={"csrf_token": token, "file": (io.BytesIO(b"<html>"), "page.html")},
        content_type="multipart/form-data",
    )
    assert broken.status_code == 302
    assert "书源未导入：page.html" in page.get("/discover?lang=zh").get_data(as_text=True)


def test_site_registration_refuses_an_unknown_encoding(system: WebSystem) -> None:
    api = system.app.test_client()
    body = {"url": "http://a.test/", "search_url": "http://a.test/s?q={q}", "encoding": "klingon"}
    answer = api.post("/api/v1/discover/sites", json=body, headers=auth(system, "analyst"))
    assert answer.status_code == 400 and "klingon" in answer.get_json()["error"]
