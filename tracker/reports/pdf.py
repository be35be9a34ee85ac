"""The PDF evidence report (A4), built with reportlab in named steps: fonts, styles,
header, timeline, metadata tables, passages, footer, document, PDF/A.

Every glyph is set in the one CJK TrueType font of ``tracker.plumbing.fonts``, embedded as a
subset (``FontFile2``) with a ``ToUnicode`` map: the report looks the same on every
reader, nothing is left to the reader's font substitution (which is how "C opyright"
falls apart), and the text layer stays extractable. No base-14 font is referenced (the
canvas's initial font is ours too). Headings keep with what follows them.

The finished file is made PDF/A-2b by ``pdfa.make_pdfa`` (XMP metadata with the
``pdfaid`` schema, an sRGB output intent, a document ID). Text is escaped for
reportlab's paragraph markup. reportlab is imported on first render.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracker.plumbing.fonts import register_cjk_font
from tracker.reports.data import (
    VERDICT_LABELS,
    ReportData,
    WorkInfo,
    clean_text,
    reference_line,
)
from tracker.reports.view import (
    EXCLUDED,
    MARKS,
    Piece,
    Row,
    fmt_similarity,
    passage_rows,
    region_rows,
)

if TYPE_CHECKING:
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import Flowable, Paragraph, Table

_CHUNK = 360  # characters of one table row of a passage: rows split across pages, cells don't
_LINE = "#bbbbcc"
_SHADE = "#f1f3f8"
# Marks of differing characters: a background colour, and for print in black and white
# an underline (substituted) or a strike-through (only in the original).
_MARK_STYLE = {
    "homophone": ("#ffc9c9", "u"),
    "variant": ("#c7dcff", "u"),
    "edit": ("#ffd8a8", "u"),
    "inserted": ("#fff3a3", ""),
    "deleted": ("#e2e2e2", "strike"),
    # a region's excluded span (an inserted ad or watermark line): struck through
    "excluded": ("#e4dcf2", "strike"),
}


def render_pdf(data: ReportData, *, pdfa: bool = True) -> bytes:
    """The PDF evidence report (A4) with its CJK font embedded; PDF/A-2b unless
    ``pdfa`` is False (or pikepdf is missing: the report then says so in a log line)."""
    font = register_cjk_font()
    kit = _Kit.make(font)
    story = [
        *_header(data, kit),
        *_timeline(data, kit),
        *_metadata_tables(data, kit),
        *_regions(data, kit),
        *_passages(data, kit),
    ]
    pdf = _build(story, data, font)
    if pdfa:
        from tracker.reports.pdfa import make_pdfa

        pdf = make_pdfa(pdf, title=_title(data), author="音迹 Yinji", subject=_subject(data))
    return pdf


# --- text and styles --------------------------------------------------------------------
def _pdf_escape(text: str) -> str:
    from xml.sax.saxutils import escape

    # reportlab's Paragraph parses a small XML markup: escape it, keep line breaks.
    return escape(clean_text(text)).replace("\n", "<br/>")


def _piece_markup(piece: Piece) -> str:
    text = _pdf_escape(piece.text)
    if not piece.mark or not text:
        return text
    colour, decoration = _MARK_STYLE[piece.mark]
    if decoration:
        text = f"<{decoration}>{text}</{decoration}>"
    return f'<font backColor="{colour}">{text}</font>'


def _split_pieces(pieces: tuple[Piece, ...] | None, n: int) -> list[str]:
    """The marked text cut into ``n`` markup chunks of about equal length (a long
    passage becomes several table rows: a table cell cannot split across pages)."""
    if pieces is None:
        return ["—"] + [""] * (n - 1)
    total = sum(len(p.text) for p in pieces)
    size = max(1, math.ceil(total / n)) if total else 1
    chunks: list[list[Piece]] = [[] for _ in range(n)]
    position = 0
    for piece in pieces:
        text = piece.text
        while text:
            index = min(n - 1, position // size)
            room = (index + 1) * size - position if index < n - 1 else len(text)
            part, text = text[:room], text[room:]
            chunks[index].append(Piece(part, piece.mark))
            position += len(part)
    return ["".join(_piece_markup(p) for p in chunk) for chunk in chunks]


@dataclass(frozen=True)
class _Kit:
    """The paragraph styles and the two building blocks every section uses."""

    h1: ParagraphStyle
    h2: ParagraphStyle
    body: ParagraphStyle
    small: ParagraphStyle
    warn: ParagraphStyle
    alarm: ParagraphStyle
    grid: Any  # TableStyle of the key/value tables
    page_width: float  # usable width between the margins
    font: str  # the registered CJK font

    @classmethod
    def make(cls, font: str) -> _Kit:
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
                fontName=font,
                fontSize=size,
                leading=size * 1.45,
                wordWrap="CJK",
                alignment=TA_LEFT,
                **kw,
            )

        return cls(
            h1=style("h1", 16, spaceAfter=3 * mm),
            h2=style(
                "h2",
                12,
                spaceBefore=5 * mm,
                spaceAfter=2 * mm,
                keepWithNext=1,  # a heading never ends a page without what follows it
                textColor=colors.HexColor("#1d2330"),
            ),
            body=style("body", 9.5),
            small=style("small", 8, textColor=colors.HexColor("#555555")),
            warn=style("warn", 9.5, textColor=colors.HexColor("#8a5a00"), spaceBefore=1 * mm),
            alarm=style(
                "alarm",
                10.5,
                textColor=colors.HexColor("#7a0d10"),
                backColor=colors.HexColor("#fde2e1"),
                borderColor=colors.HexColor("#a4161a"),
                borderWidth=1,
                borderPadding=2 * mm,
                spaceBefore=3 * mm,
                spaceAfter=3 * mm,
            ),
            grid=TableStyle(
                [
                    # Tables set their cells' font even around paragraphs: ours, not Helvetica.
                    ("FONTNAME", (0, 0), (-1, -1), font),
                    ("GRID", (0, 0), (-1, -1), 0.5, colors.HexColor(_LINE)),
                    ("BACKGROUND", (0, 0), (0, -1), colors.HexColor(_SHADE)),
                    ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ]
            ),
            page_width=A4[0] - 30 * mm,
            font=font,
        )

    def p(self, text: Any, style: ParagraphStyle | None = None) -> Paragraph:
        """A paragraph of (escaped) text; None is an empty paragraph."""
        from reportlab.platypus import Paragraph

        return Paragraph(_pdf_escape("" if text is None else str(text)), style or self.body)

    def markup(self, markup: str, style: ParagraphStyle | None = None) -> Paragraph:
        """A paragraph of markup built here from escaped text (the passage marks)."""
        from reportlab.platypus import Paragraph

        return Paragraph(markup, style or self.body)

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
            f"生成时间 Generated at: {d['generated_at']} | {d['generator']} | {reference_line(d)}",
            kit.small,
        ),
    ]
    story += [kit.p(text, kit.alarm) for text in d["timeline_problems"]]
    story += [kit.p(text, kit.warn) for text in d["warnings"]]
    return story


def _timeline(d: ReportData, kit: _Kit) -> list[Flowable]:
    """Imported, fetched (or submitted), checked, verdict: recorded times only."""
    from reportlab.lib.units import mm
    from reportlab.platypus import Table

    rows = [[kit.p("事件 Event"), kit.p("时间 Time (UTC)"), kit.p("依据 Source")]]
    rows += [[kit.p(e["label"]), kit.p(e["at"] or "—"), kit.p(e["note"])] for e in d["timeline"]]
    table = Table(rows, colWidths=[48 * mm, 45 * mm, kit.page_width - 93 * mm], repeatRows=1)
    table.setStyle(kit.grid)
    return [kit.p("时间线 / Timeline", kit.h2), table]


def _book_rows(w: WorkInfo) -> list[tuple[str, object]]:
    """The book and chapter of a chapter work (none for a work in no book)."""
    if not w["book_id"]:
        return []
    rows: list[tuple[str, object]] = [
        ("书与章节 Book and chapter", f"{w['chapter_zh']} / {w['chapter_en']}")
    ]
    if w["author"]:
        rows.append(("作者 Author", w["author"]))
    return rows


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
                *_book_rows(w),
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
                (
                    ("抓取时间 Fetched at", s["fetched_at"])
                    if s["fetched"]
                    else (
                        "抓取时间 Fetched at",
                        "提交的文本，未抓取 / submitted text, not fetched"
                        + (f" (收到 received {s['received_at']})" if s["received_at"] else ""),
                    )
                ),
                ("检测时间 Checked at", s["checked_at"]),
                ("字数 Characters", s["characters"]),
                ("文本 SHA-256 Text", s["sha256"]),
                *raw_page,
            ]
        ),
        *_capture(d, kit),
        kit.p("相似度 / Similarity", kit.h2),
        kit.kv_table(
            [
                ("综合得分 Score", f"{d['score']:.3f}"),
                ("疑似页面被抄比例 Suspect coverage", f"{d['coverage'] * 100:.1f}%"),
                ("原作被抄比例 Work coverage", f"{d['mother_coverage'] * 100:.1f}%"),
                *([("抄袭区域数 Copied regions", len(d["regions"]))] if d["regions"] else []),
                ("抄袭段落数 Copied passages", len(d["passages"])),
                ("检测引擎 Engine", d["engine"]),
            ]
        ),
    ]


def _capture(d: ReportData, kit: _Kit) -> list[Flowable]:
    """The evidence log's capture of the page, when there is one."""
    c = d["capture"]
    if c is None:
        return []
    tls = f"{c['tls_subject']}\nSHA-256 {c['tls_fingerprint_sha256']}" if c["tls_subject"] else None
    log_record = c["log_index"] if c["log_index"] is not None else "—"
    return [
        kit.p("页面抓取记录 / Page capture", kit.h2),
        kit.kv_table(
            [
                ("请求网址 Requested URL", c["requested_url"]),
                *[(f"跳转 Redirect {i}", hop) for i, hop in enumerate(c["redirects"], 1)],
                ("最终网址 Final URL", c["final_url"]),
                ("服务器地址 Server address", c["resolved_ip"]),
                ("HTTP 状态 Status", c["http_status"]),
                ("抓取时间 Fetched at", c["fetched_at"]),
                ("页面 SHA-256 Body", f"{c['body_sha256']} ({c['body_size']} bytes)"),
                ("文本 SHA-256 Text", c["text_sha256"]),
                ("TLS 证书 Certificate", tls),
                ("截图 Screenshot", c["screenshot_sha256"] or c["screenshot_none_reason"]),
                ("证据日志记录 Log record", f"{log_record} | {c['crawler_version']}"),
            ]
        ),
    ]


