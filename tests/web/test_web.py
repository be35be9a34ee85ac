"""The web app's pages with the Flask test client: sign-in, roles, every page, the
upload and check flows through real jobs, the dashboard's filters, verdicts, exports.

Security-specific cases (CSRF, XSS, headers, hostile uploads) are in
test_web_security.py, the REST API in test_web_api.py.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from typing import Any

import pytest
from textgen import work
from webkit import (
    PASSWORD,
    ROLE_USERS,
    WebSystem,
    check_text,
    csrf,
    ingest,
    job_id_of,
    login,
    wait_job,
    web_system,
)

from web.ids import encode_id

system = web_system()

MOTHER_A = work(101, 18)
MOTHER_B = work(202, 18)


@pytest.fixture(scope="module")
def seeded(system: WebSystem) -> dict[str, Any]:
    """Two works and two suspect pages that copy them, checked through real jobs."""
    client = system.client("analyst")
    ingest(
        client,
        [
            {"id": "work-a", "title": "甲作品 Work A", "text": MOTHER_A},
            {"id": "work-b", "title": "乙作品 Work B", "text": MOTHER_B},
        ],
    )
    a = check_text(
        client,
        "盗版网站广告。" + MOTHER_A[40:520] + "请收藏本站。",
        title="盗版页面一",
        url="http://www.pirate-one.example/book/1.html",
    )
    b = check_text(
        client, MOTHER_B[:450], title="盗版页面二", url="https://m.pirate-two.example/ch/2"
    )
    sid_a = a["result"]["results"][0]["suspect_id"]
    sid_b = b["result"]["results"][0]["suspect_id"]
    return {
        "suspect_a": sid_a,
        "suspect_b": sid_b,
        "match_a": f"{sid_a}\x1fwork-a",
        "match_b": f"{sid_b}\x1fwork-b",
    }


# --- sign-in ---------------------------------------------------------------------------
def test_login_page_and_healthz_need_no_sign_in(system: WebSystem) -> None:
    client = system.client()
    assert client.get("/login").status_code == 200
    health = client.get("/healthz")
    assert health.status_code == 200
    assert health.get_json()["status"] == "ok"


def test_pages_redirect_to_login_when_signed_out(system: WebSystem) -> None:
    client = system.client()
    response = client.get("/matches?verdict=pending")
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/login?next=")
    assert "verdict" in response.headers["Location"]


def test_every_route_requires_sign_in(system: WebSystem) -> None:
    """Walk the URL map: only the login page, /healthz, static files, the OpenAPI
    document (it holds no data) and the evidence log's published key are public."""
    client = system.client()
    public = {"auth.login", "health.healthz", "static", "api.openapi"}
    # the evidence log's key, head and consistency proofs are published (issue #24)
    public |= {"api.evidence_head", "api.evidence_key", "api.evidence_consistency"}
    checked = 0
    for rule in system.app.url_map.iter_rules():
        if rule.endpoint in public:
            continue
        values = {arg: "x" for arg in rule.arguments}
        for arg, conv in rule._converters.items():
            if type(conv).__name__ == "IdConverter":
                values[arg] = encode_id("x")
        if "fmt" in values:
            values["fmt"] = "pdf"
        path = rule.build(values)[1]
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            response = client.open(path, method=method)
            if rule.rule.startswith("/api/"):
                assert response.status_code == 401, (method, path)
                assert "error" in response.get_json()
            else:
                assert response.status_code in (302, 400), (method, path, response.status_code)
                if response.status_code == 302:
                    assert "/login" in response.headers["Location"]
            checked += 1
    assert checked > 30


def test_wrong_password_is_refused(system: WebSystem) -> None:
    client = system.client()
    token = csrf(client)
    response = client.post(
        "/login", data={"username": "alice", "password": "nope", "csrf_token": token}
    )
    assert response.status_code == 401
    assert "用户名或密码错误" in response.get_data(as_text=True)
    response = client.post(
        "/login", data={"username": "nobody", "password": "nope", "csrf_token": token}
    )
    assert response.status_code == 401


def test_login_throttle(system: WebSystem) -> None:
    client = system.client()
    token = csrf(client)
    for _ in range(10):
        client.post(
            "/login", data={"username": "dave-throttle", "password": "x", "csrf_token": token}
        )
    response = client.post(
        "/login", data={"username": "dave-throttle", "password": "x", "csrf_token": token}
    )
    assert response.status_code == 429


