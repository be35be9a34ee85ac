"""Discovery on a simulated web (issue #22): recall of planted copies, fetches, trap
share, politeness at the server, throughput, a crawl killed and restarted; beside a
breadth-first crawl of the same seeds with the same crawler, concurrency and per-host
rate, and beside discovery with its trap rules off and with pages read in the crawl
process itself, all measured in the same run.

Usage: python bench/bench_simweb.py [--pages 2000] [--bfs-max 20000] [--write]
       python bench/bench_simweb.py --only-kill   (the kill arm alone, printed)

The web (``bench/simweb/world.py``): 20 sites under their own host names, 20,652 pages,
traps on the path of discovery, 250 library works planted (one page each, obfuscated)
and ten exact mirrors, served by one process (``bench/simweb/server.py``) that logs
every request as it arrives. Discovery gets what a user gives it: the six novel sites
registered (their search forms found by themselves), a search provider (the fake
engine, SearXNG's JSON) and the library (550 works: 红楼梦, 三国演义, 鲁迅). The
baseline gets the home pages of all 20 sites and follows every link breadth-first
(URLs deduplicated as written); it only fetches (recall judged by the planted URL
list, which favours it).
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import publish  # noqa: E402

from bench.simweb.server import SimWeb  # noqa: E402
from bench.simweb.world import HOSTS, NOVEL, World  # noqa: E402

INTERVAL = 0.02  # seconds between two requests to one host (50 a second)
CONCURRENCY = 8


def crawler_for(port: int, interval: float = INTERVAL):  # type: ignore[no-untyped-def]
    from tracker.crawler import Crawler, CrawlerConfig

    crawler = Crawler(
        CrawlerConfig(
            resolver=lambda host, p: ["127.0.0.1"],
            allow_address=lambda ip, p: str(ip) == "127.0.0.1" and p == port,
            min_interval=interval,
            retries=0,
            total_timeout=20,
        )
    )
    # When the crawler's limiter let each request to a host go and when it was told the
    # request ended (the client's side of politeness), recorded around its own methods.
    crawler.sends = []  # type: ignore[attr-defined]
    limiter = crawler._limiter
    acquire, release = limiter.acquire, limiter.release

    def timed_acquire(host: str) -> float:
        waited = acquire(host)
        crawler.sends.append((time.monotonic(), host, "start"))  # type: ignore[attr-defined]
        return waited

    def timed_release(host: str) -> None:
        crawler.sends.append((time.monotonic(), host, "end"))  # type: ignore[attr-defined]
        release(host)

    limiter.acquire = timed_acquire  # type: ignore[method-assign]
    limiter.release = timed_release  # type: ignore[method-assign]
    return crawler


def send_gaps(sends: list, interval: float) -> tuple[int, float | None]:
    """(requests let go sooner than the interval after the previous request to the same
    host ended, the shortest such gap), at the client."""
    by_host: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for t, host, what in sends:
        by_host[host].append((t, what))
    gaps = []
    for events in by_host.values():
        last_end = None
        for t, what in sorted(events):
            if what == "end":
                last_end = t
            elif last_end is not None:
                gaps.append(t - last_end)
    return sum(1 for g in gaps if g < interval * 0.999), (min(gaps) if gaps else None)


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process, and of its children that ended (the reader process:
    ``DiscoveryRun.crawl`` waits for it at its end)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def page_key(url: str) -> str:
    """A page by host and path (ports and query strings such as ?sid= left out)."""
    u = urlsplit(url)
    return f"{(u.hostname or '').lower()}{u.path}"


def server_stats(log: list, interval: float) -> dict:
    by_host: dict[str, list[float]] = collections.defaultdict(list)
    for t, host, _path, _trap, _status in log:
        by_host[host].append(t)
    gaps = [
        b - a for ts in by_host.values() for a, b in zip(sorted(ts), sorted(ts)[1:], strict=False)
    ]
    traps = sum(1 for x in log if x[3])
    pages = collections.Counter((x[1], x[2]) for x in log if x[2] != "/robots.txt")
    return {
        "fetches": len(log),
        "trap_fetches": traps,
        "min_gap": min(gaps) if gaps else None,
        "gaps_under_interval": sum(1 for g in gaps if g < interval * 0.999),
        "fetched_twice": sum(1 for n in pages.values() if n > 1),
        "hosts": len(by_host),
    }


def recall_of(found: set[str], world: World) -> float:
    return len(found) / len(set(world.planted.values()))


# What one page costs, where: a stage is a function, wrapped (see ``_StageClock``).
STAGES = {
    "fetch (HTTP, robots.txt, SSRF guard)": ("tracker.crawler.crawler:Crawler", "fetch"),
    "read: decode, extract (trafilatura), links": ("tracker.crawler.crawler", "read_page"),
    "check: Library.check_page in all": ("tracker.services.check:CheckService", "run"),
    "  check / reading, noise (Matcher.read)": ("tracker.matching.matcher:Matcher", "read"),
    "  check / candidates and alignment (Matcher.find)": (
        "tracker.matching.matcher:Matcher",
        "find",
    ),
    # The check saves the suspect and its matches (stage 6) and records the capture and
    # the check in the evidence log (stage 7) in one step (``CheckService._save``).
    "  check / suspect, matches, capture and check saved": (
        "tracker.services.check:CheckService",
        "_save",
    ),
    "SimHash of the text (near-duplicates)": ("tracker.fingerprints.simhash", "simhash"),
    "near-duplicate lookup and record (Redis)": ("tracker.discovery.run:NearDuplicates", "*"),
    "links followed (parse, rules, frontier batch)": (
        "tracker.discovery.run:DiscoveryRun",
        "_follow",
    ),
    "frontier claim / fetched / done (Redis)": ("tracker.discovery.frontier:Frontier", "~"),
    "page kept for a restart (Page.to_record)": ("tracker.crawler.results:Page", "to_record"),
}


class _StageClock:
    """CPU time (``time.thread_time``, the calling thread's) spent in the named stages
    of a crawl in this process, by wrapping the functions that do them; outermost calls
    only (a stage inside another is counted in both: the table says which holds which)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = collections.defaultdict(float)
        self._undo: list[tuple[object, str, object]] = []  # what to put back

    def _wrap(self, owner: object, name: str, label: str) -> None:
        import threading

        inner = getattr(owner, name)
        clock = self.cpu
        local = threading.local()

        def timed(*a, **k):  # type: ignore[no-untyped-def]
            if getattr(local, "busy", False):
                return inner(*a, **k)
            local.busy = True
            t = time.thread_time()
            try:
                return inner(*a, **k)
            finally:
                clock[label] += time.thread_time() - t
                local.busy = False

        self._undo.append((owner, name, inner))
        setattr(owner, name, timed)

    def start(self) -> None:
        import importlib

        for label, (where, name) in STAGES.items():
            module, _, cls = where.partition(":")
            owner: object = importlib.import_module(module)
            if cls:
                owner = getattr(owner, cls)
            names = [name]
            if name == "*":
                names = ["find", "add"]
            elif name == "~":
                names = ["claim", "fetched", "done"]
            for n in names:
                if hasattr(owner, n):  # a stage the code no longer has is left out
                    self._wrap(owner, n, label)

    def stop(self) -> None:
        for owner, name, inner in reversed(self._undo):
            setattr(owner, name, inner)
        self._undo.clear()

    def per_page(self, pages: int) -> dict[str, float]:
        return {k: 1000 * v / max(pages, 1) for k, v in self.cpu.items()}


# --- discovery ---------------------------------------------------------------------
def run_discovery(  # type: ignore[no-untyped-def]
    lib,
    sim: SimWeb,
    world: World,
    pages: int,
    trap_rules: bool = True,
    readers: int = -1,
    procs: int = 1,
    stages: bool = False,
) -> dict:
    from tracker.discovery.keys import DiscoveryKeys
    from tracker.discovery.providers import SearxngProvider
    from tracker.discovery.run import DiscoveryRun, RunOptions

    crawler = crawler_for(sim.port)
    results = []
    run = DiscoveryRun(
        lib,
        RunOptions(
            max_pages=pages,
            concurrency=CONCURRENCY,
            interval=INTERVAL,
            max_works=1000,
            max_site_searches=50,
            trap_rules=trap_rules,
            read_processes=readers,
            crawl_processes=procs,
        ),
        providers=[SearxngProvider(f"http://127.0.0.1:{sim.port}/search", timeout=60)],
        crawler=crawler,
        # The other crawl processes' crawlers (``crawl_processes``): the same settings.
        crawler_factory=functools.partial(crawler_for, sim.port),
        # Its own frontier, budget and answer cache: the arms do not share them.
        keys=DiscoveryKeys(lib.settings.redis_prefix, f"bench-{trap_rules}-{readers}-{procs}"),
        on_page=results.append,
    )
    sim.reset()
    t0 = time.perf_counter()
    stage_cpu = _StageClock() if stages else None
    run.plan()
    t_plan = time.perf_counter()
    run.search()
    run.sites()
    t_search = time.perf_counter()
    cpu0 = _cpu()
    if stage_cpu is not None:
        stage_cpu.start()
    run.crawl()
    if stage_cpu is not None:
        stage_cpu.stop()
    cpu1 = _cpu()
    t_crawl = time.perf_counter()
    crawl_cpu = (cpu1[0] - cpu0[0]) + (cpu1[1] - cpu0[1])
    reader_cpu = cpu1[1] - cpu0[1]
    report = run.finish()
    log = sim.log()
    planted = {page_key(u): w for u, w in world.planted.items()}
    near = {page_key(u): w for u, w in world.near_copies.items()}
    found: set[str] = set()
    by_suspect: dict[str, set[str]] = {}
    first_at: dict[str, int] = {}  # work -> pages processed when it was first found
    for n, r in enumerate(results, 1):
        works = {m["mother_id"] for m in r.matches}
        by_suspect[r.suspect_id] = works
        key = page_key(r.final_url or r.url)
        dup = by_suspect.get(r.duplicate_of, set()) if r.duplicate_of else set()
        if key in planted and (planted[key] in works or planted[key] in dup):
            found.add(planted[key])
            first_at.setdefault(planted[key], n)
    total = len(set(world.planted.values()))
    order = sorted(first_at.values())
    at_95 = order[int(0.95 * total) - 1] if len(order) >= int(0.95 * total) else None
    false_pages = sum(
        1
        for r in results
        if r.matches
        and page_key(r.final_url or r.url) not in planted
        and page_key(r.final_url or r.url) not in near
    )
    under, shortest = send_gaps(crawler.sends, INTERVAL)
    return {
        "send_gaps_under": under,
        "send_min_gap": shortest,
        "crawl_cpu": crawl_cpu,
        "reader_cpu": reader_cpu,
        "load": os.getloadavg(),
        "pages_at_95": at_95,
        "report": report,
        "found": found,
        "recall": recall_of(found, world),
        "server": server_stats(log, INTERVAL),
        "plan_s": t_plan - t0,
        "search_s": t_search - t_plan,
        "crawl_s": t_crawl - t_search,
        "checked": report.checked,
        "fetched": report.fetched,
        "false_pages": false_pages,
        "sources": {k: v for k, v in report.sources.items()},
        "stages": stage_cpu.per_page(report.fetched) if stage_cpu is not None else {},
    }


# --- breadth-first baseline ------------------------------------------------------------
def run_bfs(sim: SimWeb, world: World, max_fetches: int, target: float, timed: int) -> dict:
    from tracker.crawler import CrawlError
    from tracker.crawler.decoding import decode_html
    from tracker.crawler.links import page_links

    crawler = crawler_for(sim.port)
    planted = {page_key(u): w for u, w in world.planted.items()}
    queue = collections.deque(f"http://{h}:{sim.port}/" for h in HOSTS)
    seen = set(queue)
    found: set[str] = set()
    curve: list[tuple[int, float]] = []
    reached_at = None
    fetched = 0
    lock = threading.Lock()
    sim.reset()
    t0 = time.perf_counter()

    def fetch(url: str) -> list[str]:
        # Fetch and links only (no extraction of the main text, no check): the
        # baseline's fetches are what is compared, and it gets them as fast as it can.
        try:
            result = crawler.fetch(url)
        except CrawlError:
            return []
        html, _ = decode_html(result.body, result.headers.get("content-type"))
        return [link.url for link in page_links(html, result.final_url)]

    timed_s = None
    # The first ``timed`` fetches at discovery's concurrency (its throughput is measured
    # there); the rest, which only say when breadth-first reaches the recall, with more
    # threads. The order of the fetches is the queue's either way: the same fetches.
    with ThreadPoolExecutor(CONCURRENCY) as pool, ThreadPoolExecutor(4 * CONCURRENCY) as wide:
        while queue and fetched < max_fetches:
            first = fetched < timed
            size = CONCURRENCY * 4 if first else CONCURRENCY * 32
            limit = (timed if first else max_fetches) - fetched
            batch = [queue.popleft() for _ in range(min(size, len(queue), limit))]
            for url, links in zip(batch, (pool if first else wide).map(fetch, batch), strict=True):
                fetched += 1
                key = page_key(url)
                if key in planted:
                    found.add(planted[key])
                with lock:
                    for link in links:
                        if link not in seen:
                            seen.add(link)
                            queue.append(link)
                r = recall_of(found, world)
                curve.append((fetched, r))
                if reached_at is None and r >= target:
                    reached_at = fetched
            if timed_s is None and fetched >= timed:
                timed_s = time.perf_counter() - t0
    elapsed = time.perf_counter() - t0
    log = sim.log()
    under, shortest = send_gaps(crawler.sends, INTERVAL)
    return {
        "send_gaps_under": under,
        "send_min_gap": shortest,
        "fetched": fetched,
        "recall": recall_of(found, world),
        "reached_at": reached_at,
        "curve": curve,
        "seconds": elapsed,
        "timed": min(timed, fetched),
        "timed_s": timed_s if timed_s is not None else elapsed,
        "server": server_stats(log, INTERVAL),
    }


def _rate(r: dict) -> str:
    return (
        f"{r['fetched'] / r['crawl_s']:.0f} fetched/s, {r['checked'] / r['crawl_s']:.0f} "
        f"checked/s ({r['fetched']} fetched in {r['crawl_s']:.1f} s, recall {r['recall']:.3f})"
    )


def _cpu_line(r: dict) -> str:
    return (
        f"{1000 * r['crawl_cpu'] / max(r['fetched'], 1):.1f} ms "
        f"({1000 * r['reader_cpu'] / max(r['fetched'], 1):.1f} ms of it in child processes), "
        f"{r['crawl_cpu'] / r['crawl_s']:.2f} CPU-s/s"
    )


def recall_at(curve: list[tuple[int, float]], fetches: int) -> float:
    best = 0.0
    for n, r in curve:
        if n <= fetches:
            best = r
    return best


# --- kill and restart ------------------------------------------------------------------------
PART = r"""
import sys, json, functools
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
from bench_simweb import crawler_for, INTERVAL
from tracker.plumbing.config import Settings
from tracker.library import Library
from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.providers import SearxngProvider
from tracker.discovery.run import DiscoveryRun, RunOptions
with Library.open(Settings.from_env({data!r})) as lib:
    run = DiscoveryRun(lib, RunOptions(max_pages={pages}, concurrency=8, interval=INTERVAL,
        max_works=1000, search={seed}, sites={seed}),
        providers=[SearxngProvider("http://127.0.0.1:{port}/search", timeout=60)],
        crawler=crawler_for({port}), crawler_factory=functools.partial(crawler_for, {port}),
        keys=DiscoveryKeys(lib.settings.redis_prefix, "killtest"))
    if {seed}:
        run.plan(); run.search(); run.sites()
        print("seeded", flush=True)
    run.crawl()
    run.finish()
    print("done", run.report.fetched, flush=True)
"""


def run_kill_restart(data: Path, sim: SimWeb, pages: int) -> dict:
    from tracker.discovery.frontier import Frontier
    from tracker.discovery.keys import DiscoveryKeys
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    env = dict(os.environ, YINJI_SCREENSHOTS="off")
    sim.reset()

    def part(seed: bool, n: int) -> subprocess.Popen[str]:
        code = PART.format(
            root=str(ROOT),
            bench=str(ROOT / "bench"),
            data=str(data),
            pages=n,
            seed=seed,
            port=sim.port,
        )
        return subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    first = part(True, pages)
    assert first.stdout is not None
    first.stdout.readline()  # seeded
    time.sleep(6)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    fetched_before = len([x for x in sim.log() if x[2] != "/robots.txt"])
    with Library.open(Settings.from_env(data)) as lib:
        f = Frontier(lib.redis, DiscoveryKeys(lib.settings.redis_prefix, "killtest"))
        at_kill = f.stats()
        # Leased with no stored body: their request may have been in the air at the kill
        # (sent, its answer never read): those alone may be fetched again.
        stored_at_kill = {u.decode() for u in lib.redis.hkeys(f.k("body"))}
        in_air = {u.decode() for u in lib.redis.zrange(f.k("leased"), 0, -1)} - stored_at_kill
    time.sleep(1)  # no lease is older than the kill: shorten them for the restart
    with Library.open(Settings.from_env(data)) as lib:
        f = Frontier(lib.redis, DiscoveryKeys(lib.settings.redis_prefix, "killtest"))
        leased = lib.redis.zrange(f.k("leased"), 0, -1)
        if leased:
            lib.redis.zadd(f.k("leased"), dict.fromkeys(leased, 0))
            lib.redis.zadd(f.k("hosts"), dict.fromkeys(lib.redis.zrange(f.k("hosts"), 0, -1), 0))
    second = part(False, 100_000)
    out, _ = second.communicate(timeout=1800)
    log = sim.log()
    with Library.open(Settings.from_env(data)) as lib:
        f = Frontier(lib.redis, DiscoveryKeys(lib.settings.redis_prefix, "killtest"))
        after = f.stats()
        seen = {m.decode() for m in lib.redis.smembers(f.k("seen"))}
    served = {f"http://{h}:{sim.port}{p}" for _, h, p, _, _ in log}
    unserved = [u for u in seen if u not in served and not u.endswith("/robots.txt")]
    # The simulated sites' robots.txt forbids /private/: refused, not lost.
    forbidden = [u for u in unserved if urlsplit(u).path.startswith("/private/")]
    lost = [u for u in unserved if u not in forbidden]
    pages_log = collections.Counter((x[1], x[2]) for x in log if x[2] != "/robots.txt")
    twice = [k for k, n in pages_log.items() if n > 1]
    # As the server logged them: host without port, path with its query.
    in_air_keys = {
        (
            urlsplit(u).hostname,
            urlsplit(u).path + (f"?{urlsplit(u).query}" if urlsplit(u).query else ""),
        )
        for u in in_air
    }
    twice_in_air = [k for k in twice if k in in_air_keys]
    return {
        "twice": sorted(f"{h}{p}" for h, p in twice),
        "lost": sorted(lost),
        "forbidden": len(forbidden),
        "stored_at_kill": len(stored_at_kill),
        "in_air_at_kill": len(in_air),
        "twice_in_air": len(twice_in_air),
        "twice_other": len(twice) - len(twice_in_air),
        "fetched_before_kill": fetched_before,
        "leased_at_kill": at_kill["leased"],
        "queued_at_kill": at_kill["queued"],
        "fetched_total": sum(pages_log.values()),
        "seen": len(seen),
        "never_fetched": len(lost),
        "queued_after": after["queued"],
        "fetched_twice": len(twice),
        "second_output": out.strip().splitlines()[-1:] if out else [],
    }


# --- Legado sources (issue #38) -----------------------------------------------------------------
LEGADO_DIR = Path(os.environ.get("YINJI_SHARED_DATA", "/work/shared/data")) / "legado"
LEGADO_TITLES = [
    "寒江夜渡", "青石巷记", "北窗听雨", "山河故人", "灯下旧信", "南渡江声", "雪夜归舟", "长街烟火",
    "松间明月", "孤城晚照", "云上人家", "白鹭洲头", "梨花深巷", "古道西风", "暮色苍山", "春水渡口",
    "红泥小炉", "竹林深处", "海上花开", "燕子归来", "柳岸晓风", "秋水长天", "铁马冰河", "星河远行",
    "半城烟雨", "千山暮雪", "落日熔金", "草木人间", "江湖夜雨", "桃源旧梦", "野渡无人", "玉门春风",
    "长河落日", "烟波钓徒", "墨池飞雪", "故园新月",
]  # fmt: skip


def legado_coverage() -> dict:
    """The verdict on every real source (``legado.sources.judge``), by status and reason."""
    from tracker.discovery.legado.sources import judge, load_sources

    text = (LEGADO_DIR / "sources.dev.json").read_text(encoding="utf-8")
    raws = load_sources(text, "sources.dev.json")
    t = time.perf_counter()
    verdicts = [judge(raw) for raw in raws]
    seconds = time.perf_counter() - t
    status = collections.Counter(v.status for v in verdicts)
    reasons: collections.Counter[str] = collections.Counter()
    for v in verdicts:
        for r in {_reason_kind(r) for r in v.reasons}:
            reasons[(v.status, r)] += 1
    no_js = sum(1 for v in verdicts if not any("JavaScript" in r for r in v.reasons
                                                if not r.startswith("left out")))  # fmt: skip
    return {"total": len(verdicts), "status": status, "reasons": reasons, "no_js": no_js,
            "seconds": seconds}  # fmt: skip


def _reason_kind(reason: str) -> str:
    import re

    if reason.startswith("left out"):
        return "left out (not used by discovery): explore, login, …"
    reason = re.sub(r"\(rule\w+\.\w+\)|\(searchUrl\)", "", reason)
    reason = re.sub(r"'[^']*'|\"[^\"]*\"", "…", reason)
    reason = re.sub(r"^source …: ", "", reason)
    return reason.split(": ", 1)[0].strip() if "bookSourceUrl" not in reason else reason[:60]


class LegadoWeb:
    """The sites of ``bench/simweb/legado.py`` on one 127.0.0.1 port (by Host header), with
    a log of every request (host, path, method) as it arrived."""

    def __init__(self, sites: list) -> None:  # type: ignore[type-arg]
        self.sites = {s.host: s for s in sites}
        self.log: list[tuple[float, str, str, str]] = []

    def __enter__(self) -> LegadoWeb:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _do(self, method: str) -> None:
                host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                web.log.append((time.monotonic(), host, self.path, method))
                site = web.sites.get(host)
                if site is None:
                    status, ctype, out = 404, "text/plain", b"no such host"
                else:
                    try:
                        status, ctype, out = site.answer(method, self.path, body)
                    except Exception as exc:  # a page the builder cannot make: a 500
                        status, ctype, out = 500, "text/plain", repr(exc).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def do_GET(self) -> None:
                self._do("GET")

            def do_POST(self) -> None:
                self._do("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def legado_sites(n: int, port: int) -> tuple[list, dict[str, list[str]]]:  # type: ignore[type-arg]
    """Up to ``n`` sites, each built to a different real source's shape, and the planted
    chapters (site host -> chapter texts)."""
    import json as _json

    from bench.simweb.legado import build_site
    from tracker.discovery.legado.sources import judge

    raws = _json.loads((LEGADO_DIR / "sources.dev.json").read_text(encoding="utf-8"))
    novels = LEGADO_DIR.parent / "novels" / "hongloumeng.chapters.jsonl"
    texts = [_json.loads(line)["text"] for line in novels.read_text(encoding="utf-8").splitlines()]
    chunks = [t[i : i + 1500] for t in texts for i in range(0, len(t) - 1500, 1500)]
    chosen: list = []  # type: ignore[type-arg]
    shapes: set[str] = set()
    json_first = sorted(range(len(raws)), key=lambda i: not str(
        (raws[i].get("ruleSearch") or {}).get("bookList", "")).startswith("$"))  # fmt: skip
    for k in json_first:
        raw = raws[k]
        if len(chosen) >= n or judge(raw).status != "imported":
            continue
        i = len(chosen)
        title = LEGADO_TITLES[i % len(LEGADO_TITLES)]
        chapters = chunks[3 * i : 3 * i + 3]
        fillers = [t for t in LEGADO_TITLES if t != title][i % 7 : i % 7 + 3]
        site = build_site(raw, f"s{i:02d}.legado.sim", port, title, chapters, fillers)
        if site.skip or site.shape in shapes:
            continue
        shapes.add(site.shape)
        chosen.append(site)
    return chosen, {s.host: s.chapters for s in chosen}


def run_legado(n_sites: int, pages: int) -> dict:
    """Discovery with imported Legado sources only (no search provider) on the sites of
    ``legado_sites``: recall of the planted chapters, pages fetched per second."""
    import json as _json

    from tracker.discovery.legado.importer import import_path
    from tracker.discovery.run import DiscoveryRun, RunOptions
    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    tmp = Path(tempfile.mkdtemp(prefix="legadoweb-"))
    probe, _ = legado_sites(n_sites, 0)
    with LegadoWeb(probe) as web:
        sites, _ = legado_sites(n_sites, web.port)
        web.sites = {s.host: s for s in sites}
        docs, planted = [], {}
        for i, s in enumerate(sites):
            for c, text in enumerate(s.chapters, 1):
                wid = f"lg{i:02d}-{c}"
                planted[wid] = s.host
                meta = {"book_id": f"lg{i:02d}", "book_title": s.book, "chapter_index": c}
                title = f"《{s.book}》第{c}章"
                docs.append(Document(id=wid, title=title, text=text, metadata=meta))
        sources = tmp / "sources.json"
        sources.write_text(_json.dumps([s.source for s in sites], ensure_ascii=False), "utf-8")
        with Library.open(Settings.from_env(tmp / "data")) as lib:
            lib.ingest(docs)
            verdicts = import_path(lib, str(sources))
            crawler = crawler_for(web.port)
            run = DiscoveryRun(
                lib,
                RunOptions(
                    max_pages=pages,
                    concurrency=CONCURRENCY,
                    interval=INTERVAL,
                    max_works=1000,
                    search=False,
                    read_processes=0,
                ),
                providers=[],
                crawler=crawler,
            )
            t0 = time.perf_counter()
            run.plan_books()
            run.legado()
            seconds = time.perf_counter() - t0
            report = run.finish()
        found = {m["mother_id"] for m in report.matches if planted.get(m["mother_id"])
                 and m["source"] == f"site:{planted[m['mother_id']]}:{web.port}"}  # fmt: skip
        by_site = collections.Counter(planted[w] for w in found)
        missed = sorted({s.host: s.shape for s in sites if by_site[s.host] < 3}.items())
        under, shortest = send_gaps(crawler.sends, INTERVAL)
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "sites": len(sites),
        "shapes": sorted(s.shape for s in sites),
        "originals": [s.original for s in sites],
        "verdicts": collections.Counter(v.status for v in verdicts),
        "planted": len(planted),
        "found": len(found),
        "recall": len(found) / max(len(planted), 1),
        "fetched": report.fetched,
        "checked": report.checked,
        "seconds": seconds,
        "requests": len(web.log),
        "posts": sum(1 for *_, m in web.log if m == "POST"),
        "missed": missed,
        "errors": [g.example for g in report.error_groups()[:5]],
        "send_gaps_under": under,
        "send_min_gap": shortest,
        "not_found": len(report.not_found),
    }


def default_arm(pages: int) -> dict:
    """The default discovery arm of the simulated web (provider, six sites, crawl)."""
    from tracker.discovery.service import register_site
    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    world = World.build()
    tmp = Path(tempfile.mkdtemp(prefix="simweb-"))
    with SimWeb() as sim, Library.open(Settings.from_env(tmp / "data")) as lib:
        lib.ingest(
            [
                Document(
                    id=d["id"],
                    title=d["title"],
                    text=d["text"],
                    metadata={k: v for k, v in d.items() if k in ("book", "collection")},
                )
                for d in world.library
            ]
        )
        crawler = crawler_for(sim.port)
        for host, _ in NOVEL:
            register_site(lib, f"http://{host}:{sim.port}/", crawler=crawler)
        r = run_discovery(lib, sim, world, pages)
    shutil.rmtree(tmp, ignore_errors=True)
    return r


def legado_section(args: argparse.Namespace, started: float) -> None:
    cov = legado_coverage()
    print(json.dumps({k: v for k, v in cov.items() if k != "reasons"}, default=str), flush=True)
    lg = run_legado(args.legado, 20_000)
    print(json.dumps({k: v for k, v in lg.items() if k not in ("originals",)},
                     default=str, ensure_ascii=False), flush=True)  # fmt: skip
    d = default_arm(args.pages)
    rate = d["fetched"] / d["crawl_s"]
    total = cov["total"]
    rows = "\n".join(
        f"| {status} | {reason} | {n} |"
        for (status, reason), n in sorted(cov["reasons"].items(), key=lambda x: (x[0][0], -x[1]))
        if n >= 5 or status == "refused"
    )
    st = cov["status"]
    parts = [
        f"Import coverage of the {total:,} real sources of `../shared/data/legado` "
        f"(`legado.sources.judge`, {1000 * cov['seconds'] / total:.2f} ms a source): "
        f"**{st['imported']:,} imported ({100 * st['imported'] / total:.1f} %)**, "
        f"{st['partial']:,} partial ({100 * st['partial'] / total:.1f} %), "
        f"{st['refused']:,} refused ({100 * st['refused'] / total:.1f} %); "
        f"{cov['no_js']:,} ({100 * cov['no_js'] / total:.1f} %) need no JavaScript on the "
        "search → contents → chapter path by Yinji's reading (the collection's README "
        "measures 55.5 % on its 2,650 sources, 51.8 % with the book page).",
        "",
        "| status | reason (a source may have several) | sources |",
        "|---|---|---|",
        rows,
        "",
        f"Discovery with imported sources only (no search provider, no crawl seeds): "
        f"{lg['sites']} sites, each built to the rule shapes of a different real source "
        f"(`bench/simweb/legado.py`: {len(set(lg['shapes']))} shapes: "
        + "; ".join(sorted(set(lg["shapes"])))
        + f"), one library book of three chapters planted on each, {lg['planted']} chapters "
        f"in all; the {lg['sites']} sources imported from one file "
        f"({dict(lg['verdicts'])}), every site searched for every book "
        f"({lg['posts']} searches by POST).",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| recall of planted chapters | **{lg['recall']:.3f}** ({lg['found']}/{lg['planted']}) "
        "| ≥ 0.95 |",
        f"| pages fetched (Legado stage) | {lg['fetched']:,} in {lg['seconds']:.1f} s "
        f"({lg['fetched'] / lg['seconds']:.0f} fetched/s, {lg['checked']} chapters checked) | |",
        f"| requests to one host closer than its interval ({INTERVAL * 1000:.0f} ms), at "
        f"the client | {lg['send_gaps_under']} | 0 |",
        f"| searches that found no book (other sites' books) | {lg['not_found']} | |",
        f"| default discovery arm, same run (provider + six sites + crawl, "
        f"{args.pages} pages) | **{rate:.0f}** fetched/s, recall {d['recall']:.3f} "
        f"({d['fetched']} fetched, {d['checked']} checked in {d['crawl_s']:.1f} s) | "
        "≥ 118 fetched/s |",
        "",
        "Sites missed: "
        + (", ".join(f"{h} ({s})" for h, s in lg["missed"]) or "none")
        + "; errors: "
        + ("; ".join(lg["errors"]) or "none")
        + ".",
    ]
    publish("legado", "bench_simweb.py", parts, started, args.write)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--bfs-max", type=int, default=20000)
    ap.add_argument("--kill-pages", type=int, default=600)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--only-kill", action="store_true", help="the kill arm alone, printed")
    ap.add_argument(
        "--only-throughput",
        action="store_true",
        help="the throughput arms alone (default, two crawl processes, one alone), printed",
    )
    ap.add_argument(
        "--legado",
        type=int,
        default=0,
        metavar="SITES",
        help="issue #38: import coverage of the real Legado sources, discovery with imported "
        "sources only on SITES sites built to their rule shapes, and the default discovery "
        "arm's pages/s in the same run",
    )
    ap.add_argument("--only-default", action="store_true", help="the default arm alone, printed")
    args = ap.parse_args()
    started = time.time()
    os.environ["YINJI_SCREENSHOTS"] = "off"
    if args.legado:
        legado_section(args, started)
        return
    from tracker.discovery.service import register_site
    from tracker.documents.readers import Document
    from tracker.library import Library
    from tracker.plumbing.config import Settings

    world = World.build()
    tmp = Path(tempfile.mkdtemp(prefix="simweb-"))
    data = tmp / "data"
    parts: list[str] = []
    with SimWeb() as sim:
        t = time.perf_counter()
        with Library.open(Settings.from_env(data)) as lib:
            docs = [
                Document(
                    id=d["id"],
                    title=d["title"],
                    text=d["text"],
                    metadata={k: v for k, v in d.items() if k in ("book", "collection")},
                )
                for d in world.library
            ]
            lib.ingest(docs)
            ingest_s = time.perf_counter() - t
            crawler = crawler_for(sim.port)
            profiles = collections.Counter()
            for host, _ in NOVEL:
                site = register_site(lib, f"http://{host}:{sim.port}/", crawler=crawler)
                profiles[site.profile] += 1
            if args.only_default:
                r = run_discovery(lib, sim, world, args.pages)
                answers = sorted(r["found"])
                print(json.dumps({"recall": r["recall"], "fetched": r["fetched"],
                                  "checked": r["checked"], "crawl_s": r["crawl_s"],
                                  "fetched_per_s": r["fetched"] / r["crawl_s"],
                                  "server_fetches": r["server"]["fetches"],
                                  "found": answers}))  # fmt: skip
                shutil.rmtree(tmp, ignore_errors=True)
                return
            if args.only_throughput:
                arms = {
                    "one crawl process and its reader (default)": run_discovery(
                        lib, sim, world, args.pages
                    ),
                    "two crawl processes": run_discovery(lib, sim, world, args.pages, procs=2),
                    "one crawl process alone": run_discovery(
                        lib, sim, world, args.pages, readers=0, stages=True
                    ),
                }
                for name, r in arms.items():
                    print(f"| {name} | {_rate(r)} | {_cpu_line(r)} | {r['load'][0]:.1f} |")
                print("stages (one alone):", json.dumps(arms["one crawl process alone"]["stages"]))
                shutil.rmtree(tmp, ignore_errors=True)
                return
            if not args.only_kill:
                # The default: one crawl process and its reader process.
                d = run_discovery(lib, sim, world, args.pages)
                off = run_discovery(lib, sim, world, args.pages, trap_rules=False)
                # Two crawl processes sharing the frontier and the budget, and one
                # process alone (its CPU by stage: what a page costs, where).
                two = run_discovery(lib, sim, world, args.pages, procs=2)
                solo = run_discovery(lib, sim, world, args.pages, readers=0, stages=True)
        if args.only_kill:
            print(json.dumps(run_kill_restart(data, sim, args.kill_pages)), flush=True)
            shutil.rmtree(tmp, ignore_errors=True)
            return
        print(
            json.dumps(
                {k: v for k, v in d.items() if k not in ("report", "found", "sources")}, default=str
            ),
            flush=True,
        )
        b = run_bfs(sim, world, args.bfs_max, d["recall"], d["server"]["fetches"])
        print(json.dumps({k: v for k, v in b.items() if k != "curve"}, default=str), flush=True)
        k = run_kill_restart(data, sim, args.kill_pages)
        print(json.dumps(k), flush=True)
    total_pages = world.pages_total()
    planted = len(set(world.planted.values()))
    rep = d["report"]
    srv, bsrv, osrv = d["server"], b["server"], off["server"]
    ratio = (b["reached_at"] / srv["fetches"]) if b["reached_at"] else None
    bfs_same_budget = recall_at(b["curve"], srv["fetches"])
    src_rows = "\n".join(
        f"| {name} | {s.found} | {s.fetched} | {s.checked} | {s.matched} | {s.duplicates} "
        f"| {s.errors} |"
        for name, s in sorted(d["sources"].items())
    )
    parts += [
        f"Simulated web: {len(HOSTS)} host names, {total_pages:,} pages (plus traps: "
        f"endless book lists and forum pages, an infinite calendar, session ids), "
        f"{planted} library works planted (one page each, obfuscated) and 10 exact mirrors; "
        f"library {len(world.library)} works, ingested in {ingest_s:.0f} s; six novel sites "
        f"registered, their search forms found by themselves ({dict(profiles)}). Per-host "
        f"rate {1 / INTERVAL:.0f} requests/s, {CONCURRENCY} fetch threads for both crawlers.",
        "",
        "| measure | discovery | breadth-first baseline (the same sites, same crawler) | target |",
        "|---|---|---|---|",
        f"| recall of planted works | **{d['recall']:.3f}** ({len(d['found'])}/{planted}) | "
        f"{bfs_same_budget:.3f} at the same {srv['fetches']:,} fetches; "
        f"{b['recall']:.3f} after {b['fetched']:,} | ≥ 0.95 |",
        f"| fetches (at the server, robots.txt included) | **{srv['fetches']:,}** "
        f"({100 * srv['fetches'] / total_pages:.1f}% of the web) | "
        + (
            f"{b['reached_at']:,} to reach the same recall (**{ratio:.1f}x**)"
            if ratio
            else f"never reached {d['recall']:.3f} within {b['fetched']:,} fetches (> "
            f"**{b['fetched'] / srv['fetches']:.1f}x**)"
        )
        + " | ≤ 10% of the web; ≥ 5x fewer |",
        f"| fetches spent in traps | **{100 * srv['trap_fetches'] / max(srv['fetches'], 1):.2f}%** "
        f"({srv['trap_fetches']}; with the trap rules off, same budget: "
        f"{100 * osrv['trap_fetches'] / max(osrv['fetches'], 1):.1f}%, "
        f"{osrv['trap_fetches']}, recall {off['recall']:.3f}) | "
        f"{100 * bsrv['trap_fetches'] / max(bsrv['fetches'], 1):.1f}% "
        f"({bsrv['trap_fetches']:,}) | ≤ 2% |",
        f"| pages fetched, extracted and checked per second (crawl stage; one crawl "
        f"process and its reader process, the default) | **{rep.fetched / d['crawl_s']:.0f}** "
        f"fetched/s, {rep.checked / d['crawl_s']:.0f} checked/s ({rep.fetched} fetched, "
        f"{rep.checked} checked in {d['crawl_s']:.1f} s) | {b['timed'] / b['timed_s']:.0f} "
        f"fetched/s over its first {b['timed']:,} fetches (fetch and link extraction only, "
        "same threads) | ≥ 50 |",
        f"| the same, two crawl processes (`--processes 2`) | {_rate(two)} | | |",
        f"| the same, one crawl process alone (no reader process) | {_rate(solo)} | | |",
        f"| CPU per page fetched (every process of the run, all threads) and CPU-seconds "
        f"a second the run got | default: {_cpu_line(d)}; two crawl processes: "
        f"{_cpu_line(two)}; one alone: {_cpu_line(solo)} (load average {d['load'][0]:.1f} "
        f"after the first arm, {solo['load'][0]:.1f} after the last) | | |",
        f"| requests to one host closer than its interval ({INTERVAL * 1000:.0f} ms), "
        "at the server | "
        f"**{srv['gaps_under_interval']}** (shortest gap {1000 * (srv['min_gap'] or 0):.1f} ms) | "
        f"{bsrv['gaps_under_interval']} (shortest {1000 * (bsrv['min_gap'] or 0):.1f} ms) | 0 |",
        "| the same, at the client (after the end of the previous request) | "
        f"**{d['send_gaps_under']}** (shortest gap {1000 * (d['send_min_gap'] or 0):.1f} ms) | "
        f"{b['send_gaps_under']} (shortest {1000 * (b['send_min_gap'] or 0):.1f} ms) | 0 |",
        f"| pages fetched twice in the run | {srv['fetched_twice']} | "
        f"{bsrv['fetched_twice']} | 0 |",
        "",
        f"Discovery reached recall 0.95 after {d['pages_at_95']} pages of its crawl (the "
        f"rest of its budget went on finding the last few). "
        f"Discovery's stages: plan (queries of {len(world.library)} works from the library's "
        f"statistics) {d['plan_s']:.1f} s, search and site searches ({rep.queries} queries, "
        f"{rep.cached} cached) {d['search_s']:.1f} s, crawl {d['crawl_s']:.1f} s; "
        f"{rep.duplicates} pages skipped as near-duplicates, {rep.traps} trap links refused, "
        f"{d['false_pages']} pages outside the planted set reported as copies, "
        f"{len(rep.errors)} errors.",
        "",
        "CPU by stage, one crawl process alone (`time.thread_time` of the thread doing it, "
        "ms a page fetched; the indented stages are inside the check): "
        + "; ".join(f"{k.strip()} {v:.2f}" for k, v in solo["stages"].items())
        + f"; in all {1000 * solo['crawl_cpu'] / max(solo['fetched'], 1):.1f} ms a page.",
        "",
        "| source | found | fetched | checked | matched | duplicates | errors |",
        "|---|---|---|---|---|---|---|",
        src_rows,
        "",
        f"Killed and restarted (a second frontier, {args.kill_pages} pages, SIGKILL 6 s into "
        f"the crawl): {k['fetched_before_kill']} pages fetched before the kill, "
        f"{k['leased_at_kill']} URLs leased and {k['queued_at_kill']} queued at that moment; "
        f"{k['stored_at_kill']} of them fetched and stored but not yet checked, "
        f"{k['in_air_at_kill']} with their request possibly in the air; "
        f"after the restart {k['fetched_total']} pages fetched in all, "
        f"**{k['twice_other']} fetched twice** apart from those in the air "
        f"({k['twice_in_air']} of the {k['in_air_at_kill']} in the air were sent again), "
        f"**{k['never_fetched']} frontier entries lost** (seen but neither fetched nor "
        f"queued, apart from {k['forbidden']} that robots.txt forbids; "
        f"{k['queued_after']} still queued when the budget ran out).",
    ]
    publish("simweb", "bench_simweb.py", parts, started, args.write)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