def _row_cells(row: Row, kit: _Kit) -> list[list[Paragraph]]:
    """One passage row as table rows: a long passage becomes several (offsets and
    similarities on the first)."""
    length = max(
        sum(len(p.text) for p in row.suspect or ()), sum(len(p.text) for p in row.mother or ())
    )
    n = max(1, math.ceil(length / _CHUNK))
    cells = []
    for i, (sc, mc) in enumerate(
        zip(_split_pieces(row.suspect, n), _split_pieces(row.mother, n), strict=True)
    ):
        if i == 0:
            label = (
                f"{row.label}\n{row.note}"
                if row.note
                else f"{row.label}\n字符 chars {fmt_similarity(row.char_similarity)}"
                f"\n首字母 initials {fmt_similarity(row.initials_similarity)}"
            )
            head_s = _pdf_escape(row.suspect_range) + "<br/>"
            head_m = _pdf_escape(row.mother_range) + "<br/>"
        else:
            label, head_s, head_m = "", "", ""
        cells.append([kit.p(label, kit.small), kit.markup(head_s + sc), kit.markup(head_m + mc)])
    return cells


def _legend(kit: _Kit) -> Paragraph:
    marks = " ".join(_piece_markup(Piece(label, name)) for name, label in MARKS)
    return kit.markup(
        "标记 Marks: " + marks + " | 相似度 Similarity: 字符 characters / 首字母 pinyin initials",
        kit.small,
    )


