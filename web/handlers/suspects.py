"""Suspect pages: submit URLs, pasted text or files for checking; follow the job; list."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, flash, redirect, render_template, request, url_for

from tracker.documents import SUPPORTED_SUFFIXES, DocumentError
from tracker.store import MatchQuery, NotFound

from ..core import Page, fail, job_status, page_arg, role_required, store, submit_job
from ..i18n import translate as _
from .library import MAX_SHOWN_CHARS, pasted_document, read_uploads

bp = Blueprint("suspects", __name__)

MAX_URLS = 1000
JOB_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def check_url(url: str) -> str:
    """An http(s) URL with a host, else ``ValueError`` saying why."""
    url = url.strip()
    if len(url) > 2048:
        raise ValueError(f"URL longer than 2048 characters: {url[:60]}…")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValueError(f"not a valid URL: {url!r}") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    return url


def parse_urls(block: str) -> tuple[list[str], list[str]]:
    """URLs of a text area (one a line; blank lines and # comments skipped)."""
    urls: list[str] = []
    errors: list[str] = []
    seen: set[str] = set()
    for line in block.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            url = check_url(line)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        if url not in seen:
            seen.add(url)
            urls.append(url)
    return urls, errors


def text_item(doc: Any, url: str = "") -> dict[str, Any]:
    item: dict[str, Any] = {"title": doc.title, "text": doc.text}
    if doc.id:
        item["id"] = doc.id
    url = url or str((doc.metadata or {}).get("url") or "")
    if url:
        item["url"] = url
    return item


@bp.get("/suspects/")
def index() -> Any:
    search = (request.args.get("q") or "").strip() or None
    page, per_page = page_arg(25)
    total = store().count_suspects(search=search)
    pager = Page(page, per_page, total)
    suspects = store().list_suspects(search=search, offset=pager.offset, limit=per_page)
    counts = {s.id: store().count_matches(MatchQuery(suspect_id=s.id)) for s in suspects}
    return render_template(
        "suspects/index.html", suspects=suspects, counts=counts, pager=pager, q=search or ""
    )


@bp.get("/suspects/new")
@role_required("analyst")
def new() -> Any:
    return render_template("suspects/new.html", suffixes=SUPPORTED_SUFFIXES, errors=[], form={})


@bp.post("/suspects/new")
@role_required("analyst")
def submit() -> Any:
    urls, url_errors = parse_urls(request.form.get("urls", ""))
    errors = [DocumentError("URL", e) for e in url_errors]
    docs, file_errors = read_uploads(request.files.getlist("files"))
    errors += file_errors
    pasted = pasted_document(request.form, None)
    texts = [text_item(d) for d in docs]
    if pasted is not None:
        page_url = (request.form.get("url") or "").strip()
        if page_url:
            try:
                page_url = check_url(page_url)
            except ValueError as exc:
                errors.append(DocumentError("URL", str(exc)))
                page_url = ""
        texts.insert(0, text_item(pasted, page_url))
    if len(urls) > MAX_URLS:
        errors.append(DocumentError("URL", f"at most {MAX_URLS} URLs at once"))
        urls = urls[:MAX_URLS]
    if not urls and not texts:
        if not errors:
            errors.append(
                DocumentError("input", "nothing to check: enter URLs, paste a text or choose files")
            )
        return render_template(
            "suspects/new.html", suffixes=SUPPORTED_SUFFIXES, errors=errors, form=request.form
        ), 400
    # Fetching and matching run on a worker; the page follows the job.
    job_id = submit_job("check", texts=texts or None, urls=urls or None)
    flash(_("{n} suspects queued for checking.", n=len(texts) + len(urls)), "info")
    for err in errors[:20]:
        flash(_("Skipped {source}: {message}", source=err.source, message=err.message), "error")
    return redirect(url_for("suspects.job", job_id=job_id, kind="check"))


@bp.get("/suspects/<id:suspect_id>")
def show(suspect_id: str) -> Any:
    try:
        suspect = store().get_suspect(suspect_id)
    except (NotFound, KeyError):
        fail(404, f"no suspect {suspect_id!r}")
    matches = store().query_matches(MatchQuery(suspect_id=suspect_id, limit=100))
    return render_template(
        "suspects/show.html",
        suspect=suspect,
        matches=matches,
        text=suspect.text[:MAX_SHOWN_CHARS],
        truncated=len(suspect.text) > MAX_SHOWN_CHARS,
    )


@bp.get("/jobs/<job_id>")
def job(job_id: str) -> Any:
    if not JOB_ID_RE.match(job_id):
        fail(404, "no such job")
    status = job_status(job_id)
    return render_template(
        "job.html",
        job=status,
        job_id=job_id,
        summary=job_summary(status),
        kind=job_kind(status, request.args.get("kind", "")),
    )


def job_kind(status: dict[str, Any], hint: str) -> str:
    result = status.get("result")
    if isinstance(result, dict):
        if "ingested" in result:
            return "ingest"
        if "results" in result:
            return "check"
    return hint if hint in ("ingest", "check") else ""


def job_summary(status: dict[str, Any]) -> dict[str, Any]:
    """A finished job's result in the shape the page shows (see ``workers.jobs``)."""
    result = status.get("result")
    if not isinstance(result, dict):
        return {}
    rows = []
    for item in result.get("results") or []:
        if not isinstance(item, dict):
            continue
        matches = item.get("matches")
        count = len(matches) if isinstance(matches, list) else int(matches or 0)
        rows.append(
            {
                "suspect_id": item.get("suspect_id"),
                "title": item.get("title") or "",
                "url": item.get("url") or "",
                "matches": count,
            }
        )
    problems = [
        {
            "source": str(e.get("source") or e.get("url") or ""),
            "message": str(e.get("error") or e.get("message") or e.get("reason") or ""),
        }
        for e in [*(result.get("errors") or []), *(result.get("skipped") or [])]
        if isinstance(e, dict)
    ]
    return {
        "rows": rows,
        "problems": problems,
        "checked": len(rows),
        "matches": sum(r["matches"] for r in rows),
        "with_matches": sum(1 for r in rows if r["matches"]),
    }
