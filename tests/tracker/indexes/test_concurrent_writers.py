"""Two writers of one library at once, each interleaving forced with events: after both
finish, the index holds exactly the postings of the store's current fingerprints, and
every current mother is found (``tests/support/storecheck.py``).

The bad interleavings are those of the edition registry (``tracker.indexes.editions``):
a copy of a work chooses the work's group (its postings found by a lookup) while
another writer replaces the work, the group's last member, and removes its postings."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from storecheck import orphan_seqs, postings_match_the_store, unfound
from textgen import work

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import open_store

WAIT = 60.0  # seconds an event may take before the test gives up (it never should)
TEXT = work(3000, 20)


def _open(tmp_path: Path, redis: Any) -> Library:
    s = Settings(data_dir=tmp_path, redis_prefix="cw")
    return Library(s, open_store(s), redis)


@pytest.fixture()
def libs(tmp_path: Path, redis_client: Any):
    pair = [_open(tmp_path, redis_client) for _ in range(2)]
    yield pair
    for lib in pair:
        lib.store.close()


class Thread(threading.Thread):
    """A writer in a thread of its own; its error raised again by ``result``."""

    def __init__(self, run: Callable[[], object]) -> None:
        super().__init__(daemon=True)
        self._run = run
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # handed to the test
            self.error = exc

    def result(self) -> None:
        self.join(WAIT)
        assert not self.is_alive(), "the writer hangs"
        if self.error is not None:
            raise self.error


def _wait(event: threading.Event) -> None:
    if not event.wait(WAIT):
        raise TimeoutError("the other writer never got there")


def _pause_register(lib: Library, go: threading.Event, *, after: bool = False) -> threading.Event:
    """Pause ``lib``'s next edition registration until ``go``: its new mothers' groups
    chosen from a lookup of the index, not yet registered (``after``: registered, their
    postings not yet written). Returns the event set when the writer got there."""
    editions = lib.engine().index.editions
    assert editions is not None
    real = editions.register
    arrived = threading.Event()

    def register(items, groups):
        if not after:
            arrived.set()
            _wait(go)
        got = real(items, groups)
        if after:
            arrived.set()
            _wait(go)
        return got

    editions.register = register  # type: ignore[method-assign]
    return arrived


def test_a_copy_choosing_a_group_whose_last_member_is_being_removed_stays_indexed(libs):
    """A chooses the work's group for its copy; B replaces the work (the group's last
    member leaves: its postings are to go); A registers and writes the copy's postings;
    then B removes the work's postings. The copy must still be found."""
    a, b = libs
    a.ingest([Document(id="work", text=TEXT)])
    left, a_done = threading.Event(), threading.Event()
    chose = _pause_register(a, left)
    editions = b.engine().index.editions
    real_leave = editions.leave

    def leave(seq):
        got = real_leave(seq)
        left.set()  # the work is out of its group; its postings are not removed yet
        _wait(a_done)
        return got

    editions.leave = leave  # type: ignore[method-assign]

    def copy() -> None:
        try:
            a.ingest([Document(id="copy", text=TEXT)])
        finally:
            a_done.set()

    writer_a = Thread(copy)
    writer_a.start()
    _wait(chose)
    writer_b = Thread(lambda: b.ingest([Document(id="work", text=work(3001, 20))]))
    writer_b.start()
    writer_a.result()
    writer_b.result()
    assert unfound(a) == []
    assert postings_match_the_store(a) and orphan_seqs(a) == set()


def test_a_copy_joining_a_group_that_died_meanwhile_leaves_no_orphans(libs):
    """A chooses the work's group for its copy; B replaces the work and removes its
    postings; then A registers the copy. Joining would bring the dead group back (with
    the replaced work as a member): the copy's postings would outlive the copy."""
    a, b = libs
    a.ingest([Document(id="work", text=TEXT)])
    go = threading.Event()
    chose = _pause_register(a, go)
    writer_a = Thread(lambda: a.ingest([Document(id="copy", text=TEXT)]))
    writer_a.start()
    _wait(chose)
    b.ingest([Document(id="work", text=work(3001, 20))])
    go.set()
    writer_a.result()
    assert unfound(a) == []
    assert postings_match_the_store(a)
    assert a.delete_mother("copy")
    assert orphan_seqs(a) == set() and postings_match_the_store(a)
    assert unfound(a) == []


def test_a_late_add_into_a_group_that_died_is_taken_back(libs):
    """A registers its copy in the work's group, then stalls before writing its
    postings. Meanwhile B replaces the copy (it leaves the group) and the work (the
    group dies, its postings go). A's late postings land under the dead group; A finds
    the copy no longer current and takes them back: from the group it was posted in."""
    a, b = libs
    a.ingest([Document(id="work", text=TEXT)])
    go = threading.Event()
    registered = _pause_register(a, go, after=True)
    writer_a = Thread(lambda: a.ingest([Document(id="copy", text=TEXT)]))
    writer_a.start()
    _wait(registered)
    b.ingest([Document(id="copy", text=work(3002, 20))])
    b.ingest([Document(id="work", text=work(3001, 20))])
    go.set()
    writer_a.result()
    assert orphan_seqs(a) == set()
    assert postings_match_the_store(a)
    assert unfound(a) == []


