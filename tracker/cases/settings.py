"""Settings of the takedown workflow, read from environment variables with the strict
parsers of ``tracker.plumbing.config`` (a bad value is an error naming the variable):

- ``YINJI_SMTP_URL``: ``smtp://[user:password@]host[:port]`` (STARTTLS when the server
  offers it, required before a password is sent to any host but a loopback one) or
  ``smtps://user:password@host[:port]`` (TLS from the first byte). Percent-encode ``@``
  ``:`` and ``/`` in the user name and password. Unset: notices are downloaded and
  marked sent by hand (``yinji case mark-sent``).
- ``YINJI_SMTP_FROM``: the sender address (default: the rights-holder profile's e-mail).
- ``YINJI_SMTP_TIMEOUT``: seconds per SMTP operation (default 30).
- ``YINJI_ALERT_WEBHOOK_URL``: alerts are POSTed there as JSON.
- ``YINJI_ALERT_WEBHOOK_SECRET``: HMAC-SHA256 key of the ``X-Yinji-Signature`` header
  (required with a webhook URL: an unsigned alert could be forged by anyone).
- ``YINJI_ALERT_EMAIL``: comma-separated recipients of alert e-mails (needs SMTP).
- ``YINJI_ALERT_MIN_SCORE``: a new match alerts when its score is at least this
  (default 0.8).
- ``YINJI_ALERT_RETRIES`` (default 4) and ``YINJI_ALERT_BACKOFF`` (seconds, default 2):
  a failed delivery is retried after backoff, 2×backoff, 4×backoff, ... (capped at 300 s).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from tracker.common.rules import check_url
from tracker.plumbing.config import SettingError, env_float, env_int, env_optional_str

SMTP_SCHEMES = {"smtp": 25, "smtps": 465}


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    tls: bool  # implicit TLS (smtps://)
    username: str | None = None
    password: str | None = None
    sender: str | None = None
    timeout: float = 30.0

    @classmethod
    def parse(cls, url: str, *, sender: str | None = None, timeout: float = 30.0) -> SmtpConfig:
        """``smtp://`` or ``smtps://`` URL; SettingError naming YINJI_SMTP_URL otherwise
        (the password is never repeated in the message)."""
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError as exc:
            raise SettingError(f"YINJI_SMTP_URL is not a valid URL ({exc})") from None
        scheme = parts.scheme.lower()
        if scheme not in SMTP_SCHEMES or not parts.hostname:
            raise SettingError(
                "YINJI_SMTP_URL must look like smtp://host:port or smtps://user:pass@host:port"
            )
        if sender is not None and "@" not in sender:
            raise SettingError(f"YINJI_SMTP_FROM must be an e-mail address, got {sender!r}")
        return cls(
            host=parts.hostname,
            port=port or SMTP_SCHEMES[scheme],
            tls=scheme == "smtps",
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password is not None else None,
            sender=sender,
            timeout=timeout,
        )


@dataclass(frozen=True)
class CaseSettings:
    smtp: SmtpConfig | None = None
    webhook_url: str | None = None
    webhook_secret: str | None = None
    alert_emails: tuple[str, ...] = ()
    alert_min_score: float = 0.8
    alert_retries: int = 4
    alert_backoff: float = 2.0

    @classmethod
    def from_env(cls) -> CaseSettings:
        smtp_url = env_optional_str("YINJI_SMTP_URL")
        timeout = env_float("YINJI_SMTP_TIMEOUT", 30.0, minimum=0.1) or 30.0
        smtp = (
            SmtpConfig.parse(smtp_url, sender=env_optional_str("YINJI_SMTP_FROM"), timeout=timeout)
            if smtp_url
            else None
        )
        webhook = env_optional_str("YINJI_ALERT_WEBHOOK_URL")
        secret = env_optional_str("YINJI_ALERT_WEBHOOK_SECRET")
        if webhook is not None:
            try:
                webhook = check_url(webhook)
            except ValueError as exc:
                raise SettingError(f"YINJI_ALERT_WEBHOOK_URL: {exc}") from None
            if not secret:
                raise SettingError(
                    "YINJI_ALERT_WEBHOOK_SECRET must be set with YINJI_ALERT_WEBHOOK_URL "
                    "(the receiver checks the signature made with it)"
                )
        emails = tuple(
            e.strip() for e in (env_optional_str("YINJI_ALERT_EMAIL") or "").split(",") if e.strip()
        )
        bad = [e for e in emails if "@" not in e]
        if bad:
            raise SettingError(f"YINJI_ALERT_EMAIL must list e-mail addresses, got {bad[0]!r}")
        score = env_float("YINJI_ALERT_MIN_SCORE", 0.8)
        if score is None or score > 1:
            raise SettingError(f"YINJI_ALERT_MIN_SCORE must be between 0 and 1, got {score}")
        return cls(
            smtp=smtp,
            webhook_url=webhook,
            webhook_secret=secret,
            alert_emails=emails,
            alert_min_score=score,
            alert_retries=env_int("YINJI_ALERT_RETRIES", 4, minimum=0, maximum=10),
            alert_backoff=env_float("YINJI_ALERT_BACKOFF", 2.0) or 0.0,
        )
