"""发现 Discovery: the admin page and ``/api/v1/discover/...``. Thin: every rule is in
``tracker.discovery`` (``service.register_site``, ``service.overview``, ``RunHistory``);
a run is the Celery task ``yinji.crawl.discover_run`` (``workers/tasks/discover.py``)."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from datetime import datetime
from typing import Any

from flask import Blueprint, flash, jsonify, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from tracker.common.records import match_id
from tracker.discovery.legado.sources import SourceError, SourceVerdict
from tracker.discovery.run import RunOptions
from tracker.discovery.service import import_sources, overview, register_site
from tracker.discovery.sites import SiteError
from tracker.services.discovery_records import run_history, site_registry

from ..apimodels.discover import (
    DiscoverOverview,
    EnableIn,
    Run,
    RunIn,
    RunList,
    RunStarted,
    Site,
    SiteIn,
    SiteList,
    SourcesFileIn,
    SourcesImported,
    SourcesIn,
)
from ..core import fail, library, role_required
from ..i18n import translate as _
from ..jsonbody import request_json
from ..openapi import PathParam, Reply, error, operation
from ..validation import body_as

bp = Blueprint("discover", __name__)
api = Blueprint("discover_api", __name__, url_prefix="/api/v1/discover")

SITE_ID = {"id": PathParam("id", "The site's host (host:port off the default port)")}
LIMITS = {"max_queries": (0, 1000), "max_pages": (1, 100_000), "max_works": (1, 100_000)}


def _run_options(raw: dict[str, Any]) -> dict[str, Any]:
    """Checked run options (ValueError naming the field)."""
    out: dict[str, Any] = {}
    for name, (lo, hi) in LIMITS.items():
        if raw.get(name) in (None, ""):
            continue
        try:
            value = int(raw[name])
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a whole number, got {raw[name]!r}") from None
        if not lo <= value <= hi:
            raise ValueError(f"{name} must be between {lo} and {hi}, got {value}")
        out[name] = value
    works = raw.get("works") or []
    if isinstance(works, str):
        works = [w.strip() for w in works.replace(",", "\n").splitlines() if w.strip()]
    if not isinstance(works, list) or not all(isinstance(w, str) for w in works):
        raise ValueError("works must be a list of work ids")
    out["works"] = works
    return out


def _start(options: dict[str, Any]) -> tuple[str, str]:
    """Queue a run: (job id, run id). Its job (``kind: discover``) follows the crawl."""
    from tracker.discovery.run import new_run_id
    from workers.jobs import submit_discover

    known = {f.name for f in fields(RunOptions)}
    opts = asdict(RunOptions(**{k: v for k, v in options.items() if k in known}))
    run_id = new_run_id()
    return submit_discover(opts, 2, run_id), run_id


def _evidence_links(report: Any) -> list[dict[str, Any]]:
    return [
        {
            **m,
            "evidence_url": url_for(
                "matches.detail", match_id=match_id(m["suspect_id"], m["mother_id"])
            ),
        }
        for m in report.matches
    ]


# --- the page -------------------------------------------------------------------------------
def _live(job_id: str, run_id: str) -> dict[str, Any] | None:
    """The run started from this page: its job's state and the run's counts so far."""
    if not job_id:
        return None
    from workers.jobs import JobStatus, UnknownJob, job_status

    job: JobStatus | dict[str, object]
    try:
        job = job_status(job_id)
    except UnknownJob:
        job = {"state": "PENDING", "progress": 0, "done": None, "total": None}
    report = run_history(library()).get(run_id) if run_id else None
    return {"job_id": job_id, "run_id": run_id, "job": job, "report": report}


@bp.get("/discover")
def index() -> ResponseReturnValue:
    view = overview(library())
    live = _live(request.args.get("job", ""), request.args.get("run", ""))
    return render_template(
        "discover/index.html",
        view=view,
        runs=[(r, _evidence_links(r)) for r in view.runs],
        live=live,
        started={r.id: _started(r.started_at) for r in view.runs},
    )


def _started(value: str) -> datetime | None:
    from tracker.common.timefmt import parse_utc

    try:
        return parse_utc(value)
    except ValueError:
        return None


@bp.post("/discover/sites")
@role_required("analyst")
def add_site() -> ResponseReturnValue:
    try:
        site = register_site(
            library(),
            request.form.get("url", "").strip(),
            search_url=request.form.get("search_url", "").strip() or None,
            encoding=request.form.get("encoding", "").strip() or None,
        )
    except SiteError as exc:
        flash(_("Site not added: {error}", error=str(exc)), "error")
    else:
        flash(_("Site added: {host} ({profile}).", host=site.host, profile=site.profile), "info")
    return redirect(url_for("discover.index"))


def _counts(verdicts: list[SourceVerdict]) -> dict[str, int]:
    out = {"imported": 0, "partial": 0, "refused": 0}
    for v in verdicts:
        out[v.status] = out.get(v.status, 0) + 1
    return out


@bp.post("/discover/sites/import")
@role_required("analyst")
def import_sites() -> ResponseReturnValue:
    upload = request.files.get("file")
    url = request.form.get("url", "").strip()
    try:
        if upload is not None and upload.filename:
            verdicts = import_sources(
                library(), name=upload.filename, data=upload.read(32 * 1024 * 1024 + 1)
            )
        elif url:
            verdicts = import_sources(library(), url=url)
        else:
            raise SourceError("choose a file of Legado book sources or give its URL")
    except SourceError as exc:
        flash(_("Sources not imported: {error}", error=str(exc)), "error")
        return redirect(url_for("discover.index"))
    counts = _counts(verdicts)
    flash(
        _(
            "Legado sources: {imported} imported, {partial} partial, {refused} refused.",
            **counts,
        ),
        "info",
    )
    for v in [v for v in verdicts if v.status != "imported"][:20]:
        status = _(v.status)
        flash(f"{status} · {v.name} · {'; '.join(v.reasons)}", "info")
    return redirect(url_for("discover.index") + "#discover-sites")


@bp.post("/discover/sites/<host>/enable")
@role_required("analyst")
def enable_site(host: str) -> ResponseReturnValue:
    enabled = request.form.get("enabled", "1") == "1"
    if site_registry(library()).set_enabled(host, enabled) is None:
        flash(_("No such site: {host}.", host=host), "error")
    return redirect(url_for("discover.index") + "#discover-sites")


@bp.post("/discover/sites/<host>/delete")
@role_required("analyst")
def remove_site(host: str) -> ResponseReturnValue:
    if site_registry(library()).remove(host):
        flash(_("Site removed: {host}.", host=host), "info")
    else:
        flash(_("No such site: {host}.", host=host), "error")
    return redirect(url_for("discover.index"))


@bp.post("/discover/run")
@role_required("analyst")
def start_run() -> ResponseReturnValue:
    try:
        options = _run_options(request.form.to_dict())
    except ValueError as exc:
        flash(_("Run not started: {error}", error=str(exc)), "error")
        return redirect(url_for("discover.index"))
    task_id, run_id = _start(options)
    flash(_("Discovery run {run} queued: its progress is shown below.", run=run_id), "info")
    return redirect(url_for("discover.index", job=task_id, run=run_id) + "#discover-live")


# --- the API --------------------------------------------------------------------------------
@api.get("")
@operation(
    "Discovery: providers with today's use and quota, sites, budgets, last run",
    {200: Reply("The overview", DiscoverOverview)},
)
def api_overview() -> ResponseReturnValue:
    return jsonify(overview(library()).to_json())


@api.get("/runs")
@operation("The last discovery runs, newest first", {200: Reply("Runs", RunList)})
def api_runs() -> ResponseReturnValue:
    reports = run_history(library()).list(50)
    return jsonify({"runs": [{**r.to_dict(), "matches": _evidence_links(r)} for r in reports]})


@api.get("/runs/<id>")
@operation(
    "One run (its parts on several workers added up)",
    {200: Reply("The run", Run), 404: error("No such run")},
)
def api_run(id: str) -> ResponseReturnValue:
    report = run_history(library()).get(id)
    if report is None:
        fail(404, f"no discovery run {id!r}")
    return jsonify({**report.to_dict(), "matches": _evidence_links(report)})


@api.post("/runs")
@operation(
    "Start a discovery run on the workers (analyst)",
    {202: Reply("Queued", RunStarted), 400: error("Bad option")},
    body=RunIn,
)
@role_required("analyst")
def api_start() -> ResponseReturnValue:
    body = body_as(RunIn)
    try:
        options = _run_options(body.model_dump(exclude_none=True))
    except ValueError as exc:
        fail(400, str(exc))
    task_id, run_id = _start(options)
    # The run fans its crawl out in chunks: the job endpoint adds their progress up.
    response = jsonify(
        {
            "task_id": task_id,
            "run_id": run_id,
            "progress": f"/api/v1/jobs/{task_id}",
            "run": f"/api/v1/discover/runs/{run_id}",
        }
    )
    response.status_code = 202
    return response


@api.get("/sites")
@operation("Registered pirate sites", {200: Reply("Sites", SiteList)})
def api_sites() -> ResponseReturnValue:
    return jsonify({"sites": [s.to_dict() for s in site_registry(library()).list()]})


@api.post("/sites")
@operation(
    "Register a site; without search_url its search form is found (analyst)",
    {201: Reply("Registered", Site), 400: error("Bad URL, or no search form found")},
    body=SiteIn,
)
@role_required("analyst")
def api_add_site() -> ResponseReturnValue:
    body = body_as(SiteIn)
    try:
        site = register_site(
            library(), body.url, search_url=body.search_url, encoding=body.encoding
        )
    except SiteError as exc:
        fail(400, str(exc))
    response = jsonify(site.to_dict())
    response.status_code = 201
    return response


@api.post("/sites/import")
@operation(
    "Import Legado (阅读) book sources: a file, a URL, or the sources themselves (analyst)",
    {
        200: Reply("One verdict per source", SourcesImported),
        400: error("Not Legado sources, or the URL cannot be read"),
    },
    body=SourcesIn,
    form=SourcesFileIn,
)
@role_required("analyst")
def api_import_sites() -> ResponseReturnValue:
    """Legado sources: a multipart ``file``, a JSON ``{"url": ...}``, or the sources
    themselves as the JSON body (an array or one object)."""
    upload = request.files.get("file")
    try:
        if upload is not None:
            verdicts = import_sources(
                library(),
                name=upload.filename or "upload",
                data=upload.read(32 * 1024 * 1024 + 1),
            )
        else:
            body = request_json()
            url = body.get("url") if isinstance(body, dict) and len(body) == 1 else None
            if isinstance(url, str):
                verdicts = import_sources(library(), url=url)
            elif isinstance(body, list | dict):
                raw = json.dumps(body, ensure_ascii=False).encode("utf-8")
                verdicts = import_sources(library(), name="request body", data=raw)
            else:
                fail(400, 'send Legado sources (a JSON array or object), {"url": ...} or a file')
    except SourceError as exc:
        fail(400, str(exc))
    return jsonify({"counts": _counts(verdicts), "sources": [asdict(v) for v in verdicts]})


@api.post("/sites/<id>/enable")
@operation(
    'Enable a site again (or disable it with {"enabled": false}) (analyst)',
    {200: Reply("The site", Site), 404: error("No such site")},
    body=EnableIn,
    path=SITE_ID,
)
@role_required("analyst")
def api_enable_site(id: str) -> ResponseReturnValue:
    body = request_json() if request.content_length else None
    enabled = not (isinstance(body, dict) and body.get("enabled") is False)
    site = site_registry(library()).set_enabled(id, enabled)
    if site is None:
        fail(404, f"no registered site {id!r}")
    return jsonify(site.to_dict())


@api.delete("/sites/<id>")
@operation(
    "Forget a site (analyst)",
    {204: Reply("Removed"), 404: error("No such site")},
    path=SITE_ID,
)
@role_required("analyst")
def api_remove_site(id: str) -> ResponseReturnValue:
    if not site_registry(library()).remove(id):
        fail(404, f"no registered site {id!r}")
    return "", 204
