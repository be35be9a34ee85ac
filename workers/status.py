"""Following a job: ``job_status`` reads the job's record and its tasks' states from
the result backend, following fan-out tasks (``check_urls``, ``crawl_site``, a
rebuild's chunks) down to their children, so the progress of a URL job is the share of
its URLs done, whichever workers did them; the finished job's result is made by its
kind (``workers.results``). The shapes are in ``workers.jobs``."""

from __future__ import annotations

import json
from typing import Any, NotRequired, TypedDict

from celery import Celery, states

from tracker.common.records import JSONValue
from workers.app import app_settings, get_celery
from workers.backend import TaskMeta, backend_client, job_key, report_key, task_metas
from workers.results import (
    Node,
    Passed,
    check_result,
    ingest_result,
    rebuild_result,
    strip,
    watch_result,
)

MAX_DEPTH = 4  # fan-out levels job_status follows (job -> check_urls -> crawl_url ...)
PROGRESS = "PROGRESS"  # the custom state of Task.update_state (not in celery.states)


class UnknownJob(KeyError):
    """No job (and no task) has this id, or its record expired."""


class JobPart(TypedDict):
    """One task a job fanned out, as the job page lists it (``job_parts``)."""

    label: str
    state: str
    done: int
    total: int


class JobStatus(TypedDict):
    """``job_status``: where a job stands (``workers.jobs`` has the result's shapes)."""

    id: str
    kind: str | None  # check, ingest, report, rebuild, recheck, watch, discover
    state: str  # PENDING, STARTED, PROGRESS, SUCCESS, FAILURE, RETRY
    progress: float  # 0..1
    done: int | None
    total: int | None
    result: JSONValue  # set when the job has finished
    error: str | None
    parts: NotRequired[list[JobPart]]  # a rebuild's chunks, then its load


def _error_text(exc: object) -> str:
    if isinstance(exc, BaseException):
        text = str(exc) or type(exc).__name__
        return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"
    if isinstance(exc, dict) and exc.get("exc_type"):  # an undecoded exception
        return f"{exc['exc_type']}: {exc.get('exc_message')}"
    return str(exc)


def _nodes(app: Celery, entries: list[dict[str, Any]], depth: int) -> list[Node]:
    metas = task_metas(app, [e["id"] for e in entries])
    nodes = [_node(app, e, metas[e["id"]], depth) for e in entries]
    # A task sent only after others (``after``: a rebuild's load after its chunks) that
    # never will be, because one of them failed: failed too, saying why.
    by_id = {e["id"]: n for e, n in zip(entries, nodes, strict=True)}
    for entry, node in zip(entries, nodes, strict=True):
        before = [by_id[i] for i in entry.get("after") or [] if i in by_id]
        if node.state == states.PENDING and before and all(b.ready for b in before):
            failed = [f for b in before for f in b.failures]
            if failed:
                node.state, node.ready, node.done = states.FAILURE, True, node.total
                node.failures = [
                    {
                        "task_id": entry["id"],
                        "label": entry.get("label") or "",
                        "error": f"not run: {failed[0]['label'] or failed[0]['task_id']} "
                        f"failed ({failed[0]['error']})",
                    }
                ]
    return nodes


def _combine(nodes: list[Node], own: list[dict[str, Any]] | None = None) -> Node:
    own = own or []
    ready = all(n.ready for n in nodes)
    started = bool(own) or any(n.state != states.PENDING for n in nodes)
    state = states.SUCCESS if ready else (PROGRESS if started else states.PENDING)
    return Node(
        state=state,
        done=len(own) + sum(n.done for n in nodes),
        total=len(own) + sum(n.total for n in nodes),
        ready=ready,
        leaves=own + [leaf for n in nodes for leaf in n.leaves],
        failures=[f for n in nodes for f in n.failures],
    )


def _node(app: Celery, entry: dict[str, Any], meta: TaskMeta, depth: int) -> Node:
    status = meta.get("status") or states.PENDING
    result = meta.get("result")
    hint = entry.get("total")
    if (
        status == states.SUCCESS
        and isinstance(result, dict)
        and isinstance(result.get("fanout"), list)
        and depth < MAX_DEPTH
    ):
        own = [r for r in result.get("results") or [] if isinstance(r, dict)]
        return _combine(_nodes(app, result["fanout"], depth + 1), own)
    if status == states.SUCCESS:
        total = result.get("total") if isinstance(result, dict) else None
        total = total if isinstance(total, int) and total > 0 else (hint or 1)
        leaves = [result] if isinstance(result, dict) else []
        return Node(states.SUCCESS, total, total, True, leaves=leaves)
    if status in (states.FAILURE, states.REVOKED):
        total = hint or 1
        failure = {
            "task_id": entry["id"],
            "label": entry.get("label") or "",
            "error": "cancelled" if status == states.REVOKED else _error_text(result),
        }
        return Node(states.FAILURE, total, total, True, failures=[failure])
    if status == PROGRESS and isinstance(result, dict):
        done = int(result.get("done") or 0)
        total = result.get("total") or hint or max(done, 1)
        return Node(PROGRESS, min(done, total), total, False)
    node = Node(status if status in _STATES else states.PENDING, 0, hint or 1, False)
    if status == states.RETRY:
        node.retry_error = _error_text(result)
    return node


