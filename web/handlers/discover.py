"""发现 Discovery: the admin page and ``/api/v1/discover/...``. Thin: every rule is in
``tracker.discovery`` (``service.register_site``, ``service.overview``, ``RunHistory``);
a run is the Celery task ``yinji.crawl.discover_run`` (``workers/tasks/discover.py``)."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from flask import Blueprint, flash, jsonify, redirect, render_template, request, url_for

from tracker.discovery.run import RunHistory, RunOptions
from tracker.discovery.service import overview, register_site
from tracker.discovery.sites import SiteError, SiteRegistry
from tracker.records import match_id

from ..core import fail, library, role_required, store
from ..i18n import translate as _
from ..jsonbody import clean, request_json

bp = Blueprint("discover", __name__)
api = Blueprint("discover_api", __name__, url_prefix="/api/v1/discover")

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


def _start(options: dict[str, Any]) -> str:
    from workers.app import get_celery

    known = {f.name for f in fields(RunOptions)}
    opts = asdict(RunOptions(**{k: v for k, v in options.items() if k in known}))
    result = get_celery().send_task("yinji.crawl.discover_run", args=[opts, 2])
    return str(result.id)


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
@bp.get("/discover")
def index() -> Any:
    view = overview(library())
    return render_template(
        "discover/index.html",
        view=view,
        runs=[(r, _evidence_links(r)) for r in view.runs],
    )


@bp.post("/discover/sites")
@role_required("analyst")
def add_site() -> Any:
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


@bp.post("/discover/sites/<host>/delete")
@role_required("analyst")
def remove_site(host: str) -> Any:
    if SiteRegistry(store()).remove(host):
        flash(_("Site removed: {host}.", host=host), "info")
    else:
        flash(_("No such site: {host}.", host=host), "error")
    return redirect(url_for("discover.index"))


@bp.post("/discover/run")
@role_required("analyst")
def start_run() -> Any:
    try:
        options = _run_options(request.form.to_dict())
    except ValueError as exc:
        flash(_("Run not started: {error}", error=str(exc)), "error")
        return redirect(url_for("discover.index"))
    task_id = _start(options)
    flash(_("Discovery run queued (task {id}).", id=task_id), "info")
    return redirect(url_for("discover.index"))


# --- the API --------------------------------------------------------------------------------
@api.get("")
def api_overview() -> Any:
    return jsonify(overview(library()).to_json())


@api.get("/runs")
def api_runs() -> Any:
    reports = RunHistory(store()).list(50)
    return jsonify({"runs": [{**r.to_dict(), "matches": _evidence_links(r)} for r in reports]})


@api.get("/runs/<id>")
def api_run(id: str) -> Any:
    report = RunHistory(store()).get(id)
    if report is None:
        fail(404, f"no discovery run {id!r}")
    return jsonify({**report.to_dict(), "matches": _evidence_links(report)})


@api.post("/runs")
@role_required("analyst")
def api_start() -> Any:
    body = request_json()
    if not isinstance(body, dict):
        fail(400, "send a JSON object (works, max_queries, max_pages, max_works)")
    try:
        options = _run_options(clean(body, "body"))
    except ValueError as exc:
        fail(400, str(exc))
    task_id = _start(options)
    # The run fans its crawl out in chunks: the job endpoint adds their progress up.
    response = jsonify({"task_id": task_id, "progress": f"/api/v1/jobs/{task_id}"})
    response.status_code = 202
    return response


@api.get("/sites")
def api_sites() -> Any:
    return jsonify({"sites": [s.to_dict() for s in SiteRegistry(store()).list()]})


@api.post("/sites")
@role_required("analyst")
def api_add_site() -> Any:
    body = request_json()
    if not isinstance(body, dict) or not isinstance(body.get("url"), str):
        fail(400, "send a JSON object with url (and search_url, encoding if you know them)")
    body = clean(body, "body")
    for key in ("search_url", "encoding"):
        if body.get(key) is not None and not isinstance(body[key], str):
            fail(400, f"{key} must be a string")
    try:
        site = register_site(
            library(), body["url"], search_url=body.get("search_url"), encoding=body.get("encoding")
        )
    except SiteError as exc:
        fail(400, str(exc))
    response = jsonify(site.to_dict())
    response.status_code = 201
    return response


@api.delete("/sites/<id>")
@role_required("analyst")
def api_remove_site(id: str) -> Any:
    if not SiteRegistry(store()).remove(id):
        fail(404, f"no registered site {id!r}")
    return "", 204
