"""A MongoDB wire-protocol server on 127.0.0.1, backed by mongomock, for tests.

No real mongod can be installed here, and mongomock is a Python object, not a server:
a ``pymongo.MongoClient`` cannot talk to it, so pymongo's command monitoring never sees
what an adapter would send to a real server. This server closes that gap: a real
pymongo client connects to it over TCP, encodes real commands (OP_MSG, with document
sequences for bulk inserts and updates; OP_QUERY for the first handshake), and each
command is carried out on a mongomock database and answered as a server would. A
``pymongo.monitoring.CommandListener`` on the client therefore sees exactly the
commands, one event per round trip, that a real server would receive.

Only what the Yinji store adapters send is served: ``hello``/``isMaster``, ``ping``,
``buildInfo``, ``createIndexes``, ``listIndexes``, ``find``, ``getMore`` (never needed:
every reply holds the whole result), ``insert``, ``update``, ``delete``,
``findAndModify``, ``aggregate``, ``count``, ``distinct``, ``drop``, ``killCursors``,
``endSessions``. Anything else is answered with a command error naming it, so a test
fails loudly rather than passing on a silent no-op. No sessions are advertised, so
the client sends no ``lsid`` and does not retry writes.
"""

from __future__ import annotations

import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import bson
import mongomock
import pymongo
from bson.codec_options import CodecOptions
from pymongo.errors import DuplicateKeyError, OperationFailure

_OP_REPLY = 1
_OP_QUERY = 2004
_OP_MSG = 2013
_HEADER = struct.Struct("<iiii")
_CODEC = CodecOptions(document_class=dict, tz_aware=False)

_HELLO = {
    "ismaster": True,
    "isWritablePrimary": True,
    "helloOk": True,
    "maxBsonObjectSize": 16 * 1024 * 1024,
    "maxMessageSizeBytes": 48_000_000,
    "maxWriteBatchSize": 100_000,
    "minWireVersion": 0,
    "maxWireVersion": 17,  # MongoDB 6.0
    "readOnly": False,
    "ok": 1.0,
}


def _cstring(data: bytes, at: int) -> tuple[str, int]:
    end = data.index(b"\x00", at)
    return data[at:end].decode(), end + 1


def _bson_at(data: bytes, at: int) -> tuple[dict[str, Any], int]:
    (size,) = struct.unpack_from("<i", data, at)
    return bson.decode(data[at : at + size], codec_options=_CODEC), at + size


