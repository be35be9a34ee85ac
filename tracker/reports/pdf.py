"""The PDF evidence report (A4), built with reportlab in named steps: fonts, styles,
header, metadata tables, passages, footer, document.

The PDF uses reportlab's built-in CID font ``STSong-Light`` (Adobe's Asian font pack
metrics, resolved by the PDF viewer), so Chinese renders with no font file to ship and
the text layer stays extractable. Text is escaped for reportlab's paragraph markup.
reportlab is imported on first render.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracker.reports.data import VERDICT_LABELS, PassageData, ReportData, clean_text

if TYPE_CHECKING:
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import Flowable, Paragraph, Table

PDF_FONT = "STSong-Light"
_CHUNK = 360  # characters of one table row of a passage: rows split across pages, cells don't
_LINE = "#bbbbcc"
_SHADE = "#f1f3f8"


def render_pdf(data: ReportData) -> bytes:
    """The PDF evidence report (A4), Chinese text in the STSong-Light CID font."""
    _register_fonts()
    kit = _Kit.make()
    story = [
        *_header(data, kit),
        *_metadata_tables(data, kit),
        *_passages(data, kit),
    ]
    return _build(story, data)


# --- fonts and styles ---------------------------------------------------------------------
def _register_fonts() -> None:
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont

    if PDF_FONT not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(UnicodeCIDFont(PDF_FONT))


def _pdf_escape(text: str) -> str:
    from xml.sax.saxutils import escape

    # reportlab's Paragraph parses a small XML markup: escape it, keep line breaks.
    return escape(clean_text(text)).replace("\n", "<br/>")


def _chunks(text: str, n: int) -> list[str]:
    size = max(1, math.ceil(len(text) / n)) if text else 1
    return [text[i * size : (i + 1) * size] for i in range(n)]


@dataclass(frozen=True)
class _Kit:
    """The paragraph styles and the two building blocks every section uses."""

    h1: ParagraphStyle
    h2: ParagraphStyle
    body: ParagraphStyle
    small: ParagraphStyle
    warn: ParagraphStyle
    grid: Any  # TableStyle of the key/value tables
    page_width: float  # usable width between the margins

    @classmethod
    def make(cls) -> _Kit:
        from reportlab.lib import colors
        from reportlab.lib.enums import TA_LEFT
        from reportlab.lib.pagesizes import A4
        from reportlab.lib.styles import ParagraphStyle
        from reportlab.lib.units import mm
        from reportlab.platypus import TableStyle

        def style(name: str, size: float, **kw: Any) -> ParagraphStyle:
            # wordWrap CJK: Chinese has no spaces, lines may break between any characters.
            return ParagraphStyle(
                name,
                fontName=PDF_FONT,
                fontSize=size,
                leading=size * 1.45,
                wordWrap="CJK",
                alignment=TA_LEFT,
                **kw,
            )

        return cls(
            h1=style("h1", 16, spaceAfter=4 * mm),
            h2=style(
                "h2",
                12,
                spaceBefore=5 * mm,
                spaceAfter=2 * mm,
                textColor=colors.HexColor("#1d2330"),
            ),
            body=style("body", 9.5),
            small=style("small", 8, textColor=colors.HexColor("#555555")),
            warn=style("warn", 9.5, textColor=colors.HexColor("#8a5a00")),
            grid=TableStyle(
                [
                    ("GRID", (0, 0), (-1, -1), 0.5, colors.HexColor(_LINE)),
                    ("BACKGROUND", (0, 0), (0, -1), colors.HexColor(_SHADE)),
                    ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ]
            ),
            page_width=A4[0] - 30 * mm,
        )

    def p(self, text: Any, style: ParagraphStyle | None = None) -> Paragraph:
        """A paragraph of (escaped) text; None is an empty paragraph."""
        from reportlab.platypus import Paragraph

        return Paragraph(_pdf_escape("" if text is None else str(text)), style or self.body)

    def kv_table(self, rows: list[tuple[str, Any]]) -> Table:
        """A two-column table of labels and values; an empty value shows as "—"."""
        from reportlab.lib.units import mm
        from reportlab.platypus import Table

        table = Table(
            [[self.p(k), self.p("—" if v in (None, "") else v)] for k, v in rows],
            colWidths=[48 * mm, self.page_width - 48 * mm],
        )
        table.setStyle(self.grid)
        return table


# --- the sections -----------------------------------------------------------------------
def _header(d: ReportData, kit: _Kit) -> list[Flowable]:
    """The title, the generation line and the warnings."""
    story: list[Flowable] = [
        kit.p("侵权证据报告 / Copyright evidence report", kit.h1),
        kit.p(
            f"生成时间 Generated at: {d['generated_at']} | {d['generator']} | "
            f"编号 Case: {d['match_id'].replace(chr(31), ' / ')}",
            kit.small,
        ),
    ]
    story += [kit.p(text, kit.warn) for text in d["warnings"]]
    return story


def _metadata_tables(d: ReportData, kit: _Kit) -> list[Flowable]:
    """Verdict, original work, suspect page and similarity, each a heading and a table."""
    w, s = d["work"], d["suspect"]
    raw_page = [("原始页面 SHA-256 Raw page", s["raw_sha256"])] if s["raw_sha256"] else []
    return [
        kit.p("结论 / Verdict", kit.h2),
        kit.kv_table(
            [
                ("审核结论 Verdict", VERDICT_LABELS.get(d["verdict"], d["verdict"])),
                ("备注 Note", d["note"]),
                ("更新时间 Updated", d["updated_at"]),
            ]
        ),
        kit.p("原创作品 / Original work", kit.h2),
        kit.kv_table(
            [
                ("作品编号 Work ID", w["id"]),
                ("标题 Title", w["title"]),
                ("来源 Source", w["source"]),
                ("入库时间 Imported at", w["ingested_at"]),
                ("字数 Characters", w["characters"]),
                ("SHA-256", w["sha256"]),
            ]
        ),
        kit.p("疑似侵权页面 / Suspect page", kit.h2),
        kit.kv_table(
            [
                ("编号 Suspect ID", s["id"]),
                ("标题 Title", s["title"]),
                ("网址 URL", s["url"]),
                ("站点 Site", s["domain"]),
                ("抓取时间 Fetched at", s["fetched_at"]),
                ("检测时间 Checked at", s["checked_at"]),
                ("字数 Characters", s["characters"]),
                ("文本 SHA-256 Text", s["sha256"]),
                *raw_page,
            ]
        ),
        kit.p("相似度 / Similarity", kit.h2),
        kit.kv_table(
            [
                ("综合得分 Score", f"{d['score']:.3f}"),
                ("疑似页面被抄比例 Suspect coverage", f"{d['coverage'] * 100:.1f}%"),
                ("原作被抄比例 Work coverage", f"{d['mother_coverage'] * 100:.1f}%"),
                ("抄袭段落数 Copied passages", len(d["passages"])),
                ("检测引擎 Engine", d["engine"]),
            ]
        ),
    ]


def _passage_rows(ps: PassageData, kit: _Kit) -> list[list[Paragraph]]:
    """One passage as table rows: a table cell cannot split across pages, so a long
    passage becomes several rows (offsets and similarity on the first)."""
    stext = ps["suspect_text"] if ps["suspect_text"] is not None else "—"
    mtext = ps["mother_text"] if ps["mother_text"] is not None else "—"
    n = max(1, math.ceil(max(len(stext), len(mtext)) / _CHUNK))
    rows = []
    for i, (sc, mc) in enumerate(zip(_chunks(stext, n), _chunks(mtext, n), strict=True)):
        label = f"{ps['n']}\n{ps['similarity']:.2f}" if i == 0 else ""
        head_s = f"[{ps['suspect_start']}–{ps['suspect_end']})\n" if i == 0 else ""
        head_m = f"[{ps['mother_start']}–{ps['mother_end']})\n" if i == 0 else ""
        rows.append([kit.p(label, kit.small), kit.p(head_s + sc), kit.p(head_m + mc)])
    return rows


def _passages(d: ReportData, kit: _Kit) -> list[Flowable]:
    """The copied passages side by side, then the note on offsets."""
    from reportlab.lib import colors
    from reportlab.lib.units import mm
    from reportlab.platypus import Spacer, Table, TableStyle

    rows: list[list[Paragraph]] = [
        [kit.p("#"), kit.p("疑似页面文本 Suspect text"), kit.p("原作文本 Original text")]
    ]
    last_rows: list[int] = []
    for ps in d["passages"]:
        rows += _passage_rows(ps, kit)
        last_rows.append(len(rows) - 1)
    text_width = (kit.page_width - 12 * mm) / 2
    table = Table(rows, colWidths=[12 * mm, text_width, text_width], repeatRows=1)
    line = colors.HexColor(_LINE)
    cmds: list[Any] = [
        ("BOX", (0, 0), (-1, -1), 0.5, line),
        ("LINEAFTER", (0, 0), (-2, -1), 0.5, line),
        ("LINEBELOW", (0, 0), (-1, 0), 0.5, line),
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor(_SHADE)),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
    ]
    # A rule after each passage only: its continuation rows read as one block.
    cmds += [("LINEBELOW", (0, last), (-1, last), 0.5, line) for last in last_rows]
    table.setStyle(TableStyle(cmds))
    return [
        kit.p("抄袭段落对照 / Copied passages side by side", kit.h2),
        table,
        Spacer(1, 3 * mm),
        kit.p(
            "偏移为字符位置（Unicode 码点，起点含、终点不含）/ Offsets are character positions "
            "(Unicode code points, start inclusive, end exclusive). 相似度 Similarity ∈ [0, 1].",
            kit.small,
        ),
    ]


# --- footer and document ---------------------------------------------------------------
def _footer(d: ReportData) -> Callable[[Any, Any], None]:
    """Draws the generator, time and page number at the bottom of every page."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.units import mm

    def footer(canvas: Any, doc: Any) -> None:
        canvas.saveState()
        canvas.setFont(PDF_FONT, 8)
        canvas.setFillColor(colors.HexColor("#777777"))
        # "·" is not in the STSong-Light repertoire: plain separators in the PDF.
        canvas.drawString(15 * mm, 10 * mm, f"音迹 Yinji | {d['generated_at']}")
        canvas.drawRightString(A4[0] - 15 * mm, 10 * mm, f"{doc.page}")
        canvas.restoreState()

    return footer


def _build(story: list[Flowable], d: ReportData) -> bytes:
    """Lay the story out on A4 pages with the document metadata and the footer."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.units import mm
    from reportlab.platypus import SimpleDocTemplate

    out = io.BytesIO()
    doc = SimpleDocTemplate(
        out,
        pagesize=A4,
        leftMargin=15 * mm,
        rightMargin=15 * mm,
        topMargin=15 * mm,
        bottomMargin=18 * mm,
        title=clean_text(f"证据报告 Evidence report — {d['work']['title']}"),
        author="音迹 Yinji",
        subject=clean_text(d["match_id"].replace("\x1f", " / ")),
        creator=d["generator"],
    )
    footer = _footer(d)
    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    return out.getvalue()
