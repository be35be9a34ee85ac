"""End to end in a real headless browser: Debian's chromium driven by Playwright.

The app runs as ``yinji serve`` in a subprocess (its own in-process worker and embedded
Redis) on 127.0.0.1; a tiny local web server plays a pirate site for the URL check.
The flow: sign in, upload a library, submit suspects (pasted text, a file and a URL),
see the matches on the dashboard, open the evidence view, confirm, export CSV and PDF.
Screenshots go to ``test-artifacts/`` (gitignored).

Playwright's own browser download (``playwright install``) is not used: it fetches a
browser build, which this environment cannot. The session fixture installs Debian's
chromium with apt when it is missing and we are root.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from repo import REPO

pytestmark = pytest.mark.slow

ROOT = REPO
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
USER, PASSWORD = "admin", "e2e-password-1"
ADMIN: dict[str, str] = {}  # the admin's API token, filled by app_server
PHONE = {"width": 375, "height": 812}  # an iPhone X/11 Pro sized viewport

sys.path.insert(0, str(ROOT / "tests"))
from textgen import work  # noqa: E402

WORKS = [
    {"id": "e2e-novel", "title": "星光小镇 第三章", "text": work(8101, 24)},
    {"id": "e2e-essay", "title": "山居笔记", "text": work(8102, 24)},
    {"id": "e2e-news", "title": "本地新闻：图书馆夜间开放", "text": work(8103, 24)},
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _has_cjk_font() -> bool:
    try:
        out = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(out.stdout.strip())


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium (and a small Chinese font, so screenshots show text instead of
    empty boxes); installed with apt when missing and we are root."""
    packages = [] if Path(CHROMIUM).exists() else ["chromium"]
    if not _has_cjk_font():
        packages.append("fonts-wqy-microhei")
    if packages and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False, timeout=600)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", *packages], env=env, check=False, timeout=1200
        )
    if not Path(CHROMIUM).exists():
        pytest.skip(
            "chromium is not installed and could not be installed with apt-get "
            "(needs root and a package mirror)"
        )
    return CHROMIUM


@pytest.fixture(scope="session")
def pirate_site() -> Iterator[str]:
    """A local page that copies one of the works (the crawler may fetch 127.0.0.1
    because the server runs with YINJI_ALLOW_PRIVATE_URLS=1)."""
    body = (
        "<html><head><meta charset='utf-8'><title>免费阅读 山居笔记 全文</title></head>"
        f"<body><article><h1>山居笔记</h1><p>{WORKS[1]['text'][30:900]}</p>"
        "<p>本站所有小说均来自网络。</p></article></body></html>"
    ).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/robots.txt"):
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/book/42/chapter-1.html"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``yinji serve`` in a subprocess with a fresh data folder and an admin user."""
    from tracker.indexes.redis_client import stop_embedded_redis
    from tracker.plumbing.config import Settings

    data = tmp_path_factory.mktemp("e2e") / "data"
    env = {**os.environ, "YINJI_ALLOW_PRIVATE_URLS": "1", "PYTHONPATH": str(ROOT)}
    env.pop("YINJI_DATA_DIR", None)
    cli = [sys.executable, "-m", "tracker.cli", "--data-dir", str(data)]
    added = subprocess.run(
        [*cli, "user", "add", USER, "--role", "admin", "--password", PASSWORD],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    ADMIN["token"] = added.stdout.strip().splitlines()[-1]  # stdout is not a TTY: the token
    port = _free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    log = open(ARTIFACTS / "e2e-server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [*cli, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"yinji serve exited ({proc.returncode}); see {ARTIFACTS / 'e2e-server.log'}"
                )
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(base + "/healthz", timeout=2) as r,
            ):
                if r.status == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("yinji serve did not become healthy in 90 s")
            time.sleep(0.3)
        yield base
    finally:
        proc.send_signal(signal.SIGINT)  # the server shuts down its worker and Redis
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
        stop_embedded_redis(Settings(data_dir=data))  # a no-op when serve stopped it


@pytest.fixture()
def page(chromium: str) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        context = browser.new_context(
            accept_downloads=True, locale="zh-CN", viewport={"width": 1360, "height": 900}
        )
        pg = context.new_page()
        pg.set_default_timeout(30_000)
        pg.console_errors = []  # type: ignore[attr-defined]
        pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
        try:
            yield pg
        finally:
            context.close()
            browser.close()


