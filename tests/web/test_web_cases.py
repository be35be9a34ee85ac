"""Takedown cases in the web app and the REST API, on a real system (Flask test client,
in-process worker, embedded Redis) and a local HTTP server playing the pirate site:
verdicts through the case workflow (the case and the evidence log in step, the verdict
logged once), the board and its figures, a case's page and actions with roles and CSRF,
re-check now as a job, the notice's preview and downloads, the rights-holder profile,
the API in the shape of ``yinji case list --json``, the evidence view's character marks,
and the analytics page's removal figures."""

from __future__ import annotations

import email
import hashlib
import io
import json
import re
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from click.testing import CliRunner
from textgen import HOMOPHONES, homophones, work
from webkit import (
    NO_CRAWL_PAUSE,
    WebSystem,
    check_text,
    csrf,
    ingest,
    job_id_of,
    wait_job,
    web_system,
)

from web.ids import encode_id

system = web_system(allow_private_urls=True, env=NO_CRAWL_PAUSE)

WORK_A = work(301, 30)
WORK_B = work(302, 30)
PROFILE = {
    "name": "青简文化有限公司",
    "contact": "李明",
    "email": "legal@qingjian.example",
    "phone": "+86 10 1234 5678",
    "address": "北京市海淀区中关村大街1号",
}


class PirateSite:
    """A local HTTP server: path -> (status, html); the test changes ``pages``."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, str]] = {}
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body = site.pages.get(self.path, (404, "not found"))
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def page(title: str, text: str) -> str:
    return (
        f"<html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><article><h1>{title}</h1><p>{text}</p></article></body></html>"
    )


@pytest.fixture(scope="module")
def site() -> Iterator[PirateSite]:
    s = PirateSite()
    try:
        yield s
    finally:
        s.stop()


def auth(system: WebSystem, role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {system.tokens[role]}"}


def confirm(client: Any, match_id: str, note: str = "") -> Any:
    token = csrf(client, f"/matches/{encode_id(match_id)}")
    return client.post(
        f"/matches/{encode_id(match_id)}/verdict",
        data={"verdict": "confirmed", "note": note, "csrf_token": token},
    )


@pytest.fixture(scope="module")
def seeded(system: WebSystem, site: PirateSite) -> dict[str, Any]:
    """Two works; three pages copying them on the local site (127.0.0.1) and one on
    another site (a .example name, never fetched); all checked through real jobs."""
    client = system.client("analyst")
    ingest(
        client,
        [
            {"id": "work-a", "title": "春山记", "text": WORK_A},
            {"id": "work-b", "title": "秋水集", "text": WORK_B},
        ],
    )
    out: dict[str, Any] = {}
    for key, path, text in (
        ("a1", "/book/1.html", WORK_A[:600]),
        ("a2", "/book/2.html", WORK_A[500:1100]),
        ("b1", "/other/1.html", WORK_B[:700]),
    ):
        site.pages[path] = (200, page(key, text))
        status = check_text(client, "免费阅读。" + text, title=f"盗版 {key}", url=site.url(path))
        out[key] = status["result"]["results"][0]["suspect_id"]
    far = check_text(
        client, WORK_B[100:800], title="镜像站", url="https://mirror.pirate-far.example/b/1"
    )
    out["far"] = far["result"]["results"][0]["suspect_id"]
    return out


def _svc(system: WebSystem) -> Any:
    """The app's CaseService (``web.casework.cases``)."""
    from web.casework import cases

    with system.app.app_context():
        return cases()


def titles(html: str) -> list[str]:
    """The works of the case rows of the board (the filter's suggestions left out)."""
    return re.findall(r'class="case-title">([^<]*)<', html)


def _case_of(system: WebSystem, suspect_id: str, mother_id: str) -> Any:
    for c in _svc(system).list_cases():
        if any(u.suspect_id == suspect_id and u.mother_id == mother_id for u in c.urls):
            return c
    return None


