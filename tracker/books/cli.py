"""``yinji book list|show|rename|delete|migrate``: thin commands over
``tracker.books.service.BookService``.

Output contract (other programs depend on it): ``book list --json`` prints a JSON array
of objects with at least ``id``, ``title``, ``author`` and ``chapters`` (the number of
chapters); ``book show ID --json`` prints the book with ``chapters`` as a list of
``{index, title, work_id, characters}``. Without ``--json``: tables on stdout; notes
and errors on stderr; an unknown id is an error naming it (exit status 1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from tracker.books.model import Book
    from tracker.books.service import BookService


@contextmanager
def _books(ctx: click.Context) -> Iterator[BookService]:
    from tracker.books.service import BookService
    from tracker.cli_common import open_library

    with open_library(ctx) as lib:
        service = BookService(lib)
        yield service
    done = service.migration
    if done is not None and (done.books_created or done.books_updated):
        click.echo(
            f"note: this library was stored before books: {done.books_created} books made "
            "of its works (ids, verdicts and cases kept)",
            err=True,
        )


def _echo_json(value: object) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))


@click.group()
def book() -> None:
    """Books: each chapter a work / 书籍：每一章是一部作品."""


@book.command("list")
@click.option("--json", "as_json", is_flag=True, help="A JSON array on stdout.")
@click.pass_context
def book_list(ctx: click.Context, as_json: bool) -> None:
    """List the books: id, chapters, characters, title, author."""
    from tracker.plumbing.terminal import fit

    with _books(ctx) as service:
        books = service.list_books()
    if as_json:
        _echo_json([b.summary() for b in books])
        return
    if books:
        click.echo(f"{fit('id', 24)}  {'chapters':>8} {'chars':>10}  title / author")
    for b in books:
        by = f" — {b.author}" if b.author else ""
        click.echo(
            f"{fit(b.id, 24)}  {len(b.chapters):>8} {b.characters:>10}  "
            f"{fit('《' + b.title + '》' + by, 60)}".rstrip()
        )
    click.echo(f"{len(books)} book{'' if len(books) == 1 else 's'}", err=True)


def _get(service: BookService, book_id: str) -> Book:
    from tracker.common.records import NotFound

    try:
        return service.get(book_id)
    except NotFound:
        raise click.ClickException(f"no book with id {book_id!r} (yinji book list)") from None


@book.command("show")
@click.argument("book_id")
@click.option("--json", "as_json", is_flag=True, help="The book as JSON on stdout.")
@click.pass_context
def book_show(ctx: click.Context, book_id: str, as_json: bool) -> None:
    """A book and its chapters in order: index, work id, characters, heading."""
    from tracker.plumbing.terminal import fit

    with _books(ctx) as service:
        b = _get(service, book_id)
    if as_json:
        _echo_json(b.to_dict())
        return
    click.echo(f"《{b.title}》" + (f" {b.author}" if b.author else ""))
    click.echo(f"  id: {b.id}")
    for label, value in (("series", b.series), ("isbn", b.isbn), ("language", b.language)):
        if value:
            click.echo(f"  {label}: {value}")
    if b.source:
        click.echo(f"  source: {b.source}")
    click.echo(f"  {len(b.chapters)} chapters, {b.characters} characters")
    click.echo(f"  {'#':>5}  {fit('work id', 24)}  {'chars':>8}  chapter")
    for c in b.chapters:
        heading = (f"[{c.volume}] " if c.volume else "") + (c.title or "(no heading)")
        row = f"  {c.index:>5}  {fit(c.work_id, 24)}  {c.characters:>8}  {fit(heading, 50)}"
        click.echo(row.rstrip())


@book.command("rename")
@click.argument("book_id")
@click.option("--title", default=None, help="The book's new title (without 《》).")
@click.option("--author", default=None, help="The book's author ('' for none).")
@click.option("--json", "as_json", is_flag=True, help="The book as JSON on stdout.")
@click.pass_context
def book_rename(
    ctx: click.Context, book_id: str, title: str | None, author: str | None, as_json: bool
) -> None:
    """Correct a book's title and/or author; its chapters follow (their book title and
    their titles 《书名》章)."""
    if title is None and author is None:
        raise click.UsageError("give --title and/or --author")
    with _books(ctx) as service:
        _get(service, book_id)
        try:
            new_title = title.strip("《》 ") if title is not None else None
            b = service.rename(book_id, title=new_title, author=author)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        _echo_json(b.summary())
    by = f" by {b.author}" if b.author else ""
    click.echo(f"book {b.id}: 《{b.title}》{by}, {len(b.chapters)} chapters renamed", err=True)


@book.command("delete")
@click.argument("book_ids", nargs=-1, required=True)
@click.pass_context
def book_delete(ctx: click.Context, book_ids: tuple[str, ...]) -> None:
    """Delete books with their chapter works (their postings and matches too). Exit
    status 1 if an id was not found."""
    from tracker.common.records import NotFound

    missing = 0
    with _books(ctx) as service:
        for book_id in book_ids:
            try:
                done = service.delete(book_id)
            except NotFound:
                missing += 1
                click.echo(f"no book with id {book_id!r}", err=True)
                continue
            note = (
                f" ({len(done.works_missing)} chapter works were already gone)"
                if done.works_missing
                else ""
            )
            click.echo(
                f"deleted book {book_id} 《{done.book.title}》 and {done.works_deleted} "
                f"chapter works{note}",
                err=True,
            )
    if missing:
        ctx.exit(1)


@book.command("migrate")
@click.option("--json", "as_json", is_flag=True, help="What was done, as JSON on stdout.")
@click.pass_context
def book_migrate(ctx: click.Context, as_json: bool) -> None:
    """Make books of a library stored before books (chapters with work/work_title or
    book/book_title metadata; a whole book stored as one work). Every work id,
    verdict and case is kept; only book records and chapter metadata are added.
    Runs by itself once; running it again adds what is missing."""
    with _books(ctx) as service:
        report = service.migrate_legacy(force=True)
    if as_json:
        _echo_json(report.to_dict())
    for note in report.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(
        f"migrated: {report.books_created} books created, {report.books_updated} updated, "
        f"{report.chapters_labelled} chapters labelled",
        err=True,
    )