def _side_by_side(rows_of: list[list[Row]], kit: _Kit, label_mm: float) -> Table:
    """Rows side by side (label, suspect, original), a rule after each group."""
    from reportlab.lib import colors
    from reportlab.lib.units import mm
    from reportlab.platypus import Table, TableStyle

    rows: list[list[Paragraph]] = [
        [kit.p("#"), kit.p("疑似页面文本 Suspect text"), kit.p("原作文本 Original text")]
    ]
    last_rows: list[int] = []
    for group in rows_of:
        for row in group:
            rows += _row_cells(row, kit)
            last_rows.append(len(rows) - 1)
    label_width = label_mm * mm
    text_width = (kit.page_width - label_width) / 2
    table = Table(rows, colWidths=[label_width, text_width, text_width], repeatRows=1)
    line = colors.HexColor(_LINE)
    cmds: list[Any] = [
        ("FONTNAME", (0, 0), (-1, -1), kit.font),
        ("BOX", (0, 0), (-1, -1), 0.5, line),
        ("LINEAFTER", (0, 0), (-2, -1), 0.5, line),
        ("LINEBELOW", (0, 0), (-1, 0), 0.5, line),
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor(_SHADE)),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
    ]
    # A rule after each passage only: its continuation rows read as one block.
    cmds += [("LINEBELOW", (0, last), (-1, last), 0.5, line) for last in last_rows]
    table.setStyle(TableStyle(cmds))
    return table


