"""``yinji verdict`` and ``yinji case ...``: commands of the ``yinji`` CLI registered
through the entry-point group ``yinji.commands`` (see ``tracker.cli_group.YinjiGroup``)::

    case = "tracker.cases.cli:case"
    verdict = "tracker.cases.cli:verdict"

They read the data folder the parent group was given (``yinji --data-dir X case list``)
from ``ctx.obj["data_dir"]``, as every command does. Each command is a thin wrapper
over ``tracker.cases`` functions, which the web routes and Celery tasks call too.
"""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from tracker.common.records import VERDICTS
from tracker.common.timefmt import human_utc
from tracker.plumbing.config import SettingError, Settings

from .model import STATES, CaseError, state_label


def _settings(ctx: click.Context) -> Settings:
    try:
        return Settings.from_env((ctx.obj or {}).get("data_dir"))
    except SettingError as exc:
        raise click.ClickException(str(exc)) from None


def _case_settings() -> Any:
    from .settings import CaseSettings

    try:
        return CaseSettings.from_env()
    except SettingError as exc:
        raise click.ClickException(str(exc)) from None


def _who(by: str | None) -> str:
    if by:
        return by
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


@contextmanager
def _service(ctx: click.Context, *, create: bool = False) -> Iterator[Any]:
    """The cases of the data folder; without ``create`` (the profile may be set before
    the first work is imported) a missing folder is refused, not created."""
    from .service import CaseService
    from .store_factory import open_case_store

    settings = _settings(ctx)
    if not create:
        try:
            settings.require_data_dir()
        except SettingError as exc:
            raise click.ClickException(str(exc)) from None
    store = open_case_store(settings)
    svc = CaseService(store, settings)
    try:
        yield svc
    finally:
        svc.close()
        store.close()


@contextmanager
def _errors() -> Iterator[None]:
    """Workflow refusals and unknown ids as one clear line, exit 1, no traceback."""
    from tracker.common.records import NotFound

    try:
        yield
    except CaseError as exc:
        raise click.ClickException(str(exc)) from None
    except NotFound as exc:
        raise click.ClickException(str(exc.args[0] if exc.args else exc)) from None


_by_option = click.option("--by", default=None, help="Who acts [default: cli:<login name>].")
_note_option = click.option("--note", default=None, help="A note kept in the case history.")


# --- verdict -------------------------------------------------------------------------------
@click.command()
@click.argument("suspect_id")
@click.argument("mother_id")
@click.argument("verdict", type=click.Choice(VERDICTS))
@_note_option
@_by_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def verdict(
    ctx: click.Context,
    suspect_id: str,
    mother_id: str,
    verdict: str,
    note: str | None,
    by: str | None,
    as_json: bool,
) -> None:
    """Give the match SUSPECT_ID × MOTHER_ID a verdict; a confirmed match with a URL
    joins the case of its work and domain (opened when needed)."""
    from tracker.common.records import NotFound
    from tracker.store import open_store

    with _service(ctx) as svc, open_store(svc.settings) as matches, _errors():
        try:
            result = svc.apply_verdict(
                matches, suspect_id, mother_id, verdict, who=_who(by), note=note
            )
        except NotFound:
            raise click.ClickException(
                f"no match of suspect {suspect_id!r} with work {mother_id!r}"
            ) from None
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        click.echo(f"{suspect_id} × {mother_id}: {result.message}")


# --- case ----------------------------------------------------------------------------------
def _state(state: str) -> str:
    """A state as the command line shows it: its name (what ``--state`` takes) and its
    wording in Chinese and English, the web's (``tracker.cases.model.STATE_LABELS``)."""
    return f"{state} ({state_label(state, 'zh')} / {state_label(state, 'en')})"


@click.group()
def case() -> None:
    """Takedown cases: one work copied on one site, from notice to removal."""


@case.command("list")
@click.option("--json", "as_json", is_flag=True, help="A JSON array of cases on stdout.")
@click.option("--state", type=click.Choice(STATES), default=None)
@click.option("--domain", default=None, help="Only cases on this domain.")
@click.option("--work", default=None, help="Only cases of this work (mother id).")
@click.option(
    "--no-sync", is_flag=True, help="Do not first file confirmed matches that have no case."
)
@click.pass_context
def case_list(
    ctx: click.Context,
    as_json: bool,
    state: str | None,
    domain: str | None,
    work: str | None,
    no_sync: bool,
) -> None:
    """List cases, newest first. Confirmed matches that have no case yet (confirmed in
    the web app, say) are filed first."""
    from tracker.store import open_store

    with _service(ctx) as svc, _errors():
        if not no_sync:
            with open_store(svc.settings) as matches:
                svc.sync(matches)
        cases = svc.list_cases(state=state, domain=domain, work=work)
    if as_json:
        click.echo(json.dumps([c.to_dict() for c in cases], ensure_ascii=False, indent=2))
        return
    for c in cases:
        click.echo(
            f"{c.id:<16} {_state(c.state):<30} {c.domain:<28} {len(c.urls):>4} URL(s)  "
            f"{c.work_title or c.work}"
        )
    click.echo(f"{len(cases)} case(s)", err=True)


