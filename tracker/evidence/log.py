"""The append-only evidence log: every capture, check and verdict is a record (leaf) of an
RFC 6962 Merkle tree, and signed tree heads commit to all records up to a size.

A record's bytes (what is hashed, kept verbatim, and exported as ``log/NNNNNN.json``)
are the canonical JSON (``tracker.evidence.canonical``) of::

    {"kind": "capture", "logged_at": "2024-11-22T08:30:05.123Z",
     "payload": {...}, "version": "yinji-log-entry/1"}

and its leaf hash is ``SHA-256(0x00 || bytes)``. Kinds (``KINDS``): ``capture`` (a page
fetched, see ``Capture``), ``submission`` (a text handed in, not fetched), ``check`` (the
matches found for a suspect), ``verdict`` (a person's decision on a match),
``case_state`` (what was done about it: notice sent, taken down, …) and ``export`` (the
hashes of report files put in a bundle).

Two backends keep the same tables: ``SqliteBackend`` (``evidence.sqlite3`` in the data
folder; triggers abort any UPDATE or DELETE) and ``MongoBackend`` (collections
``evidence_*``; see ``tracker.evidence.mongo``). Neither is trusted to be honest:
``EvidenceLog.audit`` recomputes every leaf hash from the stored bytes, every stored tree
node from the leaves, and every stored tree head's root, and checks each signature and
timestamp token. Rewriting a record changes the root of every later tree head, which
the signatures, the timestamp tokens and every bundle already handed out pin.

Appends from several processes are safe: a record's index is the log's size at the
moment it is inserted, under the database's uniqueness guarantee (sqlite ``BEGIN
IMMEDIATE``; MongoDB's unique ``_id``, retried on conflict), so indexes never repeat and
never leave a gap.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.common.records import Match
from tracker.common.rules import check_verdict
from tracker.plumbing.datadir import private_dir

from .backend import Backend
from .blobs import BlobStore, FileBlobStore
from .canonical import (
    format_time,
    ms_from_time,
    parse_json_object,
    time_from_ms,
)
from .capture import Capture, Submission
from .keys import EvidenceKeyError, SignedTreeHead, SigningKey, TreeHead, public_key_from_pem
from .merkle import MemoryTree, ProofError, consistency_proof, inclusion_proof, leaf_hash
from .merkle import node_hash as merkle_node
from .merkle import root_hash as merkle_root
from .records import (
    ENTRY_VERSION,
    KINDS,
    AuditReport,
    BackendRecord,
    EvidenceError,
    HeadRecord,
    LogEntry,
    LogInconsistent,
    PendingRecord,
    Publication,
    Stamp,
    encode_entry,
)
from .settings import EvidenceSettings
from .sqlite import SQLITE_FILE, SqliteBackend

if TYPE_CHECKING:
    from cryptography import x509
    from pymongo import MongoClient
    from pymongo.database import Database

    from tracker.plumbing.config import Settings
    from tracker.store.mongo_client import MongoDocument

    # The TSA client (asn1crypto, urllib, x509: ~0.1 s) is imported where a timestamp
    # is asked for or checked, not by every command that records a check (issue #37).
    from .tsa import TSAClient


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


# --------------------------------------------------------------------------- the log


class _Nodes:
    """Perfect-subtree hashes of the log's first ``size`` leaves, read from the backend's
    node table and filled in (from the leaves) where missing."""

    def __init__(self, backend: Backend, size: int) -> None:
        self.backend = backend
        self.size = size

    def perfect(self, level: int, index: int) -> bytes:
        if (index + 1) << level > self.size:
            raise ProofError(f"subtree {level}/{index} is not complete in {self.size} leaves")
        if level == 0:
            found = self.backend.entry(index)
            if found is None:
                raise EvidenceError(f"evidence log record {index} is missing")
            return found[1]
        value = self.backend.get_node(level, index)
        if value is None:
            value = merkle_node(
                self.perfect(level - 1, 2 * index), self.perfect(level - 1, 2 * index + 1)
            )
            self.backend.put_node(level, index, value)
        return value


class _HeadName:
    """A head's name in messages, formatted only when a problem names it."""

    def __init__(self, hid: int, head: TreeHead) -> None:
        self.hid, self.head = hid, head

    def __format__(self, spec: str) -> str:
        signed_at = format_time(time_from_ms(self.head.timestamp_ms))
        return f"signed tree head {self.hid} ({self.head.size} records, {signed_at})"


