"""A rebuild in chunks: the per-mother work of ``yinji index rebuild`` spread over workers.

An index rebuild has two parts. The first is per mother: its fingerprints, read from the
store or (when none are stored, or the engine's options changed) computed from its text
and stored; this is where the CPU goes, and any process can do any range of mothers. The
second writes the index: the old one cleared and every stored fingerprint bulk loaded
(``tracker.indexes.bulk``: Redis-bound, ~1.4 us a posting, one writer under the index
lock, so more processes would not make it faster).

So a rebuild is *planned* into chunks of at most ``size`` mothers (``plan``: seq ranges,
each with its exact count of mothers), each chunk *refilled* on its own (``refill``:
idempotent, the fingerprints are upserts by seq, so a chunk killed half-way runs again from
its start and writes the same bytes), and the index is loaded once every chunk is done
(``IndexAdmin.load``). The old index answers checks until then: the new one only goes live
when every chunk is done, in the one step that always switched it (clear, bulk load and a
new sync token under the index lock). The embedded installation and ``yinji index rebuild``
run the same chunks one after the other in-process (``IndexAdmin.rebuild``); the workers
dispatch them as a Celery group and join them (``workers.tasks.index``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tracker.engines import Engine
from tracker.store import Store

Progress = Callable[[int, int | None], None]  # (done, total or None)


@dataclass(frozen=True)
class RefillChunk:
    """Mothers with seqs in ``lo..hi`` (both included): ``mothers`` of them when planned."""

    lo: int
    hi: int
    mothers: int

    @property
    def label(self) -> str:
        return f"mothers {self.lo}..{self.hi}"


@dataclass(frozen=True)
class RefillPlan:
    """A rebuild of ``engine``'s index as chunks of at most ``size`` mothers."""

    engine: str
    size: int
    chunks: list[RefillChunk]

    @property
    def mothers(self) -> int:
        return sum(c.mothers for c in self.chunks)


@dataclass(frozen=True)
class RefillDone:
    """One chunk refilled: ``mothers`` found in its range (deleted meanwhile: not
    counted), ``computed`` of them fingerprinted from their text (the rest were stored)."""

    engine: str
    lo: int
    hi: int
    mothers: int
    computed: int

    def to_dict(self) -> dict[str, int | str]:
        return {
            "engine": self.engine,
            "lo": self.lo,
            "hi": self.hi,
            "mothers": self.mothers,
            "computed": self.computed,
        }


def plan(store: Store, engine: str, size: int) -> RefillPlan:
    """The mothers stored now, as seq ranges of at most ``size`` mothers each (seqs have
    gaps where mothers were replaced or deleted: a range is cut by count, not width)."""
    if size < 1:
        raise ValueError(f"a rebuild chunk must hold at least 1 mother, got {size}")
    seqs = sorted(store.current_seqs(range(1, store.last_seq() + 1)))
    chunks = [
        RefillChunk(seqs[i], seqs[min(i + size, len(seqs)) - 1], len(seqs[i : i + size]))
        for i in range(0, len(seqs), size)
    ]
    return RefillPlan(engine, size, chunks)


def _stored_in(store: Store, engine: str, chunk: RefillChunk) -> int:
    """Mothers of seqs ``lo..hi`` with fingerprints stored for ``engine`` (two counts;
    a stale row of a deleted mother can only make it too high, and then ``load`` still
    computes what is missing)."""
    above_lo, _ = store.fingerprint_totals(engine, after_seq=chunk.lo - 1)
    above_hi, _ = store.fingerprint_totals(engine, after_seq=chunk.hi)
    return above_lo - above_hi


def refill(
    store: Store,
    eng: Engine,
    chunk: RefillChunk,
    *,
    recompute: bool = False,
    progress: Progress | None = None,
) -> RefillDone:
    """Make sure every mother of ``chunk`` has its fingerprints for ``eng`` stored:
    computed from its text where none are stored, or for all of them with ``recompute``
    (new engine options). Idempotent: run again, it writes the same bytes."""
    seqs = sorted(store.current_seqs(range(chunk.lo, chunk.hi + 1)))
    if recompute:
        missing = seqs
    elif _stored_in(store, eng.name, chunk) == len(seqs):
        missing = []  # two counts instead of a read per mother (the usual rebuild)
    else:
        missing = [s for s in seqs if store.get_fingerprints(s, eng.name) is None]
    done = len(seqs) - len(missing)
    if progress:
        progress(done, len(seqs))
    computed = 0
    for i in range(0, len(missing), 8):
        for seq, mother in sorted(store.get_mothers_by_seq(missing[i : i + 8]).items()):
            fps = eng.mother_fingerprints(mother.text)
            store.put_fingerprints(seq, eng.name, fps.tobytes())
            computed += 1
        done = len(seqs) - len(missing) + min(i + 8, len(missing))
        if progress:
            progress(done, len(seqs))
    # A mother deleted between the listing and its read is not counted.
    gone = len(missing) - computed
    return RefillDone(eng.name, chunk.lo, chunk.hi, len(seqs) - gone, computed)
