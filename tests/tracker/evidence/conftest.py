"""Fixtures of the evidence tests: a local RFC 3161 TSA (tests/tsa_server.py), and the
evidence log on each backend (sqlite in a temp folder; MongoDB on mongomock)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tsa_server import TestTSA, TSAServer

from tracker.evidence.keys import SigningKey
from tracker.evidence.log import EvidenceLog
from tracker.evidence.settings import EvidenceSettings


@pytest.fixture(scope="session")
def test_tsa() -> TestTSA:
    """Keys and certificates made once per session (RSA key generation is the slow part)."""
    return TestTSA()


@pytest.fixture()
def tsa_server(test_tsa: TestTSA) -> Iterator[TSAServer]:
    test_tsa.mode = "ok"
    server = TSAServer(test_tsa)
    try:
        yield server
    finally:
        server.close()
        test_tsa.mode = "ok"


@pytest.fixture()
def dead_url() -> str:
    """A local URL nothing listens on (the port was free a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/tsa"


class Clock:
    """A clock tests move by hand: times in records are then known exactly."""

    def __init__(self) -> None:
        self.now = datetime(2024, 11, 22, 8, 30, 5, 123000, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture()
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("YINJI_EVIDENCE_KEY", "YINJI_TSA_URL", "YINJI_TSA_CA", "YINJI_TSA_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)


def mongo_db() -> Any:
    mongomock = pytest.importorskip("mongomock")
    mock_gridfs = pytest.importorskip("mongomock.gridfs")
    mock_gridfs.enable_gridfs_integration()
    return mongomock.MongoClient()["yinji_evidence_test"]


@pytest.fixture(params=["sqlite", "mongo"])
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture()
def make_log(tmp_path: Path, backend_name: str, no_env: None) -> Iterator[Any]:
    """``make_log(**kw)`` opens the evidence log of one data folder (or one mongomock
    database) with a fixed key and a hand-moved clock; every log made is closed after."""
    key = SigningKey.generate()
    db = mongo_db() if backend_name == "mongo" else None
    opened: list[EvidenceLog] = []

    def make(**kw: Any) -> EvidenceLog:
        kw.setdefault("key", key)
        kw.setdefault("evidence", EvidenceSettings())
        clock = kw.pop("clock", Clock())
        log = EvidenceLog.open(tmp_path / "data", mongo_db=db, **kw)
        log.clock = clock
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()
