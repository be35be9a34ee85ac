"""RFC 3161 trusted timestamps for tree heads.

A time-stamping authority (TSA) signs "this hash existed at this time". Yinji asks for a
token for every signed tree head (the SHA-256 of the exact ``treehead.json`` bytes), so a
third party vouches that the whole log, up to that size, existed then:

1. ``build_request``: a ``TimeStampReq`` (version 1, SHA-256 message imprint, a random
   64-bit nonce, ``certReq`` true so the TSA includes its certificate);
2. ``TSAClient.stamp``: POST it to ``YINJI_TSA_URL`` as ``application/timestamp-query``
   with a timeout;
3. ``verify_response``: the ``TimeStampResp`` must be *granted*; its token is a CMS
   SignedData whose content is a ``TSTInfo``; the TSTInfo's message imprint must be our
   hash and its nonce ours; the CMS signature must verify with the certificate inside the
   token (the content-type and message-digest signed attributes, and the ESS
   signing-certificate attribute when present, must match); the certificate must carry the
   ``id-kp-timeStamping`` extended key usage and be valid at the token's time; and, when
   trusted roots are given (``YINJI_TSA_CA``), chain to one of them.

The response (DER) is kept beside the tree head; in a bundle it is ``treehead.tsr``, which
``openssl ts -verify -in treehead.tsr -data treehead.json -CAfile <TSA CA>`` checks.
"""

from __future__ import annotations

import hashlib
import secrets
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from asn1crypto import algos, cms, core, tsp
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from tracker.common.records import JSONObject

MAX_RESPONSE_BYTES = 1 << 20
_HASHES: dict[str, Any] = {
    "sha1": hashes.SHA1,
    "sha224": hashes.SHA224,
    "sha256": hashes.SHA256,
    "sha384": hashes.SHA384,
    "sha512": hashes.SHA512,
}


class _TimeStampResp(core.Sequence):
    """RFC 3161 TimeStampResp with the token optional, as the RFC has it (a refusal
    carries none; asn1crypto's own class requires one)."""

    _fields = [  # noqa: RUF012 (asn1crypto's declaration style)
        ("status", tsp.PKIStatusInfo),
        ("time_stamp_token", cms.ContentInfo, {"optional": True}),
    ]


class TSAError(Exception):
    """The TSA could not be reached or gave no usable answer (the message names the URL)."""


class TokenError(ValueError):
    """A timestamp response or token does not verify (the message says which check failed)."""


@dataclass(frozen=True)
class TimestampInfo:
    gen_time: datetime  # the time the TSA vouches for (UTC)
    serial_number: int
    policy: str  # OID of the TSA policy
    nonce: int | None
    tsa_subject: str  # RFC 4514 subject of the TSA certificate
    tsa_cert_sha256: str
    chain_checked: bool  # True when the certificate chained to a trusted root

    def to_json(self) -> JSONObject:
        from .canonical import format_time

        return {
            "chain_checked": self.chain_checked,
            "gen_time": format_time(self.gen_time),
            "policy": self.policy,
            "serial_number": str(self.serial_number),
            "tsa_cert_sha256": self.tsa_cert_sha256,
            "tsa_subject": self.tsa_subject,
        }


def load_certificates(path: str | Path) -> list[x509.Certificate]:
    """Every certificate in a PEM file (``YINJI_TSA_CA``)."""
    try:
        certs = x509.load_pem_x509_certificates(Path(path).read_bytes())
    except (OSError, ValueError) as exc:
        raise TokenError(f"{path}: cannot read PEM certificates ({exc})") from None
    return certs


def new_nonce() -> int:
    return secrets.randbits(63) | (1 << 62)  # positive, fixed width


def build_request(digest: bytes, nonce: int, *, cert_req: bool = True) -> bytes:
    """DER ``TimeStampReq`` for a SHA-256 digest."""
    if len(digest) != 32:
        raise ValueError("a SHA-256 digest (32 bytes) is expected")
    req = tsp.TimeStampReq(
        {
            "version": "v1",
            "message_imprint": {
                "hash_algorithm": {"algorithm": "sha256"},
                "hashed_message": digest,
            },
            "nonce": nonce,
            "cert_req": cert_req,
        }
    )
    return bytes(req.dump())


