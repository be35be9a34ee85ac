"""Evidence reports of one match (JSON, HTML, PDF) and exports of match lists (CSV, JSON).

An evidence report is what an anti-piracy team sends to a platform or a lawyer: the
work, the suspect page (URL, fetch and check times), the scores, every copied passage
side by side with its offsets and similarity, the reviewer's verdict and note, and
SHA-256 digests of both texts so that the evidence can be verified later. Headings are
bilingual (中文 / English).

Suspect text, titles and URLs come from pirate sites and are hostile: the HTML report
is rendered with autoescaping (no ``|safe``), the PDF escapes reportlab's paragraph
markup, and CSV cells that a spreadsheet would run as a formula are neutralised.

The PDF uses reportlab's built-in CID font ``STSong-Light`` (Adobe's Asian font pack
metrics, resolved by the PDF viewer), so Chinese renders with no font file to ship and
the text layer stays extractable.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from tracker import __version__
from tracker.store import Match, Mother, NotFound, Suspect

REPORT_FORMATS = ("json", "html", "pdf")
LIST_FORMATS = ("csv", "json")

# Columns of the CSV export, in order (the JSON export uses the same keys).
LIST_COLUMNS = (
    "match_id",
    "verdict",
    "score",
    "coverage",
    "mother_coverage",
    "mother_id",
    "mother_title",
    "suspect_id",
    "suspect_title",
    "suspect_url",
    "domain",
    "passages",
    "engine",
    "created_at",
    "updated_at",
    "note",
)

# Characters that reportlab and XML cannot carry (C0 controls except tab/newline,
# lone surrogates from hostile JSON): replaced so one bad byte cannot break a report.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def _clean(text: str) -> str:
    return _UNPRINTABLE.sub("\ufffd", text or "")


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def safe_http_url(url: str) -> str | None:
    """``url`` when it is an http(s) URL, else None: a hostile ``javascript:`` URL must
    never become a link."""
    url = (url or "").strip()
    return url if re.match(r"^https?://", url, re.IGNORECASE) else None


# --- the report's data ----------------------------------------------------------------
def report_data(library: Any, match_id: str) -> dict[str, Any]:
    """Everything a report shows, as JSON-serialisable data (the JSON report itself).

    Raises ``tracker.store.NotFound`` (a ``KeyError``) when the match does not exist.
    The mother or suspect may have been deleted since (a confirmed match is kept as
    evidence): their texts are then missing and the report says so.
    """
    store = library.store
    match: Match = store.get_match(match_id)
    mother: Mother | None
    suspect: Suspect | None
    try:
        mother = store.get_mother(match.mother_id)
    except (NotFound, KeyError):
        mother = None
    try:
        suspect = store.get_suspect(match.suspect_id)
    except (NotFound, KeyError):
        suspect = None

    warnings: list[str] = []
    if mother is None:
        warnings.append("作品已从作品库删除，无法显示原文 / The work was deleted from the library.")
    elif mother.ingested_at > match.updated_at:
        # Offsets point into the text that was checked; a replaced work may differ.
        warnings.append(
            "该作品在本次检测之后被重新导入，原文偏移可能不一致 / The work was re-imported "
            "after this check: its offsets may not match the current text."
        )
    if suspect is None:
        warnings.append("疑似页面记录已删除 / The suspect record was deleted.")

    passages = []
    for n, p in enumerate(sorted(match.passages, key=lambda p: p.suspect_start), 1):
        passages.append(
            {
                "n": n,
                "suspect_start": p.suspect_start,
                "suspect_end": p.suspect_end,
                "mother_start": p.mother_start,
                "mother_end": p.mother_end,
                "similarity": round(float(p.similarity), 4),
                "suspect_text": suspect.text[p.suspect_start : p.suspect_end] if suspect else None,
                "mother_text": mother.text[p.mother_start : p.mother_end] if mother else None,
            }
        )
    return {
        "report": "yinji-evidence",
        "version": 1,
        "generator": f"音迹 Yinji {__version__}",
        "generated_at": _iso(datetime.now(UTC)),
        "match_id": match.id,
        "work": {
            "id": match.mother_id,
            "title": mother.title if mother else match.mother_title,
            "source": mother.source if mother else "",
            "ingested_at": _iso(mother.ingested_at) if mother else None,
            "characters": len(mother.text) if mother else None,
            "sha256": _sha256(mother.text) if mother else None,
        },
        "suspect": {
            "id": match.suspect_id,
            "title": suspect.title if suspect else match.suspect_title,
            "url": suspect.url if suspect else match.suspect_url,
            "domain": (suspect.domain if suspect else "") or match.domain,
            "source": suspect.source if suspect else "",
            "fetched_at": _iso(suspect.fetched_at) if suspect else None,
            "checked_at": _iso(suspect.checked_at or match.updated_at)
            if suspect
            else _iso(match.updated_at),
            "characters": len(suspect.text) if suspect else None,
            "sha256": _sha256(suspect.text) if suspect else None,
            "raw_sha256": hashlib.sha256(suspect.raw).hexdigest()
            if suspect is not None and suspect.raw
            else None,
        },
        "score": round(float(match.score), 4),
        "coverage": round(float(match.coverage), 4),
        "mother_coverage": round(float(match.mother_coverage), 4),
        "engine": match.engine,
        "verdict": match.verdict,
        "note": match.note,
        "created_at": _iso(match.created_at),
        "updated_at": _iso(match.updated_at),
        "passages": passages,
        "warnings": warnings,
    }


VERDICT_LABELS = {
    "pending": "待审核 / Pending",
    "confirmed": "已确认侵权 / Confirmed",
    "dismissed": "已排除 / Dismissed",
}


def build_report(library: Any, match_id: str, fmt: str) -> bytes:
    """The evidence report of one match as ``json``, ``html`` or ``pdf`` bytes.

    Raises ``ValueError`` for another format and ``NotFound`` for an unknown match.
    """
    if fmt not in REPORT_FORMATS:
        raise ValueError(f"report format must be one of {', '.join(REPORT_FORMATS)}, got {fmt!r}")
    data = report_data(library, match_id)
    if fmt == "json":
        return json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8", errors="replace")
    if fmt == "html":
        return render_html(data).encode("utf-8", errors="replace")
    return render_pdf(data)


# --- HTML -------------------------------------------------------------------------------
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
"""