def _regions(d: ReportData, kit: _Kit) -> list[Flowable]:
    """The copied regions side by side (one row each, the excluded spans struck
    through), before the passages they are made of; none for a match stored without
    regions."""
    from reportlab.lib.units import mm
    from reportlab.platypus import Spacer

    if not d["regions"]:
        return []
    excluded = sum(len(r["excluded"]) for r in d["regions"])
    return [
        kit.p("抄袭区域对照 / Copied regions side by side", kit.h2),
        kit.markup(
            _pdf_escape(
                f"{len(d['regions'])} 个区域，由 {len(d['passages'])} 个段落组成；"
                f"区域内原作该处没有的插入文字 {excluded} 处已排除，"
                "不计入相似度 / "
                f"{len(d['regions'])} region(s) made of {len(d['passages'])} passage(s); "
                f"{excluded} inserted span(s) the work does not hold at that place are "
                "excluded and not counted in the similarity. "
            )
            + "标记 Mark: "
            + _piece_markup(Piece(EXCLUDED[1], EXCLUDED[0])),
            kit.small,
        ),
        Spacer(1, 2 * mm),
        _side_by_side([[row] for row in region_rows(d["regions"])], kit, 34),
        Spacer(1, 3 * mm),
    ]


def _passages(d: ReportData, kit: _Kit) -> list[Flowable]:
    """The copied passages side by side with their marks, then the note on offsets."""
    from reportlab.lib.units import mm
    from reportlab.platypus import Spacer

    table = _side_by_side([passage_rows(ps) for ps in d["passages"]], kit, 24)
    return [
        kit.p("抄袭段落对照 / Copied passages side by side", kit.h2),
        _legend(kit),
        Spacer(1, 2 * mm),
        table,
        Spacer(1, 3 * mm),
        kit.p(
            "偏移为字符位置（Unicode 码点，起点含、终点不含）/ Offsets are character positions "
            "(Unicode code points, start inclusive, end exclusive). 相似度 Similarity ∈ [0, 1]: "
            "字符相似度 = 2 × 相同字符数 / 两段总字数 (characters in common); 首字母相似度 is "
            "measured on the pinyin initials the engines match on, so a homophone copy scores "
            "high there and lower on characters.",
            kit.small,
        ),
    ]


# --- footer and document ---------------------------------------------------------------
def _title(d: ReportData) -> str:
    return clean_text(f"证据报告 Evidence report — {d['work']['title']}")


def _subject(d: ReportData) -> str:
    return clean_text(d["match_id"].replace("\x1f", " / "))


def _footer(d: ReportData, font: str) -> Callable[[Any, Any], None]:
    """Draws the generator, time and page number at the bottom of every page."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.units import mm

    def footer(canvas: Any, doc: Any) -> None:
        canvas.saveState()
        canvas.setFont(font, 8)
        canvas.setFillColor(colors.HexColor("#777777"))
        canvas.drawString(15 * mm, 10 * mm, f"音迹 Yinji | {d['generated_at']}")
        canvas.drawRightString(A4[0] - 15 * mm, 10 * mm, f"{doc.page}")
        canvas.restoreState()

    return footer


def _build(story: list[Flowable], d: ReportData, font: str) -> bytes:
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
        title=_title(d),
        author="音迹 Yinji",
        subject=_subject(d),
        creator=d["generator"],
        lang="zh-CN",
        initialFontName=font,  # never a base-14 font, not even the canvas's initial one
    )
    footer = _footer(d, font)
    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    return out.getvalue()
