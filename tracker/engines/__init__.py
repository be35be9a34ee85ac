"""Fingerprint engines behind one interface (``tracker.engines.base.Engine``).

- ``daguan``: pinyin-initial window fingerprints + Redis inverted index (default;
  answers "was a passage of my work copied here").
- ``simhash``: 64-bit SimHash of documents and windows + permuted-table Hamming index
  (answers "is this page a near-duplicate of that page").
- ``minhash``: MinHash signatures of shingles + LSH banding.

Engines are imported lazily, so choosing one never loads the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracker.common.records import JSONValue
    from tracker.engines.base import Engine, RedisClient

ENGINES: dict[str, str] = {
    "daguan": "tracker.engines.daguan:DaguanEngine",
    "simhash": "tracker.engines.simhash_engine:SimHashEngine",
    "minhash": "tracker.engines.minhash_engine:MinHashEngine",
}


def __getattr__(name: str) -> object:
    """``Engine`` on first use: the engine names (``ENGINES``, the CLI's ``--engine``
    choices) come without numpy and redis (issue #37: a command loads what it needs)."""
    if name == "Engine":
        from tracker.engines.base import Engine

        return Engine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def engine_class(name: str) -> type[Engine]:
    try:
        target = ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r} (choose from {', '.join(ENGINES)})") from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def make_engine(name: str, redis: RedisClient, prefix: str, **options: JSONValue) -> Engine:
    return engine_class(name)(redis, prefix, **options)


__all__ = ["ENGINES", "Engine", "engine_class", "make_engine"]