# --- verdicts file matches into cases ------------------------------------------------------
def test_confirming_in_the_web_opens_one_case_per_work_and_site(
    system: WebSystem, seeded: dict[str, Any]
) -> None:
    client = system.client("analyst")
    response = confirm(client, f"{seeded['a1']}\x1fwork-a", "整章复制")
    assert response.status_code == 302
    page_html = client.get(response.headers["Location"]).get_data(as_text=True)
    case = _case_of(system, seeded["a1"], "work-a")
    # The case's site is host and port (issue 36): the local site's port is part of it.
    assert case is not None and case.state == "open" and case.domain.startswith("127.0.0.1:")
    assert f"案件 {case.id}" in page_html  # the flash names the case
    assert confirm(client, f"{seeded['a2']}\x1fwork-a").status_code == 302
    again = _case_of(system, seeded["a2"], "work-a")
    assert again is not None and again.id == case.id  # same work, same site: one case
    assert len(again.urls) == 2
    history = _svc(system).history(case.id)
    assert [e.kind for e in history] == ["created", "url_added", "url_added"]
    assert {e.who for e in history} == {"web:bob"}
    # The evidence log has the verdict once (the page does not write it a second time).
    evlog = _svc(system).evidence._open()
    verdicts = [
        e for e in evlog.entries(suspect_id=seeded["a1"], mother_id="work-a") if e.kind == "verdict"
    ]
    assert len(verdicts) == 1 and verdicts[0].payload["verdict"] == "confirmed"
    # The evidence view links the case.
    detail = client.get(f"/matches/{encode_id(seeded['a1'] + chr(31) + 'work-a')}")
    assert f"/cases/{case.id}" in detail.get_data(as_text=True)


def test_api_verdict_files_and_withdraws(system: WebSystem, seeded: dict[str, Any]) -> None:
    client = system.app.test_client()
    ref = encode_id(f"{seeded['far']}\x1fwork-b")
    response = client.patch(
        f"/api/v1/matches/{ref}", headers=auth(system, "analyst"), json={"verdict": "confirmed"}
    )
    body = response.get_json()
    assert response.status_code == 200 and body["verdict"] == "confirmed"
    assert body["case_state"] == "open" and body["case_id"]
    case = _svc(system).get(body["case_id"])
    assert case.domain == "mirror.pirate-far.example" and case.urls[0].url.endswith("/b/1")
    assert _svc(system).history(case.id)[-1].who == "api:bob"
    # Taking it back while no notice went out: the URL leaves, the empty case closes.
    back = client.patch(
        f"/api/v1/matches/{ref}", headers=auth(system, "analyst"), json={"verdict": "pending"}
    ).get_json()
    assert back["case_state"] == "closed"
    assert _svc(system).get(case.id).urls == []
    # And again: a closed case is final, a new confirmation opens a new case.
    again = client.patch(
        f"/api/v1/matches/{ref}", headers=auth(system, "analyst"), json={"verdict": "confirmed"}
    ).get_json()
    assert again["case_id"] == f"{case.id}-2" and again["case_state"] == "open"


# --- the board ---------------------------------------------------------------------------------
def test_board_counts_filters_and_sites(system: WebSystem, seeded: dict[str, Any]) -> None:
    confirm(system.client("analyst"), f"{seeded['b1']}\x1fwork-b")
    client = system.client("viewer")
    html = client.get("/cases").get_data(as_text=True)
    assert {"春山记", "秋水集"} <= set(titles(html))
    assert 'class="active tab-all">全部 <span class="count">' in html
    assert "各网站删除情况" in html and "127.0.0.1" in html
    only_open = client.get("/cases?state=open").get_data(as_text=True)
    assert "秋水集" in titles(only_open) and "mirror.pirate-far.example" in only_open
    closed = titles(client.get("/cases?state=closed").get_data(as_text=True))
    assert closed == ["秋水集"]  # the mirror's first case, closed when its URL left
    by_work = titles(client.get("/cases?work=work-a").get_data(as_text=True))
    assert by_work == ["春山记"]
    by_site = client.get("/cases?domain=mirror.pirate-far.example&lang=en")
    text = by_site.get_data(as_text=True)
    assert by_site.status_code == 200 and "Removals per site" in text
    assert set(titles(text)) == {"秋水集"}
    bad = client.get("/cases?state=lost").get_data(as_text=True)
    assert "state must be one of" in bad  # a hand-edited URL: said, then everything shown
    assert len(titles(bad)) == len(titles(html))


