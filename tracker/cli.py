"""The ``yinji`` command line. Every command is a thin wrapper over ``tracker.library``.

Output contract of ``check --json`` (other programs depend on it): stdout is JSON
Lines, one line per suspect document (also when it has no match); progress, errors
and summaries go to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from tracker.plumbing.config import DEFAULT_MIN_COPIED, SURE_COPIED, ReadLimits

if TYPE_CHECKING:
    from tracker.books.files import IngestMode
    from tracker.documents.readers import DocumentError
    from tracker.library import Library
    from tracker.services.results import CheckResult
from tracker.cli_common import (
    Progress,
    command_settings,
    open_library,
    plural,
    rate_text,
    say_repairs,
)
from tracker.cli_group import YinjiGroup, exit_cleanly_on_signals
from tracker.common.records import JSONScalar, json_object
from tracker.plumbing.datadir import private_umask


@click.group(cls=YinjiGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Data folder of the embedded store and index [$YINJI_DATA_DIR, else ./yinji-data].",
)
@click.version_option(package_name="yinji")
@click.pass_context
def main(ctx: click.Context, data_dir: Path | None) -> None:
    """音迹 Yinji: find which of your works were copied, how much, and where."""
    ctx.ensure_object(dict)
    ctx.obj["data_dir"] = data_dir
    # every file of the data folder 600, every folder 700 (tracker.plumbing.datadir)
    private_umask()
    exit_cleanly_on_signals()


_F = TypeVar("_F", bound=Callable[..., object])


def _params_options(f: _F) -> _F:
    """The Daguan parameter options of ``fingerprint`` and ``index configure``."""
    options = [
        click.option("--granularity", type=int, default=None, help="Window length in initials."),
        click.option(
            "--overlap", type=float, default=None, help="Overlap ratio of mother windows."
        ),
        click.option(
            "--levels",
            type=click.Choice(["10", "8", "4", "2"]),
            default=None,
            help="Levels per letter count (digits of the packed value): fewer tolerate more "
            "edits and give more chance hits.",
        ),
        click.option(
            "--mode",
            type=click.Choice(["quantile", "fixed"]),
            default=None,
            help="How counts become levels: the reference's quantiles, or fixed cut points.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _engine_option(f: Any) -> Any:
    from tracker.engines import ENGINES

    return click.option(
        "--engine",
        type=click.Choice(sorted(ENGINES)),
        default=None,
        help="Fingerprint engine [$YINJI_ENGINE, else daguan].",
    )(f)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_engine_option
@click.option(
    "--book",
    "as_book",
    is_flag=True,
    help="Every file is a whole book (one without chapter headings: one chapter, said); "
    "a folder or .zip is one book of chapter files.",
)
@click.option(
    "--as-works",
    is_flag=True,
    help="One file, one work: never split into a book (.epub refused).",
)
@click.pass_context
def ingest(
    ctx: click.Context,
    paths: tuple[Path, ...],
    engine: str | None,
    as_book: bool,
    as_works: bool,
) -> None:
    """Add works and books to the mother corpus (.jsonl .txt .html .htm .docx .epub
    .zip, folders).

    A file with two or more chapter headings (第N章/回/节/卷/集), and every .epub, is a
    book: each chapter a work. JSONL lines with book fields (book_id or book,
    book_title, author, chapter, chapter_index) group into books. Re-ingesting an id
    replaces that document. Bad files or lines are reported and skipped; the rest goes
    in.
    """
    from tracker.books.files import EarlyReads
    from tracker.books.service import BookIngest, BookService, summary_line

    if as_book and as_works:
        raise click.UsageError("--book and --as-works exclude each other")
    progress = Progress("ingest")
    settings = command_settings(ctx)
    click.echo(f"library: {settings.describe_library()}", err=True)
    mode: IngestMode = "book" if as_book else "works" if as_works else "auto"
    early = EarlyReads(paths, mode)  # whole books read while the library opens
    from tracker.library import input_chars

    with open_library(ctx, create=True) as lib:
        plan = BookIngest(BookService(lib), mode=mode, early=early)
        report = lib.ingest(
            plan.documents(paths, limits=settings.read_limits),
            engine=engine,
            progress=progress,
            expected_chars=input_chars(paths),  # sizes a growing index once
        )
        books = plan.finish(report)
        say_repairs(lib)
    progress.close()
    for err in report.errors:
        click.echo(f"skipped {err}", err=True)
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    rate = report.characters / report.seconds if report.seconds else 0.0
    click.echo(
        f"ingested {report.ingested} documents ({report.replaced} replaced), "
        f"{report.characters} characters in {report.seconds:.2f} s ({rate_text(rate)}); "
        f"{plural(len(report.errors), 'error')}",
        err=True,
    )
    migration = plan.service.migration
    if migration is not None and (migration.books_created or migration.books_updated):
        click.echo(
            f"note: this library was stored before books: {migration.books_created} books "
            f"made of its works (ids, verdicts and cases kept; yinji book list)",
            err=True,
        )
    for made in books:
        b = made.book
        by = f" {b.author}" if b.author else ""
        gone = made.replaced_chapters
        gone_text = f"; {gone} former chapters deleted" if gone else ""
        click.echo(
            f"book {b.id}: 《{b.title}》{by}, {plural(len(b.chapters), 'chapter')}"
            f"{'' if made.new else ' (replaced)'}{gone_text}",
            err=True,
        )
    if books:
        click.echo(f"made {summary_line(books)}", err=True)
    if report.snapshot_seconds:
        click.echo(
            f"local snapshot of the index refreshed in {report.snapshot_seconds:.2f} s "
            "/ 已更新本地索引快照",
            err=True,
        )
    if report.ingested == 0 and report.errors:
        ctx.exit(1)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="JSON Lines on stdout, one per suspect.")
@click.option("--no-save", is_flag=True, help="Do not store suspects and matches.")
@click.option(
    "--include-text",
    is_flag=True,
    help="With --json: add the checked text (what the offsets index into; for .html and "
    ".docx the extracted text) as 'text'. Every line has its SHA-256 as 'text_sha256'.",
)
@_engine_option
@click.pass_context
def check(
    ctx: click.Context,
    paths: tuple[str, ...],
    as_json: bool,
    no_save: bool,
    include_text: bool,
    engine: str | None,
) -> None:
    """Check suspect documents against the mother corpus: files, folders and URLs
    (http:// and https:// pages are crawled, captured as evidence and checked)."""

    errors: list[DocumentError] = []
    count = 0
    settings = command_settings(ctx)
    click.echo(f"library: {settings.describe_library()}", err=True)
    with open_library(ctx) as lib:
        if lib.store.count_mothers() == 0:
            # Checking against nothing would answer "no match" for every suspect: a
            # silent false negative (an empty or mistyped --data-dir).
            raise click.ClickException(
                f"the library {settings.describe_library()} holds no works: ingest some "
                "first (yinji ingest FILES), or give the right --data-dir / $YINJI_DATA_DIR"
            )
        try:
            lib.ready_to_check(engine)  # refused, or repaired (said below), before any input
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        say_repairs(lib)
        for res in _check_inputs(lib, paths, engine, not no_save, settings.read_limits, errors):
            count += 1
            for warning in res.result.warnings:  # not Chinese: never a silent "no match"
                click.echo(f"warning: {warning.message}", err=True)
            if as_json:
                line = res.to_json(include_text=include_text)
                sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
                sys.stdout.flush()
            else:
                _print_table(res)
    for err in errors:
        click.echo(f"skipped {err}", err=True)
    click.echo(f"checked {plural(count, 'suspect')}; {plural(len(errors), 'error')}", err=True)
    if count == 0 and errors:
        ctx.exit(1)


def _check_inputs(
    lib: Library,
    args: tuple[str, ...],
    engine: str | None,
    save: bool,
    limits: ReadLimits,
    errors: list[DocumentError],
) -> Iterator[CheckResult]:
    """Check files, folders and URLs in the order given. A URL (http:// or https://) is
    crawled and captured (``Library.check_url``); a page that cannot be fetched is that
    argument's error. Saved checks go into the evidence log."""
    from tracker.documents.readers import DocumentError, iter_documents

    crawler = None
    for arg in args:
        if arg.lower().startswith(("http://", "https://")):
            from tracker.crawler import Crawler, CrawlerConfig, CrawlError  # only for URLs

            if crawler is None:
                crawler = Crawler(CrawlerConfig.from_settings(lib.settings))
            try:
                yield lib.check_url(arg, engine=engine, save=save, crawler=crawler)
            except (CrawlError, ValueError) as exc:
                errors.append(DocumentError(arg, str(exc)))
            continue
        # Saved, a file's text is a submission in the evidence log (Library.check).
        yield from lib.check(
            iter_documents([Path(arg)], limits=limits), engine=engine, save=save, errors=errors
        )


def _print_table(res: CheckResult) -> None:
    """A match table readable in a 100-column terminal: columns by display width (a
    Chinese character takes two), long ids and titles cut with "…"."""
    from tracker.plumbing.terminal import fit

    suspect = res.suspect
    # Headed by what a person recognises: the URL (or file) and the title; the suspect id
    # (a 40-hex digest for a crawled page) follows for `yinji verdict`.
    where = suspect.url or suspect.source or suspect.id
    head = f"{where} — {fit(suspect.title, 40).rstrip()}" if suspect.title else where
    found = f"{len(res.matches)} match(es)" if res.matches else "no match"
    click.echo(f"{head}: {found}")
    click.echo(f"  suspect id: {suspect.id}")
    if not res.matches:
        return
    click.echo(f"  {'score':>6} {'cover':>6}  {fit('mother', 24)}  title / passages")
    for m in res.matches:
        row = f"  {m.score:6.3f} {m.coverage:6.1%}  {fit(m.mother_id, 24)}  "
        # A chapter is named as people name it: 《西游记》第四十一回 心猿遭火败 …
        label = m.book.label() if m.book is not None else m.mother_title
        click.echo((row + fit(label, 56)).rstrip())
        side = "chapter" if m.book is not None else "mother"
        for p in m.passages[:5]:
            click.echo(
                f"  {'':6} {'':6}  suspect {p.suspect_start}-{p.suspect_end} <- "
                f"{side} {p.mother_start}-{p.mother_end} (similarity {p.similarity:.2f})"
                + (f", {len(p.segments)} reordered pairs" if p.segments else "")
            )
            for g in p.segments[:8]:
                click.echo(
                    f"  {'':6} {'':6}    {g.suspect_start}-{g.suspect_end} <- "
                    f"{g.mother_start}-{g.mother_end} ({g.similarity:.2f})"
                )
        if len(m.passages) > 5:
            click.echo(f"  {'':15}  ... {len(m.passages) - 5} more passages")


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_params_options
@click.option(
    "--reference",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="Reference distribution (JSON from 'yinji reference build'); default: the shipped one.",
)
@click.option("--dense", is_flag=True, help="Every offset (the suspect pass).")
def fingerprint(
    paths: tuple[Path, ...],
    granularity: int | None,
    overlap: float | None,
    levels: str | None,
    mode: str | None,
    reference: Path | None,
    dense: bool,
) -> None:
    """Print each document's window fingerprints with their offsets (a debugging aid)."""
    from dataclasses import replace

    from tracker.documents.readers import DocumentError, iter_documents
    from tracker.fingerprints.daguan import Fingerprinter, FingerprintParams, Reference

    params = FingerprintParams()
    changes: dict[str, Any] = {}
    if granularity is not None:
        changes["granularity"] = granularity
    if overlap is not None:
        changes["overlap"] = overlap
    if levels is not None:
        changes["levels"] = int(levels)
    if mode is not None:
        changes["mode"] = mode
    try:
        params = replace(params, **changes)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    fpr = Fingerprinter(params, Reference.load(reference) if reference else None)
    for item in iter_documents(paths):
        if isinstance(item, DocumentError):
            click.echo(f"skipped {item}", err=True)
            continue
        fps = fpr.fingerprints(item.text, stride=1 if dense else None)
        click.echo(f"# {item.id}\t{len(fps)} windows\t{json.dumps(params.to_dict())}")
        for i in range(len(fps)):
            start, end = fps.char_span(i)
            click.echo(f"{start}\t{end}\t{int(fps.values[i])}")


# Below ~8,000 disjoint windows of 24 initials (200 k characters) the per-letter count
# quantiles of a reference are estimated from a handful of windows per level.
REFERENCE_MIN_CHARS = 200_000


@main.group()
def reference() -> None:
    """Reference letter distributions."""


@reference.command("build")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), required=True, help="JSON file to write."
)
def reference_build(paths: tuple[Path, ...], output: Path) -> None:
    """Compute a reference distribution from a corpus."""
    from tracker.documents.readers import Document, iter_documents
    from tracker.fingerprints.daguan import build_reference

    errors = 0

    def texts() -> Any:
        nonlocal errors
        for item in iter_documents(paths):
            if isinstance(item, Document):
                yield item.text
            else:
                errors += 1
                click.echo(f"skipped {item}", err=True)

    try:
        ref = build_reference(texts(), sources=[str(p) for p in paths])
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    ref.save(output)
    click.echo(f"reference of {ref.chars} characters written to {output}", err=True)
    if ref.chars < REFERENCE_MIN_CHARS:
        click.echo(
            f"warning: corpus too small ({ref.chars} characters; at least "
            f"{REFERENCE_MIN_CHARS:,} recommended): its letter-count quantiles rest on "
            "too few windows to be stable. The shipped reference has 12.3 M.",
            err=True,
        )


