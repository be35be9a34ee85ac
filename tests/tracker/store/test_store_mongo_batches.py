"""MongoDB ingest in batches: round trips counted with pymongo's command monitoring.

No real mongod can be installed here, so the adapter talks through a real
``pymongo.MongoClient`` over TCP to ``tests/mongo_wire.py``, a wire-protocol server on
mongomock. What is counted: every command the client sends on an application
connection, as reported to a ``pymongo.monitoring.CommandListener`` (one
``CommandStartedEvent`` per command, and pymongo sends each command in its own round
trip: request, then wait for the reply). Server monitoring (``hello`` heartbeats on the
monitor's own connection) is not a command event and is not counted; the wire server
also logs every command it receives, and the two counts are checked against each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from textgen import work

pytest.importorskip("mongomock")
import pymongo
from mongo_wire import mongo_wire_server
from pymongo import monitoring

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import Mother
from tracker.store.mongo import MongoStore


@dataclass
class Commands(monitoring.CommandListener):
    """(command name, collection) of every command started, in order."""

    seen: list[tuple[str, str]] = field(default_factory=list)
    hook: Any = None  # called with each started event (to stage a concurrent writer)

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        coll = event.command.get(event.command_name)
        self.seen.append((event.command_name, coll if isinstance(coll, str) else ""))
        if self.hook is not None:
            self.hook(event)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def take(self) -> list[tuple[str, str]]:
        out, self.seen = self.seen, []
        return out


@dataclass
class Mongo:
    server: Any
    client: Any
    commands: Commands


@pytest.fixture()
def mongo() -> Iterator[Mongo]:
    listener = Commands()
    with mongo_wire_server() as server:
        client: Any = pymongo.MongoClient(server.uri, tz_aware=True, event_listeners=[listener])
        try:
            yield Mongo(server, client, listener)
        finally:
            client.close()


def _docs(first: int, n: int) -> list[Document]:
    return [Document(id=f"w{i}", title=f"作品{i}", text=work(700 + i, 12)) for i in range(first, n)]


def _items(ids: range, tag: bytes = b"a") -> list[tuple[Mother, dict[str, bytes]]]:
    return [(Mother(id=f"m{i}", title="t", text=f"正文{i}"), {"e": tag * 8}) for i in ids]


FRESH = [
    ("findAndModify", "counters"),  # the batch's seqs, one $inc
    ("insert", "fingerprints"),  # every blob of the batch
    ("find", "mothers"),  # the versions the ids have now
    ("insert", "mothers"),  # bulk_write: the new ids
]
REPLACING = [
    ("findAndModify", "counters"),
    ("insert", "fingerprints"),
    ("find", "mothers"),
    ("update", "mothers"),  # bulk_write: conditional replacements
    ("find", "fingerprints"),  # the replaced versions' blobs, returned
    ("delete", "fingerprints"),  # and deleted
]


@pytest.mark.slow
def test_a_batch_is_a_fixed_handful_of_commands_whatever_its_size(mongo: Mongo) -> None:
    store = MongoStore(mongo.client)
    mongo.commands.take()
    for ids in (range(0, 5), range(5, 205)):
        results = store.replace_mothers(_items(ids))
        assert mongo.commands.take() == FRESH, len(ids)
        assert [r for _, r in results] == [None] * len(ids)
    # The same 205 ids again: all replacements, still one command of each kind.
    results = store.replace_mothers(_items(range(205), b"b"))
    assert mongo.commands.take() == REPLACING
    assert [m.seq for m, _ in results] == list(range(206, 411))
    assert [(r.seq, r.fingerprints) for _, r in results if r] == [
        (i + 1, {"e": b"a" * 8}) for i in range(205)
    ]
    # Only the current versions' blobs are left, and each mother reads back as written.
    assert sorted(d["seq"] for d in store.fingerprints.find({}, {"seq": 1})) == list(
        range(206, 411)
    )
    assert store.get_fingerprints(300, "e") == b"b" * 8
    assert store.get_mother("m94") == results[94][0]
    assert store.count_mothers() == 205


@pytest.mark.slow
def test_ingest_round_trips_per_batch_do_not_grow_with_the_batch(
    mongo: Mongo, tmp_path, redis_client
) -> None:
    """``Library.ingest`` on MongoDB: the store commands of a batch of 4 and of a batch
    of 40 are the same list (before batching a batch of 40 cost ~120 commands)."""
    settings = Settings(data_dir=tmp_path, redis_prefix="mb")
    lib = Library(settings, MongoStore(mongo.client), redis_client)
    lib.ingest(_docs(0, 2))  # the first ingest also notes the engine and its index
    per_batch = []
    for first, n in ((2, 6), (6, 46)):
        mongo.commands.take()
        report = lib.ingest(_docs(first, n), batch_size=n - first)
        assert report.ingested == n - first and not report.errors
        per_batch.append(mongo.commands.take())
    assert per_batch[0] == per_batch[1], per_batch
    assert per_batch[1] == [
        *[("find", "meta")] * 2,  # the index's health marks, before writing
        ("find", "counters"),  # the store's last seq, for the writer mark
        ("update", "meta"),  # the writer mark
        *FRESH,  # the batch: Store.replace_mothers
        ("find", "meta"),  # the writer mark's heartbeat after a full batch
        ("update", "meta"),
        ("find", "mothers"),  # after the index write: which seqs are still current
        ("update", "meta"),  # the index generation, raised (raise_meta)
        ("find", "meta"),
        ("delete", "meta"),  # the writer mark, removed
        # After the ingest (issue #28): does the index need a fresh local snapshot? The
        # library's characters against the snapshot floor (``LibraryChars``: the store's
        # last seq and its count of mothers say whether the remembered total still
        # holds, once as the ingest adds its own characters and once at the refresh)
        # and the health marks read by ``IndexAdmin.fresh_snapshots``: a fixed handful.
        ("find", "counters"),
        ("aggregate", "mothers"),
        ("find", "meta"),
        ("find", "counters"),
        ("aggregate", "mothers"),
        *[("find", "meta")] * 2,
    ]
    # Ingested for real: the index finds a copied passage of the last work.
    probe = work(700 + 45, 12)[100:900]
    assert [m.mother_id for m in lib.check_text(probe).matches] == ["w45"]


@pytest.mark.slow
def test_the_server_received_exactly_what_the_listener_counted(mongo: Mongo) -> None:
    """The listener's count is the wire's: cross-checked against the server's own log
    (which also holds the handshakes and heartbeats of the monitor connection)."""
    store = MongoStore(mongo.client)
    before = len(mongo.server.commands)
    mongo.commands.take()
    store.replace_mothers(_items(range(50)))
    counted = mongo.commands.take()
    received = mongo.server.commands[before:]
    app = [c for c in received if c not in ("hello", "isMaster", "ismaster")]
    assert app == [name for name, _ in counted] == [name for name, _ in FRESH]


@pytest.mark.slow
def test_a_replacement_that_loses_a_race_is_written_again_alone(mongo: Mongo) -> None:
    """A second writer replaces m3 after the batch read m3's version and before its
    conditional replace: the batch's replace of m3 matches nothing, so m3 is written
    again by itself and learns that it displaced the second writer's version (and the
    blob the batch stored for m3's lost seq is deleted)."""
    store = MongoStore(mongo.client)
    store.replace_mothers(_items(range(6)))  # seqs 1..6
    other: Any = pymongo.MongoClient(mongo.server.uri, tz_aware=True)
    rival = MongoStore(other)

    def race(event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "update" and event.command.get("update") == "mothers":
            mongo.commands.hook = None
            rival.replace_mother(Mother(id="m3", title="rival", text="对手"), {"e": b"r" * 8})

    mongo.commands.hook = race
    try:
        results = store.replace_mothers(_items(range(6), b"b"))  # seqs 7..12
    finally:
        other.close()
    # The rival took seq 13 (displacing 4); m3 written again alone took 14.
    assert [m.seq for m, _ in results] == [7, 8, 9, 14, 11, 12]
    assert [(r.seq, r.fingerprints) for _, r in results if r] == [
        (1, {"e": b"a" * 8}),
        (2, {"e": b"a" * 8}),
        (3, {"e": b"a" * 8}),
        (13, {"e": b"r" * 8}),
        (5, {"e": b"a" * 8}),
        (6, {"e": b"a" * 8}),
    ]
    assert store.get_mother("m3").title == "t"
    assert {d["seq"] for d in store.fingerprints.find({}, {"seq": 1})} == {7, 8, 9, 11, 12, 14}


@pytest.mark.slow
def test_a_new_id_inserted_by_another_writer_meanwhile(mongo: Mongo) -> None:
    """The batch saw no m1, another writer inserted it before the batch's insert: the
    duplicate key is not an error, m1 is written again alone and displaces the other's."""
    store = MongoStore(mongo.client)
    other: Any = pymongo.MongoClient(mongo.server.uri, tz_aware=True)
    rival = MongoStore(other)

    def race(event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "insert" and event.command.get("insert") == "mothers":
            mongo.commands.hook = None
            rival.replace_mother(Mother(id="m1", title="rival", text="对手"), {"e": b"r" * 8})

    mongo.commands.hook = race
    try:
        results = store.replace_mothers(_items(range(3)))  # seqs 1..3, the rival 4
    finally:
        other.close()
    assert [m.seq for m, _ in results] == [1, 5, 3]
    assert [(r.seq, r.fingerprints) if r else None for _, r in results] == [
        None,
        (4, {"e": b"r" * 8}),
        None,
    ]
    assert {d["seq"] for d in store.fingerprints.find({}, {"seq": 1})} == {1, 3, 5}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mongo", "sqlite"])
def test_one_id_twice_in_a_batch_is_refused_by_name(mongo: Mongo, tmp_path, kind) -> None:
    from tracker.store import SqliteStore

    store = MongoStore(mongo.client) if kind == "mongo" else SqliteStore(tmp_path / "s.db")
    items = [*_items(range(3)), (Mother(id="m1", title="again", text="再"), {})]
    with pytest.raises(ValueError, match="'m1' appears twice"):
        store.replace_mothers(items)
    assert store.count_mothers() == 0
    store.close()


SAVE_CHECKS = [
    ("find", "suspects"),  # which re-checked suspects still exist
    ("update", "suspects"),  # bulk_write: put whole, or checked_at set
    ("find", "suspects"),  # the written suspects, for the matches' titles and urls
    ("find", "mothers"),  # the matched mothers' titles
    ("update", "matches"),  # bulk_write: every match an upsert
    ("delete", "matches"),  # each suspect's stale pending matches
]


def _chunk(n: int, tag: str) -> list[Any]:
    """A job's chunk: ``n`` checks, new suspects (one to three matches) and re-checks of
    stored ones, one of them deleted meanwhile."""
    from tracker.store import CheckWrite, Match, Suspect

    out = []
    for i in range(n):
        recheck = i % 4 == 3  # a stored suspect checked again (re7 deleted meanwhile)
        sid = f"re{i}" if recheck else f"{tag}{i}"
        found = [
            Match(
                suspect_id=sid,
                mother_id=f"m{(i + k) % 5}",
                score=0.5 + k / 10,
                coverage=0.4,
                mother_coverage=0.2,
            )
            for k in range(1 + i % 3)
        ]
        if recheck:
            out.append(CheckWrite(Suspect(id=sid, text="not written"), found, rewrite=False))
        else:
            out.append(CheckWrite(Suspect(id=sid, title=f"页{i}", text=f"正文 {i}"), found))
    return out


@pytest.mark.slow
def test_a_chunk_of_checks_is_six_commands_and_stores_what_one_by_one_stores(
    mongo: Mongo,
) -> None:
    """``save_checks`` of a chunk of 4 and of 40 checks: the same six commands (one by
    one: four a check and one a match), and the store reads back exactly as after the
    default one-by-one writes (``Store.save_checks``) on a second database."""
    from tracker.store import Match, MatchQuery, Store, Suspect

    batched = MongoStore(mongo.client, db_name="batched")
    single = MongoStore(mongo.client, db_name="single")
    for store in (batched, single):
        for i in range(5):
            store.put_mother(Mother(id=f"m{i}", title=f"母本{i}", text=f"正文{i}"))
        for i in range(3, 44, 4):
            if i != 7:  # re7 was deleted meanwhile
                store.put_suspect(
                    Suspect(id=f"re{i}", title=f"旧{i}", text="stored", url=f"https://x.cn/{i}")
                )
        # A stale pending match the re-check no longer finds, and a confirmed one it keeps.
        store.put_matches(
            "re3",
            [
                Match(
                    suspect_id="re3", mother_id="m4", score=0.9, coverage=0.5, mother_coverage=0.1
                ),
                Match(
                    suspect_id="re3", mother_id="m0", score=0.8, coverage=0.5, mother_coverage=0.1
                ),
            ],
        )
        store.set_verdict(
            Match(suspect_id="re3", mother_id="m0", score=0, coverage=0, mother_coverage=0).id,
            "confirmed",
        )
    mongo.commands.take()
    got = {}
    for n, tag in ((4, "a"), (40, "b")):
        writes = _chunk(n, tag)
        got[tag] = batched.save_checks(writes)
        assert mongo.commands.take() == SAVE_CHECKS, n
        assert Store.save_checks(single, writes) == got[tag]
        assert len(mongo.commands.take()) > 4 * n
    assert got["b"][7] is False and got["b"][3] is True

    def state(store: MongoStore) -> tuple[list[Any], list[Any]]:
        matches = [
            (
                m.id,
                m.suspect_id,
                m.mother_id,
                m.score,
                m.mother_title,
                m.suspect_title,
                m.suspect_url,
                m.verdict,
            )
            for m in store.query_matches(MatchQuery(limit=1000))
        ]
        suspects = [
            (s.id, s.title, s.text, s.url, s.checked_at is not None)
            for s in store.list_suspects(limit=1000)
        ]
        return sorted(matches), sorted(suspects)

    assert state(batched) == state(single)
    kept = {m.mother_id: m.verdict for m in batched.query_matches(MatchQuery(suspect_id="re3"))}
    assert kept == {"m0": "confirmed", "m3": "pending"}  # m4 dropped, the confirmed kept
