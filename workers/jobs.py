"""The job API: what the CLI, the REST API and the web pages call to start background
work and to follow it. Everything in and out is JSON-shaped.

A job is one or more Celery tasks under one id. Submitting writes a job record
(``<prefix>:job:<id>`` in the result backend's Redis, kept ``YINJI_RESULT_EXPIRES``
seconds) and sends the tasks; ``job_status`` reads the record and the tasks' states,
following fan-out tasks (``check_urls``, ``crawl_site``) down to their children, so the
progress of a URL job is the share of its URLs done, whichever workers did them.

``job_status(id)`` returns::

    {"id": str, "kind": "check|ingest|report|rebuild|recheck|discover"|None (not submitted here),
     "state": "PENDING|STARTED|PROGRESS|SUCCESS|FAILURE|RETRY",
     "progress": float 0..1, "done": int|None, "total": int|None,
     "result": JSON or None (set when the job has finished), "error": str|None}

Results by kind:

- check: ``{"results": [{"suspect_id", "title", "url", "matches": [{"mother_id",
  "title", "score", "coverage", "passages": [...]}], "text_sha256", "warnings": [...],
  "noise": [...]}], "skipped": [{"source", "url"?, "final_url"?, "reason"}],
  "errors": [{"source", "error"}]}`` (a result is ``CheckResult.to_json()`` with the
  title and URL). A URL that cannot be crawled (404, robots.txt, private address) or a
  file that cannot be read is an error entry, not a failed job; ``skipped`` holds
  near-duplicate pages and what the submitter passed over (an unsupported file, a bad
  URL line).
- ingest: ``{"ingested", "replaced", "characters", "seconds", "skipped": [{"source",
  "message"}], "errors": [{"source", "message"}]}``.

Uploaded files travel as references to ``<data dir>/uploads/`` (``workers.spool``),
and job items too large for a message (``INLINE_BYTES``) are spooled the same way: a
task message stays small whatever the size of the upload.
- report: ``{"match_id", "format", "size", "content_type", "filename"}``; the bytes come
  from ``report_content(job_id)``.
- rebuild: ``{"engine", "mothers", "seconds", "chunks", "refilled", "computed",
  "errors"}``: the mothers the load put in the index (and its seconds), and over the
  chunks (``workers.tasks.index``) the mothers whose fingerprints were found or made.
- recheck: ``{"rechecked", "results": [{"case_id", "before", "after", "checks": [...]}],
  "errors": [{"source", "error"}]}`` (``tracker.cases.recheck.RecheckResult``).

``job_status`` raises ``UnknownJob`` (a ``KeyError``) for an id that was never
submitted or has expired.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from celery import Celery, states
from celery import _state as _celery_state
from celery import group as celery_group

from tracker.config import Settings
from tracker.ids import DuplicateIds
from tracker.rules import check_document_item, check_text_item, check_url
from tracker.store import utcnow
from tracker.timefmt import iso_utc
from workers.app import (
    ALERT_QUEUE,
    QUEUES,
    app_settings,
    get_celery,
    queue_for,
    worker_settings,
)
from workers.book_uploads import book_mode as check_book_mode
from workers.payloads import unique
from workers.spool import FORMATS, Spool

log = logging.getLogger(__name__)

PING_TIMEOUT = 1.0  # seconds to wait for a worker to answer ensure_worker's ping
READY_TIMEOUT = 30.0  # seconds an in-process worker may take to start consuming
MAX_DEPTH = 4  # fan-out levels job_status follows (job -> check_urls -> crawl_url ...)
PROGRESS = "PROGRESS"  # the custom state of Task.update_state (not in celery.states)
INLINE_BYTES = 256 * 1024  # job items above this size (JSON) are spooled, not sent inline
UPLOAD_TASK_FILES = 50  # uploaded files per task
UPLOAD_TASK_BYTES = 64 * 1024 * 1024  # bytes of uploaded files per task
MAX_SKIPPED = 1000  # passed-over items a job record lists


class UnknownJob(KeyError):
    """No job (and no task) has this id, or its record expired."""


# --- submitting ----------------------------------------------------------------------
def _client(app: Celery) -> Any:
    return app.backend.client


def _job_key(app: Celery, job_id: str) -> str:
    return f"{app_settings(app).redis_prefix}:job:{job_id}"


# (task name, args, kwargs, items it handles, label)
TaskSpec = tuple[str, list[Any], dict[str, Any], int, str]


def _submit(
    kind: str,
    tasks: list[TaskSpec],
    skipped: list[dict[str, str]] | None = None,
) -> str:
    """Record the job, then send its tasks ``(name, args, kwargs, total, label)``.
    ``skipped``: items the submitter passed over (``{"source", "message"}``), kept in
    the record and reported in the job's result."""
    app = get_celery()
    job_id = str(uuid.uuid4())
    entries = []
    for i, (name, args, kwargs, total, label) in enumerate(tasks):
        # A one-task job is its task: the job id is the task id.
        task_id = job_id if len(tasks) == 1 else str(uuid.uuid5(uuid.UUID(job_id), str(i)))
        entries.append(
            {
                "id": task_id,
                "name": name,
                "args": args,
                "kwargs": kwargs,
                "total": total,
                "label": label,
            }
        )
    record: dict[str, Any] = {
        "id": job_id,
        "kind": kind,
        "created": iso_utc(utcnow()),
        "tasks": [{k: e[k] for k in ("id", "name", "total", "label")} for e in entries],
    }
    if skipped:
        record["skipped"] = [
            {"source": str(s.get("source", ""))[:300], "message": str(s.get("message", ""))[:500]}
            for s in skipped[:MAX_SKIPPED]
        ]
        if len(skipped) > MAX_SKIPPED:
            record["skipped"].append(
                {"source": "…", "message": f"{len(skipped) - MAX_SKIPPED} more not listed"}
            )
    _client(app).set(
        _job_key(app, job_id), json.dumps(record), ex=worker_settings(app).result_expires
    )
    from workers.heartbeat import track_sent

    sent = [(str(e["id"]), str(e["name"]), list(e["args"]), dict(e["kwargs"])) for e in entries]  # type: ignore[call-overload]
    track_sent(app, [(i, n, a, k, queue_for(n)) for i, n, a, k in sent])
    # One Celery group: the chunks go out together and any worker takes any of them;
    # the job record above is what job_status aggregates the progress from.
    sent = celery_group(
        app.signature(e["name"], args=e["args"], kwargs=e["kwargs"]).set(task_id=e["id"])
        for e in entries
    ).apply_async()
    release(sent)
    return job_id