@main.command()
@click.argument("ids", nargs=-1, required=True)
@click.pass_context
def delete(ctx: click.Context, ids: tuple[str, ...]) -> None:
    """Delete works from the mother corpus, with their postings in every index and
    their matches. Exit status 1 if an id was not found."""
    missing = 0
    with open_library(ctx) as lib:
        for mother_id in ids:
            if lib.delete_mother(mother_id):
                click.echo(f"deleted {mother_id}", err=True)
            else:
                missing += 1
                click.echo(f"no work with id {mother_id!r}", err=True)
    if missing:
        ctx.exit(1)


@main.command("list")
@click.option("--search", default=None, help="Part of an id or a title.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--offset", type=click.IntRange(min=0), default=0)
@click.pass_context
def list_works(ctx: click.Context, search: str | None, limit: int, offset: int) -> None:
    """List the mother corpus, newest first: id, characters, title (tab-separated)."""
    with open_library(ctx) as lib:
        total = lib.store.count_mothers(search=search)
        for m in lib.store.list_mothers(search=search, offset=offset, limit=limit, with_text=False):
            click.echo(f"{m.id}\t{m.chars}\t{m.title}")
    click.echo(f"{total} works" + (f" matching {search!r}" if search else ""), err=True)


@main.group()
def index() -> None:
    """The engines' indexes (derived from the store)."""