# --- a case's page and its actions ----------------------------------------------------------
def test_case_page_and_actions_with_roles_and_csrf(
    system: WebSystem, seeded: dict[str, Any], site: PirateSite
) -> None:
    case = _case_of(system, seeded["a1"], "work-a")
    viewer, analyst = system.client("viewer"), system.client("analyst")
    html = viewer.get(f"/cases/{case.id}").get_data(as_text=True)
    assert site.url("/book/1.html") in html and site.url("/book/2.html") in html
    assert "证据视图" in html and "链条校验通过" in html
    assert 'id="case-actions"' not in html  # a viewer sees no action forms
    token = csrf(viewer, f"/cases/{case.id}")
    refused = viewer.post(f"/cases/{case.id}/mark-sent", data={"csrf_token": token})
    assert refused.status_code == 403
    assert analyst.post(f"/cases/{case.id}/mark-sent", data={}).status_code == 400  # no CSRF
    token = csrf(analyst, f"/cases/{case.id}")
    sent = analyst.post(
        f"/cases/{case.id}/mark-sent", data={"csrf_token": token, "note": "工单 T-42"}
    )
    assert sent.status_code == 302
    after = analyst.get(f"/cases/{case.id}").get_data(as_text=True)
    assert "已标记通知已发送" in after and "工单 T-42" in after and "case-notice_sent" in after
    # notice_sent -> open is not a legal move: 409 naming the allowed ones.
    illegal = analyst.post(f"/cases/{case.id}/state", data={"csrf_token": token, "state": "open"})
    assert illegal.status_code == 409
    assert "allowed from notice_sent" in illegal.get_data(as_text=True)
    bogus = analyst.post(f"/cases/{case.id}/state", data={"csrf_token": token, "state": "gone"})
    assert bogus.status_code == 400
    noted = analyst.post(f"/cases/{case.id}/note", data={"csrf_token": token, "note": "电话催办"})
    assert noted.status_code == 302
    assert "电话催办" in analyst.get(f"/cases/{case.id}").get_data(as_text=True)
    assert viewer.get("/cases/c0000000000").status_code == 404


def test_recheck_now_moves_the_case_by_what_the_site_shows(
    system: WebSystem, seeded: dict[str, Any], site: PirateSite
) -> None:
    case = _case_of(system, seeded["a1"], "work-a")
    assert _svc(system).get(case.id).state == "notice_sent"
    analyst = system.client("analyst")
    token = csrf(analyst, f"/cases/{case.id}")
    # Still online after the notice.
    response = analyst.post(f"/cases/{case.id}/recheck", data={"csrf_token": token})
    assert response.status_code == 302 and "kind=recheck" in response.headers["Location"]
    status = wait_job(analyst, job_id_of(response))
    assert status["state"] == "SUCCESS" and status["kind"] == "recheck", status
    [result] = status["result"]["results"]
    assert (result["before"], result["after"]) == ("notice_sent", "still_online")
    job_page = analyst.get(response.headers["Location"]).get_data(as_text=True)
    assert "复查完成" in job_page and "仍在复制" in job_page
    # Both pages gone (one 404, one now showing something else): removed.
    site.pages["/book/1.html"] = (404, "gone")
    site.pages["/book/2.html"] = (200, page("公告", "本页内容已删除。" * 20))
    response = analyst.post(f"/cases/{case.id}/recheck", data={"csrf_token": token})
    status = wait_job(analyst, job_id_of(response))
    [result] = status["result"]["results"]
    assert result["after"] == "removed"
    assert sorted(c["outcome"] for c in result["checks"]) == ["changed", "gone"]
    html = analyst.get(f"/cases/{case.id}").get_data(as_text=True)
    assert "复查记录" in html and "outcome-gone" in html and "outcome-changed" in html
    assert "case-removed" in html
    # The Chinese page names outcomes in Chinese (the raw reason only as a tooltip).
    visible = re.sub(r'title="[^"]*"', "", re.sub(r"<[^>]*(title=\"[^\"]*\")?[^>]*>", " ", html))
    for english in ("still online", "200 · matching", "gone: HTTP", "changed: no copy"):
        assert english not in visible, english
    assert "已消失" in visible and "仍在复制" in visible


