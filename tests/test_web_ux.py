"""What a new user meets in the web admin: job pages that keep what was skipped and
failed and say when the job is over (in the page's language, never a raw state), the
empty form."""

from __future__ import annotations

import io
import re

import pytest
from test_web_helpers import (
    WebSystem,
    csrf,
    job_id_of,
    wait_job,
    web_system,
)
from textgen import work

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
    monkeypatch.setenv("YINJI_TEST_ITEM_DELAY", "0.5")  # each checked item takes a while
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
