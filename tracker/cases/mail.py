"""Sending by SMTP (``YINJI_SMTP_URL``, see ``tracker.cases.settings``): notices to
platforms and alert e-mails.

``smtps://`` speaks TLS from the first byte; ``smtp://`` upgrades with STARTTLS when
the server offers it, and refuses to send a password over a connection left in clear
text unless the server is on this machine (a loopback relay).
"""

from __future__ import annotations

import ipaddress
import smtplib
import ssl
from collections.abc import Iterable, Sequence
from email.message import EmailMessage
from typing import TYPE_CHECKING

from tracker.common.records import JSONObject

from .model import CaseError
from .service import CaseService
from .settings import SmtpConfig

if TYPE_CHECKING:
    from tracker.library import Library


class MailError(CaseError):
    """The message could not be sent; the message names the server, never the password."""


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def send_message(cfg: SmtpConfig, msg: EmailMessage, *, to: Sequence[str] = ()) -> str:
    """Send ``msg`` (to its To/Cc unless ``to`` is given); returns its Message-ID."""
    where = f"SMTP server {cfg.host}:{cfg.port}"
    sender = cfg.sender or msg.get("From")
    if not sender:
        raise MailError("no sender address: set YINJI_SMTP_FROM or the profile's e-mail")
    if "From" not in msg:
        msg["From"] = sender
    recipients = list(to) or [
        a.strip() for h in ("To", "Cc") for a in str(msg.get(h) or "").split(",") if a.strip()
    ]
    if not recipients:
        raise MailError("no recipient: give --to (the platform's abuse or copyright address)")
    context = ssl.create_default_context()
    try:
        client: smtplib.SMTP
        if cfg.tls:
            client = smtplib.SMTP_SSL(cfg.host, cfg.port, timeout=cfg.timeout, context=context)
        else:
            client = smtplib.SMTP(cfg.host, cfg.port, timeout=cfg.timeout)
        with client:
            client.ehlo()
            if not cfg.tls and client.has_extn("starttls"):
                client.starttls(context=context)
                client.ehlo()
            elif not cfg.tls and cfg.username and not _is_loopback(cfg.host):
                raise MailError(
                    f"{where} offers no STARTTLS: refusing to send the password in clear "
                    "text (use smtps://)"
                )
            if cfg.username:
                client.login(cfg.username, cfg.password or "")
            refused = client.send_message(msg, from_addr=sender, to_addrs=recipients)
    except MailError:
        raise
    except smtplib.SMTPAuthenticationError as exc:
        raise MailError(f"{where} refused the login ({exc.smtp_code})") from None
    except (smtplib.SMTPException, OSError) as exc:
        raise MailError(f"{where}: {exc}") from None
    if refused:
        raise MailError(f"{where} refused recipient(s): {', '.join(sorted(refused))}")
    return str(msg["Message-ID"] or "").strip()


def send_notice(
    svc: CaseService,
    library: Library,
    cfg: SmtpConfig,
    case_ids: Iterable[str],
    lang: str,
    *,
    to: Sequence[str],
    who: str,
    with_evidence: bool = True,
) -> tuple[str, list[str]]:
    """Render the notice of ``case_ids`` as an e-mail (notice PDF, evidence reports and
    proofs of ownership attached), send it, and mark each case sent. Returns the
    Message-ID and the case ids."""
    from .notice_formats import render_email
    from .notices import prepare_notice

    if not to:
        raise MailError("no recipient: give the platform's abuse or copyright address")
    notice, evidence = prepare_notice(
        svc, library, case_ids, lang, to=to, with_evidence=with_evidence
    )
    files = [(name, data, "application/pdf") for name, data in evidence.values()]
    msg = render_email(
        notice,
        sender=cfg.sender,
        to=to,
        attachments=files + svc.attachment_files(notice.profile),
    )
    message_id = send_message(cfg, msg, to=to)
    data: JSONObject = {
        "channel": "smtp",
        "to": list(to),
        "message_id": message_id,
        "reference": notice.reference,
        "lang": lang,
        "attachments": [name for name, _, _ in files],
    }
    for cid in notice.case_ids:
        svc.mark_sent(cid, who=who, data=data)
    return message_id, notice.case_ids
