"""Editions: identical or near-identical mothers indexed as one text (issue #25).

A fingerprint held by more than ``stop_df`` mothers becomes a stop marker (boilerplate).
Counted over mothers, that blinded detection of any work held 17 times or more: importing
16 copies of a work (or a publisher's many editions of a classic) turned every fingerprint
of it into a stop marker, and a copy of it got no match at all. So the index counts over
*distinct texts*: mothers whose fingerprint sets are (nearly) the same are an *edition
group*, posted under one id (the group's, the seq of its first mother), and a check that
finds the group reports the copy against every edition in it (the verifier aligns each
one, so a wrongly grouped mother costs time, never a wrong answer).

Which group a new mother joins: its *sketch* is its ``SKETCH`` fingerprints of smallest
mix (a bottom-k sample: near-identical sets share most of it, unrelated ones almost none).
A group is its edition when the group holds at least ``SHARE`` of the sketch (looked up in
the index, and among the mothers of the same batch or bulk load) and the group's first
mother has about as many fingerprints (``SIZE_RATIO``): a chapter of a book is held by
the book but is not an edition of it. Fingerprints are taken at fixed offsets, so
"near-identical" here means what could stop each other's fingerprints out: the same
initials at the same phase (homophones, same-length edits); a copy shifted by an insertion
has other fingerprints and never collided.

Registry (single-key commands, so usable on Redis Cluster): one Redis hash per 256 seqs
(``{prefix}:ed:{seq >> 8}``) holds ``n{seq}``, the fingerprint count of a group's first
mother, and ``m{seq}``, the group of a mother that joined another's; the hash
``{prefix}:ed:groups`` holds, per group of more than one mother, its members' seqs
(packed little-endian uint32), so that a check asks for the editions of all its
candidates in one HMGET. An index
written before editions has no registry: every mother is its own group until
``yinji index rebuild``.

Concurrent writers: a group dies when its last member leaves, and its postings are then
removed. A writer that chose the group (its postings found by a lookup) just before
must not join it afterwards: its mother's postings, written under the group's id, would
be removed with the dead group's (a current work never found again), or the join would
bring the group back with a dead first member and its postings would never go. So the
last member out leaves a tombstone ``x{seq}`` in the groups hash, in the same script;
a join meets it and the mother becomes a group of its own (``register``). A member that
left keeps ``l{seq}`` (its group), so that a second removal of it (its own writer's,
after a late add) removes from the right group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tracker.indexes.keys import mix64
from tracker.indexes.redis_client import delete_matching

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient

SKETCH = 8  # fingerprints in a mother's sketch
SHARE = 6  # of them a group must hold (of fewer, all but a quarter)
SIZE_RATIO = 0.8  # the smaller fingerprint count over the larger, at least
SHARD_BITS = 8  # seqs per registry hash: 2**8 (a compact listpack in Redis)

# KEYS[1]: the groups hash. ARGV: the group (its field), its packed seq, the member's,
# the group's tombstone field. Adds the member (the group's own seq first when the list
# is new); 1 if it was new, -1 (nothing written) if the group is dead.
_JOIN = """
if redis.call('HEXISTS', KEYS[1], ARGV[4]) == 1 then return -1 end
local v = redis.call('HGET', KEYS[1], ARGV[1]) or ARGV[2]
for i = 1, #v, 4 do
  if string.sub(v, i, i + 3) == ARGV[3] then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], v .. ARGV[3])
