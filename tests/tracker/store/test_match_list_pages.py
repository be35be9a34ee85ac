"""The match list is an indexed, paginated query (issue 25): every sort of the list,
with and without the verdict filter, is read in index order (no sort of the whole
table per page), the pages hold what a full sort would give, and the total counts the
filter."""

from __future__ import annotations

import random
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from tracker.common.records import SORTS
from tracker.store import Match, MatchQuery, Suspect, utcnow
from tracker.store.sqlite import SqliteStore


def _fill(store: SqliteStore, n: int) -> list[Match]:
    rng = random.Random(3)
    now = utcnow()
    made: list[Match] = []
    for s in range(n):
        store.put_suspect(Suspect(id=f"s{s:04d}", text="正文", title=f"页 {s}"))
        m = Match(
            suspect_id=f"s{s:04d}",
            mother_id=f"m{s % 7}",
            score=rng.choice([0.5, 0.75, round(rng.random(), 3)]),  # ties on purpose
            coverage=round(rng.random(), 2),
            mother_coverage=0.1,
            verdict=rng.choice(["pending", "pending", "confirmed"]),
            created_at=now - timedelta(minutes=rng.randrange(50)),
        )
        store.put_matches(m.suspect_id, [m])
        made.append(m)
    return made


def _key(m: Match, sort: str) -> tuple:
    field = sort.lstrip("-")
    value = getattr(m, field)
    return (value, m.id)


@pytest.mark.parametrize("verdict", [None, "pending"])
@pytest.mark.parametrize("sort", SORTS)
def test_pages_follow_the_sort_and_the_total_counts(tmp_path: Path, sort: str, verdict) -> None:
    store = SqliteStore(tmp_path / "y.sqlite3")
    try:
        made = [m for m in _fill(store, 120) if verdict is None or m.verdict == verdict]
        field = sort.lstrip("-")
        # the expected order: the field in the sort's direction, ties by id ascending
        expected = sorted(made, key=lambda m: m.id)
        expected.sort(key=lambda m: getattr(m, field), reverse=sort.startswith("-"))
        got = []
        for offset in range(0, len(made) + 25, 25):
            q = MatchQuery(verdict=verdict, sort=sort, offset=offset, limit=25)
            got += store.query_matches(q)
        assert [m.id for m in got] == [m.id for m in expected]
        assert store.count_matches(MatchQuery(verdict=verdict)) == len(made)
    finally:
        store.close()


@pytest.mark.parametrize("verdict", [None, "pending"])
@pytest.mark.parametrize("sort", ["-score", "-created_at", "-coverage"])
def test_a_page_is_read_in_index_order(tmp_path: Path, sort: str, verdict) -> None:
    """No "USE TEMP B-TREE FOR ORDER BY" (a sort of every matching row for each
    page): the list's default sorts walk an index and stop at the page."""
    path = tmp_path / "y.sqlite3"
    store = SqliteStore(path)
    store.close()
    field = sort.lstrip("-")
    where = " WHERE verdict = ?" if verdict and field != "coverage" else ""
    params = [verdict] if where else []
    conn = sqlite3.connect(path)
    try:
        plan = conn.execute(
            f"EXPLAIN QUERY PLAN SELECT * FROM matches{where} "
            f"ORDER BY {field} DESC, id ASC LIMIT 50 OFFSET 500",
            params,
        ).fetchall()
    finally:
        conn.close()
    steps = " / ".join(row[3] for row in plan)
    assert "TEMP B-TREE" not in steps, steps
    assert "USING INDEX" in steps or "USING COVERING INDEX" in steps, steps