def token_of(response: bytes) -> bytes:
    """The token (CMS ContentInfo, DER) inside a ``TimeStampResp``."""
    resp = _load_response(response)
    return bytes(resp["time_stamp_token"].dump())


def _load_response(response: bytes) -> Any:
    try:
        resp = _TimeStampResp.load(response)
        status = resp["status"]["status"].native
    except (ValueError, TypeError, KeyError) as exc:
        raise TokenError(f"not a TimeStampResp ({exc})") from None
    if status not in ("granted", "granted_with_mods"):
        texts = resp["status"]["status_string"].native or []
        fail = resp["status"]["fail_info"].native
        raise TokenError(
            f"the TSA refused: status {status}"
            + (f", {'; '.join(texts)}" if texts else "")
            + (f", failure {sorted(fail)}" if fail else "")
        )
    # (never ``.native`` on the token: asn1crypto would then re-encode it on dump,
    # and a signature is checked over the bytes as received)
    if isinstance(resp["time_stamp_token"], core.Void):
        raise TokenError("the response holds no token")
    return resp


def verify_response(
    response: bytes,
    *,
    data: bytes | None = None,
    digest: bytes | None = None,
    nonce: int | None = None,
    trusted: Sequence[x509.Certificate] = (),
) -> TimestampInfo:
    """Check a DER ``TimeStampResp`` for ``data`` (or its SHA-256 ``digest``); see the
    module docstring for every check. Raises ``TokenError`` naming the first that fails."""
    resp = _load_response(response)
    return verify_token(
        bytes(resp["time_stamp_token"].dump()),
        data=data,
        digest=digest,
        nonce=nonce,
        trusted=trusted,
    )


def verify_token(
    token: bytes,
    *,
    data: bytes | None = None,
    digest: bytes | None = None,
    nonce: int | None = None,
    trusted: Sequence[x509.Certificate] = (),
) -> TimestampInfo:
    if (data is None) == (digest is None):
        raise ValueError("give data or digest, exactly one")
    try:
        info = cms.ContentInfo.load(token)
        if info["content_type"].native != "signed_data":
            raise TokenError("the token is not CMS SignedData")
        sd = info["content"]
        eci = sd["encap_content_info"]
        if eci["content_type"].native != "tst_info":
            raise TokenError("the token's content is not a TSTInfo")
        tst_der = bytes(eci["content"])
        tst = tsp.TSTInfo.load(tst_der)
        imprint = tst["message_imprint"]
        algo = imprint["hash_algorithm"]["algorithm"].native
        hashed = imprint["hashed_message"].native
        gen_time = tst["gen_time"].native
        tst_nonce = tst["nonce"].native
        serial = tst["serial_number"].native
        policy = tst["policy"].dotted
        signer_infos = list(sd["signer_infos"])
        certs = [c.chosen for c in (sd["certificates"] or []) if c.name == "certificate"]
    except TokenError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        raise TokenError(f"the token cannot be parsed ({exc})") from None

    # 1. it is about our hash, and answers our request
    if algo not in _HASHES:
        raise TokenError(f"the message imprint uses {algo}, which is not supported")
    expected = hashlib.new(algo, data).digest() if data is not None else digest
    if algo != "sha256" and data is None:
        raise TokenError(f"the message imprint uses {algo}, not SHA-256")
    if hashed != expected:
        raise TokenError("the token's message imprint is not the hash of this tree head")
    if nonce is not None and tst_nonce != nonce:
        raise TokenError(f"the token's nonce {tst_nonce} is not the request's {nonce}")

    # 2. the CMS signature, by the certificate in the token
    if len(signer_infos) != 1:
        raise TokenError(f"the token has {len(signer_infos)} signers, one was expected")
    si = signer_infos[0]
    cert_asn1 = _signer_certificate(si, certs)
    cert = x509.load_der_x509_certificate(cert_asn1.dump())
    _check_signed_attributes(si, tst_der, cert_asn1.dump())
    _check_signature(si, cert)

    # 3. the certificate is a time-stamping certificate, valid then
    try:
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        eku = None
    if eku is None or ExtendedKeyUsageOID.TIME_STAMPING not in eku:
        raise TokenError(
            f"the signing certificate {cert.subject.rfc4514_string()} lacks the "
            "timeStamping extended key usage"
        )
    gen_utc = gen_time.astimezone(UTC)
    if not cert.not_valid_before_utc <= gen_utc <= cert.not_valid_after_utc:
        raise TokenError("the signing certificate was not valid at the token's time")
    chain_checked = False
    if trusted:
        pool = [x509.load_der_x509_certificate(c.dump()) for c in certs]
        _check_chain(cert, pool, trusted, gen_utc)
        chain_checked = True
    return TimestampInfo(
        gen_time=gen_utc,
        serial_number=int(serial),
        policy=policy,
        nonce=tst_nonce,
        tsa_subject=cert.subject.rfc4514_string(),
        tsa_cert_sha256=hashlib.sha256(cert_asn1.dump()).hexdigest(),
        chain_checked=chain_checked,
    )


