"""Near-duplicates of a crawl: a page within 3 bits (SimHash) of one already checked is
recorded against that page's suspect instead of being checked again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from tracker.discovery.keys import DiscoveryKeys

if TYPE_CHECKING:
    from tracker.engines.base import RedisClient

__all__ = ["NearDuplicates"]


class NearDuplicates:
    """SimHash (64-bit, character 3-grams) of every page checked, in Redis: four 16-bit
    bands, so a page within 3 bits of one already checked shares a band with it."""

    def __init__(self, redis: RedisClient, keys: DiscoveryKeys, *, distance: int = 3) -> None:
        self.redis: Any = cast(Any, redis)  # redis-py's stubs of RedisCluster lack register_script
        self.keys, self.distance = keys, distance
        self._add = self.redis.register_script(_SIM_ADD)

    def _band_keys(self, h: int) -> list[tuple[str, str]]:
        return [(self.keys.key(f"sim:{i}"), f"{(h >> (16 * i)) & 0xFFFF:04x}") for i in range(4)]

    def find(self, h: int) -> str | None:
        """The suspect id of a checked page near ``h``, or None (one round trip)."""
        from tracker.fingerprints.simhash import hamming

        pipe = self.redis.pipeline(transaction=False)
        for key, band in self._band_keys(h):
            pipe.hget(key, band)
        for raw in pipe.execute():
            if not raw:
                continue
            for entry in (raw.decode() if isinstance(raw, bytes) else raw).split(","):
                other, _, suspect_id = entry.partition(":")
                if hamming(int(other, 16), h) <= self.distance:
                    return suspect_id
        return None

    def add(self, h: int, suspect_id: str) -> None:
        """Remember a checked page (one script: each band keeps its last 32 pages)."""
        bands = self._band_keys(h)
        self._add(
            keys=[bands[0][0]],
            args=[self.keys.tag, f"{h:016x}:{suspect_id}", *[b for _, b in bands]],
        )


_SIM_ADD = """
local tag, entry = ARGV[1], ARGV[2]
for i = 0, 3 do
  local key, band = tag .. ':sim:' .. i, ARGV[3 + i]
  local old = redis.call('HGET', key, band) or ''
  local parts = {}
  for e in string.gmatch(old, '[^,]+') do parts[#parts + 1] = e end
  local first = math.max(1, #parts - 30)
  local kept = {}
  for k = first, #parts do kept[#kept + 1] = parts[k] end
  kept[#kept + 1] = entry
  redis.call('HSET', key, band, table.concat(kept, ','))
end
return 1
"""
