"""What the parts of a discovery run see of it (``RunView``): the other crawl processes
(``tracker.discovery.processes``) and the Legado stage (``tracker.discovery.legado.stage``)
work on a run through this, and ``tracker.discovery.run.DiscoveryRun`` has it, so that
neither part imports the run's module."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tracker.crawler import Crawler
    from tracker.discovery.books import BookTarget
    from tracker.discovery.fetcher import PageBudget
    from tracker.discovery.frontier import Frontier
    from tracker.discovery.keys import DiscoveryKeys
    from tracker.discovery.options import RunOptions
    from tracker.discovery.report import PageResult, RunReport
    from tracker.library import Library

__all__ = ["RunView"]


class RunView(Protocol):
    """A discovery run as its parts use it."""

    lib: Library
    options: RunOptions
    report: RunReport
    budget: PageBudget
    keys: DiscoveryKeys
    frontier: Frontier
    books: list[BookTarget]
    searched_today: int

    @property
    def crawler(self) -> Crawler: ...

    @property
    def crawler_factory(self) -> Callable[[], Crawler] | None:
        """How another process makes the run's crawler (None: from the settings)."""
        ...

    @property
    def crawler_elsewhere(self) -> bool:
        """Whether another process can make the run's crawler: one made by a factory,
        or from the settings (none given or made yet)."""
        ...

    def emit(self, result: PageResult) -> None: ...
