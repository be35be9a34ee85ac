"""The check: one suspect text against the library, stage by stage.

``CheckService.run`` is the whole path of every check (``yinji check``, the web app's
paste and upload, the crawl and re-check tasks), readable top to bottom:

1. size          the text over ``YINJI_MAX_SUSPECT_CHARS`` is refused before any work
1b. read         the text as the engine reads it (``tracker.text.noise``): noise repeated at
                 a fixed rhythm found (checked with and without it), and a warning
                 when the engine reads too little of it (not Chinese)
2. fingerprints  the engine fingerprints the suspect (densely: every offset)
3. candidates    ... and looks them up in its index: mothers sharing enough of them
4. verify        each candidate aligned with the suspect (``tracker.matching.align``); a long
                 suspect window by window, with bounded memory (``tracker.matching.longtext``)
5. score         alignments that are copies become matches (``MatchPolicy``)
6. store         the suspect and its matches (re-checked: the matches only, verdicts kept)
7. evidence      where the text came from (capture, submission) and the check

Stages 1-5 are ``tracker.matching.matcher.Matcher``'s (2 and 3 are one engine call); ``save``
turns 6 and 7 on, and ``origin`` says what 7 records.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracker.common.records import ChapterRef
from tracker.common.rules import domain_of
from tracker.documents.readers import Document, DocumentError, clean_text
from tracker.engines import Engine
from tracker.indexes.admin import IndexAdmin
from tracker.matching.longtext import SuspectTooLarge
from tracker.matching.matcher import Aligned, Matcher, MatchResult, PreparedCache
from tracker.plumbing.config import Settings
from tracker.services.engines import EngineSet
from tracker.services.evidence import EvidenceRecorder, Recording
from tracker.services.results import CheckResult
from tracker.store import CheckWrite, NotFound, Store, Suspect, utcnow

if TYPE_CHECKING:
    from tracker.books.store import BookStore
    from tracker.crawler.results import Page

log = logging.getLogger(__name__)
#: Stored suspects saved together by a re-check (one store and one evidence commit).
RECHECK_GROUP = 200
Progress = Callable[[int, int | None], None]  # (done, total or None)


# -- where a checked text came from (what the evidence stage records) ---------------------
@dataclass(frozen=True)
class Submitted:
    """Handed in (a file, a paste, an upload): a submission record, then the check.
    ``source``: how it came (default the suspect's); ``once``: a task run's key."""

    source: str | None = None
    once: str | None = None


@dataclass(frozen=True)
class Crawled:
    """Fetched as ``pages`` (one page, or a chapter split over several): a capture per
    page, then the check naming them."""

    pages: Sequence[Page]


@dataclass(frozen=True)
class Stored:
    """A stored suspect checked again: its text is used as stored (not cleaned again),
    only its matches are rewritten, and the check names the captures its text came
    from. ``once``: a task run's key."""

    once: str | None = None


#: None: stored without evidence (``Library.check_suspect``).
Origin = Submitted | Crawled | Stored | None


class CheckService:
    """Checks of one library: its ``engines``, their indexes (``admin``: made usable
    before a check), the ``store`` and the ``evidence`` log."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        engines: EngineSet,
        admin: IndexAdmin,
        evidence: EvidenceRecorder,
    ) -> None:
        self.settings = settings
        self.store = store
        self.engines = engines
        self.admin = admin
        self.evidence = evidence
        self.cache = PreparedCache()  # prepared mothers, shared by every check
        self._books: BookStore | None = None  # opened by the first check of a chapter

    def ready(self, engine: str | None = None) -> Engine:
        """The engine, its index usable (repaired, or ``IndexOutOfSync``); ValueError if
        the engine is unknown or this library never indexed it."""
        eng = self.engines.get(engine)
        indexed = self.engines.indexed()
        if indexed and eng.name not in indexed:
            # Checking against an engine nobody indexed would silently find nothing.
            raise ValueError(
                f"engine {eng.name!r} has no index in this library (indexed: "
                f"{', '.join(indexed)}); run `yinji index rebuild --engine {eng.name}` first"
            )
        # Nor may a lost or partial index answer "no match": repaired, or refused.
        self.admin.ensure(eng.name)
        return eng

    def matcher(self, engine: str | None = None) -> Matcher:
        """The query path of an engine with this library's settings (``ready``)."""
        eng = self.ready(engine)
        policy, params = self.engines.verifier()
        return Matcher(
            self.store,
            eng,
            policy=policy,
            align_params=params,
            cache=self.cache,
            max_chars=self.settings.max_suspect_chars,
        )

    def run(
        self,
        suspect: Suspect,
        *,
        engine: str | None = None,
        save: bool = True,
        origin: Origin = None,
    ) -> CheckResult:
        """Check one suspect (see the module's docstring for the stages). A stored
        suspect checked again (``Stored``) that was deleted meanwhile: ``NotFound``,
        nothing written."""
        matcher = self.matcher(engine)
        checked = self._match(matcher, suspect, origin)
        if save and not self._save([(checked, origin)], matcher.engine.name)[0]:
            raise NotFound(suspect.id)
        return checked

    def run_many(
        self,
        items: Sequence[tuple[Suspect, Origin]],
        *,
        engine: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[CheckResult | SuspectTooLarge | NotFound]:
        """Check several suspects and save them together (a chunk of a job): stages
        1-5 one by one (``progress(done)`` after each), then stage 6 for all in one
        store transaction and stage 7 for all in one commit of the evidence log (group
        commit: one fsync for the chunk, not two per check; a crash before it leaves
        none of the chunk's records, and the redelivered chunk appends them once, by
        their ``once`` keys). Per item: its result, the ``SuspectTooLarge`` that refused
        it, or ``NotFound`` for a stored suspect deleted meanwhile (nothing written)."""
        outcomes: list[CheckResult | SuspectTooLarge | NotFound] = []
        name = self.engines.get(engine).name
        for n, (suspect, origin) in enumerate(items, 1):
            # The index made usable before each check, as for a check on its own (a
            # rebuild's load starting mid-chunk refuses the next check, never answers it
            # from a half-loaded index).
            matcher = self.matcher(engine)
            try:
                outcomes.append(self._match(matcher, suspect, origin))
            except SuspectTooLarge as exc:
                outcomes.append(exc)
            if progress:
                progress(n)
        done = [
            (o, origin)
            for o, (_, origin) in zip(outcomes, items, strict=True)
            if isinstance(o, CheckResult)
        ]
        saved = iter(self._save(done, name))
        return [
            o if not isinstance(o, CheckResult) or next(saved) else NotFound(o.suspect.id)
            for o in outcomes
        ]

    def _match(self, matcher: Matcher, suspect: Suspect, origin: Origin) -> CheckResult:
        """Stages 1-5 of one suspect (nothing written)."""
        if not isinstance(origin, Stored):
            suspect = _cleaned(suspect)
        started = time.perf_counter()
        text = suspect.text
        matcher.check_size(text, repr(suspect.id) if suspect.id else suspect.title)  # 1
        reading = matcher.read(text, _name(suspect))  # 1b: display order, noise, scripts
        found, verified = matcher.find(reading)  # 2, 3, 4 (window by window when long)
        result = matcher.score(  # 5
            found,
            verified,
            suspect_id=suspect.id,
            title=suspect.title,
            url=suspect.url,
            domain=suspect.domain,
            started=started,
            reading=reading,
        )
        self._name_books(result, found)
        return CheckResult(suspect, result)

    def _name_books(self, result: MatchResult, found: Aligned) -> None:
        """Each match of a chapter work names its book and chapter (``Match.book``:
        from the work's metadata, the book's title current from its record)."""
        mothers = {mother.id: mother for mother, _ in found}
        for m in result.matches:
            mother = mothers.get(m.mother_id)
            if mother is None or ChapterRef.from_metadata(mother.metadata or {}) is None:
                continue
            if self._books is None:
                from tracker.books.store import book_store_for

                self._books = book_store_for(self.store)
            from tracker.books.service import chapter_ref

            m.book = chapter_ref(self._books, mother)

    def _save(self, checked: Sequence[tuple[CheckResult, Origin]], engine: str) -> list[bool]:
        """Stages 6 and 7 of checked suspects, together.

        6: the suspects and their matches, in one store transaction (idempotent:
        checking again replaces the machine results and keeps verdicts); a re-check
        (``Stored``) writes the matches only (the suspect, with its raw page, is not
        written back) and is skipped (False) when the suspect was deleted meanwhile.
        7: where each text came from (captures are appended first: the check names
        them), then the submission and check records of all, in one commit."""
        now = utcnow()
        for c, _ in checked:
            c.suspect.checked_at = now
        written = self.store.save_checks(
            [CheckWrite(c.suspect, c.matches, not isinstance(o, Stored)) for c, o in checked]
        )
        recordings: list[Recording] = []
        for (c, origin), ok in zip(checked, written, strict=True):
            if not ok:
                continue
            if isinstance(origin, Submitted):
                recordings.append(
                    Recording(c, engine, submitted=True, source=origin.source, once=origin.once)
                )
            elif isinstance(origin, Crawled):
                pages = self.evidence.record_captures(c.suspect.id, origin.pages)
                recordings.append(Recording(c, engine, capture_indexes=pages))
            elif isinstance(origin, Stored):
                pages = self.evidence.source_of(c.suspect)
                recordings.append(Recording(c, engine, capture_indexes=pages, once=origin.once))
        self.evidence.record(recordings)
        return written

    # -- many at once -------------------------------------------------------------------
    def documents(
        self,
        documents: Iterable[Document | DocumentError],
        *,
        engine: str | None = None,
        save: bool = True,
        errors: list[DocumentError] | None = None,
    ) -> Iterator[CheckResult]:
        """Check documents as suspects, one result per document (errors collected: a
        document over ``Settings.max_suspect_chars`` is one, the others go on). Saved,
        each is a handed-in text (``Submitted``)."""
        for item in documents:
            if isinstance(item, DocumentError):
                if errors is not None:
                    errors.append(item)
                continue
            url = str(item.metadata.get("url", "")) if item.metadata else ""
            suspect = Suspect(
                id=item.id,
                text=item.text,
                title=item.title,
                url=url,
                domain=domain_of(url),
                source=item.source,
                metadata=item.metadata,
            )
            try:
                yield self.run(
                    suspect, engine=engine, save=save, origin=Submitted() if save else None
                )
            except SuspectTooLarge as exc:
                if errors is None:
                    raise
                errors.append(DocumentError(item.source or item.id, str(exc)))

    def recheck_all(
        self,
        *,
        engine: str | None = None,
        progress: Progress | None = None,
        once: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        """Check every stored suspect (or those of ``ids``: a chunk of a fanned-out
        re-check) again against the whole index (after new mothers arrive: a suspect
        seen before a work was added may copy it); how many."""
        # Ids first: the loop writes, which must not move a store cursor under it.
        ids = list(ids) if ids is not None else self.suspect_ids()
        done = 0
        reported = [0]  # the position last reported
        if progress:
            progress(0, len(ids))
        for start in range(0, len(ids), RECHECK_GROUP):
            suspects: list[tuple[Suspect, Origin]] = []
            for suspect_id in ids[start : start + RECHECK_GROUP]:
                try:
                    suspects.append((self.store.get_suspect(suspect_id), Stored(once)))
                except NotFound:
                    continue  # deleted meanwhile

            def step(n: int, base: int = start) -> None:
                if progress:
                    reported[0] = base + n
                    progress(base + n, len(ids))  # position in ids (a deleted one counts)

            for outcome in self.run_many(suspects, engine=engine, progress=step):
                if isinstance(outcome, SuspectTooLarge):
                    # Stored before YINJI_MAX_SUSPECT_CHARS was lowered: the others go on.
                    log.warning("re-check skipped: %s", outcome)
                elif isinstance(outcome, CheckResult):
                    done += 1
            end = min(start + RECHECK_GROUP, len(ids))
            if progress and reported[0] != end:
                progress(end, len(ids))  # the deleted ones of the group
                reported[0] = end
        return done

    def suspect_ids(self) -> list[str]:
        """The ids of every stored suspect (what ``recheck_all`` goes through)."""
        return [s.id for s in self.store.iter_suspects()]

    def text(self, text: str, *, engine: str | None = None) -> MatchResult:
        """Match a text without saving anything."""
        return self.matcher(engine).match(text)


def _name(suspect: Suspect) -> str:
    """How a warning names a suspect: where it came from, else its title or id."""
    return suspect.url or suspect.source or suspect.title or repr(suspect.id)


def _cleaned(suspect: Suspect) -> Suspect:
    """A new suspect's text and title cleaned (``clean_text``), its domain from its URL."""
    if not suspect.domain and suspect.url:
        suspect.domain = domain_of(suspect.url)
    suspect.text, suspect.title = clean_text(suspect.text), clean_text(suspect.title)
    return suspect
