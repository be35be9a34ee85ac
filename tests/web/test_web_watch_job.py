"""Issue 37: a pirate book added to the watch list in the web admin. Its job page counts
the chapters it checked and the matches it found (it said "0 suspects checked, 0
matches found" while it had fetched every page and found the copies), and the watch
list says when it was crawled (it said "not yet")."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from casekit import PageServer, html
from textgen import work
from webkit import NO_CRAWL_PAUSE, csrf, ingest, job_id_of, wait_job, web_system

system = web_system(allow_private_urls=True, env=NO_CRAWL_PAUSE)
CH = {n: work(900 + n, 30) for n in (1, 2, 3)}


@pytest.fixture(scope="module")
def book_site() -> Iterator[PageServer]:
    with PageServer() as server:
        links = "".join(f"<a href='/b/{n}.html'>第{n}章</a>" for n in (1, 2, 3, 4))
        server.pages["/b/index.html"] = (200, html("书", "目录", extra=links), "text/html")
        for n, text in CH.items():
            server.pages[f"/b/{n}.html"] = (200, html(f"第{n}章", text), "text/html")
        # a fourth chapter the site does not serve: an error of the job, not a row
        yield server


def test_watched_book_job_counts_its_chapters_and_the_list_says_when(system, book_site) -> None:  # type: ignore[no-untyped-def]
    analyst = system.client("analyst")
    ingest(analyst, [{"id": f"wj-{n}", "title": f"第{n}章", "text": t} for n, t in CH.items()])
    index = book_site.url("/b/index.html")
    before = analyst.get("/watch?lang=en").get_data(as_text=True)
    assert index not in before
    added = analyst.post(
        "/watch", data={"csrf_token": csrf(analyst, "/watch"), "url": index, "kind": "book"}
    )
    job_id = job_id_of(added)
    status = wait_job(analyst, job_id)
    assert status["state"] == "SUCCESS", status
    result = status["result"]
    assert [r["url"] for r in result["results"]] == [book_site.url(f"/b/{n}.html") for n in CH]
    assert all(len(r["matches"]) == 1 for r in result["results"])
    assert result["pages"] == 5  # the index, three chapters, the missing fourth
    assert result["matched_chapters"] == 3 and result["case_id"]  # the book report kept
    assert [e["source"] for e in result["errors"]] == [book_site.url("/b/4.html")]

    page = analyst.get(f"/jobs/{job_id}?kind=watch&lang=en").get_data(as_text=True)
    summary = re.search(r'<p id="job-summary">([^<]*)</p>', page)
    assert summary is not None and summary.group(1).strip() == (
        "3 suspects checked, 3 matches found."
    ), page

    listed = analyst.get("/api/v1/watch").get_json()
    (item,) = [i for i in listed["items"] if i["url"] == index]
    assert item["last_crawled_at"] is not None
    watch_page = analyst.get("/watch?lang=en").get_data(as_text=True)
    row = watch_page[watch_page.index(index) :].split("</tr>", 1)[0]
    assert "not yet" not in row, row
