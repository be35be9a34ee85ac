"""Resharding the Daguan index through the library: every posting kept (checks answer
exactly as before), the index grows by itself during ingest, stats advise, the
index's health marks are untouched, and writes that race a reshard are not lost."""

import json

import pytest
from indexkit import guarded_writes_survive_a_reshard as _guarded_writes_survive_a_reshard
from textgen import random_edits, work

from tracker.documents.readers import Document
from tracker.indexes import inverted, keys, layout
from tracker.library import Library
from tracker.plumbing.config import Settings


@pytest.fixture()
def lib(tmp_path, redis_client):
    settings = Settings(data_dir=tmp_path, redis_prefix="t")
    from tracker.store import open_store

    library = Library(settings, open_store(settings), redis_client)
    yield library
    library.store.close()


def _answers(lib, suspects):
    out = []
    for text in suspects:
        result = lib.check_text(text)
        out.append(
            [
                (
                    m.mother_id,
                    round(m.score, 6),
                    [(p.suspect_start, p.suspect_end) for p in m.passages],
                )
                for m in result.matches
            ]
        )
    return out


def test_reshard_keeps_check_results_and_health(lib):
    mothers = [Document(id=f"w{i}", title=f"作品{i}", text=work(300 + i, 40)) for i in range(8)]
    lib.ingest(mothers)
    suspects = [
        mothers[1].text[200:1800],
        work(999, 10) + mothers[5].text[:900],
        random_edits(mothers[3].text[:1500], 0.05, seed=2),
        work(4242, 30),
    ]
    before = _answers(lib, suspects)
    assert [bool(a) for a in before] == [True, True, True, False]
    eng = lib.engine("daguan")
    stats = lib.index_stats()["engines"]["daguan"]
    for bits in (12, 7, 14):
        info = lib.reshard_index("daguan", bits)
        assert info.bucket_bits == bits == eng.index.bucket_bits
        assert _answers(lib, suspects) == before
        now = lib.index_stats()["engines"]["daguan"]
        assert now["postings"] == stats["postings"] and now["fingerprints"] == stats["fingerprints"]
        assert now["health"]["state"] == "ok"
    # Another library object (another process) picks the new layout up by itself.
    lib.reshard_index("daguan", 9)
    assert _answers(lib, suspects) == before


def test_ingest_grows_buckets_and_stats_advise(lib, monkeypatch, redis_client):
    # Small thresholds so that a small library outgrows its buckets.
    monkeypatch.setattr(inverted, "RESHARD_FIELDS", 20)  # (grow reads it there)
    monkeypatch.setattr(layout, "RESHARD_FIELDS", 20)  # (advice reads it there)
    monkeypatch.setattr(keys, "TARGET_FIELDS", 10)  # (bits_for reads it there)
    import tracker.engines.daguan as daguan

    monkeypatch.setattr(daguan, "RESHARD_FIELDS", 20)
    mothers = [Document(id=f"w{i}", title=f"作品{i}", text=work(500 + i, 40)) for i in range(6)]
    lib.ingest(mothers[:1])
    eng = lib.engine("daguan")
    first = eng.index.bucket_bits
    lib.ingest(mothers[1:], batch_size=1)
    stats = lib.index_stats()["engines"]["daguan"]
    assert eng.index.bucket_bits > first
    assert stats["fields_per_bucket"] <= 20 and not stats["needs_reshard"]
    assert [m.mother_id for m in lib.check_text(mothers[4].text[:1500]).matches] == ["w4"]
    # Shrink by hand: stats say the buckets are now too full, and how many to use.
    lib.reshard_index("daguan", keys.MIN_BITS)
    stats = lib.index_stats()["engines"]["daguan"]
    assert stats["needs_reshard"] and "reshard" in stats["advice"]
    assert stats["recommended_bucket_bits"] > keys.MIN_BITS
    json.dumps(stats)
    lib.reshard_index("daguan")  # the default: what stats recommend
    stats = lib.index_stats()["engines"]["daguan"]
    assert not stats["needs_reshard"]


def test_lost_index_is_still_detected_after_reshard(lib, redis_client):
    lib.ingest([Document(id=f"w{i}", title="t", text=work(700 + i, 30)) for i in range(3)])
    lib.reshard_index("daguan", 11)
    redis_client.flushall()  # Redis lost: buckets, layout and health marks together
    assert lib.index_health("daguan").state == "lost"


def _yinji(data_dir, *args):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_cli_reshard_and_stats_advice(tmp_path):
    data = tmp_path / "data"
    src = tmp_path / "a.txt"
    src.write_text(work(11, 60), encoding="utf-8")
    assert _yinji(data, "ingest", str(src)).returncode == 0
    suspect = tmp_path / "s.txt"
    suspect.write_text(work(11, 60)[300:2300], encoding="utf-8")
    before = _yinji(data, "check", "--json", "--no-save", str(suspect)).stdout
    assert json.loads(before.splitlines()[0])["matches"]  # the copy is found
    stats = json.loads(_yinji(data, "index", "stats").stdout)["engines"]["daguan"]
    assert stats["bucket_bits"] == keys.MIN_BITS and not stats["needs_reshard"]
    r = _yinji(data, "index", "reshard", "--bits", "12")
    assert r.returncode == 0 and "4096 buckets" in r.stderr, r.stderr
    stats = json.loads(_yinji(data, "index", "stats").stdout)["engines"]["daguan"]
    # 4,096 buckets for a few thousand fingerprints: too empty, and stats say so.
    assert stats["bucket_bits"] == 12 and stats["needs_reshard"]
    assert stats["recommended_bucket_bits"] == keys.MIN_BITS
    assert _yinji(data, "check", "--json", "--no-save", str(suspect)).stdout == before
    r = _yinji(data, "index", "reshard", "--bits", "3")
    assert r.returncode != 0 and "--bits" in r.stderr


def test_writes_during_a_reshard_are_redone_with_the_new_layout(redis_client) -> None:
    _guarded_writes_survive_a_reshard(redis_client, "race")
