"""The stored facts a takedown notice may state, and nothing else.

A notice is signed "under penalty of perjury"; every statement in it is derived here from
a stored fact, per URL:

- the URL is in the case **and** its match is confirmed in the library (a URL whose
  matches are still pending, or were dismissed, is left out and reported as such);
- the work and chapter are those of **that URL's own confirmed match** (the mother it
  copies; a mother that is one chapter of a book names the book as the work, with its
  author, and the chapter by its heading and place in the book,
  ``tracker.cases.grouping.book_ref``); the page of the chapter when the case recorded
  it (a chapter a site splits over pages is one URL per page);
- its similarity on pinyin initials and on characters, from that match's passages
  (length-weighted, as the evidence report shows them passage by passage), and the
  share of the page copied (coverage): figures of that page's own text, or, for a URL
  filed before pages were URLs of their own (its text assembled from several pages),
  of those pages together, which the notice then says and lists (``together``);
- the match's regions as stored (``tracker.common.records.Region``: one per copied stretch,
  each with its own similarity on pinyin initials and the number of inserted spans the
  work does not hold there, excluded from it);
- for a fetched page, the capture's fetch time and the SHA-256 of the bytes served (the
  evidence log's capture; without one, the suspect record's); for a text handed in,
  "submitted, not fetched" with the time it was received — never a fetch time;
- the evidence report's file name and SHA-256 when one is attached.

URLs come book by book (work by work), each in chapter order, then page order
(``tracker.cases.grouping``).
``notice_facts`` refuses (``NoConfirmedURL``) when no URL qualifies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from tracker.common.records import ChapterRef, Match, MatchQuery, Mother, NotFound, match_id
from tracker.store.base import match_sides

from .chapters import chapter_number
from .grouping import book_ref, page_in_url
from .model import Case, CaseError, CaseURL

if TYPE_CHECKING:
    from tracker.evidence.log import EvidenceLog
    from tracker.reports.data import PageSource
    from tracker.store import Store

_QUOTES = "《》〈〉「」『』\"'“”‘’ "


class NoConfirmedURL(CaseError):
    """None of the cases' URLs has a confirmed match: there is nothing to notice."""


@dataclass(frozen=True)
class RegionFact:
    """One stored region of a URL's match: where it stands in the page's text, its own
    similarity (on pinyin initials) and how many inserted spans it excludes."""

    suspect_start: int
    suspect_end: int
    similarity: float
    excluded: int


@dataclass(frozen=True)
class URLFact:
    """One URL of a notice with the facts stated about it."""

    case_id: str
    url: str
    match_id: str
    suspect_id: str
    work_id: str  # the mother of the URL's confirmed match
    work_title: str  # the work (a book, for a chapter mother) without quotation marks
    chapter: str  # the chapter the URL copies ("" when the work is not split in chapters)
    label: str  # the page's own title as the case records it
    initials_similarity: float | None
    char_similarity: float | None
    coverage: float
    fetched: bool  # False: a text handed in ("submitted, not fetched")
    at: datetime | None  # fetch time (fetched) or receipt time (submitted); None: unknown
    content_sha256: str | None  # the bytes as served (fetched pages)
    from_capture: bool  # the time and hash come from the evidence log's capture
    evidence_file: str = ""
    evidence_sha256: str = ""
    book_id: str = ""  # the book of the mother ("" when the work is not in a book)
    author: str = ""
    chapter_index: int | None = None  # the chapter's place in the book
    page: int = 0  # the page of the chapter on the site; 0: not recorded
    together: tuple[str, ...] = ()  # the pages whose text the figures cover, when several
    regions: tuple[RegionFact, ...] = ()  # the match's stored regions, in page order

    def chapter_zh(self) -> str:
        """``《西游记》第四十一回 心猿遭火败 木母被魔擒`` (the work alone outside a book)."""
        return self._ref().label("zh") if self.book_id else zh_title(self.work_title)

    def chapter_en(self) -> str:
        """``"西游记", chapter 41 (第四十一回 心猿遭火败 木母被魔擒)``."""
        if not self.book_id:
            return f'"{self.work_title}"'
        return self._ref().label("en")

    def _ref(self) -> ChapterRef:
        return ChapterRef(self.book_id, self.work_title, self.chapter, self.chapter_index)


