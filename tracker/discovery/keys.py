"""Redis key names of discovery: every key shares one hash tag, ``{PREFIX:discovery}``,
so they live on one Redis Cluster slot and the frontier's Lua scripts (which touch the
queue, the leases, the seen set and the hosts' clocks at once) run under Redis Cluster
as they do on one server."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DiscoveryKeys:
    """Key names under ``prefix`` (``Settings.redis_prefix``; ``name`` separates
    frontiers, e.g. a benchmark's from the library's)."""

    prefix: str = "yinji"
    name: str = "discovery"

    @property
    def tag(self) -> str:
        return "{" + f"{self.prefix}:{self.name}" + "}"

    def key(self, suffix: str) -> str:
        return f"{self.tag}:{suffix}"