@index.command("rebuild")
@_engine_option
@click.pass_context
def index_rebuild(ctx: click.Context, engine: str | None) -> None:
    """Rebuild an engine's index from the store."""
    progress = Progress("rebuild")
    with open_library(ctx) as lib:
        info = lib.rebuild_index(engine, progress=progress)
    progress.close()
    click.echo(
        f"rebuilt {info.engine} index of {info.mothers} mothers in {info.seconds:.2f} s",
        err=True,
    )


@index.command("stats")
@click.pass_context
def index_stats(ctx: click.Context) -> None:
    """Sizes of the store and of each engine's index, as JSON."""
    with open_library(ctx) as lib:
        click.echo(json.dumps(lib.index_stats(), ensure_ascii=False, indent=2, default=str))
        say_repairs(lib)


@index.command("reshard")
@_engine_option
@click.option(
    "--bits",
    type=click.IntRange(6, 30),
    default=None,
    help="2**BITS buckets (default: what the index's size calls for, see `index stats`).",
)
@click.pass_context
def index_reshard(ctx: click.Context, engine: str | None, bits: int | None) -> None:
    """Move the index to more (or fewer) buckets, keeping every posting / 重新分桶."""
    with open_library(ctx) as lib:
        info = lib.reshard_index(engine, bits)
    click.echo(
        f"resharded {info.engine} index to {2**info.bucket_bits} buckets "
        f"in {info.seconds:.2f} s / 已重新分桶",
        err=True,
    )


