"""A takedown notice of an ad-dense copy (issue #39) states its regions as stored: how
many, each one's similarity on pinyin initials, and how many inserted spans (the ad
lines) they exclude; a plain copy says nothing of exclusions, and a match stored before
regions existed says nothing of regions."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from adcopy import CHAPTER, ad_dense, prose

from tracker.cases import CaseService
from tracker.cases.notices import build_notice
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.common.records import Match
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import Suspect

HOLDER = {"name": "青简文化", "address": "北京市海淀区", "email": "legal@qingjian.example"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Library, CaseService]]:
    folder = tmp_path_factory.mktemp("notice-regions")
    lib = Library.open(Settings(data_dir=folder / "data"))
    svc = CaseService(
        SqliteCaseStore(folder / "cases.sqlite3", blob_dir=folder / "blobs"),
        Settings(data_dir=folder / "data"),
    )
    svc.set_profile(**HOLDER)
    lib.ingest([Document(id="chapter", title="雾城旧梦 第一章", text=CHAPTER)])
    lib.ingest([Document(id="other", title="别的", text=prose(7, 200))])
    yield lib, svc
    svc.store.close()
    lib.close()


def _notice_line(
    lib: Library, svc: CaseService, text: str, sid: str, lang: str
) -> tuple[str, Match]:
    url = f"https://pirate.example/book/1/{sid}.html"
    raw = f"<html><body>{text}</body></html>".encode()
    checked = lib.check_suspect(
        Suspect(id=sid, text=text, url=url, source="crawl", raw=raw), save=True
    )
    (match,) = checked.matches
    svc.apply_verdict(lib.store, sid, match.mother_id, "confirmed", who="alice")
    case = next(c for c in svc.list_cases() if any(u.url == url for u in c.urls))
    notice = build_notice(svc, [case.id], lang, matches=lib.store)
    (line,) = [ln for ln in notice.text.splitlines() if ln.startswith(f"- {url}")][-1:]
    return line, lib.store.get_match(match.id)


def test_a_notice_states_the_stored_regions_and_the_excluded_ad_lines(
    world: tuple[Library, CaseService],
) -> None:
    lib, svc = world
    text, ads = ad_dense(CHAPTER, 1)
    line, match = _notice_line(lib, svc, text, "ads", "zh")
    assert len(match.passages) > 50 and 1 <= len(match.regions) <= 3
    excluded = sum(len(r.excluded) for r in match.regions)
    assert excluded >= len(ads) - 2
    sims = "、".join(f"{r.similarity:.2f}" for r in match.regions)
    assert f"复制区域 {len(match.regions)} 处（各区域按拼音首字母的相似度：{sims}）" in line
    assert f"区域内作品该处没有的插入文字 {excluded} 处已排除，不计入区域相似度" in line

    case = next(c for c in svc.list_cases() if c.urls and c.urls[0].suspect_id == "ads")
    en = build_notice(svc, [case.id], "en", matches=lib.store).text
    (en_line,) = [
        ln for ln in en.splitlines() if ln.startswith("- https://pirate.example/book/1/ads.html:")
    ]
    n = len(match.regions)
    sims_en = ", ".join(f"{r.similarity:.2f}" for r in match.regions)
    region_word = "region" if n == 1 else "regions"
    assert f"{n} copied {region_word} (similarity on pinyin initials: {sims_en})" in en_line
    assert f"{excluded} inserted spans inside that the work does not hold there excluded" in en_line


def test_a_plain_copy_states_its_region_and_no_exclusion(
    world: tuple[Library, CaseService],
) -> None:
    lib, svc = world
    line, match = _notice_line(lib, svc, prose(11, 30) + CHAPTER[1000:2400], "plain", "zh")
    (region,) = match.regions
    assert f"复制区域 1 处（各区域按拼音首字母的相似度：{region.similarity:.2f}）" in line
    assert "插入文字" not in line


def test_a_match_stored_without_regions_says_nothing_of_regions(
    world: tuple[Library, CaseService],
) -> None:
    lib, svc = world
    text = CHAPTER[3000:4200]
    url = "https://pirate.example/book/1/old.html"
    suspect = Suspect(id="old", text=text, url=url, source="crawl", raw=b"<html>old</html>")
    (match,) = lib.check_suspect(suspect, save=True).matches
    assert match.regions
    match.regions = []  # as a match checked before regions existed is stored
    lib.store.put_matches("old", [match])
    svc.apply_verdict(lib.store, "old", match.mother_id, "confirmed", who="alice")
    case = next(c for c in svc.list_cases() if any(u.url == url for u in c.urls))
    notice = build_notice(svc, [case.id], "zh", matches=lib.store).text
    (line,) = [ln for ln in notice.splitlines() if ln.startswith(f"- {url}：")]
    assert "复制区域" not in line and "相似度" in line
    assert not re.search(r"region", line)