def _signer_certificate(si: Any, certs: list[Any]) -> Any:
    sid = si["sid"]
    for cert in certs:
        if sid.name == "issuer_and_serial_number":
            if (
                cert.issuer == sid.chosen["issuer"]
                and cert.serial_number == sid.chosen["serial_number"].native
            ):
                return cert
        elif sid.name == "subject_key_identifier" and cert.key_identifier == sid.chosen.native:
            return cert
    raise TokenError(
        "the token does not include the TSA's certificate (it must be requested with certReq)"
    )


def _attribute(attrs: Any, name: str) -> Any:
    values = [a["values"] for a in attrs if a["type"].native == name]
    if len(values) > 1 or (values and len(values[0]) != 1):
        raise TokenError(f"the signed attribute {name} appears more than once")
    return values[0][0] if values else None


def _check_signed_attributes(si: Any, tst_der: bytes, cert_der: bytes) -> None:
    attrs = si["signed_attrs"]
    if not attrs:
        raise TokenError("the token's signature covers no signed attributes")
    content_type = _attribute(attrs, "content_type")
    if content_type is None or content_type.native != "tst_info":
        raise TokenError("the signed content-type attribute is not TSTInfo")
    algo = si["digest_algorithm"]["algorithm"].native
    if algo not in _HASHES:
        raise TokenError(f"the signer's digest algorithm {algo} is not supported")
    md = _attribute(attrs, "message_digest")
    if md is None or md.native != hashlib.new(algo, tst_der).digest():
        raise TokenError("the signed message digest does not match the TSTInfo: it was altered")
    v2 = _attribute(attrs, "signing_certificate_v2")
    v1 = _attribute(attrs, "signing_certificate")
    if v2 is not None:
        ess = v2["certs"][0]
        halgo = ess["hash_algorithm"]["algorithm"].native
        if halgo not in _HASHES or ess["cert_hash"].native != hashlib.new(halgo, cert_der).digest():
            raise TokenError("the ESS signing-certificate-v2 attribute names another certificate")
    elif v1 is not None and v1["certs"][0]["cert_hash"].native != hashlib.sha1(cert_der).digest():
        raise TokenError("the ESS signing-certificate attribute names another certificate")


