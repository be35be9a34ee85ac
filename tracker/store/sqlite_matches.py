"""The matches in sqlite (``SqliteMatches``: ``MatchStore`` on a ``SqliteDatabase``):
a check's results written with the person's verdicts kept, the match list's filters
and pages, and the analytics page's counts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracker.common.rules import check_verdict

from ._common import (
    MACHINE_FIELDS,
    TOP_N,
    check_id,
    domain_bounds,
    dumps,
    filters_of,
    page_of,
    prepare_matches,
    reverse_domain,
    sort_of,
    to_utc,
)
from .base import (
    VERDICTS,
    Match,
    MatchQuery,
    MatchStats,
    NotFound,
    utcnow,
)
from .interfaces import MatchStore
from .sqlite_db import (
    SqliteDatabase,
    _chunks,
    _Connection,
    _like,
    _t,
)
from .sqlite_tables import _MATCH_COLS, _SUSPECT_COLS, _match, _suspect


def _match_where(query: MatchQuery | None) -> tuple[str, list[Any]]:
    f = filters_of(query)
    clauses: list[str] = []
    params: list[Any] = []
    if f.verdict is not None:
        clauses.append("verdict = ?")
        params.append(f.verdict)
    if f.min_score is not None:
        clauses.append("score >= ?")
        params.append(f.min_score)
    if f.max_score is not None:
        clauses.append("score <= ?")
        params.append(f.max_score)
    if f.mother_id is not None:
        clauses.append("mother_id = ?")
        params.append(f.mother_id)
    if f.suspect_id is not None:
        clauses.append("suspect_id = ?")
        params.append(f.suspect_id)
    if f.rdomain is not None:
        lo, hi = domain_bounds(f.rdomain)
        clauses.append("(rdomain = ? OR (rdomain >= ? AND rdomain < ?))")
        params += [f.rdomain, lo, hi]
    if f.since is not None:
        clauses.append("created_at >= ?")
        params.append(_t(f.since))
    if f.until is not None:
        clauses.append("created_at < ?")
        params.append(_t(f.until))
    if f.search is not None:
        pattern = _like(f.search)
        clauses.append(
            "(mother_title LIKE ? ESCAPE '\\' OR suspect_title LIKE ? ESCAPE '\\'"
            " OR suspect_url LIKE ? ESCAPE '\\')"
        )
        params += [pattern, pattern, pattern]
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class SqliteMatches(SqliteDatabase, MatchStore):
    """``MatchStore`` on the ``matches`` table (``SqliteStore`` is one)."""

    def put_matches(self, suspect_id: str, matches: Sequence[Match]) -> None:
        with self._tx() as c:
            self._put_matches_in(c, suspect_id, matches)

    def _put_matches_in(self, c: _Connection, suspect_id: str, matches: Sequence[Match]) -> None:
        check_id(suspect_id, "suspect id")
        now = to_utc(utcnow())
        srow = c.execute(
            f"SELECT {_SUSPECT_COLS} FROM suspects WHERE id = ?", (suspect_id,)
        ).fetchone()
        suspect = _suspect(srow) if srow is not None else None
        mother_ids = sorted({m.mother_id for m in matches})
        titles: dict[str, str] = {}
        for chunk in _chunks(mother_ids):
            marks = ",".join("?" * len(chunk))
            for row in c.execute(f"SELECT id, title FROM mothers WHERE id IN ({marks})", chunk):
                titles[row["id"]] = row["title"]
        prepared = prepare_matches(suspect_id, matches, titles, suspect, now)
        # Upsert: machine fields are overwritten, verdict/note/created_at are
        # only written when the row is new (a re-check keeps the person's work).
        updates = ", ".join(f"{f} = excluded.{f}" for f in MACHINE_FIELDS)
        c.executemany(
            f"INSERT INTO matches(id, {_MATCH_COLS}, rdomain) "
            f"VALUES ({','.join('?' * 18)}) ON CONFLICT(id) DO UPDATE SET {updates}",
            [
                (
                    m.id,
                    m.suspect_id,
                    m.mother_id,
                    m.score,
                    m.coverage,
                    m.mother_coverage,
                    dumps([p.to_dict() for p in m.passages]),
                    m.engine,
                    m.verdict,
                    m.note,
                    m.mother_title,
                    m.suspect_title,
                    m.suspect_url,
                    m.domain,
                    _t(m.created_at),
                    _t(m.updated_at),
                    dumps([r.to_dict() for r in m.regions]),
                    reverse_domain(m.domain),
                )
                for m in prepared
            ],
        )
        # Earlier machine results that this check no longer finds go away,
        # unless a person confirmed or dismissed them.
        keep = {m.id for m in prepared}
        stale = [
            (row["id"],)
            for row in c.execute(
                "SELECT id FROM matches WHERE suspect_id = ? AND verdict = 'pending'",
                (suspect_id,),
            )
            if row["id"] not in keep
        ]
        c.executemany("DELETE FROM matches WHERE id = ?", stale)

    def get_match(self, match_id: str) -> Match:
        row = (
            self._conn()
            .execute(f"SELECT {_MATCH_COLS} FROM matches WHERE id = ?", (match_id,))
            .fetchone()
        )
        if row is None:
            raise NotFound(match_id)
        return _match(row)

    def set_verdict(self, match_id: str, verdict: str, note: str | None = None) -> Match:
        check_verdict(verdict)
        now = _t(utcnow())
        with self._tx() as c:
            if note is None:
                cur = c.execute(
                    "UPDATE matches SET verdict = ?, updated_at = ? WHERE id = ?",
                    (verdict, now, match_id),
                )
            else:
                cur = c.execute(
                    "UPDATE matches SET verdict = ?, note = ?, updated_at = ? WHERE id = ?",
                    (verdict, note, now, match_id),
                )
            if cur.rowcount == 0:
                raise NotFound(match_id)
            row = c.execute(
                f"SELECT {_MATCH_COLS} FROM matches WHERE id = ?", (match_id,)
            ).fetchone()
        return _match(row)

    def query_matches(self, query: MatchQuery) -> list[Match]:
        where, params = _match_where(query)
        field, desc = sort_of(query)
        offset, limit = page_of(query)
        rows = self._conn().execute(
            f"SELECT {_MATCH_COLS} FROM matches{where} "
            f"ORDER BY {field} {'DESC' if desc else 'ASC'}, id ASC LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [_match(r) for r in rows]

    def count_matches(self, query: MatchQuery) -> int:
        where, params = _match_where(query)
        return self._conn().execute(f"SELECT count(*) FROM matches{where}", params).fetchone()[0]

    def match_stats(self, query: MatchQuery | None = None) -> MatchStats:
        where, params = _match_where(query)
        conn = self._conn()
        by_day = [
            (r[0], r[1])
            for r in conn.execute(
                f"SELECT substr(created_at, 1, 10) AS day, count(*) FROM matches{where} "
                "GROUP BY day ORDER BY day",
                params,
            )
        ]
        by_verdict = dict.fromkeys(VERDICTS, 0)
        for r in conn.execute(
            f"SELECT verdict, count(*) FROM matches{where} GROUP BY verdict", params
        ):
            by_verdict[r[0]] = r[1]
        top_mothers = [
            (r[0], r[1], r[2])
            for r in conn.execute(
                f"SELECT mother_id, max(mother_title), count(*) AS n FROM matches{where} "
                "GROUP BY mother_id ORDER BY n DESC, mother_id LIMIT ?",
                [*params, TOP_N],
            )
        ]
        domain_where = f"{where} AND domain != ''" if where else " WHERE domain != ''"
        top_domains = [
            (r[0], r[1])
            for r in conn.execute(
                f"SELECT domain, count(*) AS n FROM matches{domain_where} "
                "GROUP BY domain ORDER BY n DESC, domain LIMIT ?",
                [*params, TOP_N],
            )
        ]
        return {
            "by_day": by_day,
            "by_verdict": by_verdict,
            "top_mothers": top_mothers,
            "top_domains": top_domains,
        }