class _Backend:
    """The commands, carried out on one mongomock client (one lock: mongomock is not
    meant for concurrent writers)."""

    def __init__(self) -> None:
        self.client: Any = mongomock.MongoClient()
        self.lock = threading.Lock()

    def run(self, db_name: str, cmd: dict[str, Any]) -> dict[str, Any]:
        name = next(iter(cmd))
        with self.lock:
            try:
                handler = getattr(self, "_" + name.lower(), None)
                if handler is None:
                    return {"ok": 0.0, "errmsg": f"test server: no command {name!r}", "code": 59}
                return handler(self.client[db_name], cmd)
            except DuplicateKeyError as exc:
                return {"ok": 0.0, "errmsg": str(exc), "code": 11000}
            except OperationFailure as exc:
                return {"ok": 0.0, "errmsg": str(exc), "code": exc.code or 2}

    # --- handshake and admin -------------------------------------------------------
    def _hello(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        return dict(_HELLO)

    _ismaster = _hello

    def _ping(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"ok": 1.0}

    def _buildinfo(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"version": "6.0.0", "versionArray": [6, 0, 0, 0], "ok": 1.0}

    def _endsessions(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"ok": 1.0}

    def _killcursors(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"cursorsKilled": [], "ok": 1.0}

    def _drop(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        db.drop_collection(cmd["drop"])
        return {"ok": 1.0}

    # --- indexes ---------------------------------------------------------------------
    def _createindexes(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        coll = db[cmd["createIndexes"]]
        for spec in cmd["indexes"]:
            options = {k: v for k, v in spec.items() if k not in ("key", "v")}
            coll.create_index(list(spec["key"].items()), **options)
        return {"ok": 1.0}

    def _listindexes(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        info = db[cmd["listIndexes"]].index_information()
        batch = [{"name": name, "key": dict(v["key"]), "v": 2} for name, v in info.items()]
        return self._cursor(db, cmd["listIndexes"], batch)

    # --- reads -------------------------------------------------------------------------
    @staticmethod
    def _cursor(db: Any, coll: str, batch: list[dict[str, Any]]) -> dict[str, Any]:
        return {"cursor": {"id": 0, "ns": f"{db.name}.{coll}", "firstBatch": batch}, "ok": 1.0}

    def _find(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        coll = db[cmd["find"]]
        cursor = coll.find(cmd.get("filter") or {}, cmd.get("projection"))
        if cmd.get("sort"):
            cursor = cursor.sort(list(cmd["sort"].items()))
        if cmd.get("skip"):
            cursor = cursor.skip(int(cmd["skip"]))
        if cmd.get("limit"):
            cursor = cursor.limit(abs(int(cmd["limit"])))
        return self._cursor(db, cmd["find"], list(cursor))

    def _getmore(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"ok": 0.0, "errmsg": "test server: cursor not found", "code": 43}

    def _aggregate(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        batch = list(db[cmd["aggregate"]].aggregate(cmd["pipeline"]))
        return self._cursor(db, cmd["aggregate"], batch)

    def _count(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"n": db[cmd["count"]].count_documents(cmd.get("query") or {}), "ok": 1.0}

    def _distinct(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        values = db[cmd["distinct"]].distinct(cmd["key"], cmd.get("query") or {})
        return {"values": values, "ok": 1.0}

    # --- writes ------------------------------------------------------------------------
    @staticmethod
    def _write_reply(n: int, errors: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        reply: dict[str, Any] = {"n": n, **extra, "ok": 1.0}
        if errors:
            reply["writeErrors"] = errors
        return reply

    def _insert(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        coll = db[cmd["insert"]]
        ordered = cmd.get("ordered", True)
        n, errors = 0, []
        for i, doc in enumerate(cmd.get("documents", [])):
            try:
                coll.insert_one(doc)
                n += 1
            except DuplicateKeyError as exc:
                errors.append({"index": i, "code": 11000, "errmsg": str(exc)})
                if ordered:
                    break
        return self._write_reply(n, errors)

    def _update(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        coll = db[cmd["update"]]
        ordered = cmd.get("ordered", True)
        n = modified = 0
        upserted: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for i, op in enumerate(cmd.get("updates", [])):
            q, u, upsert = op.get("q") or {}, op["u"], bool(op.get("upsert"))
            try:
                if isinstance(u, dict) and u and not next(iter(u)).startswith("$"):
                    result = coll.replace_one(q, u, upsert=upsert)
                elif op.get("multi"):
                    result = coll.update_many(q, u, upsert=upsert)
                else:
                    result = coll.update_one(q, u, upsert=upsert)
            except DuplicateKeyError as exc:
                errors.append({"index": i, "code": 11000, "errmsg": str(exc)})
                if ordered:
                    break
                continue
            n += result.matched_count
            modified += result.modified_count
            if result.upserted_id is not None:
                n += 1
                upserted.append({"index": i, "_id": result.upserted_id})
        extra: dict[str, Any] = {"nModified": modified}
        if upserted:
            extra["upserted"] = upserted
        return self._write_reply(n, errors, **extra)

    def _delete(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        coll = db[cmd["delete"]]
        n = 0
        for op in cmd.get("deletes", []):
            q = op.get("q") or {}
            result = coll.delete_one(q) if op.get("limit") == 1 else coll.delete_many(q)
            n += result.deleted_count
        return self._write_reply(n, [])

    def _findandmodify(self, db: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        coll = db[cmd["findAndModify"]]
        q = cmd.get("query") or {}
        options: dict[str, Any] = {}
        if cmd.get("fields") is not None:
            options["projection"] = cmd["fields"]
        if cmd.get("sort"):
            options["sort"] = list(cmd["sort"].items())
        existed = coll.count_documents(q) > 0
        if cmd.get("remove"):
            value = coll.find_one_and_delete(q, **options)
            return {"value": value, "lastErrorObject": {"n": int(value is not None)}, "ok": 1.0}
        u = cmd["update"]
        after = pymongo.ReturnDocument.AFTER if cmd.get("new") else pymongo.ReturnDocument.BEFORE
        upsert = bool(cmd.get("upsert"))
        if isinstance(u, dict) and u and not next(iter(u)).startswith("$"):
            value = coll.find_one_and_replace(q, u, upsert=upsert, return_document=after, **options)
        else:
            value = coll.find_one_and_update(q, u, upsert=upsert, return_document=after, **options)
        last = {"n": int(existed or upsert), "updatedExisting": existed}
        return {"value": value, "lastErrorObject": last, "ok": 1.0}


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        while True:
            header = self._read(sock, _HEADER.size)
            if header is None:
                return
            length, request_id, _, opcode = _HEADER.unpack(header)
            body = self._read(sock, length - _HEADER.size)
            if body is None:
                return
            if opcode == _OP_MSG:
                reply = self._op_msg(body)
                out = struct.pack("<i", 0) + b"\x00" + bson.encode(reply)
                self._send(sock, request_id, _OP_MSG, out)
            elif opcode == _OP_QUERY:
                docs = self._op_query(body)
                out = struct.pack("<iqii", 0, 0, 0, 1) + bson.encode(docs)
                self._send(sock, request_id, _OP_REPLY, out)
            else:
                return  # nothing else is spoken here: the client sees a closed socket

    @staticmethod
    def _read(sock: socket.socket, n: int) -> bytes | None:
        chunks, left = [], n
        while left:
            chunk = sock.recv(min(left, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    @staticmethod
    def _send(sock: socket.socket, request_id: int, opcode: int, body: bytes) -> None:
        header = _HEADER.pack(_HEADER.size + len(body), 0, request_id, opcode)
        sock.sendall(header + body)

    def _op_msg(self, body: bytes) -> dict[str, Any]:
        (flags,) = struct.unpack_from("<I", body, 0)
        end = len(body) - (4 if flags & 1 else 0)  # checksum present
        at = 4
        cmd: dict[str, Any] = {}
        while at < end:
            kind = body[at]
            at += 1
            if kind == 0:
                cmd, at = _bson_at(body, at)
            else:  # a document sequence: documents / updates / deletes
                (size,) = struct.unpack_from("<i", body, at)
                stop = at + size
                ident, at = _cstring(body, at + 4)
                docs = []
                while at < stop:
                    doc, at = _bson_at(body, at)
                    docs.append(doc)
                cmd.setdefault("__sequences", {})[ident] = docs
        for ident, docs in cmd.pop("__sequences", {}).items():
            cmd[ident] = docs
        db_name = cmd.pop("$db", "admin")
        for key in [k for k in cmd if k.startswith("$") or k in ("lsid", "txnNumber")]:
            cmd.pop(key)
        self.server.commands.append(next(iter(cmd)))
        return self.server.backend.run(db_name, cmd)

    def _op_query(self, body: bytes) -> dict[str, Any]:
        name, at = _cstring(body, 4)
        query, _ = _bson_at(body, at + 8)
        if "$query" in query:
            query = query["$query"]
        self.server.commands.append(next(iter(query)))
        return self.server.backend.run(name.split(".")[0], query)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.backend = _Backend()
        self.commands: list[str] = []  # every command received, monitors' hellos included
        port = self.server_address[1]
        self.uri = f"mongodb://127.0.0.1:{port}/?directConnection=true"


@contextmanager
def mongo_wire_server() -> Iterator[_Server]:
    """Serve on a free 127.0.0.1 port; yields the server (``.uri`` to connect, and
    ``.commands``, every command name received), stops it on exit."""
    server = _Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