@case.command("show")
@click.argument("case_id")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def case_show(ctx: click.Context, case_id: str, as_json: bool) -> None:
    """A case with its URLs and its history."""
    from .model import verify_chain

    with _service(ctx) as svc, _errors():
        c = svc.get(case_id)
        events = svc.history(case_id)
        platform = svc.platform_of(c)
    problems = verify_chain(events)
    if as_json:
        out = c.to_dict()
        out["platform"] = platform.to_dict() if platform is not None else None
        out["history"] = [e.to_dict() for e in events]
        out["history_problems"] = problems
        click.echo(json.dumps(out, ensure_ascii=False, indent=2))
        return
    click.echo(f"case {c.id}: {_state(c.state)}  {c.domain}  {c.work_title or c.work} ({c.work})")
    if platform is not None:
        contact = platform.abuse_email or platform.web_form or "contact not documented"
        click.echo(f"  platform: {platform.display_name('en')} — {contact}")
        for doc in platform.documents:
            click.echo(f"    asks for: {doc}")
        if platform.process:
            click.echo(f"    process: {platform.process}")
    for u in c.urls:
        checked = (
            f"{human_utc(u.last_checked_at)} {u.last_outcome}" if u.last_checked_at else "never"
        )
        where = f"{u.chapter or ''}{f' p.{u.page}' if u.page else ''}".strip()
        where = f"  [{where}]" if where else ""
        click.echo(f"  {u.status:<10} {u.url}{where}  (last check: {checked})")
    for e in events:
        what = e.kind
        if e.kind in ("transition", "created"):
            what = f"{e.kind} {e.from_state or '-'} → {e.to_state}"
        elif e.kind == "notice":
            what = f"notice {e.data.get('action', '')} {e.data.get('format', '')}".rstrip()
        elif e.kind == "recheck":
            what = f"recheck {e.data.get('outcome')} {e.data.get('url')}"
        elif e.kind in ("url_added", "url_removed"):
            what = f"{e.kind} {e.data.get('url')}"
        line = f"  #{e.seq} {human_utc(e.at)} {e.who}: {what}"
        click.echo(f"{line}  {e.note}".rstrip())
    for p in problems:
        click.echo(f"history problem: {p}", err=True)


@case.command("set-state")
@click.argument("case_id")
@click.argument("state", type=click.Choice(STATES))
@_note_option
@_by_option
@click.pass_context
def case_set_state(
    ctx: click.Context, case_id: str, state: str, note: str | None, by: str | None
) -> None:
    """Move a case by hand (disputed, closed, ...); illegal moves are refused."""
    with _service(ctx) as svc, _errors():
        c = svc.transition(case_id, state, who=_who(by), note=note or "")
    click.echo(f"case {c.id}: {_state(c.state)}")


@case.command("platforms")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def case_platforms(ctx: click.Context, as_json: bool) -> None:
    """The platform registry notices are addressed from (edit it: copy
    tracker/cases/data/platforms.json to DATA_DIR/platforms.json)."""
    with _service(ctx) as svc, _errors():
        known = svc.platforms()
    if as_json:
        click.echo(json.dumps([p.to_dict() for p in known], ensure_ascii=False, indent=2))
        return
    for p in known:
        contact = p.abuse_email or p.web_form or "-"
        served = ", ".join(p.domains) or "chosen by hand"
        click.echo(f"{p.id:<12} {p.display_name('en')}  [{served}]  {contact}")


@case.command("platform")
@click.argument("case_id")
@click.argument("platform_id", required=False)
@_by_option
@click.pass_context
def case_platform(
    ctx: click.Context, case_id: str, platform_id: str | None, by: str | None
) -> None:
    """Choose CASE_ID's platform from the registry (no PLATFORM_ID: by its domain again)."""
    with _service(ctx) as svc, _errors():
        c = svc.set_platform(case_id, platform_id, who=_who(by))
        platform = svc.platform_of(c)
    named = platform.display_name("en") if platform else "(none: by domain)"
    click.echo(f"case {c.id}: platform {named}")


