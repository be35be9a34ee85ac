"""Discovery: find the copies nobody has pointed at (``docs/DISCOVERY.md``).

One module per concern: ``queries`` (distinctive sentences by the library's own
statistics), ``providers`` (web-search adapters, quotas, cache, backoff), ``sites``
(pirate-site profiles and search forms), ``frontier`` (the Redis frontier shared by
workers), ``urls`` (normalisation and traps), ``run`` (a run as named stages) and
``cli`` (``yinji discover``). Importing the package loads none of them.
"""
