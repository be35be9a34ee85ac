"""Cases: grouping of confirmed matches, the state machine, the hash-chained history,
both CaseStore adapters (sqlite file, MongoDB on mongomock), the profile, and the
``yinji verdict`` / ``yinji case`` commands."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from casekit import add_match, library_store
from click.testing import CliRunner

from tracker.cases import CaseService, IllegalTransition, open_case_store
from tracker.cases.cli import case, verdict
from tracker.cases.model import STATES, TRANSITIONS, CaseError, CaseEvent, verify_chain
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.cases.store import CaseStore
from tracker.common.records import NotFound
from tracker.plumbing.config import Settings


@pytest.fixture(params=["sqlite", "mongo"])
def cstore(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CaseStore]:
    if request.param == "sqlite":
        store: CaseStore = SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "b")
    else:
        mongomock = pytest.importorskip("mongomock")
        from tracker.cases.mongo_store import MongoCaseStore

        store = MongoCaseStore(mongomock.MongoClient(), db_name="yinji_test")
    yield store
    store.close()


@pytest.fixture()
def lib(tmp_path: Path) -> Iterator[object]:
    s = library_store(tmp_path / "lib")
    yield s
    s.close()


def test_confirmed_matches_group_by_work_and_domain(cstore: CaseStore, lib) -> None:
    svc = CaseService(cstore)
    add_match(lib, "s1", "w1", "https://pirate.example/book/1.html")
    add_match(lib, "s2", "w1", "https://pirate.example/book/2.html")
    add_match(lib, "s3", "w1", "https://other.example/x")
    add_match(lib, "s4", "w2", "https://pirate.example/other/1.html")
    for sid, mid in [("s1", "w1"), ("s2", "w1"), ("s3", "w1"), ("s4", "w2")]:
        r = svc.apply_verdict(lib, sid, mid, "confirmed", who="alice", note="checked by hand")
        assert r.match.verdict == "confirmed" and r.case is not None
    cases = {(c.work, c.domain): c for c in svc.list_cases()}
    assert set(cases) == {
        ("w1", "pirate.example"),
        ("w1", "other.example"),
        ("w2", "pirate.example"),
    }
    book = cases[("w1", "pirate.example")]
    assert [u.url for u in book.urls] == [
        "https://pirate.example/book/1.html",
        "https://pirate.example/book/2.html",
    ]
    assert book.state == "open" and book.work_title == "作品w1"
    # Confirming again adds nothing; the same id is found again (deterministic ids).
    again = svc.apply_verdict(lib, "s1", "w1", "confirmed", who="bob")
    assert again.case is not None and again.case.id == book.id and len(again.case.urls) == 2
    history = svc.history(book.id)
    assert [e.kind for e in history] == ["created", "url_added", "url_added"]
    assert history[0].who == "alice" and history[1].note == "checked by hand"
    assert verify_chain(history) == []
    # Filters.
    assert {c.domain for c in svc.list_cases(domain="pirate.example")} == {"pirate.example"}
    assert [c.work for c in svc.list_cases(work="w2")] == ["w2"]


def test_state_machine_and_history(cstore: CaseStore, lib) -> None:
    svc = CaseService(cstore)
    add_match(lib, "s1", "w1", "https://pirate.example/1")
    c = svc.apply_verdict(lib, "s1", "w1", "confirmed", who="alice").case
    assert c is not None
    with pytest.raises(IllegalTransition, match="cannot go from open to still_online"):
        svc.transition(c.id, "still_online", who="alice")
    with pytest.raises(CaseError, match="state must be one of"):
        svc.transition(c.id, "gone", who="alice")
    c = svc.mark_sent(c.id, who="alice", note="sent to abuse desk")
    assert c.state == "notice_sent" and c.notice_sent_at is not None
    c = svc.mark_sent(c.id, who="alice", note="reminder")  # a second notice: same state
    assert c.state == "notice_sent"
    c = svc.transition(c.id, "still_online", who="system:recheck")
    c = svc.transition(c.id, "removed", who="system:recheck", note="404")
    assert c.removed_at is not None
    c = svc.transition(c.id, "open", who="system:recheck", note="page came back")
    c = svc.transition(c.id, "closed", who="bob", note="settled")
    with pytest.raises(IllegalTransition, match="closed is final"):
        svc.transition(c.id, "open", who="bob")
    events = svc.history(c.id)
    moves = [(e.from_state, e.to_state) for e in events if e.kind == "transition"]
    assert moves == [
        ("open", "notice_sent"),
        ("notice_sent", "still_online"),
        ("still_online", "removed"),
        ("removed", "open"),
        ("open", "closed"),
    ]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert all(e.at.tzinfo is not None for e in events)
    assert verify_chain(events) == []
    # A closed case's work and domain get a new case next time.
    add_match(lib, "s9", "w1", "https://pirate.example/9")
    fresh = svc.apply_verdict(lib, "s9", "w1", "confirmed", who="alice").case
    assert fresh is not None and fresh.id == f"{c.id}-2" and fresh.state == "open"


def test_every_state_pair_follows_the_table(cstore: CaseStore) -> None:
    svc = CaseService(cstore)
    for start in STATES:
        for target in STATES:
            c = svc.open_case(work=f"w-{start}-{target}", domain="d.example", who="t")
            if start != "open":
                # reach `start` by force, then try the move
                stored = cstore.get_case(c.id)
                stored.state = start
                cstore.update_case(stored, stored.version)
            if target in TRANSITIONS[start]:
                assert svc.transition(c.id, target, who="t").state == target
            else:
                with pytest.raises(IllegalTransition):
                    svc.transition(c.id, target, who="t")
                assert cstore.get_case(c.id).state == start


def test_tampered_history_is_detected(tmp_path: Path, lib) -> None:
    store = SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "b")
    svc = CaseService(store)
    add_match(lib, "s1", "w1", "https://pirate.example/1")
    c = svc.apply_verdict(lib, "s1", "w1", "confirmed", who="alice").case
    assert c is not None
    svc.mark_sent(c.id, who="alice")
    conn = store._conn()
    doc = json.loads(conn.execute("SELECT doc FROM case_events WHERE seq = 2").fetchone()[0])
    doc["who"] = "mallory"
    conn.execute("UPDATE case_events SET doc = ? WHERE seq = 2", (json.dumps(doc),))
    assert verify_chain(svc.history(c.id)) == ["event 2: content does not match its hash"]
    store.close()


def test_withdrawn_confirmation_leaves_the_case(cstore: CaseStore, lib) -> None:
    svc = CaseService(cstore)
    add_match(lib, "s1", "w1", "https://pirate.example/1")
    add_match(lib, "s2", "w1", "https://pirate.example/2")
    svc.apply_verdict(lib, "s1", "w1", "confirmed", who="a")
    c = svc.apply_verdict(lib, "s2", "w1", "confirmed", who="a").case
    assert c is not None and len(c.urls) == 2
    r = svc.apply_verdict(lib, "s2", "w1", "dismissed", who="a", note="licensed mirror")
    assert r.case is not None and [u.url for u in r.case.urls] == ["https://pirate.example/1"]
    r = svc.apply_verdict(lib, "s1", "w1", "pending", who="a")
    assert r.case is not None and r.case.state == "closed" and r.case.urls == []
    # Dismissing a match that was never confirmed touches no case.
    add_match(lib, "s3", "w3", "https://x.example/3")
    assert svc.apply_verdict(lib, "s3", "w3", "dismissed", who="a").case is None
    with pytest.raises(NotFound):
        svc.apply_verdict(lib, "nope", "w1", "confirmed", who="a")
    with pytest.raises(ValueError, match="verdict must be one of"):
        svc.apply_verdict(lib, "s1", "w1", "maybe", who="a")


def test_sync_files_matches_confirmed_elsewhere(cstore: CaseStore, lib) -> None:
    svc = CaseService(cstore)
    for i in range(3):
        add_match(lib, f"s{i}", "w1", f"https://p.example/{i}")
        lib.set_verdict(f"s{i}\x1fw1", "confirmed")  # as the web app does today
    add_match(lib, "t", "w1", "")  # pasted text: no URL, no case
    lib.set_verdict("t\x1fw1", "confirmed")
    assert svc.sync(lib, page=2) == 3
    assert svc.sync(lib) == 0
    (c,) = svc.list_cases()
    assert len(c.urls) == 3


def test_concurrent_writers_keep_one_history(tmp_path: Path) -> None:
    path = tmp_path / "cases.sqlite3"
    store = SqliteCaseStore(path, blob_dir=tmp_path / "b")
    c = CaseService(store).open_case(work="w", domain="d.example", who="t")
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        s = SqliteCaseStore(path, blob_dir=tmp_path / "b")
        try:
            svc = CaseService(s)
            for i in range(10):
                svc.add_note(c.id, f"writer {n} note {i}", who=f"w{n}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            s.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    events = CaseService(store).history(c.id)
    assert len(events) == 41 and verify_chain(events) == []
    store.close()


def test_mongo_history_appends_race_safely() -> None:
    mongomock = pytest.importorskip("mongomock")
    from tracker.cases.mongo_store import MongoCaseStore

    store = MongoCaseStore(mongomock.MongoClient(), db_name="t")
    svc = CaseService(store)
    c = svc.open_case(work="w", domain="d.example", who="t")
    # Another writer appended behind our back: the next append links to its event.
    store.events.insert_one(
        {**CaseEvent(c.id, "note", "x", seq=2, prev_hash="f" * 64, hash="e" * 64).to_dict()}
    )
    svc.add_note(c.id, "after", who="t")
    events = store.list_events(c.id)
    assert [e.seq for e in events] == [1, 2, 3] and events[2].prev_hash == "e" * 64


def test_profile_and_attachments(cstore: CaseStore) -> None:
    svc = CaseService(cstore)
    assert svc.profile().missing() == ["name", "address", "email or phone"]
    p = svc.set_profile(name="青简文化有限公司", email="legal@qingjian.example", address="北京市")
    assert p.missing() == []
    svc.set_profile(phone="+86 10 1234 5678", name=None)
    p = svc.add_attachment("版权登记证书.pdf", b"%PDF-1.4 proof")
    p = svc.add_attachment("/tmp/x/contract.txt", b"contract")
    assert [a.name for a in p.attachments] == ["版权登记证书.pdf", "contract.txt"]
    assert p.attachments[0].content_type == "application/pdf"
    files = svc.attachment_files()
    assert files[0][1] == b"%PDF-1.4 proof" and svc.profile().name == "青简文化有限公司"
    assert svc.profile().phone == "+86 10 1234 5678"
    p = svc.remove_attachment("contract.txt")
    assert [a.name for a in p.attachments] == ["版权登记证书.pdf"]
    with pytest.raises(CaseError, match="not an e-mail"):
        svc.set_profile(email="nobody")
    with pytest.raises(CaseError, match="is empty"):
        svc.add_attachment("a.pdf", b"")
    with pytest.raises(NotFound):
        cstore.get_blob("0" * 64)


def test_factory_follows_the_library_settings(tmp_path: Path, monkeypatch) -> None:
    settings = Settings(data_dir=tmp_path / "d")
    store = open_case_store(settings)
    assert isinstance(store, SqliteCaseStore) and store.path == tmp_path / "d" / "cases.sqlite3"
    store.close()
    mongomock = pytest.importorskip("mongomock")
    import pymongo

    monkeypatch.setattr(pymongo, "MongoClient", lambda *a, **k: mongomock.MongoClient())
    from tracker.cases.mongo_store import MongoCaseStore

    store = open_case_store(settings.with_(mongo_uri="mongodb://db.invalid/"))
    assert isinstance(store, MongoCaseStore)
    store.close()


# --- the commands ----------------------------------------------------------------------------
def _run(data: Path, command, *args: str):
    return CliRunner().invoke(command, list(args), obj={"data_dir": data}, catch_exceptions=False)


def test_cli_verdict_list_mark_sent(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with library_store(data) as store:
        add_match(store, "s1", "w1", "https://pirate.example/1.html", title="春山记")
        add_match(store, "s2", "w1", "https://pirate.example/2.html", title="春山记")
    r = _run(data, verdict, "s1", "w1", "confirmed", "--note", "逐段核对", "--by", "alice")
    assert r.exit_code == 0 and "confirmed; case c" in r.output
    r = _run(data, verdict, "s2", "w1", "confirmed", "--json")
    out = json.loads(r.output)
    assert out["verdict"] == "confirmed" and out["case_state"] == "open"
    r = _run(data, case, "list", "--json")
    (c,) = json.loads(r.output)
    assert {"id", "state", "work", "domain", "urls"} <= set(c)
    assert c["state"] == "open" and c["work"] == "w1" and c["domain"] == "pirate.example"
    assert c["urls"] == ["https://pirate.example/1.html", "https://pirate.example/2.html"]
    r = _run(data, case, "mark-sent", c["id"], "--note", "emailed")
    assert r.exit_code == 0 and "notice_sent" in r.output
    r = _run(data, case, "set-state", c["id"], "open")
    assert r.exit_code == 1 and "cannot go from notice_sent to open" in r.output
    r = _run(data, case, "set-state", c["id"], "disputed", "--note", "platform objects")
    assert r.exit_code == 0
    r = _run(data, case, "show", c["id"], "--json")
    shown = json.loads(r.output)
    assert shown["state"] == "disputed" and shown["history_problems"] == []
    assert [e["kind"] for e in shown["history"]][-2:] == ["transition", "transition"]
    r = _run(data, case, "list")
    assert c["id"] in r.output and "disputed" in r.output
    r = _run(data, verdict, "nope", "w1", "confirmed")
    assert r.exit_code == 1 and "no match of suspect 'nope'" in r.output
    r = _run(data, case, "mark-sent", "c000")
    assert r.exit_code == 1 and "no case 'c000'" in r.output
    assert _run(data, verdict, "s1", "w1", "maybe").exit_code == 2


def test_cli_profile(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proof = tmp_path / "登记证书.pdf"
    proof.write_bytes(b"%PDF-1.4 fake proof")
    r = _run(data, case, "profile", "set", "--name", "青简文化", "--attach", str(proof))
    assert r.exit_code == 0, r.output
    assert "still missing for a notice: address, email or phone" in r.output
    r = _run(data, case, "profile", "set", "--address", "北京市", "--email", "a@b.example")
    prof = json.loads(r.output)
    assert prof["name"] == "青简文化" and prof["attachments"][0]["name"] == "登记证书.pdf"
    assert (data / "cases" / "blobs").is_dir()
    r = _run(data, case, "profile", "set", "--email", "bad")
    assert r.exit_code == 1 and "not an e-mail address" in r.output


def test_history_hashed_before_one_time_format_still_verifies() -> None:
    """Events recorded when case times were written ``…+00:00`` keep verifying; new ones
    are written (and hashed) ``…Z`` like every other time."""
    import hashlib

    from tracker.cases.model import GENESIS

    body = {
        "case_id": "c1",
        "seq": 1,
        "kind": "created",
        "who": "alice",
        "note": "",
        "from_state": None,
        "to_state": "open",
        "data": {},
        "at": "2026-11-25T09:26:15.794+00:00",
        "prev_hash": GENESIS,
    }
    canonical = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    old = {**body, "hash": hashlib.sha256(canonical.encode()).hexdigest(), "evidence_ref": None}
    event = CaseEvent.from_dict(old)
    assert verify_chain([event]) == []
    assert event.to_dict()["at"] == "2026-11-25T09:26:15.794Z"
    event.note = "edited"
    assert verify_chain([event]) == ["event 1: content does not match its hash"]
    fresh = CaseEvent.from_dict({**old, "hash": ""})
    fresh.hash = fresh.compute_hash()
    assert fresh.hash != old["hash"] and verify_chain([fresh]) == []