@case.command("mark-sent")
@click.argument("case_ids", nargs=-1, required=True)
@_note_option
@_by_option
@click.pass_context
def case_mark_sent(
    ctx: click.Context, case_ids: tuple[str, ...], note: str | None, by: str | None
) -> None:
    """Record that the notice of CASE_ID(s) was sent (by you, outside Yinji)."""
    from tracker.store import open_store

    with _service(ctx) as svc, _errors(), open_store(svc.settings) as matches:
        for cid in case_ids:
            c = svc.mark_sent(
                cid, who=_who(by), note=note or "", data={"channel": "manual"}, matches=matches
            )
            click.echo(f"case {c.id}: {_state(c.state)}")


@case.command("note")
@click.argument("case_id")
@click.argument("text")
@_by_option
@click.pass_context
def case_note(ctx: click.Context, case_id: str, text: str, by: str | None) -> None:
    """Add a note to a case's history."""
    with _service(ctx) as svc, _errors():
        svc.add_note(case_id, text, who=_who(by))
    click.echo(f"case {case_id}: note added")


# --- notices ---------------------------------------------------------------------------------
@contextmanager
def _library(settings: Settings) -> Iterator[Any]:
    from tracker.library import Library

    lib = Library.open(settings)
    try:
        yield lib
    finally:
        lib.close()


