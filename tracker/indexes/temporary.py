"""The temporary keys of bulk loads (``tracker.indexes.bulk``) and their leases.

A load writes its buckets under ``{prefix}:bt{token}:`` and holds a lease
(``{prefix}:bt{token}:live``: its owner ``host|pid|token``, with a TTL of ``LEASE_MS``
refreshed after every settle call). A load killed between its HSETs and its settle
(``kill -9``) leaves its keys behind, which made an empty index look non-empty:
``sweep_temporary`` (run when a load or an ingest asks whether the index is empty,
``RedisInvertedIndex.is_empty``) deletes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracker.indexes.keys import TEMP_MATCH, temp_prefix
from tracker.indexes.lock import Owner
from tracker.indexes.redis_client import delete_matching, process_alive

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient

LEASE = "live"  # after a load's temporary prefix: its lease
LEASE_MS = 60_000  # a load silent this long (no settle call) is taken for dead


def sweep_temporary(redis: RedisClient, prefix: str) -> int:
    """Delete the temporary keys of bulk loads that died (``kill -9`` between their
    HSETs and their settle): those whose lease expired, or whose owner ran on this host
    and is gone. A live load's keys stay. Returns how many keys went."""
    start = len(prefix) + 3  # after "{prefix}:bt"
    tokens: set[str] = set()
    for key in redis.scan_iter(match=f"{prefix}{TEMP_MATCH}", count=1000):
        name = key.decode() if isinstance(key, bytes) else str(key)
        tokens.add(name[start:].partition(":")[0])
    host = Owner.me().host
    gone = 0
    for token in tokens:
        tmp = temp_prefix(prefix, token)
        holder = redis.get(f"{tmp}{LEASE}")
        if holder is not None:
            owner = Owner.parse(holder)
            if owner.host != host or not owner.pid or process_alive(owner.pid):
                continue  # a live load (or one elsewhere whose lease has not expired)
        gone += delete_matching(redis, f"{tmp}*")
    return gone
