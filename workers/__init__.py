"""Background work for Yinji: the Celery app, its tasks (split by domain), the job API
that the CLI, the REST API and the web pages use, the beat schedule and the worker
commands.

Import direction: ``web`` -> ``workers`` -> ``tracker``. Tasks are thin: each one calls
the same ``tracker`` functions the CLI calls. Importing this package starts nothing:
the Celery app resolves its broker (and starts the embedded Redis server, if that is
the configuration) the first time its configuration is read.
"""