@case.command("notice")
@click.argument("case_ids", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["docx", "pdf", "eml"]), required=True)
@click.option("--lang", type=click.Choice(["zh", "en"]), required=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--to", multiple=True, help="Recipient (the platform's abuse address); repeatable.")
@click.option(
    "--evidence-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="pdf/docx: also write each URL's evidence report (PDF) here and name it in the notice.",
)
@click.option("--no-evidence", is_flag=True, help="eml: do not attach the evidence reports.")
@_by_option
@click.pass_context
def case_notice(
    ctx: click.Context,
    case_ids: tuple[str, ...],
    fmt: str,
    lang: str,
    output: Path,
    to: tuple[str, ...],
    evidence_dir: Path | None,
    no_evidence: bool,
    by: str | None,
) -> None:
    """Write the takedown notice of CASE_ID (or of several cases on one platform)."""
    from .notices import generate_notice

    settings = _settings(ctx)
    with _service(ctx) as svc, _errors():
        svc.batch(case_ids)  # refuse bad ids before starting the library
        with_evidence = (fmt == "eml" and not no_evidence) or evidence_dir is not None
        smtp = _case_settings().smtp if fmt == "eml" else None
        with _library(settings) as lib:
            made = generate_notice(
                svc,
                lib,
                case_ids,
                fmt,
                lang,
                who=_who(by),
                to=to,
                with_evidence=with_evidence,
                sender=smtp.sender if smtp and smtp.sender else None,
            )
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(made.data)
        if evidence_dir is not None and fmt != "eml":
            evidence_dir.mkdir(parents=True, exist_ok=True)
            for name, blob in made.evidence.values():
                (evidence_dir / name).write_bytes(blob)
    notice = made.notice
    click.echo(f"{output}: {fmt} notice {notice.reference} ({len(notice.urls)} URL(s))", err=True)
    for left in notice.left_out:  # a notice names only confirmed URLs: say which are not in
        click.echo(f"  not in the notice: {left.url} ({left.reason})", err=True)


@case.command("send")
@click.argument("case_ids", nargs=-1, required=True)
@click.option("--to", multiple=True, required=True, help="The platform's address; repeatable.")
@click.option("--lang", type=click.Choice(["zh", "en"]), required=True)
@click.option("--no-evidence", is_flag=True, help="Do not attach the evidence reports.")
@_by_option
@click.pass_context
def case_send(
    ctx: click.Context,
    case_ids: tuple[str, ...],
    to: tuple[str, ...],
    lang: str,
    no_evidence: bool,
    by: str | None,
) -> None:
    """E-mail the notice of CASE_ID(s) by SMTP ($YINJI_SMTP_URL) and mark them sent."""
    from .mail import send_notice

    smtp = _case_settings().smtp
    if smtp is None:
        raise click.ClickException(
            "YINJI_SMTP_URL is not set: write the notice with `yinji case notice ... "
            "--format eml`, send it yourself, then `yinji case mark-sent CASE_ID`"
        )
    settings = _settings(ctx)
    with _service(ctx) as svc, _errors():
        svc.batch(case_ids)
        with _library(settings) as lib:
            message_id, sent = send_notice(
                svc, lib, smtp, case_ids, lang, to=to, who=_who(by), with_evidence=not no_evidence
            )
    click.echo(f"sent {message_id} to {', '.join(to)}; notice_sent: {', '.join(sent)}")


# --- removal checks ---------------------------------------------------------------------------
def _crawler(settings: Settings) -> Any:
    """The crawler the workers use: SSRF guard per YINJI_ALLOW_PRIVATE_URLS, per-host
    interval per YINJI_CRAWL_MIN_INTERVAL."""
    from tracker.crawler import Crawler, CrawlerConfig
    from tracker.plumbing.config import WorkerSettings

    try:
        interval = WorkerSettings.from_env().crawl_min_interval
    except SettingError as exc:
        raise click.ClickException(str(exc)) from None
    overrides = {} if interval is None else {"min_interval": interval}
    return Crawler(CrawlerConfig.from_settings(settings, **overrides))


@case.command("recheck")
@click.argument("case_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON line per case on stdout.")
@_by_option
@click.pass_context
def case_recheck(ctx: click.Context, case_id: str | None, as_json: bool, by: str | None) -> None:
    """Re-crawl CASE_ID's URLs now (default: every case with a notice sent, still online
    or removed). 404/410 or a page that no longer copies the work → removed; a site that
    does not answer (unknown host, timeout) is "unreachable" and moves nothing."""
    from .alerts import Alerter
    from .recheck import recheck_cases

    settings = _settings(ctx)
    alerter = Alerter(_case_settings())
    with _service(ctx) as svc, _errors():
        ids = [svc.get(case_id).id] if case_id else None
        with _library(settings) as lib, _crawler(settings) as crawler:
            results = recheck_cases(
                svc,
                crawler=crawler,
                library=lib,
                case_ids=ids,
                who=by or "system:recheck",
                on_removed=alerter.case_removed,
            )
    for res in results:
        if as_json:
            click.echo(json.dumps(res.to_dict(), ensure_ascii=False))
            continue
        move = f"{res.before} → {res.after}" if res.changed else res.after
        click.echo(f"{res.case_id}: {move}")
        for chk in res.checks:
            status = chk.http_status if chk.http_status is not None else "-"
            click.echo(f"  {chk.outcome:<8} {status!s:>4} {chk.url} {chk.reason}".rstrip())
    click.echo(f"re-checked {len(results)} case(s)", err=True)


@case.command("digest")
@click.option("--hours", type=click.IntRange(min=1), default=24, show_default=True)
@click.option("--send", is_flag=True, help="Also deliver it (webhook, e-mail) as configured.")
@click.pass_context
def case_digest(ctx: click.Context, hours: int, send: bool) -> None:
    """Print the digest of the last HOURS as JSON (the beat sends it daily)."""
    from tracker.store import open_store

    from .alerts import Alerter, digest_data

    alerter = Alerter(_case_settings()) if send else None
    with _service(ctx) as svc, open_store(svc.settings) as matches:
        digest = digest_data(svc, matches, hours=hours)
    click.echo(json.dumps(digest, ensure_ascii=False, indent=2))
    if alerter is not None:
        if not alerter.enabled:
            raise click.ClickException(
                "no alert channel: set YINJI_ALERT_WEBHOOK_URL (and _SECRET) or "
                "YINJI_ALERT_EMAIL with YINJI_SMTP_URL"
            )
        deliveries = alerter.daily_digest(digest)
        for d in deliveries:
            status = "delivered" if d.ok else f"FAILED: {d.error}"
            click.echo(f"{d.channel}: {status} ({d.attempts} attempt(s))", err=True)
        if not all(d.ok for d in deliveries):
            ctx.exit(1)


# --- books --------------------------------------------------------------------------------------
@case.command("book")
@click.argument("url")
@click.option(
    "--max-pages",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Pages fetched for the whole book (index, chapters and their next pages).",
)
@click.option("--no-save", is_flag=True, help="Check the chapters without storing them.")
@click.option("--json", "as_json", is_flag=True, help="The report as JSON on stdout.")
@_by_option
@click.pass_context
def case_book(
    ctx: click.Context, url: str, max_pages: int, no_save: bool, as_json: bool, by: str | None
) -> None:
    """Crawl a pirate book from its index URL (chapter list, "下一页" pages; same host,
    robots.txt and rate limits honoured), check every chapter and file one case for
    the book. The daily watch does the same for `yinji watch add URL --book`."""
    from .books import monitor_book

    settings = _settings(ctx)
    with (
        _service(ctx) as svc,
        _errors(),
        _library(settings) as lib,
        _crawler(settings) as crawler,
    ):
        report = monitor_book(
            url,
            crawler=crawler,
            library=lib,
            svc=None if no_save else svc,
            max_pages=max_pages,
            save=not no_save,
            who=by or "system:book",
        )
        unconfirmed = []
        if report.case is not None:
            from .facts import confirmed_match

            unconfirmed = [
                u.url
                for u in report.case.urls
                if confirmed_match(lib.store, u.suspect_id, u.mother_id) is None
            ]
    if as_json:
        click.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
        return
    for ch in report.chapters:
        best = max(ch.matches, key=lambda m: m["score"]) if ch.matches else None
        found = f"{best['score']:.2f} {best['title']}" if best else (ch.error or "no match")
        click.echo(f"{ch.n:>4} {len(ch.pages)}p {ch.url}  {found}")
    more = " (budget reached: more chapters not fetched)" if report.truncated else ""
    click.echo(
        f"{len(report.chapters)} chapter(s), {len(report.matched)} matching, "
        f"{report.pages_fetched} page(s) fetched{more}",
        err=True,
    )
    if report.case is not None:
        click.echo(f"case {report.case.id} ({report.case.state})", err=True)
        if unconfirmed:
            click.echo(
                f"{len(unconfirmed)} chapter URL(s) of the case have no confirmed match yet: "
                "a notice names only confirmed ones (yinji verdict SUSPECT_ID MOTHER_ID "
                "confirmed, or 确认 in the web app)",
                err=True,
            )


@case.command("merge-books")
@click.option("--json", "as_json", is_flag=True, help="The cases kept, as JSON.")
@_by_option
@click.pass_context
def case_merge_books(ctx: click.Context, as_json: bool, by: str | None) -> None:
    """Group the open cases by book and site: cases opened per chapter (before books)
    are merged into the book's case, their history carried over, and closed with a
    pointer to it. `case list` does this once by itself; run it again after books
    were regrouped."""
    from tracker.store import open_store

    with _service(ctx) as svc, _errors(), open_store(svc.settings) as matches:
        kept = svc.merge_book_cases(matches, who=by or "system:merge")
    if as_json:
        click.echo(json.dumps([c.to_dict() for c in kept], ensure_ascii=False, indent=2))
        return
    for c in kept:
        merged = ", ".join(str(x) for x in c.metadata.get("merged_from") or []) or "-"
        click.echo(f"{c.id:<16} {c.domain:<28} {c.work_title or c.work}  (merged: {merged})")
    click.echo(f"{len(kept)} case(s) regrouped", err=True)


# --- profile -------------------------------------------------------------------------------
@case.group("profile")
def profile() -> None:
    """The rights holder named in every notice (once per library)."""


@profile.command("set")
@click.option("--name", default=None, help="Rights holder (person or company).")
@click.option("--contact", default=None, help="Contact person or department.")
@click.option("--email", default=None)
@click.option("--phone", default=None)
@click.option("--address", default=None)
@click.option(
    "--attach",
    "attach",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A proof-of-ownership file (repeatable).",
)
@click.option("--detach", multiple=True, help="Remove the attachment of this file name.")
@click.pass_context
def profile_set(
    ctx: click.Context,
    attach: tuple[Path, ...],
    detach: tuple[str, ...],
    **fields: str | None,
) -> None:
    """Set fields of the profile (the others stay as they are)."""
    with _service(ctx, create=True) as svc, _errors():
        prof = svc.set_profile(**fields)
        for path in attach:
            prof = svc.add_attachment(path.name, path.read_bytes())
        for name in detach:
            prof = svc.remove_attachment(name)
    click.echo(json.dumps(prof.to_dict(), ensure_ascii=False, indent=2))
    missing = prof.missing()
    if missing:
        click.echo(f"still missing for a notice: {', '.join(missing)}", err=True)


@profile.command("show")
@click.pass_context
def profile_show(ctx: click.Context) -> None:
    """Print the profile as JSON."""
    with _service(ctx) as svc:
        prof = svc.profile()
    click.echo(json.dumps(prof.to_dict(), ensure_ascii=False, indent=2))


def main() -> None:  # pragma: no cover - for `python -m tracker.cases.cli`
    case(sys.argv[1:])