_HTML_TEMPLATE = """<!doctype html>
<html lang="zh-CN">
<head>
<meta charset="utf-8">
<title>证据报告 Evidence report — {{ d.work.title }}</title>
<style>{{ css }}</style>
</head>
<body>
<h1>侵权证据报告 / Copyright evidence report</h1>
<p class="meta">生成时间 Generated at: {{ d.generated_at }} · {{ d.generator }}
 · 编号 Case: {{ d.match_id|replace("\x1f", " / ") }}</p>
{% for w in d.warnings %}<p class="warn">{{ w }}</p>{% endfor %}

<h2>结论 / Verdict</h2>
<table>
<tr><th>审核结论 Verdict</th>
<td class="verdict-{{ d.verdict }}">{{ labels.get(d.verdict, d.verdict) }}</td></tr>
<tr><th>备注 Note</th><td class="text">{{ d.note or "—" }}</td></tr>
<tr><th>更新时间 Updated</th><td>{{ d.updated_at }}</td></tr>
</table>

<h2>原创作品 / Original work</h2>
<table>
<tr><th>作品编号 Work ID</th><td>{{ d.work.id }}</td></tr>
<tr><th>标题 Title</th><td>{{ d.work.title }}</td></tr>
<tr><th>来源 Source</th><td>{{ d.work.source or "—" }}</td></tr>
<tr><th>入库时间 Imported at</th><td>{{ d.work.ingested_at or "—" }}</td></tr>
<tr><th>字数 Characters</th>
<td>{{ d.work.characters if d.work.characters is not none else "—" }}</td></tr>
<tr><th>SHA-256</th><td class="hash">{{ d.work.sha256 or "—" }}</td></tr>
</table>

<h2>疑似侵权页面 / Suspect page</h2>
<table>
<tr><th>编号 Suspect ID</th><td>{{ d.suspect.id }}</td></tr>
<tr><th>标题 Title</th><td>{{ d.suspect.title or "—" }}</td></tr>
<tr><th>网址 URL</th><td class="hash">{{ d.suspect.url or "—" }}</td></tr>
<tr><th>站点 Site</th><td>{{ d.suspect.domain or "—" }}</td></tr>
<tr><th>抓取时间 Fetched at</th><td>{{ d.suspect.fetched_at or "—" }}</td></tr>
<tr><th>检测时间 Checked at</th><td>{{ d.suspect.checked_at or "—" }}</td></tr>
<tr><th>字数 Characters</th>
<td>{{ d.suspect.characters if d.suspect.characters is not none else "—" }}</td></tr>
<tr><th>文本 SHA-256 Text</th><td class="hash">{{ d.suspect.sha256 or "—" }}</td></tr>
{% if d.suspect.raw_sha256 %}<tr><th>原始页面 SHA-256 Raw page</th>
<td class="hash">{{ d.suspect.raw_sha256 }}</td></tr>{% endif %}
</table>

<h2>相似度 / Similarity</h2>
<table>
<tr><th>综合得分 Score</th><td>{{ "%.3f"|format(d.score) }}</td></tr>
<tr><th>疑似页面被抄比例 Suspect coverage</th><td>{{ "%.1f"|format(d.coverage * 100) }}%</td></tr>
<tr><th>原作被抄比例 Work coverage</th><td>{{ "%.1f"|format(d.mother_coverage * 100) }}%</td></tr>
<tr><th>抄袭段落数 Copied passages</th><td>{{ d.passages|length }}</td></tr>
<tr><th>检测引擎 Engine</th><td>{{ d.engine }}</td></tr>
</table>

<h2>抄袭段落对照 / Copied passages side by side</h2>
<table class="passages">
<tr><th>#</th><th>疑似页面文本 Suspect text</th><th>原作文本 Original text</th></tr>
{% for p in d.passages %}
<tr><td>{{ p.n }}<br><span class="meta">{{ "%.2f"|format(p.similarity) }}</span></td>
<td><div class="meta">[{{ p.suspect_start }}–{{ p.suspect_end }})</div>
<div class="text">{{ p.suspect_text if p.suspect_text is not none else "—" }}</div></td>
<td><div class="meta">[{{ p.mother_start }}–{{ p.mother_end }})</div>
<div class="text">{{ p.mother_text if p.mother_text is not none else "—" }}</div></td></tr>
{% endfor %}
</table>
<p class="meta">偏移为字符位置（Unicode 码点，起点含、终点不含）/ Offsets are character
positions (Unicode code points, start inclusive, end exclusive). 相似度 Similarity ∈ [0, 1].</p>
</body>
</html>
"""

