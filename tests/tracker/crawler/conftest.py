"""Fixtures of the crawler tests. They run against a local threaded HTTP server on 127.0.0.1.

Nothing here may reach the network: an autouse fixture wraps urllib3's connect and
socket.getaddrinfo so that only loopback addresses (and numeric / localhost lookups,
which never leave the machine) are possible; anything else fails the test. Host names
such as ``pirate.test`` go through an injected resolver that maps them to 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import urllib3.util.connection

from tracker.crawler import Crawler, CrawlerConfig

from .helpers import LocalServer, Site


@pytest.fixture(scope="package")
def _server() -> Iterator[Site]:
    site = Site()
    server = LocalServer(site)
    site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        site.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture()
def site(_server: Site) -> Iterator[Site]:
    _server.reset()
    yield _server
    _server.reset()


@pytest.fixture(autouse=True)
def net(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every TCP connect the crawler makes, and a hard stop for anything not loopback."""
    attempts: list[tuple[str, int]] = []
    real_connect = urllib3.util.connection.create_connection
    real_getaddrinfo = socket.getaddrinfo

    def guarded_connect(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        host = address[0].strip("[]")
        ip = ipaddress.ip_address(host)  # a name here means the crawler skipped its own DNS
        attempts.append((str(ip), address[1]))
        assert ip.is_loopback, f"test tried to connect to {address}"
        return real_connect(address, *args, **kwargs)

    def guarded_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name != "localhost":
            try:  # numeric forms (2130706433, 0x7f.1) are parsed locally, no traffic
                real_getaddrinfo(name, port, 0, 0, 0, socket.AI_NUMERICHOST)
            except socket.gaierror:
                raise AssertionError(f"test tried a DNS lookup of {name!r}") from None
        return real_getaddrinfo(host, port, *args, **kwargs)

    monkeypatch.setattr(urllib3.util.connection, "create_connection", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    return attempts


@pytest.fixture()
def make_crawler() -> Iterator[Callable[..., Crawler]]:
    made: list[Crawler] = []

    def make(**overrides: Any) -> Crawler:
        # Generous timeouts: the local server answers at once, but a loaded machine can
        # stall its thread for a while, and a spurious timeout would retry (and change
        # the arrival counts the tests read). Tests about timeouts set their own.
        values: dict[str, Any] = {
            "connect_timeout": 10.0,
            "read_timeout": 10.0,
            "total_timeout": 30.0,
            "min_interval": 0.0,
            "retries": 2,
            "backoff_factor": 0.01,
            "allow_private": True,  # the test server is on loopback
        }
        values.update(overrides)
        crawler = Crawler(CrawlerConfig(**values))
        made.append(crawler)
        return crawler

    yield make
    for crawler in made:
        crawler.close()


@pytest.fixture()
def tls_site(tmp_path: Path) -> Iterator[tuple[Site, str, list[str]]]:
    """An HTTPS server with a self-signed certificate for yinji.test; records SNI."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "yinji.test")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("yinji.test")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file = tmp_path / "cert.pem"
    key_file = tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    sni: list[str] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    context.sni_callback = lambda sock, server_name, ctx: sni.append(server_name) and None

    tls = Site()
    server = LocalServer(tls)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    tls.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tls, str(cert_file), sni
    finally:
        tls.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
