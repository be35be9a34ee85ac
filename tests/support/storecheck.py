"""The daguan index against the store, independently of the writers: what a library's
index must hold after every writer finished (the store's current fingerprints, nothing
else). Shared by the reliability tests of concurrent writers, rebuilds and repairs."""

from __future__ import annotations

import numpy as np

from tracker.indexes.codec import is_stop, packed_seqs
from tracker.library import Library


def expected_postings(lib: Library) -> int:
    """Postings the store's current mothers make: each one's distinct fingerprints under
    the id it is posted under (its seq, or its edition group's: identical copies share
    their postings, ``tracker.indexes.editions``), each (fingerprint, id) once."""
    eng = lib.engine()
    mothers = {m.seq: m for m in lib.store.iter_mothers()}
    editions = eng.index.editions
    group = editions.group_of(sorted(mothers)) if editions is not None else {}
    posted: dict[int, set[int]] = {}
    for seq in mothers:
        blob = lib.store.get_fingerprints(seq, eng.name)
        if blob is not None:
            fps = eng.from_bytes(blob).tolist()
            posted.setdefault(group.get(seq, seq), set()).update(fps)
    return sum(len(fps) for fps in posted.values())


def postings_match_the_store(lib: Library) -> bool:
    return lib.engine().stats()["postings"] == expected_postings(lib)


def posted_ids(lib: Library) -> set[int]:
    """Every id with postings in the daguan index (a mother's seq or its edition
    group's), read from the buckets themselves."""
    index = lib.engine().index
    index.refresh()
    ids: set[int] = set()
    for key in lib.redis.scan_iter(match=f"{index.key_prefix()}*", count=1000):
        for value in lib.redis.hvals(key):
            if not is_stop(value):
                ids.update(np.frombuffer(packed_seqs(value, index.fmt), dtype="<u4").tolist())
    return ids


def orphan_seqs(lib: Library) -> set[int]:
    """Posted ids that no current mother is posted under: left behind by a writer."""
    index = lib.engine().index
    ids = posted_ids(lib)
    members = index.members(sorted(ids)) if ids else {}
    current = lib.store.current_seqs({s for group in members.values() for s in group})
    return {g for g, group in members.items() if not current.intersection(group)}


def unfound(lib: Library) -> list[str]:
    """Current mothers that a check of their own text does not find."""
    missed = []
    for mother in lib.store.iter_mothers():
        found = {m.mother_id for m in lib.check_text(mother.text).matches}
        if mother.id not in found:
            missed.append(mother.id)
    return missed
