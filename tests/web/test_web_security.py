"""Security of the web app: CSRF, escaping of hostile suspect data on every page that
shows it, security headers, hostile uploads, upload limits, the secret key."""

from __future__ import annotations

import io
import os
import re
import stat
import zipfile
from typing import Any
from urllib.parse import unquote

import pytest
from textgen import work
from webkit import (
    XSS_IMG,
    XSS_SCRIPT,
    WebSystem,
    check_text,
    csrf,
    ingest,
    job_id_of,
    wait_job,
    web_system,
)

from tracker.plumbing.config import Settings
from tracker.store import Suspect
from web.ids import encode_id
from web.security import load_secret_key

system = web_system()

HOSTILE = f"{XSS_SCRIPT}{XSS_IMG}"
MOTHER = work(901, 18)


@pytest.fixture(scope="module")
def hostile(system: WebSystem) -> dict[str, Any]:
    """A work and a suspect whose titles and texts carry script payloads."""
    client = system.client("analyst")
    ingest(
        client,
        [
            {
                "id": "evil-work",
                "title": f"作品{HOSTILE}",
                "text": MOTHER[:300] + HOSTILE + MOTHER[300:],
            }
        ],
    )
    status = check_text(
        client,
        HOSTILE + MOTHER[50:650] + HOSTILE,
        title=f"标题{HOSTILE}",
        url="http://xss.example/page?q=<script>",
    )
    sid = status["result"]["results"][0]["suspect_id"]
    # A stored suspect whose URL is a javascript: URL (crawled pages can redirect anywhere;
    # the form refuses such URLs, so it is put in through the library).
    lib = system.library
    lib.check_suspect(
        Suspect(
            id="js-url",
            text=MOTHER[100:700],
            title="js link",
            url="javascript:alert(document.cookie)",
        )
    )
    system.store.set_verdict(f"{sid}\x1fevil-work", "confirmed", f"备注{HOSTILE}")
    return {"suspect": sid, "match": f"{sid}\x1fevil-work", "status": status}


def assert_escaped(page: str, where: str) -> None:
    assert "<script>alert(1)</script>" not in page, where
    assert "<img src=x onerror" not in page, where
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, where
    assert "&lt;img src=x onerror=alert(1)&gt;" in page, where


# --- XSS ------------------------------------------------------------------------------------
def test_hostile_data_is_escaped_on_every_page(system: WebSystem, hostile: dict[str, Any]) -> None:
    client = system.client("analyst")
    mid = encode_id(hostile["match"])
    pages = {
        "dashboard": "/matches",
        "dashboard search": "/matches?q=script",
        "detail": f"/matches/{mid}",
        "suspects": "/suspects/",
        "suspect": f"/suspects/{encode_id(hostile['suspect'])}",
        "library": "/library/",
        "work": f"/library/{encode_id('evil-work')}",
        "analytics": "/analytics",
        "report": f"/exports/reports/{mid}.html",
    }
    for name, path in pages.items():
        response = client.get(path)
        assert response.status_code == 200, name
        assert_escaped(response.get_data(as_text=True), name)


def test_hostile_data_in_search_and_filters_is_escaped(
    system: WebSystem, hostile: dict[str, Any]
) -> None:
    client = system.client("viewer")
    for path in (
        f"/matches?q={XSS_IMG}",
        f"/matches?domain={XSS_IMG}",
        f"/exports/?q={XSS_IMG}",
        f"/analytics?work={XSS_IMG}",
        f"/library/?q={XSS_IMG}",
        f"/matches?min_score={XSS_IMG}",
    ):
        page = client.get(path).get_data(as_text=True)
        assert "<img src=x onerror" not in page, path


def test_job_page_escapes_titles(system: WebSystem, hostile: dict[str, Any]) -> None:
    client = system.client("analyst")
    response = client.post(
        "/suspects/new",
        data={
            "csrf_token": csrf(client, "/suspects/new"),
            "text": MOTHER[200:700],
            "title": f"任务{HOSTILE}",
        },
    )
    location = response.headers["Location"]
    from webkit import job_id_of, wait_job

    wait_job(client, job_id_of(response))
    assert_escaped(client.get(location).get_data(as_text=True), "job page")


