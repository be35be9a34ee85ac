"""What a notice template sees and how it is rendered: ``notice_context`` (only the
stored facts of ``tracker.cases.facts``, per URL, grouped by book and chapter), Jinja's
sandbox bounded in loops, values and output (``TemplateTooCostly``), and the check that a
rendered notice holds every element the law asks for (``NoticeIncomplete``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date as Date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.common.timefmt import human_utc

from .facts import NoticeFacts, URLFact, zh_title
from .model import Case, CaseError, Profile, page_label
from .notice_text import (
    BUDGET_NAME,
    EN_REQUIRED,
    MAX_NOTICE_CHARS,
    MAX_TEMPLATE_ITERATIONS,
    MAX_TEMPLATE_VALUE,
    TEMPLATE_DIR,
    ZH_REQUIRED,
    Notice,
    NoticeIncomplete,
    TemplateTooCostly,
    notice_reference,
)

if TYPE_CHECKING:
    from .platforms import Platform


def _environment(templates_dir: Path | None) -> Any:
    from jinja2 import ChoiceLoader, FileSystemLoader, StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def _generate(self, source: Any, *args: Any, **kwargs: Any) -> str:
            # Every {% for %} iterates through the rendering's step budget, so nested
            # loops over big values cannot run for hours (jinja2 3.x compiles the AST
            # here: the one place all loops pass through).
            from jinja2 import nodes

            for loop in source.find_all(nodes.For):
                loop.iter = nodes.Call(nodes.Name(BUDGET_NAME, "load"), [loop.iter], [], None, None)
            return str(super()._generate(source, *args, **kwargs))

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**":
                if isinstance(right, int | float) and abs(right) > 64:
                    raise TemplateTooCostly(f"notice template: exponent {right} is too large")
                return left**right
            for seq, times in ((left, right), (right, left)):
                sized = isinstance(seq, str | list | tuple) and isinstance(times, int)
                if sized and len(seq) * times > MAX_TEMPLATE_VALUE:
                    raise TemplateTooCostly(
                        f"notice template: a value of {len(seq) * times:,} items is more "
                        f"than a notice needs (at most {MAX_TEMPLATE_VALUE:,})"
                    )
            return left * right

    loaders = []
    if templates_dir is not None and templates_dir.is_dir():
        loaders.append(FileSystemLoader(str(templates_dir)))
    loaders.append(FileSystemLoader(str(TEMPLATE_DIR)))
    return BoundedSandbox(
        loader=ChoiceLoader(loaders),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # plain text: each renderer escapes for its own format
    )


def _budgeted(budget: list[int]) -> Any:
    """Each item of a template's loops takes one step of the rendering's budget."""

    def steps(iterable: Any) -> Any:
        for item in iterable:
            budget[0] -= 1
            if budget[0] < 0:
                raise TemplateTooCostly(
                    f"notice template: loops of more than {MAX_TEMPLATE_ITERATIONS:,} steps in all"
                )
            yield item

    return steps


def _bounded_range(budget: list[int]) -> Any:
    def bounded(*args: int) -> Any:
        numbers = range(*args)
        if len(numbers) > MAX_TEMPLATE_ITERATIONS:
            raise TemplateTooCostly(
                f"notice template: range of {len(numbers):,} steps is more than a notice "
                f"needs (at most {MAX_TEMPLATE_ITERATIONS:,})"
            )
        if len(numbers) > budget[0]:
            raise TemplateTooCostly(
                f"notice template: loops of more than {MAX_TEMPLATE_ITERATIONS:,} steps in all"
            )
        for n in numbers:
            budget[0] -= 1
            if budget[0] < 0:
                raise TemplateTooCostly(
                    f"notice template: loops of more than {MAX_TEMPLATE_ITERATIONS:,} steps in all"
                )
            yield n

    return bounded


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


def _ratio(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _pages_span(urls: Sequence[str]) -> tuple[str, str]:
    """(zh, en) naming pages 1 to N of a chapter taken together."""
    n = len(urls)
    return f"第 1–{n} 页合计", f"pages 1–{n} together"


# Regions whose similarity a notice lists one by one (more are summed up: "…").
REGIONS_LISTED = 5


def _url_context(f: URLFact, lang: str) -> dict[str, Any]:
    when = human_utc(f.at) if f.at is not None else ""
    together_zh, together_en = _pages_span(f.together) if f.together else ("", "")
    return {
        "case_id": f.case_id,
        "url": f.url,
        "label": f.label,
        "work_id": f.work_id,
        "work_title": f.work_title,
        "work_title_zh": zh_title(f.work_title),
        "book_id": f.book_id,
        "author": f.author,
        "chapter": f.chapter,
        "chapter_index": f.chapter_index,
        "chapter_zh": f.chapter_zh(),
        "chapter_en": f.chapter_en(),
        "page": f.page,
        "page_zh": page_label(f.page, "zh"),
        "page_en": page_label(f.page, "en"),
        "together": list(f.together),
        "together_zh": together_zh,
        "together_en": together_en,
        "char_similarity": _ratio(f.char_similarity),
        "initials_similarity": _ratio(f.initials_similarity),
        "coverage_pct": _pct(f.coverage),
        # The match's stored regions: how many, each one's similarity on pinyin
        # initials (the first REGIONS_LISTED), the inserted spans they exclude.
        "regions": len(f.regions),
        "region_similarities": [_ratio(r.similarity) for r in f.regions[:REGIONS_LISTED]],
        "regions_more": len(f.regions) > REGIONS_LISTED,
        "regions_excluded": sum(r.excluded for r in f.regions),
        "fetched": f.fetched,
        "fetched_at": when if f.fetched else "",
        "submitted_at": "" if f.fetched else when,
        "content_sha256": f.content_sha256 or "",
        "evidence_file": f.evidence_file,
        "evidence_sha256": f.evidence_sha256,
    }


def notice_context(
    cases: Sequence[Case],
    profile: Profile,
    facts: NoticeFacts,
    *,
    lang: str,
    to: str | None = None,
    attachments: Sequence[str] = (),
    today: Date | None = None,
    evidence_key: str = "",
    platform: Platform | None = None,
) -> dict[str, object]:
    """What the templates see (documented in docs/TAKEDOWN.md): only the stored facts
    of ``facts`` (``tracker.cases.facts``), one entry per confirmed URL; ``platform``
    (``tracker.cases.platforms.Platform``) names the addressee when the registry
    knows the site."""
    today = today or Date.today()
    reference = notice_reference((c.id for c in cases), today)
    items = []
    first = {f.case_id: i for i, f in reversed(list(enumerate(facts.urls)))}
    every = [_url_context(f, lang) for f in facts.urls]  # chapter order over the notice
    books = _books(every)  # each book once, whichever of the cases its pages are in
    for number, book in enumerate(books, 1):
        book["number"] = number
    for c in sorted(cases, key=lambda c: first.get(c.id, len(first))):
        urls = [u for u in every if u["case_id"] == c.id]
        if not urls:
            continue
        works = list(dict.fromkeys(u["work_title"] for u in urls))
        items.append(
            {
                "id": c.id,
                "work": c.work,
                "work_title": " / ".join(works),
                "work_title_zh": "、".join(zh_title(w) for w in works),
                "works": works,
                "books": _books(urls),
                "domain": c.domain,
                "state": c.state,
                "kind": c.kind,
                "urls": urls,
            }
        )
    return {
        "lang": lang,
        "platform": cases[0].domain,
        "platform_name": platform.display_name(lang) if platform is not None else "",
        "platform_form": platform.web_form or "" if platform is not None else "",
        "to": to or "",
        "reference": reference,
        "evidence_key": evidence_key,
        "any_fetched": any(f.fetched for f in facts.urls),
        "any_submitted": any(not f.fetched for f in facts.urls),
        "date": today.isoformat()
        if lang == "en"
        else f"{today.year}年{today.month}月{today.day}日",
        "holder": {
            "name": profile.name,
            "contact": profile.contact,
            "email": profile.email,
            "phone": profile.phone,
            "address": profile.address,
        },
        "cases": items,
        "books": books,
        "works_count": len(books),
        "attachments": list(attachments),
    }


def _books(urls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """URLs (in chapter order) grouped by book (or work), then by chapter: a book is
    named once, with the cases its URLs are in, each chapter once, each page under
    its chapter."""
    books: dict[str, dict[str, Any]] = {}
    for u in urls:
        key = u["book_id"] or u["work_title"]
        book = books.setdefault(
            key,
            {
                "id": u["book_id"],
                "title": u["work_title"],
                "title_zh": zh_title(u["work_title"]),
                "author": u["author"],
                "case_ids": [],
                "chapters": [],
                "urls": [],
            },
        )
        book["urls"].append(u)
        if u["case_id"] not in book["case_ids"]:
            book["case_ids"].append(u["case_id"])
        in_book = bool(u["book_id"]) and bool(u["chapter"] or u["chapter_index"])
        chapter_key = (u["chapter_index"], u["chapter"]) if in_book else None
        chapters = book["chapters"]
        if not chapters or chapters[-1]["key"] != chapter_key:
            chapters.append(
                {
                    "key": chapter_key,
                    "index": u["chapter_index"],
                    "title": u["chapter"],
                    "zh": u["chapter_zh"] if in_book and u["chapter"] else "",
                    "en": u["chapter_en"] if in_book else "",
                    "urls": [],
                }
            )
        chapters[-1]["urls"].append(u)
    for book in books.values():
        for chapter in book["chapters"]:
            if len(chapter["urls"]) == 1 and chapter["urls"][0]["page"] == 1:
                # The chapter's only URL here: "page 1" would add nothing.
                chapter["urls"][0].update(page_zh="", page_en="")
    return list(books.values())


def render_notice_templates(
    templates_dir: Path | None, lang: str, context: dict[str, object]
) -> tuple[str, str]:
    """The notice's text and subject from the ``lang`` templates (the data folder's
    own, else the shipped ones), in the bounded sandbox."""
    env = _environment(templates_dir)
    text = _render_template(env, f"{lang}/notice.txt.j2", context)
    subject = _render_template(env, f"{lang}/subject.txt.j2", context)
    return text, subject


def check_notice_elements(notice: Notice, context: dict[str, object]) -> None:
    """``NoticeIncomplete`` naming what the law asks for that the rendered notice
    leaves out (a user-edited template may drop anything)."""
    _check_elements(notice, context)


def _check_elements(notice: Notice, context: dict[str, Any]) -> None:
    text = notice.text
    missing = []
    holder = context["holder"]
    for label, value in (("rights holder's name", holder["name"]), ("address", holder["address"])):
        if value not in text:
            missing.append(label)
    if not any(v and v in text for v in (holder["email"], holder["phone"])):
        missing.append("contact (e-mail or phone)")
    for item in context["cases"]:
        for work in item["works"]:
            if work not in text:
                missing.append(f"work {work!r}")
        missing += [f"URL {u['url']}" for u in item["urls"] if u["url"] not in text]
    required = EN_REQUIRED if notice.lang == "en" else ZH_REQUIRED
    missing += [label for label, phrase in required.items() if phrase not in text]
    if missing:
        raise NoticeIncomplete(
            f"the {notice.lang} notice template leaves out required elements: " + "; ".join(missing)
        )


def _render_template(env: Any, name: str, context: dict[str, Any]) -> str:
    """Render one template; any template error becomes a CaseError naming the file
    and line (the user may have edited it)."""
    from jinja2 import TemplateError

    budget = [MAX_TEMPLATE_ITERATIONS]
    try:
        template = env.get_template(name)
        out: list[str] = []
        size = 0
        bounds = {"range": _bounded_range(budget), BUDGET_NAME: _budgeted(budget)}
        for chunk in template.generate(**context, **bounds):
            size += len(chunk)
            if size > MAX_NOTICE_CHARS:
                raise TemplateTooCostly(
                    f"notice template {name}: the notice would be longer than "
                    f"{MAX_NOTICE_CHARS:,} characters"
                )
            out.append(chunk)
        return "".join(out)
    except CaseError:
        raise
    except (OverflowError, MemoryError, RecursionError) as exc:
        raise TemplateTooCostly(f"notice template {name}: {exc}") from None
    except TemplateError as exc:
        path = getattr(exc, "filename", None) or name
        line = getattr(exc, "lineno", None)
        tb = exc.__traceback__
        while tb is not None:  # runtime errors: the template frame says where
            if tb.tb_frame.f_code.co_filename.endswith(".j2"):
                path, line = tb.tb_frame.f_code.co_filename, tb.tb_lineno
            tb = tb.tb_next
        at = f"{path}:{line}" if line else str(path)
        raise CaseError(f"notice template {at}: {exc}") from None