# --- notices and the profile ----------------------------------------------------------------
def test_notice_needs_a_profile_then_previews_and_downloads(
    system: WebSystem, seeded: dict[str, Any]
) -> None:
    case = _case_of(system, seeded["b1"], "work-b")
    analyst, admin = system.client("analyst"), system.client("admin")
    missing = analyst.get(f"/cases/{case.id}/notice?notice_lang=zh")
    said = missing.get_data(as_text=True)
    assert missing.status_code == 200 and 'id="notice-error"' in said and "profile" in said
    assert 'id="notice-download"' not in said
    assert analyst.get("/cases/profile").status_code == 403
    token = csrf(admin, "/cases/profile")
    saved = admin.post(
        "/cases/profile",
        data={
            **PROFILE,
            "csrf_token": token,
            "attachments": (io.BytesIO(b"%PDF-1.4 certificate"), "certificate.pdf"),
        },
        content_type="multipart/form-data",
    )
    assert saved.status_code == 302
    profile_html = admin.get("/cases/profile").get_data(as_text=True)
    assert "certificate.pdf" in profile_html and "青简文化有限公司" in profile_html

    zh = analyst.get(f"/cases/{case.id}/notice?notice_lang=zh").get_data(as_text=True)
    assert "青简文化有限公司" in zh and "秋水集" in zh and "初步证明" in zh
    assert case.urls[0].url in zh and '<h2 class="notice-title">' in zh
    en = analyst.get(f"/cases/{case.id}/notice?notice_lang=en").get_data(as_text=True)
    assert "under penalty of perjury" in en and "good faith belief" in en
    assert "<h2>下载</h2>" in en  # the English notice in the Chinese page

    viewer = system.client("viewer")
    token = csrf(viewer, f"/cases/{case.id}/notice")
    assert (
        viewer.post(
            f"/cases/{case.id}/notice", data={"csrf_token": token, "format": "pdf"}
        ).status_code
        == 403
    )
    token = csrf(analyst, f"/cases/{case.id}/notice")
    pdf = analyst.post(
        f"/cases/{case.id}/notice", data={"csrf_token": token, "format": "pdf", "notice_lang": "zh"}
    )
    assert pdf.status_code == 200 and pdf.data.startswith(b"%PDF")
    assert pdf.headers["Content-Disposition"].startswith('attachment; filename="notice-YJ-')
    docx = analyst.post(
        f"/cases/{case.id}/notice",
        data={"csrf_token": token, "format": "docx", "notice_lang": "en"},
    )
    body = zipfile.ZipFile(io.BytesIO(docx.data)).read("word/document.xml").decode()
    assert "under penalty of perjury" in body  # the English notice as a Word document
    eml = analyst.post(
        f"/cases/{case.id}/notice",
        data={
            "csrf_token": token,
            "format": "eml",
            "notice_lang": "zh",
            "to": "copyright@platform.example",
            "evidence": ["1", "0"],
        },
    )
    msg = email.message_from_bytes(eml.data)
    assert msg["To"] == "copyright@platform.example"
    # A recipient carrying CR/LF (a header injection) is a message, not a 500.
    injected = analyst.post(
        f"/cases/{case.id}/notice",
        data={
            "csrf_token": token,
            "format": "eml",
            "notice_lang": "zh",
            "to": "copyright@platform.example\r\nBcc: all@victim.example",
        },
    )
    assert injected.status_code == 400 and "line break" in injected.get_data(as_text=True)
    names = [p.get_filename() for p in msg.walk() if p.get_filename()]
    assert "certificate.pdf" in names and any(n.startswith("evidence-") for n in names)
    generated = [e for e in _svc(system).history(case.id) if e.kind == "notice"]
    assert [e.data["format"] for e in generated] == ["pdf", "docx", "eml"]
    # The page's evidence report names its case and the latest notice (issue #23).
    u = case.urls[0]
    report = analyst.get(
        f"/api/v1/reports/{encode_id(u.suspect_id + chr(31) + u.mother_id)}.json"
    ).get_json()
    assert report["case_id"] == case.id
    assert report["notice"] == generated[-1].data["reference"]
    head = system.client().get("/api/v1/evidence/head").get_json()
    assert report["evidence_key"] == head["fingerprint"]  # the key the log publishes
    assert generated[0].data["sha256"] == hashlib.sha256(pdf.data).hexdigest()
    page_html = analyst.get(f"/cases/{case.id}?lang=zh").get_data(as_text=True)
    assert "生成通知" in page_html


