"""Check tasks (queue ``check``): stored suspects, pasted texts, URL lists, and the daily
check of suspects against new mothers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from celery import Task, shared_task

from tracker.common.records import JSONObject
from tracker.common.rules import url_problem
from tracker.common.timefmt import iso_utc
from tracker.documents.readers import DocumentError
from tracker.services.check import Submitted
from tracker.services.lookups import find_suspect
from tracker.services.rechecks import mark_checked, new_mothers
from tracker.store import Suspect, utcnow
from workers.app import app_settings, worker_settings
from workers.payloads import suspect_from_item, unique, upload_suspects
from workers.spool import Spool, UploadRef
from workers.tasks._base import TASK_OPTIONS, FanoutEntry, Progress, fanout, once, rt
from workers.tasks.cases import alert_new_matches_since
from workers.tasks.crawl import check_item, crawl_outcome, run_key
from workers.tasks.ingest import with_uploads

if TYPE_CHECKING:
    from tracker.library import Library

#: Documents of one uploaded file saved together (one store and one evidence commit).
UPLOAD_GROUP = 50


class Checked(TypedDict):
    """What a check task stored: a result per suspect (``check_item``), an error per
    item that could not be checked, out of ``total`` items."""

    checked: int
    results: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    total: int


class UrlsSent(TypedDict):
    """``check_urls``: its ``crawl_url`` children, and the invalid URLs' outcomes."""

    fanout: list[FanoutEntry]
    results: list[dict[str, Any]]
    total: int


class RecheckRun(TypedDict):
    """``check_new_mothers``: its ``check_suspects`` chunks and what it covered."""

    fanout: list[FanoutEntry]
    since: str | None
    new_mothers: int
    rechecked: int
    total: int


class Rechecked(TypedDict):
    rechecked: int
    total: int


def upload_source(ref: object) -> str:
    """How an upload's texts came, for their submission records: ``file:<name>`` for a
    file (the client's name, a label), ``text`` for pasted texts spooled as items."""
    if isinstance(ref, dict) and ref.get("format") != "items":
        return f"file:{ref.get('name') or 'upload'}"
    return "text"


@shared_task(name="yinji.check.check_suspect", **TASK_OPTIONS)
def check_suspect(self: Task, suspect_id: str, engine: str | None = None) -> JSONObject:
    """Check a stored suspect again; its matches are replaced (verdicts kept)."""
    return once(self, lambda: _check_suspect(self, suspect_id, engine))


def _check_suspect(task: Task, suspect_id: str, engine: str | None) -> dict[str, Any]:
    library = rt(task).library
    suspect = find_suspect(library, suspect_id)
    if suspect is None:
        raise ValueError(f"unknown suspect {suspect_id!r}")
    started = utcnow()
    # A re-check: results rewritten, the check recorded naming the suspect's capture.
    result = check_item(library.recheck_suspect(suspect, engine=engine, once=run_key(task)))
    alert_new_matches_since(task, started, [suspect.id])
    return result


@shared_task(name="yinji.check.check_texts", **TASK_OPTIONS)
def check_texts(self: Task, texts: list[JSONObject], engine: str | None = None) -> Checked:
    """Check texts ``{id?, title?, text, url?}`` as suspects and store the results.

    A text without id is stored as ``sha1(url)`` (the id the crawler gives that page)
    or ``text-`` + ``sha1(text)``, so the same text checked twice is one suspect."""
    return once(self, lambda: _check_texts(self, texts, engine))


def _check_texts(task: Task, texts: list[dict[str, Any]], engine: str | None) -> Checked:
    library = rt(task).library
    progress = Progress(task, total=len(texts))
    progress.start()
    started = utcnow()
    errors: list[dict[str, Any]] = []
    key = run_key(task)
    items: list[tuple[Suspect, Submitted]] = []
    wheres: list[str] = []
    for i, item in enumerate(texts):
        where = f"texts[{i}]"
        try:
            suspect = suspect_from_item(item, where)
        except ValueError as exc:
            errors.append({"source": where, "error": str(exc).removeprefix(f"{where}: ")})
        else:
            items.append((suspect, Submitted(None, key and f"{key}:{i}")))
            wheres.append(where)
    # Checked one by one, saved together: one store and one evidence-log commit for
    # the chunk (group commit), its records all or none.
    outcomes = library.check_submitted_many(
        items, engine=engine, progress=lambda n: progress(len(errors) + n)
    )
    results: list[dict[str, Any]] = []
    for where, outcome in zip(wheres, outcomes, strict=True):
        if isinstance(outcome, Exception):  # YINJI_MAX_SUSPECT_CHARS: this item's error
            errors.append({"source": where, "error": str(outcome)})
        else:
            results.append(check_item(outcome))
    errors.sort(key=lambda e: int(e["source"][len("texts[") : -1]))  # in the texts' order
    progress(len(texts))
    alert_new_matches_since(task, started, [r["suspect_id"] for r in results])
    return {"checked": len(results), "results": results, "errors": errors, "total": len(texts)}


@shared_task(name="yinji.check.check_uploads", **TASK_OPTIONS)
def check_uploads(self: Task, uploads: list[UploadRef], engine: str | None = None) -> Checked:
    """Check the documents of uploaded files (``workers.spool`` references) as
    suspects, like ``check_texts``; a file or document that cannot be read is an entry
    of ``errors``. The files are deleted when the task has finished."""
    return with_uploads(self, uploads, lambda: _check_uploads(self, uploads, engine))


