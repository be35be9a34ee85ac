"""Sending notices by SMTP to an aiosmtpd server the test starts on 127.0.0.1; without
SMTP the command says how to send by hand and mark the case sent."""

from __future__ import annotations

import json
from email import policy
from email.parser import BytesParser
from pathlib import Path

import pytest
from casekit import SmtpSink, add_match, library_store
from click.testing import CliRunner

from tracker.cases.cli import case, verdict
from tracker.cases.mail import MailError, send_message
from tracker.cases.settings import CaseSettings, SmtpConfig
from tracker.plumbing.config import SettingError

PROFILE = ["--name=青简文化", "--address=北京市", "--email=legal@qingjian.example"]


def _setup(tmp_path: Path) -> tuple[dict, str]:
    data = tmp_path / "data"
    data.mkdir()
    with library_store(data) as store:
        add_match(store, "s1", "w1", "https://pirate.example/1.html", title="春山记")
    runner = CliRunner()
    obj = {"data_dir": data}
    assert runner.invoke(verdict, ["s1", "w1", "confirmed"], obj=obj).exit_code == 0
    assert runner.invoke(case, ["profile", "set", *PROFILE], obj=obj).exit_code == 0
    (c,) = json.loads(runner.invoke(case, ["list", "--json"], obj=obj).output)
    return obj, c["id"]


@pytest.mark.slow
def test_send_by_smtp_marks_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    obj, cid = _setup(tmp_path)
    runner = CliRunner()
    with SmtpSink(auth=("notices", "p@ss:word")) as sink:
        monkeypatch.setenv("YINJI_SMTP_URL", f"smtp://notices:p%40ss%3Aword@127.0.0.1:{sink.port}")
        monkeypatch.setenv("YINJI_SMTP_FROM", "notices@qingjian.example")
        args = ["send", cid, "--to", "abuse@pirate.example", "--lang", "zh", "--by", "alice"]
        r = runner.invoke(case, args, obj=obj, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert sink.logins == ["notices"]
    (got,) = sink.messages
    assert got["from"] == "notices@qingjian.example" and got["to"] == ["abuse@pirate.example"]
    msg = BytesParser(policy=policy.default).parsebytes(got["data"])
    body = msg.get_body(preferencelist=("plain",)).get_content()
    assert "https://pirate.example/1.html" in body and "第十四条" in body
    names = [p.get_filename() for p in msg.iter_attachments()]
    assert any(n.startswith("notice-") for n in names)
    assert any(n.startswith("evidence-") for n in names)  # the evidence PDF is attached
    shown = json.loads(runner.invoke(case, ["show", cid, "--json"], obj=obj).output)
    assert shown["state"] == "notice_sent"
    last = shown["history"][-1]
    assert last["who"] == "alice" and last["to_state"] == "notice_sent"
    assert last["data"]["notice"]["channel"] == "smtp"
    assert last["data"]["notice"]["message_id"] == msg["Message-ID"].strip()


def test_without_smtp_download_and_mark_sent(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("YINJI_SMTP_URL", raising=False)
    obj, cid = _setup(tmp_path)
    runner = CliRunner()
    r = runner.invoke(case, ["send", cid, "--to", "a@b.example", "--lang", "en"], obj=obj)
    assert r.exit_code == 1 and "YINJI_SMTP_URL is not set" in r.output
    assert "mark-sent" in r.output
    out = tmp_path / "n.eml"
    args = ["notice", cid, "--format", "eml", "--lang", "en", "-o", str(out)]
    assert runner.invoke(case, args, obj=obj).exit_code == 0
    assert runner.invoke(case, ["mark-sent", cid], obj=obj).exit_code == 0
    shown = json.loads(runner.invoke(case, ["show", cid, "--json"], obj=obj).output)
    assert shown["state"] == "notice_sent"


def test_smtp_settings_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = SmtpConfig.parse("smtps://u%40x:p%2Fw@mail.example", sender="a@b.example")
    assert (cfg.host, cfg.port, cfg.tls, cfg.username, cfg.password) == (
        "mail.example",
        465,
        True,
        "u@x",
        "p/w",
    )
    assert SmtpConfig.parse("smtp://relay.example").port == 25
    with pytest.raises(SettingError, match="YINJI_SMTP_URL must look like"):
        SmtpConfig.parse("http://mail.example")
    monkeypatch.setenv("YINJI_SMTP_URL", "smtp://relay.example:2525")
    monkeypatch.setenv("YINJI_SMTP_FROM", "not-an-address")
    with pytest.raises(SettingError, match="YINJI_SMTP_FROM"):
        CaseSettings.from_env()
    monkeypatch.delenv("YINJI_SMTP_FROM")
    monkeypatch.setenv("YINJI_SMTP_TIMEOUT", "soon")
    with pytest.raises(SettingError, match="YINJI_SMTP_TIMEOUT"):
        CaseSettings.from_env()


@pytest.mark.slow
def test_smtp_refusals() -> None:
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["Subject"] = "x"
    msg.set_content("x")
    with SmtpSink(auth=("u", "right")) as sink:
        cfg = SmtpConfig("127.0.0.1", sink.port, False, "u", "wrong", "a@b.example", timeout=30)
        with pytest.raises(MailError, match="refused the login") as err:
            send_message(cfg, msg, to=["c@d.example"])
        assert "wrong" not in str(err.value)
        with pytest.raises(MailError, match="no recipient"):
            send_message(cfg, msg)
    closed = SmtpConfig("127.0.0.1", sink.port, False, sender="a@b.example", timeout=5)
    with pytest.raises(MailError, match=f"SMTP server 127.0.0.1:{sink.port}"):
        send_message(closed, msg, to=["c@d.example"])
