"""Weak candidates (daguan's one-hit proposals, issue #13) are verified only where the
strong candidates leave the suspect unexplained (tracker/matching/matcher.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textgen import work

from tracker.library import Library
from tracker.plumbing.config import Settings


def test_weak_candidates_are_verified_only_where_the_suspect_is_unexplained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A weak candidate (one hit) is verified when the strong ones leave room for a copy
    in the suspect, and skipped once they explain it."""
    from tracker.engines.base import Candidate
    from tracker.library import Document

    a, b = work(31, 40), work(32, 40)
    with Library.open(Settings(data_dir=tmp_path / "data")) as lib:
        lib.ingest([Document(id="a", title="a", text=a), Document(id="b", title="b", text=b)])
        eng = lib.engine()
        seq_of = {m.id: m.seq for m in lib.store.iter_mothers()}
        real = eng.candidates_with_evidence

        def b_only_weak(text: str, *, limit: int = 20) -> list[Candidate]:
            # b as the index would propose it on one hit: weak, after the others.
            out = [c for c in real(text, limit=limit) if c.seq != seq_of["b"]]
            return [*out, Candidate(seq_of["b"], 1.0, None, None, weak=True)]

        monkeypatch.setattr(eng, "candidates_with_evidence", b_only_weak)
        fetched: list[list[int]] = []
        real_get = lib.store.get_mothers_by_seq

        def counting_get(seqs: Any) -> Any:
            seqs = list(seqs)
            fetched.append(seqs)
            return real_get(seqs)

        monkeypatch.setattr(lib.store, "get_mothers_by_seq", counting_get)
        both = lib.check_text(a[100:1300] + b[500:1100])
        assert sorted(m.mother_id for m in both.matches) == ["a", "b"]
        assert both.candidates == 2
        fetched.clear()
        only_a = lib.check_text(a[100:1300])
        assert [m.mother_id for m in only_a.matches] == ["a"]
        assert fetched == [[seq_of["a"]]] and only_a.candidates == 1  # b never read
        # Room for a copy (85 initials) left at the end: b is verified (and is no copy).
        fetched.clear()
        tail = lib.check_text(a[100:1300] + work(33, 3)[:120])
        assert [m.mother_id for m in tail.matches] == ["a"]
        assert fetched == [[seq_of["a"]], [seq_of["b"]]]