def test_login_redirects_only_to_local_next(system: WebSystem) -> None:
    client = system.client()
    token = csrf(client)
    response = client.post(
        "/login",
        data={"username": "carol", "password": PASSWORD, "csrf_token": token, "next": "/analytics"},
    )
    assert response.headers["Location"] == "/analytics"
    client = system.client()
    token = csrf(client)
    response = client.post(
        "/login",
        data={
            "username": "carol",
            "password": PASSWORD,
            "csrf_token": token,
            "next": "//evil.example/",
        },
    )
    assert response.headers["Location"] == "/matches"


def test_logout(system: WebSystem) -> None:
    client = system.client("viewer")
    assert client.get("/matches").status_code == 200
    assert client.get("/logout").status_code == 405  # a GET cannot sign anyone out
    response = client.post("/logout", data={"csrf_token": csrf(client, "/matches")})
    assert response.status_code == 302
    assert client.get("/matches").status_code == 302


def test_password_change_ends_other_sessions(system: WebSystem) -> None:
    from web import accounts

    accounts.create_user(system.store, "erin", "viewer", PASSWORD)
    first, second = system.app.test_client(), system.app.test_client()
    login(first, "erin", PASSWORD)
    login(second, "erin", PASSWORD)
    response = first.post(
        "/account/password",
        data={
            "csrf_token": csrf(first, "/account"),
            "current": PASSWORD,
            "password": "new-password-2",
            "confirm": "new-password-2",
        },
    )
    assert response.status_code == 302
    assert first.get("/matches").status_code == 200  # this session goes on
    assert second.get("/matches").status_code == 302  # the other one is over
    bad = first.post(
        "/account/password",
        data={
            "csrf_token": csrf(first, "/account"),
            "current": "wrong",
            "password": "x" * 10,
            "confirm": "x" * 10,
        },
    )
    assert bad.status_code == 302
    assert "当前密码错误" in first.get("/account").get_data(as_text=True)


