"""The watch list and the monitored books in the web admin (/watch) and the REST API
(/api/v1/watch, /api/v1/watch/books): adding a pirate book crawls it at once (a job), files
its case, and the page says when the next daily crawl runs and that `yinji beat` runs it."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from casekit import PageServer, html
from textgen import work
from webkit import NO_CRAWL_PAUSE, WebSystem, csrf, ingest, job_id_of, wait_job, web_system

system = web_system(allow_private_urls=True, env=NO_CRAWL_PAUSE)
CH = {n: work(800 + n, 30) for n in (1, 2, 3)}


@pytest.fixture(scope="module")
def book_site() -> Iterator[PageServer]:
    with PageServer() as server:
        links = "".join(f"<a href='/b/{n}.html'>第{n}章</a>" for n in (3, 1, 2))
        server.pages["/b/index.html"] = (200, html("书", "目录", extra=links), "text/html")
        for n, text in CH.items():
            server.pages[f"/b/{n}.html"] = (200, html(f"第{n}章", text), "text/html")
        yield server


def _auth(system: WebSystem, role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {system.tokens[role]}"}


@pytest.mark.slow
def test_watch_page_and_api(system: WebSystem, book_site: PageServer) -> None:
    analyst = system.client("analyst")
    ingest(analyst, [{"id": f"wb-{n}", "title": f"第{n}章", "text": t} for n, t in CH.items()])
    # The upload's job page is highlighted as 作品库 in the navigation, not 疑似.
    body = json.dumps({"id": "wb-x", "title": "x", "text": work(990, 5)}, ensure_ascii=False)
    upload = analyst.post(
        "/library/upload",
        data={
            "csrf_token": csrf(analyst, "/library/upload"),
            "files": (io.BytesIO(body.encode()), "works.jsonl"),
        },
        content_type="multipart/form-data",
    )
    job_page = analyst.get(upload.headers["Location"] + "&lang=zh").get_data(as_text=True)
    active = re.findall(r'<a href="([^"]*)" class="active">', job_page)
    assert active == ["/library/"], active
    page = analyst.get("/watch?lang=zh").get_data(as_text=True)
    assert 'id="watch-add"' in page and "下次抓取" in page and "yinji beat" in page
    index = book_site.url("/b/index.html")
    added = analyst.post(
        "/watch", data={"csrf_token": csrf(analyst, "/watch"), "url": index, "kind": "book"}
    )
    assert added.status_code == 302
    status = wait_job(analyst, job_id_of(added))
    assert status["state"] == "SUCCESS", status
    books = system.client().get("/api/v1/watch/books", headers=_auth(system, "viewer")).get_json()
    (book,) = books["books"]
    assert book["index_url"] == index and book["watched"] is True
    assert [ch["url"] for ch in book["chapters"]] == [
        book_site.url(f"/b/{n}.html") for n in (1, 2, 3)
    ]
    assert [ch["matches"] for ch in book["chapters"]] == [1, 1, 1]
    listed = system.client().get("/api/v1/watch", headers=_auth(system, "viewer")).get_json()
    (item,) = listed["items"]
    assert (item["kind"], item["case_id"]) == ("book", book["case_id"])
    assert listed["next_crawl_at"].endswith("Z")
    page = analyst.get("/watch?lang=zh").get_data(as_text=True)
    assert book["case_id"] in page or "第1章" in page
    assert 'id="books"' in page

    # The API: a viewer may not add; an analyst adds a page (202 + job) and removes it.
    api = system.client()
    one = book_site.url("/b/1.html")
    refused = api.post("/api/v1/watch", json={"url": one}, headers=_auth(system, "viewer"))
    assert refused.status_code == 403
    bad = api.post(
        "/api/v1/watch", json={"url": one, "kind": "x"}, headers=_auth(system, "analyst")
    )
    assert bad.status_code == 400 and "kind must be one of" in bad.get_json()["error"]
    accepted = api.post("/api/v1/watch", json={"url": one}, headers=_auth(system, "analyst"))
    assert accepted.status_code == 202
    done: dict[str, Any] = wait_job(
        api, accepted.get_json()["job_id"], headers=_auth(system, "analyst")
    )
    assert done["state"] == "SUCCESS", done
    gone = api.delete("/api/v1/watch", query_string={"url": one}, headers=_auth(system, "analyst"))
    assert gone.status_code == 204
    again = api.delete("/api/v1/watch", query_string={"url": one}, headers=_auth(system, "analyst"))
    assert again.status_code == 404
    spec = api.get("/api/v1/openapi.json").get_json()
    assert {"/api/v1/watch", "/api/v1/watch/books"} <= set(spec["paths"])
