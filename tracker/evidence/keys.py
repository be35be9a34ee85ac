"""The log's Ed25519 signing key and its signed tree heads.

The key lives in the data folder as ``evidence-ed25519.pem`` (PKCS#8 PEM, created on
first use with mode 0600; a key file other users can read is refused, as ssh refuses
one) or comes from ``YINJI_EVIDENCE_KEY`` (PEM text, or the path of a PEM file; see
``tracker.evidence.settings``). Its *log id* is the SHA-256 of the 32-byte raw public
key, in hex.

A tree head says: "the log, identified by ``log_id``, held ``size`` records whose
Merkle tree hash was ``root_hash``, at ``timestamp_ms``". Its signed bytes are the
canonical JSON (``tracker.evidence.canonical``) of::

    {"log_id": "<64 hex>", "root_hash": "<64 hex>", "size": <int>,
     "time_utc": "<ISO 8601, ms, Z>", "timestamp_ms": <int>, "version": "yinji-treehead/1"}

exactly the bytes of ``treehead.json`` in an exported bundle; ``treehead.sig`` is the
64-byte Ed25519 signature of those bytes (RFC 8032, "pure" Ed25519, no pre-hash), which
``openssl pkeyutl -verify -pubin -inkey public-key.pem -rawin -in treehead.json
-sigfile treehead.sig`` checks.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from tracker.common.records import JSONObject

from .canonical import CanonicalError, canonical_json, format_time, parse_json_object, time_from_ms

KEY_FILE = "evidence-ed25519.pem"
TREE_HEAD_VERSION = "yinji-treehead/1"


class EvidenceKeyError(ValueError):
    """The signing key cannot be read, is of the wrong kind, or is exposed."""


def key_id_of(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def public_key_fingerprint(key: Ed25519PublicKey | SigningKey | bytes) -> str:
    """The fingerprint a rights holder publishes and every notice and report prints:
    the SHA-256 (64 hex digits) of the log's raw 32-byte Ed25519 public key, which is
    also the ``log_id`` of every tree head the key signs. ``key``: the public key, a
    ``SigningKey``, PEM bytes of a public key, or the 32 raw bytes. The same number as
    ``openssl pkey -pubin -in public-key.pem -outform DER | tail -c 32 | sha256sum``."""
    if isinstance(key, SigningKey):
        return key.key_id
    if isinstance(key, Ed25519PublicKey):
        return key_id_of(key)
    if isinstance(key, bytes | bytearray) and len(key) == 32:
        return hashlib.sha256(bytes(key)).hexdigest()
    return key_id_of(public_key_from_pem(bytes(key)))


def format_fingerprint(fingerprint: str) -> str:
    """The fingerprint for people: groups of four hex digits (``1cd7 5f0a …``), easier
    to compare by eye and to read out on the phone; the same digits."""
    fp = fingerprint.strip().lower()
    return " ".join(fp[i : i + 4] for i in range(0, len(fp), 4))


def parse_fingerprint(text: str, what: str = "fingerprint") -> str:
    """A fingerprint as given by a person (spaces, colons, upper case allowed): 64 hex
    digits, lower case; ``EvidenceKeyError`` naming ``what`` otherwise."""
    fp = "".join(ch for ch in text if ch not in " :\t-").lower()
    if len(fp) != 64 or any(ch not in "0123456789abcdef" for ch in fp):
        raise EvidenceKeyError(
            f"{what}: expected the 64 hex digits of a SHA-256 key fingerprint, got {text!r}"
        )
    return fp


def public_key_from_pem(pem: bytes, source: str = "public key") -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise EvidenceKeyError(f"{source}: not a PEM public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise EvidenceKeyError(f"{source}: an Ed25519 public key was expected")
    return key


def _refuse_exposed(path: Path, mode: int, prefix: str = "") -> None:
    """A private key other users can read or write is refused (as ssh refuses one):
    whoever can read it can sign tree heads in the log's name."""
    if mode & 0o077:
        raise EvidenceKeyError(
            f"{prefix}key file {path} can be read by other users (mode {mode:04o}); "
            f"run: chmod 600 {path}"
        )


