"""A rebuild in chunks (``tracker.indexes.refill``, ``IndexAdmin.rebuild``): the same
index, byte for byte, as the one-step load that the rebuild was before; chunks cut by
count across seq gaps; a chunk interrupted half-way and run again counts its mothers once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from textgen import homophones, work

from tracker.documents.readers import Document
from tracker.indexes.refill import RefillChunk
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import Suspect, open_store


@pytest.fixture()
def lib(tmp_path: Any, redis_client: Any) -> Iterator[Library]:
    settings = Settings(data_dir=tmp_path, redis_prefix="t")
    library = Library(settings, open_store(settings), redis_client)
    yield library
    library.store.close()


def _library(lib: Library) -> list[Document]:
    """13 works: 10 distinct, an identical second edition, a homophone edition (same
    fingerprints: grouped as one text by the index) and one work replaced (a seq gap)."""
    docs = [Document(id=f"w{i}", title=f"作品{i}", text=work(300 + i, 50)) for i in range(10)]
    docs.append(Document(id="w0-second", title="作品0 再版", text=docs[0].text))
    docs.append(Document(id="w1-homophones", title="作品1 谐音", text=homophones(docs[1].text)))
    docs.append(Document(id="w2-new", title="作品2", text=work(302, 50)))
    assert lib.ingest(docs).ingested == len(docs)
    assert lib.ingest([Document(id="w5", title="作品5 修订", text=work(777, 50))]).replaced == 1
    return docs


def _dump(lib: Library) -> dict[bytes, dict[bytes, bytes]]:
    """Every key of the daguan index (buckets, edition registry, layout) but its version."""
    idx = lib.engine("daguan").index  # type: ignore[attr-defined]
    out = {}
    for key in lib.redis.scan_iter(match=f"{idx.prefix}:*", count=1000):
        if not key.endswith(b":version"):
            out[key] = lib.redis.hgetall(key)
    return out


def _answers(lib: Library, docs: list[Document]) -> list[list[tuple[str, float]]]:
    out = []
    for i, doc in enumerate(docs[:4]):
        copy = work(900 + i, 10) + doc.text[300:900] + work(950 + i, 10)
        res = lib.check_suspect(Suspect(id=f"s{i}", title="", text=copy), save=False)
        out.append(sorted((m.mother_id, round(m.score, 6)) for m in res.matches))
    return out


def test_a_chunked_rebuild_makes_the_one_step_rebuilds_index(lib: Library) -> None:
    docs = _library(lib)
    lib.indexes.load("daguan")  # the rebuild as it was: one step, no chunks
    reference, answers = _dump(lib), _answers(lib, docs)
    assert any(k.endswith(b":ed:groups") for k in reference)  # the editions were grouped
    assert all(a for a in answers)
    # Some mothers lost their stored fingerprints: the chunks compute them again.
    seqs = sorted(lib.store.current_seqs(range(1, lib.store.last_seq() + 1)))
    lost = seqs[1::4]
    conn = lib.store._conn()  # type: ignore[attr-defined]
    conn.executemany("DELETE FROM fingerprints WHERE seq = ?", [(s,) for s in lost])
    conn.commit()
    seen: list[tuple[int, int | None]] = []
    info = lib.indexes.rebuild("daguan", chunk=3, progress=lambda d, t: seen.append((d, t)))
    assert info.mothers == len(seqs) == 13
    assert _dump(lib) == reference
    assert _answers(lib, docs) == answers
    # Progress: every mother twice (fingerprints, load), never backwards, to the end.
    assert seen[-1] == (26, 26) and all(t == 26 for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert [d for d, _ in seen[:5]] == [3, 6, 9, 12, 13]  # one step a chunk of 3
    assert all(lib.store.get_fingerprints(s, "daguan") is not None for s in lost)


def test_chunks_are_cut_by_count_across_seq_gaps(lib: Library) -> None:
    _library(lib)
    seqs = sorted(lib.store.current_seqs(range(1, lib.store.last_seq() + 1)))
    assert len(seqs) == 13 and seqs[-1] == 14  # w5's first version left a gap
    plan = lib.indexes.plan_rebuild("daguan", 4)
    assert [c.mothers for c in plan.chunks] == [4, 4, 4, 1]
    assert plan.mothers == lib.store.count_mothers() == 13
    covered = [s for c in plan.chunks for s in seqs if c.lo <= s <= c.hi]
    assert covered == seqs  # every mother in exactly one chunk
    with pytest.raises(ValueError, match="at least 1"):
        lib.indexes.plan_rebuild("daguan", 0)


def test_a_chunk_stopped_half_way_runs_again_and_counts_once(lib: Library) -> None:
    docs = _library(lib)
    plan = lib.indexes.plan_rebuild("daguan", 13)
    (chunk,) = plan.chunks
    calls = 0

    def dies(done: int, total: int | None) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:  # after the first 8 of 13 were written
            raise KeyboardInterrupt("killed")

    with pytest.raises(KeyboardInterrupt):
        lib.indexes.refill("daguan", chunk, recompute=True, progress=dies)
    again = lib.indexes.refill("daguan", chunk, recompute=True)
    assert (again.mothers, again.computed) == (13, 13)
    eng = lib.engine("daguan")
    by_id = {d.id: d for d in docs}
    for mother in lib.store.iter_mothers():
        want = eng.mother_fingerprints(mother.text)
        if mother.id in by_id:
            assert mother.text == by_id[mother.id].text or mother.id == "w5"
        got = np.frombuffer(lib.store.get_fingerprints(mother.seq, "daguan") or b"", np.uint64)
        assert np.array_equal(got, want)
    # A chunk whose mothers all have fingerprints computes nothing.
    stored = lib.indexes.refill("daguan", RefillChunk(chunk.lo, chunk.hi, 13))
    assert (stored.mothers, stored.computed) == (13, 0)
