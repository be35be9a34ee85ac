"""Evidence recording: what a library keeps in its evidence log (``tracker.evidence``).

A check that is stored is kept as evidence with where its text came from: a capture
per crawled page (bytes as served, headers, TLS, screenshot), or a submission record for
a handed-in text (no fetch time claimed), then the check record binding the match
offsets to the exact texts by SHA-256. Bundles for others are exported from here.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from tracker.common.records import NotFound, Suspect, utcnow
from tracker.services.results import CheckResult, text_sha256
from tracker.store import MatchQuery, Store, match_id

if TYPE_CHECKING:
    from tracker.crawler.results import Page
    from tracker.evidence import EvidenceLog, ExportResult
    from tracker.evidence.log import LogEntry, PendingRecord


@dataclass(frozen=True)
class Recording:
    """What the evidence stage records of one saved check (``EvidenceRecorder.record``):
    a submission record first when it was handed in (``submitted``; ``source``: how it
    came, default the suspect's), then the check record naming ``capture_indexes`` (the
    pages its text came from); ``once``: a task run's key, the prefix of the records'
    keys."""

    result: CheckResult
    engine: str
    submitted: bool = False
    source: str | None = None
    capture_indexes: Sequence[int] | None = None
    once: str | None = None


#: Builds a report of one match: (match id, format "pdf" or "html") -> bytes.
ReportBuilder = Callable[[str, str], bytes]


class EvidenceRecorder:
    """The evidence log of one library (``open_log``: opened on first use, closed by
    ``close``) and what goes into it."""

    def __init__(self, store: Store, open_log: Callable[[], EvidenceLog]) -> None:
        self.store = store
        self._open_log = open_log
        self._log: EvidenceLog | None = None

    def log(self) -> EvidenceLog:
        if self._log is None:
            self._log = self._open_log()
        return self._log

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def record_captures(self, suspect_id: str, pages: Sequence[Page]) -> list[int]:
        """Keep crawled pages as capture records of ``suspect_id``; their indexes."""
        log = self.log()
        return [log.record_capture(page.to_capture(log.blobs, suspect_id)).index for page in pages]

    def record_submission(
        self, result: CheckResult, *, engine: str, source: str | None, once: str | None
    ) -> LogEntry:
        """A submission record ("submitted text, not fetched"; ``source`` says how it
        came, default the suspect's), then the check naming it."""
        recording = Recording(result, engine, submitted=True, source=source, once=once)
        return self.record([recording])[-1]

    def record_check(
        self,
        result: CheckResult,
        *,
        engine: str,
        capture_index: int | None = None,
        capture_indexes: Sequence[int] | None = None,
        once: str | None = None,
    ) -> LogEntry:
        """A check record: its offsets bound to the exact texts by SHA-256 (the
        suspect's and each matched work's), naming the capture(s) the text came from.
        ``once`` is the record's own key here (``record`` derives it)."""
        log = self.log()
        return log.append_many(
            [self._check_record(result, engine, capture_index, capture_indexes, once)]
        )[0]

    def record(self, recordings: Sequence[Recording]) -> list[LogEntry]:
        """The evidence of several saved checks (a chunk of a job) in one commit of the
        log (``EvidenceLog.append_many``): for each, a submission record when it was
        handed in, then its check record; their blobs stored together first. With a
        ``once`` prefix the keys are ``<once>:<suspect id>:submission`` and
        ``…:check``, so a redelivered chunk appends nothing twice."""
        from tracker.evidence import Submission
        from tracker.evidence.blobs import BlobBatch

        if not recordings:
            return []
        log = self.log()
        blobs = BlobBatch(log.blobs)
        pending: list[PendingRecord] = []
        for r in recordings:
            suspect = r.result.suspect
            key = f"{r.once}:{suspect.id}" if r.once else None
            if r.submitted:
                submission = Submission.build(
                    blobs,
                    suspect_id=suspect.id,
                    source=r.source or suspect.source or "text",
                    received_at=suspect.checked_at or utcnow(),
                    text=suspect.text,
                )
                pending.append(
                    log.submission_record(submission, once=f"{key}:submission" if key else None)
                )
            pending.append(
                self._check_record(
                    r.result,
                    r.engine,
                    None,
                    r.capture_indexes,
                    f"{key}:check" if key else None,
                )
            )
        blobs.flush()  # on disk before the records that name them
        return log.append_many(pending)

    def _check_record(
        self,
        result: CheckResult,
        engine: str,
        capture_index: int | None,
        capture_indexes: Sequence[int] | None,
        once: str | None,
    ) -> PendingRecord:
        mother_texts: dict[str, str] = {}
        for m in result.matches:
            with contextlib.suppress(NotFound):
                mother_texts[m.mother_id] = self.store.get_mother(m.mother_id).text
        return self.log().check_record(
            suspect_id=result.suspect.id,
            matches=result.matches,
            engine=engine,
            checked_at=result.suspect.checked_at,
            suspect_text=result.suspect.text,
            mother_texts=mother_texts,
            capture_index=capture_index,
            capture_indexes=capture_indexes,
            once=once,
        )

    def source_of(self, suspect: Suspect) -> list[int]:
        """The capture records the suspect's current text came from, newest first
        found: those a check of the same text named, or a capture of that text; none
        when it was handed in (a submission) or captured before the log existed."""
        sha = text_sha256(suspect.text)
        entries = self.log().entries(
            suspect_id=suspect.id, kinds=("capture", "submission", "check")
        )
        for entry in reversed(entries):
            payload = entry.payload
            text = payload.get("text")
            if entry.kind == "check" and payload.get("suspect_text_sha256") == sha:
                pages = payload.get("capture_indexes") or [payload.get("capture_index")]
                if isinstance(pages, list) and all(isinstance(i, int) for i in pages):
                    return [i for i in pages if isinstance(i, int)]
            elif isinstance(text, Mapping) and text.get("sha256") == sha:
                return [entry.index] if entry.kind == "capture" else []
        return []

    def export(
        self,
        out: str | Path | IO[bytes],
        suspect_id: str,
        mother_id: str | None,
        report: ReportBuilder,
    ) -> tuple[ExportResult, int]:
        """Write the evidence bundle of ``suspect_id`` (of its match with ``mother_id``
        only, when given), with a PDF and an HTML report (``report``) of every match;
        the ``ExportResult`` and how many matches it covers."""
        from tracker.evidence import export_bundle

        matches = self.store.query_matches(
            MatchQuery(suspect_id=suspect_id, mother_id=mother_id, limit=10_000)
        )
        if mother_id is not None and not matches:
            raise NotFound(f"no match of suspect {suspect_id!r} with {mother_id!r}")
        from tracker.cases.chapters import in_chapter_order

        log = self.log()
        reports: dict[str, bytes] = {}
        # Numbered in chapter order of the works (report-01 is the first chapter), not
        # the order the matches were found in.
        ordered = in_chapter_order(matches, lambda m: m.mother_title or m.mother_id)
        for i, m in enumerate(ordered, 1):
            # Bundle member names are plain ASCII; the number keeps cleaned ids apart.
            stem = re.sub(r"[^A-Za-z0-9._-]+", "_", m.mother_id).strip("._-")[:60] or "work"
            for fmt in ("pdf", "html"):
                data = report(match_id(m.suspect_id, m.mother_id), fmt)
                reports[f"report-{i:02d}-{stem}.{fmt}"] = data
        result = export_bundle(
            log, out, suspect_id=suspect_id, mother_id=mother_id, reports=reports
        )
        return result, len(matches)