def shot(page: Any, name: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")  # else the sticky bar lands mid-page
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_full_flow(page: Any, app_server: str, pirate_site: str, tmp_path: Path) -> None:
    base = app_server
    # sign in
    page.goto(base + "/matches")
    assert "/login" in page.url
    shot(page, "01-login")
    page.fill("input[name=username]", USER)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit].primary")
    page.wait_for_url(base + "/matches")

    # upload a library (a .jsonl file with three works)
    works = tmp_path / "works.jsonl"
    works.write_text("\n".join(json.dumps(w, ensure_ascii=False) for w in WORKS), encoding="utf-8")
    page.click("nav.mainnav >> text=作品库")
    page.click("text=上传作品")
    page.set_input_files("input[name=files]", str(works))
    page.click("button[type=submit].primary")
    page.wait_for_selector("text=导入 3 部作品", timeout=60_000)  # app.js reloads when done
    shot(page, "02-import-job")
    page.click("text=打开作品库")
    page.wait_for_selector("text=星光小镇 第三章")
    shot(page, "03-library")

    # submit suspects: a URL of the local "pirate site", a pasted text, a file
    suspect_file = tmp_path / "saved-page.txt"
    suspect_file.write_text("转载自网络\n" + WORKS[2]["text"][50:800], encoding="utf-8")
    page.click("nav.mainnav >> text=疑似页面")
    page.click("text=检测疑似页面")
    page.fill("textarea[name=urls]", pirate_site)
    page.fill("input[name=title]", "星光小镇 第三章 无弹窗<script>alert(1)</script>")
    page.fill("input[name=url]", "https://www.pirate-novels.example/read/3.html")
    page.fill("textarea[name=text]", "最新章节免费阅读。" + WORKS[0]["text"][100:900])
    page.set_input_files("input[name=files]", str(suspect_file))
    shot(page, "04-submit-suspects")
    page.click("button[type=submit].primary")
    page.wait_for_selector("#job-state")
    # The badge names the state in Chinese, also while the script updates it.
    assert page.inner_text("#job-state") in ("排队中", "进行中", "重试中", "已完成")
    page.wait_for_selector("#job-summary", timeout=120_000)
    assert page.inner_text("#job-heading") == "检测完成"
    shot(page, "05-check-job")
    summary = page.inner_text("#job-summary")
    assert "3 个疑似页面" in summary, summary

    # the dashboard shows the matches
    page.click("text=打开匹配列表")
    page.wait_for_selector("table.matches")
    titles = page.locator("a.suspect-title").all_inner_texts()
    assert any("无弹窗<script>" in t for t in titles), titles  # shown as text, escaped
    assert any("山居笔记" in t for t in titles), titles  # the crawled URL
    assert len(titles) >= 3
    shot(page, "06-dashboard")

    # open the evidence view of the pasted page; passages are linked across sides
    page.locator("a.suspect-title", has_text="无弹窗").first.click()
    page.wait_for_selector("#suspect-text mark.passage")
    assert page.locator("#diff-legend li").count() == 6  # same + five kinds of difference
    page.locator("#suspect-text mark.passage").first.click()
    assert "active" in (
        page.locator("#mother-text mark.passage").first.get_attribute("class") or ""
    )
    shot(page, "07-detail")

    # confirm with a note
    page.fill("textarea[name=note]", "已向平台提交下架通知")
    page.click("button.confirm")
    page.wait_for_selector(".flash-info")
    assert page.locator(".pagehead .badge.verdict-confirmed").count() == 1
    shot(page, "08-confirmed")

    # evidence report as HTML (a new tab; its CSP allows only its own stylesheet)
    with page.context.expect_page() as tab_info:
        page.click("a.button >> text=HTML")
    report = tab_info.value
    report_errors: list[str] = []
    report.on("console", lambda m: m.type == "error" and report_errors.append(m.text))
    report.wait_for_load_state()
    report.reload()  # listen from the start: a CSP violation is a console error
    report.wait_for_selector("text=侵权证据报告")
    assert (
        report.evaluate("getComputedStyle(document.querySelector('th')).borderTopStyle") == "solid"
    )  # the stylesheet applied
    report.screenshot(path=str(ARTIFACTS / "12-report-html.png"), full_page=True)
    assert report_errors == [], report_errors
    report.close()

    # evidence report as PDF (download)
    with page.expect_download() as pdf_info:
        page.click("a.button.primary >> text=PDF")
    pdf_path = ARTIFACTS / "evidence-report.pdf"
    pdf_info.value.save_as(str(pdf_path))
    assert pdf_path.read_bytes().startswith(b"%PDF")

    # export the confirmed matches as CSV (download)
    page.goto(base + "/exports/?verdict=confirmed")
    shot(page, "09-export")
    with page.expect_download() as csv_info:
        page.click("#export-csv")
    csv_path = ARTIFACTS / "matches.csv"
    csv_info.value.save_as(str(csv_path))
    exported = csv_path.read_text(encoding="utf-8-sig")
    assert "confirmed" in exported and "已向平台提交下架通知" in exported
    assert exported.count("\n") == 2  # header + the one confirmed match

    # the confirmed page is a takedown case: the board, the case, its notice preview
    page.click("nav.mainnav >> text=案件")
    page.wait_for_selector("a.case-title")
    shot(page, "13-cases")
    page.click("a.case-title")
    page.wait_for_selector("#case-urls")
    assert "www.pirate-novels.example" in page.inner_text("#case-urls")
    assert page.locator("#case-history tbody tr").count() >= 2  # created, URL added
    shot(page, "14-case")
    page.click("#notice-zh")
    page.wait_for_selector("#notice-error")  # no rights-holder profile yet: said plainly
    shot(page, "15-notice-needs-profile")

    # analytics, and the English UI
    page.goto(base + "/analytics")
    page.wait_for_selector("svg.chart")
    assert page.locator("#removals").count() == 1
    shot(page, "10-analytics")

    page.click("text=English")
    page.wait_for_selector("text=Matches over time")
    page.goto(base + "/matches")
    shot(page, "11-dashboard-en")

    # no script errors and no CSP violations on any page
    assert page.console_errors == [], page.console_errors


