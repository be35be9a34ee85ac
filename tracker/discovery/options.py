"""The options of a discovery run (``RunOptions``: what ``yinji discover run`` and the
scheduled task set; ``tracker.discovery.run.DiscoveryRun`` takes them)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RunOptions"]


@dataclass
class RunOptions:
    works: list[str] = field(default_factory=list)  # empty: every work (max_works newest)
    max_queries: int = 10  # per work per provider per UTC day
    max_pages: int = 200  # fetches in this run
    max_works: int = 100
    concurrency: int = 4
    interval: float = 1.0  # seconds between two requests to one host
    max_depth: int = 2  # links followed from a page that did not match
    max_site_searches: int = 50  # book names searched on each site per run
    search_concurrency: int = 4  # queries in flight to one provider
    revisit_days: float = 7.0  # a page that matched is fetched again after this
    save: bool = True
    search: bool = True
    sites: bool = True
    legado: bool = True  # imported Legado sources searched and walked (``legado.walk``)
    max_chapters: int = 200  # chapters read per book per Legado site
    # A crawl shared with other workers: when the queue is empty but URLs are still out
    # with them (their pages may add links), wait up to this many seconds for more.
    wait_for_others: float = 0.0
    trap_rules: bool = True  # False only to measure what they save (bench/bench_simweb.py)
    # Processes that crawl (fetch, read, check) from the shared frontier at once, each
    # taking from the run's one page budget: -1 = one per core (at most two) when this
    # process may have children (not a Celery prefork child: a worker scales by its own
    # processes). Default 1: in two, a page and its mirror checked at the same moment
    # are both checked instead of one being a near-duplicate; two fetch faster when the
    # machine has a core to spare (docs/BENCHMARKS.md, bench/simweb).
    crawl_processes: int = 1
    # Processes that decode and extract the pages fetched by a crawl process that works
    # alone (``crawl_processes`` 1), so extraction and the check run on two cores: -1 =
    # one when the machine has two cores or more and this process may have children,
    # 0 = in the crawl process.
    read_processes: int = -1
