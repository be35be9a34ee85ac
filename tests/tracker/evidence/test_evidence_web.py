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
from webkit import NO_CRAWL_PAUSE, WebSystem, csrf, ingest, job_id_of, wait_job, web_system
from workerkit import MOTHER, Site, _copy, page

from tracker.common.records import match_id
from tracker.evidence import EvidenceLog, verify_bundle
from web.ids import encode_id

pytestmark = pytest.mark.slow

system = web_system(allow_private_urls=True, env=NO_CRAWL_PAUSE)


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    s = Site(
        {
            "/form.html": page("第一章 转载", _copy("表单提交")),
            "/api.html": page("第二章 转载", _copy("接口提交")),
            "/reads.html": page("第三章 转载", _copy("只读下载")),
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


def test_reads_never_write_and_the_key_is_published(
    system: WebSystem, site: Site, works: None
) -> None:
    """Issue #24: three downloads of a bundle, PATCH {} and repeating a verdict leave the
    log's size unchanged; the key, head and consistency proofs are public and agree
    with the log (and pin the bundle the web app hands out)."""
    from tracker.evidence.merkle import verify_consistency

    headers = {"Authorization": f"Bearer {system.tokens['analyst']}"}
    api = system.app.test_client()
    accepted = api.post("/api/v1/checks", json={"urls": [site.url("/reads.html")]}, headers=headers)
    assert accepted.status_code == 202, accepted.get_json()
    status = wait_job(api, accepted.get_json()["job_id"], headers=headers)
    [item] = status["result"]["results"]
    mid = encode_id(match_id(item["suspect_id"], "mother-1"))
    patch = api.patch(f"/api/v1/matches/{mid}", json={"verdict": "confirmed"}, headers=headers)
    assert patch.status_code == 200, patch.get_json()

    def size() -> int:
        with EvidenceLog.from_settings(system.settings) as log:
            return log.size

    before = size()
    client = system.client("viewer")
    downloads = [client.get(f"/exports/reports/{mid}.zip") for _ in range(3)]
    assert [d.status_code for d in downloads] == [200, 200, 200]
    api_zip = api.get(f"/api/v1/reports/{mid}.zip", headers=headers)
    assert api_zip.status_code == 200
    assert size() == before
    assert api.patch(f"/api/v1/matches/{mid}", json={}, headers=headers).status_code == 200
    again = api.patch(f"/api/v1/matches/{mid}", json={"verdict": "confirmed"}, headers=headers)
    assert again.status_code == 200
    assert size() == before
    # a verdict that changes something is recorded
    changed = api.patch(f"/api/v1/matches/{mid}", json={"note": "整章复制"}, headers=headers)
    assert changed.status_code == 200 and size() == before + 1

    anonymous = system.app.test_client()
    head = anonymous.get("/api/v1/evidence/head")
    assert head.status_code == 200, head.get_data(as_text=True)[:300]
    published = head.get_json()
    with EvidenceLog.from_settings(system.settings) as log:
        assert published["fingerprint"] == log.key_id
        stored = {r.head.size: r.head.root_hash.hex() for r in log.heads()}
    assert stored[published["tree_head"]["size"]] == published["tree_head"]["root_hash"]
    from tracker.evidence.keys import format_fingerprint

    view = client.get(f"/matches/{mid}").get_data(as_text=True)
    assert format_fingerprint(published["fingerprint"]) in view  # where people work
    key = anonymous.get("/api/v1/evidence/key.pem")
    assert key.status_code == 200 and key.data.startswith(b"-----BEGIN PUBLIC KEY-----")
    for data in [d.data for d in downloads] + [api_zip.data]:
        pinned = verify_bundle(io.BytesIO(data), public_key=key.data)
        assert pinned.trusted, pinned.summary()
        stranger = verify_bundle(io.BytesIO(data), fingerprint="ab" * 32)
        assert not stranger.trusted and "key" in stranger.failed()
    sizes = sorted(stored)
    proof = anonymous.get(f"/api/v1/evidence/consistency?first={sizes[0]}&second={sizes[-1]}")
    assert proof.status_code == 200, proof.get_json()
    body = proof.get_json()
    assert verify_consistency(
        sizes[0],
        sizes[-1],
        bytes.fromhex(stored[sizes[0]]),
        bytes.fromhex(stored[sizes[-1]]),
        [bytes.fromhex(h) for h in body["proof"]],
    )
    bad = anonymous.get(f"/api/v1/evidence/consistency?first={sizes[-1] + 5}")
    assert bad.status_code == 400 and "first <= second" in bad.get_json()["error"]
