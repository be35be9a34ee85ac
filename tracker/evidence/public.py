"""What a log publishes so that recipients need not trust a bundle: the key's
fingerprint and PEM, the latest signed tree head (with its timestamp token), the hash
of the verifier script bundles carry, and consistency proofs between any two heads.

``yinji evidence head --json``, ``GET /api/v1/evidence/head`` (public) and the files
``yinji evidence head --publish DIR`` writes for a rights holder's own web site all
come from ``published_head``; ``yinji evidence consistency`` and
``GET /api/v1/evidence/consistency`` from ``consistency``. Reading them appends no
record (docs/EVIDENCE.md, "Trust model").
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

from tracker.common.records import JSONObject

from .bundle_format import verifier_sha256
from .keys import TreeHead, format_fingerprint
from .log import EvidenceLog
from .merkle import ProofError, verify_consistency
from .records import EvidenceError, HeadRecord

PUBLISHED_KEY_FILE = "yinji-evidence-key.pem"
PUBLISHED_HEAD_FILE = "yinji-evidence-head.json"


@dataclass(frozen=True)
class PublishedHead:
    fingerprint: str
    public_key_pem: bytes
    record: HeadRecord

    @property
    def head(self) -> TreeHead:
        return self.record.head

    def to_json(self) -> JSONObject:
        token = self.record.token
        return {
            "fingerprint": self.fingerprint,
            "fingerprint_grouped": format_fingerprint(self.fingerprint),
            "public_key_pem": self.public_key_pem.decode("ascii"),
            "tree_head": self.head.to_json(),
            "tree_head_id": self.record.id,
            # the exact signed bytes (treehead.json in a bundle) and their signature
            "tree_head_signed": self.head.encode().decode("utf-8"),
            "signature_b64": base64.b64encode(self.record.signed.signature).decode("ascii"),
            "timestamped": token is not None,
            "timestamp_token_b64": base64.b64encode(token).decode("ascii") if token else None,
            "verifier_sha256": verifier_sha256(),
        }


def published_head(log: EvidenceLog, *, sign: bool = True) -> PublishedHead:
    """The log's fingerprint and a signed head. ``sign``: a head covering every record
    (signed now when the log has grown, after ``check_consistency``); otherwise the
    latest stored head (nothing signed: what the public web endpoint serves), or a
    first one when none exists yet."""
    if sign:
        record = log.tree_head()
    else:
        heads = log.heads()
        record = heads[-1] if heads else log.tree_head()
    return PublishedHead(log.key_id, log.public_key_pem(), record)


def write_published(published: PublishedHead, folder: str | Path) -> list[Path]:
    """The static files a rights holder can put on their own web site: the public key
    (PEM) and the head (JSON), beside each other in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    key, head = folder / PUBLISHED_KEY_FILE, folder / PUBLISHED_HEAD_FILE
    key.write_bytes(published.public_key_pem)
    head.write_text(
        json.dumps(published.to_json(), ensure_ascii=False, indent=2, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    return [key, head]


@dataclass(frozen=True)
class Consistency:
    """RFC 6962 consistency proof: the log of ``second`` records begins with the log of
    ``first`` records (it only grew)."""

    first: int
    second: int
    first_root: bytes
    second_root: bytes
    proof: tuple[bytes, ...]
    log_id: str

    def to_json(self) -> JSONObject:
        return {
            "first": self.first,
            "first_root": self.first_root.hex(),
            "log_id": self.log_id,
            "proof": [h.hex() for h in self.proof],
            "second": self.second,
            "second_root": self.second_root.hex(),
        }

    def verify(self) -> bool:
        return verify_consistency(
            self.first, self.second, self.first_root, self.second_root, list(self.proof)
        )

    @classmethod
    def from_json(cls, obj: object) -> Consistency:
        try:
            if not isinstance(obj, dict):
                raise TypeError("expected an object")
            return cls(
                int(obj["first"]),
                int(obj["second"]),
                bytes.fromhex(obj["first_root"]),
                bytes.fromhex(obj["second_root"]),
                tuple(bytes.fromhex(h) for h in obj["proof"]),
                str(obj["log_id"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EvidenceError(f"not a consistency proof ({exc})") from None


def consistency(log: EvidenceLog, first: int, second: int | None = None) -> Consistency:
    """The proof that the log's first ``first`` records are the start of its first
    ``second`` (default: the latest signed head's size). Sizes are those of signed
    heads (``yinji evidence head``, ``treehead.json`` of a bundle); ``EvidenceError``
    for sizes the log does not hold."""
    if second is None:
        heads = log.heads()
        second = heads[-1].head.size if heads else log.size
    size = log.size
    if not 0 <= first <= second <= size:
        raise EvidenceError(
            f"a consistency proof needs 0 <= first <= second <= {size} (the log's size), "
            f"got first={first}, second={second}"
        )
    try:
        proof = log.consistency_proof(first, second)
    except ProofError as exc:
        raise EvidenceError(str(exc)) from None
    return Consistency(first, second, log.root(first), log.root(second), tuple(proof), log.key_id)
