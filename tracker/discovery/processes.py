"""The processes of a discovery crawl besides its own: reader processes that decode
and extract pages (``RunOptions.read_processes``), and other crawl processes on the
same frontier and page budget (``RunOptions.crawl_processes``), whose pages and report
parts come back through a queue (``CrawlProcesses.drain``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from tracker.discovery.fetcher import PageBudget, read_to_check
from tracker.discovery.report import PageResult, RunReport, add_report

if TYPE_CHECKING:
    from tracker.crawler.crawler import ReadPage
    from tracker.discovery.runview import RunView

__all__ = ["CrawlProcesses", "may_fork"]


def may_fork() -> bool:
    """Whether this process may start children (a Celery prefork child may not)."""
    import multiprocessing

    return not multiprocessing.current_process().daemon


class CrawlProcesses:
    """The reader pool and the other crawl processes of ``run`` while it crawls."""

    def __init__(self, run: RunView, part: Callable[..., None]) -> None:
        """``part``: the entry of another crawl process (picklable; its arguments are
        the library's settings, the run's options, keys and id, the crawler factory,
        the shared page counter and the queue of what it sends back)."""
        self.run = run
        self.part = part
        self.readers: Any = None  # the reader processes' pool while crawling
        self.helpers: list[Any] = []  # the other crawl processes while crawling
        self.inbox: Any = None  # what they send: pages done, their reports

    def start_readers(self) -> None:
        import multiprocessing
        import os

        n = self.run.options.read_processes
        if n < 0:
            n = 1 if (os.cpu_count() or 1) > 1 and may_fork() and not self.helpers else 0
        if n > 0 and self.readers is None:
            from concurrent.futures import ProcessPoolExecutor

            # spawn, not fork: this process has threads (a fork would copy their locks).
            self.readers = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"))

    def start_helpers(self) -> None:
        """Start the other crawl processes (``RunOptions.crawl_processes``): each opens
        the library, claims from the same frontier and sends back its pages and its part
        of the report; the page budget is one counter all of them take from."""
        import multiprocessing
        import os

        n = self.run.options.crawl_processes
        if n < 0:
            n = min(2, os.cpu_count() or 1) if may_fork() else 1
        if not self.run.crawler_elsewhere or not may_fork():
            n = 1  # no way to make the crawler elsewhere, or no children allowed here
        if n <= 1:
            self.run.budget = PageBudget(self.run.options.max_pages)
            return
        ctx = multiprocessing.get_context("spawn")  # this process has threads: no fork
        self.run.budget = PageBudget(self.run.options.max_pages, ctx.Value("q", 0))
        self.inbox = ctx.Queue()
        options = asdict(self.run.options)
        # A helper alone in its process: no helpers, no reader of its own; it waits a
        # while for links from pages still out with the others, as a Celery chunk does.
        options.update(crawl_processes=1, read_processes=0)
        options["wait_for_others"] = max(self.run.options.wait_for_others, 10.0)
        for part in range(1, n):
            proc = ctx.Process(
                target=self.part,
                args=(
                    self.run.lib.settings,
                    options,
                    self.run.keys,
                    f"{self.run.report.id}~p{part}",
                    self.run.crawler_factory,
                    self.run.budget.shared,
                    self.inbox,
                ),
                daemon=True,
            )
            proc.start()
            self.helpers.append(proc)

    def drain(self, timeout: float = 0.0) -> None:
        """Take in what the other crawl processes sent: their pages (``on_page`` is
        called here, in this thread) and, at their end, their part of the report."""
        import queue

        if self.inbox is None:
            return
        while True:
            try:
                kind, data = self.inbox.get(timeout=timeout) if timeout else self.inbox.get_nowait()
            except queue.Empty:
                return
            timeout = 0.0
            if kind == "page":
                self.run.emit(PageResult(**data))
            elif kind == "report":
                add_report(self.run.report, RunReport.from_dict(data))
            else:
                self.run.report.error(str(data))

    def stop_helpers(self) -> None:
        """Wait for the other crawl processes (their budget is the shared counter, so
        they end when it runs out or the frontier is empty), taking in what they send."""
        while any(p.is_alive() for p in self.helpers):
            self.drain(timeout=0.2)
        for proc in self.helpers:
            proc.join()
            if proc.exitcode:
                self.run.report.error(f"a crawl process ended with exit code {proc.exitcode}")
        self.drain()
        self.helpers, self.inbox = [], None

    def read(self, body: bytes, content_type: str | None, mime: str, url: str) -> ReadPage:
        """``read_to_check`` in a reader process (in this one when there is none, or
        when the pool broke)."""
        from concurrent.futures.process import BrokenProcessPool

        pool = self.readers
        if pool is not None:
            try:
                return pool.submit(read_to_check, body, content_type, mime, url).result()
            except (BrokenProcessPool, RuntimeError):
                self.readers = None  # a reader died: read here from now on
        return read_to_check(body, content_type, mime, url)

    def stop_readers(self) -> None:
        if self.readers is not None:
            self.readers.shutdown(wait=True, cancel_futures=True)
            self.readers = None
