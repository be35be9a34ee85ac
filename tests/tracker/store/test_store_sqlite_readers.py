"""SqliteStore reads a check's candidates side by side (``get_mothers_by_seq`` on its
reader threads, one connection each): the same answer as one connection, its own view
inside a transaction, a fresh pool after a fork, nothing left open after ``close``."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

from tracker.common.records import Mother
from tracker.store.sqlite import MOTHER_READERS, SqliteStore


def _store(tmp_path: Path, n: int = 30) -> tuple[SqliteStore, list[int]]:
    store = SqliteStore(tmp_path / "store.db")
    saved = store.replace_mothers(
        [(Mother(id=f"m{i:03d}", title=f"第{i}章", text=f"正文{i}" * 50), None) for i in range(n)]
    )
    return store, [m.seq for m, _ in saved]


def test_side_by_side_reads_answer_as_one_connection(tmp_path: Path) -> None:
    store, seqs = _store(tmp_path)
    replaced, _ = store.replace_mother(Mother(id="m003", title="改", text="新版本" * 40))
    store.delete_mother("m004")
    wanted = [*seqs[:12], replaced.seq, 10_000]  # m003's old seq and m004's are stale
    threads: set[str] = set()
    one_connection = store._mothers_by_seq

    def recording(part: list[int]) -> dict[int, Mother]:
        threads.add(threading.current_thread().name)
        return one_connection(part)

    store._mothers_by_seq = recording  # type: ignore[method-assign]
    got = store.get_mothers_by_seq(wanted)
    store._mothers_by_seq = one_connection  # type: ignore[method-assign]
    expected = store._mothers_by_seq(sorted(wanted))
    assert (
        sorted(got)
        == sorted(expected)
        == sorted([s for s in seqs[:12] if s not in (seqs[3], seqs[4])] + [replaced.seq])
    )
    assert {s: (m.id, m.text) for s, m in got.items()} == {
        s: (m.id, m.text) for s, m in expected.items()
    }
    assert got[replaced.seq].text == "新版本" * 40
    # read on the reader threads, more than one (not on the caller's)
    assert 1 < len(threads) <= MOTHER_READERS
    assert all(name.startswith("yinji-store-read") for name in threads)
    store.close()


def test_inside_a_transaction_reads_its_own_view(tmp_path: Path) -> None:
    store, seqs = _store(tmp_path, 3)

    class Undo(Exception):
        pass

    with pytest.raises(Undo), store._tx() as c:
        fresh, _ = store._replace_in(c, Mother(id="new", title="t", text="未提交" * 30), None)
        got = store.get_mothers_by_seq([seqs[0], fresh.seq])
        assert got[fresh.seq].text == "未提交" * 30  # another connection could not see it
        raise Undo
    assert store.get_mothers_by_seq([seqs[0], fresh.seq]).keys() == {seqs[0]}
    store.close()


def _count_in_child(seqs: list[int], out: multiprocessing.Queue) -> None:
    out.put(len(_inherited.get_mothers_by_seq(seqs)))  # the store the parent opened


_inherited: SqliteStore


def test_a_forked_child_reads_on_its_own_threads(tmp_path: Path) -> None:
    global _inherited
    store, seqs = _store(tmp_path, 10)
    assert len(store.get_mothers_by_seq(seqs)) == 10  # the parent's pool exists now
    _inherited = store
    ctx = multiprocessing.get_context("fork")
    out: multiprocessing.Queue = ctx.Queue()
    child = ctx.Process(target=_count_in_child, args=(seqs, out))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert out.get(timeout=5) == 10
    assert len(store.get_mothers_by_seq(seqs)) == 10  # the parent's still works
    store.close()


def test_close_stops_the_readers_and_their_connections(tmp_path: Path) -> None:
    store, seqs = _store(tmp_path, 10)
    store.get_mothers_by_seq(seqs)
    pool = store._readers
    assert pool is not None
    conns = list(store._conns)
    assert len(conns) > 1
    store.close()
    with pytest.raises(RuntimeError):
        pool.submit(int)  # shut down
    for conn in conns:
        with pytest.raises(Exception, match="closed"):
            conn.execute("SELECT 1")
    with pytest.raises(RuntimeError, match="closed"):
        store.get_mothers_by_seq(seqs)