_html_env: Any = None


def render_html(data: dict[str, Any]) -> str:
    """The HTML evidence report: one self-contained page (no scripts, no external files)."""
    global _html_env
    if _html_env is None:
        from jinja2 import Environment

        # autoescape on: every value in `data` may come from a pirate page.
        _html_env = Environment(autoescape=True)
    from markupsafe import Markup

    template = _html_env.from_string(_HTML_TEMPLATE)
    # The stylesheet is our constant (not data): marked safe so it is not entity-escaped,
    # which would also change the hash the web app's CSP allows it by.
    return template.render(d=data, css=Markup(REPORT_CSS), labels=VERDICT_LABELS)


# --- PDF --------------------------------------------------------------------------------
_PDF_FONT = "STSong-Light"
_CHUNK = 360  # characters of one table row of a passage: rows split across pages, cells don't


def _pdf_escape(text: str) -> str:
    from xml.sax.saxutils import escape

    # reportlab's Paragraph parses a small XML markup: escape it, keep line breaks.
    return escape(_clean(text)).replace("\n", "<br/>")


def _chunks(text: str, n: int) -> list[str]:
    size = max(1, math.ceil(len(text) / n)) if text else 1
    return [text[i * size : (i + 1) * size] for i in range(n)]


def render_pdf(data: dict[str, Any]) -> bytes:
    """The PDF evidence report (A4), Chinese text in the STSong-Light CID font."""
    from reportlab.lib import colors
    from reportlab.lib.enums import TA_LEFT
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    if _PDF_FONT not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(UnicodeCIDFont(_PDF_FONT))

    def style(name: str, size: float, **kw: Any) -> ParagraphStyle:
        # wordWrap CJK: Chinese has no spaces, lines may break between any characters.
        return ParagraphStyle(
            name,
            fontName=_PDF_FONT,
            fontSize=size,
            leading=size * 1.45,
            wordWrap="CJK",
            alignment=TA_LEFT,
            **kw,
        )

    h1 = style("h1", 16, spaceAfter=4 * mm)
    h2 = style(
        "h2", 12, spaceBefore=5 * mm, spaceAfter=2 * mm, textColor=colors.HexColor("#1d2330")
    )
    body = style("body", 9.5)
    small = style("small", 8, textColor=colors.HexColor("#555555"))
    warn = style("warn", 9.5, textColor=colors.HexColor("#8a5a00"))

    def p(text: Any, st: ParagraphStyle = body) -> Paragraph:
        return Paragraph(_pdf_escape("" if text is None else str(text)), st)

    grid = TableStyle(
        [
            ("GRID", (0, 0), (-1, -1), 0.5, colors.HexColor("#bbbbcc")),
            ("BACKGROUND", (0, 0), (0, -1), colors.HexColor("#f1f3f8")),
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ]
    )
    page_w = A4[0] - 30 * mm

    def kv_table(rows: list[tuple[str, Any]]) -> Table:
        t = Table(
            [[p(k), p("—" if v in (None, "") else v)] for k, v in rows],
            colWidths=[48 * mm, page_w - 48 * mm],
        )
        t.setStyle(grid)
        return t

    d = data
    w, s = d["work"], d["suspect"]
    story: list[Any] = [
        p("侵权证据报告 / Copyright evidence report", h1),
        p(
            f"生成时间 Generated at: {d['generated_at']} | {d['generator']} | "
            f"编号 Case: {d['match_id'].replace(chr(31), ' / ')}",
            small,
        ),
    ]
    for text in d["warnings"]:
        story.append(p(text, warn))
    story += [
        p("结论 / Verdict", h2),
        kv_table(
            [
                ("审核结论 Verdict", VERDICT_LABELS.get(d["verdict"], d["verdict"])),
                ("备注 Note", d["note"]),
                ("更新时间 Updated", d["updated_at"]),
            ]
        ),
        p("原创作品 / Original work", h2),
        kv_table(
            [
                ("作品编号 Work ID", w["id"]),
                ("标题 Title", w["title"]),
                ("来源 Source", w["source"]),
                ("入库时间 Imported at", w["ingested_at"]),
                ("字数 Characters", w["characters"]),
                ("SHA-256", w["sha256"]),
            ]
        ),
        p("疑似侵权页面 / Suspect page", h2),
        kv_table(
            [
                ("编号 Suspect ID", s["id"]),
                ("标题 Title", s["title"]),
                ("网址 URL", s["url"]),
                ("站点 Site", s["domain"]),
                ("抓取时间 Fetched at", s["fetched_at"]),
                ("检测时间 Checked at", s["checked_at"]),
                ("字数 Characters", s["characters"]),
                ("文本 SHA-256 Text", s["sha256"]),
                *([("原始页面 SHA-256 Raw page", s["raw_sha256"])] if s["raw_sha256"] else []),
            ]
        ),
        p("相似度 / Similarity", h2),
        kv_table(
            [
                ("综合得分 Score", f"{d['score']:.3f}"),
                ("疑似页面被抄比例 Suspect coverage", f"{d['coverage'] * 100:.1f}%"),
                ("原作被抄比例 Work coverage", f"{d['mother_coverage'] * 100:.1f}%"),
                ("抄袭段落数 Copied passages", len(d["passages"])),
                ("检测引擎 Engine", d["engine"]),
            ]
        ),
        p("抄袭段落对照 / Copied passages side by side", h2),
    ]
    rows: list[list[Any]] = [[p("#"), p("疑似页面文本 Suspect text"), p("原作文本 Original text")]]
    spans: list[tuple[int, int]] = []
    for ps in d["passages"]:
        stext = ps["suspect_text"] if ps["suspect_text"] is not None else "—"
        mtext = ps["mother_text"] if ps["mother_text"] is not None else "—"
        # A table cell cannot split across pages: long passages become several rows.
        n = max(1, math.ceil(max(len(stext), len(mtext)) / _CHUNK))
        first = len(rows)
        for i, (sc, mc) in enumerate(zip(_chunks(stext, n), _chunks(mtext, n), strict=True)):
            label = f"{ps['n']}\n{ps['similarity']:.2f}" if i == 0 else ""
            head_s = f"[{ps['suspect_start']}–{ps['suspect_end']})\n" if i == 0 else ""
            head_m = f"[{ps['mother_start']}–{ps['mother_end']})\n" if i == 0 else ""
            rows.append([p(label, small), p(head_s + sc), p(head_m + mc)])
        spans.append((first, len(rows) - 1))
    table = Table(
        rows, colWidths=[12 * mm, (page_w - 12 * mm) / 2, (page_w - 12 * mm) / 2], repeatRows=1
    )
    line = colors.HexColor("#bbbbcc")
    cmds: list[Any] = [
        ("BOX", (0, 0), (-1, -1), 0.5, line),
        ("LINEAFTER", (0, 0), (-2, -1), 0.5, line),
        ("LINEBELOW", (0, 0), (-1, 0), 0.5, line),
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#f1f3f8")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
    ]
    # A rule after each passage only: its continuation rows read as one block.
    for _first, last in spans:
        cmds.append(("LINEBELOW", (0, last), (-1, last), 0.5, line))
    table.setStyle(TableStyle(cmds))
    story += [
        table,
        Spacer(1, 3 * mm),
        p(
            "偏移为字符位置（Unicode 码点，起点含、终点不含）/ Offsets are character positions "
            "(Unicode code points, start inclusive, end exclusive). 相似度 Similarity ∈ [0, 1].",
            small,
        ),
    ]

    def footer(canvas: Any, doc: Any) -> None:
        canvas.saveState()
        canvas.setFont(_PDF_FONT, 8)
        canvas.setFillColor(colors.HexColor("#777777"))
        # "·" is not in the STSong-Light repertoire: plain separators in the PDF.
        canvas.drawString(15 * mm, 10 * mm, f"音迹 Yinji | {d['generated_at']}")
        canvas.drawRightString(A4[0] - 15 * mm, 10 * mm, f"{doc.page}")
        canvas.restoreState()

    out = io.BytesIO()
    doc = SimpleDocTemplate(
        out,
        pagesize=A4,
        leftMargin=15 * mm,
        rightMargin=15 * mm,
        topMargin=15 * mm,
        bottomMargin=18 * mm,
        title=_clean(f"证据报告 Evidence report — {w['title']}"),
        author="音迹 Yinji",
        subject=_clean(d["match_id"].replace("\x1f", " / ")),
        creator=d["generator"],
    )
    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    return out.getvalue()


