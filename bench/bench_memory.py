"""Memory under hostile sizes (issue 25): how much a hostile JSON body and a hostile
.jsonl line add to the process that receives them, before (a baseline tree, default
``main``) and after (this tree), in one run.

Each case runs in a fresh subprocess per tree (``PYTHONPATH`` = the tree), which
builds the input first, notes its peak RSS, feeds the input to the code under test
and reports how much the peak RSS grew (``ru_maxrss``) and what the code answered:

- ``json-body``: a JSON body of ``--body-mb`` MB (137, the red team's) POSTed to
  ``/api/v1/mothers`` of the Flask app (test client, an analyst token), and one of
  31 MB, just under the default limit;
- ``jsonl-line``: a ``.jsonl`` file of one ``--line-mb`` MB line (250) read by
  ``tracker.documents.readers.read_path``, and one of 60 MB, just under the default limit.

    python bench/bench_memory.py [--baseline main] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, publish

CASE = r"""
import json, os, resource, sys, tempfile, time
from pathlib import Path

def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

case, size_mb, work = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
if case == "json-body":
    from tracker.plumbing.config import Settings
    from web import accounts, create_app
    settings = Settings(data_dir=work / "data")
    app = create_app(settings, testing=True)
    store = app.extensions["yinji"].library.store
    token = accounts.create_user(store, "bench", "analyst", "bench-pass-1")
    client = app.test_client()
    # one work whose text fills the body: what a careless or hostile client sends
    text = "盗" * (size_mb * 1024 * 1024 // 3)
    body = json.dumps({"documents": [{"id": "big", "text": text}]}, ensure_ascii=False).encode()
    del text
    before = peak_mb()
    t = time.perf_counter()
    response = client.post("/api/v1/mothers", data=body, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    seconds = time.perf_counter() - t
    answer = f"{response.status_code} {response.get_data(as_text=True).strip()[:160]}"
else:
    from tracker.documents.readers import read_path
    path = work / "big.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('{"id": "big", "text": "')
        chunk = "a" * (1024 * 1024)
        for _ in range(size_mb):
            fh.write(chunk)
        fh.write('"}\n{"id": "small", "text": "一个正常的小作品"}\n')
    before = peak_mb()
    t = time.perf_counter()
    items = list(read_path(path))
    seconds = time.perf_counter() - t
    answer = "; ".join(str(getattr(i, "message", None) or f"document {i.id}")[:120] for i in items)
print(json.dumps({"added_mb": round(peak_mb() - before), "base_mb": round(before),
                  "seconds": round(seconds, 2), "answer": answer}))
"""


def export(ref: str, into: Path) -> Path:
    """The tree of git ``ref`` exported (read only) into ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
    ).stdout
    tar = into / "tree.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as tf:
        tf.extractall(into / "tree", filter="data")
    tar.unlink()
    return into / "tree"


def run_case(tree: Path, case: str, size_mb: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="yinji-mem-") as work:
        env = {**os.environ, "PYTHONPATH": str(tree), "YINJI_DATA_DIR": str(Path(work) / "data")}
        out = subprocess.run(
            [sys.executable, "-c", CASE, case, str(size_mb), work],
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
            cwd=work,
        )
    if out.returncode != 0:
        return {"added_mb": None, "answer": f"failed: {out.stderr.strip()[-300:]}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="main", help="git ref measured as 'before'")
    parser.add_argument("--body-mb", type=int, default=137)
    parser.add_argument("--line-mb", type=int, default=250)
    parser.add_argument("--write", action="store_true", help="write docs/BENCHMARKS.md")
    args = parser.parse_args()
    started = time.time()
    rows = []
    with tempfile.TemporaryDirectory(prefix="yinji-base-") as tmp:
        trees = {f"before ({args.baseline})": export(args.baseline, Path(tmp)), "after": ROOT}
        cases = [
            ("json-body", args.body_mb),
            ("json-body", 31),  # just under the default limit: what an accepted body costs
            ("jsonl-line", args.line_mb),
            ("jsonl-line", 60),  # just under the default line limit
        ]
        for case, size in cases:
            for label, tree in trees.items():
                r = run_case(tree, case, size)
                rows.append(
                    f"| {case} ({size} MB) | {label} | {r['added_mb']} MB | "
                    f"{r.get('seconds', '-')} s | {r['answer'].replace('|', '/')} |"
                )
                print(rows[-1], flush=True)
    table = [
        "| input | code | peak RSS added | time | answer |",
        "|---|---|---|---|---|",
        *rows,
    ]
    publish("Memory under hostile sizes", "bench_memory.py", table, started, args.write)


if __name__ == "__main__":
    main()
