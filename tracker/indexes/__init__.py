"""The indexes behind the engines, all following one small protocol
(``tracker.indexes.base.Index``: ``add``, ``remove``, ``clear``, ``stats`` over entries
``(id, key)``):

- ``tracker.indexes.inverted``: ``RedisInvertedIndex``, fingerprint -> mothers, in bucketed
  Redis hashes (the daguan engine); its key layout in ``keys``, stored values in ``codec``
  (and ``lua/codec.lua``), Lua scripts as package data in ``lua/`` (``scripts``), bulk
  loads in ``bulk``, edition groups (many copies of a text counted once) in ``editions``;
- ``tracker.indexes.hamming``: ``RedisHammingIndex`` (and ``MemoryHammingIndex``), 64-bit
  fingerprints within a Hamming distance, in permuted tables (the simhash engine);
- ``tracker.indexes.lsh``: ``RedisLSH``, MinHash signatures by LSH band (the minhash engine).

``tracker.indexes.lock``: the index lock (an owner with a heartbeat; a dead owner's lock
is taken over at once).

Import the module you need: each engine loads only its own index.
"""

from tracker.indexes.base import Index

__all__ = ["Index"]