def test_highlighted_passages_are_built_from_escaped_text(
    system: WebSystem, hostile: dict[str, Any]
) -> None:
    page = (
        system.client("viewer")
        .get(f"/matches/{encode_id(hostile['match'])}")
        .get_data(as_text=True)
    )
    marks = re.findall(r"<mark [^>]*>(.*?)</mark>", page, re.S)
    assert marks
    diff_mark = re.compile(
        r'<span class="d d-(?:homophone|variant|edit|inserted|deleted)">([^<]*)</span>'
    )
    for body in marks:
        # Only text inside a highlight, or the marks of differing characters around text.
        assert "<" not in diff_mark.sub(r"\1", body)


def test_javascript_urls_never_become_links(system: WebSystem, hostile: dict[str, Any]) -> None:
    client = system.client("viewer")
    for path in (
        "/matches?q=js link",
        "/suspects/",
        f"/suspects/{encode_id('js-url')}",
        f"/matches/{encode_id('js-url' + chr(31) + 'evil-work')}",
    ):
        page = client.get(path).get_data(as_text=True)
        assert 'href="javascript:' not in page, path
        assert "javascript:alert(document.cookie)" in page, path  # shown as text


def test_csv_export_neutralises_formulas(system: WebSystem) -> None:
    lib = system.library
    lib.check_suspect(
        Suspect(
            id="formula", text=MOTHER[:600], title='=HYPERLINK("x")', url="http://formula.example/"
        )
    )
    body = system.client("viewer").get("/exports/matches.csv?suspect=formula").data
    text = body.decode("utf-8-sig")
    assert "'=HYPERLINK" in text
    assert ",=HYPERLINK" not in text


# --- CSRF -------------------------------------------------------------------------------------
def test_forms_without_csrf_token_are_refused(system: WebSystem, hostile: dict[str, Any]) -> None:
    client = system.client("admin")
    mid = encode_id(hostile["match"])
    before = system.store.get_match(hostile["match"]).verdict
    for path, data in (
        (f"/matches/{mid}/verdict", {"verdict": "dismissed"}),
        ("/library/upload", {"text": "x" * 100}),
        ("/suspects/new", {"text": "x" * 100}),
        (f"/library/{encode_id('evil-work')}/delete", {}),
        ("/users", {"username": "mallory", "role": "admin", "password": "p" * 10}),
        ("/logout", {}),
    ):
        for token in (None, "forged-token"):
            payload = dict(data)
            if token:
                payload["csrf_token"] = token
            response = client.post(path, data=payload)
            assert response.status_code == 400, (path, token)
            assert "表单已过期" in response.get_data(as_text=True)
    assert system.store.get_match(hostile["match"]).verdict == before
    assert system.store.get_user("mallory") is None
    system.store.get_mother("evil-work")  # not deleted


def test_login_needs_csrf_token(system: WebSystem) -> None:
    client = system.client()
    client.get("/login")
    response = client.post("/login", data={"username": "alice", "password": "correct-horse-1"})
    assert response.status_code == 400


def test_api_with_session_needs_csrf_header(system: WebSystem, hostile: dict[str, Any]) -> None:
    client = system.client("analyst")
    path = f"/api/v1/matches/{encode_id(hostile['match'])}"
    response = client.patch(path, json={"note": "via session"})
    assert response.status_code == 400
    assert "CSRF" in response.get_json()["error"]
    response = client.patch(
        path, json={"note": "via session"}, headers={"X-CSRF-Token": csrf(client, "/account")}
    )
    assert response.status_code == 200
    # a bearer token carries no ambient credential: no CSRF token needed
    api = system.app.test_client()
    response = api.patch(
        path,
        json={"note": "via token"},
        headers={"Authorization": f"Bearer {system.tokens['analyst']}"},
    )
    assert response.status_code == 200


# --- headers -----------------------------------------------------------------------------------
def test_security_headers_and_no_inline_script(system: WebSystem, hostile: dict[str, Any]) -> None:
    client = system.client("viewer")
    for path in (
        "/login",
        "/matches",
        f"/matches/{encode_id(hostile['match'])}",
        "/analytics",
        "/api/v1/matches",
        "/healthz",
    ):
        response = client.get(path)
        headers = response.headers
        csp = headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in csp
        assert "'unsafe-inline'" not in csp
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Referrer-Policy"] == "no-referrer"
        assert headers["Cache-Control"] == "no-store"
        if response.mimetype == "text/html":
            page = response.get_data(as_text=True)
            # every <script> loads a file; no inline handlers in our markup
            assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", page) == []
            assert not re.search(r"\son(click|load|submit)=", page)
    static = client.get("/static/app.js")
    assert (
        static.status_code == 200 and "Cache-Control" not in static.headers
    ) or static.headers.get("Cache-Control") != "no-store"