# --- the API ------------------------------------------------------------------------------------
def test_api_cases_have_the_shape_of_the_cli(system: WebSystem, seeded: dict[str, Any]) -> None:
    from tracker.cli import main

    client = system.app.test_client()
    body = client.get("/api/v1/cases?limit=200", headers=auth(system, "viewer")).get_json()
    result = CliRunner().invoke(
        main, ["--data-dir", str(system.settings.data_dir), "case", "list", "--json", "--no-sync"]
    )
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout)
    assert body["total"] == len(cli) >= 3
    assert body["cases"] == cli  # the same objects, in the same order
    for item in body["cases"]:
        assert {"id", "state", "work", "domain", "urls"} <= set(item)
    only = client.get(
        "/api/v1/cases?state=removed&domain=127.0.0.1", headers=auth(system, "viewer")
    ).get_json()
    assert [c["state"] for c in only["cases"]] == ["removed"]
    assert client.get("/api/v1/cases?state=x", headers=auth(system, "viewer")).status_code == 400
    one = client.get(f"/api/v1/cases/{only['cases'][0]['id']}", headers=auth(system, "viewer"))
    detail = one.get_json()
    assert detail["history_problems"] == [] and detail["history"][0]["kind"] == "created"
    assert client.get("/api/v1/cases/nope", headers=auth(system, "viewer")).status_code == 404
    sites = client.get("/api/v1/cases/sites", headers=auth(system, "viewer")).get_json()
    local = next(s for s in sites["sites"] if s["domain"].startswith("127.0.0.1:"))
    assert local["removed"] == 1 and local["removal_rate"] == 1.0
    assert local["median_days_to_removal"] is not None