return 1
"""

# KEYS[1]: the groups hash. ARGV: the group (its field), its packed seq, the member's,
# the group's tombstone field. Removes the member; returns how many members are left (a
# group without a list is its own seq alone). A list of the group's own seq alone is
# not kept. The last member out leaves the group's tombstone; a dead group has none left.
_LEAVE = """
if redis.call('HEXISTS', KEYS[1], ARGV[4]) == 1 then return 0 end
local v = redis.call('HGET', KEYS[1], ARGV[1]) or ARGV[2]
local kept = {}
for i = 1, #v, 4 do
  local s = string.sub(v, i, i + 3)
  if s ~= ARGV[3] then kept[#kept + 1] = s end
end
if #kept == 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HSET', KEYS[1], ARGV[4], 1)
elseif #kept == 1 and kept[1] == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], table.concat(kept))
end
return #kept
"""


def distinct(fps: np.ndarray) -> np.ndarray:
    """The distinct fingerprints (a mother's usually are already: sorted and unique)."""
    fps = np.asarray(fps, dtype=np.uint64)
    if fps.size < 2 or bool(np.all(fps[1:] > fps[:-1])):
        return fps
    return np.unique(fps)


def sketch(fps: np.ndarray) -> np.ndarray:
    """The ``SKETCH`` distinct fingerprints of smallest mix (all of them when fewer)."""
    uniq = distinct(fps)
    if uniq.size <= SKETCH:
        return uniq
    return uniq[np.argpartition(mix64(uniq), SKETCH - 1)[:SKETCH]]


def needed(k: int) -> int:
    """Sketch fingerprints a group must hold for a sketch of ``k``."""
    return min(SHARE, max(1, k - k // 4))


def _packed(seq: int) -> bytes:
    return int(seq).to_bytes(4, "little")


@dataclass
class Seen:
    """Groups formed so far in one batch or bulk load (not yet in the index):
    ``holders[fingerprint]``: the groups whose mothers' sketches hold it; ``sizes[group]``."""

    holders: dict[int, int | set[int]] = field(default_factory=dict)  # (one: an int)
    sizes: dict[int, int] = field(default_factory=dict)

    def of(self, fp: int) -> set[int]:
        got = self.holders.get(fp)
        return set() if got is None else {got} if isinstance(got, int) else got

    def add(self, fp: int, group: int) -> None:
        got = self.holders.get(fp)
        if got is None:
            self.holders[fp] = group
        elif isinstance(got, int):
            if got != group:
                self.holders[fp] = {got, group}
        else:
            got.add(group)


class Editions:
    """The edition registry of one inverted index (key prefix ``prefix``)."""

    def __init__(self, redis: RedisClient, prefix: str) -> None:
        # Typed loosely inside: redis-py's stubs of RedisCluster lack register_script.
        self.redis: Any = cast(Any, redis)
        self.prefix = prefix
        self._join = self.redis.register_script(_JOIN)
        self._leave = self.redis.register_script(_LEAVE)

    def key(self, seq: int) -> str:
        return f"{self.prefix}:ed:{int(seq) >> SHARD_BITS}"

    @property
    def groups_key(self) -> str:
        return f"{self.prefix}:ed:groups"

    def clear(self) -> int:
        return delete_matching(self.redis, f"{self.prefix}:ed:*")

    def stats(self) -> dict[str, int]:
        """``edition_keys`` (registry hashes) and ``edition_mothers`` (mothers that joined
        another's group: posted under it, not under their own seq)."""
        keys = joined = 0
        for key in self.redis.scan_iter(match=f"{self.prefix}:ed:*", count=1000):
            keys += 1
            if key not in (self.groups_key, self.groups_key.encode()):
                joined += sum(1 for f in self.redis.hkeys(key) if f.startswith(b"m"))
        return {"edition_keys": keys, "edition_mothers": joined}

    # -- reads ----------------------------------------------------------------------
    def _hget_many(self, fields: list[tuple[int, str]]) -> list[Any]:
        if not fields:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for seq, name in fields:
            pipe.hget(self.key(seq), name)
        return list(pipe.execute())

    def members(self, groups: Sequence[int]) -> dict[int, list[int]]:
        """Each group's mothers (a group of one: itself), first mother first."""
        groups = [int(g) for g in groups]
        got = self.redis.hmget(self.groups_key, groups) if groups else []
        out: dict[int, list[int]] = {}
        for g, v in zip(groups, got, strict=True):
            out[int(g)] = np.frombuffer(v, dtype="<u4").tolist() if v else [int(g)]
        return out

    def group_of(self, seqs: Sequence[int]) -> dict[int, int]:
        """The group of each mother (its own seq unless it joined another's)."""
        got = self._hget_many([(s, f"m{s}") for s in seqs])
        return {int(s): int(v) if v else int(s) for s, v in zip(seqs, got, strict=True)}

    def _registered(self, seqs: list[int]) -> tuple[dict[int, int], dict[int, int]]:
        """(the group of each mother, as ``group_of``; the fingerprint counts of those
        that are a group's first mother): one HMGET per registry hash (a batch's seqs
        share one or two), not a command per mother."""
        shards: dict[int, list[int]] = {}
        for seq in seqs:
            shards.setdefault(seq >> SHARD_BITS, []).append(seq)
        before = {seq: seq for seq in seqs}
        primary: dict[int, int] = {}
        if not seqs:
            return before, primary
        pipe = self.redis.pipeline(transaction=False)
        for shard, members in shards.items():
            fields = [f"{kind}{seq}" for seq in members for kind in ("m", "n")]
            pipe.hmget(self.key(shard << SHARD_BITS), fields)
        for members, got in zip(shards.values(), pipe.execute(), strict=True):
            for i, seq in enumerate(members):
                group, size = got[2 * i], got[2 * i + 1]
                if group:
                    before[seq] = int(group)
                elif size is not None:
                    primary[seq] = int(size)
        return before, primary

    def sizes(self, groups: Iterable[int]) -> dict[int, int]:
        """The fingerprint counts of groups' first mothers that are known."""
        groups = list(groups)
        got = self._hget_many([(g, f"n{g}") for g in groups])
        return {int(g): int(v) for g, v in zip(groups, got, strict=True) if v is not None}

    # -- assigning ------------------------------------------------------------------
    def assign(
        self,
        items: list[tuple[int, np.ndarray]],
        lookup: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, int]] | None,
        seen: Seen | None = None,
    ) -> list[int]:
        """The group of each new mother ``(seq, fingerprints)``, in order, registered
        before any of its postings is written. ``lookup``: the index's (None: an empty
        index, only ``seen`` counts); ``seen``: groups of this batch or load so far
        (updated here)."""
        seen = seen if seen is not None else Seen()
        # A mother registered before keeps its group: a redelivered task, or a bulk load
        # (``lookup`` None) meeting one that a concurrent writer added after the load's
        # index was cleared (its postings are under that group already).
        before, primary = self._registered([int(seq) for seq, _ in items])
        sketches = [sketch(fps) for _, fps in items]
        # Per item and sketch fingerprint: the groups in the index holding it.
        held: list[list[set[int]]] = [[set() for _ in range(s.size)] for s in sketches]
        if lookup is not None and items:
            flat = np.concatenate(sketches)
            owner = np.repeat(np.arange(len(items)), [s.size for s in sketches])
            place = np.concatenate([np.arange(s.size) for s in sketches])
            uniq, inverse = np.unique(flat, return_inverse=True)
            fp_index, groups, _ = lookup(uniq)
            by_fp: dict[int, list[int]] = {}
            for f, g in zip(fp_index.tolist(), groups.tolist(), strict=True):
                by_fp.setdefault(f, []).append(g)
            for i, k, f in zip(owner.tolist(), place.tolist(), inverse.tolist(), strict=True):
                held[i][k].update(by_fp.get(f, ()))
        known = seen.sizes.copy()
        wanted = {g for h in held for gs in h for g in gs if g not in known}
        known.update(self.sizes(wanted))
        out: list[int] = []
        for i, ((seq, fps), sk) in enumerate(zip(items, sketches, strict=True)):
            if before[seq] != seq or seq in primary:
                out.append(before[seq])
                continue
            counts: dict[int, int] = {}  # group -> sketch fingerprints it holds
            for k, f in enumerate(sk.tolist()):
                for g in held[i][k] | seen.of(f):
                    counts[g] = counts.get(g, 0) + 1
            n = int(distinct(fps).size)
            group = int(seq)
            need = needed(sk.size)
            for g, c in sorted(counts.items(), key=lambda gc: (-gc[1], gc[0])):
                if c < need:
                    break
                size = known.get(g)
                if g != seq and size and min(size, n) >= SIZE_RATIO * max(size, n):
                    group = g
                    break
            out.append(group)
            # Later mothers of this batch or load see the group (and its size).
            seen.sizes[group] = known[group] = known.get(group) or n
            for f in sk.tolist():
                seen.add(f, group)
        new = [i for i, (seq, _) in enumerate(items) if before[int(seq)] == int(seq)]
        registered = self.register([items[i] for i in new], [out[i] for i in new])
        for i, got in zip(new, registered, strict=True):
            out[i] = got
        return out

    def register(self, items: list[tuple[int, np.ndarray]], groups: list[int]) -> list[int]:
        """Write the registry of new mothers: a group's size, a member's group and the
        group's member list. Returns the groups as registered: a mother whose group died
        since it was chosen (its last member left, ``leave``) is a group of its own."""
        final = [int(g) for g in groups]
        for i, ((seq, _), group) in enumerate(zip(items, final, strict=True)):
            if group != seq and not self._joined(group, int(seq)):
                final[i] = int(seq)
        pipe = self.redis.pipeline(transaction=False)
        for (seq, fps), group in zip(items, final, strict=True):
            if group == seq:
                n = int(distinct(fps).size)
                pipe.hset(self.key(seq), f"n{seq}", n)
            else:
                pipe.hset(self.key(seq), f"m{seq}", group)
        pipe.execute()
        return final

    def _joined(self, group: int, seq: int) -> bool:
        """``seq`` added to ``group``'s members; False if the group is dead (joining it
        would bring it back while its last member's postings are being removed)."""
        args = [group, _packed(group), _packed(seq), f"x{group}"]
        return int(self._join(keys=[self.groups_key], args=args)) >= 0

    def leave(self, seq: int) -> tuple[int, int]:
        """Take a mother out of its group: ``(group, members left)``; 0 left: the group
        is dead (for good: nobody joins it again) and its postings are to go, also when
        it died before (a mother removed twice, e.g. by the writer that replaced it and
        by the one that added it too late). A member's group stays known (``l{seq}``)
        for such a second removal; a group's size goes with its last member."""
        got = self.redis.hmget(self.key(seq), [f"m{seq}", f"l{seq}"])
        group = next((int(v) for v in got if v), int(seq))
        args = [group, _packed(group), _packed(seq), f"x{group}"]
        left = int(self._leave(keys=[self.groups_key], args=args))
        pipe = self.redis.pipeline(transaction=False)
        if group != seq:
            pipe.hdel(self.key(seq), f"m{seq}")
            pipe.hset(self.key(seq), f"l{seq}", group)
        if left == 0:
            pipe.hdel(self.key(group), f"n{group}")
        pipe.execute()
        return group, left
