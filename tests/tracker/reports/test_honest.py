"""Honest reports: both similarities, marked differing characters, segment pairs, and a
timeline of recorded times only (tracker.reports.data / html / pdf)."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tracker.common.records import Match, Mother, NotFound, Passage, Suspect
from tracker.evidence import Capture, EvidenceLog, FileBlobStore, RedirectHop, Submission
from tracker.reports import render_html, render_pdf, report_data

S1 = "清晨的小镇还没有完全醒来，河边的石板路上只有几个早起的老人在散步。"
S2 = "卖豆浆的摊主一边生火，一边和邻居聊着昨天下午突然来的那场大雨。"
S3 = "我们这次出门，是为了找一家据说开了三十年的旧书店。"
S4 = "书店的老板是个戴眼镜的中年人，说话很慢，却记得每一本书放在哪里。"
T0 = datetime(2026, 11, 10, 8, 0, tzinfo=UTC)


@dataclass
class SegmentedPassage(Passage):
    """A passage as the new aligner gives it: segment pairs and a char similarity."""

    segments: list[Any] = field(default_factory=list)
    char_similarity: float | None = None


class _Store:
    def __init__(self, match: Match, mother: Mother | None, suspect: Suspect | None) -> None:
        self.match, self.mother, self.suspect = match, mother, suspect

    def get_match(self, mid: str) -> Match:
        if mid != self.match.id:
            raise NotFound(mid)
        return self.match

    def get_mother(self, mid: str) -> Mother:
        if self.mother is None:
            raise NotFound(mid)
        return self.mother

    def get_suspect(self, sid: str) -> Suspect:
        if self.suspect is None:
            raise NotFound(sid)
        return self.suspect


class _Library:
    def __init__(self, *records: Any) -> None:
        self.store = _Store(*records)


def _records(
    mother_text: str,
    suspect_text: str,
    passages: list[Passage],
    *,
    imported: datetime = T0,
    fetched: datetime = T0 + timedelta(days=1),
    checked: datetime = T0 + timedelta(days=2),
    updated: datetime | None = None,
    verdict: str = "confirmed",
    source: str = "crawl",
) -> tuple[Match, Mother, Suspect]:
    mother = Mother(id="m1", title="旧书店", text=mother_text, ingested_at=imported)
    suspect = Suspect(
        id="s1",
        text=suspect_text,
        title="盗版",
        url="http://pirate.example/1" if source == "crawl" else "",
        fetched_at=fetched,
        source=source,
        checked_at=checked,
    )
    match = Match(
        suspect_id="s1",
        mother_id="m1",
        score=0.9,
        coverage=0.9,
        mother_coverage=0.9,
        passages=passages,
        verdict=verdict,
        created_at=checked,
        updated_at=updated or checked + timedelta(hours=1),
    )
    return match, mother, suspect


def test_reordered_copy_shows_segment_pairs_and_real_similarity() -> None:
    mother = S1 + S2 + S3 + S4
    suspect = S4 + S3 + S2 + S1
    # One block 0-n <-> 0-n, 1.00 on initials: what the old aligner reported.
    block = Passage(0, len(suspect), 0, len(mother), 1.0)
    lib = _Library(*_records(mother, suspect, [block]))
    data = report_data(lib, "s1\x1fm1")  # type: ignore[arg-type]
    (p,) = data["passages"]
    assert p["similarity"] == p["initials_similarity"] == 1.0
    assert p["char_similarity"] is not None and p["char_similarity"] < 0.5
    assert p["char_similarity_source"] == "computed"
    assert p["segments"] == []

    # The new aligner: four segment pairs, each with its mother sentence.
    pairs = []
    s_pos = 0
    for sentence in (S4, S3, S2, S1):
        m_pos = mother.index(sentence)
        pairs.append((s_pos, s_pos + len(sentence), m_pos, m_pos + len(sentence), 1.0))
        s_pos += len(sentence)
    segmented = SegmentedPassage(0, len(suspect), 0, len(mother), 1.0, pairs, 0.31)
    lib = _Library(*_records(mother, suspect, [segmented]))
    data = report_data(lib, "s1\x1fm1")  # type: ignore[arg-type]
    (p,) = data["passages"]
    assert p["char_similarity"] == 0.31 and p["char_similarity_source"] == "record"
    assert [s["suspect_text"] for s in p["segments"]] == [S4, S3, S2, S1]
    assert all(s["char_similarity"] == 1.0 for s in p["segments"])
    assert all(s["suspect_text"] == s["mother_text"] for s in p["segments"])
    html = render_html(data)
    for label in ("1.1", "1.2", "1.3", "1.4"):
        assert f"<td>{label}<br>" in html
    text = _pdf_text(render_pdf(data, pdfa=False))
    assert "1.4" in text and "字符chars1.00" in text


def test_homophones_are_marked_in_html_and_pdf() -> None:
    mother = S1 + S2
    suspect = mother.replace("板", "版").replace("早起", "早启").replace("大雨", "大语")
    suspect = suspect.replace("河边的", "河边地") + "本站首发"
    passage = Passage(0, len(suspect), 0, len(mother), 1.0)
    data = report_data(_Library(*_records(mother, suspect, [passage])), "s1\x1fm1")  # type: ignore[arg-type]
    (p,) = data["passages"]
    assert p["diff"] is not None
    counts = p["diff"]["counts"]
    assert counts["homophone"] == 4 and counts["inserted"] == 4
    assert p["char_similarity"] is not None and p["char_similarity"] < 1.0
    html = render_html(data)
    marked = re.findall(r'<mark class="m-homophone">([^<]*)</mark>', html)
    # the legend names the mark once, then the four characters in the suspect and mother
    assert marked.count("版") == 1 and marked.count("板") == 1
    assert {"版", "启", "语", "地"} <= set(marked) and {"板", "起", "雨", "的"} <= set(marked)
    assert '<mark class="m-inserted">本站首发</mark>' in html
    assert "同音字 / homophone" in html  # the legend
    pdf = render_pdf(data, pdfa=False)
    text = _pdf_text(pdf)
    assert "同音字/homophone" in text and "本站首发" in text
    assert f"字符chars{p['char_similarity']:.2f}" in text and "首字母initials1.00" in text


def test_submitted_text_has_no_fetch_time() -> None:
    passage = Passage(0, len(S1), 0, len(S1), 1.0)
    match, mother, suspect = _records(S1, S1, [passage], source="text")
    data = report_data(_Library(match, mother, suspect), match.id)  # type: ignore[arg-type]
    assert data["suspect"]["fetched"] is False and data["suspect"]["fetched_at"] is None
    assert data["suspect"]["received_at"] == "2026-11-11T08:00:00.000Z"
    events = [e["event"] for e in data["timeline"]]
    assert events == ["imported", "submitted", "checked", "verdict"]
    assert "submitted text, not fetched" in data["timeline"][1]["note"]
    assert data["timeline_problems"] == []
    html = render_html(data)
    assert "submitted text, not fetched" in html
    assert "submittedtext,notfetched" in _pdf_text(render_pdf(data, pdfa=False))


def test_timeline_in_order_and_missing_times() -> None:
    passage = Passage(0, len(S1), 0, len(S1), 1.0)
    data = report_data(_Library(*_records(S1, S1, [passage])), "s1\x1fm1")  # type: ignore[arg-type]
    at = {e["event"]: e["at"] for e in data["timeline"]}
    assert at == {
        "imported": "2026-11-10T08:00:00.000Z",
        "fetched": "2026-11-11T08:00:00.000Z",
        "checked": "2026-11-12T08:00:00.000Z",
        "verdict": "2026-11-12T09:00:00.000Z",
    }
    assert data["timeline_problems"] == []
    # A pending match has no verdict time; a re-check after the verdict hides it: the
    # report says the time is not recorded rather than showing the re-check's.
    pending = _records(S1, S1, [passage], verdict="pending")
    data = report_data(_Library(*pending), "s1\x1fm1")  # type: ignore[arg-type]
    assert data["timeline"][-1]["at"] is None and "pending" in data["timeline"][-1]["note"]
    rechecked = _records(S1, S1, [passage], updated=T0 + timedelta(days=2))
    data = report_data(_Library(*rechecked), "s1\x1fm1")  # type: ignore[arg-type]
    assert data["timeline"][-1]["at"] is None
    assert "not recorded" in data["timeline"][-1]["note"]
    # The suspect record deleted: no fetch time is invented.
    match, mother, _ = _records(S1, S1, [passage])
    data = report_data(_Library(match, mother, None), match.id)  # type: ignore[arg-type]
    assert data["suspect"]["fetched_at"] is None


def test_contradictory_times_are_flagged_loudly() -> None:
    # The demo's bug: checked on 11-10 while the work was imported on 11-22.
    passage = Passage(0, len(S1), 0, len(S1), 1.0)
    records = _records(
        S1,
        S1,
        [passage],
        imported=datetime(2026, 11, 22, tzinfo=UTC),
        fetched=datetime(2026, 11, 9, tzinfo=UTC),
        checked=datetime(2026, 11, 10, tzinfo=UTC),
    )
    data = report_data(_Library(*records), "s1\x1fm1")  # type: ignore[arg-type]
    assert len(data["timeline_problems"]) == 1
    assert "2026-11-10T00:00:00.000Z is before" in data["timeline_problems"][0]
    html = render_html(data)
    assert '<p class="alarm">时间顺序矛盾' in html
    assert "Timescontradicteachother" in _pdf_text(render_pdf(data, pdfa=False))


def test_evidence_log_supplies_capture_check_and_verdict_times(tmp_path: Path) -> None:
    passage = Passage(0, len(S1), 0, len(S1), 1.0)
    match, mother, suspect = _records(S1, S1, [passage])
    with EvidenceLog.open(tmp_path) as log:
        capture = Capture.build(
            log.blobs,
            suspect_id="s1",
            requested_url="http://pirate.example/a",
            redirects=[RedirectHop("http://pirate.example/a", 301, "/1")],
            final_url="http://pirate.example/1",
            resolved_ip="203.0.113.7",
            http_status=200,
            headers={"content-type": "text/html"},
            body=b"<p>page</p>",
            fetched_at=T0 + timedelta(days=1, hours=5),
            crawler_version="test",
            text=S1,
        )
        entry = log.record_capture(capture)
        log.record_check(
            suspect_id="s1",
            matches=[match],
            engine="daguan",
            checked_at=T0 + timedelta(days=1, hours=6),
            capture_index=entry.index,
        )
        log.record_verdict(
            suspect_id="s1", mother_id="m1", verdict="confirmed", at=T0 + timedelta(days=1, hours=7)
        )
        data = report_data(_Library(match, mother, suspect), match.id, evidence=log)  # type: ignore[arg-type]
    at = {e["event"]: e["at"] for e in data["timeline"]}
    assert at["fetched"] == "2026-11-11T13:00:00.000Z"
    assert at["checked"] == "2026-11-11T14:00:00.000Z"
    assert at["verdict"] == "2026-11-11T15:00:00.000Z"
    assert data["capture"] is not None and data["capture"]["log_index"] == entry.index
    assert data["capture"]["resolved_ip"] == "203.0.113.7"
    assert data["capture"]["redirects"] == ["301 http://pirate.example/a -> /1"]
    html = render_html(data)
    assert "203.0.113.7" in html and capture.body.sha256 in html
    # A text handed in, recorded as a submission: never a fetch time.
    sub = Submission.build(
        FileBlobStore(tmp_path / "b"), suspect_id="s1", source="text", received_at=T0, text=S1
    )
    data = report_data(_Library(match, mother, suspect), match.id, submission=sub)  # type: ignore[arg-type]
    assert data["suspect"]["fetched_at"] is None and data["suspect"]["received_at"]


def _pdf_text(pdf: bytes) -> str:
    pypdf = pytest.importorskip("pypdf")
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    return re.sub(r"\s+", "", "".join(page.extract_text() for page in reader.pages))
