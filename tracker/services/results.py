"""The typed results of the services, each with its JSON form next to it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from tracker.common.records import JSONObject, Match, Suspect
from tracker.documents.readers import DocumentError
from tracker.indexes.snapshot import SnapshotInfo
from tracker.matching.matcher import MatchResult

#: The book fields of a match whose work is in no book.
NO_BOOK: JSONObject = {"book_id": None, "book_title": None, "chapter": None, "chapter_index": None}


@dataclass
class IngestReport:
    """What one ``ingest`` did."""

    ingested: int = 0
    replaced: int = 0
    characters: int = 0
    errors: list[DocumentError] = field(default_factory=list)
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)  # e.g. an index to rebuild
    snapshot_seconds: float = 0.0  # a fresh local snapshot taken after it (0: none)

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "ingested": self.ingested,
            "replaced": self.replaced,
            "characters": self.characters,
            "errors": [{"source": e.source, "message": e.message} for e in self.errors],
            "seconds": round(self.seconds, 3),
            "warnings": list(self.warnings),
        }
        if self.snapshot_seconds:
            out["snapshot_seconds"] = round(self.snapshot_seconds, 3)
        return out


@dataclass
class CheckResult:
    """One checked suspect and what it matched."""

    suspect: Suspect
    result: MatchResult

    @property
    def matches(self) -> list[Match]:
        return self.result.matches

    def matches_json(self) -> list[JSONObject]:
        """The ``matches`` of the ``--json`` line: mother, title, score, coverage,
        passages, regions (``tracker.common.records.Region``), then the book the mother is a
        chapter of (``book_id``, ``book_title``, ``chapter``, ``chapter_index``: null
        when it is in no book)."""
        return [
            {
                "mother_id": m.mother_id,
                "title": m.mother_title,
                "score": m.score,
                "coverage": m.coverage,
                "passages": [p.to_dict() for p in m.passages],
                "regions": [r.to_dict() for r in m.regions],
                **(m.book.to_dict() if m.book is not None else dict(NO_BOOK)),
            }
            for m in self.matches
        ]

    def to_json(self, *, include_text: bool = False) -> JSONObject:
        """The CLI's ``--json`` line (see README: exact contract). ``text_sha256`` is
        the SHA-256 of the checked text (UTF-8) that the offsets index into: for .html
        and .docx input the extracted text, not the file; ``include_text`` adds it."""
        text = self.suspect.text
        line: JSONObject = {
            "suspect_id": self.suspect.id,
            "matches": list(self.matches_json()),
            "text_sha256": text_sha256(text),
            # Too little of the text is read by the engine (not Chinese): never a
            # silent "no match" (tracker.text.noise.script_warning).
            "warnings": [w.to_json() for w in self.result.warnings],
            # Strings found repeated at a fixed rhythm, read without (tracker.text.noise).
            "noise": [n.to_json() for n in self.result.noise],
        }
        if include_text:
            line["text"] = text
        return line


def text_sha256(text: str) -> str:
    """The SHA-256 (hex) of a text as UTF-8: how checks and evidence name a text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class RebuildResult:
    """An index recreated from the store."""

    engine: str
    mothers: int
    seconds: float

    def to_dict(self) -> JSONObject:
        return {"engine": self.engine, "mothers": self.mothers, "seconds": self.seconds}


@dataclass(frozen=True)
class TailsMerged:
    """An index's tail segments merged into it (``tracker.indexes.tail``)."""

    engine: str
    segments: int  # segments merged and dropped
    mothers: int  # their mothers, added to the index
    seconds: float

    def to_dict(self) -> JSONObject:
        return {
            "engine": self.engine,
            "segments": self.segments,
            "mothers": self.mothers,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class ReshardResult:
    """An index moved to ``2**bucket_bits`` buckets."""

    engine: str
    bucket_bits: int
    seconds: float

    def to_dict(self) -> JSONObject:
        return {"engine": self.engine, "bucket_bits": self.bucket_bits, "seconds": self.seconds}


@dataclass(frozen=True)
class SnapshotTaken:
    """A local copy of an engine's index, written (``yinji index snapshot``)."""

    engine: str
    info: SnapshotInfo

    def to_dict(self) -> JSONObject:
        return {"engine": self.engine, **self.info.to_dict()}


@dataclass(frozen=True)
class SnapshotSkipped:
    """No copy taken of an engine's index by ``refresh_snapshots``, and why."""

    engine: str
    skipped: str

    def to_dict(self) -> JSONObject:
        return {"engine": self.engine, "skipped": self.skipped}


@dataclass(frozen=True)
class CandidateSettings:
    """Daguan's query-time candidate options now in force."""

    min_hits: int
    weak_candidates: int

    def to_dict(self) -> dict[str, int]:
        return {"min_hits": self.min_hits, "weak_candidates": self.weak_candidates}
