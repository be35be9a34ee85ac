"""Legado (阅读) book sources in discovery (``docs/DISCOVERY.md``): ``sources`` (files,
verdicts, requests), ``rules`` (the rule language on parsel and jsonpath-ng),
``importer`` (``yinji discover site import``) and ``walk`` (search → contents →
chapters of one site for one book)."""
