"""The web evidence view of an ad-dense copy (issue #39): one row per region with its own
similarity and the excluded ad lines listed in it, the ads struck through in the
suspect's text, the passages folded under a summary (nothing lost), in Chinese and
English."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import pytest
from adcopy import ADS, CHAPTER, ad_dense, prose
from webkit import PASSWORD, login

from tracker.documents.readers import Document
from tracker.plumbing.config import Settings
from tracker.store import Suspect
from web.ids import encode_id


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from web import accounts, create_app
    from web.cli import shutdown

    settings = Settings(data_dir=tmp_path_factory.mktemp("regions-web") / "data")
    app = create_app(settings, testing=True)
    library = app.extensions["yinji"].library
    accounts.create_user(library.store, "carol", "viewer", PASSWORD)
    library.ingest([Document(id="chapter", title="第一章 雾城", text=CHAPTER)])
    library.ingest([Document(id="other", title="别的", text=prose(7, 200))])
    yield app
    shutdown(app, app.extensions["yinji"].settings)


def _page(app: Any, match_id: str, lang: str) -> str:
    client = app.test_client()
    login(client, "carol", PASSWORD)
    response = client.get(f"/matches/{encode_id(match_id)}?lang={lang}")
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_an_ad_dense_copy_reads_as_regions_with_the_ads_excluded(app: Any) -> None:
    library = app.extensions["yinji"].library
    text, ads = ad_dense(CHAPTER, 1)
    checked = library.check_suspect(Suspect(id="pirate", text=text), save=True)
    (match,) = checked.matches
    assert len(match.passages) > 50 and 1 <= len(match.regions) <= 3
    page = _page(app, match.id, "en")

    table = page[
        page.index('<table class="data regions') : page.index(
            "</table>", page.index('<table class="data regions')
        )
    ]
    rows = re.findall(r'<tr id="region-(\d+)">', table)
    assert rows == [str(n) for n in range(1, len(match.regions) + 1)]
    for r in match.regions:
        assert f"{r.similarity:.2f}" in table
        assert f"{r.suspect_start}–{r.suspect_end}" in table
        assert f"{len(r.excluded)} excluded" in table
    # Each excluded line is listed in its region's row with its offsets and text.
    listed = re.findall(
        r'<li><span class="mono small muted">(\d+)–(\d+)</span> '
        r'<del class="excluded">([^<]*)</del>',
        table,
    )
    excluded = sorted(x for r in match.regions for x in r.excluded)
    assert sorted((int(a), int(b)) for a, b, _ in listed) == excluded
    assert {html.unescape(t) for _, _, t in listed} <= set(ADS)
    assert set(excluded) <= set(ads) and len(excluded) >= len(ads) - 2

    # In the suspect's text, every excluded ad line is struck through, and nothing else.
    suspect_pane = page[page.index('id="suspect-text"') : page.index('id="mother-text"')]
    struck = [
        html.unescape(t)
        for t in re.findall(r'<del class="excluded"[^>]*>([^<]*)</del>', suspect_pane)
    ]
    assert len(struck) == len(excluded) and set(struck) <= set(ADS)

    # The passages are all still there, folded under a summary that counts them.
    details = page[page.index('<details class="passages-details"') :]
    assert details.startswith('<details class="passages-details">')  # closed
    assert f"{len(match.passages)} passages: the pieces the alignment found" in details
    assert len(re.findall(r'class="passage-link" data-p="\d+">Passage \d+<', details)) == len(
        match.passages
    )
    # The region rows jump to their first passage in the texts.
    assert 'class="passage-link" data-p="1">Region 1<' in table

    zh = _page(app, match.id, "zh")
    assert "抄袭区域" in zh and f"已排除 {len(match.regions[0].excluded)} 处" in zh
    assert "已排除：作品该处没有的插入文字" in zh


def test_a_plain_copy_shows_its_one_region_and_its_passages_open(app: Any) -> None:
    library = app.extensions["yinji"].library
    checked = library.check_suspect(Suspect(id="plain", text=CHAPTER[2000:3200]), save=True)
    (match,) = checked.matches
    (region,) = match.regions
    assert region.excluded == []
    page = _page(app, match.id, "en")
    assert re.findall(r'<tr id="region-(\d+)">', page) == ["1"]
    assert '<del class="excluded"' not in page
    assert len(match.passages) == 1
    assert '<details class="passages-details" open>' in page


def test_a_short_ad_dense_copy_shows_its_few_passages_open(app: Any) -> None:
    # A few passages (at most 10) are read at once: the table stays open under the region.
    library = app.extensions["yinji"].library
    text, _ads = ad_dense(CHAPTER[4000:4250], 3)
    (match,) = library.check_suspect(Suspect(id="short", text=text), save=True).matches
    assert len(match.regions) < len(match.passages) <= 10
    page = _page(app, match.id, "en")
    assert '<details class="passages-details" open>' in page
    assert page.count('<del class="excluded"') >= 2 * len(match.regions[0].excluded)
