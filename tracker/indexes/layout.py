"""The layout of a Redis inverted index (``tracker.indexes.inverted``): its bucket
count, identity bits and value format as stored in Redis, the keys they name, the
version raised around every write, the move mark of a reshard, and the snapshot
overlay's dirty buckets (``lua/mark.lua``, ``lua/overlay.lua``, ``lua/rebase.lua``).

``BucketLayout`` is the base of ``RedisInvertedIndex``: what a reader, a writer, a bulk
load (``tracker.indexes.bulk``) and a snapshot (``tracker.indexes.snapshot``) all need to
address buckets and to know that no write came between two reads.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from tracker.common.records import JSONObject
from tracker.indexes.codec import FORMAT
from tracker.indexes.keys import (
    IDENTITY_BITS,
    LEGACY,
    MAX_BITS,
    MIN_BITS,
    RESHARD_FIELDS,
    bits_for,
    bucket_prefix,
    field_width,
    layout_name,
    mix64,
    same_slot,
    split_identity,
)
from tracker.indexes.recording import Recording
from tracker.indexes.scripts import lua

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient


# A reshard's move mark lives this long unless refreshed (after every batch of buckets):
# a reshard that died stops holding writers back within this time.
MOVE_TTL_MS = 60_000
# How long a write waits for a reshard to finish before giving up with an error.
MOVE_WAIT_S = 3600.0


@dataclass(frozen=True)
class OverlayState:
    """What a lookup reads (one script call) to answer from a local snapshot: the
    index's ``version``; ``base`` and ``base_layout``, the snapshot version and layout
    that ``dirty`` (a bitmap of the buckets written since, SETBIT order) counts from,
    None when no snapshot is the base."""

    version: str | None
    base: str | None
    base_layout: str | None
    dirty: bytes
    tails: tuple[int, ...] = ()  # the tail segments lookups read (``tracker.indexes.tail``)

    def dirty_buckets(self) -> int:
        """How many buckets were written since the base."""
        return int(np.unpackbits(np.frombuffer(self.dirty, dtype=np.uint8)).sum())


@dataclass
class Pairs:
    """(identity, seq) postings, identities of ``IDENTITY_BITS`` (a bulk load's unit)."""

    ident: np.ndarray
    seqs: np.ndarray


def distinct(fps: np.ndarray) -> np.ndarray:
    """A mother's fingerprints, each once (uint64): as given when they already are
    (the engines hand them sorted and distinct; sorting them again cost ~2 % of an add)."""
    a = np.asarray(fps, dtype=np.uint64)
    if a.size < 2 or bool(np.all(a[1:] > a[:-1])):
        return a
    return np.unique(a)


class BucketLayout:
    """Where an index's postings live: ``{prefix}:layout`` (``layout``: bucket bits /
    identity bits / format, and ``fields`` counted by writes), the bucket keys it names,
    ``{prefix}:version`` and the move mark (module docstring of
    ``tracker.indexes.inverted``). ``bucket_bits`` is the layout of a new index (None:
    the smallest)."""

    def __init__(self, redis: RedisClient, prefix: str, *, bucket_bits: int | None = None) -> None:
        if bucket_bits is not None and not MIN_BITS <= bucket_bits <= MAX_BITS:
            raise ValueError(f"bucket_bits must be in {MIN_BITS}..{MAX_BITS}, got {bucket_bits}")
        # Typed loosely inside: redis-py's stubs of RedisCluster lack register_script.
        self.redis: Any = cast(Any, redis)
        self.prefix = prefix
        self.initial_bits = bucket_bits
        self._cluster = type(redis).__name__ == "RedisCluster"
        self._mark = self.redis.register_script(lua("mark"))
        self._overlay = self.redis.register_script(lua("overlay"))
        self._rebase = self.redis.register_script(lua("rebase"))
        # What a bulk load or adds wrote, for a snapshot without reading it back (None:
        # not kept; ``start_recording``, ``tracker.indexes.recording``).
        self.recording: Recording | None = None
        self.bucket_bits, self.ident_bits, self.fmt = self._read_layout()

    # -- layout ---------------------------------------------------------------
    @property
    def layout_key(self) -> str:
        return f"{self.prefix}:layout"

    @property
    def moving_key(self) -> str:
        """Exists while a reshard moves the buckets (value: the layout it moves to)."""
        return f"{self.prefix}:moving"

    @property
    def version_key(self) -> str:
        """``epoch`` and ``n``: raised before and after every write (module docstring)."""
        return f"{self.prefix}:version"

    def overlay_state(self) -> OverlayState:
        """The version and the snapshot overlay's base and dirty buckets, read at once
        (``lua/overlay.lua``; ``tracker.indexes.snapshot``)."""
        epoch, n, base, base_layout, dirty, tails = self._overlay(
            keys=[self.version_key, self.dirty_key, self.tails_key], args=[]
        )
        return OverlayState(
            version=None if epoch is None else f"{epoch.decode()}/{int(n or 0)}",
            base=None if base is None else base.decode(),
            base_layout=None if base_layout is None else base_layout.decode(),
            dirty=bytes(dirty or b""),
            tails=tuple(sorted(int(t) for t in tails)),
        )

    def rebase(self, version: str, layout: str) -> bool:
        """Make the snapshot taken at ``version`` in ``layout`` the overlay's base (its
        dirty buckets emptied), unless a write came since: whether it did."""
        done = self._rebase(keys=[self.version_key, self.dirty_key], args=[version, layout])
        return bool(int(done))

    def version(self) -> str | None:
        """The index's version (``epoch/n``), or None before its first write."""
        epoch, n = self.redis.hmget(self.version_key, ["epoch", "n"])
        if epoch is None:
            return None
        return f"{epoch.decode()}/{int(n or 0)}"

    @property
    def tails_key(self) -> str:
        """The set of tail segments lookups read (``tracker.indexes.tail``), in the
        version's hash slot."""
        return same_slot(self.version_key, "tails")

    @property
    def tail_next_key(self) -> str:
        """The counter that numbers tail segments."""
        return same_slot(self.version_key, "tail-next")

    @property
    def dirty_key(self) -> str:
        """The bitmap of buckets written since the snapshot the overlay counts from
        (``tracker.indexes.snapshot``), in the version's hash slot."""
        return same_slot(self.version_key, "dirty")

    def _bump_version(
        self, touched: bytes = b"", layout: str | None = None, *, loading: bool = False
    ) -> None:
        """The version raised, and the buckets of ``touched`` (a bitmap in ``layout``,
        default the current one; empty: any bucket) marked dirty for the snapshot overlay
        (``lua/mark.lua``). ``loading``: a bulk load's write (``recording``)."""
        n = self._mark(
            keys=[self.version_key, self.dirty_key],
            args=[layout or self.layout, touched, uuid.uuid4().hex],
        )
        if self.recording is not None:
            self.recording.bumped(int(n), own=loading)

    def start_recording(self, *, adds: bool = False) -> Recording:
        """Keep the rows of the bulk loads that follow, or (``adds``) the postings of
        the adds that follow (``tracker.indexes.recording``)."""
        version = self.version()
        self.recording = Recording(int(version.split("/")[1]) if version else 0, adds=adds)
        return self.recording

    def touched(self, items: Iterable[tuple[int, np.ndarray]] | Pairs) -> bytes:
        """The buckets that writing ``items`` touches, as a bitmap in SETBIT order."""
        marks = np.zeros(1 << self.bucket_bits, dtype=bool)
        if isinstance(items, Pairs):
            marks[split_identity(items.ident, self.bucket_bits, self.ident_bits)[0]] = True
        else:
            for _, fps in items:
                if len(fps):
                    marks[self.locate(np.asarray(fps, dtype=np.uint64))[0]] = True
        if not marks.any():
            return b"\x00"  # nothing touched (still a known set: the overlay stays)
        return np.packbits(marks).tobytes()

    @contextlib.contextmanager
    def _writing(self, touched: bytes = b"", *, loading: bool = False) -> Iterator[None]:
        """Around a write: the version raised before (a reader taking the old version
        after this no longer trusts a copy of it) and after (also when it failed), the
        buckets ``touched`` marked dirty both times (empty: the overlay ends).
        ``loading``: a bulk load's write (``recording``)."""
        layout = self.layout  # what ``touched`` was computed in, both times
        self._bump_version(touched, layout, loading=loading)
        try:
            yield
        finally:
            self._bump_version(touched, layout, loading=loading)

    def wait_for_move(self, timeout: float = MOVE_WAIT_S) -> None:
        """Return once no reshard is moving this index's buckets (at once, usually)."""
        deadline = time.monotonic() + timeout
        delay = 0.01
        while self.redis.exists(self.moving_key):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"index {self.prefix} is being resharded (for over {timeout:.0f} s); "
                    "try again when it is done"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _layout_held(self, used: str) -> bool:
        """After a write made with layout ``used``: no move started or finished since."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.hget(self.layout_key, "layout")
        pipe.exists(self.moving_key)
        stored, moving = pipe.execute()
        return not moving and (stored is None or stored.decode() == used)

    def _read_layout(self) -> tuple[int, int, int]:
        """(bucket bits, identity bits, value format) as stored: ``bits/ident`` (format
        1, written before format 2) or ``bits/ident/format``."""
        stored = self.redis.hget(self.layout_key, "layout")
        if stored is not None:
            parts = [int(x) for x in stored.split(b"/")]
            return parts[0], parts[1], parts[2] if len(parts) > 2 else 1
        if self.initial_bits is not None:
            return self.initial_bits, IDENTITY_BITS, FORMAT
        # An index written before layouts were stored has 16,384 buckets by old names.
        legacy = [f"{self.prefix}:b:{b}" for b in range(0, 1 << LEGACY[0], 256)]
        pipe = self.redis.pipeline(transaction=False)
        for key in legacy:
            pipe.exists(key)
        if any(pipe.execute()):
            return (*LEGACY, 1)
        return MIN_BITS, IDENTITY_BITS, FORMAT

    def refresh(self) -> int:
        """Re-read the layout (another process may have resharded)."""
        self.bucket_bits, self.ident_bits, self.fmt = self._read_layout()
        return self.bucket_bits

    @property
    def field_bytes(self) -> int:
        return field_width(self.bucket_bits, self.ident_bits)

    @property
    def layout(self) -> str:
        return layout_name(self.bucket_bits, self.ident_bits, self.fmt)

    def key_prefix(
        self, bits: int | None = None, ident: int | None = None, fmt: int | None = None
    ) -> str:
        if bits is None:
            bits, ident, fmt = self.bucket_bits, self.ident_bits, self.fmt
        return bucket_prefix(self.prefix, bits, ident or IDENTITY_BITS, fmt or FORMAT)

    # -- addressing -----------------------------------------------------------
    def bucket_key(
        self, bucket: int, bits: int | None = None, ident: int | None = None, fmt: int | None = None
    ) -> str:
        return f"{self.key_prefix(bits, ident, fmt)}{bucket}"

    def locate(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bucket numbers, fields as uint64) of fingerprints."""
        ident = mix64(np.asarray(fps, dtype=np.uint64)) >> np.uint64(64 - self.ident_bits)
        return split_identity(ident, self.bucket_bits, self.ident_bits)

    def identities(self, fps: np.ndarray) -> np.ndarray:
        """The ``IDENTITY_BITS``-bit identities of fingerprints (what a bulk load groups
        by; independent of the bucket count)."""
        return mix64(np.asarray(fps, dtype=np.uint64)) >> np.uint64(64 - IDENTITY_BITS)

    def fields_estimate(self) -> int:
        """Fingerprints (fields) counted by adds and removes: cheap enough to read after
        every batch (``stats`` counts them exactly)."""
        return int(self.redis.hget(self.layout_key, "fields") or 0)

    def advice(self, fields: int | None = None) -> JSONObject:
        """Whether the buckets are too full (past the compact encoding) or too empty."""
        fields = self.fields_estimate() if fields is None else fields
        per_bucket = fields / (1 << self.bucket_bits)
        wanted = bits_for(fields)
        needs = per_bucket > RESHARD_FIELDS or (self.bucket_bits > wanted + 1)
        # An index of the old value format also gains from a reshard (~2 B a posting).
        old_format = fields > 0 and self.fmt != FORMAT
        if needs:
            advice = (
                f"reshard: yinji index reshard (buckets {1 << self.bucket_bits} -> "
                f"{1 << wanted}) / 需要重新分桶"
            )
        elif old_format:
            advice = "reshard: yinji index reshard (compact values) / 重新分桶可压缩取值"
        else:
            advice = "ok / 分桶合适"
        return {
            "fields_per_bucket": round(per_bucket, 1),
            "recommended_bucket_bits": wanted,
            "needs_reshard": needs or old_format,
            "value_format": self.fmt,
            "advice": advice,
        }