# --- phones ----------------------------------------------------------------------------------
def _api(base: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer {ADMIN['token']}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _wait_job(base: str, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        status = _api(base, "GET", f"/api/v1/jobs/{job_id}")
        if status["state"] in ("SUCCESS", "FAILURE"):
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.3)


@pytest.fixture()
def phone(chromium: str) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        context = browser.new_context(
            locale="zh-CN", viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True
        )
        pg = context.new_page()
        pg.set_default_timeout(30_000)
        try:
            yield pg
        finally:
            context.close()
            browser.close()


def _overflow(page: Any) -> dict[str, Any]:
    """How wide the page is against the screen, and the first elements sticking out."""
    return page.evaluate(
        """(width) => {
          const out = [];
          for (const el of document.querySelectorAll('body *')) {
            const r = el.getBoundingClientRect();
            if (r.right > width + 0.5 && r.width > 0) {
              out.push(el.tagName.toLowerCase() + (el.className ? '.' + el.className : '') +
                       ' right=' + Math.round(r.right));
            }
          }
          return {scrollWidth: document.scrollingElement.scrollWidth,
                  innerWidth: window.innerWidth,
                  offenders: out.slice(0, 8)};
        }""",
        PHONE["width"],
    )


def test_every_page_fits_a_phone(phone: Any, app_server: str, tmp_path: Path) -> None:
    """At 375 px no page scrolls sideways: the navigation and the user menu fit the
    header, and wide tables scroll inside their card."""
    base = app_server
    # A library and a checked suspect of its own, through the API.
    job = _api(
        base,
        "POST",
        "/api/v1/mothers",
        {
            "documents": [
                {
                    "id": "phone-work",
                    "title": "手机上看的一部很长很长的作品标题",
                    "text": work(8201, 20),
                }
            ]
        },
    )
    _wait_job(base, job["job_id"])
    job = _api(
        base,
        "POST",
        "/api/v1/checks",
        {
            "texts": [
                {
                    "title": "盗版页面：手机上看的一部很长很长的作品标题 第一章 无弹窗 全文阅读",
                    "url": "https://www.a-very-long-pirate-domain-name.example/book/12345/chapter-1.html",
                    "text": "最新章节。" + work(8201, 20)[20:700],
                }
            ]
        },
    )
    checked = _wait_job(base, job["job_id"])
    suspect_id = checked["result"]["results"][0]["suspect_id"]
    match = _api(base, "GET", f"/api/v1/matches?suspect={suspect_id}&passages=0")["matches"][0]
    # Confirmed through the API: the long-named pirate site's page becomes a case.
    confirmed = _api(
        base, "PATCH", f"/api/v1/matches/{match['ref']}", {"verdict": "confirmed", "note": "确认"}
    )
    case_id = confirmed["case_id"]
    assert case_id

    page = phone
    page.goto(base + "/login")
    page.fill("input[name=username]", USER)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit].primary")
    page.wait_for_url(base + "/matches")
    # A rights-holder profile (admin), so that the notice pages show a notice.
    page.goto(base + "/cases/profile")
    for name, value in {
        "name": "手机测试出版有限公司 Phone Test Publishing Co., Ltd.",
        "contact": "版权部",
        "email": "rights@phone-test-publishing.example",
        "address": "北京市海淀区中关村大街一号 一座 十层 No. 1 Zhongguancun Street",
    }.items():
        page.fill(f"#profile-form [name={name}]", value)
    page.click("#profile-form button[type=submit]")
    page.wait_for_selector(".flash-info")
    pages = {
        "dashboard": "/matches",
        "detail": f"/matches/{match['ref']}",
        "library": "/library/",
        "upload": "/library/upload",
        "work": "/library/cGhvbmUtd29yaw",
        "suspects": "/suspects/",
        "submit": "/suspects/new",
        "suspect": "/suspects/" + _b64(suspect_id),
        "job": f"/jobs/{job['job_id']}",
        "analytics": "/analytics",
        "export": "/exports/",
        "users": "/users",
        "account": "/account",
        "cases": "/cases",
        "case": f"/cases/{case_id}",
        "notice": f"/cases/{case_id}/notice?notice_lang=zh",
        "profile": "/cases/profile",
        "not-found": "/no/such/page",
        # English labels are longer: the header must still fit.
        "dashboard-en": "/matches?lang=en",
        "job-en": f"/jobs/{job['job_id']}",
        "detail-en": f"/matches/{match['ref']}",
        "cases-en": "/cases",
        "case-en": f"/cases/{case_id}",
        "notice-en": f"/cases/{case_id}/notice?notice_lang=en",
    }
    problems = {}
    for name, path in pages.items():
        page.goto(base + path)
        page.wait_for_load_state("load")
        page.screenshot(path=str(ARTIFACTS / f"phone-{name}.png"), full_page=True)
        found = _overflow(page)
        # A mobile browser widens its layout viewport to fit a page that is too wide:
        # the page must fit the phone's width itself, not a zoomed-out one.
        if found["scrollWidth"] > found["innerWidth"] or found["innerWidth"] != PHONE["width"]:
            problems[name] = found
    # The navigation is usable: every link visible and at least 32 px tall to tap.
    page.goto(base + "/matches")
    for link in page.locator("nav.mainnav a").all():
        box = link.bounding_box()
        assert box is not None and box["height"] >= 32 and box["x"] >= 0, box
        assert box["x"] + box["width"] <= PHONE["width"] + 0.5, box
    # Signed out: the login page too.
    page.context.clear_cookies()
    page.goto(base + "/login")
    page.screenshot(path=str(ARTIFACTS / "phone-login.png"), full_page=True)
    found = _overflow(page)
    if found["scrollWidth"] > found["innerWidth"]:
        problems["login"] = found
    assert problems == {}, problems