class SigningKey:
    """An Ed25519 private key and where it came from (for error messages)."""

    def __init__(self, private_key: Ed25519PrivateKey, source: str) -> None:
        self.private_key = private_key
        self.source = source

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(Ed25519PrivateKey.generate(), "generated")

    @classmethod
    def from_pem(cls, pem: bytes, source: str) -> SigningKey:
        try:
            key = serialization.load_pem_private_key(pem, password=None)
        except TypeError:
            raise EvidenceKeyError(
                f"{source}: the key is encrypted; give an unencrypted PKCS#8 PEM key"
            ) from None
        except ValueError as exc:
            raise EvidenceKeyError(f"{source}: not a PEM private key ({exc})") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise EvidenceKeyError(
                f"{source}: an Ed25519 key was expected, got {type(key).__name__} "
                "(make one with: openssl genpkey -algorithm ed25519)"
            )
        return cls(key, source)

    @classmethod
    def load(cls, data_dir: str | os.PathLike[str], configured: str | None = None) -> SigningKey:
        """The key ``configured`` names (``YINJI_EVIDENCE_KEY``: PEM text or a path),
        else the data folder's key file, created on first use."""
        if configured is not None and configured.strip():
            value = configured.strip()
            if value.startswith("-----BEGIN"):
                return cls.from_pem(value.encode("ascii", "replace"), "YINJI_EVIDENCE_KEY")
            path = Path(value)
            try:
                mode = path.stat().st_mode & 0o777
                pem = path.read_bytes()
            except OSError as exc:
                raise EvidenceKeyError(
                    f"YINJI_EVIDENCE_KEY: cannot read key file {value!r} ({exc.strerror})"
                ) from None
            _refuse_exposed(path, mode, "YINJI_EVIDENCE_KEY: ")
            return cls.from_pem(pem, f"YINJI_EVIDENCE_KEY file {value}")
        return cls._data_dir_key(Path(data_dir) / KEY_FILE)

    @classmethod
    def _data_dir_key(cls, path: Path) -> SigningKey:
        if not path.exists():
            cls._create(path)
        try:
            mode = path.stat().st_mode & 0o777
            pem = path.read_bytes()
        except OSError as exc:
            raise EvidenceKeyError(f"cannot read key file {path} ({exc.strerror})") from None
        _refuse_exposed(path, mode)
        return cls.from_pem(pem, f"key file {path}")

    @staticmethod
    def _create(path: Path) -> None:
        """Write a new key without ever exposing a partial file: a private temp file
        (0600) linked into place; when another process won the race, keep theirs."""
        path.parent.mkdir(parents=True, exist_ok=True)
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(pem)
                fh.flush()
                os.fsync(fh.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()

    @property
    def key_id(self) -> str:
        return key_id_of(self.public_key)

    def public_pem(self) -> bytes:
        return self.public_key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def sign(self, data: bytes) -> bytes:
        return self.private_key.sign(data)

    def sign_head(self, head: TreeHead) -> SignedTreeHead:
        if head.log_id != self.key_id:
            raise EvidenceKeyError(
                f"tree head of log {head.log_id[:16]}… cannot be signed by key "
                f"{self.key_id[:16]}… ({self.source})"
            )
        return SignedTreeHead(head, self.sign(head.encode()))


@dataclass(frozen=True)
class TreeHead:
    size: int
    root_hash: bytes
    timestamp_ms: int
    log_id: str

    def to_json(self) -> JSONObject:
        return {
            "log_id": self.log_id,
            "root_hash": self.root_hash.hex(),
            "size": self.size,
            "time_utc": format_time(time_from_ms(self.timestamp_ms)),
            "timestamp_ms": self.timestamp_ms,
            "version": TREE_HEAD_VERSION,
        }

    def encode(self) -> bytes:
        """The signed bytes (canonical JSON, see the module docstring)."""
        return canonical_json(self.to_json())

    @classmethod
    def decode(cls, data: bytes, what: str = "tree head") -> TreeHead:
        """Parse signed bytes strictly: exactly the fields above, in canonical form."""
        obj = parse_json_object(data, what)
        keys = {"log_id", "root_hash", "size", "time_utc", "timestamp_ms", "version"}
        if set(obj) != keys:
            raise CanonicalError(f"{what}: fields must be {sorted(keys)}, got {sorted(obj)}")
        if obj["version"] != TREE_HEAD_VERSION:
            raise CanonicalError(f"{what}: unknown version {obj['version']!r}")
        try:
            size, ts = obj["size"], obj["timestamp_ms"]
            if not isinstance(size, int) or not isinstance(ts, int) or size < 0 or ts < 0:
                raise ValueError("size and timestamp_ms must be whole numbers")
            root_hex, log_id = obj["root_hash"], obj["log_id"]
            if not isinstance(root_hex, str) or not isinstance(log_id, str):
                raise TypeError("root_hash and log_id must be strings of hex digits")
            root = bytes.fromhex(root_hex)
            if len(root) != 32 or len(bytes.fromhex(log_id)) != 32:
                raise ValueError("root_hash and log_id must be 64 hex digits")
        except (ValueError, TypeError) as exc:
            raise CanonicalError(f"{what}: {exc}") from None
        head = cls(size, root, ts, log_id)
        if head.encode() != data:
            raise CanonicalError(f"{what}: not in canonical form (or time_utc disagrees)")
        return head


@dataclass(frozen=True)
class SignedTreeHead:
    head: TreeHead
    signature: bytes

    def verify(self, public_key: Ed25519PublicKey) -> bool:
        """True when the signature is the key's and the key is the log's."""
        if key_id_of(public_key) != self.head.log_id:
            return False
        try:
            public_key.verify(self.signature, self.head.encode())
        except InvalidSignature:
            return False
        return True