def test_api_transitions_notes_recheck_and_notices(
    system: WebSystem, seeded: dict[str, Any]
) -> None:
    client = system.app.test_client()
    case = _case_of(system, seeded["b1"], "work-b")
    url = f"/api/v1/cases/{case.id}"
    viewer, analyst = auth(system, "viewer"), auth(system, "analyst")
    assert (
        client.post(f"{url}/transitions", headers=viewer, json={"to": "disputed"}).status_code
        == 403
    )
    bad = client.post(f"{url}/transitions", headers=analyst, json={"to": "lost"})
    assert bad.status_code == 400 and "'to' must be one of" in bad.get_json()["error"]
    extra = client.post(f"{url}/transitions", headers=analyst, json={"to": "open", "x": 1})
    assert extra.status_code == 400 and "unknown field" in extra.get_json()["error"]
    sent = client.post(
        f"{url}/transitions", headers=analyst, json={"to": "notice_sent", "note": "via API"}
    ).get_json()
    assert sent["state"] == "notice_sent" and sent["history"][-1]["who"] == "api:bob"
    illegal = client.post(f"{url}/transitions", headers=analyst, json={"to": "open"})
    assert illegal.status_code == 409 and "allowed from notice_sent" in illegal.get_json()["error"]
    disputed = client.post(
        f"{url}/transitions", headers=analyst, json={"to": "disputed", "note": "平台要求授权书"}
    ).get_json()
    assert disputed["state"] == "disputed"
    noted = client.post(f"{url}/notes", headers=analyst, json={"note": "已补充材料"}).get_json()
    assert noted["history"][-1]["note"] == "已补充材料"
    assert client.post(f"{url}/notes", headers=analyst, json={"note": ""}).status_code == 400

    preview = client.get(f"{url}/notice?lang=en", headers=viewer).get_json()
    assert preview["lang"] == "en" and case.urls[0].url in preview["urls"]
    assert "under penalty of perjury" in preview["plain_text"]
    assert client.get(f"{url}/notice?lang=fr", headers=viewer).status_code == 400
    file = client.post(f"{url}/notice", headers=analyst, json={"format": "pdf", "lang": "zh"})
    assert file.status_code == 200 and file.data.startswith(b"%PDF")
    assert file.headers["X-Yinji-Notice-Reference"].startswith("YJ-")
    wrong = client.post(f"{url}/notice", headers=analyst, json={"format": "txt", "lang": "zh"})
    assert wrong.status_code == 400
    # One notice for several cases of one platform; another platform is refused.
    local_a = _case_of(system, seeded["a1"], "work-a").id
    both = client.post(
        f"{url}/notice", headers=analyst, json={"format": "eml", "lang": "en", "cases": [local_a]}
    )
    assert both.status_code == 200
    assert sorted(email.message_from_bytes(both.data)["X-Yinji-Cases"].split(", ")) == sorted(
        [case.id, local_a]
    )
    far = _case_of(system, seeded["far"], "work-b").id
    other_site = client.post(
        f"{url}/notice", headers=analyst, json={"format": "pdf", "lang": "zh", "cases": [far]}
    )
    assert other_site.status_code == 400 and "one platform" in other_site.get_json()["error"]

    accepted = client.post(f"{url}/recheck", headers=analyst)
    assert accepted.status_code == 202
    status = wait_job(client, accepted.get_json()["job_id"], headers=analyst)
    assert status["state"] == "SUCCESS"
    [result] = status["result"]["results"]
    # The page is still there and still copies: a disputed case stays disputed.
    assert result["before"] == result["after"] == "disputed"
    assert result["checks"][0]["outcome"] == "matching"


def test_every_case_route_is_in_the_openapi_document(system: WebSystem) -> None:
    doc = system.app.test_client().get("/api/v1/openapi.json").get_json()
    for path in (
        "/api/v1/cases",
        "/api/v1/cases/sites",
        "/api/v1/cases/{case_id}",
        "/api/v1/cases/{case_id}/transitions",
        "/api/v1/cases/{case_id}/notes",
        "/api/v1/cases/{case_id}/recheck",
        "/api/v1/cases/{case_id}/notice",
    ):
        assert path in doc["paths"], path
    assert set(doc["paths"]["/api/v1/cases/{case_id}/notice"]) >= {"get", "post"}
    from openapi_spec_validator import validate

    validate(doc)


