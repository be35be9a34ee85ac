"""Charts: matches over time, most-copied works, most-copying sites, verdicts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from flask import Blueprint, render_template, request, url_for

from ..charts import bar_list, time_chart, verdict_chart
from ..core import filter_args, parse_match_filters, store, work_choices

bp = Blueprint("analytics", __name__)


@bp.get("/analytics")
def index() -> Any:
    error = None
    try:
        query = parse_match_filters(request.args).query
    except ValueError as exc:
        error = str(exc)
        query = parse_match_filters({}).query  # type: ignore[arg-type]
    stats = store().match_stats(replace(query, offset=0))
    top_works: list[tuple[str, int, str | None]] = [
        (title or mid, n, url_for("matches.dashboard", **filter_args(request.args, work=mid)))
        for mid, title, n in stats["top_mothers"]
    ]
    top_sites: list[tuple[str, int, str | None]] = [
        (domain, n, url_for("matches.dashboard", **filter_args(request.args, domain=domain)))
        for domain, n in stats["top_domains"]
    ]
    return render_template(
        "analytics.html",
        error=error,
        args=request.args,
        timeline=time_chart(stats["by_day"]),
        works=bar_list(top_works),
        sites=bar_list(top_sites),
        verdicts=verdict_chart(stats["by_verdict"]),
        work_choices=work_choices(),
    )
