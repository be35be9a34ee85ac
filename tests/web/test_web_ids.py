"""The one id rule on the web surfaces (issue 25): the API refuses a second spelling
of one id by name and the job reports it; the paste form keeps a 256-character id
whole and refuses a spoofing one."""

from __future__ import annotations

from typing import Any

from textgen import work
from webkit import WebSystem, csrf, job_id_of, wait_job, web_system

system = web_system()


def _auth(system: WebSystem) -> dict[str, str]:
    return {"Authorization": f"Bearer {system.tokens['analyst']}"}


def _post(system: WebSystem, documents: list[dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
    client = system.app.test_client()
    response = client.post("/api/v1/mothers", headers=_auth(system), json={"documents": documents})
    assert response.status_code == 202, response.get_json()
    body = response.get_json()
    return body, wait_job(client, body["job_id"], headers=_auth(system))


def test_api_refuses_7_and_string_7_naming_both(system: WebSystem) -> None:
    body, status = _post(
        system, [{"id": 7, "text": work(701, 5)}, {"id": "7", "text": work(702, 5)}]
    )
    assert body["documents"] == 1
    (error,) = body["errors"]
    assert error["source"] == "documents[1]"
    assert 'given as "7" at documents[1] and as 7 at documents[0]' in error["message"]
    assert status["state"] == "SUCCESS"
    assert status["result"]["ingested"] == 1
    skipped = status["result"]["skipped"]
    assert [s["source"] for s in skipped] == ["documents[1]"]
    assert "duplicate id '7'" in skipped[0]["message"]
    assert system.store.get_mother("7").text == work(701, 5)  # the first is kept


def test_api_refuses_col_and_spaced_col(system: WebSystem) -> None:
    body, status = _post(
        system, [{"id": "col", "text": work(703, 5)}, {"id": " col ", "text": work(704, 5)}]
    )
    assert body["documents"] == 1
    assert '" col "' in body["errors"][0]["message"] and '"col"' in body["errors"][0]["message"]
    assert status["result"]["ingested"] == 1 and len(status["result"]["skipped"]) == 1


def test_api_refuses_bidi_and_zero_width_ids(system: WebSystem) -> None:
    body, _status = _post(
        system,
        [
            {"id": "ok-id", "text": work(705, 5)},
            {"id": "txt\u202eexe", "text": work(706, 5)},
            {"id": "a\u200bb", "text": work(707, 5)},
            {"id": "two\nlines", "text": work(708, 5)},
        ],
    )
    assert body["documents"] == 1
    assert [e["source"] for e in body["errors"]] == ["documents[1]", "documents[2]", "documents[3]"]
    assert "U+202E" in body["errors"][0]["message"] and "U+200B" in body["errors"][1]["message"]


def test_paste_form_keeps_a_256_character_id_and_refuses_a_spoofing_one(
    system: WebSystem,
) -> None:
    client = system.client("analyst")
    long_id = "作" * 256
    response = client.post(
        "/library/upload",
        data={
            "csrf_token": csrf(client, "/library/upload"),
            "doc_id": long_id,
            "text": work(709, 5),
        },
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    assert wait_job(client, job_id_of(response))["result"]["ingested"] == 1
    assert system.store.get_mother(long_id).id == long_id  # not cut at 200
    response = client.post(
        "/library/upload",
        data={
            "csrf_token": csrf(client, "/library/upload"),
            "doc_id": "spoof\u202egnp.exe",
            "text": work(710, 5),
        },
    )
    assert response.status_code == 400
    assert "U+202E" in response.get_data(as_text=True)