@dataclass(frozen=True)
class LeftOut:
    """A URL of the cases that the notice does not name, and why."""

    case_id: str
    url: str
    reason: str


@dataclass
class NoticeFacts:
    urls: list[URLFact] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)

    def of_case(self, case_id: str) -> list[URLFact]:
        return [f for f in self.urls if f.case_id == case_id]


def bare_title(title: str) -> str:
    """A title without the quotation marks around it (``《雾城旧梦》`` → ``雾城旧梦``);
    inner marks stay (``《雾城旧梦》第一章`` keeps its own)."""
    text = (title or "").strip()
    while len(text) >= 2 and text[0] in '《「『“"' and text[-1] in '》」』”"':
        if not _one_pair(text):  # 《a》…《b》: the outer marks are not one pair
            break
        text = text[1:-1].strip()
    return text


def _one_pair(text: str) -> bool:
    """The mark opening ``text`` is closed by its last character."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "《「『“":
            depth += 1
        elif ch in "》」』”":
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
    return text[0] == text[-1] == '"'


def zh_title(title: str) -> str:
    """``title`` in 《》 once: a title that already carries its own marks is not wrapped
    again (no 《《雾城旧梦》第一章》)."""
    text = bare_title(title)
    return text if "《" in text else f"《{text}》"


def _work_of(
    store: Store, mother: Mother | None, match: Match
) -> tuple[str, str, ChapterRef | None]:
    """(work title, chapter heading, book) of the mother a URL copies."""
    title = bare_title(mother.title if mother else match.mother_title) or match.mother_id
    ref = book_ref(store, mother) if mother is not None else None
    if ref is not None:
        return bare_title(ref.book_title) or ref.book_id, ref.chapter, ref
    return title, "", None


def confirmed_match(store: Store, suspect_id: str, mother_id: str) -> Match | None:
    """The confirmed match of a case URL's suspect: with the URL's own mother when that
    is confirmed, else its best confirmed match."""
    if not suspect_id:
        return None
    try:
        own = store.get_match(match_id(suspect_id, mother_id))
    except (NotFound, KeyError):
        own = None
    if own is not None and own.verdict == "confirmed":
        return own
    found = store.query_matches(
        MatchQuery(suspect_id=suspect_id, verdict="confirmed", sort="-score", limit=1)
    )
    return found[0] if found else None


def _why_not(store: Store, suspect_id: str, mother_id: str) -> str:
    try:
        own = store.get_match(match_id(suspect_id, mother_id))
    except (NotFound, KeyError):
        return "its match is no longer in the library"
    return f"its match is {own.verdict}, not confirmed"


def url_fact(
    store: Store, case: Case, url: CaseURL, match: Match, evidence: EvidenceLog | None = None
) -> URLFact:
    """The facts of one case URL (a ``CaseURL``) from its confirmed ``match``."""
    from tracker.reports.data import match_similarities, page_source

    mother, suspect = match_sides(store, match)
    work_title, chapter, ref = _work_of(store, mother, match)
    pages = (suspect.metadata or {}).get("pages") if suspect is not None else None
    together: tuple[str, ...] = ()
    first = suspect.url if suspect is not None and suspect.url else match.suspect_url
    if isinstance(pages, list) and len(pages) > 1 and pages[0] == first and url.url in pages:
        together = tuple(str(p) for p in pages)
    initials, chars = match_similarities(match, mother, suspect)
    source = page_source(match, suspect, evidence)
    if together and url.url != first and evidence is not None:
        source = _page_capture(evidence, match, url.url) or source
    return URLFact(
        case_id=case.id,
        url=url.url,
        match_id=match.id,
        suspect_id=match.suspect_id,
        work_id=match.mother_id,
        work_title=work_title,
        chapter=chapter,
        label=url.label,
        initials_similarity=initials,
        char_similarity=chars,
        coverage=float(match.coverage),
        fetched=source.fetched,
        at=source.at,
        content_sha256=source.content_sha256,
        from_capture=source.from_capture,
        book_id=ref.book_id if ref is not None else "",
        author=ref.author if ref is not None else "",
        chapter_index=(
            ref.chapter_index
            if ref is not None and ref.chapter_index is not None
            else url.chapter_index
        ),
        page=url.page or 0,
        together=together,
        regions=tuple(
            RegionFact(r.suspect_start, r.suspect_end, float(r.similarity), len(r.excluded))
            for r in sorted(match.regions, key=lambda r: r.suspect_start)
        ),
    )


def _page_capture(evidence: EvidenceLog, match: Match, url: str) -> PageSource | None:
    """The latest capture of ``url`` among the captures of ``match``'s suspect (a later
    page of a chapter whose text was read from several pages: each page's own fetch
    time and bytes); None when the log holds none."""
    from tracker.evidence import Capture
    from tracker.reports.data import PageSource as Source

    found: Capture | None = None
    try:
        for entry in evidence.entries(suspect_id=match.suspect_id, mother_id=match.mother_id):
            if entry.kind == "capture":
                cap = Capture.from_json(entry.payload)
                if url in (cap.final_url, cap.requested_url):
                    found = cap
    except Exception:  # a damaged log: the suspect's own source stands
        return None
    if found is None:
        return None
    return Source(
        fetched=True, at=found.fetched_at, content_sha256=found.body.sha256, from_capture=True
    )


def notice_facts(
    cases: Sequence[Case],
    store: Store,
    *,
    evidence: EvidenceLog | None = None,
    evidence_files: dict[str, tuple[str, str]] | None = None,
) -> NoticeFacts:
    """The facts of every confirmed URL of ``cases`` (see the module docstring);
    ``evidence`` is the evidence log (captures, submissions), ``evidence_files`` maps
    a URL to (report file name, its SHA-256). Raises ``NoConfirmedURL`` when none."""
    files = evidence_files or {}
    out = NoticeFacts()
    found: list[URLFact] = []
    for case in cases:
        for u in case.urls:
            match = confirmed_match(store, u.suspect_id, u.mother_id or case.work)
            if match is None:
                why = (
                    _why_not(store, u.suspect_id, u.mother_id or case.work)
                    if u.suspect_id
                    else "no match recorded"
                )
                out.left_out.append(LeftOut(case.id, u.url, why))
                continue
            fact = url_fact(store, case, u, match, evidence)
            if u.url in files:
                name, digest = files[u.url]
                fact = _with_file(fact, name, digest)
            found.append(fact)
    # Chapter order, then page order (the order filed breaks ties), then book by book
    # (or work by work) in the order their first chapters come: as the notice names them.
    ordered = sorted(found, key=fact_order)
    groups: dict[str, int] = {}
    for f in ordered:
        groups.setdefault(f.book_id or f.work_title, len(groups))
    out.urls = sorted(ordered, key=lambda f: groups[f.book_id or f.work_title])
    if not out.urls:
        reasons = "; ".join(f"{x.url}: {x.reason}" for x in out.left_out[:5])
        ids = ", ".join(c.id for c in cases)
        raise NoConfirmedURL(
            f"case(s) {ids}: no URL with a confirmed match, so there is nothing a notice "
            f"may state (confirm the matches first: `yinji verdict SUSPECT_ID MOTHER_ID "
            f"confirmed` or 确认 in the web app)" + (f" — {reasons}" if reasons else "")
        )
    return out


def fact_order(f: URLFact) -> tuple[int, int, int]:
    """Chapter (its place in the book, else the number its heading, title or label
    states; unknown last), then page (recorded, else the one its URL states)."""
    index = f.chapter_index
    if index is None:
        index = chapter_number(f.chapter) or chapter_number(f.work_title)
        index = index or chapter_number(f.label)
    page = f.page or page_in_url(f.url) or 1
    return (0 if index is not None else 1, index or 0, page)


def _with_file(fact: URLFact, name: str, digest: str) -> URLFact:
    from dataclasses import replace

    return replace(fact, evidence_file=name, evidence_sha256=digest)
