"""Settings of the evidence log, read from environment variables with the strict
parsers of ``tracker.plumbing.config`` (a bad value is an error naming the variable):

- ``YINJI_EVIDENCE_KEY``: the Ed25519 signing key of the evidence log. Either the PEM
  text itself (a value that starts with ``-----BEGIN``) or the path of a PEM file
  (PKCS#8, unencrypted; a file group or others can read is refused, naming the file
  and ``chmod 600``). Unset: the key is ``evidence-ed25519.pem`` in the data folder,
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

import os
from dataclasses import dataclass
from pathlib import Path

from tracker.common.rules import check_url
from tracker.plumbing.config import SettingError, env_float, env_optional_str

from .keys import EvidenceKeyError, SigningKey, _refuse_exposed


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
        key = env_optional_str("YINJI_EVIDENCE_KEY")
        if key is not None and key.strip() and not key.strip().startswith("-----BEGIN"):
            _check_key_file(Path(key.strip()))
        return cls(
            key=key,
            tsa_url=tsa_url,
            tsa_ca=Path(tsa_ca) if tsa_ca else None,
            tsa_timeout=10.0 if timeout is None else timeout,
        )


def _check_key_file(path: Path) -> None:
    """A key file named by YINJI_EVIDENCE_KEY must exist and be private to its owner:
    checked when the settings are read, so that a worker or server refuses to start
    (naming the file and the fix) instead of failing on its first record."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError as exc:
        raise SettingError(
            f"YINJI_EVIDENCE_KEY: cannot read key file {str(path)!r} ({exc.strerror})"
        ) from None
    try:
        _refuse_exposed(path, mode, "YINJI_EVIDENCE_KEY: ")
    except EvidenceKeyError as exc:
        raise SettingError(str(exc)) from None


def log_fingerprint(data_dir: str | os.PathLike[str], configured: str | None = None) -> str:
    """The fingerprint of the evidence log's key for a data folder (``configured``:
    ``YINJI_EVIDENCE_KEY``, default ``EvidenceSettings.from_env().key``), without
    opening the log. The key is created on first use, as the log would."""
    if configured is None:
        configured = EvidenceSettings.from_env().key
    return SigningKey.load(data_dir, configured).key_id