@index.command("snapshot")
@_engine_option
@click.pass_context
def index_snapshot(ctx: click.Context, engine: str | None) -> None:
    """Copy the index to local files that checks look fingerprints up in (buckets
    written since are asked of Redis until the next snapshot; a bulk load or reshard
    sets it aside; an ingest into a big index takes one by itself) / 建立本地索引快照.
    Prints JSON."""
    with open_library(ctx) as lib:
        try:
            info = lib.snapshot_index(engine)
        except (ValueError, RuntimeError) as exc:  # no such copies; written to throughout
            raise click.ClickException(str(exc)) from None
        click.echo(json.dumps(info.to_dict(), ensure_ascii=False, indent=2))
        say_repairs(lib)
    done = info.info
    click.echo(
        f"snapshot of the {info.engine} index: {done.postings:,} postings, "
        f"{done.bytes / 2**20:.1f} MiB, {round(done.seconds, 3):.1f} s / 索引快照已建立",
        err=True,
    )


@index.command("merge-tails")
@_engine_option
@click.pass_context
def index_merge_tails(ctx: click.Context, engine: str | None) -> None:
    """Merge the index's tail segments (big ingests loaded beside it; an ingest merges
    them by itself when they are due) into the index, then refresh its local copy /
    合并索引尾段. Prints JSON."""
    with open_library(ctx) as lib:
        done = lib.merge_index_tails(engine)
        click.echo(json.dumps(done.to_dict(), ensure_ascii=False, indent=2))
        say_repairs(lib)
    click.echo(
        f"merged {done.segments} tail segment(s) of the {done.engine} index "
        f"({done.mothers:,} works) in {done.seconds:.2f} s / 已合并索引尾段",
        err=True,
    )


