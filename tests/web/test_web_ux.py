"""What a new user meets in the web admin: job pages that keep what was skipped and
failed and say when the job is over (in the page's language, never a raw state), the
empty form, the 404 page's language toggle, raw Chinese in a query string.
(Phone widths are checked in a real browser: tests/e2e.)"""

from __future__ import annotations

import io
import json
import re
import socket
import threading
from typing import Any

import pytest
from textgen import work
from webkit import (
    WebSystem,
    check_text,
    csrf,
    ingest,
    job_id_of,
    wait_job,
    web_system,
)

system = web_system()

WORK = work(8801, 16)
STATES = ("PENDING", "STARTED", "PROGRESS", "RETRY", "SUCCESS", "FAILURE")


def _heading(page: str) -> str:
    found = re.search(r'<h1 id="job-heading">([^<]*)</h1>', page)
    assert found, page[:2000]
    return found.group(1)


def test_job_page_while_running_and_after(
    system: WebSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = system.client("analyst")
    # Each checked item takes a while: the page below is read while the job runs (2 s an
    # item leaves a loaded machine room; the rest goes fast once the variable is gone).
    monkeypatch.setenv("YINJI_TEST_ITEM_DELAY", "2")
    response = client.post(
        "/suspects/new",
        data={
            "csrf_token": csrf(client, "/suspects/new"),
            "files": [
                (io.BytesIO(("无关的文字。" * 30).encode()), f"page-{i}.txt") for i in range(4)
            ]
            + [(io.BytesIO(b"%PDF-1.4"), "real.pdf")],
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 302
    job = job_id_of(response)
    page = client.get(f"/jobs/{job}").get_data(as_text=True)
    assert _heading(page) == "正在检测疑似页面"
    # Every state's name in the page's language, for the script that polls.
    for state in STATES:
        assert f'data-label-{state.lower()}="' in page
    assert 'data-label-progress="进行中"' in page
    # The badge reads the state in Chinese, never the raw state.
    badge = re.search(r'id="job-state">([^<]*)<', page).group(1)
    assert badge in ("排队中", "进行中", "重试中") and not any(s in page for s in STATES)
    monkeypatch.delenv("YINJI_TEST_ITEM_DELAY")
    status = wait_job(client, job)
    assert status["state"] == "SUCCESS"
    page = client.get(f"/jobs/{job}").get_data(as_text=True)
    assert _heading(page) == "检测完成"
    assert re.search(r'id="job-state">已完成<', page)
    # What was skipped stays on the page after the reload, and in the API's answer.
    assert "real.pdf" in page and "不支持的文件类型" in page
    assert [s["source"] for s in status["result"]["skipped"]] == ["real.pdf"]
    english = client.get(f"/jobs/{job}?lang=en").get_data(as_text=True)
    assert _heading(english) == "Check finished" and "Skipped (1)" in english


def test_import_job_heading_and_lists(system: WebSystem) -> None:
    client = system.client("analyst")
    response = client.post(
        "/library/upload",
        data={
            "csrf_token": csrf(client, "/library/upload"),
            "files": [
                (io.BytesIO(WORK.encode("gb18030")), "gbk.txt"),
                (io.BytesIO(b"%PDF-1.4"), "real.pdf"),
                (io.BytesIO(b'{"id": 1, "text": NaN}\n'), "bad.jsonl"),
            ],
        },
        content_type="multipart/form-data",
    )
    status = wait_job(client, job_id_of(response))
    result = status["result"]
    assert result["ingested"] == 1
    assert [s["source"] for s in result["skipped"]] == ["real.pdf"]
    assert [e["source"].split(":")[0] for e in result["errors"]] == ["bad.jsonl"]
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert _heading(page) == "导入完成"
    assert "导入 1 部作品" in page and "real.pdf" in page and "bad.jsonl" in page
    assert "失败（1）" in page and "已跳过（1）" in page


def test_empty_check_form_says_nothing_was_given(system: WebSystem) -> None:
    client = system.client("analyst")
    response = client.post(
        "/suspects/new",
        data={
            "csrf_token": csrf(client, "/suspects/new"),
            "urls": "",
            "text": "",
            "files": (io.BytesIO(b""), ""),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert "没有可检测的内容：请输入网址、粘贴文本或选择文件" in page
    assert "empty file" not in page and "upload:" not in page


def test_404_page_has_a_language_toggle(system: WebSystem) -> None:
    client = system.client("viewer")
    response = client.get("/no/such/page?x=1")
    assert response.status_code == 404
    page = response.get_data(as_text=True)
    assert '<a href="/no/such/page?x=1&amp;lang=en" hreflang="en"' in page
    english = client.get("/no/such/page?x=1&lang=en")
    assert english.status_code == 404 and "Not found." in english.get_data(as_text=True)
    assert 'hreflang="zh"' in english.get_data(as_text=True)
    # Signed out too; and a path that looks like another site stays on this one.
    anonymous = system.client().get("//evil.example/x").get_data(as_text=True)
    links = re.findall(r'<a href="([^"]*)" hreflang=', anonymous)
    assert links and all(link.startswith("/") and not link.startswith("//") for link in links)


def _raw_get(port: int, target: str, token: str) -> str:
    """A GET whose request line carries raw UTF-8 (as curl sends ``?q=旧书店``)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(
            f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return data.decode("utf-8", "replace")


def test_raw_chinese_in_a_query_string_finds_matches(system: WebSystem) -> None:
    from web.cli import make_http_server

    client = system.client("analyst")
    ingest(client, [{"id": "bookshop", "title": "旧书店的猫", "text": WORK}])
    check_text(
        client, "转载：" + WORK[30:600], title="旧书店 第一章", url="http://pirate.example/1"
    )
    server = make_http_server(system.app, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        token = system.tokens["viewer"]
        raw = _raw_get(server.server_port, "/api/v1/matches?q=旧书店&passages=0", token)
        encoded = _raw_get(
            server.server_port, "/api/v1/matches?q=%E6%97%A7%E4%B9%A6%E5%BA%97&passages=0", token
        )
        works = _raw_get(server.server_port, "/api/v1/mothers?q=旧书店", token)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    body: dict[str, Any] = json.loads(raw.split("\r\n\r\n", 1)[1])
    assert body["total"] >= 1 and body["matches"][0]["mother_id"] == "bookshop"
    assert raw.split("\r\n\r\n", 1)[1] == encoded.split("\r\n\r\n", 1)[1]
    assert '"bookshop"' in works
