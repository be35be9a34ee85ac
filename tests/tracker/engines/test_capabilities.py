"""Engine capabilities are declared (``tracker.engines.capabilities``) and the library
asks for them by type: daguan has all four, simhash and minhash none, and a library on
either of those still ingests, checks and rebuilds (the add path), while the commands
that need a capability refuse by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from textgen import work

from tracker.documents.readers import Document
from tracker.engines import make_engine
from tracker.engines.capabilities import BulkLoading, CandidateOptions, Growable, LocalCopies
from tracker.library import Library
from tracker.plumbing.config import Settings

CAPABILITIES = (LocalCopies, Growable, BulkLoading, CandidateOptions)


def test_daguan_declares_every_capability(redis_client: object) -> None:
    eng = make_engine("daguan", redis_client, "caps")
    assert [isinstance(eng, c) for c in CAPABILITIES] == [True] * 4


@pytest.mark.parametrize("name", ["simhash", "minhash"])
def test_other_engines_declare_none(redis_client: object, name: str) -> None:
    eng = make_engine(name, redis_client, "caps")
    assert [isinstance(eng, c) for c in CAPABILITIES] == [False] * 4


def test_library_without_capabilities_ingests_checks_and_refuses_by_name(
    data_dir: Path,
) -> None:
    copied = work(7, 60)
    with Library.open(Settings(data_dir=data_dir, engine="simhash")) as lib:
        report = lib.ingest([Document(id=f"w{i}", text=work(i, 60)) for i in range(8)])
        assert (report.ingested, report.errors) == (8, [])
        assert lib.rebuild_index("simhash").mothers == 8
        assert [m.mother_id for m in lib.check_text(copied).matches] == ["w7"]
        with pytest.raises(ValueError, match="simhash index has no buckets to reshard"):
            lib.reshard_index("simhash")
        with pytest.raises(ValueError, match="simhash index has no local copies"):
            lib.snapshot_index("simhash")
        assert "snapshot" not in lib.index_stats()["engines"]["simhash"]
