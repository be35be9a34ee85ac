"""The Redis inverted index: fingerprint -> mothers (by seq), the daguan engine's index.

Entries (``tracker.indexes.base.Index``) are ``(seq, fingerprints)``: a mother and the
uint64 array of its fingerprints; a *posting* is one (fingerprint, seq) pair.

Modules: the key layout in ``tracker.indexes.keys``, the layout as stored, versions and
move marks in ``tracker.indexes.layout`` (``BucketLayout``, this index's base), the
stored values in ``tracker.indexes.codec`` (with its Lua twin ``lua/codec.lua``), the Lua
scripts as package data in ``tracker/indexes/lua`` (``tracker.indexes.scripts``), bulk
loads in ``tracker.indexes.bulk`` (which builds on this module; this one does not import
it); this module is the index itself: adds, removes, lookups, reshards.

Layout, chosen for memory (10-11 bytes a posting at every size, see
docs/BENCHMARKS.md, section Scale, and docs/SCALING.md):

- A fingerprint (uint64) is mixed by a bijective 64-bit hash (splitmix64); its top
  ``IDENTITY_BITS`` (41) are its *identity*. The identity's top ``bucket_bits`` choose a
  bucket, the rest is the *field* (big-endian, in the fewest whole bytes: 4 bytes below
  2**17 buckets, 3 from there on). Bucket and field together are the identity, so the
  index reshards to any bucket count from its own contents (``reshard``).
- Each bucket is one Redis HASH ``{prefix}:b{bits}v2:{bucket}``; the value of a field
  holds the seqs of the mothers having that fingerprint, a single seq (most fields) as
  decimal digits that Redis stores as a small integer (format 2,
  ``tracker.indexes.codec``; indexes written before it keep packed seqs under
  ``{prefix}:b{bits}:`` until a reshard). Redis
  keeps a hash as a compact listpack/ziplist (no per-entry pointers) up to 512 entries
  (``hash-max-ziplist-entries``, values <= 64 bytes): the bucket count grows with the
  library so that a bucket holds ~192 fields (``TARGET_FIELDS``), resharding before
  one would pass ``RESHARD_FIELDS``. Past 512 every bucket would become a hashtable and
  a posting would cost ~7x more (the old fixed 16,384 buckets at 100 M characters).
- The layout (bucket bits / identity bits) and a field count live in the hash
  ``{prefix}:layout``; an index written before layouts were kept (2**14 buckets
  ``{prefix}:b:{bucket}``, 46-bit identities) is read as such and resharded on request.
- A fingerprint found in more than ``stop_df`` mothers is replaced by a stop marker
  (a zero byte, then its first 4 holders: ``tracker.indexes.codec``): it is boilerplate
  (且听下回分解, legal formulas) and must not make matches on its own; queries skip it
  (only a long run of them proposes the holders kept, ``tracker.engines.daguan``).
  ``index rebuild`` recomputes stop markers. An index with ``editions`` (the daguan
  engine's) posts identical or near-identical mothers under one id, so that it counts
  distinct texts (``tracker.indexes.editions``).

Every write touches one key on Redis Cluster: the bucket Lua scripts declare their one
key (on a cluster they are sent as EVAL, which redis-py's cluster pipeline routes by
that key; it refuses pipelined Script objects), and lookups are pipelined HGETs, each
routed to its bucket's node. On a single server, adds and lookups name their keys inside
one Lua call per ~32,000 postings / per query (packing thousands of keys in redis-py
was the cost), and check the layout first so that a reshard meanwhile is noticed and
the call redone. Adds and removes are idempotent, so a redelivered ingest task writes no
duplicate posting.

Bulk loads (``bulk.load``, ``BulkLoader``: ``index rebuild``, and an ingest into an empty
index) write each field once with its final value, the same index byte for byte as adds
in the same order make (``tracker.indexes.bulk``).

Versions: ``{prefix}:version`` (an ``epoch`` made at the first write, and ``n``) is
raised before and after every write (adds, removes, reshards; clear removes it), so a
reader that saw the same version twice saw no write in between, and a copy of the index taken at a
version (``tracker.indexes.snapshot``) answers exactly as Redis does while the version
stays. The epoch tells a Redis emptied and written again from the same ``n``; a Redis
restarted from an older save brings back the version that its buckets had. Both raises
of a write also mark the buckets it touches in the snapshot overlay's bitmap
(``lua/mark.lua``), so that a snapshot keeps answering for the buckets not written since.

Writes and reshards: a reshard marks the index as moving (``{prefix}:moving``, with a
TTL it keeps refreshing, so a dead reshard frees writers within a minute), copies every
bucket, switches the layout, then drops the old buckets. A write that landed in an old
bucket already copied would be lost, so no write is trusted across a move: the
single-server add refuses inside its Lua call while the index moves or when the layout
is not the one it was packed for; every other write (removes, and every write on Redis
Cluster, where the layout and the buckets live on different nodes and one script cannot
read both) re-reads the layout and the move mark after its replies, and is redone with
the new layout if a move started or finished meanwhile (writes are idempotent). A move
that starts after that check copies buckets that already hold the write.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from tracker.common.records import JSONObject, json_int
from tracker.indexes import appends
from tracker.indexes.codec import (
    FORMAT,
    decode_value,
    encode_value,
    is_stop,
    packed_seqs,
    parse_values,
    stop_sample,
    stop_value,
)
from tracker.indexes.editions import Editions, Seen
from tracker.indexes.keys import (
    IDENTITY_BITS,
    MAX_BITS,
    MIN_BITS,
    RESHARD_FIELDS,
    bits_for,
    field_width,
    layout_name,
    pack_fields,
    split_identity,
    unpack_fields,
)
from tracker.indexes.layout import MOVE_TTL_MS, BucketLayout, Pairs, distinct
from tracker.indexes.redis_client import delete_matching
from tracker.indexes.scripts import lua
from tracker.indexes.tail import merged_value, tail_prefix, union
from tracker.indexes.temporary import sweep_temporary
from tracker.indexes.ziplist import ServerForm, probe

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient


class RedisInvertedIndex(BucketLayout):
    """fingerprint (uint64) -> set of seqs (uint32), in bucketed Redis hashes.

    A fingerprint's *identity* is the top ``ident_bits`` of its mix; the top
    ``bucket_bits`` of the identity name the bucket, the rest is the field (stored
    big-endian in the fewest whole bytes). Both together are the identity, so the
    index can be resharded to any bucket count from its own contents (``reshard``).
    The current bucket bits live in Redis (hash ``{prefix}:layout``: ``bits``, and
    ``fields`` counted by adds) beside the buckets (``tracker.indexes.layout``),
    so every process reads the same layout; ``bucket_bits`` is the layout of a new
    index (None: the smallest, grown by ``grow`` as postings come). Bulk loads:
    ``tracker.indexes.bulk``.
    """

    def __init__(
        self,
        redis: RedisClient,
        prefix: str,
        *,
        bucket_bits: int | None = None,
        stop_df: int = 16,
        editions: bool = False,
    ) -> None:
        super().__init__(redis, prefix, bucket_bits=bucket_bits)
        self.stop_df = stop_df
        self._add = self.redis.register_script(lua("add"))
        self._add_many = self.redis.register_script(lua("add_many"))
        self._remove = self.redis.register_script(lua("remove"))
        self._lookup = self.redis.register_script(lua("lookup"))
        self._settle = self.redis.register_script(lua("settle"))
        self._fill = self.redis.register_script(lua("fill"))
        self._size = self.redis.register_script(lua("size"))
        # Identical or near-identical mothers posted as one text (``editions``: the
        # daguan engine's index): None for a plain index of seqs.
        self.editions = Editions(redis, prefix) if editions else None
        # Whole-bucket appends (``tracker.indexes.appends``): False until the server is
        # probed at the first add, None where they cannot be used (Redis Cluster too).
        self._appends: appends.BucketAppends | bool | None = None if self._cluster else False
        self._form: ServerForm | bool | None = None if self._cluster else False
        self.appended_buckets = 0  # buckets written whole so far (for benchmarks, tests)
        self._tails: dict[int, RedisInvertedIndex] = {}  # tail segments opened, by number

    def tail(self, number: int) -> RedisInvertedIndex:
        """Tail segment ``number`` of this index (``tracker.indexes.tail``): an index
        of its own, posted under this one's edition groups."""
        segment = self._tails.get(number)
        if segment is None:
            segment = RedisInvertedIndex(
                self.redis, tail_prefix(self.prefix, number), stop_df=self.stop_df
            )
            self._tails[number] = segment
        return segment

    def drop_recordings(self) -> None:
        """What ``start_recording`` kept, here and in the tail segments opened, dropped."""
        for index in (self, *self._tails.values()):
            index.recording = None

    def tails(self) -> list[RedisInvertedIndex]:
        """The tail segments lookups read now, oldest first."""
        numbers = sorted(int(x) for x in self.redis.smembers(self.tails_key))
        return [self.tail(n) for n in numbers]

    def server_form(self) -> ServerForm | None:
        """How this index's server serializes a small hash (``tracker.indexes.ziplist``),
        probed once: None on Redis Cluster, for an index in an older format, or where
        the form cannot be used (listpacks, compressed DUMPs, CONFIG refused)."""
        if self._form is False:
            self._form = None if self.fmt != FORMAT else probe(self.redis, self.layout_key)
        return self._form if isinstance(self._form, ServerForm) else None

    # -- writes ---------------------------------------------------------------
    def _grouped(self, items: Iterable[tuple[int, np.ndarray]] | Pairs) -> dict[int, bytes]:
        """bucket -> its postings packed as (field, 4-byte seq) records."""
        bucket_parts: list[np.ndarray] = []
        field_parts: list[np.ndarray] = []
        seq_parts: list[np.ndarray] = []
        if isinstance(items, Pairs):  # (identity, seq) pairs, as a bulk load gathers them
            b, f = split_identity(items.ident, self.bucket_bits, self.ident_bits)
            bucket_parts, field_parts = [b], [f]
            seq_parts = [items.seqs.astype("<u4")]
            items = ()
        for seq, fps in items:
            uniq = distinct(fps)
            if uniq.size == 0:
                continue
            b, f = self.locate(uniq)
            bucket_parts.append(b)
            field_parts.append(f)
            seq_parts.append(np.full(uniq.size, seq, dtype="<u4"))
        if not bucket_parts or not bucket_parts[0].size:
            return {}
        buckets = np.concatenate(bucket_parts)
        order = np.argsort(buckets, kind="stable")
        buckets = buckets[order]
        fw = self.field_bytes
        records = np.empty((buckets.size, fw + 4), dtype=np.uint8)
        records[:, :fw] = pack_fields(np.concatenate(field_parts)[order], fw)
        records[:, fw:] = np.concatenate(seq_parts)[order].view(np.uint8).reshape(-1, 4)
        blob = records.tobytes()
        rw = fw + 4
        bounds = np.flatnonzero(np.diff(buckets)) + 1
        starts = np.concatenate([[0], bounds]).tolist()
        ends = np.concatenate([bounds, [buckets.size]]).tolist()
        return {int(buckets[a]): blob[rw * a : rw * z] for a, z in zip(starts, ends, strict=True)}

    def add(self, items: Iterable[tuple[int, np.ndarray]], *, chunk: int = 2000) -> int:
        """Add postings ``(seq, fingerprints)``; returns how many were new. With
        ``editions``, a mother is posted under its edition group's id."""
        items = self._posted(list(items))
        if not self._cluster:  # (the cluster path waits in _guarded_write)
            self.wait_for_move()
        self.refresh()
        self.redis.hsetnx(self.layout_key, "layout", self.layout)
        recording = self.recording
        if recording is not None:
            parts = [(self.identities(distinct(fps)), seq) for seq, fps in items]
            recording.added(
                np.concatenate([p for p, _ in parts] or [np.zeros(0, np.uint64)]),
                np.concatenate(
                    [np.full(p.size, seq, np.uint32) for p, seq in parts]
                    or [np.zeros(0, np.uint32)]
                ),
            )
        with self._writing(self.touched(items), loading=recording is not None and recording.adds):
            if self._cluster:
                replies = self._guarded_write(
                    self._add, items, lambda: [self.stop_df, self.field_bytes], chunk
                )
            else:
                replies = self._add_sorted(items)
        new_fields = sum(int(r[1]) for r in replies)
        if new_fields:
            self.redis.hincrby(self.layout_key, "fields", new_fields)
        return sum(int(r[0]) for r in replies)

    def _posted(
        self, items: list[tuple[int, np.ndarray]], seen: Seen | None = None, *, look: bool = True
    ) -> list[tuple[int, np.ndarray]]:
        """New mothers as they are posted: under their edition group's id (registered
        first, ``tracker.indexes.editions``), or as they are in a plain index."""
        if self.editions is None or not items:
            return items
        groups = self.editions.assign(items, self.lookup if look else None, seen)
        return [(g, fps) for g, (_, fps) in zip(groups, items, strict=True)]

    def members(self, posted: list[int]) -> dict[int, list[int]]:
        """The mothers behind posted ids (lookup's seqs): an edition group's members,
        else the seq itself."""
        if self.editions is None:
            return {int(s): [int(s)] for s in posted}
        return self.editions.members(posted)

    def _withdrawn(self, items: list[tuple[int, np.ndarray]]) -> list[tuple[int, np.ndarray]]:
        """Mothers to remove, as their postings go: a mother whose edition group keeps
        other members takes none away (they share them), the last one takes the group's."""
        if self.editions is None:
            return items
        out = []
        for seq, fps in items:
            group, left = self.editions.leave(int(seq))
            if left == 0:
                out.append((group, fps))
        return out

    def _add_sorted(self, items: list[tuple[int, np.ndarray]], per_call: int = 32_768) -> list[Any]:
        """Single server: the batch's postings sorted by bucket; first appended to whole
        buckets where that is cheaper (``tracker.indexes.appends``), the rest ``per_call``
        a script call, pipelined; redone with the new layout if a reshard came between
        (adds are idempotent: what was appended counts once)."""
        keys = [self.layout_key, self.moving_key]
        appended: list[Any] = []
        for attempt in range(5):
            blob, rw = self._records(items)
            if attempt == 0 and blob:
                appended, blob = self._append_whole(blob, rw)
            pipe = self.redis.pipeline(transaction=False)
            args = [self.layout, self.stop_df, self.field_bytes, self.key_prefix()]
            step = rw * per_call
            for a in range(0, len(blob), step):
                self._add_many(keys=keys, args=[*args, blob[a : a + step], self.fmt], client=pipe)
            replies = pipe.execute() if blob else []
            if all(int(r[0]) >= 0 for r in replies):
                return appended + replies
            # Resharded or resharding meanwhile; adds are idempotent: redo them all.
            self.wait_for_move()
            self.refresh()
        raise RuntimeError(f"the layout of index {self.prefix} keeps changing; try again")

    def _append_whole(self, blob: bytes, rw: int) -> tuple[list[Any], bytes]:
        """Append what whole-bucket appends can take of the records ``blob``: (their
        reply as the script's ``[postings, fields]``, the records left for the script)."""
        if self._appends is False:
            form = self.server_form()
            self._appends = (
                None if form is None else appends.BucketAppends(self.redis, form, self.stop_df)
            )
        if not isinstance(self._appends, appends.BucketAppends) or self.fmt != FORMAT:
            return [], blob
        rec = np.frombuffer(blob, dtype=np.uint8).reshape(-1, rw)
        guard = (self.layout_key, self.moving_key, self.layout)
        done = self._appends.append(rec, self.field_bytes, self.key_prefix(), guard)
        self.appended_buckets += done.buckets
        return [[done.postings, done.fields]], done.leftover.tobytes()

    def _records(self, items: list[tuple[int, np.ndarray]]) -> tuple[bytes, int]:
        """(uint32 LE bucket, field, seq) records sorted by bucket, and their width."""
        fw = self.field_bytes
        parts_b, parts_f, parts_s = [], [], []
        for seq, fps in items:
            uniq = distinct(fps)
            if uniq.size == 0:
                continue
            b, f = self.locate(uniq)
            parts_b.append(b)
            parts_f.append(f)
            parts_s.append(np.full(uniq.size, seq, dtype="<u4"))
        if not parts_b:
            return b"", fw + 8
        buckets = np.concatenate(parts_b)
        order = np.argsort(buckets, kind="stable")
        rec = np.empty((buckets.size, fw + 8), dtype=np.uint8)
        rec[:, :4] = buckets[order].astype("<u4").view(np.uint8).reshape(-1, 4)
        rec[:, 4 : 4 + fw] = pack_fields(np.concatenate(parts_f)[order], fw)
        rec[:, 4 + fw :] = np.concatenate(parts_s)[order].view(np.uint8).reshape(-1, 4)
        return rec.tobytes(), fw + 8

    # -- emptiness and removes ---------------------------------------------------
    def is_empty(self) -> bool:
        """No field counted and no bucket under this prefix (the scan stops at the first
        key found, so it is cheap on a full index too). Temporary keys of bulk loads that
        died are deleted first (``tracker.indexes.temporary``)."""
        if self.fields_estimate() or self.redis.scard(self.tails_key):
            return False
        if not self._cluster:  # (temporary keys are a single server's)
            sweep_temporary(self.redis, self.prefix)
        for _ in self.redis.scan_iter(match=f"{self.prefix}:b*", count=1000):
            return False
        return True

    def remove_pairs(self, ident: np.ndarray, seqs: np.ndarray, *, chunk: int = 2000) -> int:
        """``remove`` of (identity, seq) pairs (a bulk load taking back mothers replaced
        meanwhile); returns how many postings there were."""
        if ident.size == 0:
            return 0
        self.refresh()
        with self._writing(self.touched(Pairs(ident, seqs))):
            replies = self._guarded_write(
                self._remove, Pairs(ident, seqs), lambda: [self.field_bytes], chunk
            )
        gone = sum(int(r[1]) for r in replies)
        if gone:
            self.redis.hincrby(self.layout_key, "fields", -gone)
        removed = sum(int(r[0]) for r in replies)
        return removed + sum(t.remove_pairs(ident, seqs, chunk=chunk) for t in self.tails())

    def remove(self, items: Iterable[tuple[int, np.ndarray]], *, chunk: int = 2000) -> int:
        """Remove postings ``(seq, fingerprints)``; returns how many there were."""
        items = self._withdrawn(list(items))
        self.refresh()
        with self._writing(self.touched(items)):
            replies = self._guarded_write(self._remove, items, lambda: [self.field_bytes], chunk)
        gone = sum(int(r[1]) for r in replies)
        if gone:
            self.redis.hincrby(self.layout_key, "fields", -gone)
        removed = sum(int(r[0]) for r in replies)
        # (a tail segment's postings are posted as this index's: removed as they are)
        return removed + sum(t.remove(items, chunk=chunk) for t in self.tails())

    def _guarded_write(
        self,
        script: Any,
        items: list[tuple[int, np.ndarray]] | Pairs,
        args: Any,
        chunk: int,
    ) -> list[Any]:
        """``_write`` with the current layout, checked afterwards and redone (after the
        reshard) if a reshard started or finished meanwhile; ``args()`` gives the
        script's arguments for the current layout."""
        for _ in range(5):
            self.wait_for_move()
            self.refresh()
            used = self.layout
            replies = self._write(script, items, args(), chunk)
            if self._layout_held(used):
                return replies
        raise RuntimeError(f"the layout of index {self.prefix} keeps changing; try again")

    def _write(
        self,
        script: Any,
        items: Iterable[tuple[int, np.ndarray]] | Pairs,
        args: list[Any],
        chunk: int,
    ) -> list[Any]:
        """Run a bucket script once per touched bucket (its postings packed as the last
        argument), ``chunk`` calls per pipeline; the scripts' replies."""
        replies: list[Any] = []
        pipe = self.redis.pipeline(transaction=False)
        pending = 0
        for bucket, blob in self._grouped(items).items():
            key = self.bucket_key(bucket)
            if self._cluster:
                pipe.execute_command("EVAL", script.script, 1, key, *args, blob, self.fmt)
            else:
                script(keys=[key], args=[*args, blob, self.fmt], client=pipe)
            pending += 1
            if pending >= chunk:
                replies += pipe.execute()
                pending = 0
        if pending:
            replies += pipe.execute()
        return replies

    # -- reads ----------------------------------------------------------------
    def lookup(
        self, fps: np.ndarray, *, stop_mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Postings of distinct fingerprints.

        Returns ``(fp_index, seqs, stopped)``: parallel arrays where ``seqs[i]`` is a
        mother holding ``fps[fp_index[i]]``, and how many fingerprints were stop words
        (marked in ``stop_mask``, a bool array of ``fps.size``, when given).
        """
        fps = np.asarray(fps, dtype=np.uint64)
        if fps.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32), 0
        for _ in range(5):
            values, fmt, tails = self._values(fps)
            if not tails:
                return parse_values(values, fmt, stop_mask)
            # With tail segments: the union of this index's postings and theirs.
            mask = np.zeros(fps.size, dtype=bool)
            parts = [(parse_values(values, fmt, mask), mask)]
            for number in tails:
                mask = np.zeros(fps.size, dtype=bool)
                parts.append((self.tail(number).lookup(fps, stop_mask=mask), mask))
            # A segment dropped since this index was read (a merge ended) may have been
            # read empty while its mothers came into this index after it was read: the
            # index is read again (``tails_held``).
            if self.tails_held(tails):
                return union(fps.size, parts, self.stop_df, stop_mask)
        raise RuntimeError(f"the tail segments of index {self.prefix} keep changing; try again")

    def tails_held(self, numbers: Iterable[int]) -> bool:
        """Whether the tail segments ``numbers``, read by a lookup, are all still read
        by lookups: none was dropped (``tracker.indexes.tail.drop``: out of the set
        first, its keys after) while the lookup read it."""
        held = {int(x) for x in self.redis.smembers(self.tails_key)}
        return held.issuperset(numbers)

    def stop_samples(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The holders stop markers kept (``tracker.indexes.codec.SAMPLE``) for distinct
        fingerprints: ``(fp_index, seqs)`` as ``lookup`` gives postings, for the stopped
        ones only (always read from Redis; snapshots do not copy them)."""
        fps = np.asarray(fps, dtype=np.uint64)
        if fps.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32)
        for _ in range(5):  # (read again when a segment was dropped meanwhile: ``lookup``)
            values, fmt, tails = self._values(fps)
            for number in tails:  # a segment's holders after this index's, as adds make them
                more, _, _ = self.tail(number)._values(fps)
                values = [
                    merged_value(a, b, self.stop_df, fmt) for a, b in zip(values, more, strict=True)
                ]
            if not tails or self.tails_held(tails):
                break
        at: list[int] = []
        seqs: list[int] = []
        for i, v in enumerate(values):
            if v and is_stop(v) and len(v) > 1:
                held = stop_sample(v)
                at += [i] * len(held)
                seqs += held
        return np.asarray(at, dtype=np.int64), np.asarray(seqs, dtype=np.uint32)

    def _values(self, fps: np.ndarray) -> tuple[list[Any], int, list[int]]:
        """The stored value (or None) of each fingerprint's field, their format, and
        the tail segments that lookups also read (``tracker.indexes.tail``)."""
        for _ in range(3):
            buckets, fields = self.locate(fps)
            fw = self.field_bytes
            packed = pack_fields(fields, fw)
            if self._cluster:  # buckets live on several nodes: one HGET each, routed
                pipe = self.redis.pipeline(transaction=False)
                pipe.hget(self.layout_key, "layout")
                pipe.smembers(self.tails_key)
                for b, f in zip(buckets.tolist(), packed, strict=True):
                    pipe.hget(self.bucket_key(b), f.tobytes())
                got = pipe.execute()
                if got[0] is None or got[0].decode() == self.layout:
                    return list(got[2:]), self.fmt, sorted(int(t) for t in got[1])
            else:
                records = np.empty((fps.size, fw + 4), dtype=np.uint8)
                records[:, :4] = buckets.astype("<u4").view(np.uint8).reshape(-1, 4)
                records[:, 4:] = packed
                reply = self._lookup(
                    keys=[self.layout_key, self.tails_key],
                    args=[self.layout, self.key_prefix(), fw, records.tobytes()],
                )
                if len(reply) == 3:
                    return list(reply[1]), self.fmt, sorted(int(t) for t in reply[2])
            self.refresh()  # resharded meanwhile: ask again with the new layout
        raise RuntimeError(f"the layout of index {self.prefix} keeps changing; try again")

    # -- maintenance ----------------------------------------------------------
    def clear(self) -> int:
        """Delete every bucket and the layout of this index; returns how many keys.
        The next writes start a new index at the initial layout."""
        self._bump_version()  # a reader of the old version stops trusting copies of it
        n = delete_matching(self.redis, f"{self.prefix}:b*")
        # Tail segments, read or not (a load that died before it joined them): the keys
        # under their prefixes and those in their versions' slots.
        self.redis.delete(self.tails_key)
        n += delete_matching(self.redis, f"{self.prefix}:t[0-9]*")
        n += delete_matching(self.redis, f"{{{self.prefix}:t[0-9]*")
        n += self.redis.delete(self.layout_key)
        self.redis.delete(self.dirty_key)
        if self.editions is not None:
            n += self.editions.clear()
        # The next write makes a new epoch: no copy of the cleared index matches it.
        self.redis.delete(self.version_key)
        self.bucket_bits = self.initial_bits if self.initial_bits is not None else MIN_BITS
        self.ident_bits, self.fmt = IDENTITY_BITS, FORMAT
        return n

    def drop_keys(self) -> int:
        """``clear`` by key names, without scanning the server (~0.3 s a scan at 100 M):
        for a tail segment, whose keys are its buckets in its one layout and the keys
        beside them. How many were deleted."""
        self.refresh()
        keys = [self.bucket_key(b) for b in range(1 << self.bucket_bits)]
        keys += [self.layout_key, self.version_key, self.dirty_key, self.tails_key]
        pipe = self.redis.pipeline(transaction=False)
        for key in keys:  # (one key a command: valid on Redis Cluster)
            pipe.unlink(key)
        return sum(int(x) for x in pipe.execute())

    def grow(self, extra: int = 0) -> int | None:
        """Reshard when buckets would hold more than ``RESHARD_FIELDS`` fields after
        ``extra`` more; the new bits or None. On an empty index this moves nothing."""
        fields = self.fields_estimate() + extra
        if fields / (1 << self.refresh()) <= RESHARD_FIELDS:
            return None
        return self.reshard(bits_for(fields))

    def reshard(self, bits: int, *, batch: int = 256) -> int:
        """Move every posting to ``2**bits`` buckets, from the index alone (the bucket
        and field together are the identity; a legacy 46-bit identity is cut to
        ``IDENTITY_BITS``, merging the rare postings that then share one). Callers hold
        the index lock; lookups see the new layout only once every bucket is written,
        and retry by themselves. Values are written in format 2 (an index in format 1
        is converted, also to the same bucket count). Returns bits."""
        if not MIN_BITS <= bits <= MAX_BITS:
            raise ValueError(f"bucket_bits must be in {MIN_BITS}..{MAX_BITS}, got {bits}")
        old, old_ident = self.refresh(), self.ident_bits
        ident = IDENTITY_BITS
        if (bits, ident, FORMAT) == (old, old_ident, self.fmt):
            return bits
        old_fw, new_fw = field_width(old, old_ident), field_width(bits, ident)
        old_keys = [self.bucket_key(b, old, old_ident, self.fmt) for b in range(1 << old)]
        # Writers hold back (or redo) from here until the new layout is in place.
        with self._writing():
            self.redis.set(self.moving_key, layout_name(bits, ident, FORMAT), px=MOVE_TTL_MS)
            try:
                self._copy_buckets(old_keys, old, old_ident, old_fw, bits, ident, new_fw, batch)
                self._switch_layout(bits, ident)
            finally:
                self.redis.delete(self.moving_key)
            pipe = self.redis.pipeline(transaction=False)
            for key in old_keys:
                pipe.unlink(key)
            pipe.execute()
        return bits

    def _switch_layout(self, bits: int, ident: int) -> None:
        self.redis.hset(self.layout_key, "layout", layout_name(bits, ident, FORMAT))
        self.bucket_bits, self.ident_bits, self.fmt = bits, ident, FORMAT

    def _copy_buckets(
        self,
        old_keys: list[str],
        old: int,
        old_ident: int,
        old_fw: int,
        bits: int,
        ident: int,
        new_fw: int,
        batch: int,
    ) -> None:
        """Every posting of the old buckets written to the new ones (in ``FORMAT``)."""
        old_fmt = self.fmt
        for a in range(0, len(old_keys), batch):
            self.redis.pexpire(self.moving_key, MOVE_TTL_MS)
            pipe = self.redis.pipeline(transaction=False)
            for key in old_keys[a : a + batch]:
                pipe.hgetall(key)
            contents = pipe.execute()
            ident_parts, value_parts = [], []
            for i, content in enumerate(contents):
                if not content:
                    continue
                raw = np.frombuffer(b"".join(content.keys()), dtype=np.uint8)
                fields = unpack_fields(raw.reshape(-1, old_fw))
                head = np.uint64(a + i) << np.uint64(old_ident - old)
                ident_parts.append((head | fields) >> np.uint64(old_ident - ident))
                if old_fmt == FORMAT:
                    value_parts.extend(content.values())
                else:
                    value_parts.extend(
                        encode_value(decode_value(v, old_fmt), FORMAT) for v in content.values()
                    )
            if not ident_parts:
                continue
            new_b, new_f = split_identity(np.concatenate(ident_parts), bits, ident)
            packed = pack_fields(new_f, new_fw)
            groups: dict[int, dict[bytes, bytes]] = {}
            for b, f, v in zip(new_b.tolist(), packed, value_parts, strict=True):
                mapping = groups.setdefault(b, {})
                key = f.tobytes()
                mapping[key] = v if key not in mapping else self._merge(mapping[key], v)
            pipe = self.redis.pipeline(transaction=False)
            for b, mapping in groups.items():
                pipe.hset(self.bucket_key(b, bits, ident, FORMAT), mapping=mapping)
            pipe.execute()

    def _merge(self, a: bytes, b: bytes) -> bytes:
        """One posting list of two identities cut to one (both in ``FORMAT``)."""
        sa, sb = decode_value(a, FORMAT), decode_value(b, FORMAT)
        if sa is None or sb is None:
            return a if sa is None else b  # a stop marker, with the holders it kept
        seqs = list(dict.fromkeys([*sa, *sb]))
        return stop_value(seqs) if len(seqs) > self.stop_df else encode_value(seqs, FORMAT)

    def stats(self) -> JSONObject:
        keys = fields = postings = stopped = 0
        nbytes = 0
        self.refresh()
        for key in self.redis.scan_iter(match=f"{self.key_prefix()}*", count=1000):
            keys += 1
            for v in self.redis.hvals(key):
                fields += 1
                if is_stop(v):
                    stopped += 1
                else:
                    postings += len(packed_seqs(v, self.fmt)) // 4
                nbytes += len(v) + self.field_bytes
        return {
            "buckets": keys,
            "fingerprints": fields,
            "postings": postings,
            "stop_fingerprints": stopped,
            "payload_bytes": nbytes,
            "bucket_bits": self.bucket_bits,
            "stop_df": self.stop_df,
            **(self.editions.stats() if self.editions is not None else {}),
            **self._tail_stats(),
            **self.advice(fields),
        }

    def _tail_stats(self) -> JSONObject:
        """The tail segments' count and postings (none: nothing said)."""
        tails = [t.stats() for t in self.tails()]
        if not tails:
            return {}
        return {
            "tail_segments": len(tails),
            "tail_postings": sum(json_int(t["postings"]) for t in tails),
        }
