"""What a discovery run did: one typed stats collector (``RunReport``), its pages
(``PageResult``) and the last runs kept in the store (``RunHistory``).

Every failure is recorded once, through ``RunReport.fail(source, message)``: the
message is kept (up to ``MAX_ERRORS`` of them), the source's error count goes up, and
the failure is counted under its kind (the message with its URLs, quoted values and
numbers left out), so a run that met one bad answer 30 times says so once, with the
count, and the two other errors stay in sight (``error_groups``). Parts of a run (its
crawl chunks and processes) are added up field by field (``RunReport.add``), by the
fields' types: numbers are summed, lists joined, sources merged.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tracker.common.records import JSONObject

if TYPE_CHECKING:
    from tracker.discovery.options import RunOptions
    from tracker.discovery.sites import Site
    from tracker.store.base import Store

__all__ = [
    "ErrorGroup",
    "PageResult",
    "RunHistory",
    "RunReport",
    "SourceStats",
    "add_report",
    "error_kind",
    "merge_reports",
]

RUN_PREFIX = "discovery:run:"
KEEP_RUNS = 50
MAX_ERRORS = 200
SHOWN_GROUPS = 30


@dataclass
class SourceStats:
    found: int = 0  # URLs it gave (seeds and the links followed from them)
    fetched: int = 0
    checked: int = 0
    matched: int = 0  # checked pages with at least one match
    duplicates: int = 0
    errors: int = 0

    def add(self, other: SourceStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class PageResult:
    """One fetched page: checked (``matches``), a near-duplicate, or an error."""

    url: str
    source: str
    final_url: str = ""
    kind: str = "page"
    suspect_id: str = ""
    matches: list[dict[str, Any]] = field(default_factory=list)
    duplicate_of: str = ""
    error: str = ""
    checked: bool = False
    skipped: str = ""  # why a fetched page was not checked (too little text)
    # A chapter read over several pages and checked as one text: every page's URL (the
    # first is ``final_url``); a verdict on its match files each page (docs/DISCOVERY.md).
    pages: list[str] = field(default_factory=list)

    def to_json(self) -> JSONObject:
        """The JSON line of ``yinji discover run --json`` (a checked page); ``pages``
        only for a chapter read over several pages."""
        out: JSONObject = {
            "url": self.final_url or self.url,
            "requested_url": self.url,
            "source": self.source,
            "suspect_id": self.suspect_id,
            "matches": self.matches,
        }
        if len(self.pages) > 1:
            out["pages"] = list(self.pages)
        return out


@dataclass(frozen=True)
class ErrorGroup:
    """Failures of one kind: how many, and the first message of that kind."""

    kind: str
    count: int
    example: str


_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|《[^》]*》")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def error_kind(message: str) -> str:
    """``message`` without what differs between failures of one kind: URLs, quoted
    values, book titles and numbers ("searxng: result is not an http(s) URL: …")."""
    kind = _URL.sub("…", message)
    kind = _QUOTED.sub("…", kind)
    return _NUMBER.sub("N", kind)[:300]


@dataclass
class RunReport:
    id: str
    started_at: str
    finished_at: str = ""
    works: int = 0
    books: int = 0  # distinct books of the works (what sites are searched for)
    queries: int = 0  # asked of providers (cached answers included)
    cached: int = 0
    fetched: int = 0
    checked: int = 0
    duplicates: int = 0
    matched: int = 0  # checked pages with a match
    traps: int = 0
    skipped: int = 0  # pages fetched but too short to check (``PageResult.skipped``)
    refused: int = 0  # URLs the guard refused or that did not resolve: no page spent
    sources: dict[str, SourceStats] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    error_kinds: dict[str, int] = field(default_factory=dict)  # kind -> failures, all of them
    # Site searches that found no book: "site:HOST: no book 《T》 in its search results".
    not_found: list[str] = field(default_factory=list)
    # Why a run that fetched nothing did nothing (budgets spent, searches made today).
    idle: str = ""
    leased: int = 0  # URLs still leased elsewhere when the crawl ended
    notes: list[str] = field(default_factory=list)  # what else the run should say
    matches: list[dict[str, Any]] = field(default_factory=list)  # url, suspect, work, source
    options: dict[str, Any] = field(default_factory=dict)

    def source(self, name: str) -> SourceStats:
        return self.sources.setdefault(name, SourceStats())

    def checked_page(self, result: PageResult, url: str) -> None:
        """A page (or a chapter read over pages: ``result.pages``) checked: counted for
        its source, and its matches listed with ``url``, the checked page's."""
        stats = self.source(result.source)
        self.checked += 1
        stats.checked += 1
        if not result.matches:
            return
        self.matched += 1
        stats.matched += 1
        for m in result.matches:
            line = {
                "url": url,
                "suspect_id": result.suspect_id,
                "mother_id": m.get("mother_id"),
                "title": m.get("title", ""),
                "score": m.get("score"),
                "source": result.source,
            }
            if result.pages:
                line["pages"] = list(result.pages)
            self.matches.append(line)

    def fail(self, source: str, message: str) -> None:
        """One failure of ``source`` (a provider, a site, "crawl"; "" for the run)."""
        if source:
            self.source(source).errors += 1
        self.error(f"{source}: {message}" if source else message)

    def error(self, message: str) -> None:
        """A failure recorded as it is (``fail`` counts it against a source too)."""
        kind = error_kind(message)
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(message)

    def error_groups(self) -> list[ErrorGroup]:
        """The failures by kind, the most frequent first, each with its first message."""
        examples: dict[str, str] = {}
        for message in self.errors:
            examples.setdefault(error_kind(message), message)
        counts = dict(self.error_kinds)
        for kind in examples:  # reports written before kinds were counted
            counts.setdefault(kind, sum(1 for m in self.errors if error_kind(m) == kind))
        order = sorted(counts, key=lambda k: (-counts[k], k))
        return [ErrorGroup(k, counts[k], examples.get(k, k)) for k in order]

    @property
    def error_count(self) -> int:
        return sum(self.error_kinds.values()) or len(self.errors)

    def to_dict(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> RunReport:
        # Fields as stored by ``to_dict`` (the store's meta table, written by this class).
        known: dict[str, Any] = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        known["sources"] = {
            k: SourceStats(**{f: v.get(f, 0) for f in SourceStats.__dataclass_fields__})
            for k, v in (known.get("sources") or {}).items()
            if isinstance(v, dict)
        }
        return cls(**known)

    def add(self, part: RunReport) -> None:
        """Add ``part`` (of the same run) to this report, field by field by type."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(part, f.name)
            if f.name in ("id", "started_at", "options", "works", "books", "idle", "leased"):
                continue
            if isinstance(mine, int):
                setattr(self, f.name, mine + theirs)
            elif isinstance(mine, list):
                mine += theirs
            elif f.name == "sources":
                for name, stats in theirs.items():
                    self.source(name).add(stats)
            elif f.name == "error_kinds":
                for kind, n in theirs.items():
                    mine[kind] = mine.get(kind, 0) + n
        self.errors = self.errors[:MAX_ERRORS]
        self.finished_at = max(self.finished_at, part.finished_at)

    def summary_lines(self) -> list[str]:
        lines = [
            f"discovery run {self.id}: {self.works} works ({self.books} books), "
            f"{self.queries} queries "
            f"({self.cached} cached), {self.fetched} pages fetched, {self.checked} checked, "
            f"{self.duplicates} skipped as duplicates, {self.skipped} too short to check, "
            f"{self.traps} trap links skipped, {self.matched} pages with matches"
        ]
        if self.refused:
            lines[0] += f", {self.refused} URLs refused or unresolvable (no page spent)"
        if self.idle:
            lines.append(f"  did nothing: {self.idle}")
        lines += [f"  note: {n}" for n in self.notes[:10]]
        for name, s in sorted(self.sources.items()):
            lines.append(
                f"  {name}: found {s.found}, fetched {s.fetched}, checked {s.checked}, "
                f"matched {s.matched}, duplicates {s.duplicates}, errors {s.errors}"
            )
        lines += [f"  not found: {e}" for e in self.not_found[:30]]
        if len(self.not_found) > 30:
            lines.append(f"  ... and {len(self.not_found) - 30} more searches that found no book")
        groups = self.error_groups()
        for g in groups[:SHOWN_GROUPS]:
            times = f" (×{g.count}, e.g.)" if g.count > 1 else ""
            lines.append(f"  error{times}: {g.example}")
        if len(groups) > SHOWN_GROUPS:
            rest = sum(g.count for g in groups[SHOWN_GROUPS:])
            lines.append(f"  ... and {rest} more errors of {len(groups) - SHOWN_GROUPS} kinds")
        return lines


class RunHistory:
    """The last runs' reports, in the store's meta table. A run whose crawl was spread
    over workers has one record per part (``RUN_ID~PART``, each written by one worker,
    so no two workers write one record); reading adds the parts up."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def save(self, report: RunReport, *, prune: bool = True) -> None:
        self.store.set_meta(RUN_PREFIX + report.id, report.to_dict())
        if not prune:
            return
        runs = sorted({k.split("~", 1)[0] for k in self.store.meta_items(RUN_PREFIX)})
        old = set(runs[:-KEEP_RUNS])
        for key in self.store.meta_items(RUN_PREFIX):
            if key.split("~", 1)[0] in old:
                self.store.delete_meta(key)

    def _grouped(self) -> dict[str, list[RunReport]]:
        groups: dict[str, list[RunReport]] = {}
        for key, value in sorted(self.store.meta_items(RUN_PREFIX).items()):
            if isinstance(value, dict):
                try:
                    report = RunReport.from_dict(value)
                except (TypeError, ValueError):
                    continue  # a record this version cannot read: the others still show
                groups.setdefault(key.split("~", 1)[0], []).append(report)
        return groups

    def list(self, limit: int = 20) -> list[RunReport]:
        groups = self._grouped()
        return [merge_reports(groups[k]) for k in sorted(groups, reverse=True)][:limit]

    def get(self, run_id: str) -> RunReport | None:
        parts = self._grouped().get(RUN_PREFIX + run_id.split("~", 1)[0])
        return merge_reports(parts) if parts else None


def merge_reports(parts: Sequence[RunReport]) -> RunReport:
    """One report of a run from its parts (the first holds the plan and searches)."""
    first = parts[0]
    out = RunReport.from_dict(first.to_dict())
    out.id = first.id.split("~", 1)[0]
    for part in parts[1:]:
        out.add(part)
    return out


def add_report(out: RunReport, part: RunReport) -> None:
    """Add the counts, errors and matches of ``part`` (of the same run) to ``out``."""
    out.add(part)


def new_run_id() -> str:
    """A run id that sorts by time: ``20261126T194704-13dcd0``."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]


def idle_reason(
    report: RunReport,
    options: RunOptions,
    *,
    providers: int,
    over_budget: int,
    skipped_seeds: dict[str, int],
    searched_today: int,
    sites: list[Site],
) -> str:
    """Why a run fetched nothing, in words (empty when it fetched something): its
    ``report`` and ``options``, its search ``providers``, the queries over today's budget
    (``over_budget``), seeds fetched by earlier runs by kind, Legado searches made today,
    and the registered ``sites`` (none when the run does not search sites)."""
    if report.fetched:
        return ""
    why: list[str] = []
    if not report.works:
        why.append("no work to look for")
    if options.search and not providers:
        why.append("no search provider is configured")
    if over_budget:
        why.append(
            f"today's query budget is spent ({over_budget} queries not asked: "
            f"{options.max_queries} per work per provider per UTC day)"
        )
    searches = skipped_seeds.get("search", 0)
    if searches:
        why.append(f"{searches} site searches were already made by earlier runs")
    others = sum(n for kind, n in skipped_seeds.items() if kind != "search")
    if others:
        why.append(
            f"{others} search results were already fetched by earlier runs (a page "
            f"that matched is fetched again after {options.revisit_days:g} days)"
        )
    if searched_today:
        why.append(f"{searched_today} Legado site searches were already made today")
    if options.sites and not sites:
        why.append("no pirate site is registered")
    elif sites and all(s.disabled for s in sites):
        why.append("every registered site is disabled after failed searches")
    if options.max_pages <= 0:
        why.append("the page budget is 0")
    if report.leased:
        why.append(f"{report.leased} URLs are leased by another or a killed process")
    return "; ".join(why) or "nothing was found to fetch"
