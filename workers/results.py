"""What a finished job's result is, by its kind, made of its tasks' results
(``workers.status`` collects them), and how the job page sums it up (``job_summary``).
The shapes are in ``workers.jobs``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from tracker.common.records import JSONObject, JSONValue


class Passed(TypedDict):
    """An item a job passed over or failed on: what it was, and why."""

    source: str
    message: str


@dataclass
class Node:
    """A job's tasks, or one task with its fan-out, as ``job_status`` found them: their
    state and progress, the results of those finished (``leaves``) and the failures."""

    state: str
    done: int
    total: int
    ready: bool
    leaves: list[dict[str, Any]] = field(default_factory=list)  # results of finished tasks
    failures: list[dict[str, str]] = field(default_factory=list)  # task_id, label, error
    retry_error: str | None = None


class SummaryRow(TypedDict):
    """One checked suspect on the job page."""

    suspect_id: str | None
    title: str
    url: str
    matches: int
    warnings: list[dict[str, Any]]


class JobSummary(TypedDict, total=False):
    """A finished job's result as the job page shows it (empty before it finished)."""

    rows: list[SummaryRow]
    errors: list[Passed]
    skipped: list[Passed]
    problems: list[Passed]
    checked: int
    matches: int
    with_matches: int
    warned: int
    books: list[dict[str, Any]]
    chapters: int
    warnings: list[str]


def check_result(node: Node, passed_over: list[Passed]) -> JSONObject:
    """A check job's result (the shape is in ``workers.jobs``)."""
    return _check_result(node, passed_over)


def _check_result(node: Node, passed_over: list[Passed]) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = [
        {"source": s.get("source"), "reason": s.get("message")} for s in passed_over
    ]
    errors: list[dict[str, Any]] = []
    for leaf in node.leaves:
        if isinstance(leaf.get("results"), list):  # check_texts
            results.extend(leaf["results"])
            errors.extend(leaf.get("errors") or [])
        elif "url" in leaf and "skipped" in leaf:  # crawl_url
            if leaf.get("error"):
                errors.append({"source": leaf["url"], "error": leaf["error"]})
            elif leaf.get("skipped"):
                skipped.append(
                    {
                        "source": leaf["url"],
                        "url": leaf["url"],
                        "final_url": leaf.get("final_url"),
                        "reason": leaf["skipped"],
                    }
                )
            else:
                results.append({k: leaf.get(k) for k in ("suspect_id", "title", "url", "matches")})
        else:  # check_suspect
            results.append(leaf)
    for f in node.failures:
        errors.append({"source": f["label"] or f["task_id"], "error": f["error"]})
    return {"results": results, "skipped": skipped, "errors": errors}


def watch_result(node: Node, passed_over: list[Passed]) -> JSONObject:
    """The first crawl of a watch-list item as a check job's result (``results``: the
    pages checked, a book's chapters; ``errors``; ``skipped``), so its job page counts
    what was checked and found; a book's report (``crawl_book``: ``index_url``,
    ``pages_fetched``, ``chapters``, ``case_id`` …) is kept beside them, and ``pages``
    says how many pages were fetched."""
    books = [leaf for leaf in node.leaves if isinstance(leaf.get("chapters"), list)]
    refused = [
        leaf
        for leaf in node.leaves
        if "chapters" not in leaf and "skipped" not in leaf and leaf.get("error")
    ]
    pages = [leaf for leaf in node.leaves if leaf not in books and leaf not in refused]
    out = _check_result(
        Node(node.state, node.done, node.total, node.ready, pages, node.failures),
        passed_over,
    )
    fetched = sum(1 for leaf in pages if leaf.get("status") is not None)
    for book in books:
        out.update({k: v for k, v in book.items() if k not in ("total", "results", "errors")})
        fetched += int(book.get("pages_fetched") or 0)
        for ch in book["chapters"]:
            if not isinstance(ch, dict):
                continue
            if ch.get("suspect_id"):
                out["results"].append(
                    {k: ch.get(k) for k in ("suspect_id", "title", "url", "matches")}
                )
            if ch.get("error"):
                out["errors"].append({"source": ch.get("url") or "", "error": ch["error"]})
    for leaf in refused:  # a book whose index cannot be read
        out["errors"].append({"source": leaf.get("url") or "", "error": leaf["error"]})
    out["pages"] = fetched
    return out