def _check_signature(si: Any, cert: x509.Certificate) -> None:
    signed = b"\x31" + bytes(si["signed_attrs"].dump())[1:]  # [0] IMPLICIT -> SET OF
    signature = si["signature"].native
    sig_algo: algos.SignedDigestAlgorithm = si["signature_algorithm"]
    digest_name = si["digest_algorithm"]["algorithm"].native
    hash_alg = _HASHES[digest_name]()
    key = cert.public_key()
    try:
        name = sig_algo.signature_algo
        if name == "rsassa_pkcs1v15" and isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, signed, padding.PKCS1v15(), hash_alg)
        elif name == "rsassa_pss" and isinstance(key, rsa.RSAPublicKey):
            params = sig_algo["parameters"]
            pss_hash = _HASHES[params["hash_algorithm"]["algorithm"].native]()
            mgf_hash = params["mask_gen_algorithm"]["parameters"]["algorithm"].native
            mgf = padding.MGF1(_HASHES[mgf_hash]())
            key.verify(signature, signed, padding.PSS(mgf, params["salt_length"].native), pss_hash)
        elif name == "ecdsa" and isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, signed, ec.ECDSA(hash_alg))
        elif name == "ed25519" and isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, signed)
        else:
            raise TokenError(f"signature algorithm {name} does not fit the certificate's key")
    except InvalidSignature:
        raise TokenError("the TSA's signature does not verify: the token was altered") from None
    except (ValueError, KeyError) as exc:
        raise TokenError(f"the token's signature cannot be checked ({exc})") from None


def _check_chain(
    cert: x509.Certificate,
    pool: list[x509.Certificate],
    trusted: Sequence[x509.Certificate],
    when: datetime,
) -> None:
    """Walk issuer links from ``cert`` to one of ``trusted`` (at most 8 links), checking
    each signature, each issuer's CA flag and each validity period at ``when``."""
    anchors = {c.fingerprint(hashes.SHA256()): c for c in trusted}
    current = cert
    for _ in range(8):
        if current.fingerprint(hashes.SHA256()) in anchors:
            return
        issuers = [c for c in [*trusted, *pool] if c.subject == current.issuer and c != current]
        parent = None
        for candidate in issuers:
            try:
                current.verify_directly_issued_by(candidate)
            except (ValueError, TypeError, InvalidSignature):
                continue
            parent = candidate
            break
        if parent is None:
            break
        try:
            ca = parent.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            ca = False
        if not ca:
            raise TokenError(f"{parent.subject.rfc4514_string()} is not a CA certificate")
        if not parent.not_valid_before_utc <= when <= parent.not_valid_after_utc:
            raise TokenError(f"{parent.subject.rfc4514_string()} was not valid at the token's time")
        current = parent
    raise TokenError(
        f"the TSA certificate {cert.subject.rfc4514_string()} does not chain to a trusted "
        "TSA root (YINJI_TSA_CA)"
    )


class TSAClient:
    """Asks one RFC 3161 TSA for tokens."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        trusted: Sequence[x509.Certificate] = (),
        max_response: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.trusted = list(trusted)
        self.max_response = max_response

    def stamp(self, data: bytes) -> tuple[bytes, TimestampInfo]:
        """A verified ``TimeStampResp`` (DER) for ``data``, and what it says.
        ``TSAError`` (naming the URL) when the TSA is unreachable or its answer fails."""
        digest = hashlib.sha256(data).digest()
        nonce = new_nonce()
        body = build_request(digest, nonce)
        request = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/timestamp-query",
                "Accept": "application/timestamp-reply",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                status = reply.status
                answer = reply.read(self.max_response + 1)
        except urllib.error.HTTPError as exc:
            raise TSAError(f"TSA {self.url} answered HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TSAError(f"TSA {self.url} is unreachable ({reason})") from None
        if status != 200:
            raise TSAError(f"TSA {self.url} answered HTTP {status}")
        if len(answer) > self.max_response:
            raise TSAError(f"TSA {self.url} sent more than {self.max_response} bytes")
        try:
            info = verify_response(answer, digest=digest, nonce=nonce, trusted=self.trusted)
        except TokenError as exc:
            raise TSAError(f"TSA {self.url}: {exc}") from None
        return answer, info


__all__ = [
    "TSAClient",
    "TSAError",
    "TimestampInfo",
    "TokenError",
    "build_request",
    "load_certificates",
    "new_nonce",
    "token_of",
    "verify_response",
    "verify_token",
]