def release(sent: object) -> None:
    """Stop listening for the results of tasks just sent (``job_status`` reads them
    from the backend): Celery subscribes to each one's channel until its AsyncResult
    is collected, and one collected after Redis went away would try to unsubscribe
    then. Never raises."""
    for result in getattr(sent, "results", None) or [sent]:
        try:
            result.backend.remove_pending_result(result)
        except Exception as exc:
            log.debug("result %s not released: %s", getattr(result, "id", "?"), exc)


def spool() -> Spool:
    """The upload folder of the job app's data folder (``workers.spool``)."""
    return Spool(app_settings(get_celery()).data_dir)


def _inline_or_spooled(items: list[dict[str, Any]], name: str) -> list[dict[str, Any]] | dict:
    """``items`` as they go into a message: inline when small, else a reference to a
    spooled JSON Lines file (a message never carries megabytes of text)."""
    size = sum(len(json.dumps(item, ensure_ascii=False).encode("utf-8")) for item in items)
    if size <= INLINE_BYTES:
        return items
    return spool().write_items(items, name)


def _checked_uploads(uploads: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    files = spool()
    for i, ref in enumerate(uploads or []):
        files.path(ref)  # UploadError (a ValueError) for a malformed reference
        if ref.get("format") not in FORMATS or not isinstance(ref.get("sha256"), str):
            raise ValueError(f"uploads[{i}]: not an upload reference")
        out.append({k: ref[k] for k in ("upload", "sha256", "size", "name", "format")})
    return out


def _upload_groups(refs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Uploads split into tasks of at most ``UPLOAD_TASK_FILES`` files and (unless one
    file is larger) ``UPLOAD_TASK_BYTES`` bytes, so several workers share a big upload."""
    groups: list[list[dict[str, Any]]] = []
    size = 0
    for ref in refs:
        if (
            not groups
            or len(groups[-1]) >= UPLOAD_TASK_FILES
            or (size + int(ref["size"]) > UPLOAD_TASK_BYTES and groups[-1])
        ):
            groups.append([])
            size = 0
        groups[-1].append(ref)
        size += int(ref["size"])
    return groups


def _upload_label(group: list[dict[str, Any]]) -> str:
    first = str(group[0].get("name") or "upload")
    return first if len(group) == 1 else f"{first} +{len(group) - 1}"


def submit_check(
    *,
    texts: list[dict] | None = None,
    urls: list[str] | None = None,
    uploads: list[dict[str, Any]] | None = None,
    skipped: list[dict[str, str]] | None = None,
) -> str:
    """Check texts (``{id?, title?, text, url?}``), uploaded files (``workers.spool``
    references) and/or crawl and check URLs; the suspects and matches are stored.
    Raises ``ValueError`` naming the first bad item (the rules are
    ``tracker.rules.check_text_item`` and ``check_url``): callers that accept some
    items and pass over others check them first and give the others as ``skipped``."""
    refs = _checked_uploads(uploads)
    if not texts and not urls and not refs:
        raise ValueError("nothing to check: give texts, urls or files")
    texts = [check_text_item(item, f"texts[{i}]") for i, item in enumerate(texts or [])]
    urls = [check_url(url, f"urls[{i}]") for i, url in enumerate(urls or [])]
    tasks: list[TaskSpec] = []
    for first, chunk in check_chunks(texts, worker_settings(get_celery()).check_chunk):
        label = f"texts[{first}:{first + len(chunk)}]"
        payload = _inline_or_spooled(chunk, "texts.jsonl")
        if isinstance(payload, dict):  # a chunk too big for a message: its own task
            tasks.append(("yinji.check.check_uploads", [[payload]], {}, 1, label))
        else:
            tasks.append(("yinji.check.check_texts", [payload], {}, len(chunk), label))
    for group in _upload_groups(refs):
        tasks.append(("yinji.check.check_uploads", [group], {}, len(group), _upload_label(group)))
    if urls:
        urls = unique(urls)
        tasks.append(("yinji.check.check_urls", [urls], {}, len(urls), "urls"))
    return _submit("check", tasks, skipped)


CHUNK_CHARS = 1_000_000  # characters of text per check task, whatever the count


def check_chunks(
    texts: list[dict[str, Any]], size: int, chars: int = CHUNK_CHARS
) -> list[tuple[int, list[dict[str, Any]]]]:
    """``(index of the first, texts)`` chunks of at most ``size`` texts and (unless one
    text is longer) ``chars`` characters: a job of many texts becomes several tasks of
    bounded work (seconds each) that the workers share (``YINJI_CHECK_CHUNK``)."""
    out: list[tuple[int, list[dict[str, Any]]]] = []
    count = 0
    for i, item in enumerate(texts):
        n = len(str(item.get("text") or ""))
        if not out or len(out[-1][1]) >= size or (count + n > chars and out[-1][1]):
            out.append((i, []))
            count = 0
        out[-1][1].append(item)
        count += n
    return out


def submit_ingest(
    documents: list[dict] | None = None,
    *,
    uploads: list[dict[str, Any]] | None = None,
    skipped: list[dict[str, str]] | None = None,
    book_mode: str = "auto",
) -> str:
    """Add or replace mothers ``{id, title?, text, metadata?}`` and the works of
    uploaded files (``workers.spool`` references), whole books among them made books of
    chapters by ``book_mode`` (``auto``: as ``yinji ingest``, a file with two or more
    chapter headings and every .epub; ``book``: each file one book, as ``--book``;
    ``works``: one file, one work, as ``--as-works``). Big lists are split into tasks
    of ``YINJI_INGEST_CHUNK`` documents (several workers share them); an id given twice
    (after ``tracker.ids`` normalisation) is refused the second time, in the job's
    ``skipped``. Raises ``ValueError`` naming the first bad item."""
    mode = check_book_mode(book_mode)
    refs = _checked_uploads(uploads)
    if not documents and not refs:
        raise ValueError("no documents to ingest")
    docs: list[dict[str, Any]] = []
    ids = DuplicateIds()  # an id given twice: the second is refused by name, not dropped
    skipped = list(skipped or [])
    for i, d in enumerate(documents or []):
        where = f"documents[{i}]"
        doc = check_document_item(d, where)
        duplicate = ids.seen(doc["id"], where, d.get("id"))
        if duplicate is not None:
            skipped.append({"source": where, "message": duplicate})
        else:
            docs.append(dict(doc))
    size = worker_settings(get_celery()).ingest_chunk
    tasks: list[TaskSpec] = []
    for i in range(0, len(docs), size):
        chunk = docs[i : i + size]
        payload = _inline_or_spooled(chunk, f"documents-{i}.jsonl")
        if isinstance(payload, dict):
            name, args = "yinji.ingest.ingest_uploads", [[payload]]
        else:
            name, args = "yinji.ingest.ingest_batch", [payload]
        tasks.append((name, args, {}, len(chunk), f"documents {i}+"))
    for group in _upload_groups(refs):
        tasks.append(
            (
                "yinji.ingest.ingest_uploads",
                [group],
                {"book_mode": mode},
                len(group),
                _upload_label(group),
            )
        )
    return _submit("ingest", tasks, skipped)


def submit_report(match_id: str, fmt: str) -> str:
    """Build the evidence report of a match (``json``, ``html`` or ``pdf``)."""
    if not isinstance(match_id, str) or not match_id:
        raise ValueError("match_id must be a non-empty string")
    if fmt not in ("json", "html", "pdf"):
        raise ValueError(f"report format must be json, html or pdf, got {fmt!r}")
    return _submit("report", [("yinji.reports.build_report", [match_id, fmt], {}, 1, fmt)])


class RebuildRunning(RuntimeError):
    """A rebuild of this engine's index is already running (a rebuild job not finished,
    or another process holding the index lock): a second one is refused."""

    def __init__(self, engine: str, job_id: str | None = None, owner: str | None = None):
        self.engine, self.job_id, self.owner = engine, job_id, owner
        where = f"job {job_id}" if job_id else f"the index lock is held by {owner}"
        super().__init__(
            f"a rebuild of the {engine} index is already running ({where}); "
            "wait until it has finished"
        )


def _rebuild_key(app: Celery, engine: str) -> str:
    return f"{app_settings(app).redis_prefix}:rebuild-job:{engine}"


def running_rebuild(engine: str) -> str | None:
    """The id of the rebuild job of ``engine`` submitted here that has not finished
    (its chunks or its load still to run), or None."""
    app = get_celery()
    raw = _client(app).get(_rebuild_key(app, engine))
    if raw is None:
        return None
    job_id = raw.decode() if isinstance(raw, bytes) else str(raw)
    try:
        state = job_status(job_id)["state"]
    except UnknownJob:  # expired
        return None
    return None if state in (states.SUCCESS, states.FAILURE) else job_id


def submit_rebuild(
    engine: str | None = None, *, lock_owner: Callable[[], object | None] | None = None
) -> str:
    """Rebuild an engine's index from the store (default engine: ``YINJI_ENGINE``), in
    chunks that the workers share, then one load (``workers.tasks.index``).

    ``RebuildRunning`` when a rebuild of that engine is already running: a rebuild job
    submitted here not finished, or (``lock_owner``: who holds the engine's index lock,
    ``IndexLock.owner``) a process rebuilding it now (``yinji index rebuild``)."""
    from tracker.engines import ENGINES

    if engine is not None and engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    app = get_celery()
    name = engine or app_settings(app).engine
    running = running_rebuild(name)
    if running is not None:
        raise RebuildRunning(name, job_id=running)
    owner = lock_owner() if lock_owner is not None else None
    if owner is not None:
        raise RebuildRunning(name, owner=str(owner))
    job_id = _submit("rebuild", [("yinji.index.rebuild_index", [engine], {}, 1, engine or "")])
    expires = worker_settings(app).result_expires
    _client(app).set(_rebuild_key(app, name), job_id, ex=expires)
    return job_id


def submit_recheck(case_ids: list[str] | None = None) -> str:
    """Re-crawl the URLs of takedown cases now (``tracker.cases.recheck``): the given
    case ids, or (None) every case whose state asks for it, as the daily run does."""
    if case_ids is not None:
        if not isinstance(case_ids, list) or not all(
            isinstance(c, str) and c.strip() for c in case_ids
        ):
            raise ValueError("case_ids must be a list of case ids")
        case_ids = unique([c.strip() for c in case_ids])
        if not case_ids:
            raise ValueError("case_ids must name at least one case")
    total = len(case_ids) if case_ids else 1
    label = ", ".join(case_ids[:3]) if case_ids else "due cases"
    return _submit("recheck", [("yinji.cases.recheck_cases", [case_ids], {}, total, label)])


# --- following -----------------------------------------------------------------------
@dataclass
class _Node:
    state: str
    done: int
    total: int
    ready: bool
    leaves: list[dict[str, Any]] = field(default_factory=list)  # results of finished tasks
    failures: list[dict[str, Any]] = field(default_factory=list)
    retry_error: str | None = None


def _error_text(exc: Any) -> str:
    if isinstance(exc, BaseException):
        text = str(exc) or type(exc).__name__
        return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"
    if isinstance(exc, dict) and exc.get("exc_type"):  # an undecoded exception
        return f"{exc['exc_type']}: {exc.get('exc_message')}"
    return str(exc)


def _metas(app: Celery, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The backend's meta of each task (one round trip); PENDING when it has none."""
    backend = app.backend
    values = backend.mget([backend.get_key_for_task(t) for t in ids]) if ids else []
    out: dict[str, dict[str, Any]] = {}
    for task_id, value in zip(ids, values, strict=True):
        out[task_id] = (
            backend.decode_result(value)
            if value is not None
            else {"status": states.PENDING, "result": None}
        )
    return out


def _nodes(app: Celery, entries: list[dict[str, Any]], depth: int) -> list[_Node]:
    metas = _metas(app, [e["id"] for e in entries])
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


def _combine(nodes: list[_Node], own: list[dict[str, Any]] | None = None) -> _Node:
    own = own or []
    ready = all(n.ready for n in nodes)
    started = bool(own) or any(n.state != states.PENDING for n in nodes)
    state = states.SUCCESS if ready else (PROGRESS if started else states.PENDING)
    return _Node(
        state=state,
        done=len(own) + sum(n.done for n in nodes),
        total=len(own) + sum(n.total for n in nodes),
        ready=ready,
        leaves=own + [leaf for n in nodes for leaf in n.leaves],
        failures=[f for n in nodes for f in n.failures],
    )


def _node(app: Celery, entry: dict[str, Any], meta: dict[str, Any], depth: int) -> _Node:
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
        return _Node(states.SUCCESS, total, total, True, leaves=leaves)
    if status in (states.FAILURE, states.REVOKED):
        total = hint or 1
        failure = {
            "task_id": entry["id"],
            "label": entry.get("label") or "",
            "error": "cancelled" if status == states.REVOKED else _error_text(result),
        }
        return _Node(states.FAILURE, total, total, True, failures=[failure])
    if status == PROGRESS and isinstance(result, dict):
        done = int(result.get("done") or 0)
        total = result.get("total") or hint or max(done, 1)
        return _Node(PROGRESS, min(done, total), total, False)
    node = _Node(status if status in _STATES else states.PENDING, 0, hint or 1, False)
    if status == states.RETRY:
        node.retry_error = _error_text(result)
    return node


_STATES = ("PENDING", "STARTED", "PROGRESS", "SUCCESS", "FAILURE", "RETRY")


def _check_result(node: _Node, passed_over: list[dict[str, Any]]) -> dict[str, Any]:
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


def _watch_result(node: _Node, passed_over: list[dict[str, Any]]) -> dict[str, Any]:
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
        _Node(node.state, node.done, node.total, node.ready, pages, node.failures),
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


def _ingest_result(node: _Node, passed_over: list[dict[str, Any]]) -> dict[str, Any]:
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


def _rebuild_result(node: _Node) -> dict[str, Any]:
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


def _strip(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "total"}


def job_status(job_id: str) -> dict:
    """The state, progress and (when finished) result of a job; see the module doc."""
    app = get_celery()
    raw = _client(app).get(_job_key(app, job_id))
    passed_over: list[dict[str, Any]] = []
    if raw is not None:
        record = json.loads(raw)
        kind, entries = record.get("kind"), record["tasks"]
        passed_over = [s for s in record.get("skipped") or [] if isinstance(s, dict)]
    else:
        # Not submitted through this module (a scheduled run, a child task): a task id.
        meta = _metas(app, [job_id])[job_id]
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
    result: Any = None
    if state == states.SUCCESS:
        if kind == "check":
            result = _check_result(node, passed_over)
        elif kind == "watch":
            result = _watch_result(node, passed_over)
        elif kind == "ingest":
            result = _ingest_result(node, passed_over)
        elif kind == "rebuild" and len(node.leaves) > 1:
            result = _rebuild_result(node)
        elif len(node.leaves) == 1:
            result = _strip(node.leaves[0])
        else:
            result = [_strip(leaf) for leaf in node.leaves]
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
    status = {
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


class JobPart(TypedDict):
    """One task a job fanned out, as the job page lists it (``job_parts``)."""

    label: str
    state: str
    done: int
    total: int


def job_parts(job_id: str) -> list[JobPart]:
    """The tasks a job fanned out (a rebuild's chunks, then its load), in order, each
    ``{"label", "state", "done", "total"}``: what the job page lists; [] before the
    job's first task has planned them (or for a job that does not fan out)."""
    app = get_celery()
    raw = _client(app).get(_job_key(app, job_id))
    if raw is None:
        return []
    entries = json.loads(raw)["tasks"]
    metas = _metas(app, [e["id"] for e in entries])
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


def _problems(entries: Any) -> list[dict[str, str]]:
    """Error or skipped entries of any kind of job as ``{"source", "message"}``."""
    return [
        {
            "source": str(e.get("source") or e.get("url") or ""),
            "message": str(e.get("error") or e.get("message") or e.get("reason") or ""),
        }
        for e in entries or []
        if isinstance(e, dict)
    ]


def job_summary(status: dict[str, Any]) -> dict[str, Any]:
    """A finished job's result as the job page shows it: one row per checked suspect
    with its match count, the items that failed (``errors``) and those passed over
    (``skipped``), each ``{"source", "message"}``, for checks and imports alike."""
    result = status.get("result")
    if not isinstance(result, dict):
        return {}
    rows = []
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
                # not Chinese (tracker.noise.ScriptWarning.to_json): shown, never silent
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


def report_content(job_id: str) -> tuple[bytes, str, str] | None:
    """``(bytes, content type, file name)`` of a finished report job, else None."""
    from workers.tasks.reports import report_key

    status = job_status(job_id)
    result = status["result"]
    if status["state"] != states.SUCCESS or not isinstance(result, dict):
        return None
    app = get_celery()
    data = _client(app).get(report_key(app_settings(app).redis_prefix, job_id))
    if data is None:
        return None
    return bytes(data), result["content_type"], result["filename"]


# --- health -------------------------------------------------------------------------
HEALTH_TIMEOUT = 2.0  # seconds /healthz waits for the broker and the result backend


def queue_health() -> dict[str, str]:
    """``{"broker": "ok"|"unavailable", "results": "ok"|"unavailable"}``: whether the
    Celery broker and the result backend of the job app answer a PING now (each at
    most ``HEALTH_TIMEOUT`` seconds). Never raises: a broker that cannot be derived
    (``workers.app.broker_problem``) is "unavailable" too; the log has why."""
    app = get_celery()
    out = {"broker": "unavailable", "results": "unavailable"}
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=HEALTH_TIMEOUT)
            client = getattr(conn.default_channel, "client", None)
            if client is not None:
                client.ping()
        out["broker"] = "ok"
    except Exception:
        log.exception("health check: the broker does not answer")
    try:
        _client(app).ping()
        out["results"] = "ok"
    except Exception:
        log.exception("health check: the result backend does not answer")
    return out


def durability_problem() -> str | None:
    """Why a job accepted now could be lost by a crash of the Redis that holds the
    queue and the job records, or None: that Redis keeps no append-only file
    (``appendonly no``: a restart goes back to its last snapshot, and the jobs accepted
    since are gone). The embedded queue server always keeps one
    (``tracker.redis_client.QUEUE_SERVER_CONFIG``); a server of ``YINJI_REDIS_URL`` /
    ``YINJI_BROKER_URL`` needs ``appendonly yes`` (docker-compose.yml sets it). None
    too when the server does not say (INFO refused)."""
    try:
        info = _client(get_celery()).info("persistence")
    except Exception as exc:
        log.info("the broker's persistence is unknown: %s", exc)
        return None
    if str(info.get("aof_enabled", "1")) in ("0", "False"):
        return (
            "the Redis that holds the job queue keeps no append-only file (appendonly no): "
            "a crash of it loses the jobs accepted since its last snapshot; set "
            "'appendonly yes' on it (docs/WORKERS.md, Durability)"
        )
    return None


def missing_consumers() -> list[str]:
    """The queues no live worker consumes now (``workers.heartbeat.consumers``: every
    worker node says with its heartbeat which queues it reads, and a worker process
    ``yinji serve`` saw die is removed at once). Jobs sent there are kept and wait.
    Raises when the result backend does not answer."""
    from workers.heartbeat import missing_queues

    return missing_queues(get_celery(), QUEUES)


# --- a worker when there is none -----------------------------------------------------
_inprocess_lock = threading.Lock()
_inprocess: dict[str, Any] = {}


def _ping(app: Celery) -> list[Any]:
    return app.control.ping(timeout=PING_TIMEOUT) or []


def workers_answer(settings: Settings | None = None) -> bool:
    """True when some worker answers a ping (``PING_TIMEOUT``)."""
    app = get_celery()
    unset = getattr(app, "yinji_settings", None) is None and not app.configured
    if settings is not None and unset:
        app.yinji_settings = settings
    return bool(_ping(app))


def ensure_worker(settings: Settings | None = None) -> bool:
    """Make sure some worker consumes the jobs: ping the workers (``PING_TIMEOUT``) and,
    when none answers, start one in this process: two consumers in daemon threads
    (threads pool, concurrency 1 each), one for every queue but ``alerts`` and one for
    ``alerts``, so an alert receiver that is slow or down (timeouts, retries with
    backoff) never holds a check. True when it started them.

    ``settings`` apply when the job app has none yet (it reads the environment
    otherwise). For a single-process installation and the demo; production runs
    ``yinji worker`` processes.
    """
    app = get_celery()
    if settings is not None:
        if getattr(app, "yinji_settings", None) is None and not app.configured:
            app.yinji_settings = settings
        elif app_settings(app) != settings:
            log.warning("ensure_worker: the job app has other settings; using the app's")
    with _inprocess_lock:
        running = _inprocess.get("threads") or []
        if running and all(t.is_alive() for t in running):
            return False
        if _ping(app):
            return False
        # The threads pool runs each task on Celery's *default* app, not on the
        # worker's: make this app the default (as Flask's celery_init_app does), else
        # the tasks would run on an unconfigured fallback app.
        _inprocess["previous_default"] = _celery_state.default_app
        app.set_default()
        host = f"{os.getpid()}@{socket.gethostname()}"
        work_queues = [q for q in QUEUES if q != ALERT_QUEUE]
        started = [
            _start_inprocess_worker(app, f"yinji-inprocess-{host}", work_queues),
            _start_inprocess_worker(app, f"yinji-inprocess-alerts-{host}", [ALERT_QUEUE]),
        ]
        _inprocess.update(workers=[w for w, _ in started], threads=[t for _, t in started], app=app)
        return True


def _start_inprocess_worker(
    app: Celery, hostname: str, queues: list[str]
) -> tuple[Any, threading.Thread]:
    ready = threading.Event()
    # WorkController, not app.Worker: the latter installs signal handlers, which only
    # the main thread may do, and takes over logging.
    worker = app.WorkController(
        hostname=hostname,
        pool_cls="threads",
        concurrency=1,
        queues=queues,
        without_mingle=True,
        without_gossip=True,
        # No event loop: Celery keeps one per process (kombu's global hub), and two
        # consumers in one process driving the same hub from two threads break each
        # other's broker connections. Each consumer drains its own connection instead.
        use_eventloop=False,
        ready_callback=lambda consumer: ready.set(),
    )

    def run() -> None:
        try:
            worker.start()
        except Exception:  # a worker thread that dies must say why
            log.exception("in-process worker %s stopped on an error", hostname)
        finally:
            ready.set()

    thread = threading.Thread(target=run, name=f"yinji-inprocess-{queues[0]}", daemon=True)
    thread.start()
    if not ready.wait(READY_TIMEOUT) or not thread.is_alive():
        raise RuntimeError("the in-process worker did not start")
    # The pool marked the whole process as "inside a worker", where result.get() is
    # refused; the host's own threads (web requests, the CLI) are not tasks. Celery's
    # testing worker resets it the same way.
    _celery_state._set_task_join_will_block(False)
    # Its heartbeat (and orphan reaper: jobs of a crashed 'yinji serve' are re-queued
    # within a minute of this start) — app.Worker's worker_ready does it for 'yinji worker'.
    from workers.heartbeat import start_heartbeat

    start_heartbeat(app, worker.hostname, queues)
    log.info("started an in-process worker (%s: %s)", worker.hostname, ",".join(queues))
    return worker, thread


def stop_inprocess_worker(timeout: float = 10.0) -> bool:
    """Stop the workers ``ensure_worker`` started (tests, app shutdown). True if they
    stopped within ``timeout`` seconds (or none ran)."""
    with _inprocess_lock:
        workers = _inprocess.pop("workers", None) or []
        threads = _inprocess.pop("threads", None) or []
        _inprocess.pop("app", None)
        previous = _inprocess.pop("previous_default", None)
    if not workers:
        return True
    from celery.worker import state as worker_state

    from workers.heartbeat import stop_heartbeat

    # Ask each worker's own thread to stop (a warm shutdown: running tasks finish), as
    # Celery's testing worker does: its consumer loop checks this flag. Stopping it
    # from this thread instead races the loop for the reply of the pending BRPOP on
    # the broker connection, and the loser waits on the socket for ever.
    worker_state.should_stop = 0
    try:
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
    finally:
        worker_state.should_stop = None
    for worker in workers:
        stop_heartbeat(worker.hostname)
    if previous is not None:
        previous.set_default()
    return not any(t.is_alive() for t in threads)


def submit_watch(url: str, kind: str) -> str:
    """Crawl one watch-list item now with its daily task (``url``: crawl_url, ``site``:
    crawl_site, ``book``: crawl_book): the first crawl of an item added in the web app."""
    from workers.tasks.crawl import WATCH_TASKS

    if kind not in WATCH_TASKS:
        raise ValueError(f"watch kind must be one of {', '.join(WATCH_TASKS)}, got {kind!r}")
    return _submit("watch", [(WATCH_TASKS[kind], [url], {}, 1, url)])


def submit_discover(options: dict[str, Any], parts: int = 2, run_id: str | None = None) -> str:
    """A discovery run (``yinji.crawl.discover_run``, its crawl fanned out): a job of
    kind ``discover`` whose progress is the pages fetched against the run's budget."""
    label = f"discovery run {run_id}" if run_id else "discovery run"
    return _submit(
        "discover",
        [("yinji.crawl.discover_run", [options, parts], {"run_id": run_id}, 1, label)],
    )