def ingest_result(node: Node, passed_over: list[Passed]) -> JSONObject:
    """An ingest job's result: its tasks' counts added up, their errors, warnings and
    books (``workers.book_uploads``) one after the other."""
    out: dict[str, Any] = {
        "ingested": 0,
        "replaced": 0,
        "characters": 0,
        "seconds": 0.0,
        "skipped": [{"source": s.get("source"), "message": s.get("message")} for s in passed_over],
        "errors": [],
        "warnings": [],
        "books": [],
    }
    for leaf in node.leaves:
        for key in ("ingested", "replaced", "characters"):
            out[key] += int(leaf.get(key) or 0)
        out["seconds"] = round(out["seconds"] + float(leaf.get("seconds") or 0.0), 3)
        out["errors"].extend(leaf.get("errors") or [])
        out["warnings"].extend(w for w in leaf.get("warnings") or [] if isinstance(w, str))
        out["books"].extend(b for b in leaf.get("books") or [] if isinstance(b, dict))
    out["errors"].extend({"source": f["label"], "message": f["error"]} for f in node.failures)
    return out


def rebuild_result(node: Node) -> JSONObject:
    """A fanned-out rebuild: what its load put in the index (``engine``, ``mothers``,
    ``seconds`` of the load), and over its chunks ``chunks``, ``refilled`` (mothers
    whose fingerprints were found or made) and ``computed`` (made from their text)."""
    chunks = [leaf for leaf in node.leaves if "lo" in leaf and "hi" in leaf]
    loads = [leaf for leaf in node.leaves if "lo" not in leaf and "seconds" in leaf]
    out: dict[str, Any] = {
        "engine": loads[0]["engine"] if loads else (chunks[0]["engine"] if chunks else None),
        "mothers": int(loads[0]["mothers"]) if loads else 0,
        "seconds": float(loads[0]["seconds"]) if loads else 0.0,
        "chunks": len(chunks),
        "refilled": sum(int(c.get("mothers") or 0) for c in chunks),
        "computed": sum(int(c.get("computed") or 0) for c in chunks),
        "errors": [{"source": f["label"], "error": f["error"]} for f in node.failures],
    }
    return out


def strip(result: Mapping[str, JSONValue]) -> JSONObject:
    """A task's result without its ``total`` (a count for the progress only)."""
    return {k: v for k, v in result.items() if k != "total"}


PAGE_KINDS = ("ingest", "check", "recheck", "rebuild")


def job_kind(status: Mapping[str, object], hint: str = "") -> str:
    """``ingest``, ``check``, ``recheck`` or ``rebuild``: the kind the job was submitted as, else
    what its result shows, else ``hint`` when it is one of them, else ""."""
    if status.get("kind") in PAGE_KINDS:
        return str(status["kind"])
    result = status.get("result")
    if isinstance(result, dict):
        if "ingested" in result:
            return "ingest"
        if "rechecked" in result:
            return "recheck"
        if "refilled" in result and "chunks" in result:
            return "rebuild"
        if "results" in result:
            return "check"
    return hint if hint in PAGE_KINDS else ""


def _problems(entries: object) -> list[Passed]:
    """Error or skipped entries of any kind of job as ``{"source", "message"}``."""
    return [
        {
            "source": str(e.get("source") or e.get("url") or ""),
            "message": str(e.get("error") or e.get("message") or e.get("reason") or ""),
        }
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict)
    ]


def job_summary(status: Mapping[str, object]) -> JobSummary:
    """A finished job's result as the job page shows it: one row per checked suspect
    with its match count, the items that failed (``errors``) and those passed over
    (``skipped``), each ``{"source", "message"}``, for checks and imports alike."""
    result = status.get("result")
    if not isinstance(result, dict):
        return {}
    rows: list[SummaryRow] = []
    for item in result.get("results") or []:
        if not isinstance(item, dict):
            continue
        matches = item.get("matches")
        count = len(matches) if isinstance(matches, list) else int(matches or 0)
        warnings = item.get("warnings")
        rows.append(
            {
                "suspect_id": item.get("suspect_id"),
                "title": item.get("title") or "",
                "url": item.get("url") or "",
                "matches": count,
                # not Chinese (tracker.text.noise.ScriptWarning.to_json): shown, never silent
                "warnings": [w for w in warnings if isinstance(w, dict)]
                if isinstance(warnings, list)
                else [],
            }
        )
    errors = _problems(result.get("errors"))
    skipped = _problems(result.get("skipped"))
    books = [b for b in result.get("books") or [] if isinstance(b, dict)]
    return {
        "books": books,
        "chapters": sum(int(b.get("chapters") or 0) for b in books),
        "warnings": [w for w in result.get("warnings") or [] if isinstance(w, str)],
        "rows": rows,
        "errors": errors,
        "skipped": skipped,
        "problems": errors + skipped,
        "checked": len(rows),
        "matches": sum(r["matches"] for r in rows),
        "with_matches": sum(1 for r in rows if r["matches"]),
        "warned": sum(1 for r in rows if r["warnings"]),
    }