def test_language_toggle_ignores_crafted_query(system: WebSystem, hostile: dict[str, Any]) -> None:
    client = system.client("viewer")
    mid = encode_id(hostile["match"])
    page = client.get(f"/matches/{mid}?match_id=x&_external=1&_scheme=javascript")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "javascript://" not in text
    assert f'href="/matches/{mid}?lang=en"' in text  # the route's own id wins


def test_session_cookie_flags(system: WebSystem) -> None:
    client = system.client()
    response = client.get("/login")
    cookie = response.headers.get("Set-Cookie", "")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie


# --- uploads ----------------------------------------------------------------------------------
def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _upload_job(system: WebSystem, client: Any, files: list[tuple[Any, str]]) -> dict[str, Any]:
    """Upload files to the library; the finished job's status (its page is checked too)."""
    response = client.post(
        "/library/upload",
        data={"csrf_token": csrf(client, "/library/upload"), "files": files},
        content_type="multipart/form-data",
    )
    assert response.status_code == 302, response.status_code
    status = wait_job(client, job_id_of(response))
    status["page"] = client.get(response.headers["Location"]).get_data(as_text=True)
    return status


def test_hostile_zip_paths_are_refused(system: WebSystem) -> None:
    client = system.client("analyst")
    data = _zip(
        {"../../etc/evil.txt": work(911, 5).encode(), "/abs/evil2.txt": work(912, 5).encode()}
    )
    status = _upload_job(system, client, [(io.BytesIO(data), "evil.zip")])
    assert status["state"] == "SUCCESS" and status["result"]["ingested"] == 0
    messages = [e["message"] for e in status["result"]["errors"]]
    assert len(messages) == 2 and all("unsafe path in zip" in m for m in messages)
    assert "unsafe path in zip" in status["page"]
    assert system.store.count_mothers(search="evil2") == 0
    assert not (system.settings.data_dir.parent / "etc").exists()


def test_zip_bomb_is_refused(system: WebSystem) -> None:
    client = system.client("analyst")
    data = _zip({"bomb.txt": b"a" * (8 * 1024 * 1024)})  # 8 MB of one byte: ratio > 200
    status = _upload_job(system, client, [(io.BytesIO(data), "bomb.zip")])
    assert status["result"]["ingested"] == 0
    assert "zip bomb" in status["result"]["errors"][0]["message"]
    assert "zip bomb" in status["page"]


def test_oversize_upload_is_413(system: WebSystem, monkeypatch: pytest.MonkeyPatch) -> None:
    client = system.client("analyst")
    token = csrf(client, "/library/upload")
    monkeypatch.setitem(system.app.config, "MAX_CONTENT_LENGTH", 64 * 1024)
    big = io.BytesIO(("字" * 40_000).encode())
    response = client.post(
        "/library/upload",
        data={"csrf_token": token, "files": (big, "big.txt")},
        content_type="multipart/form-data",
    )
    assert response.status_code == 413
    assert "上传内容过大" in response.get_data(as_text=True) or "too large" in response.get_data(
        as_text=True
    )
    api = system.app.test_client()
    response = api.post(
        "/api/v1/mothers",
        data={"files": (io.BytesIO(b"x" * 100_000), "b.txt")},
        headers={"Authorization": f"Bearer {system.tokens['analyst']}"},
        content_type="multipart/form-data",
    )
    assert response.status_code == 413
    assert "too large" in response.get_json()["error"]