def test_account_token(system: WebSystem) -> None:
    client = system.client("viewer")
    response = client.post("/account/token", data={"csrf_token": csrf(client, "/account")})
    assert response.status_code == 200
    token = re.search(r'id="token">([^<]+)<', response.get_data(as_text=True)).group(1)
    api = system.app.test_client()
    assert (
        api.get("/api/v1/matches", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    )
    system.tokens["viewer"] = token


# --- roles -------------------------------------------------------------------------------
@pytest.mark.parametrize("role", ["viewer", "analyst", "admin"])
def test_read_pages_for_every_role(system: WebSystem, seeded: dict[str, Any], role: str) -> None:
    client = system.client(role)
    match = encode_id(seeded["match_a"])
    for path in (
        "/",
        "/matches",
        "/library/",
        f"/library/{encode_id('work-a')}",
        "/suspects/",
        f"/suspects/{encode_id(seeded['suspect_a'])}",
        f"/matches/{match}",
        "/analytics",
        "/exports/",
        "/account",
        "/exports/matches.csv",
        "/exports/matches.json",
        f"/exports/reports/{match}.html",
        f"/exports/reports/{match}.pdf",
    ):
        response = client.get(path, follow_redirects=True)
        assert response.status_code == 200, (role, path)


def _forms(client: Any, seeded: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    token = csrf(client, "/account")
    match = encode_id(seeded["match_b"])
    return {
        "upload": (
            "/library/upload",
            {"csrf_token": token, "text": MOTHER_A[:200], "doc_id": "perm-test"},
        ),
        "check": ("/suspects/new", {"csrf_token": token, "text": "一段文字" * 30}),
        "verdict": (f"/matches/{match}/verdict", {"csrf_token": token, "verdict": "pending"}),
        "delete": (f"/library/{encode_id('no-such-work')}/delete", {"csrf_token": token}),
        "users": (
            "/users",
            {"csrf_token": token, "username": "x1", "role": "viewer", "password": PASSWORD},
        ),
    }


def test_viewer_cannot_change_anything(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.client("viewer")
    for name, (path, data) in _forms(client, seeded).items():
        assert client.post(path, data=data).status_code == 403, name
    assert client.get("/library/upload").status_code == 403
    assert client.get("/suspects/new").status_code == 403
    assert client.get("/users").status_code == 403
    page = client.get(f"/matches/{encode_id(seeded['match_a'])}").get_data(as_text=True)
    assert 'id="verdict-form"' not in page


def test_analyst_cannot_delete_or_manage_users(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.client("analyst")
    forms = _forms(client, seeded)
    assert client.post(*forms["delete"][:1], data=forms["delete"][1]).status_code == 403
    assert client.post(forms["users"][0], data=forms["users"][1]).status_code == 403
    assert client.get("/users").status_code == 403
    assert client.post(forms["verdict"][0], data=forms["verdict"][1]).status_code == 302
    assert client.get("/library/upload").status_code == 200


def test_admin_manages_users(system: WebSystem) -> None:
    client = system.client("admin")
    token = csrf(client, "/users")
    response = client.post(
        "/users",
        data={"csrf_token": token, "username": "frank", "role": "analyst", "password": PASSWORD},
    )
    assert response.status_code == 200
    assert "yj_" in response.get_data(as_text=True)  # the new token, shown once
    assert system.store.get_user("frank").role == "analyst"
    client.post("/users/frank/role", data={"csrf_token": token, "role": "viewer"})
    assert system.store.get_user("frank").role == "viewer"
    assert (
        client.post("/users/frank/role", data={"csrf_token": token, "role": "boss"}).status_code
        == 400
    )
    client.post("/users/frank/password", data={"csrf_token": token, "password": "another-pw-3"})
    login(system.app.test_client(), "frank", "another-pw-3")
    response = client.post("/users/frank/token", data={"csrf_token": token})
    assert "yj_" in response.get_data(as_text=True)
    # duplicate name, short password: refused with a message
    client.post(
        "/users",
        data={"csrf_token": token, "username": "frank", "role": "viewer", "password": PASSWORD},
    )
    assert "already exists" in client.get("/users").get_data(as_text=True)
    # an admin cannot lock themselves out
    client.post("/users/alice/role", data={"csrf_token": token, "role": "viewer"})
    assert system.store.get_user("alice").role == "admin"
    client.post("/users/alice/delete", data={"csrf_token": token})
    assert system.store.get_user("alice") is not None
    client.post("/users/frank/delete", data={"csrf_token": token})
    assert system.store.get_user("frank") is None
    assert client.post("/users/frank/delete", data={"csrf_token": token}).status_code == 404


# --- library -------------------------------------------------------------------------------
def test_upload_many_files_at_once(system: WebSystem) -> None:
    client = system.client("analyst")
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as zf:
        zf.writestr("inner/zip-one.txt", work(303, 6))
        zf.writestr(
            "zip-two.html",
            f"<html><head><title>网页作品</title></head><body><p>{work(304, 6)}</p></body></html>",
        )
    jsonl = json.dumps(
        {"id": "jl-1", "title": "JSONL 作品", "text": work(305, 6)}, ensure_ascii=False
    )
    response = client.post(
        "/library/upload",
        data={
            "csrf_token": csrf(client, "/library/upload"),
            "files": [
                (io.BytesIO(work(306, 6).encode("gb18030")), "gb-text.txt"),
                (io.BytesIO(jsonl.encode()), "more.jsonl"),
                (io.BytesIO(zbuf.getvalue()), "bundle.zip"),
                (io.BytesIO(b"MZ\x00\x00binary"), "tool.exe"),
            ],
            "title": "粘贴的作品",
            "doc_id": "pasted-1",
            "text": work(307, 6),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 302
    status = wait_job(client, job_id_of(response))
    assert status["result"]["ingested"] == 5
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "导入 5 部作品" in page
    assert "tool.exe" in page  # the unsupported file was reported; the rest went in
    for mid in ("gb-text", "jl-1", "zip-one", "pasted-1"):
        assert system.store.get_mother(mid).text
    assert [m.title for m in system.store.list_mothers(search="zip-two")] == ["网页作品"]
    assert system.store.get_mother("pasted-1").title == "粘贴的作品"


def test_library_list_search_and_pagination(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.client("viewer")
    page = client.get("/library/?q=Work A").get_data(as_text=True)
    assert "甲作品 Work A" in page and "乙作品" not in page
    page = client.get("/library/?page=999").get_data(as_text=True)
    assert "作品库" in page
    assert client.get("/library/?page=abc").status_code == 200


def test_library_show(system: WebSystem, seeded: dict[str, Any]) -> None:
    page = system.client("viewer").get(f"/library/{encode_id('work-a')}").get_data(as_text=True)
    assert MOTHER_A[:30] in page
    assert "盗版页面一" in page
    assert system.client("viewer").get(f"/library/{encode_id('nope')}").status_code == 404
    assert system.client("viewer").get("/library/not*base64").status_code == 404


def test_admin_deletes_a_work(system: WebSystem) -> None:
    client = system.client("analyst")
    ingest(client, [{"id": "to-delete", "title": "将删除", "text": work(404, 10)}])
    admin = system.client("admin")
    response = admin.post(
        f"/library/{encode_id('to-delete')}/delete", data={"csrf_token": csrf(admin, "/library/")}
    )
    assert response.status_code == 302
    assert admin.get(f"/library/{encode_id('to-delete')}").status_code == 404
    response = admin.post(
        f"/library/{encode_id('to-delete')}/delete", data={"csrf_token": csrf(admin, "/library/")}
    )
    assert response.status_code == 404


def test_empty_upload_is_refused(system: WebSystem) -> None:
    client = system.client("analyst")
    # A browser sends an empty, nameless file part for a file input left empty.
    response = client.post(
        "/library/upload",
        data={"csrf_token": csrf(client, "/library/upload"), "files": (io.BytesIO(b""), "")},
        content_type="multipart/form-data",
    )
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert "没有选择文件，也没有粘贴文本" in page
    assert "empty file" not in page and "upload:" not in page
    response = client.post(
        "/library/upload?lang=en", data={"csrf_token": csrf(client, "/library/upload")}
    )
    assert response.status_code == 400
    assert "no file chosen and no text pasted" in response.get_data(as_text=True)
    client.get("/library/?lang=zh")
    # An empty file is passed over at once; a binary one fails in the job: both are in
    # the job's result, and on its page after the reload.
    response = client.post(
        "/library/upload",
        data={
            "csrf_token": csrf(client, "/library/upload"),
            "files": [(io.BytesIO(b""), "empty.txt"), (io.BytesIO(b"\x00\x01\x02"), "bin.txt")],
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 302
    result = wait_job(client, job_id_of(response))["result"]
    assert result["skipped"] == [{"source": "empty.txt", "message": "empty file"}]
    assert [e["source"] for e in result["errors"]] == ["bin.txt"]
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "empty.txt" in page and "空文件" in page and "bin.txt" in page


# --- suspects and jobs -------------------------------------------------------------------------
def test_suspects_list_and_show(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.client("viewer")
    page = client.get("/suspects/").get_data(as_text=True)
    assert "盗版页面一" in page and "www.pirate-one.example" in page
    page = client.get("/suspects/?q=页面二").get_data(as_text=True)
    assert "盗版页面二" in page and "盗版页面一" not in page
    page = client.get(f"/suspects/{encode_id(seeded['suspect_a'])}").get_data(as_text=True)
    assert "甲作品 Work A" in page
    assert client.get(f"/suspects/{encode_id('missing')}").status_code == 404


def test_check_page_shows_job_result(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.client("analyst")
    response = client.post(
        "/suspects/new",
        data={
            "csrf_token": csrf(client, "/suspects/new"),
            "text": MOTHER_A[100:600],
            "title": "又一个盗版页",
            "urls": "not a url\nftp://x.example/file\n",
        },
    )
    assert response.status_code == 302
    job = job_id_of(response)
    wait_job(client, job)
    page = client.get(f"/jobs/{job}").get_data(as_text=True)
    assert 'id="job-summary"' in page
    assert "又一个盗版页" in page
    assert "1 个疑似页面" in page
    # the bad URLs were refused before the job, with a message
    assert client.get(f"/jobs/{job}").status_code == 200


def test_rebuild_job_page_says_what_was_indexed(system: WebSystem, seeded: dict[str, Any]) -> None:
    """A rebuild (chunks, then the load) on the job page: progress over both steps, and
    the works the load put in the index."""
    from workers import jobs

    works = system.store.count_mothers()
    job = jobs.submit_rebuild()
    client = system.client("viewer")
    status = wait_job(client, job)
    assert status["state"] == "SUCCESS" and status["done"] == status["total"] == 2 * works
    page = client.get(f"/jobs/{job}").get_data(as_text=True)
    assert "索引已重建" in page
    said = f"已为 {works} 部作品建立索引（daguan），分 1 块准备；其中 0 部由原文重新计算指纹。"
    assert said in page


def test_admin_rebuilds_the_index_from_the_library_page_and_the_api(
    system: WebSystem, seeded: dict[str, Any]
) -> None:
    """The rebuild button (admin only) and ``POST /api/v1/index/rebuild``: the fan-out
    rebuild on the workers, its chunks on the job page; refused while one runs."""
    import json

    from workers import jobs

    admin, analyst = system.client("admin"), system.client("analyst")
    assert 'id="rebuild-index"' in admin.get("/library/").get_data(as_text=True)
    assert 'id="rebuild-index"' not in analyst.get("/library/").get_data(as_text=True)
    refused = analyst.post("/library/rebuild", data={"csrf_token": csrf(analyst, "/library/")})
    assert refused.status_code == 403
    bearer = {"Authorization": f"Bearer {system.tokens['analyst']}"}
    assert system.client().post("/api/v1/index/rebuild", headers=bearer).status_code == 403

    # A process holding the index lock (``yinji index rebuild``): refused, saying so.
    api = {"Authorization": f"Bearer {system.tokens['admin']}"}
    with system.library.tracker.index_lock("daguan").hold():
        busy = system.client().post("/api/v1/index/rebuild", headers=api)
        assert busy.status_code == 409
        assert "already running" in busy.get_json()["error"]
        assert busy.get_json()["job_id"] is None
        page = admin.post(
            "/library/rebuild", data={"csrf_token": csrf(admin, "/library/")}, follow_redirects=True
        ).get_data(as_text=True)
        assert "索引正在重建中：请等它完成后再试。" in page

    # A rebuild job not finished yet (its task still queued): refused, naming the job.
    app = jobs.get_celery()
    prefix = system.settings.redis_prefix
    queued = {"kind": "rebuild", "tasks": [{"id": "never-run", "total": 1, "label": ""}]}
    app.backend.client.set(f"{prefix}:job:queued-job", json.dumps(queued))
    app.backend.client.set(f"{prefix}:rebuild-job:daguan", "queued-job")
    busy = system.client().post("/api/v1/index/rebuild", headers=api, json={"engine": "daguan"})
    assert (busy.status_code, busy.get_json()["job_id"]) == (409, "queued-job")
    sent = admin.post("/library/rebuild", data={"csrf_token": csrf(admin, "/library/")})
    assert job_id_of(sent) == "queued-job"
    app.backend.client.delete(f"{prefix}:job:queued-job")  # expired: no longer running

    bad = system.client().post("/api/v1/index/rebuild", headers=api, json={"engine": "nope"})
    assert bad.status_code == 400 and "nope" in bad.get_json()["error"]
    works = system.store.count_mothers()
    sent = admin.post("/library/rebuild", data={"csrf_token": csrf(admin, "/library/")})
    assert sent.status_code == 302
    status = wait_job(admin, job_id_of(sent))
    assert status["state"] == "SUCCESS" and status["result"]["mothers"] == works
    labels = [p["label"] for p in status["parts"]]
    assert labels[-1] == "load" and len(labels) == status["result"]["chunks"] + 1
    assert all(p["state"] == "SUCCESS" and p["done"] == p["total"] for p in status["parts"])
    page = admin.get(f"/jobs/{job_id_of(sent)}").get_data(as_text=True)
    assert 'id="job-parts"' in page and "载入索引" in page
    assert f"已为 {works} 部作品建立索引（daguan）" in page
    page_en = admin.get(f"/jobs/{job_id_of(sent)}?lang=en").get_data(as_text=True)
    assert "load the index" in page_en and f"{works} works indexed (daguan)" in page_en
    # Finished: the API starts the next one.
    again = system.client().post("/api/v1/index/rebuild", headers=api)
    assert again.status_code == 202
    assert wait_job(admin, again.get_json()["job_id"])["state"] == "SUCCESS"


def test_a_text_that_is_not_chinese_is_named_on_the_job_page(system: WebSystem) -> None:
    # Issue #26: never a silent "no match" (the page, and the job's JSON for the API).
    client = system.client("analyst")
    russian = "Все счастливые семьи похожи друг на друга. " * 10
    response = client.post(
        "/suspects/new",
        data={"csrf_token": csrf(client, "/suspects/new"), "text": russian, "title": "俄文页"},
    )
    job = job_id_of(response)
    status = wait_job(client, job)
    (item,) = status["result"]["results"]
    assert [w["code"] for w in item["warnings"]] == ["no-chinese"]
    page = client.get(f"/jobs/{job}").get_data(as_text=True)
    assert 'id="job-warnings"' in page
    assert "没有中文：本引擎只读中文" in page
    page = client.get(f"/jobs/{job}?lang=en").get_data(as_text=True)
    assert "No Chinese text: this engine reads Chinese only" in page


def test_check_without_input_is_refused(system: WebSystem) -> None:
    client = system.client("analyst")
    response = client.post(
        "/suspects/new",
        data={"csrf_token": csrf(client, "/suspects/new"), "urls": "javascript:alert(1)"},
    )
    assert response.status_code == 400
    assert "not an http(s) URL" in response.get_data(as_text=True)


def test_unknown_job(system: WebSystem) -> None:
    client = system.client("viewer")
    assert client.get("/jobs/00000000-0000-0000-0000-000000000000").status_code == 404
    assert client.get("/jobs/bad id!").status_code == 404
    response = client.get("/api/v1/jobs/00000000-0000-0000-0000-000000000000")
    assert response.status_code == 404
    assert "no job" in response.get_json()["error"]


# --- dashboard ----------------------------------------------------------------------------
def _rows(page: str) -> list[str]:
    return re.findall(r'class="suspect-title">([^<]*)<', page)


def test_dashboard_lists_matches(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.client("viewer")
    page = client.get("/matches").get_data(as_text=True)
    assert "盗版页面一" in page and "盗版页面二" in page
    assert "甲作品 Work A" in page
    assert "待审核" in page  # verdict shown


@pytest.mark.parametrize(
    ("query", "present", "absent"),
    [
        ("work=work-a", "盗版页面一", "盗版页面二"),
        ("domain=pirate-two.example", "盗版页面二", "盗版页面一"),
        ("q=pirate-one", "盗版页面一", "盗版页面二"),
        ("q=页面二", "盗版页面二", "盗版页面一"),
        ("min_score=0&max_score=1&sort=-coverage", "盗版页面一", None),
        ("since=2000-01-01&until=2999-12-31", "盗版页面一", None),
        ("until=2000-01-01", None, "盗版页面一"),
        ("min_score=0.999999", None, "盗版页面一"),
    ],
)
def test_dashboard_filters(
    system: WebSystem, seeded: dict[str, Any], query: str, present: str | None, absent: str | None
) -> None:
    page = system.client("viewer").get(f"/matches?{query}").get_data(as_text=True)
    rows = _rows(page)
    if present:
        assert present in rows, (query, rows)
    if absent:
        assert absent not in rows, (query, rows)


def test_dashboard_bad_filter_is_reported(system: WebSystem, seeded: dict[str, Any]) -> None:
    page = system.client("viewer").get("/matches?min_score=abc").get_data(as_text=True)
    assert "min_score must be a number" in page
    page = system.client("viewer").get("/matches?sort=evil").get_data(as_text=True)
    assert "sort must be one of" in page


def test_dashboard_pagination(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.client("viewer")
    first = _rows(client.get("/matches?per_page=1&sort=score").get_data(as_text=True))
    second = _rows(client.get("/matches?per_page=1&page=2&sort=score").get_data(as_text=True))
    assert len(first) == 1 and len(second) == 1 and first != second
    page = client.get("/matches?per_page=1").get_data(as_text=True)
    assert 'class="pager"' in page


def test_match_detail_side_by_side(system: WebSystem, seeded: dict[str, Any]) -> None:
    page = (
        system.client("viewer")
        .get(f"/matches/{encode_id(seeded['match_a'])}")
        .get_data(as_text=True)
    )
    assert 'id="s-p1"' in page and 'id="m-p1"' in page  # one anchor per passage and side
    assert 'href="#s-p1"' in page
    assert "http://www.pirate-one.example/book/1.html" in page
    assert 'rel="noopener noreferrer nofollow"' in page
    marked = re.search(r'<mark id="s-p1"[^>]*>([^<]+)</mark>', page).group(1)
    assert marked in MOTHER_A  # the highlighted suspect text is the copied work text
    # Pasted with a URL, never fetched: the view says submitted, as the report does.
    assert "提交时间" in page and "检测时间" in page and "抓取时间" not in page
    unknown = encode_id("a\x1fb")
    assert system.client("viewer").get(f"/matches/{unknown}").status_code == 404


def test_verdicts(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.client("analyst")
    mid = encode_id(seeded["match_b"])
    token = csrf(client, f"/matches/{mid}")
    response = client.post(
        f"/matches/{mid}/verdict",
        data={"csrf_token": token, "verdict": "confirmed", "note": "已发律师函 case-42"},
    )
    assert response.status_code == 302
    match = system.store.get_match(seeded["match_b"])
    assert (match.verdict, match.note) == ("confirmed", "已发律师函 case-42")
    page = client.get(f"/matches/{mid}").get_data(as_text=True)
    assert "已确认" in page and "case-42" in page
    dashboard = client.get("/matches?verdict=confirmed").get_data(as_text=True)
    assert "盗版页面二" in _rows(dashboard) and "盗版页面一" not in _rows(dashboard)
    # dismiss from the dashboard row, back to the dashboard
    response = client.post(
        f"/matches/{mid}/verdict",
        data={"csrf_token": token, "verdict": "dismissed", "next": "/matches?verdict=dismissed"},
    )
    assert response.headers["Location"] == "/matches?verdict=dismissed"
    assert system.store.get_match(seeded["match_b"]).note == "已发律师函 case-42"  # kept
    # an outside "next" is ignored
    response = client.post(
        f"/matches/{mid}/verdict",
        data={"csrf_token": token, "verdict": "pending", "next": "https://evil.example/"},
    )
    assert response.headers["Location"] == f"/matches/{mid}"
    bad = client.post(f"/matches/{mid}/verdict", data={"csrf_token": token, "verdict": "maybe"})
    assert bad.status_code == 400
    unknown = encode_id("x\x1fy")
    missing = client.post(
        f"/matches/{unknown}/verdict", data={"csrf_token": token, "verdict": "confirmed"}
    )
    assert missing.status_code == 404


# --- analytics and exports ----------------------------------------------------------------
def test_analytics(system: WebSystem, seeded: dict[str, Any]) -> None:
    page = system.client("viewer").get("/analytics").get_data(as_text=True)
    assert page.count("<svg") >= 4
    assert "甲作品 Work A" in page and "www.pirate-one.example" in page
    assert 'class="bar"' in page
    assert "<script>" not in page  # charts are server-side SVG, no chart library
    filtered = system.client("viewer").get("/analytics?domain=pirate-two.example")
    assert "www.pirate-one.example" not in filtered.get_data(as_text=True)


def test_export_csv_and_json(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.client("viewer")
    response = client.get("/exports/matches.csv?work=work-a")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/csv")
    assert "attachment" in response.headers["Content-Disposition"]
    assert response.data.startswith("\ufeff".encode())  # BOM for Excel
    rows = list(csv.DictReader(io.StringIO(response.data.decode("utf-8-sig"))))
    assert {r["mother_id"] for r in rows} == {"work-a"}
    assert any(r["suspect_url"].startswith("http://www.pirate-one.example") for r in rows)
    data = client.get("/exports/matches.json?domain=pirate-two.example").get_json()
    assert data["count"] == len(data["matches"]) >= 1
    assert {m["domain"] for m in data["matches"]} == {"m.pirate-two.example"}
    # Printable match ids: the reference of /matches/<ref> (no U+001F separator).
    assert encode_id(seeded["match_a"]) in [r["match_id"] for r in rows]
    assert encode_id(seeded["match_b"]) in [m["match_id"] for m in data["matches"]]
    for body in (response.data, client.get("/exports/matches.json").data):
        text = body.decode("utf-8-sig")
        assert all(c.isprintable() or c in "\r\n" for c in text) and "\\u001f" not in text
    assert client.get(f"/matches/{rows[0]['match_id']}").status_code == 200
    assert client.get("/exports/matches.csv?verdict=bogus").status_code == 400
    page = client.get("/exports/?work=work-a").get_data(as_text=True)
    assert "exports/matches.csv?work=work-a" in page


def test_evidence_reports(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.client("viewer")
    mid = encode_id(seeded["match_a"])
    pdf = client.get(f"/exports/reports/{mid}.pdf")
    assert pdf.status_code == 200 and pdf.data.startswith(b"%PDF")
    assert pdf.headers["Content-Type"] == "application/pdf"
    assert "attachment" in pdf.headers["Content-Disposition"]
    html = client.get(f"/exports/reports/{mid}.html")
    assert html.status_code == 200
    assert "证据报告" in html.get_data(as_text=True)
    assert "script-src" not in html.headers["Content-Security-Policy"]
    assert "default-src 'none'" in html.headers["Content-Security-Policy"]
    js = client.get(f"/exports/reports/{mid}.json?download=1")
    assert json.loads(js.data)["match_id"] == seeded["match_a"]
    assert client.get(f"/exports/reports/{mid}.exe").status_code == 404
    assert client.get(f"/exports/reports/{encode_id('no')}.pdf").status_code == 404


# --- language ----------------------------------------------------------------------------
def test_language_default_and_switch(system: WebSystem) -> None:
    client = system.client("viewer")
    assert "作品库" in client.get("/library/").get_data(as_text=True)
    english = system.client("viewer")
    page = english.get("/library/", headers={"Accept-Language": "en-US,en;q=0.9"})
    assert ">Library<" in page.get_data(as_text=True)
    both = system.client("viewer")
    page = both.get("/library/", headers={"Accept-Language": "en;q=0.8,zh-CN;q=0.8"})
    assert "作品库" in page.get_data(as_text=True)  # Chinese first on a tie
    client.get("/library/?lang=en")
    page = client.get("/matches").get_data(as_text=True)
    assert ">Matches<" in page and 'lang="en"' in page
    assert "?lang=zh" in page  # the toggle back
    client.get("/matches?lang=zh")
    assert "匹配" in client.get("/matches").get_data(as_text=True)
    login_page = system.client().get("/login?lang=en").get_data(as_text=True)
    assert "Sign in" in login_page


def test_roles_table_is_complete() -> None:
    assert set(ROLE_USERS) == {"admin", "analyst", "viewer"}


def test_job_page_for_ingest_links_library(system: WebSystem) -> None:
    client = system.client("analyst")
    response = client.post(
        "/library/upload",
        data={"csrf_token": csrf(client, "/library/upload"), "text": work(505, 8), "title": "单篇"},
    )
    job = job_id_of(response)
    wait_job(client, job)
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "导入 1 部作品" in page


def test_evidence_bundle_download(system: WebSystem, seeded: dict[str, Any]) -> None:
    # Issue #15: the bundle is downloadable from the evidence view and the API too.
    from tracker.evidence import verify_bundle
    from tracker.store import Suspect

    client = system.client("viewer")
    lib = system.library
    # Stored without going through the evidence log (as before it existed): nothing
    # to prove, said so.
    lib.check_suspect(Suspect(id="unlogged", text=MOTHER_A[100:600]))
    missing = client.get(f"/exports/reports/{encode_id('unlogged' + chr(0x1F) + 'work-a')}.zip")
    assert missing.status_code == 404
    # The pasted text checked by the web app's job was recorded by the worker.
    mid = encode_id(seeded["match_a"])
    page = client.get(f"/matches/{mid}").get_data(as_text=True)
    assert f"/exports/reports/{mid}.zip" in page and "证据包" in page
    bundle = client.get(f"/exports/reports/{mid}.zip")
    assert bundle.status_code == 200 and bundle.headers["Content-Type"] == "application/zip"
    assert "attachment" in bundle.headers["Content-Disposition"]
    result = verify_bundle(io.BytesIO(bundle.data))
    assert result.ok, result.summary()
    api = system.app.test_client().get(
        f"/api/v1/reports/{mid}.zip", headers={"Authorization": f"Bearer {system.tokens['viewer']}"}
    )
    assert api.status_code == 200 and verify_bundle(io.BytesIO(api.data)).ok
