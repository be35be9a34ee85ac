"""Alerts: a webhook (JSON POST, HMAC-signed) and e-mail, on a new match above the score
threshold, on a case whose pages were removed, and as a daily digest.

Webhook request (``YINJI_ALERT_WEBHOOK_URL``)::

    POST <url>
    Content-Type: application/json
    X-Yinji-Event: match.new | case.removed | digest.daily
    X-Yinji-Delivery: <uuid, the same on every retry of one alert>
    X-Yinji-Timestamp: <unix seconds when this attempt was signed>
    X-Yinji-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>

    {"event": ..., "delivery": ..., "sent_at": ..., "data": {...}}

The receiver recomputes the HMAC over the timestamp and the raw body with the shared
secret (``YINJI_ALERT_WEBHOOK_SECRET``), compares in constant time, and refuses a
timestamp more than five minutes old (a replayed request): ``verify_signature`` does
exactly that. A delivery that fails (connection error, timeout, 408, 429, 5xx) is tried
again after ``backoff``, ``2×backoff``, ``4×backoff``... (at most ``YINJI_ALERT_RETRIES``
retries, each wait capped at 300 s); another 4xx is final. E-mail alerts
(``YINJI_ALERT_EMAIL``) go through the SMTP server of ``YINJI_SMTP_URL`` with the same
retries. A failed alert is logged and reported, never raised: it must not undo the
change it reports.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from typing import TYPE_CHECKING, Any, TypedDict

from tracker.common.records import JSONObject
from tracker.common.timefmt import iso_utc

from .model import STATES, Case, iso
from .settings import CaseSettings

if TYPE_CHECKING:
    from tracker.common.records import Match
    from tracker.store import Store

    from .service import CaseService

log = logging.getLogger(__name__)

MAX_WAIT = 300.0
REPLAY_TOLERANCE = 300  # seconds
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


def sign(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify_signature(
    secret: str,
    body: bytes,
    timestamp: str | None,
    signature: str | None,
    *,
    tolerance: int = REPLAY_TOLERANCE,
    now: float | None = None,
) -> bool:
    """What a receiver checks: the signature matches and the timestamp is fresh."""
    if not timestamp or not signature or not timestamp.isdigit():
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


@dataclass
class Delivery:
    channel: str  # webhook, email
    event: str
    ok: bool
    attempts: int
    error: str = ""
    waits: list[float] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return {
            "channel": self.channel,
            "event": self.event,
            "ok": self.ok,
            "attempts": self.attempts,
            "error": self.error,
        }


class _Permanent(Exception):
    """A failure retrying cannot fix (a 4xx other than 408/425/429)."""


class Alerter:
    """Sends alerts per ``CaseSettings``; ``sleep`` and ``clock`` are injectable (tests)."""

    def __init__(
        self,
        settings: CaseSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        timeout: float = 10.0,
    ) -> None:
        self.settings = settings
        self.sleep = sleep
        self.clock = clock
        self.timeout = timeout
        self._pool: Any = None

    @classmethod
    def from_env(cls) -> Alerter:
        return cls(CaseSettings.from_env())

    @property
    def enabled(self) -> bool:
        s = self.settings
        return bool(s.webhook_url or (s.alert_emails and s.smtp))

    # --- delivery ------------------------------------------------------------------------
    def _retrying(self, channel: str, event: str, attempt: Callable[[], None]) -> Delivery:
        retries = self.settings.alert_retries
        delivery = Delivery(channel, event, ok=False, attempts=0)
        for n in range(retries + 1):
            delivery.attempts = n + 1
            try:
                attempt()
            except _Permanent as exc:
                delivery.error = str(exc)
                break
            except Exception as exc:
                delivery.error = str(exc)
                if n == retries:
                    break
                wait = min(MAX_WAIT, self.settings.alert_backoff * (2**n))
                delivery.waits.append(wait)
                log.info("%s alert %s failed (%s); retrying in %.1fs", channel, event, exc, wait)
                self.sleep(wait)
            else:
                delivery.ok, delivery.error = True, ""
                break
        if not delivery.ok:
            log.warning(
                "%s alert %s not delivered after %d attempt(s): %s",
                channel,
                event,
                delivery.attempts,
                delivery.error,
            )
        return delivery

    def _post(self, url: str, secret: str, event: str, body: bytes, delivery_id: str) -> None:
        import urllib3

        if self._pool is None:
            self._pool = urllib3.PoolManager(retries=False)
        timestamp = str(int(self.clock()))
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": "Yinji-Alerts/1",
            "X-Yinji-Event": event,
            "X-Yinji-Delivery": delivery_id,
            "X-Yinji-Timestamp": timestamp,
            "X-Yinji-Signature": sign(secret, timestamp, body),
        }
        try:
            resp = self._pool.request(
                "POST",
                url,
                body=body,
                headers=headers,
                timeout=urllib3.Timeout(connect=self.timeout, read=self.timeout),
                redirect=False,
                retries=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise ConnectionError(f"webhook {url}: {exc}") from None
        if 200 <= resp.status < 300:
            return
        if resp.status in RETRY_STATUSES:
            raise ConnectionError(f"webhook {url} answered HTTP {resp.status}")
        raise _Permanent(f"webhook {url} answered HTTP {resp.status}")

    def _email(self, subject: str, text: str) -> None:
        from .mail import send_message

        smtp = self.settings.smtp
        assert smtp is not None
        msg = EmailMessage()
        msg["Subject"] = subject
        if smtp.sender:
            msg["From"] = smtp.sender
        msg["To"] = ", ".join(self.settings.alert_emails)
        msg.set_content(text, charset="utf-8")
        send_message(smtp, msg, to=self.settings.alert_emails)

    def send(
        self, event: str, data: Mapping[str, object], *, subject: str, text: str
    ) -> list[Delivery]:
        """Deliver one alert on every configured channel."""
        out: list[Delivery] = []
        s = self.settings
        if s.webhook_url and s.webhook_secret:
            delivery_id = str(uuid.uuid4())
            payload = {
                "event": event,
                "delivery": delivery_id,
                "sent_at": iso_utc(datetime.now(UTC)),
                "data": data,
            }
            body = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")
            url, secret = s.webhook_url, s.webhook_secret
            out.append(
                self._retrying(
                    "webhook", event, lambda: self._post(url, secret, event, body, delivery_id)
                )
            )
        if s.alert_emails and s.smtp is not None:
            out.append(self._retrying("email", event, lambda: self._email(subject, text)))
        return out

    # --- the three alerts ------------------------------------------------------------------
    def new_matches(self, matches: Iterable[Match], store: Store | None = None) -> list[Delivery]:
        """Matches whose score is at least ``YINJI_ALERT_MIN_SCORE`` (one alert listing
        them; nothing is sent when none qualifies). Call after a check is stored; with
        ``store`` (the library's) each match names its book and chapter."""
        from .grouping import book_of

        high = [m for m in matches if m.score >= self.settings.alert_min_score]
        if not high or not self.enabled:
            return []
        items: list[dict[str, object]] = []
        lines = []
        for m in sorted(high, key=lambda m: -m.score):
            ref = book_of(store, m.mother_id)
            items.append(
                {
                    "suspect_id": m.suspect_id,
                    "mother_id": m.mother_id,
                    "title": m.mother_title,
                    "book_id": ref.book_id if ref else None,
                    "book_title": ref.book_title if ref else None,
                    "chapter": ref.chapter if ref else None,
                    "chapter_index": ref.chapter_index if ref else None,
                    "url": m.suspect_url,
                    "domain": m.domain,
                    "score": round(float(m.score), 4),
                    "coverage": round(float(m.coverage), 4),
                }
            )
            named = ref.label("zh") if ref else m.mother_title
            lines.append(f"{m.score:.2f}  {named}  {m.suspect_url or m.suspect_id}")
        return self.send(
            "match.new",
            {"threshold": self.settings.alert_min_score, "matches": items},
            subject=f"[音迹 Yinji] 新匹配 / new matches: {len(items)}",
            text="新发现的高分匹配 / New matches above the threshold:\n\n" + "\n".join(lines),
        )

    def case_removed(self, case: Case) -> list[Delivery]:
        """The removal alert: the case's book (title, author) and each page under its
        chapter, as the case records them."""
        if not self.enabled:
            return []
        title = case.work_title or case.work
        author = str(case.metadata.get("author") or "")
        data = {
            "case_id": case.id,
            "work": case.work,
            "work_title": case.work_title,
            "book_id": case.work if case.kind == "book" else None,
            "book_title": case.work_title if case.kind == "book" else None,
            "author": author or None,
            "domain": case.domain,
            "urls": [u.url for u in case.urls],
            "pages": [
                {
                    "url": u.url,
                    "chapter": u.chapter,
                    "chapter_index": u.chapter_index,
                    "page": u.page or None,
                    "status": u.status,
                }
                for u in case.urls
            ],
            "notice_sent_at": iso(case.notice_sent_at),
            "removed_at": iso(case.removed_at),
        }
        from .facts import zh_title

        lines = []
        for u in case.urls:
            where = f"{zh_title(title)}{u.chapter}" if u.chapter else ""
            if u.page:
                where += f" 第 {u.page} 页 / page {u.page}"
            lines.append(f"{where.strip()}  {u.url}".strip())
        by = f"（{author}）" if author else ""
        return self.send(
            "case.removed",
            data,
            subject=f"[音迹 Yinji] 已删除 / removed: {zh_title(title)} @ {case.domain}",
            text=(
                f"案件 / case {case.id}: {zh_title(title)}{by} on {case.domain}\n"
                "侵权页面已删除 / the infringing pages are gone:\n\n" + "\n".join(lines)
            ),
        )

    def daily_digest(self, digest: Digest) -> list[Delivery]:
        if not self.enabled:
            return []
        counts = digest["cases_by_state"]
        text = (
            f"{digest['since']} → {digest['until']}\n"
            f"新匹配 / new matches: {digest['new_matches']}\n"
            f"已删除 / removed: {len(digest['removed'])}\n"
            + "\n".join(f"  {state}: {n}" for state, n in counts.items())
        )
        return self.send(
            "digest.daily",
            digest,
            subject=f"[音迹 Yinji] 每日摘要 / daily digest {digest['until'][:10]}",
            text=text,
        )


class Digest(TypedDict):
    """The daily digest (``digest_data``), as the webhook and ``yinji case digest`` send it."""

    since: str
    until: str
    new_matches: int
    top_matches: list[dict[str, str | float]]  # mother_id, title, book_title, chapter, url, score
    cases_by_state: dict[str, int]
    removed: list[dict[str, str | None]]  # case_id, work_title (the book's), domain, removed_at


def digest_data(
    svc: CaseService, matches: Store, *, until: datetime | None = None, hours: int = 24
) -> Digest:
    """What the daily digest reports over the last ``hours``."""
    from tracker.common.records import MatchQuery

    from .grouping import book_of

    until = until or datetime.now(UTC)
    since = until - timedelta(hours=hours)
    query = MatchQuery(since=since, until=until, sort="-score", limit=10)
    top = matches.query_matches(query)
    cases = svc.store.list_cases()
    counts = dict.fromkeys(STATES, 0)
    for c in cases:
        counts[c.state] += 1
    removed = [
        {
            "case_id": c.id,
            "work_title": c.work_title,
            "domain": c.domain,
            "removed_at": iso(c.removed_at),
        }
        for c in cases
        if c.removed_at is not None and since <= c.removed_at < until
    ]
    return {
        "since": iso_utc(since),
        "until": iso_utc(until),
        "new_matches": matches.count_matches(query),
        "top_matches": [
            {
                "mother_id": m.mother_id,
                "title": m.mother_title,
                "book_title": ref.book_title if ref is not None else "",
                "chapter": ref.chapter if ref is not None else "",
                "url": m.suspect_url,
                "score": round(float(m.score), 4),
            }
            for m in top
            for ref in [book_of(matches, m.mother_id)]
        ],
        "cases_by_state": counts,
        "removed": removed,
    }
