"""Submitting jobs: each writes a job record (``<prefix>:job:<id>`` in the result
backend's Redis, kept ``YINJI_RESULT_EXPIRES`` seconds) and sends its tasks as one
Celery group. Items are checked by ``tracker.common.rules`` first (``ValueError`` naming the
first bad one); big lists are cut into tasks the workers share; uploads travel as
``workers.spool`` references and job items too large for a message (``INLINE_BYTES``)
are spooled the same way. The shapes are in ``workers.jobs``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from celery import Celery, states
from celery import group as celery_group

from tracker.common.ids import DuplicateIds
from tracker.common.rules import check_document_item, check_text_item, check_url
from tracker.common.timefmt import iso_utc
from tracker.store import utcnow
from workers.app import WATCH_TASKS, app_settings, get_celery, queue_for, worker_settings
from workers.backend import backend_client, job_key, release
from workers.book_uploads import book_mode as check_book_mode
from workers.heartbeat import track_sent
from workers.payloads import unique
from workers.spool import FORMATS, Spool, UploadRef
from workers.status import UnknownJob, job_status

INLINE_BYTES = 256 * 1024  # job items above this size (JSON) are spooled, not sent inline
UPLOAD_TASK_FILES = 50  # uploaded files per task
UPLOAD_TASK_BYTES = 64 * 1024 * 1024  # bytes of uploaded files per task
MAX_SKIPPED = 1000  # passed-over items a job record lists

_Item = TypeVar("_Item", bound=Mapping[str, object])

# (task name, args, kwargs, items it handles, label)
TaskSpec = tuple[str, list[Any], dict[str, Any], int, str]


def _submit(
    kind: str,
    tasks: list[TaskSpec],
    skipped: Sequence[Mapping[str, str]] | None = None,
) -> str:
    """Record the job, then send its tasks ``(name, args, kwargs, total, label)``.
    ``skipped``: items the submitter passed over (``{"source", "message"}``), kept in
    the record and reported in the job's result."""
    app = get_celery()
    job_id = str(uuid.uuid4())
    entries: list[dict[str, Any]] = []
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
    backend_client(app).set(
        job_key(app, job_id), json.dumps(record), ex=worker_settings(app).result_expires
    )
    track_sent(
        app, [(e["id"], e["name"], e["args"], e["kwargs"], queue_for(e["name"])) for e in entries]
    )
    # One Celery group: the chunks go out together and any worker takes any of them;
    # the job record above is what job_status aggregates the progress from.
    sent = celery_group(
        app.signature(e["name"], args=e["args"], kwargs=e["kwargs"]).set(task_id=e["id"])
        for e in entries
    ).apply_async()
    release(sent)
    return job_id


def spool() -> Spool:
    """The upload folder of the job app's data folder (``workers.spool``)."""
    return Spool(app_settings(get_celery()).data_dir)


def _inline_or_spooled(items: list[dict[str, Any]], name: str) -> list[dict[str, Any]] | UploadRef:
    """``items`` as they go into a message: inline when small, else a reference to a
    spooled JSON Lines file (a message never carries megabytes of text)."""
    size = sum(len(json.dumps(item, ensure_ascii=False).encode("utf-8")) for item in items)
    if size <= INLINE_BYTES:
        return items
    return spool().write_items(items, name)


def _checked_uploads(uploads: Sequence[Mapping[str, object]] | None) -> list[UploadRef]:
    out: list[UploadRef] = []
    files = spool()
    for i, ref in enumerate(uploads or []):
        files.path(ref)  # UploadError (a ValueError) for a malformed reference
        fmt, sha256, size = ref.get("format"), ref.get("sha256"), ref.get("size")
        if fmt not in FORMATS or not isinstance(sha256, str) or not isinstance(size, int):
            raise ValueError(f"uploads[{i}]: not an upload reference")
        out.append(
            {
                "upload": str(ref["upload"]),
                "sha256": sha256,
                "size": size,
                "name": str(ref.get("name") or ""),
                "format": str(fmt),
            }
        )
    return out


def _upload_groups(refs: list[UploadRef]) -> list[list[UploadRef]]:
    """Uploads split into tasks of at most ``UPLOAD_TASK_FILES`` files and (unless one
    file is larger) ``UPLOAD_TASK_BYTES`` bytes, so several workers share a big upload."""
    groups: list[list[UploadRef]] = []
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


def _upload_label(group: list[UploadRef]) -> str:
    first = str(group[0].get("name") or "upload")
    return first if len(group) == 1 else f"{first} +{len(group) - 1}"