# --- a writer and a delete, a repair, a rebuild ---------------------------------------------
def _started_before(lib: Library) -> None:
    """``lib`` as a writer that verified the index before the other side began (an
    ingest that was running already): it goes straight to its writes. The mark is an hour
    ahead: one of now lapses after VERIFY_INTERVAL (1 s), which a loaded machine can
    spend before the ingest's check, and a verify would then wait for the paused side."""
    lib._verified[lib.engine().name] = time.monotonic() + 3600


def test_a_delete_racing_a_replace_removes_the_version_it_deleted(libs):
    """A reads the work to delete it (seq and fingerprints); B replaces it and finishes
    its index writes; A deletes the current version, B's. B's postings must go too."""
    a, b = libs
    a.ingest([Document(id="work", text=TEXT)])
    read, go = threading.Event(), threading.Event()
    real = a.store.get_mother

    def get_mother(mother_id):
        got = real(mother_id)
        read.set()
        _wait(go)
        return got

    a.store.get_mother = get_mother  # type: ignore[method-assign]
    deleting = Thread(lambda: a.delete_mother("work"))
    deleting.start()
    _wait(read)
    b.ingest([Document(id="work", text=work(3001, 20))])
    go.set()
    deleting.result()
    assert a.store.count_mothers() == 0
    assert orphan_seqs(a) == set() and postings_match_the_store(a)


def test_a_repair_racing_a_replace_leaves_no_postings_of_the_old_version(libs):
    """A repairs a partial index (a dead writer's mark): it reads the work from the
    store, then B replaces the work and removes its old postings, then A re-adds them."""
    a, b = libs
    a.ingest([Document(id="other", text=work(3003, 20)), Document(id="work", text=TEXT)])
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that is gone: a writer killed mid-ingest
    key = a.tracker.begin_write(["daguan"])
    a.store.set_meta(key, {**a.store.get_meta(key), "pid": child.pid, "floor": 0})
    eng = a.engine()
    real, go, adding = eng.add, threading.Event(), threading.Event()

    def add(items):
        adding.set()
        _wait(go)
        return real(items)

    eng.add = add  # type: ignore[method-assign]
    a._verified.clear()
    repair = Thread(lambda: a.ensure_index(wait=0.0))
    repair.start()
    _wait(adding)
    _started_before(b)
    b.ingest([Document(id="work", text=work(3001, 20))])
    go.set()
    repair.result()
    assert any("re-added 1 mothers" in note for note in a.repairs), a.repairs
    assert orphan_seqs(a) == set() and postings_match_the_store(a)
    assert unfound(a) == []


def test_a_rebuild_racing_a_replace_leaves_no_postings_of_the_old_version(libs):
    """A rebuilds the index: it reads the stored fingerprints, then B (an ingest already
    running) replaces the work and removes its old postings, then A loads what it read."""
    a, b = libs
    a.ingest([Document(id="other", text=work(3003, 20)), Document(id="work", text=TEXT)])
    read, go = threading.Event(), threading.Event()

    def progress(done: int, total: int | None) -> None:
        if total and done > total // 2:  # loading (the first half: the refill)
            read.set()
            _wait(go)

    rebuild = Thread(lambda: a.rebuild_index(progress=progress))
    rebuild.start()
    _wait(read)
    _started_before(b)
    b.ingest([Document(id="work", text=work(3001, 20))])
    go.set()
    rebuild.result()
    assert orphan_seqs(a) == set() and postings_match_the_store(a)
    assert unfound(a) == []


def test_a_copy_added_during_a_rebuild_is_posted_once(libs):
    """A rebuild has cleared the index and not read the store yet; B (an ingest already
    running) adds a copy of a work into the empty index: a group of its own. The
    rebuild then reads the copy too: it must keep the copy's group, not post it a
    second time in the work's group (postings left behind when the copy goes)."""
    a, b = libs
    a.ingest([Document(id="work", text=TEXT)])
    cleared, go = threading.Event(), threading.Event()
    real = a.store.iter_fingerprints

    def iter_fingerprints(engine):
        cleared.set()
        _wait(go)
        yield from real(engine)

    a.store.iter_fingerprints = iter_fingerprints  # type: ignore[method-assign]
    rebuild = Thread(lambda: a.rebuild_index())
    rebuild.start()
    _wait(cleared)
    _started_before(b)
    b.ingest([Document(id="copy", text=TEXT)])
    go.set()
    rebuild.result()
    assert postings_match_the_store(a) and unfound(a) == []
    assert a.delete_mother("copy")
    assert orphan_seqs(a) == set() and postings_match_the_store(a)
