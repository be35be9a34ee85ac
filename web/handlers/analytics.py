"""Charts: matches over time, most-copied works, most-copying sites, verdicts; and the
takedown figures per site (removal rate, days to removal) of the cases."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode

from flask import Blueprint, render_template, request, url_for
from flask.typing import ResponseReturnValue

from tracker.cases import Case

from ..books import book_index, chapter_of
from ..casework import cases, site_stats, totals
from ..charts import bar_list, time_chart, verdict_chart
from ..core import filter_args, parse_match_filters, records, work_choices

bp = Blueprint("analytics", __name__)


def _dashboard(**change: str) -> str:
    """The dashboard's URL with the current filters, changed (the query string as
    ``url_for`` writes one)."""
    query = urlencode(filter_args(request.args, **change), safe="!$'()*,/:;?@")
    return url_for("matches.dashboard") + (f"?{query}" if query else "")


@bp.get("/analytics")
def index() -> ResponseReturnValue:
    error = None
    try:
        query = parse_match_filters(request.args).query
    except ValueError as exc:
        error = str(exc)
        query = parse_match_filters({}).query  # type: ignore[arg-type]
    stats = records().match_stats(replace(query, offset=0))
    top_works: list[tuple[str, int, str | None]] = [
        (
            chapter_of(mid) or title or mid,  # a chapter named by its book
            n,
            _dashboard(work=mid),
        )
        for mid, title, n in stats["top_mothers"]
    ]
    top_books: list[tuple[str, int, str | None]] = [
        (f"《{book.title}》", n, url_for("books.show", book_id=book.id))
        for book, n in records().book_match_counts(book_index(), query)
    ]
    top_sites: list[tuple[str, int, str | None]] = [
        (domain, n, _dashboard(domain=domain)) for domain, n in stats["top_domains"]
    ]

    # Cases of the work and site filters (a site also covers its sub-domains, as for
    # matches); the figures are over each case's whole life, not the date range.
    def wanted(c: Case) -> bool:
        if query.mother_id and query.mother_id not in (c.work, *c.mother_ids):
            return False
        d = query.domain
        return not d or c.domain == d or c.domain.endswith("." + d)

    removals = site_stats([c for c in cases().list_cases() if wanted(c)])
    return render_template(
        "analytics.html",
        removals=removals,
        removals_all=totals(removals),
        error=error,
        args=request.args,
        timeline=time_chart(stats["by_day"]),
        works=bar_list(top_works),
        books=bar_list(top_books),
        sites=bar_list(top_sites),
        verdicts=verdict_chart(stats["by_verdict"]),
        work_choices=work_choices(),
    )
