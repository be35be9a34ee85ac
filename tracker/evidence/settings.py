"""Settings of the evidence log, read from environment variables with the strict
parsers of ``tracker.config`` (a bad value is an error naming the variable):

- ``YINJI_EVIDENCE_KEY``: the Ed25519 signing key of the evidence log. Either the PEM
  text itself (a value that starts with ``-----BEGIN``) or the path of a PEM file
  (PKCS#8, unencrypted). Unset: the key is ``evidence-ed25519.pem`` in the data folder,
  created on first use with mode 0600. Set it for every process (web, workers) when they
  do not share one data folder, as with MongoDB: all must sign with the same key.
- ``YINJI_TSA_URL``: an RFC 3161 time-stamping authority (``http(s)://``). When set,
  every signed tree head gets a timestamp token from it. Unset: no tokens.
- ``YINJI_TSA_CA``: path of a PEM file with the certificate(s) of the authorities the
  TSA's certificate must chain to. Unset: a token is checked (message imprint, nonce,
  signature by the certificate inside it, timeStamping key usage) but who the TSA is
  is not.
- ``YINJI_TSA_TIMEOUT``: seconds to wait for the TSA (default 10).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tracker.config import SettingError, env_float, env_optional_str
from tracker.rules import check_url


@dataclass(frozen=True)
class EvidenceSettings:
    key: str | None = None
    tsa_url: str | None = None
    tsa_ca: Path | None = None
    tsa_timeout: float = 10.0

    @classmethod
    def from_env(cls) -> EvidenceSettings:
        tsa_url = env_optional_str("YINJI_TSA_URL")
        if tsa_url is not None:
            try:
                tsa_url = check_url(tsa_url, "YINJI_TSA_URL")
            except ValueError as exc:
                raise SettingError(str(exc)) from None
        tsa_ca = env_optional_str("YINJI_TSA_CA")
        if tsa_ca is not None and not Path(tsa_ca).is_file():
            raise SettingError(f"YINJI_TSA_CA must name a PEM file, got {tsa_ca!r}")
        timeout = env_float("YINJI_TSA_TIMEOUT", 10.0, minimum=0.1)
        return cls(
            key=env_optional_str("YINJI_EVIDENCE_KEY"),
            tsa_url=tsa_url,
            tsa_ca=Path(tsa_ca) if tsa_ca else None,
            tsa_timeout=10.0 if timeout is None else timeout,
        )
