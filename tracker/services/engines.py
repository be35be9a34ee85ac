"""The engines of one library and their settings, kept in the store's meta.

- ``engine:<name>:options``: an engine's options (``yinji index configure``: parameters
  and reference distribution, which change the fingerprints; daguan's candidate options
  ``min_hits`` and ``weak_candidates``, which do not);
- ``engines``: the engines this library keeps an index of (every ingest writes them all);
- ``matching:options``: the verifier's ``min_copied``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tracker.common.records import JSONObject, json_object, json_strings
from tracker.engines import ENGINES, Engine, make_engine
from tracker.engines.capabilities import CandidateOptions, LocalCopies
from tracker.indexes.snapshot import SnapshotFolder
from tracker.matching.align import AlignParams
from tracker.matching.matcher import MatchPolicy, parse_min_copied
from tracker.plumbing.config import Settings
from tracker.services.results import CandidateSettings
from tracker.store import Store

if TYPE_CHECKING:
    from tracker.engines.base import RedisClient

MATCHING_META = "matching:options"  # the verifier's library settings (min_copied)
ENGINES_META = "engines"  # the engines this library keeps an index of
#: Daguan's query-time candidate options: (lowest, highest) of each.
CANDIDATE_RANGES = {"min_hits": (1, 64), "weak_candidates": (0, 64)}


def options_key(name: str) -> str:
    """The meta key of an engine's options."""
    return f"engine:{name}:options"


def known(name: str) -> str:
    """``name`` if it is an engine, else ValueError naming the choices."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r} (choose from {', '.join(ENGINES)})")
    return name


class EngineSet:
    """Each engine built once, with the options stored for it, on ``redis``; and the
    library settings of the verifier (``policy`` with the stored ``min_copied``)."""

    def __init__(self, settings: Settings, store: Store, redis: RedisClient) -> None:
        self.settings = settings
        self.store = store
        self.redis = redis
        self.policy = MatchPolicy()
        self._engines: dict[str, Engine] = {}

    def get(self, name: str | None = None) -> Engine:
        """The engine ``name`` (default ``Settings.engine``)."""
        name = known(name or self.settings.engine)
        if name not in self._engines:
            eng = make_engine(name, self.redis, self.settings.redis_prefix, **self.options(name))
            if isinstance(eng, LocalCopies):  # lookups may answer from a local copy
                eng.snapshots = SnapshotFolder(self.settings.snapshots_path)
            self._engines[name] = eng
        return self._engines[name]

    def options(self, name: str) -> JSONObject:
        return json_object(self.store.get_meta(options_key(name)))

    def set_options(self, name: str, options: JSONObject) -> Engine:
        """Store an engine's options; the engine built with them."""
        self.store.set_meta(options_key(known(name)), options)
        # The cached engine was built with the old options; the next call makes a new one.
        self._engines.pop(name, None)
        return self.get(name)

    def configure_candidates(
        self, *, min_hits: int | None = None, weak_candidates: int | None = None
    ) -> CandidateSettings:
        """Store daguan's query-time candidate options (ValueError, nothing stored, when
        one is out of range); the two values now in force."""
        wanted = {"min_hits": min_hits, "weak_candidates": weak_candidates}
        options = self.options("daguan")
        for key, value in wanted.items():
            if value is None:
                continue
            low, high = CANDIDATE_RANGES[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(
                    f"{key} must be a whole number from {low} to {high}, got {value!r}"
                )
            options[key] = value
        eng = self.set_options("daguan", options)
        if not isinstance(eng, CandidateOptions):  # pragma: no cover - daguan has them
            raise TypeError(f"the {eng.name} engine has no candidate options")
        return CandidateSettings(eng.min_hits, eng.weak_candidates)

    # -- which engines have an index ------------------------------------------------------
    def indexed(self) -> list[str]:
        return json_strings(self.store.get_meta(ENGINES_META))

    def note_indexed(self, name: str) -> None:
        engines = self.indexed()
        if name not in engines:
            self.store.set_meta(ENGINES_META, [*engines, name])

    # -- the verifier's settings ----------------------------------------------------------
    def min_copied(self) -> int:
        """The minimum copied length of this library (initials of the suspect a
        passage that reads alike must span to count; longer when it reads less alike):
        ``yinji index configure --min-copied``, kept in the store's meta like the
        engines' options; default ``MatchPolicy.min_copied``."""
        options = json_object(self.store.get_meta(MATCHING_META))
        if "min_copied" not in options:
            return self.policy.min_copied
        return parse_min_copied(options["min_copied"], f"library setting {MATCHING_META}")

    def configure_matching(self, *, min_copied: int) -> None:
        """Store the minimum copied length (ValueError, nothing stored, when out of
        range); the next check uses it, no index is rebuilt."""
        value = parse_min_copied(min_copied, "--min-copied")
        options = json_object(self.store.get_meta(MATCHING_META))
        options["min_copied"] = value
        self.store.set_meta(MATCHING_META, options)

    def verifier(self) -> tuple[MatchPolicy, AlignParams]:
        """The match policy and alignment parameters with this library's settings."""
        n = self.min_copied()
        return replace(self.policy, min_copied=n), AlignParams(min_copied=n)