def submit_check(
    *,
    texts: Sequence[Mapping[str, object]] | None = None,
    urls: Sequence[object] | None = None,
    uploads: Sequence[Mapping[str, object]] | None = None,
    skipped: Sequence[Mapping[str, str]] | None = None,
) -> str:
    """Check texts (``{id?, title?, text, url?}``), uploaded files (``workers.spool``
    references) and/or crawl and check URLs; the suspects and matches are stored.
    Raises ``ValueError`` naming the first bad item (the rules are
    ``tracker.common.rules.check_text_item`` and ``check_url``): callers that accept some
    items and pass over others check them first and give the others as ``skipped``."""
    refs = _checked_uploads(uploads)
    if not texts and not urls and not refs:
        raise ValueError("nothing to check: give texts, urls or files")
    items = [check_text_item(item, f"texts[{i}]") for i, item in enumerate(texts or [])]
    links = [check_url(url, f"urls[{i}]") for i, url in enumerate(urls or [])]
    tasks: list[TaskSpec] = []
    for first, chunk in check_chunks(items, worker_settings(get_celery()).check_chunk):
        label = f"texts[{first}:{first + len(chunk)}]"
        payload = _inline_or_spooled(chunk, "texts.jsonl")
        if isinstance(payload, dict):  # a chunk too big for a message: its own task
            tasks.append(("yinji.check.check_uploads", [[payload]], {}, 1, label))
        else:
            tasks.append(("yinji.check.check_texts", [payload], {}, len(chunk), label))
    for group in _upload_groups(refs):
        tasks.append(("yinji.check.check_uploads", [group], {}, len(group), _upload_label(group)))
    if links:
        links = unique(links)
        tasks.append(("yinji.check.check_urls", [links], {}, len(links), "urls"))
    return _submit("check", tasks, skipped)


CHUNK_CHARS = 1_000_000  # characters of text per check task, whatever the count


def check_chunks(
    texts: Sequence[_Item], size: int, chars: int = CHUNK_CHARS
) -> list[tuple[int, list[_Item]]]:
    """``(index of the first, texts)`` chunks of at most ``size`` texts and (unless one
    text is longer) ``chars`` characters: a job of many texts becomes several tasks of
    bounded work (seconds each) that the workers share (``YINJI_CHECK_CHUNK``)."""
    out: list[tuple[int, list[_Item]]] = []
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
    documents: Sequence[Mapping[str, object]] | None = None,
    *,
    uploads: Sequence[Mapping[str, object]] | None = None,
    skipped: Sequence[Mapping[str, str]] | None = None,
    book_mode: str = "auto",
) -> str:
    """Add or replace mothers ``{id, title?, text, metadata?}`` and the works of
    uploaded files (``workers.spool`` references), whole books among them made books of
    chapters by ``book_mode`` (``auto``: as ``yinji ingest``, a file with two or more
    chapter headings and every .epub; ``book``: each file one book, as ``--book``;
    ``works``: one file, one work, as ``--as-works``). Big lists are split into tasks
    of ``YINJI_INGEST_CHUNK`` documents (several workers share them); an id given twice
    (after ``tracker.common.ids`` normalisation) is refused the second time, in the job's
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
        args: list[object] = [[payload]] if isinstance(payload, dict) else [payload]
        name = (
            "yinji.ingest.ingest_uploads"
            if isinstance(payload, dict)
            else "yinji.ingest.ingest_batch"
        )
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

    def __init__(self, engine: str, job_id: str | None = None, owner: str | None = None) -> None:
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
    raw = backend_client(app).get(_rebuild_key(app, engine))
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
    backend_client(app).set(_rebuild_key(app, name), job_id, ex=expires)
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


def submit_watch(url: str, kind: str) -> str:
    """Crawl one watch-list item now with its daily task (``url``: crawl_url, ``site``:
    crawl_site, ``book``: crawl_book): the first crawl of an item added in the web app."""
    if kind not in WATCH_TASKS:
        raise ValueError(f"watch kind must be one of {', '.join(WATCH_TASKS)}, got {kind!r}")
    return _submit("watch", [(WATCH_TASKS[kind], [url], {}, 1, url)])


def submit_discover(
    options: Mapping[str, object], parts: int = 2, run_id: str | None = None
) -> str:
    """A discovery run (``yinji.crawl.discover_run``, its crawl fanned out): a job of
    kind ``discover`` whose progress is the pages fetched against the run's budget."""
    label = f"discovery run {run_id}" if run_id else "discovery run"
    return _submit(
        "discover",
        [("yinji.crawl.discover_run", [options, parts], {"run_id": run_id}, 1, label)],
    )