_STATES = ("PENDING", "STARTED", "PROGRESS", "SUCCESS", "FAILURE", "RETRY")


def job_status(job_id: str) -> JobStatus:
    """The state, progress and (when finished) result of a job (``workers.jobs``)."""
    app = get_celery()
    raw = backend_client(app).get(job_key(app, job_id))
    passed_over: list[Passed] = []
    if raw is not None:
        record = json.loads(raw)
        kind, entries = record.get("kind"), record["tasks"]
        passed_over = [
            {"source": str(s.get("source") or ""), "message": str(s.get("message") or "")}
            for s in record.get("skipped") or []
            if isinstance(s, dict)
        ]
    else:
        # Not submitted through this module (a scheduled run, a child task): a task id.
        meta = task_metas(app, [job_id])[job_id]
        if meta.get("status") in (None, states.PENDING):
            raise UnknownJob(job_id)
        kind, entries = None, [{"id": job_id, "total": None, "label": ""}]
    nodes = _nodes(app, entries, 0)
    node = nodes[0] if len(nodes) == 1 else _combine(nodes)
    state = node.state
    if node.ready:
        # A rebuild with a failed chunk was not loaded: the old index still answers.
        failed = node.failures and (not node.leaves or kind == "rebuild")
        state = states.FAILURE if failed else states.SUCCESS
    result: JSONValue = None
    if state == states.SUCCESS:
        if kind == "check":
            result = check_result(node, passed_over)
        elif kind == "watch":
            result = watch_result(node, passed_over)
        elif kind == "ingest":
            result = ingest_result(node, passed_over)
        elif kind == "rebuild" and len(node.leaves) > 1:
            result = rebuild_result(node)
        elif len(node.leaves) == 1:
            result = strip(node.leaves[0])
        else:
            result = [strip(leaf) for leaf in node.leaves]
    error = node.retry_error
    if node.failures:
        first = node.failures[0]["error"]
        n = len(node.failures)
        error = first if n == 1 else f"{n} tasks failed; the first: {first}"
    total = node.total or None
    done = node.done if total is not None else None
    if node.ready:
        progress = 1.0
    else:
        progress = round(min(1.0, node.done / node.total), 4) if node.total else 0.0
    status: JobStatus = {
        "id": job_id,
        "kind": kind,
        "state": state,
        "progress": progress,
        "done": done,
        "total": total,
        "result": result,
        "error": error,
    }
    if kind == "rebuild":
        status["parts"] = job_parts(job_id)
    return status


def job_parts(job_id: str) -> list[JobPart]:
    """The tasks a job fanned out (a rebuild's chunks, then its load), in order, each
    ``{"label", "state", "done", "total"}``: what the job page lists; [] before the
    job's first task has planned them (or for a job that does not fan out)."""
    app = get_celery()
    raw = backend_client(app).get(job_key(app, job_id))
    if raw is None:
        return []
    entries = json.loads(raw)["tasks"]
    metas = task_metas(app, [e["id"] for e in entries])
    parts: list[JobPart] = []
    for entry in entries:
        meta = metas[entry["id"]]
        result = meta.get("result")
        if meta.get("status") != states.SUCCESS or not isinstance(result, dict):
            continue
        children = result.get("fanout")
        if not isinstance(children, list):
            continue
        for child, node in zip(children, _nodes(app, children, 1), strict=True):
            parts.append(
                {
                    "label": str(child.get("label") or ""),
                    "state": node.state,
                    "done": node.done,
                    "total": node.total,
                }
            )
    return parts


def report_content(job_id: str) -> tuple[bytes, str, str] | None:
    """``(bytes, content type, file name)`` of a finished report job, else None."""
    status = job_status(job_id)
    result = status["result"]
    if status["state"] != states.SUCCESS or not isinstance(result, dict):
        return None
    app = get_celery()
    data = backend_client(app).get(report_key(app_settings(app).redis_prefix, job_id))
    if data is None:
        return None
    return bytes(data), result["content_type"], result["filename"]
