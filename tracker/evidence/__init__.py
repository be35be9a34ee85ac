"""Evidence that holds up: an append-only, signed, timestamped record of what Yinji saw,
and bundles anyone can verify without Yinji. For lawyers: ``docs/EVIDENCE.md``.

The package depends on no ``Library``: callers hand it what it needs (ids, texts,
matches, report bytes), so ``tracker.library``, the crawler, the CLI and the web app can
all call it. Importing it starts nothing and opens nothing.

Public API
----------
Opening the log (one per process; it is safe for several processes to append)::

    from tracker.evidence import EvidenceLog

    log = EvidenceLog.from_settings(settings)      # tracker.plumbing.config.Settings: MongoDB when
                                                   # mongo_uri is set, else the data folder
    log = EvidenceLog.open(data_dir)               # evidence.sqlite3 + evidence/blobs/
    log = EvidenceLog.open(data_dir, mongo_db=db)  # evidence_* collections + GridFS
    ...
    log.close()                                    # or: with EvidenceLog.open(...) as log:

The key (``YINJI_EVIDENCE_KEY`` or ``evidence-ed25519.pem`` in the data folder) and the
TSA (``YINJI_TSA_URL``, ``YINJI_TSA_CA``, ``YINJI_TSA_TIMEOUT``) come from
``EvidenceSettings.from_env()`` unless passed in.

Recording (each call appends one record and returns its ``LogEntry``: ``index``,
``data``, ``leaf_hash``)::

    capture = Capture.build(log.blobs, suspect_id=..., requested_url=..., final_url=...,
                            http_status=..., headers=..., body=raw_bytes, fetched_at=...,
                            crawler_version=..., redirects=[RedirectHop(url, status, location)],
                            resolved_ip=..., tls=TLSInfo.from_der(cert_der), text=...,
                            screenshot=png_bytes or None, screenshot_none_reason=...)
    log.record_capture(capture)                                   # a page fetched
    log.record_submission(Submission.build(log.blobs, suspect_id=..., source="text",
                                           received_at=..., text=...))  # handed in, not fetched
    log.record_check(suspect_id=..., matches=[Match, ...], engine="daguan",
                     suspect_text=..., mother_texts={mother_id: text}, capture_index=...)
    log.record_verdict(suspect_id=..., mother_id=..., verdict="confirmed", note=..., by=user)
    log.record_case_state(suspect_id=..., mother_id=..., state="notice_sent", detail={...})

The key's fingerprint (printed on notices and reports; ``yinji evidence head --json``)::

    public_key_fingerprint(log.key)              # 64 hex digits, = every head's log_id
    log_fingerprint(data_dir)                    # the same without opening the log
    format_fingerprint(fp)                       # "1cd7 5f0a …" for people

Reading, proving, auditing::

    log.entries(suspect_id=..., mother_id=...)   # records about a suspect / one match
    log.tree_head()                              # signed (and timestamped) head of the log
    log.inclusion_proof(index, size); log.consistency_proof(first, second)
    log.stamp_pending()                          # retry the TSA for unstamped heads
    log.publish()                                # the scheduled job: a head covering every
                                                 # record, timestamped; pending tokens retried
    log.audit()                                  # recompute everything; .ok, .problems

Bundles (``yinji evidence export`` / ``verify``)::

    export_bundle(log, "case.zip", suspect_id=..., mother_id=...,   # appends nothing
                  reports={"report.pdf": pdf_bytes, "report.html": html_bytes})
    result = verify_bundle("case.zip", fingerprint=published_hex)  # pin the log's key
    result.trusted                               # ok under the pinned key
    result.checks                                # named checks: members, key, signature, …
    print(result.summary())                      # .altered, .missing, .unproven,
                                                 # .unexpected, .problems; BundleError if hostile
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .blobs import BlobCorrupt, BlobMissing, BlobStore, FileBlobStore, GridFSBlobStore
from .canonical import canonical_json
from .capture import BlobInfo, Capture, CaptureError, RedirectHop, Submission, TLSInfo
from .keys import (
    EvidenceKeyError,
    SignedTreeHead,
    SigningKey,
    TreeHead,
    format_fingerprint,
    parse_fingerprint,
    public_key_fingerprint,
)
from .log import EvidenceLog
from .records import (
    KINDS,
    AuditReport,
    EvidenceError,
    HeadRecord,
    LogEntry,
    LogInconsistent,
    NoEvidence,
    Publication,
)
from .settings import EvidenceSettings, log_fingerprint

if TYPE_CHECKING:
    from .bundle import ExportResult, export_bundle
    from .bundle_format import BundleError, Limits, read_bundle
    from .tsa import TimestampInfo, TokenError, TSAClient, TSAError
    from .verify import verify_bundle
    from .verify_result import Check, VerifyResult

# Bundles, their verification and the TSA client (asn1crypto, x509, urllib) load on first
# use: a command that records a check opens the log and needs none of them (issue #37).
_LAZY = {
    "BundleError": "bundle_format",
    "ExportResult": "bundle",
    "Limits": "bundle_format",
    "export_bundle": "bundle",
    "read_bundle": "bundle_format",
    "TimestampInfo": "tsa",
    "TokenError": "tsa",
    "TSAClient": "tsa",
    "TSAError": "tsa",
    "Check": "verify_result",
    "VerifyResult": "verify_result",
    "verify_bundle": "verify",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "KINDS",
    "AuditReport",
    "BlobCorrupt",
    "BlobInfo",
    "BlobMissing",
    "BlobStore",
    "BundleError",
    "Capture",
    "CaptureError",
    "Check",
    "EvidenceError",
    "EvidenceKeyError",
    "EvidenceLog",
    "EvidenceSettings",
    "ExportResult",
    "FileBlobStore",
    "GridFSBlobStore",
    "HeadRecord",
    "Limits",
    "LogEntry",
    "LogInconsistent",
    "NoEvidence",
    "Publication",
    "RedirectHop",
    "SignedTreeHead",
    "SigningKey",
    "Submission",
    "TLSInfo",
    "TSAClient",
    "TSAError",
    "TimestampInfo",
    "TokenError",
    "TreeHead",
    "VerifyResult",
    "canonical_json",
    "export_bundle",
    "format_fingerprint",
    "log_fingerprint",
    "parse_fingerprint",
    "public_key_fingerprint",
    "read_bundle",
    "verify_bundle",
]