# --- secret key -------------------------------------------------------------------------------
def test_secret_key_kept_in_data_folder(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(data_dir=tmp_path / "d")
    key = load_secret_key(settings)
    path = tmp_path / "d" / "secret_key"
    assert path.read_text().strip() == key and len(key) >= 64
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_secret_key(settings) == key  # kept across restarts
    assert load_secret_key(settings.with_(secret_key="from-env")) == "from-env"
    path.write_text("")  # an empty file (crash) is replaced
    assert len(load_secret_key(settings)) >= 64


def test_ids_in_urls_are_canonical_base64(system: WebSystem) -> None:
    from web.ids import decode_id

    for value in ("s1\x1fm1", "中文/路径?#", "a" * 300):
        assert decode_id(encode_id(value)) == value
        assert re.fullmatch(r"[A-Za-z0-9_-]+", encode_id(value))
    for bad in ("", "a", "////", "czEfbTE=", "czEfbTF", "%00"):
        with pytest.raises(ValueError):
            decode_id(bad)
    assert system.client("viewer").get("/matches/czEfbTF").status_code == 404


def test_report_stylesheet_is_allowed_by_its_csp_hash(
    system: WebSystem, hostile: dict[str, Any]
) -> None:
    import base64
    import hashlib

    response = system.client("viewer").get(f"/exports/reports/{encode_id(hostile['match'])}.html")
    page = response.get_data(as_text=True)
    css = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in response.headers["Content-Security-Policy"]
    assert "&#34;" not in css


# --- redirects after a form ------------------------------------------------------------------
# Browsers drop tabs and newlines inside URLs and read "\" as "/": each of these becomes
# another site (or, with CR/LF, a broken Location header) when echoed in a redirect.
HOSTILE_NEXT = [
    "/%09/evil.example/",
    "/%0a/evil.example/",
    "/%0d%0a/evil.example/",
    "/%0d%0aSet-Cookie:%20x=1",
    "/%5C/evil.example/",
    "//evil.example/",
    "https://evil.example/",
    "/%20/evil.example/",
    "%09//evil.example/",
]


def _assert_stays_here(response: Any, expected: str) -> None:
    assert response.status_code == 302, response.status_code
    location = response.headers["Location"]
    assert location == expected, location
    assert "evil" not in location
    assert not any(c.startswith("x=") for c in response.headers.getlist("Set-Cookie"))


@pytest.mark.parametrize("target", HOSTILE_NEXT)
def test_login_next_never_leaves_the_site(system: WebSystem, target: str) -> None:
    # Signed in: GET /login redirects at once.
    signed_in = system.client("viewer")
    _assert_stays_here(signed_in.get(f"/login?next={target}"), "/matches")
    # Signing in: the POST redirects to next.
    client = system.app.test_client()
    token = csrf(client, "/login")
    response = client.post(
        f"/login?next={target}",
        data={
            "username": "carol",
            "password": "correct-horse-1",
            "csrf_token": token,
            "next": unquote(target),
        },
    )
    _assert_stays_here(response, "/matches")


@pytest.mark.parametrize("target", HOSTILE_NEXT)
def test_verdict_next_never_leaves_the_site(
    system: WebSystem, hostile: dict[str, Any], target: str
) -> None:
    client = system.client("analyst")
    ref = encode_id(hostile["match"])
    response = client.post(
        f"/matches/{ref}/verdict",
        data={
            "csrf_token": csrf(client, "/matches"),
            "verdict": "confirmed",
            "next": unquote(target),
        },
    )
    _assert_stays_here(response, f"/matches/{ref}")


def test_a_path_on_this_site_is_kept(system: WebSystem, hostile: dict[str, Any]) -> None:
    client = system.client("analyst")
    ref = encode_id(hostile["match"])
    response = client.post(
        f"/matches/{ref}/verdict",
        data={
            "csrf_token": csrf(client, "/matches"),
            "verdict": "confirmed",
            "next": "/matches?verdict=pending&q=作品",
        },
    )
    assert unquote(response.headers["Location"]) == "/matches?verdict=pending&q=作品"
    assert system.client("viewer").get("/login?next=/analytics").headers["Location"] == "/analytics"


# --- what the server tells strangers -----------------------------------------------------------
def test_server_header_names_no_versions(system: WebSystem) -> None:
    import http.client
    import threading

    from web.cli import make_http_server

    server = make_http_server(system.app, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=10)
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        conn.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    assert response.status == 200
    header = response.getheader("Server") or ""
    assert header == "Yinji"
    assert "Werkzeug" not in header and "Python" not in header


def test_healthz_shows_no_exception_text(
    system: WebSystem, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "redis://:hunter2@10.0.0.7:6379/0 refused"

    def broken_ping() -> None:
        raise ConnectionError(secret)

    monkeypatch.setattr(system.library.redis, "ping", broken_ping)
    with caplog.at_level("ERROR"):
        response = system.app.test_client().get("/healthz")
    assert response.status_code == 503
    body = response.get_data(as_text=True)
    assert "hunter2" not in body and "ConnectionError" not in body and "10.0.0.7" not in body
    assert response.get_json() == {
        "status": "unavailable",
        "store": "ok",
        "redis": "unavailable",
        "error": "the redis does not answer; see the server log",
    }
    assert secret in caplog.text  # the operator still finds out why


# --- sessions and sign-in throttling --------------------------------------------------------------
def test_session_cookie_is_dead_after_logout(system: WebSystem) -> None:
    client = system.client("viewer")
    assert client.get("/matches").status_code == 200
    stolen = client.get_cookie("yinji_session")
    assert stolen is not None
    copy = system.app.test_client()
    copy.set_cookie("yinji_session", stolen.value)
    assert copy.get("/matches").status_code == 200  # a copy works while signed in
    response = client.post("/logout", data={"csrf_token": csrf(client, "/matches")})
    assert response.status_code == 302
    # The copy made before signing out is refused: the session ended on the server.
    response = copy.get("/matches")
    assert response.status_code == 302 and "/login" in response.headers["Location"]
    assert copy.get("/api/v1/matches").status_code == 401
    # Another session of the same user goes on.
    other = system.client("viewer")
    assert other.get("/matches").status_code == 200


def test_junk_names_cannot_flush_the_throttle() -> None:
    from web.security import LoginThrottle

    throttle = LoginThrottle()
    for _ in range(10):
        throttle.failed("203.0.113.5", "alice")
    assert throttle.blocked("198.51.100.1", "Alice")  # the name, from any address
    # A spray of 20,000 junk names from many addresses fills the table many times over.
    for i in range(20_000):
        throttle.failed(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}", f"junk-{i}")
    assert throttle.blocked("198.51.100.1", "alice")  # the target's counter survived
    assert len(throttle._names) <= throttle.max_entries
    assert len(throttle._addresses) <= throttle.max_entries
    throttle.succeeded("203.0.113.5", "alice")
    assert not throttle.blocked("198.51.100.1", "alice")


def test_one_address_spraying_names_is_throttled() -> None:
    from web.security import LoginThrottle

    throttle = LoginThrottle(address_limit=50)
    for i in range(50):
        assert not throttle.blocked("192.0.2.7", f"name-{i}")
        throttle.failed("192.0.2.7", f"name-{i}")
    assert throttle.blocked("192.0.2.7", "a-new-name")
    assert not throttle.blocked("192.0.2.8", "a-new-name")


def test_throttle_survives_a_flood_through_the_web(system: WebSystem) -> None:
    from web.security import LoginThrottle

    small = LoginThrottle(max_entries=20)
    system.app.extensions["yinji.throttle"] = small
    try:
        client = system.app.test_client()
        token = csrf(client, "/login")

        def attempt(name: str, address: str) -> int:
            return client.post(
                "/login",
                data={"username": name, "password": "wrong-one", "csrf_token": token},
                environ_base={"REMOTE_ADDR": address},
            ).status_code

        for _ in range(10):
            assert attempt("carol", "203.0.113.9") == 401
        for i in range(60):  # three times the table, one name and address each
            assert attempt(f"junk{i}", f"198.51.100.{i}") == 401
        assert attempt("carol", "192.0.2.1") == 429
    finally:
        system.app.extensions["yinji.throttle"] = LoginThrottle()


# --- 413 names the limit that was passed ----------------------------------------------------------
def test_413_names_the_limit_that_was_passed(
    system: WebSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = system.client("analyst")
    token = csrf(client, "/suspects/new")
    monkeypatch.setitem(system.app.config, "MAX_FORM_MEMORY_SIZE", 16 * 1024)
    # A pasted text over the form-field limit, far below the request limit (200 MB).
    response = client.post(
        "/suspects/new?lang=en",
        data={"csrf_token": token, "text": "字" * 20_000},
        content_type="multipart/form-data",
    )
    assert response.status_code == 413
    page = response.get_data(as_text=True)
    assert "pasted text or form field is over its limit of 16 KB" in page
    assert "200 MB" not in page
    # Too many files at once: the parts limit, named.
    monkeypatch.setitem(system.app.config, "MAX_FORM_PARTS", 30)
    response = client.post(
        "/library/upload?lang=en",
        data={
            "csrf_token": token,
            "files": [(io.BytesIO(b"text"), f"f{i}.txt") for i in range(40)],
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 413
    assert "too many files or fields in one form: at most 30" in response.get_data(as_text=True)
    # Over the request limit: that limit, in the page's language.
    monkeypatch.setitem(system.app.config, "MAX_CONTENT_LENGTH", 64 * 1024)
    response = client.post(
        "/library/upload?lang=zh",
        data={"csrf_token": token, "files": (io.BytesIO(b"x" * 100_000), "big.txt")},
        content_type="multipart/form-data",
    )
    assert response.status_code == 413
    assert "每次请求最多 64 KB" in response.get_data(as_text=True)
    assert not (system.settings.data_dir / "uploads").exists() or not any(
        (system.settings.data_dir / "uploads").iterdir()
    )