class EvidenceLog:
    """The append-only, signed, timestamped evidence log (see the module docstring)."""

    def __init__(
        self,
        backend: Backend,
        key: SigningKey,
        blobs: BlobStore,
        *,
        tsa: TSAClient | None = None,
        clock: Callable[[], datetime] = _utcnow,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.backend = backend
        self.key = key
        self.blobs = blobs
        self.tsa = tsa
        self.clock = clock
        self._on_close = on_close
        self._verified_heads: set[tuple[int, bytes, TreeHead]] = set()
        self._rooted_heads: set[tuple[int, int, bytes]] = set()
        stored = backend.put_meta_once("public_key", self.key.public_pem().decode("ascii"))
        stored_key = public_key_from_pem(stored.encode("ascii"), "the log's public key")
        if stored_key.public_bytes_raw() != self.key.public_key.public_bytes_raw():
            from .keys import key_id_of

            raise EvidenceKeyError(
                f"this evidence log is signed by key {key_id_of(stored_key)[:16]}…, but this "
                f"process has key {self.key.key_id[:16]}… ({self.key.source}); give every "
                "process the same key (YINJI_EVIDENCE_KEY)"
            )

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        data_dir: str | Path,
        *,
        mongo_db: Database[MongoDocument] | None = None,
        evidence: EvidenceSettings | None = None,
        key: SigningKey | None = None,
        tsa: TSAClient | None = None,
    ) -> EvidenceLog:
        """The log of a data folder (``evidence.sqlite3``, blobs under
        ``evidence/blobs``), or, with ``mongo_db`` (a pymongo ``Database``), in its
        ``evidence_*`` collections with blobs in GridFS. The key and the TSA come from
        ``evidence`` (default: ``EvidenceSettings.from_env()``) unless given."""
        evidence = evidence or EvidenceSettings.from_env()
        data_dir = Path(data_dir)
        key = key or SigningKey.load(data_dir, evidence.key)
        if tsa is None and evidence.tsa_url:
            from .tsa import TSAClient, load_certificates

            trusted = load_certificates(evidence.tsa_ca) if evidence.tsa_ca else []
            tsa = TSAClient(evidence.tsa_url, timeout=evidence.tsa_timeout, trusted=trusted)
        backend: Backend
        blobs: BlobStore
        if mongo_db is not None:
            from .blobs import GridFSBlobStore
            from .mongo import MongoBackend

            backend = MongoBackend(mongo_db)
            blobs = GridFSBlobStore(mongo_db)
        else:
            private_dir(data_dir)
            backend = SqliteBackend(data_dir / SQLITE_FILE)
            blobs = FileBlobStore.in_data_dir(data_dir)
        try:
            return cls(backend, key, blobs, tsa=tsa)
        except BaseException:
            backend.close()
            raise

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        evidence: EvidenceSettings | None = None,
        client: MongoClient[MongoDocument] | None = None,
    ) -> EvidenceLog:
        """The log beside the library ``settings`` describe: MongoDB when ``mongo_uri``
        is set, else the data folder. The one place that rule is written: ``Backends``
        passes its shared ``client``; alone, the log opens a client of its own
        (``tracker.store.mongo_client``'s timeout rule) that ``close`` closes."""
        from tracker.store.files import DataFiles

        folder = DataFiles(settings.data_dir).evidence
        if not settings.mongo_uri:
            return cls.open(folder, evidence=evidence)
        if client is not None:
            return cls.open(folder, mongo_db=client[settings.mongo_db], evidence=evidence)
        from tracker.store.mongo_client import mongo_client

        client = mongo_client(settings.mongo_uri)
        try:
            log = cls.open(folder, mongo_db=client[settings.mongo_db], evidence=evidence)
        except BaseException:
            client.close()
            raise
        log._on_close = client.close
        return log

    def close(self) -> None:
        self.backend.close()
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> EvidenceLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def key_id(self) -> str:
        return self.key.key_id

    def public_key_pem(self) -> bytes:
        return self.key.public_pem()

    # -- appending -------------------------------------------------------------------
    def append(
        self,
        kind: str,
        payload: Mapping[str, object],
        *,
        suspect_id: str | None = None,
        mother_id: str | None = None,
        once: str | None = None,
    ) -> LogEntry:
        """Add a record; returns it with its leaf index and hash. ``suspect_id`` and
        ``mother_id`` index it for ``entries`` (default: the payload's own fields).

        ``once`` names the occasion of the record (a task run and its suspect, say): a
        record already appended under that key is returned and nothing is appended, so
        a redelivered task does not record its work twice. The key is kept (meta
        ``once:<key>``) in the same commit as the record (sqlite; MongoDB: in the
        record's document too), so a crash cannot keep one without the other."""
        return self.append_many([PendingRecord(kind, payload, suspect_id, mother_id, once)])[0]

    def append_many(self, records: Sequence[PendingRecord]) -> list[LogEntry]:
        """Add records at consecutive indexes, in order, in one commit (group commit:
        a chunk of checks pays one fsync, not two per check): with sqlite all of them
        or none (a crash before the commit leaves nothing; a redelivered chunk appends
        them then); with MongoDB one ``insert_many`` (a crash in it may leave the first
        ones, and a redelivery appends only the rest: each ``once`` key is looked up in
        the records themselves). A record whose ``once`` key was appended before is not
        appended again: the earlier record is returned in its place."""
        encoded: list[BackendRecord] = []
        for r in records:
            data = encode_entry(r.kind, r.payload, self.clock())
            suspect_id = (
                r.suspect_id if r.suspect_id is not None else _text(r.payload.get("suspect_id"))
            )
            mother_id = (
                r.mother_id if r.mother_id is not None else _text(r.payload.get("mother_id"))
            )
            encoded.append(
                BackendRecord(data, leaf_hash(data), r.kind, suspect_id, mother_id, r.once)
            )
        placed = self.backend.append_many(encoded)
        entries: list[LogEntry] = []
        for record, where in zip(encoded, placed, strict=True):
            if where.new:
                self._complete_nodes(where.index)
                entries.append(LogEntry(where.index, record.data, record.leaf))
            else:
                entries.append(self.entry(where.index))
        return entries

    def _complete_nodes(self, index: int) -> None:
        """Store the perfect subtrees the new leaf completes (a cache: proofs fill in
        any missing one themselves, so a crash here loses nothing)."""
        nodes = _Nodes(self.backend, index + 1)
        level, i = 0, index
        while i & 1:
            level += 1
            i >>= 1
            nodes.perfect(level, i)

    def record_capture(self, capture: Capture) -> LogEntry:
        """A fetched page (``Capture``: fill it with ``Capture.build``)."""
        return self.append("capture", capture.to_json(), suspect_id=capture.suspect_id)

    def record_submission(self, submission: Submission, *, once: str | None = None) -> LogEntry:
        """A text handed in (pasted or uploaded), not fetched (``once``: see ``append``)."""
        return self.append_many([self.submission_record(submission, once=once)])[0]

    @staticmethod
    def submission_record(submission: Submission, *, once: str | None = None) -> PendingRecord:
        """``record_submission``'s record, to append with others (``append_many``)."""
        return PendingRecord(
            "submission", submission.to_json(), suspect_id=submission.suspect_id, once=once
        )

    def record_check(
        self,
        *,
        suspect_id: str,
        matches: Sequence[Match],
        engine: str,
        checked_at: datetime | None = None,
        suspect_text: str | None = None,
        mother_texts: Mapping[str, str] | None = None,
        capture_index: int | None = None,
        capture_indexes: Sequence[int] | None = None,
        once: str | None = None,
    ) -> LogEntry:
        """The result of checking a suspect: every match with its scores and passages
        (also when nothing matched). The texts, when given, are recorded by SHA-256 so
        the offsets are bound to exact texts; ``capture_index`` names the capture record
        the suspect text came from. A text assembled from several fetched pages (a
        chapter split over pages: their texts joined by newlines) names them all, in
        order, in ``capture_indexes`` (``capture_index`` is then the first). ``once``:
        see ``append``."""
        record = self.check_record(
            suspect_id=suspect_id,
            matches=matches,
            engine=engine,
            checked_at=checked_at,
            suspect_text=suspect_text,
            mother_texts=mother_texts,
            capture_index=capture_index,
            capture_indexes=capture_indexes,
            once=once,
        )
        return self.append_many([record])[0]

    def check_record(
        self,
        *,
        suspect_id: str,
        matches: Sequence[Match],
        engine: str,
        checked_at: datetime | None = None,
        suspect_text: str | None = None,
        mother_texts: Mapping[str, str] | None = None,
        capture_index: int | None = None,
        capture_indexes: Sequence[int] | None = None,
        once: str | None = None,
    ) -> PendingRecord:
        """``record_check``'s record, to append with others (``append_many``)."""
        mother_texts = mother_texts or {}
        pages = [int(i) for i in capture_indexes or ()]
        if pages and capture_index is None:
            capture_index = pages[0]

        def sha(text: str | None) -> str | None:
            return hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None

        payload: dict[str, Any] = {
            "capture_index": capture_index,
            "checked_at": format_time(checked_at or self.clock()),
            "engine": engine,
            "matches": [
                {
                    "coverage": round(float(m.coverage), 4),
                    "mother_coverage": round(float(m.mother_coverage), 4),
                    "mother_id": m.mother_id,
                    "mother_text_sha256": sha(mother_texts.get(m.mother_id)),
                    "mother_title": m.mother_title,
                    "passages": [p.to_dict() for p in m.passages],
                    "score": round(float(m.score), 4),
                }
                for m in matches
            ],
            "suspect_id": suspect_id,
            "suspect_text_sha256": sha(suspect_text),
        }
        if len(pages) > 1:
            payload["capture_indexes"] = pages
        return PendingRecord("check", payload, suspect_id=suspect_id, once=once)

    def record_verdict(
        self,
        *,
        suspect_id: str,
        mother_id: str,
        verdict: str,
        note: str | None = None,
        by: str | None = None,
        at: datetime | None = None,
    ) -> LogEntry:
        """A person's decision on a match (``pending``, ``confirmed``, ``dismissed``).
        A decision that changes nothing (the same verdict and note as the latest one
        recorded for the match) appends nothing: the latest record is returned."""
        verdict = check_verdict(verdict)
        for index in reversed(self.backend.find(suspect_id, mother_id, ["verdict"])):
            latest = self.entry(index)
            if latest.payload.get("mother_id") != mother_id:
                continue
            if latest.payload.get("verdict") == verdict and latest.payload.get("note") == note:
                return latest
            break
        payload = {
            "at": format_time(at or self.clock()),
            "by": by,
            "mother_id": mother_id,
            "note": note,
            "suspect_id": suspect_id,
            "verdict": verdict,
        }
        return self.append("verdict", payload)

    def record_case_state(
        self,
        *,
        suspect_id: str,
        state: str,
        mother_id: str | None = None,
        detail: Mapping[str, object] | None = None,
        by: str | None = None,
        at: datetime | None = None,
    ) -> LogEntry:
        """What was done about a case (``notice_sent``, ``taken_down``, …; free text
        for the state, ``detail`` any JSON object)."""
        if not isinstance(state, str) or not state.strip():
            raise EvidenceError("a case state must be a non-empty string")
        payload = {
            "at": format_time(at or self.clock()),
            "by": by,
            "detail": dict(detail or {}),
            "mother_id": mother_id,
            "state": state.strip(),
            "suspect_id": suspect_id,
        }
        return self.append("case_state", payload)

    # -- reading ---------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.backend.size()

    def entry(self, index: int) -> LogEntry:
        found = self.backend.entry(index)
        if found is None:
            raise EvidenceError(f"the evidence log has no record {index} (size {self.size})")
        return LogEntry(index, found[0], found[1])

    def entries(
        self,
        *,
        suspect_id: str,
        mother_id: str | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[LogEntry]:
        """Records about a suspect, oldest first; with ``mother_id``, only those that
        name that mother or no mother (captures, checks)."""
        return [self.entry(i) for i in self.backend.find(suspect_id, mother_id, kinds)]

    # -- tree heads and proofs ------------------------------------------------------------
    def root(self, size: int | None = None) -> bytes:
        size = self.size if size is None else size
        return merkle_root(_Nodes(self.backend, size), size)

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        return inclusion_proof(_Nodes(self.backend, size), index, size)

    def consistency_proof(self, first: int, second: int) -> list[bytes]:
        return consistency_proof(_Nodes(self.backend, second), first, second)

    def head(self, head_id: int) -> HeadRecord:
        for hid, signed in self.backend.heads():
            if hid == head_id:
                return HeadRecord(hid, signed, tuple(self.backend.stamps(hid)))
        raise EvidenceError(f"the evidence log has no tree head {head_id}")

    def heads(self) -> list[HeadRecord]:
        return [
            HeadRecord(hid, signed, tuple(self.backend.stamps(hid)))
            for hid, signed in self.backend.heads()
        ]

    def check_consistency(self) -> int:
        """Refuse (``LogInconsistent``) unless the log still holds what every stored
        signed tree head says: each head is signed by this log's key, covers no more
        records than the log holds (a truncated log fails) and its root is the root of
        the log's first ``size`` records (a rewritten log fails); the records added
        since the latest head hash to their stored leaf hashes. A head's root, once
        found right, is not recomputed in the same process (the largest head's always
        is, and every size is compared every time). Runs before any head is signed or
        handed out (``tree_head``: ``yinji evidence head``, ``stamp``,
        ``export`` and the scheduled job); ``audit`` recomputes everything. Returns
        the log's size."""
        size = self.size
        problems: list[str] = []
        roots: dict[int, bytes] = {}
        signed_heads = self.backend.heads()
        largest = max((signed.head.size for _, signed in signed_heads), default=0)
        for hid, signed in signed_heads:
            head = signed.head
            name = _HeadName(hid, head)
            memo = (hid, signed.signature, head)
            if memo not in self._verified_heads:
                if not signed.verify(self.key.public_key):
                    problems.append(f"{name}: its signature does not verify with the log's key")
                    continue
                self._verified_heads.add(memo)
            if head.size > size:
                problems.append(
                    f"{name} covers {head.size} records but the log now holds {size}: "
                    "records were removed (the log was truncated)"
                )
                continue
            rooted = (hid, head.size, head.root_hash)
            if rooted in self._rooted_heads and head.size != largest:
                continue  # checked earlier in this process; the largest head always is
            if head.size not in roots:
                try:
                    roots[head.size] = self.root(head.size)
                except (EvidenceError, ProofError) as exc:
                    problems.append(f"{name}: its records cannot be read ({exc})")
                    continue
            if roots[head.size] != head.root_hash:
                problems.append(
                    f"{name}: the log's first {head.size} records no longer hash to its root "
                    "(the log was rewritten)"
                )
            else:
                self._rooted_heads.add(rooted)
        if not problems:
            for index, data, stored in self.backend.entries(largest, size):
                if leaf_hash(data) != stored:
                    problems.append(
                        f"record {index}: its bytes no longer hash to its stored leaf hash"
                    )
        if problems:
            raise LogInconsistent(problems)
        return size

    def tree_head(self, *, fresh: bool = False) -> HeadRecord:
        """A signed head covering every record: the latest stored one when the log has
        not grown since (unless ``fresh``), else a new one, signed, stored and, when a
        TSA is configured, timestamped. A TSA failure loses nothing: the head is kept,
        unstamped, with the error (``HeadRecord.stamp_error``); ``stamp_pending`` retries.
        ``LogInconsistent`` (nothing signed) when the log no longer holds what a stored
        signed head says (``check_consistency``)."""
        size = self.check_consistency()
        latest = self.backend.latest_head()
        if latest is not None and latest[1].head.size == size and not fresh:
            return self.head(latest[0])
        now_ms = ms_from_time(self.clock())
        if latest is not None:
            now_ms = max(now_ms, latest[1].head.timestamp_ms)
        head = TreeHead(size, self.root(size), now_ms, self.key.key_id)
        signed = self.key.sign_head(head)
        head_id = self.backend.add_head(signed)
        if self.tsa is not None:
            self._stamp(head_id, signed)
        return self.head(head_id)

    def _stamp(self, head_id: int, signed: SignedTreeHead) -> Stamp:
        from .tsa import TSAError

        assert self.tsa is not None
        try:
            response, _info = self.tsa.stamp(signed.head.encode())
            stamp = Stamp(head_id, self.clock(), self.tsa.url, response, None)
        except TSAError as exc:
            stamp = Stamp(head_id, self.clock(), self.tsa.url, None, str(exc))
        self.backend.add_stamp(stamp)
        return stamp

    def publish(self) -> Publication:
        """What the scheduled job (and ``yinji evidence stamp``) runs: a signed tree head
        covering every record (a new one only when the log has grown), timestamped when
        a TSA is configured; then, once the TSA has granted a token in this run, tokens
        for the older heads still without one (the TSA may have been down when they
        were signed). While the TSA is down a run makes one attempt, not one per head."""
        latest = self.backend.latest_head()
        record = self.tree_head()
        new = latest is None or latest[0] != record.id
        attempts: list[Stamp] = list(record.stamps) if new else []
        if self.tsa is not None and record.token is None and not new:
            attempts.append(self._stamp(record.id, record.signed))
            record = self.head(record.id)
        if self.tsa is not None and record.token is not None:
            for older in self.heads():
                if older.id == record.id or older.token is not None:
                    continue
                stamp = self._stamp(older.id, older.signed)
                attempts.append(stamp)
                if not stamp.ok:
                    break  # down again: the next run tries again
        return Publication(record, new, tuple(attempts))

    def stamp_pending(self) -> list[Stamp]:
        """Ask the TSA again for every head that has no token yet; returns the attempts."""
        if self.tsa is None:
            return []
        done = []
        for record in self.heads():
            if record.token is None:
                done.append(self._stamp(record.id, record.signed))
        return done

    # -- audit ---------------------------------------------------------------------------
    def audit(self, *, trusted_tsa: Sequence[x509.Certificate] | None = None) -> AuditReport:
        """Recompute everything from the stored record bytes and compare (see the
        module docstring). Reads the whole log."""
        from .tsa import TokenError, verify_response

        report = AuditReport()
        size = self.size
        report.size = size
        tree = MemoryTree()
        for index, data, stored_leaf in self.backend.entries(0, size):
            if index != tree.size:
                report.problems.append(f"record {tree.size} is missing")
                return report
            actual = leaf_hash(data)
            if actual != stored_leaf:
                report.problems.append(
                    f"record {index}: its bytes no longer hash to its stored leaf hash"
                )
            tree.append(actual)
            try:
                envelope = parse_json_object(data, f"record {index}")
                if envelope.get("kind") not in KINDS or envelope.get("version") != ENTRY_VERSION:
                    raise ValueError("unknown kind or version")
            except ValueError as exc:
                report.problems.append(f"record {index}: not a valid record ({exc})")
        for level, idx, value in self.backend.nodes():
            if (idx + 1) << level > size:
                report.problems.append(
                    f"stored node {level}/{idx} covers records that do not exist"
                )
            elif tree.perfect(level, idx) != value:
                report.problems.append(f"stored node {level}/{idx} disagrees with the records")
        trusted = list(trusted_tsa or (self.tsa.trusted if self.tsa else []))
        for record in self.heads():
            report.heads += 1
            head = record.head
            name = f"tree head {record.id} (size {head.size})"
            if head.size > size:
                report.problems.append(f"{name} covers records that do not exist")
                continue
            if tree.root(head.size) != head.root_hash:
                report.problems.append(
                    f"{name}: its root no longer matches the records: the log was rewritten"
                )
            if not record.signed.verify(self.key.public_key):
                report.problems.append(f"{name}: the signature does not verify")
            for stamp in record.stamps:
                if stamp.response is None:
                    continue
                try:
                    verify_response(stamp.response, data=head.encode(), trusted=trusted)
                except TokenError as exc:
                    report.problems.append(f"{name}: its timestamp token fails: {exc}")
            if record.token is not None:
                report.stamped_heads += 1
        return report
