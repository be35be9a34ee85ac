"""Alerts: signed webhook POSTs to a local receiver (retried with exponential backoff
when it fails twice), replay protection, e-mail alerts through a local SMTP server,
and the removal and digest alerts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from casekit import PageServer, SmtpSink, add_match, library_store
from click.testing import CliRunner

from tracker.cases import CaseService
from tracker.cases.alerts import Alerter, digest_data, sign, verify_signature
from tracker.cases.cli import case, verdict
from tracker.cases.settings import CaseSettings, SmtpConfig
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.common.records import Match
from tracker.plumbing.config import SettingError

SECRET = "s3cret-key"


def _match(score: float, sid: str = "s1") -> Match:
    return Match(
        suspect_id=sid,
        mother_id="w1",
        score=score,
        coverage=0.5,
        mother_coverage=0.2,
        mother_title="春山记",
        suspect_url=f"https://pirate.example/{sid}",
        domain="pirate.example",
    )


@pytest.mark.slow
def test_webhook_signed_and_retried_with_backoff() -> None:
    waits: list[float] = []
    with PageServer() as receiver:
        receiver.post_statuses = [503, 500]  # fails twice, then accepts
        settings = CaseSettings(
            webhook_url=receiver.url("/hook"),
            webhook_secret=SECRET,
            alert_min_score=0.8,
            alert_retries=4,
            alert_backoff=1.5,
        )
        alerter = Alerter(settings, sleep=waits.append)
        (delivery,) = alerter.new_matches([_match(0.95), _match(0.5, "s2"), _match(0.81, "s3")])
    assert delivery.ok and delivery.attempts == 3
    assert waits == [1.5, 3.0]  # exponential: backoff, 2 × backoff
    assert len(receiver.posts) == 3
    bodies = {p["body"] for p in receiver.posts}
    assert len(bodies) == 1  # the same alert each time
    post = receiver.posts[-1]
    headers = {k.lower(): v for k, v in post["headers"].items()}
    body = post["body"]
    assert headers["x-yinji-event"] == "match.new"
    assert len({p["headers"]["X-Yinji-Delivery"] for p in receiver.posts}) == 1
    ts, sig = headers["x-yinji-timestamp"], headers["x-yinji-signature"]
    assert sig == sign(SECRET, ts, body) and sig.startswith("sha256=")
    assert verify_signature(SECRET, body, ts, sig)
    assert not verify_signature("wrong", body, ts, sig)
    assert not verify_signature(SECRET, body + b" ", ts, sig)
    # A replay later than five minutes is refused.
    assert not verify_signature(SECRET, body, ts, sig, now=int(ts) + 301)
    payload = json.loads(body)
    assert payload["event"] == "match.new"
    assert [m["suspect_id"] for m in payload["data"]["matches"]] == ["s1", "s3"]


@pytest.mark.slow
def test_webhook_gives_up_and_does_not_retry_client_errors() -> None:
    waits: list[float] = []
    with PageServer() as receiver:
        receiver.post_statuses = [500] * 10
        settings = CaseSettings(
            webhook_url=receiver.url("/hook"), webhook_secret=SECRET, alert_retries=3
        )
        (d,) = Alerter(settings, sleep=waits.append).new_matches([_match(0.9)])
        assert not d.ok and d.attempts == 4 and "HTTP 500" in d.error
        assert waits == [2.0, 4.0, 8.0]
        receiver.post_statuses = [403]
        waits.clear()
        (d,) = Alerter(settings, sleep=waits.append).new_matches([_match(0.9)])
        assert not d.ok and d.attempts == 1 and waits == []
    # Nobody listening: a connection error, retried, then reported (never raised).
    (d,) = Alerter(settings, sleep=lambda s: None).new_matches([_match(0.9)])
    assert not d.ok and d.attempts == 4
    # Below the threshold: no alert at all.
    assert Alerter(settings).new_matches([_match(0.1)]) == []


@pytest.mark.slow
def test_email_alert_and_case_removed(tmp_path: Path) -> None:
    store = SqliteCaseStore(tmp_path / "c.sqlite3", blob_dir=tmp_path / "b")
    svc = CaseService(store)
    c = svc.open_case(work="w1", domain="pirate.example", who="t", work_title="春山记")
    with SmtpSink() as sink, PageServer() as receiver:
        settings = CaseSettings(
            smtp=SmtpConfig("127.0.0.1", sink.port, False, sender="yinji@qingjian.example"),
            alert_emails=("team@qingjian.example",),
            webhook_url=receiver.url("/hook"),
            webhook_secret=SECRET,
        )
        deliveries = Alerter(settings).case_removed(c)
    assert [(d.channel, d.ok) for d in deliveries] == [("webhook", True), ("email", True)]
    (mail,) = sink.messages
    assert mail["to"] == ["team@qingjian.example"]
    assert "春山记".encode() in mail["data"] or b"=?utf-8?" in mail["data"]
    assert json.loads(receiver.posts[0]["body"])["data"]["case_id"] == c.id
    store.close()


def test_alert_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YINJI_ALERT_WEBHOOK_URL", "https://hooks.example/yinji")
    with pytest.raises(SettingError, match="YINJI_ALERT_WEBHOOK_SECRET must be set"):
        CaseSettings.from_env()
    monkeypatch.setenv("YINJI_ALERT_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("YINJI_ALERT_MIN_SCORE", "0.7")
    monkeypatch.setenv("YINJI_ALERT_EMAIL", "a@b.example, c@d.example")
    s = CaseSettings.from_env()
    assert s.alert_min_score == 0.7 and s.alert_emails == ("a@b.example", "c@d.example")
    monkeypatch.setenv("YINJI_ALERT_MIN_SCORE", "2")
    with pytest.raises(SettingError, match="YINJI_ALERT_MIN_SCORE"):
        CaseSettings.from_env()
    monkeypatch.setenv("YINJI_ALERT_MIN_SCORE", "0.7")
    monkeypatch.setenv("YINJI_ALERT_WEBHOOK_URL", "ftp://x")
    with pytest.raises(SettingError, match="YINJI_ALERT_WEBHOOK_URL"):
        CaseSettings.from_env()


@pytest.mark.slow
def test_daily_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with library_store(data) as store:
        add_match(store, "s1", "w1", "https://pirate.example/1", score=0.97)
        add_match(store, "s2", "w2", "https://other.example/2", score=0.6)
    runner = CliRunner()
    obj = {"data_dir": data}
    runner.invoke(verdict, ["s1", "w1", "confirmed"], obj=obj)
    (c,) = json.loads(runner.invoke(case, ["list", "--json"], obj=obj).output)
    runner.invoke(case, ["mark-sent", c["id"]], obj=obj)
    runner.invoke(case, ["set-state", c["id"], "removed"], obj=obj)
    with (
        SqliteCaseStore(data / "cases.sqlite3", blob_dir=data / "b") as cs,
        library_store(data) as ms,
    ):
        digest = digest_data(CaseService(cs), ms)
    assert digest["new_matches"] == 2 and digest["top_matches"][0]["score"] == 0.97
    assert digest["cases_by_state"]["removed"] == 1
    assert [r["case_id"] for r in digest["removed"]] == [c["id"]]
    with PageServer() as receiver:
        monkeypatch.setenv("YINJI_ALERT_WEBHOOK_URL", receiver.url("/hook"))
        monkeypatch.setenv("YINJI_ALERT_WEBHOOK_SECRET", SECRET)
        r = runner.invoke(case, ["digest", "--send"], obj=obj, catch_exceptions=False)
        assert r.exit_code == 0, r.output
        (post,) = receiver.posts
    assert post["headers"]["X-Yinji-Event"] == "digest.daily"
    sent = json.loads(post["body"])["data"]
    assert sent["cases_by_state"]["removed"] == 1
    assert verify_signature(
        SECRET,
        post["body"],
        post["headers"]["X-Yinji-Timestamp"],
        post["headers"]["X-Yinji-Signature"],
    )