def _b64(value: str) -> str:
    import base64

    return base64.urlsafe_b64encode(value.encode()).rstrip(b"=").decode()


@pytest.mark.slow
def test_match_buttons_and_passages_reachable_on_a_phone(phone: Any, app_server: str) -> None:
    """At 375 px (narrower than the 390 px of the issue) the match list's 确认/排除
    buttons and every column of the evidence view's passage table are on screen: no
    sideways scrolling, not even inside a card."""
    base = app_server
    job = _api(
        base,
        "POST",
        "/api/v1/mothers",
        {"documents": [{"id": "phone-buttons", "title": "按钮测试作品", "text": work(8301, 20)}]},
    )
    _wait_job(base, job["job_id"])
    job = _api(
        base,
        "POST",
        "/api/v1/checks",
        {
            "texts": [
                {
                    "title": "很长很长的盗版页面标题 第一章 无弹窗 全文免费阅读 最新章节",
                    "url": "https://www.another-very-long-pirate-domain.example/book/99/1.html",
                    "text": "广告。" + work(8301, 20)[30:900],
                }
            ]
        },
    )
    suspect_id = _wait_job(base, job["job_id"])["result"]["results"][0]["suspect_id"]
    match = _api(base, "GET", f"/api/v1/matches?suspect={suspect_id}&passages=0")["matches"][0]
    page = phone
    page.goto(base + "/login")
    page.fill("input[name=username]", USER)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit].primary")
    page.wait_for_url(base + "/matches")
    page.goto(base + "/matches?verdict=pending")
    buttons = page.locator("table.matches button.confirm, table.matches button.dismiss").all()
    assert buttons
    for button in buttons:
        box = button.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    wide = page.evaluate(
        "() => [...document.querySelectorAll('.card, .scroll')]"
        ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.className)"
    )
    assert wide == []
    page.goto(base + f"/matches/{match['ref']}")
    cells = page.locator("table.passages td.sim-chars").all()
    assert cells
    for cell in cells:
        box = cell.bounding_box()
        assert box is not None and box["x"] + box["width"] <= PHONE["width"]
    wide = page.evaluate(
        "() => [...document.querySelectorAll('.card, .scroll')]"
        ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.className)"
    )
    assert wide == []
    page.screenshot(path=str(ARTIFACTS / "phone-passages.png"), full_page=True)
