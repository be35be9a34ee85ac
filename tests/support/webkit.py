"""Shared pieces of the web tests (this module holds no test of its own).

``web_system()`` makes a module-scoped fixture: one data folder, one Flask app, one
real in-process Celery worker on the embedded Redis (jobs run for real: ingest,
fingerprints, matching), users of each role. Each test module gets its own, started
and stopped around it, so modules do not depend on each other's state.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tracker.plumbing.config import Settings

PASSWORD = "correct-horse-1"
ROLE_USERS = {"admin": "alice", "analyst": "bob", "viewer": "carol"}
XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = '"><img src=x onerror=alert(1)>'

_CSRF_RE = re.compile(r'name="csrf_token" value="([^"]+)"')

# The test users' passwords are hashed at a low scrypt cost (N=1024, werkzeug's default
# is 32768): the same code (werkzeug's scrypt, each hash carrying its cost, checked by
# check_password_hash), ~5 ms a hash instead of ~115 ms. The web tests sign in some 240
# times and make some 60 users: at the default cost that was 43 s of their 127 s.
TEST_HASH_METHOD = "scrypt:1024:8:1"


def _cheap_password_hashes() -> None:
    from werkzeug.security import generate_password_hash

    from web import accounts

    accounts.generate_password_hash = functools.partial(
        generate_password_hash, method=TEST_HASH_METHOD
    )
    # An unknown name is checked against this hash: as long as a wrong password, still.
    accounts._DUMMY_HASH = generate_password_hash(
        "not-a-real-password-yinji", method=TEST_HASH_METHOD
    )


_cheap_password_hashes()


@dataclass
class WebSystem:
    settings: Settings
    app: Flask
    tokens: dict[str, str] = field(default_factory=dict)  # role -> API token

    @property
    def library(self) -> Any:
        return self.app.extensions["yinji"].library

    @property
    def store(self) -> Any:
        return self.library.store

    def client(self, role: str | None = None) -> FlaskClient:
        """A test client, signed in as the user of ``role`` (None: anonymous)."""
        client = self.app.test_client()
        if role is not None:
            login(client, ROLE_USERS[role], PASSWORD)
        return client


def csrf(client: FlaskClient, path: str = "/login") -> str:
    """The session's CSRF token, read from a page's form."""
    response = client.get(path)
    found = _CSRF_RE.search(response.get_data(as_text=True))
    assert found, f"no CSRF field on {path} ({response.status_code})"
    return found.group(1)


def login(client: FlaskClient, username: str, password: str) -> Any:
    token = csrf(client, "/login")
    response = client.post(
        "/login", data={"username": username, "password": password, "csrf_token": token}
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    return response


def job_id_of(response: Any) -> str:
    location = response.headers["Location"]
    return location.split("/jobs/")[1].split("?")[0]


def wait_job(
    client: FlaskClient, job_id: str, timeout: float = 120.0, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """Poll ``/api/v1/jobs/<id>`` until the job has finished."""
    deadline = time.monotonic() + timeout
    while True:
        status = client.get(f"/api/v1/jobs/{job_id}", headers=headers or {}).get_json()
        if status.get("state") in ("SUCCESS", "FAILURE"):
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} not finished after {timeout} s: {status}")
        time.sleep(0.03)


def start_system(data_dir: Path, **changes: Any) -> WebSystem:
    """``changes``: other ``Settings`` fields (``allow_private_urls=True`` lets the
    worker's crawler fetch the test's local servers)."""
    from workerkit import start_inprocess_worker

    from web import accounts, create_app

    settings = Settings(data_dir=data_dir, **changes)
    app = create_app(settings, testing=True)
    start_inprocess_worker(settings)
    system = WebSystem(settings=settings, app=app)
    for role, name in ROLE_USERS.items():
        system.tokens[role] = accounts.create_user(system.store, name, role, PASSWORD)
    return system


def stop_system(system: WebSystem) -> None:
    """Stop the worker, close the libraries and stop the embedded Redis server."""
    from web.cli import shutdown

    shutdown(system.app, system.settings)


# For a module whose jobs crawl the test's local sites: no pause between two requests to
# one host (a second by default; the crawler's own tests hold the pause).
NO_CRAWL_PAUSE = {"YINJI_CRAWL_MIN_INTERVAL": "0"}


def web_system(
    *, env: dict[str, str] | None = None, **changes: Any
) -> Callable[..., Iterator[WebSystem]]:
    """A module-scoped ``system`` fixture (assign it to a name in the test module);
    ``changes`` are ``Settings`` fields (see ``start_system``), ``env`` environment
    variables set while the module runs (the worker's settings, read from it)."""

    @pytest.fixture(scope="module")
    def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebSystem]:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in (env or {}).items():
                patch.setenv(name, value)
            s = start_system(tmp_path_factory.mktemp("web") / "data", **changes)
            try:
                yield s
            finally:
                stop_system(s)

    return system


def ingest(client: FlaskClient, documents: list[dict[str, Any]]) -> dict[str, Any]:
    """Import works through the upload page (a .jsonl file) and wait for the job."""
    import io
    import json

    body = "\n".join(json.dumps(d, ensure_ascii=False) for d in documents).encode("utf-8")
    response = client.post(
        "/library/upload",
        data={
            "csrf_token": csrf(client, "/library/upload"),
            "files": (io.BytesIO(body), "works.jsonl"),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    status = wait_job(client, job_id_of(response))
    assert status["state"] == "SUCCESS", status
    return status


def check_text(client: FlaskClient, text: str, title: str = "", url: str = "") -> dict[str, Any]:
    """Submit one pasted suspect text and wait for the check."""
    response = client.post(
        "/suspects/new",
        data={
            "csrf_token": csrf(client, "/suspects/new"),
            "text": text,
            "title": title,
            "url": url,
        },
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    status = wait_job(client, job_id_of(response))
    assert status["state"] == "SUCCESS", status
    return status
