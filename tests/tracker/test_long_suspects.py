"""Huge suspects (issue 10): checked in windows with bounded memory, the same matches as
unwindowed, and a maximum size that is the item's error everywhere."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import pytest
from textgen import homophones, random_edits, work
from webkit import csrf, web_system

from tracker.documents.readers import Document, DocumentError
from tracker.library import Library
from tracker.matching.longtext import SuspectTooLarge, suspect_size_problem, windows
from tracker.matching.matcher import Matcher
from tracker.plumbing.config import SettingError, Settings
from tracker.store import open_store

WINDOW, OVERLAP = 12_000, 2_000
system = web_system(max_suspect_chars=2_000)  # the web app's fixture, a small limit


@pytest.fixture()
def lib(tmp_path, redis_client):
    settings = Settings(data_dir=tmp_path, redis_prefix="t")
    library = Library(settings, open_store(settings), redis_client)
    yield library
    library.store.close()


def _mothers() -> list[Document]:
    # m4 is longer than a window: its whole copy is one passage over several windows.
    return [
        Document(id=f"m{i}", title=f"作品{i}", text=work(300 + i, 700 if i == 4 else 200))
        for i in range(6)
    ]


def _suspect(mothers: list[Document]) -> str:
    """Several mothers' copies (verbatim, edited, homophones, one twice) spread over
    host text several windows long."""
    t = [m.text for m in mothers]

    def host(j: int, n: int) -> str:
        return work(9000 + j, n)

    return "".join(
        [
            host(1, 100),
            t[0][500:3500],
            host(2, 150),
            random_edits(t[1][:4000], 0.04, 1),
            host(3, 60),
            t[2],
            host(4, 120),
            homophones(t[3][1000:2500]),
            host(5, 80),
            t[4],
            host(6, 100),
            t[0][4000:6000],
            host(7, 50),
        ]
    )


def _summary(result):
    return [
        (m.mother_id, m.score, m.coverage, m.mother_coverage, [p.to_dict() for p in m.passages])
        for m in result.matches
    ]


def _cuts(text: str) -> list[int]:
    """Character offsets where one window's ownership ends and the next one's begins."""
    out = []
    for w in windows(text, size=WINDOW, overlap=OVERLAP, k=8, margin=256):
        if w.own_end - w.base < w.prepared.n:
            out.append(w.char_start + int(w.prepared.offsets[w.own_end - w.base]))
    return out


def test_windowed_matches_equal_unwindowed(lib):
    mothers = _mothers()
    lib.ingest(mothers)
    text = _suspect(mothers)
    eng = lib.engine()
    windowed = Matcher(
        lib.store, eng, policy=lib.policy, window_chars=WINDOW, window_overlap=OVERLAP
    ).match(text, suspect_id="s")
    whole = Matcher(lib.store, eng, policy=lib.policy, window_chars=10**9).match(
        text, suspect_id="s"
    )
    cuts = _cuts(text)
    assert len(cuts) >= 5
    assert {m.mother_id for m in whole.matches} == {"m0", "m1", "m2", "m3", "m4"}
    assert _summary(windowed) == _summary(whole)
    # m4's copy is one passage across several cuts (longer than a window), and other
    # passages straddle a cut too.
    (m4,) = [m for m in windowed.matches if m.mother_id == "m4"]
    (p,) = m4.passages
    assert p.suspect_end - p.suspect_start > WINDOW
    assert sum(p.suspect_start < c < p.suspect_end for c in cuts) >= 2
    straddling = [
        q
        for m in windowed.matches
        if m.mother_id != "m4"
        for q in m.passages
        if any(q.suspect_start < c < q.suspect_end for c in cuts)
    ]
    assert straddling


def test_engine_sees_one_window_at_a_time(lib):
    """Memory is bounded because no stage gets the whole text: the engine is asked
    about windows only."""
    mothers = _mothers()
    lib.ingest(mothers)
    text = _suspect(mothers)
    eng = lib.engine()
    asked: list[int] = []
    real = eng.candidates_with_evidence

    def spy(t, *, limit=20):
        asked.append(len(t))
        return real(t, limit=limit)

    eng.candidates_with_evidence = spy  # type: ignore[method-assign]
    Matcher(lib.store, eng, window_chars=WINDOW, window_overlap=OVERLAP).match(text)
    assert len(asked) >= 6 and max(asked) <= WINDOW
    assert sum(asked) < len(text) * 1.25


def test_windows_cover_text_once():
    """Ownership of initials is a partition of the text's initials, each window owning
    a middle part with context on both sides; text without Chinese stretches a window."""
    text = work(1, 600) + "x" * 5000 + work(2, 600)
    ws = list(windows(text, size=WINDOW, overlap=OVERLAP, k=8, margin=256))
    assert ws[0].own_start == 0
    for a, b in itertools.pairwise(ws):
        assert a.own_end == b.own_start
        assert a.own_end - b.base >= 256 and a.base + a.prepared.n - a.own_end >= 256
    from tracker.matching.align import prepare

    assert ws[-1].own_end == prepare(text).n


def test_too_large_suspect_is_its_own_error(tmp_path, redis_client):
    settings = Settings(data_dir=tmp_path, redis_prefix="t", max_suspect_chars=5_000)
    library = Library(settings, open_store(settings), redis_client)
    try:
        mothers = _mothers()[:2]
        library.ingest(mothers)
        big = work(7, 400)
        with pytest.raises(SuspectTooLarge, match=r"over the 5,000 allowed"):
            library.check_text(big)
        errors: list[DocumentError] = []
        docs = [
            Document(id="big", text=big, source="batch.jsonl:1"),
            Document(id="ok", text=mothers[1].text[:3000], source="batch.jsonl:2"),
        ]
        results = list(library.check(docs, save=True, errors=errors))
        assert [r.suspect.id for r in results] == ["ok"]
        assert results[0].matches[0].mother_id == "m1"
        (err,) = errors
        assert err.source == "batch.jsonl:1" and "'big'" in err.message
        assert "YINJI_MAX_SUSPECT_CHARS" in err.message
        assert library.store.count_suspects() == 1  # the refused one is not stored
    finally:
        library.store.close()


def test_size_rule_and_setting(monkeypatch):
    assert suspect_size_problem(10, 10) is None
    assert "11 characters, over the 10 allowed" in (suspect_size_problem(11, 10, "'x'") or "")
    assert Settings.from_env().max_suspect_chars == 10_000_000
    monkeypatch.setenv("YINJI_MAX_SUSPECT_CHARS", "3000000")
    assert Settings.from_env().max_suspect_chars == 3_000_000
    for bad in ("lots", "-1", "10"):
        monkeypatch.setenv("YINJI_MAX_SUSPECT_CHARS", bad)
        with pytest.raises(SettingError, match="YINJI_MAX_SUSPECT_CHARS"):
            Settings.from_env()


@pytest.mark.slow
def test_cli_check_skips_a_too_large_line(tmp_path):
    data = tmp_path / "data"
    mothers = _mothers()[:2]
    lib = tmp_path / "lib.jsonl"
    lib.write_text(
        "\n".join(json.dumps({"id": m.id, "text": m.text}, ensure_ascii=False) for m in mothers),
        encoding="utf-8",
    )
    suspects = tmp_path / "suspects.jsonl"
    lines = [
        {"id": "huge", "text": work(5, 300)},
        {"id": "copy", "text": mothers[0].text[:2000]},
    ]
    suspects.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), "utf-8")
    env = {**os.environ, "YINJI_MAX_SUSPECT_CHARS": "5000"}

    def yinji(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)

    assert yinji("ingest", str(lib)).returncode == 0
    r = yinji("check", "--json", str(suspects))
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["suspect_id"] for x in r.stdout.splitlines()] == ["copy"]
    assert "skipped " in r.stderr and "suspects.jsonl:1" in r.stderr
    assert "'huge'" in r.stderr and "over the 5,000 allowed" in r.stderr
    assert "checked 1 suspect; 1 error" in r.stderr


@pytest.mark.slow
def test_worker_reports_a_too_large_text_as_its_error(installation_factory, tmp_path):
    """Through a real worker: the too-large text is an entry of the job's errors, the
    other text of the job is checked; the task does not fail."""
    from workerkit import MOTHER, wait_job

    from workers import jobs

    inst = installation_factory(tmp_path / "yinji-data")
    inst.worker(extra={"YINJI_MAX_SUSPECT_CHARS": "1000"})
    texts = [{"id": "huge", "text": work(5, 100)}, {"id": "copy", "text": MOTHER[:300]}]
    status, _ = wait_job(jobs.submit_check(texts=texts), timeout=60)
    assert status["state"] == "SUCCESS", status
    result = status["result"]
    assert [r["suspect_id"] for r in result["results"]] == ["copy"]
    (err,) = result["errors"]
    assert err["source"] == "texts[0]"
    assert "'huge'" in err["error"] and "over the 1,000 allowed" in err["error"]


def test_web_form_refuses_a_too_large_paste(system):
    client = system.client("analyst")
    big = work(5, 100)
    response = client.post(
        "/suspects/new", data={"csrf_token": csrf(client, "/suspects/new"), "text": big}
    )
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert f"粘贴的文本有 {len(big):,} 个字符，超过允许的 2,000 个" in page


def test_api_refuses_a_too_large_text_as_its_error(system):
    client = system.app.test_client()
    headers = {"Authorization": f"Bearer {system.tokens['analyst']}"}
    big = {"id": "huge", "text": work(5, 100)}
    response = client.post("/api/v1/checks", headers=headers, json={"texts": [big]})
    assert response.status_code == 400
    assert "texts[0]" in response.get_json()["error"]
    assert "over the 2,000 allowed" in response.get_json()["error"]
    small = {"id": "small", "text": work(6, 20)}
    response = client.post("/api/v1/checks", headers=headers, json={"texts": [big, small]})
    assert response.status_code == 202
    answer = response.get_json()
    assert answer["texts"] == 1
    assert [e["source"] for e in answer["errors"]] == ["texts[0]"]
    assert "YINJI_MAX_SUSPECT_CHARS" in answer["errors"][0]["message"]


def test_recheck_skips_a_stored_suspect_over_a_lowered_limit(tmp_path, redis_client, caplog):
    """A suspect stored before YINJI_MAX_SUSPECT_CHARS was lowered: the daily re-check
    names it in the log and re-checks the others."""
    from tracker.common.records import MatchQuery
    from tracker.store import Suspect

    settings = Settings(data_dir=tmp_path, redis_prefix="t", max_suspect_chars=5_000)
    library = Library(settings, open_store(settings), redis_client)
    try:
        mothers = _mothers()[:2]
        library.ingest(mothers)
        library.store.put_suspect(Suspect(id="old-big", text=work(7, 400)))
        library.store.put_suspect(Suspect(id="ok", text=mothers[1].text[:3000]))
        assert library.recheck_suspects() == 1
        found = library.store.query_matches(MatchQuery(suspect_id="ok"))
        assert [m.mother_id for m in found] == ["m1"]
        assert "re-check skipped" in caplog.text and "'old-big'" in caplog.text
    finally:
        library.store.close()