def _check_uploads(task: Task, uploads: list[UploadRef], engine: str | None) -> Checked:
    library = rt(task).library
    spool = Spool(app_settings(task.app).data_dir)
    progress = Progress(task, total=len(uploads))
    progress.start()
    started = utcnow()
    results: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    key = run_key(task)
    for i, ref in enumerate(uploads):
        source = upload_source(ref)
        items: list[tuple[Suspect, Submitted]] = []
        for suspect in upload_suspects(spool, ref):
            if isinstance(suspect, DocumentError):
                errors.append({"source": suspect.source, "error": suspect.message})
            else:
                items.append((suspect, Submitted(source, key and f"{key}:{i}")))
            if len(items) >= UPLOAD_GROUP:
                _save_group(library, items, engine, results, errors)
        _save_group(library, items, engine, results, errors)
        progress(i + 1)
    alert_new_matches_since(task, started, [r["suspect_id"] for r in results])
    return {"checked": len(results), "results": results, "errors": errors, "total": len(uploads)}


def _save_group(
    library: Library,
    items: list[tuple[Suspect, Submitted]],
    engine: str | None,
    results: list[dict[str, Any]],
    errors: list[dict[str, Any]],
) -> None:
    """Check an upload's documents and save them together (group commit); emptied."""
    outcomes = library.check_submitted_many(items, engine=engine)
    for (suspect, _), outcome in zip(items, outcomes, strict=True):
        if isinstance(outcome, Exception):  # YINJI_MAX_SUSPECT_CHARS: this item's error
            errors.append({"source": suspect.source or suspect.id, "error": str(outcome)})
        else:
            results.append(check_item(outcome))
    items.clear()


@shared_task(name="yinji.check.check_urls", **TASK_OPTIONS)
def check_urls(self: Task, urls: list[str], check: bool = True) -> UrlsSent:
    """Crawl and check URLs: one ``crawl_url`` child per distinct URL, so every worker
    can take a share. The job's progress is the share of children finished."""
    return once(self, lambda: _check_urls(self, urls, check))


def _check_urls(task: Task, urls: list[str], check: bool) -> UrlsSent:
    Progress(task, total=len(urls)).start()
    problems = {i: url_problem(u) for i, u in enumerate(urls)}
    invalid = [crawl_outcome(str(urls[i]), error=p) for i, p in problems.items() if p]
    valid = unique([u.strip() for i, u in enumerate(urls) if not problems[i]])
    children = fanout(task, [("yinji.crawl.crawl_url", [u], {"check": check}, u) for u in valid])
    return {"fanout": children, "results": invalid, "total": len(children) + len(invalid)}


@shared_task(name="yinji.check.check_new_mothers", **TASK_OPTIONS)
def check_new_mothers(
    self: Task, since: str | None = None, engine: str | None = None
) -> RecheckRun:
    """Daily: when mothers were ingested since the last run (store meta
    ``workers:check_new_mothers:last_run``; ``since``, an ISO time, overrides it), check
    every stored suspect again, against the whole index.

    The simplest correct approach: a suspect seen before a work was added could copy
    it, and re-checking against the whole index finds that and refreshes the rest
    (verdicts are kept). Its cost is one check per suspect per day with new mothers."""
    return once(self, lambda: _check_new_mothers(self, since, engine))


def _check_new_mothers(task: Task, since: str | None, engine: str | None) -> RecheckRun:
    library = rt(task).library
    started = utcnow()
    scheduled = since is None
    # First run: every mother is new to the suspects seen so far.
    found = new_mothers(library, since)
    new = found.count
    children: list[FanoutEntry] = []
    ids: list[str] = []
    if new:
        # Fan out: chunks of YINJI_RECHECK_CHUNK suspects (seconds each) that every
        # worker can take, far inside the visibility timeout however many suspects
        # there are; each chunk alerts on the matches it created.
        ids = library.suspect_ids()
        size = worker_settings(task.app).recheck_chunk
        chunks = [ids[i : i + size] for i in range(0, len(ids), size)]
        children = fanout(
            task,
            [
                ("yinji.check.check_suspects", [chunk], {"engine": engine}, f"suspects {i * size}+")
                for i, chunk in enumerate(chunks)
            ],
            totals=[len(c) for c in chunks],
        )
    if scheduled:
        # The start time, not the end: mothers ingested during the run count next time.
        mark_checked(library, started)
    return {
        "fanout": children,
        "since": iso_utc(found.since),
        "new_mothers": new,
        "rechecked": len(ids),
        "total": len(ids),
    }


@shared_task(name="yinji.check.check_suspects", **TASK_OPTIONS)
def check_suspects(self: Task, suspect_ids: list[str], engine: str | None = None) -> Rechecked:
    """Check these stored suspects again (a chunk of ``check_new_mothers``):
    ``Library.recheck_suspects(ids=...)``, then the new-match alert of their matches."""
    return once(self, lambda: _check_suspects(self, suspect_ids, engine))


def _check_suspects(task: Task, suspect_ids: list[str], engine: str | None) -> Rechecked:
    started = utcnow()
    rechecked = rt(task).library.recheck_suspects(
        engine=engine,
        progress=Progress(task, total=len(suspect_ids)),
        once=run_key(task),
        ids=suspect_ids,
    )
    alert_new_matches_since(task, started, suspect_ids)
    return {"rechecked": rechecked, "total": len(suspect_ids)}
