"""The services behind ``tracker.library.Library`` (docs/ARCHITECTURE.md):

- ``check``: the check pipeline, size → fingerprints → candidates → verify → score →
  store → evidence (``CheckService.run``);
- ``ingest``: works into the store, then every index (``IngestService``; its index
  writes in ``index_writer``);
- ``index_admin``: indexes kept in step with the store, rebuild, reshard, snapshots;
- ``evidence``: what checks record in the evidence log, bundles;
- ``engines``: the engines and their stored settings;
- ``embedded_redis``: the index's Redis and the embedded server's lifecycle;
- ``results``: the typed results, each with its JSON form.
"""
