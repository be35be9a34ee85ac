"""Discovery on Celery workers: one task plans and seeds the run, crawl tasks on two
worker processes share the Redis frontier (every page fetched once, whoever fetched
it), and the run's report adds the parts up. The beat sends the daily run."""

from __future__ import annotations

import itertools

import pytest
from discokit import FakePirateSite
from workerkit import MOTHER

from tracker.crawler import Crawler, CrawlerConfig
from tracker.discovery.run import RunHistory
from tracker.discovery.sites import SiteRegistry, find_search, load_profiles
from tracker.library import Library
from workers import jobs


def test_chunk_budgets_add_up_to_the_run_budget():
    from workers.tasks.discover import chunk_budgets

    assert chunk_budgets(2000, 50, 4) == [50] * 40
    assert chunk_budgets(30, 4, 2) == [4] * 6 + [3] * 2  # at most 4, 30 in all
    assert chunk_budgets(3, 50, 4) == [1, 1, 1]  # never a chunk of nothing
    assert chunk_budgets(10, 50, 2) == [5, 5]


def test_legado_sites_take_half_the_budget_shared_among_chunks():
    from workers.tasks.discover import legado_split

    hosts = [f"s{i}.test" for i in range(5)]
    split = legado_split(2000, hosts, 2)
    assert [len(h) for h, _ in split] == [3, 2] and sum(p for _, p in split) == 1000
    assert sorted(h for group, _ in split for h in group) == hosts  # each site in one chunk
    assert legado_split(1, hosts, 4) == [(hosts, 1)]  # a budget of one page: one chunk
    assert legado_split(2000, [], 4) == []


def test_beat_sends_the_daily_run(monkeypatch):
    from celery.schedules import crontab

    from workers.schedule import beat_schedule

    monkeypatch.setenv("YINJI_DISCOVER_AT", "01:15")
    entry = beat_schedule()["discover-daily"]
    assert entry["task"] == "yinji.crawl.discover_daily"
    assert entry["schedule"] == crontab(hour=1, minute=15)


@pytest.mark.slow
def test_crawl_spread_over_two_workers(installation_factory, tmp_path):
    inst = installation_factory(tmp_path / "data")
    sentences = [s + "。" for s in MOTHER.split("。") if s]
    chapters = ["".join(sentences[i : i + 3]) for i in range(0, len(sentences), 3)]
    with FakePirateSite({"茶山的故事": chapters}) as pirate:
        crawler = Crawler(CrawlerConfig(allow_private=True, min_interval=0))
        with Library.open(inst.settings) as lib:
            SiteRegistry(lib.store).add(find_search(crawler, pirate.base + "/", load_profiles()))
        for name in ("a", "b"):
            inst.worker(name=name, pool="threads", extra={"YINJI_ALLOW_PRIVATE_URLS": "1",
                                                         "YINJI_SCREENSHOTS": "off",
                                                         "YINJI_DISCOVER_CHUNK": "4"})  # fmt: skip
        options = {"interval": 0.05, "max_pages": 30, "concurrency": 2}
        planned = inst.app.send_task("yinji.crawl.discover_run", args=[options, 2])
        result = planned.get(timeout=60)
        assert result["works"] == 1 and result["seeded"] == 1
        # The run's budget of 30 pages became chunks of at most 4 pages: 8 chunks.
        assert len(result["crawl_tasks"]) == 8
        parts = [inst.app.AsyncResult(t).get(timeout=120) for t in result["crawl_tasks"]]
        assert all(p["fetched"] <= 4 for p in parts), parts
        assert sum(p["checked"] for p in parts) == len(chapters)
        assert sum(p["total"] for p in parts) == 30
        # The run's task id is a job: its chunks' progress adds up.
        status = jobs.job_status(planned.id)
        assert status["state"] == "SUCCESS" and status["progress"] == 1.0
        assert status["total"] == 30

        # Every page was fetched once, across both workers.
        fetched = [p for p in pirate.server.paths() if p.startswith("/book/1/")]
        assert sorted(fetched) == sorted(
            ["/book/1/"] + [f"/book/1/{n}.html" for n in range(1, len(chapters) + 1)]
        )
        # The site was never asked faster than the interval (measured at the server).
        times = sorted(t for t, p in pirate.server.requests if p != "/robots.txt")
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert min(gaps) >= 0.04, gaps

    with Library.open(inst.settings) as lib:
        report = RunHistory(lib.store).get(result["run"])
    assert report is not None
    assert report.checked == len(chapters)
    assert report.matched == len(chapters) >= 3
    assert {m["mother_id"] for m in report.matches} == {"mother-1"}


@pytest.mark.slow
def test_legado_sites_walked_by_their_own_chunks(installation_factory, tmp_path):
    import json

    from legadokit import JsonApiSite, json_source

    from tracker.discovery.legado.importer import import_text
    from tracker.documents.readers import Document

    sentences = [s + "。" for s in MOTHER.split("。") if s]
    chapters = ["".join(sentences[i : i + 6]) for i in range(0, 12, 6)]
    inst = installation_factory(tmp_path / "data")
    with JsonApiSite({"茶山书": ("某人", chapters)}) as api:
        with Library.open(inst.settings) as lib:
            lib.ingest(
                [
                    Document(
                        id=f"cs-{i}",
                        title=f"《茶山书》第{i}章",
                        text=text,
                        metadata={"book_id": "cs", "book_title": "茶山书", "chapter_index": i},
                    )
                    for i, text in enumerate(chapters, 1)
                ]
            )
            import_text(lib, json.dumps([json_source(api.base)], ensure_ascii=False), "f.json")
        inst.worker(name="a", pool="threads", extra={"YINJI_ALLOW_PRIVATE_URLS": "1",
                                                     "YINJI_SCREENSHOTS": "off"})  # fmt: skip
        options = {"interval": 0.0, "max_pages": 20, "concurrency": 2, "search": False}
        planned = inst.app.send_task("yinji.crawl.discover_run", args=[options, 2])
        result = planned.get(timeout=60)
        labels = [c["label"] for c in result["fanout"]]
        assert any("Legado sites 1/1" in label for label in labels), labels
        for task in result["crawl_tasks"]:
            inst.app.AsyncResult(task).get(timeout=120)
        status = jobs.job_status(planned.id)
        assert status["state"] == "SUCCESS" and status["total"] == 20
    with Library.open(inst.settings) as lib:
        report = RunHistory(lib.store).get(result["run"])
    assert report is not None
    assert {m["mother_id"] for m in report.matches} >= {"cs-1", "cs-2"}  # (MOTHER too)
