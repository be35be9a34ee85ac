"""A small RFC 3161 time-stamping authority for tests, on 127.0.0.1 (never a public TSA).

``TestTSA`` holds a test root CA and a TSA certificate it issued (RSA 2048, critical
``id-kp-timeStamping`` extended key usage, as RFC 3161 section 2.3 asks) and answers
``TimeStampReq`` DER with a ``TimeStampResp``: a CMS SignedData over a TSTInfo, signed
attributes content-type, message-digest and ESS signing-certificate-v2, RSA PKCS#1 v1.5
with SHA-256, the TSA certificate included when the request asks for it. Built with
``cryptography`` (keys, certificates, signatures) and ``asn1crypto`` (the ASN.1).

``TSAServer`` serves it over HTTP (``http.server`` in a thread); stop it with ``close()``
or use it as a context manager. ``mode`` makes it misbehave on purpose:

- ``"ok"``: a correct token;
- ``"wrong_imprint"``: a token for another hash;
- ``"wrong_nonce"``: a token with another nonce;
- ``"reject"``: status *rejection*;
- ``"bad_signature"``: a correct token whose signature bytes were changed;
- ``"no_eku"``: signed by a certificate without the timeStamping key usage;
- ``"http_500"``: an HTTP error.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from asn1crypto import cms, tsp
from asn1crypto import x509 as asn1_x509
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

POLICY = "1.3.6.1.4.1.99999.1.1"  # a private-enterprise-style OID for the test policy


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Yinji test"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _cert(
    subject: str,
    key: rsa.RSAPrivateKey,
    issuer: x509.Certificate | None,
    issuer_key: rsa.RSAPrivateKey,
    *,
    ca: bool,
    eku: bool,
) -> x509.Certificate:
    now = datetime.now(UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer.subject if issuer is not None else _name(subject))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if ca:
        usage = dict(key_cert_sign=True, crl_sign=True, digital_signature=False)
    else:
        usage = dict(key_cert_sign=False, crl_sign=False, digital_signature=True)
    builder = builder.add_extension(
        x509.KeyUsage(
            content_commitment=False,
            key_encipherment=False,
            data_encipherment=False,
            key_agreement=False,
            encipher_only=False,
            decipher_only=False,
            **usage,
        ),
        critical=True,
    )
    if eku:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True
        )
    return builder.sign(issuer_key, hashes.SHA256())


class TestTSA:
    """Keys, certificates and the responder logic (no network)."""

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        self.ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ca_cert = _cert(
            "Yinji Test TSA Root", self.ca_key, None, self.ca_key, ca=True, eku=False
        )
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.cert = _cert("Yinji Test TSA", self.key, self.ca_cert, self.ca_key, ca=False, eku=True)
        self.plain_cert = _cert(
            "Yinji Test TSA without EKU", self.key, self.ca_cert, self.ca_key, ca=False, eku=False
        )
        self.mode = "ok"
        self.serial = 0
        self.requests: list[bytes] = []

    @property
    def ca_pem(self) -> bytes:
        return self.ca_cert.public_bytes(serialization.Encoding.PEM)

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def respond(self, request_der: bytes) -> bytes:
        self.requests.append(request_der)
        req = tsp.TimeStampReq.load(request_der)
        if self.mode == "reject":
            status = tsp.PKIStatusInfo(
                {
                    "status": "rejection",
                    "status_string": ["test TSA refuses"],
                    "fail_info": {"bad_request"},
                }
            ).dump()
            # A refusal has no token; asn1crypto's TimeStampResp insists on one, so the
            # outer SEQUENCE is written by hand.
            return b"\x30" + _der_length(len(status)) + status
        imprint = req["message_imprint"]
        if self.mode == "wrong_imprint":
            imprint = tsp.MessageImprint(
                {
                    "hash_algorithm": {"algorithm": "sha256"},
                    "hashed_message": hashlib.sha256(b"something else").digest(),
                }
            )
        nonce = req["nonce"].native
        if self.mode == "wrong_nonce" and nonce is not None:
            nonce += 1
        cert = self.plain_cert if self.mode == "no_eku" else self.cert
        self.serial += 1
        token = self.token(imprint, nonce, cert, include_cert=bool(req["cert_req"].native))
        granted = {"status": {"status": "granted"}, "time_stamp_token": token}
        return tsp.TimeStampResp(granted).dump()

    def token(
        self, imprint: Any, nonce: int | None, cert: x509.Certificate, *, include_cert: bool
    ) -> cms.ContentInfo:
        now = datetime.now(UTC).replace(microsecond=0)
        fields: dict[str, Any] = {
            "version": "v1",
            "policy": POLICY,
            "message_imprint": imprint,
            "serial_number": self.serial,
            "gen_time": now,
            "accuracy": {"seconds": 1},
        }
        if nonce is not None:
            fields["nonce"] = nonce
        tst = tsp.TSTInfo(fields)
        tst_der = tst.dump()
        cert_der = cert.public_bytes(serialization.Encoding.DER)
        asn1_cert = asn1_x509.Certificate.load(cert_der)
        attrs = cms.CMSAttributes(
            [
                cms.CMSAttribute({"type": "content_type", "values": ["tst_info"]}),
                cms.CMSAttribute(
                    {"type": "message_digest", "values": [hashlib.sha256(tst_der).digest()]}
                ),
                cms.CMSAttribute(
                    {
                        "type": "signing_certificate_v2",
                        "values": [
                            tsp.SigningCertificateV2(
                                {"certs": [{"cert_hash": hashlib.sha256(cert_der).digest()}]}
                            )
                        ],
                    }
                ),
            ]
        )
        signed = b"\x31" + attrs.dump()[1:]
        signature = self.key.sign(signed, padding.PKCS1v15(), hashes.SHA256())
        if self.mode == "bad_signature":
            signature = bytes([signature[0] ^ 1]) + signature[1:]
        signer = cms.SignerInfo(
            {
                "version": "v1",
                "sid": cms.SignerIdentifier(
                    {
                        "issuer_and_serial_number": {
                            "issuer": asn1_cert.issuer,
                            "serial_number": asn1_cert.serial_number,
                        }
                    }
                ),
                "digest_algorithm": {"algorithm": "sha256"},
                "signed_attrs": attrs,
                "signature_algorithm": {"algorithm": "rsassa_pkcs1v15"},
                "signature": signature,
            }
        )
        signed_data = cms.SignedData(
            {
                "version": "v3",
                "digest_algorithms": [{"algorithm": "sha256"}],
                "encap_content_info": {"content_type": "tst_info", "content": tst},
                "certificates": [asn1_cert] if include_cert else [],
                "signer_infos": [signer],
            }
        )
        return cms.ContentInfo({"content_type": "signed_data", "content": signed_data})


class TSAServer:
    """``TestTSA`` over HTTP on 127.0.0.1 (an ephemeral port)."""

    def __init__(self, tsa: TestTSA | None = None) -> None:
        self.tsa = tsa or TestTSA()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if outer.tsa.mode == "http_500":
                    self.send_error(500, "test TSA failure")
                    return
                if self.headers.get("Content-Type") != "application/timestamp-query":
                    self.send_error(415, "expected application/timestamp-query")
                    return
                try:
                    answer = outer.tsa.respond(body)
                except ValueError:
                    self.send_error(400, "bad TimeStampReq")
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/timestamp-reply")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/tsa"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def __enter__(self) -> TSAServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
