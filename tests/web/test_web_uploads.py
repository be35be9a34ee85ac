"""Hostile and large input through the web form and the REST API: one bad file or JSON
item never gives a 500 or loses the good files of the request, uploads go to the data
folder and only their references travel in task messages, JSON bodies are read with a
depth guard, and a bad item of a batch is that item's error.

The hostile inputs are made here by the tests (nothing is stored in the repository).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textgen import work
from webkit import WebSystem, csrf, job_id_of, wait_job, web_system

from workers.app import get_celery

system = web_system()


def auth(system: WebSystem, role: str = "analyst") -> dict[str, str]:
    return {"Authorization": f"Bearer {system.tokens[role]}"}


def uploads_dir(system: WebSystem) -> Path:
    return system.settings.data_dir / "uploads"


def spooled(system: WebSystem) -> list[str]:
    folder = uploads_dir(system)
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


# --- the hostile corpus ------------------------------------------------------------------------
def deep_jsonl_line(depth: int) -> bytes:
    """A .jsonl line whose metadata is nested ``depth`` levels (RecursionError bait)."""
    return b'{"id": "deep", "text": "x", "m": ' + b"[" * depth + b"]" * depth + b"}\n"


def hostile_files() -> list[tuple[bytes, str]]:
    return [
        (deep_jsonl_line(100_000), "deep.jsonl"),
        (b'{"id": "big", "text": "abc", "n": ' + b"9" * 5000 + b"}\n", "bigint.jsonl"),
        (b"\x00\x01binary", "nul.txt"),
        (b"PK\x03\x04 not really a zip", "broken.zip"),
        (b"<html>\xff\xfe\x00</html>", "odd.html"),
    ]


@pytest.fixture()
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """Every task message the app sends: ``{"name", "args", "kwargs", "bytes"}``."""
    app = get_celery()
    messages: list[dict[str, Any]] = []
    original = app.send_task

    def send_task(name: str, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        size = len(json.dumps([args, kwargs], ensure_ascii=False).encode("utf-8"))
        messages.append({"name": name, "args": args, "kwargs": kwargs, "bytes": size})
        return original(name, args=args, kwargs=kwargs, **options)

    monkeypatch.setattr(app, "send_task", send_task)
    yield messages


# --- one hostile file never sinks the others -------------------------------------------------
def test_api_multipart_hostile_files_keep_the_good_ones(system: WebSystem) -> None:
    client = system.app.test_client()
    good = work(7001, 6)
    files = [(io.BytesIO(data), name) for data, name in hostile_files()]
    files.insert(2, (io.BytesIO(good.encode()), "good-api.txt"))
    response = client.post(
        "/api/v1/mothers",
        headers=auth(system),
        content_type="multipart/form-data",
        data={"files": files},
    )
    assert response.status_code == 202, response.get_data(as_text=True)[:300]
    status = wait_job(client, response.get_json()["job_id"], headers=auth(system))
    assert status["state"] == "SUCCESS", status
    result = status["result"]
    assert result["ingested"] == 1
    assert system.store.get_mother("good-api").text == good
    failed = {e["source"].split(":")[0] for e in result["errors"]}
    assert {"deep.jsonl", "bigint.jsonl", "nul.txt", "broken.zip"} <= failed
    # The same through GET /api/v1/jobs/{id}, and nothing left in the upload folder.
    again = client.get(f"/api/v1/jobs/{status['id']}", headers=auth(system)).get_json()
    assert again["result"]["errors"] == result["errors"]
    assert spooled(system) == []


def test_web_upload_hostile_files_keep_the_good_ones(system: WebSystem) -> None:
    client = system.client("analyst")
    good = work(7002, 6)
    files = [(io.BytesIO(data), name) for data, name in hostile_files()]
    files.append((io.BytesIO(good.encode()), "good-web.txt"))
    files.append((io.BytesIO(b"%PDF-1.4 not text"), "real.pdf"))
    response = client.post(
        "/library/upload",
        data={"csrf_token": csrf(client, "/library/upload"), "files": files},
        content_type="multipart/form-data",
    )
    assert response.status_code == 302
    status = wait_job(client, job_id_of(response))
    assert status["state"] == "SUCCESS"
    assert status["result"]["ingested"] == 1
    assert system.store.get_mother("good-web").text == good
    assert [s["source"] for s in status["result"]["skipped"]] == ["real.pdf"]
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "real.pdf" in page and "deep.jsonl" in page and "不支持的文件类型" in page


def test_suspect_files_with_hostile_ones_are_checked(system: WebSystem) -> None:
    client = system.client("analyst")
    response = client.post(
        "/suspects/new",
        data={
            "csrf_token": csrf(client, "/suspects/new"),
            "files": [
                (io.BytesIO(deep_jsonl_line(100_000)), "deep.jsonl"),
                (io.BytesIO(("与作品库无关的一段话。" * 20).encode()), "plain.txt"),
                (io.BytesIO(b"%PDF-1.4"), "real.pdf"),
            ],
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 302
    status = wait_job(client, job_id_of(response))
    result = status["result"]
    assert status["state"] == "SUCCESS"
    assert [r["suspect_id"] for r in result["results"]] == ["plain"]
    assert [e["source"].split(":")[0] for e in result["errors"]] == ["deep.jsonl"]
    assert [s["source"] for s in result["skipped"]] == ["real.pdf"]
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "deep.jsonl" in page and "real.pdf" in page


# --- JSON bodies ---------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/api/v1/mothers", "/api/v1/checks"])
@pytest.mark.parametrize("depth", [900, 100_000])
def test_deeply_nested_json_body_is_400(system: WebSystem, path: str, depth: int) -> None:
    client = system.app.test_client()
    key = "documents" if path.endswith("mothers") else "texts"
    for body in ("[" * depth + "]" * depth, f'{{"{key}": ' + "[" * depth + "]" * depth + "}"):
        response = client.post(
            path, data=body, content_type="application/json", headers=auth(system)
        )
        assert response.status_code == 400, (path, depth, response.status_code)
        error = response.get_json()["error"]
        assert "nested" in error or "send an object" in error, error


def test_one_hostile_json_item_is_that_items_error(system: WebSystem) -> None:
    client = system.app.test_client()
    good = work(7003, 5)
    body = (
        '{"documents": ['
        + json.dumps({"id": "json-good", "title": "好", "text": good}, ensure_ascii=False)
        + ', {"id": "json-deep", "text": "x", "m": '
        + "[" * 500
        + "]" * 500
        + '}, {"id": "json-big", "text": "x", "n": '
        + "7" * 5000
        + '}, {"id": "json-nan", "text": "x", "v": NaN}'
        + ', {"id": "json-inf", "text": "x", "v": 1e999}'
        + ', {"id": "   ", "text": "blank id"}]}'
    )
    response = client.post(
        "/api/v1/mothers", data=body, content_type="application/json", headers=auth(system)
    )
    assert response.status_code == 202, response.get_data(as_text=True)[:300]
    answer = response.get_json()
    assert answer["documents"] == 1
    problems = {e["source"]: e["message"] for e in answer["errors"]}
    assert set(problems) == {f"documents[{i}]" for i in range(1, 6)}
    assert "nested deeper than" in problems["documents[1]"]
    assert "64-bit" in problems["documents[2]"]
    assert "NaN" in problems["documents[3]"] and "Infinity" in problems["documents[4]"]
    assert "blank" in problems["documents[5]"]
    status = wait_job(client, answer["job_id"], headers=auth(system))
    assert status["result"]["ingested"] == 1
    assert {s["source"] for s in status["result"]["skipped"]} == set(problems)
    # The library answers strict JSON (no NaN crept in).
    listing = client.get("/api/v1/mothers?q=json-", headers=auth(system))
    json.loads(listing.get_data(as_text=True), parse_constant=lambda c: 1 / 0)
    assert [m["id"] for m in listing.get_json()["mothers"]] == ["json-good"]


def test_a_blank_id_does_not_reject_the_whole_check_batch(system: WebSystem) -> None:
    client = system.app.test_client()
    text = "另一段与作品库无关的文字。" * 10
    response = client.post(
        "/api/v1/checks",
        headers=auth(system),
        json={
            "texts": [{"id": " ", "text": text}, {"id": "ok-1", "text": text}, {"title": "x"}],
            "urls": ["http://pirate.example/1", "ftp://nope.example/"],
        },
    )
    assert response.status_code == 202, response.get_json()
    answer = response.get_json()
    assert answer["texts"] == 1 and answer["urls"] == 1
    assert [e["source"] for e in answer["errors"]] == ["texts[0]", "texts[2]", "urls[1]"]
    assert "blank" in answer["errors"][0]["message"]
    status = wait_job(client, answer["job_id"], headers=auth(system), timeout=120)
    result = status["result"]
    assert "ok-1" in [r["suspect_id"] for r in result["results"]]
    assert [s["source"] for s in result["skipped"] if "url" not in s][:3] == [
        "texts[0]",
        "texts[2]",
        "urls[1]",
    ]


# --- uploads go to the data folder, references go in messages --------------------------------
def test_big_upload_travels_as_a_reference(system: WebSystem, sent: list[dict[str, Any]]) -> None:
    client = system.client("analyst")
    big = work(7004, 60)
    body = (big * (3_000_000 // len(big.encode()) + 1)).encode()  # over 3 MB
    response = client.post(
        "/library/upload",
        data={
            "csrf_token": csrf(client, "/library/upload"),
            "files": (io.BytesIO(body), "big.txt"),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 302
    job_id = job_id_of(response)
    assert [m["name"] for m in sent] == ["yinji.ingest.ingest_uploads"]
    assert sent[0]["bytes"] < 1000, sent[0]
    ref = sent[0]["args"][0][0]
    assert ref["size"] == len(body) and ref["name"] == "big.txt" and len(ref["sha256"]) == 64
    status = wait_job(client, job_id, timeout=300)
    assert status["state"] == "SUCCESS" and status["result"]["ingested"] == 1
    assert system.store.get_mother("big").chars == len(body.decode())
    assert spooled(system) == []  # the worker deleted the upload after the job


def test_big_json_items_are_spooled_too(system: WebSystem, sent: list[dict[str, Any]]) -> None:
    client = system.app.test_client()
    text = work(7005, 40) * 120  # well over the inline limit of a message
    response = client.post(
        "/api/v1/checks", headers=auth(system), json={"texts": [{"id": "spooled-1", "text": text}]}
    )
    assert response.status_code == 202
    assert [m["name"] for m in sent] == ["yinji.check.check_uploads"]
    assert sent[0]["bytes"] < 1000
    status = wait_job(client, response.get_json()["job_id"], headers=auth(system), timeout=300)
    assert [r["suspect_id"] for r in status["result"]["results"]] == ["spooled-1"]
    assert system.store.get_suspect("spooled-1").text == text
    assert spooled(system) == []


def test_refused_request_leaves_no_upload(system: WebSystem) -> None:
    client = system.client("analyst")
    response = client.post(
        "/library/upload",
        data={"csrf_token": "wrong", "files": (io.BytesIO(b"some text"), "a.txt")},
        content_type="multipart/form-data",
    )
    assert response.status_code == 400
    response = client.post(
        "/library/upload",
        data={
            "csrf_token": csrf(client, "/library/upload"),
            "files": (io.BytesIO(b"%PDF"), "only.pdf"),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 400 and "only.pdf" in response.get_data(as_text=True)
    assert spooled(system) == []


def test_zip_expanding_far_beyond_its_size_is_a_per_file_error(system: WebSystem) -> None:
    """0.23 MB of zip, 200 members of 1 MiB: used to break the broker connection (500)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for i in range(200):
            zf.writestr(f"m{i:03}.txt", b"a" * (1024 * 1024))
    assert len(buf.getvalue()) < 300_000
    client = system.client("analyst")
    good = work(7006, 5)
    response = client.post(
        "/library/upload",
        data={
            "csrf_token": csrf(client, "/library/upload"),
            "files": [
                (io.BytesIO(buf.getvalue()), "expands.zip"),
                (io.BytesIO(good.encode()), "fine.txt"),
            ],
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 302
    status = wait_job(client, job_id_of(response), timeout=300)
    assert status["state"] == "SUCCESS", status
    result = status["result"]
    assert system.store.get_mother("fine").text == good
    assert result["ingested"] == 1
    assert result["errors"] and all(e["source"].startswith("expands.zip") for e in result["errors"])
    assert system.store.count_mothers(search="m00") == 0