# --- the evidence view marks what differs ------------------------------------------------
def test_evidence_view_marks_differing_characters(system: WebSystem) -> None:
    client = system.client("analyst")
    text = WORK_A[1200:1700]
    copy = homophones(text)
    assert copy != text
    status = check_text(client, "同音盗版。" + copy, title="同音替换页")
    sid = status["result"]["results"][0]["suspect_id"]
    html = client.get(f"/matches/{encode_id(sid + chr(31) + 'work-a')}").get_data(as_text=True)
    assert 'class="d d-homophone"' in html and 'id="diff-legend"' in html
    # A pasted text was never fetched: no fetch time, as in the reports (issue #15).
    assert "提交的文本，未经抓取" in html and "抓取时间" not in html
    assert "相似度（拼音首字母）" in html and "相似度（汉字）" in html
    initials = [float(v) for v in _cells(html, "sim-initials")]
    chars = [float(v) for v in _cells(html, "sim-chars")]
    assert initials and chars and max(chars) < 1.0 <= max(initials) + 0.01
    # Marked as homophones: the swapped characters, on both sides (copy and work).
    texts = html.split('id="suspect-text"')[1]
    marked = "".join(re.findall(r'<span class="d d-homophone">([^<]*)</span>', texts))
    assert marked and set(marked) <= set(HOMOPHONES) | set(HOMOPHONES.values())
    assert set(marked) & set(HOMOPHONES.values()) and set(marked) & set(HOMOPHONES)


def _cells(html: str, cls: str) -> list[str]:
    return re.findall(rf'<td class="num {cls}"[^>]*>([0-9.]+)</td>', html)


# --- analytics -------------------------------------------------------------------------------
def test_analytics_shows_removals_per_site(system: WebSystem, seeded: dict[str, Any]) -> None:
    html = system.client("viewer").get("/analytics?work=work-a").get_data(as_text=True)
    section = html.split('id="removals"')[1].split("</section>")[0]
    assert "各网站下架情况" in section and "127.0.0.1" in section
    assert "100%" in section  # work-a's noticed case on the local site was removed
    assert "mirror.pirate-far.example" not in section  # another work's site
    en = system.client("viewer").get("/analytics?lang=en&work=work-b").get_data(as_text=True)
    section = en.split('id="removals"')[1].split("</section>")[0]
    assert "Takedowns per site" in section and "127.0.0.1" in section
    assert "0%" in section  # work-b's case there was noticed, then disputed: not removed


# --- the platform and its complaint flow ------------------------------------------------------
def test_case_page_shows_platform_and_flow(system: WebSystem) -> None:
    svc = _svc(system)
    opened = svc.open_case(work="w-flow", domain="weibo.com", who="test")
    analyst = system.client("analyst")
    html = analyst.get(f"/cases/{opened.id}?lang=zh").get_data(as_text=True)
    assert 'id="case-platform"' in html and "新浪微博" in html
    assert "https://service.account.weibo.com/" in html and "所需材料" in html
    assert '<li class="current">线索</li>' in html and "材料审核" in html and "删除下架" in html
    detail = system.client().get(f"/api/v1/cases/{opened.id}", headers=auth(system, "viewer"))
    assert detail.get_json()["platform"]["id"] == "weibo"
    # The platform's flow: first review (notice sent), documents, removed, compensated.
    svc.transition(opened.id, "notice_sent", who="test")
    token = csrf(analyst, f"/cases/{opened.id}")
    moved = analyst.post(
        f"/cases/{opened.id}/state",
        data={"csrf_token": token, "state": "documents", "note": "平台要求权属证明"},
    )
    assert moved.status_code == 302 and svc.get(opened.id).state == "documents"
    html = analyst.get(f"/cases/{opened.id}?lang=zh").get_data(as_text=True)
    assert '<li class="current">材料审核</li>' in html and 'id="move-compensated"' in html
    unknown = svc.open_case(work="w-flow", domain="pirate-site.example", who="test")
    html = analyst.get(f"/cases/{unknown.id}?lang=zh").get_data(as_text=True)
    assert "平台登记表中没有该网站" in html
