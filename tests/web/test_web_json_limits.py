"""Memory under hostile sizes (issue 25): a JSON body is refused by its size before it
is read (by Content-Length, or as soon as a chunked body passes the limit), and a body
of too many objects and lists before it is parsed; the limit is YINJI_MAX_JSON_MB."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tracker.plumbing.config import MIB, Settings, WebSettings
from web.jsonbody import MAX_CONTAINERS, read_limited


class _CountingStream(io.RawIOBase):
    """A body of ``size`` bytes that counts what the app read of it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.read_bytes

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.read_bytes  # werkzeug's test client asks where it is; it stays

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.size - self.read_bytes)
        buffer[:n] = b" " * n
        self.read_bytes += n
        return n


@pytest.fixture()
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, dict[str, str]]]:
    from web import accounts, create_app

    monkeypatch.delenv("YINJI_MAX_JSON_MB", raising=False)
    settings = Settings(data_dir=tmp_path / "data")
    app = create_app(settings, testing=True, web_settings=WebSettings(max_json_mb=1))
    store = app.extensions["yinji"].library.store
    token = accounts.create_user(store, "ana", "analyst", "correct-horse-1")
    yield app, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    from web.cli import shutdown

    shutdown(app, app.extensions["yinji"].settings)


def test_a_body_over_the_limit_is_refused_unread(api: tuple[Any, dict[str, str]]) -> None:
    app, headers = api
    body = _CountingStream(50 * MIB)
    response = app.test_client().post(
        "/api/v1/mothers",
        input_stream=body,
        headers=headers,
        environ_overrides={"CONTENT_LENGTH": str(body.size)},
    )
    assert response.status_code == 413
    message = response.get_json()["error"]
    assert "1 MB allowed (YINJI_MAX_JSON_MB)" in message and "52,428,800 bytes" in message
    assert body.read_bytes == 0  # nothing of it was read


def test_a_chunked_body_is_cut_at_the_limit(api: tuple[Any, dict[str, str]]) -> None:
    app, headers = api
    body = _CountingStream(50 * MIB)  # no Content-Length: "Transfer-Encoding: chunked"
    response = app.test_client().post(
        "/api/v1/mothers",
        input_stream=body,
        headers=headers,
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert response.status_code == 413
    assert "1 MB allowed" in response.get_json()["error"]
    assert body.read_bytes <= MIB + 1  # read up to the limit, not to the end
    stream = _CountingStream(50 * MIB)
    assert read_limited(stream, MIB) is None
    assert stream.read_bytes <= MIB + 1
    assert read_limited(io.BytesIO(b'{"a": 1}'), MIB) == b'{"a": 1}'


def test_too_many_containers_are_refused_before_parsing(api: tuple[Any, dict[str, str]]) -> None:
    app, headers = api
    body = b"[" + b",".join([b"[]"] * (MAX_CONTAINERS + 1)) + b"]"
    assert len(body) < MIB
    response = app.test_client().post("/api/v1/mothers", data=body, headers=headers)
    assert response.status_code == 413
    assert "objects and lists" in response.get_json()["error"]


def test_a_body_within_the_limit_is_read(api: tuple[Any, dict[str, str]]) -> None:
    app, headers = api
    text = "正文" * 100_000  # 600 kB of UTF-8
    body = json.dumps({"documents": [{"id": "w", "text": text}]}, ensure_ascii=False)
    response = app.test_client().post("/api/v1/mothers", data=body.encode(), headers=headers)
    assert response.status_code == 202, response.get_json()
    assert response.get_json()["documents"] == 1
