"""The HTML evidence report: one self-contained page (no scripts, no external files).

The template is package data (``tracker/reports/templates/report.html``) rendered with
Jinja2 and autoescaping on: every value in the data may come from a pirate page, and the
template uses no ``|safe``. jinja2 (installed with Flask) is imported on first render.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from tracker.reports.data import VERDICT_LABELS, ReportData, reference_line
from tracker.reports.view import (
    EXCLUDED,
    MARKS,
    fmt_similarity,
    passage_rows,
    passages_open,
    region_rows,
)

if TYPE_CHECKING:
    from jinja2 import Template

TEMPLATE_PACKAGE = "tracker.reports"
TEMPLATE_DIR = "templates"
TEMPLATE_NAME = "report.html"

# Kept as a constant so the web app can allow exactly this stylesheet by its hash in
# the report's Content-Security-Policy (the file must also open on its own, offline).
REPORT_CSS = """
body{font-family:"Noto Sans CJK SC","PingFang SC","Microsoft YaHei",sans-serif;
color:#1d2330;margin:2rem auto;max-width:70rem;padding:0 1rem;line-height:1.6}
h1{font-size:1.5rem;border-bottom:2px solid #1d2330;padding-bottom:.4rem}
h2{font-size:1.15rem;margin-top:1.8rem;border-bottom:1px solid #ccd;padding-bottom:.2rem}
table{border-collapse:collapse;width:100%}
th,td{border:1px solid #ccd;padding:.35rem .5rem;vertical-align:top;text-align:left}
th{background:#f1f3f8;width:14rem;font-weight:600}
.passages th{width:auto}
.text{white-space:pre-wrap;word-break:break-all;font-family:inherit}
.warn{background:#fff4d6;border:1px solid #e8c25a;padding:.5rem .8rem}
.verdict-confirmed{color:#a4161a;font-weight:700}
.verdict-dismissed{color:#555}
.meta{color:#555;font-size:.9rem}
.hash{font-family:monospace;font-size:.85rem;word-break:break-all}
.alarm{background:#fde2e1;border:2px solid #a4161a;color:#7a0d10;font-weight:700;
padding:.6rem .8rem}
.timeline th{width:auto}
mark{padding:0 .05em;border-radius:2px;color:inherit}
.m-homophone{background:#ffc9c9;text-decoration:underline}
.m-variant{background:#c7dcff;text-decoration:underline}
.m-edit{background:#ffd8a8;text-decoration:underline}
.m-inserted{background:#fff3a3}
.m-deleted{background:#e2e2e2;text-decoration:line-through}
.legend mark{margin-right:.4rem}
.m-excluded{background:#e4dcf2;color:#555}
.note{white-space:pre-line}
summary{font-size:1.15rem;font-weight:600;margin-top:1.8rem;cursor:pointer}
@media (max-width:40rem){body{margin:1rem auto}th{width:auto}
.passages tr,.passages td{display:block;border:0}.passages tr{border-top:1px solid #ccd}}
"""


def safe_http_url(url: str) -> str | None:
    """``url`` when it is an http(s) URL, else None: a hostile ``javascript:`` URL must
    never become a link."""
    url = (url or "").strip()
    return url if re.match(r"^https?://", url, re.IGNORECASE) else None


def template_source() -> str:
    """The report template, read from the installed package (a wheel ships it)."""
    folder = resources.files(TEMPLATE_PACKAGE).joinpath(TEMPLATE_DIR)
    return folder.joinpath(TEMPLATE_NAME).read_text(encoding="utf-8")


@cache
def _template() -> Template:
    from jinja2 import Environment

    # autoescape on: every value in the data may come from a pirate page.
    return Environment(autoescape=True).from_string(template_source())


def render_html(data: ReportData) -> str:
    """The HTML evidence report: one self-contained page (no scripts, no external files)."""
    from markupsafe import Markup

    # The stylesheet is our constant (not data): marked safe so it is not entity-escaped,
    # which would also change the hash the web app's CSP allows it by.
    return _template().render(
        d=data,
        css=Markup(REPORT_CSS),
        labels=VERDICT_LABELS,
        marks=MARKS,
        rows=passage_rows,
        region_rows=region_rows,
        excluded=EXCLUDED,
        excluded_count=sum(len(r["excluded"]) for r in data["regions"]),
        passages_open=passages_open(len(data["passages"]), len(data["regions"])),
        sim=fmt_similarity,
        reference=reference_line(data),
    )
