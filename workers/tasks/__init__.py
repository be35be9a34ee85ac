"""Celery tasks, one module per domain (and per queue): ``ingest``, ``crawl``, ``check``,
``reports``, ``index``. Task names are ``yinji.<domain>.<function>``.

Every task is thin (it calls ``tracker``), JSON in and out, idempotent (``_base.once``),
acknowledged late, retried with backoff on network errors and reports its progress.
"""
