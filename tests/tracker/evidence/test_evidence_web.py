"""Issue #15 from the web app and the REST API: a URL submitted in the suspects form or
to ``POST /api/v1/checks``, and a file uploaded in the form, are checked by the real
in-process worker, recorded in the evidence log through the same ``Library`` calls as
the CLI, and their evidence bundles download from ``/exports/reports/<id>.zip`` and
``/api/v1/reports/<id>.zip`` and verify."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator

import pytest
from webkit import WebSystem, csrf, ingest, job_id_of, wait_job, web_system
from workerkit import MOTHER, Site, _copy, page

from tracker.evidence import EvidenceLog, verify_bundle
from tracker.records import match_id
from web.ids import encode_id

pytestmark = pytest.mark.slow

system = web_system(allow_private_urls=True)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    s = Site(
        {
            "/form.html": page("第一章 转载", _copy("表单提交")),
            "/api.html": page("第二章 转载", _copy("接口提交")),
        }
    ).start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def works(system: WebSystem) -> None:
    ingest(system.client("analyst"), [{"id": "mother-1", "title": "茶山的故事", "text": MOTHER}])


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_url_submitted_in_the_form_has_a_bundle(system: WebSystem, site: Site, works: None) -> None:
    client = system.client("analyst")
    url = site.url("/form.html")
    response = client.post(
        "/suspects/new", data={"csrf_token": csrf(client, "/suspects/new"), "urls": url}
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:300]
    status = wait_job(client, job_id_of(response))
    assert status["state"] == "SUCCESS", status
    [item] = status["result"]["results"]
    assert [m["mother_id"] for m in item["matches"]] == ["mother-1"]
    mid = encode_id(match_id(item["suspect_id"], "mother-1"))

    bundle = client.get(f"/exports/reports/{mid}.zip")
    assert bundle.status_code == 200, bundle.get_data(as_text=True)[:300]
    assert verify_bundle(io.BytesIO(bundle.data)).ok
    files = _members(bundle.data)
    served = site.pages["/form.html"].encode("utf-8")
    [body] = [n for n in files if n.startswith("capture/") and "/body" in n]
    assert files[body] == served  # the page exactly as served
    manifest = json.loads(files["manifest.json"])
    assert [r["kind"] for r in manifest["records"]][:2] == ["capture", "check"]


def test_url_submitted_to_the_api_has_a_bundle(system: WebSystem, site: Site, works: None) -> None:
    headers = {"Authorization": f"Bearer {system.tokens['analyst']}"}
    api = system.app.test_client()
    url = site.url("/api.html")
    accepted = api.post("/api/v1/checks", json={"urls": [url]}, headers=headers)
    assert accepted.status_code == 202, accepted.get_json()
    status = wait_job(api, accepted.get_json()["job_id"], headers=headers)
    [item] = status["result"]["results"]
    mid = encode_id(match_id(item["suspect_id"], "mother-1"))
    bundle = api.get(f"/api/v1/reports/{mid}.zip", headers=headers)
    assert bundle.status_code == 200 and verify_bundle(io.BytesIO(bundle.data)).ok
    with EvidenceLog.from_settings(system.settings) as log:
        [capture] = log.entries(suspect_id=item["suspect_id"], kinds=["capture"])
    assert capture.payload["final_url"] == url


def test_uploaded_file_is_a_submission(system: WebSystem, works: None) -> None:
    client = system.client("analyst")
    text = _copy("上传文件")
    response = client.post(
        "/suspects/new",
        data={
            "csrf_token": csrf(client, "/suspects/new"),
            "files": (io.BytesIO(text.encode("utf-8")), "pirate-copy.txt"),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:300]
    status = wait_job(client, job_id_of(response))
    [item] = status["result"]["results"]
    sid = item["suspect_id"]
    with EvidenceLog.from_settings(system.settings) as log:
        found = log.entries(suspect_id=sid)
    assert [e.kind for e in found] == ["submission", "check"]
    assert found[0].payload["source"] == "file:pirate-copy.txt"
    checked = system.store.get_suspect(sid).text
    assert found[0].payload["text"]["sha256"] == hashlib.sha256(checked.encode()).hexdigest()
    bundle = client.get(f"/exports/reports/{encode_id(match_id(sid, 'mother-1'))}.zip")
    assert bundle.status_code == 200 and verify_bundle(io.BytesIO(bundle.data)).ok
    assert any(n.startswith("submission/") for n in _members(bundle.data))