@index.command("configure")
@_engine_option
@_params_options
@click.option("--letters", default=None, help="Letters packed, in order.")
@click.option(
    "--reference",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="Reference distribution (JSON from 'yinji reference build'); default: the shipped one.",
)
@click.option(
    "--min-copied",
    type=int,
    default=None,
    help="Minimum copied length, in pinyin initials (about one per Han character): nothing "
    f"shorter is reported (default {DEFAULT_MIN_COPIED}); a passage under {SURE_COPIED} is "
    "reported only when distinctive, less alike passages need more. Raise it for "
    "libraries of templated text such as regulations. No index rebuild.",
)
@click.option(
    "--min-hits",
    type=int,
    default=None,
    help="Distinct window fingerprints a work must share with a suspect to be verified "
    "(daguan, default 2). No index rebuild.",
)
@click.option(
    "--weak-candidates",
    type=int,
    default=None,
    help="Works sharing fewer fingerprints, but one no other work holds, still verified "
    "per check (daguan, default 4; 0 turns it off). No index rebuild.",
)
@click.pass_context
def index_configure(
    ctx: click.Context,
    engine: str | None,
    reference: Path | None,
    min_copied: int | None,
    min_hits: int | None,
    weak_candidates: int | None,
    **fields: JSONScalar,
) -> None:
    """Set the Daguan parameters / reference of this library, then rebuild its index;
    or set the query-time settings (--min-copied, --min-hits, --weak-candidates alone
    rebuild nothing)."""
    from tracker.fingerprints.daguan import FingerprintParams, Reference
    from tracker.matching.matcher import parse_min_copied

    if min_copied is not None:  # a bad value is a usage error before any library is read
        try:
            parse_min_copied(min_copied, "--min-copied")
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    with open_library(ctx) as lib:
        query_time = (min_copied, min_hits, weak_candidates)
        try:
            if min_copied is not None:
                lib.configure_matching(min_copied=min_copied)
                click.echo(f"minimum copied length {min_copied} initials", err=True)
            if min_hits is not None or weak_candidates is not None:
                if (engine or "daguan") != "daguan":
                    raise click.UsageError("--min-hits and --weak-candidates are daguan's")
                now = lib.configure_candidates(min_hits=min_hits, weak_candidates=weak_candidates)
                click.echo(
                    f"daguan candidates: min_hits {now['min_hits']}, "
                    f"weak_candidates {now['weak_candidates']}",
                    err=True,
                )
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        nothing_to_rebuild = reference is None and all(v is None for v in fields.values())
        if any(v is not None for v in query_time) and nothing_to_rebuild:
            return
        name = engine or "daguan"
        if name != "daguan":
            raise click.UsageError("only the daguan engine has these parameters")
        options = json_object(lib.store.get_meta("engine:daguan:options"))
        params = json_object(options.get("params")) or FingerprintParams().to_dict()
        for key, value in fields.items():
            if value is not None:
                params[key] = int(value) if key == "levels" else value
        try:
            FingerprintParams(**cast(dict[str, Any], params))  # it checks the values
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        options["params"] = params
        if reference is not None:
            options["reference"] = Reference.load(reference).to_json()
        info = lib.configure_engine("daguan", options)
    click.echo(
        f"daguan parameters {json.dumps(params)}; index rebuilt ({info.mothers} mothers)",
        err=True,
    )


def _add_discover() -> None:
    from tracker.discovery.cli import discover

    main.add_command(discover)


_add_discover()


def _add_book() -> None:
    from tracker.books.cli import book  # click only; the service loads when run

    main.add_command(book)


_add_book()

if __name__ == "__main__":  # pragma: no cover
    main()