# --- lists ------------------------------------------------------------------------------
def match_row(m: Match) -> dict[str, Any]:
    """One match as a flat row of the list exports."""
    return {
        "match_id": m.id,
        "verdict": m.verdict,
        "score": round(float(m.score), 4),
        "coverage": round(float(m.coverage), 4),
        "mother_coverage": round(float(m.mother_coverage), 4),
        "mother_id": m.mother_id,
        "mother_title": m.mother_title,
        "suspect_id": m.suspect_id,
        "suspect_title": m.suspect_title,
        "suspect_url": m.suspect_url,
        "domain": m.domain,
        "passages": len(m.passages),
        "engine": m.engine,
        "created_at": _iso(m.created_at),
        "updated_at": _iso(m.updated_at),
        "note": m.note,
    }


def _csv_cell(value: Any) -> Any:
    # A cell starting with = + - @ (or tab/CR) runs as a formula in Excel/LibreOffice:
    # a pirate page title must not become one (CSV injection).
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def render_match_list(matches: Iterable[Match], fmt: str) -> bytes:
    """A (filtered) list of matches as ``csv`` (UTF-8 with BOM, so Excel reads the
    Chinese) or ``json`` bytes."""
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\r\n")
        writer.writerow(LIST_COLUMNS)
        for m in matches:
            row = match_row(m)
            writer.writerow([_csv_cell(row[c]) for c in LIST_COLUMNS])
        return ("\ufeff" + buf.getvalue()).encode("utf-8", errors="replace")
    if fmt == "json":
        rows = [match_row(m) for m in matches]
        doc = {"generated_at": _iso(datetime.now(UTC)), "count": len(rows), "matches": rows}
        return json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8", errors="replace")
    raise ValueError(f"list format must be one of {', '.join(LIST_FORMATS)}, got {fmt!r}")
