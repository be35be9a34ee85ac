"""The services behind ``tracker.library.Library`` (docs/ARCHITECTURE.md):

- ``check``: the check pipeline, size → fingerprints → candidates → verify → score →
  store → evidence (``CheckService.run``);
- ``ingest``: works into the store, then every index (``IngestService``; its index
  writes in ``tracker.indexes.writer``);
- ``evidence``: what checks record in the evidence log, bundles;
- ``engines``: the engines and their stored settings;
- ``results``: the typed results, each with its JSON form.

The index concern (its administration, health, writes, rebuild in chunks, its Redis and
the embedded server) is one package, ``tracker.indexes``.
"""
