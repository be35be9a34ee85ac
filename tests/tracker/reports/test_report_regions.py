"""The evidence reports of an ad-dense copy (issue #39) show regions: one row per copied
stretch with its own similarity, the inserted ad lines inside it marked as excluded; the
passages stay (folded in the HTML report, in full in the PDF)."""

from __future__ import annotations

import io
import json
import re

import pytest
from adcopy import ADS, CHAPTER, ad_dense, prose

from tracker.documents.readers import Document
from tracker.library import Library
from tracker.reports import build_report, render_html, render_pdf, report_data
from tracker.store import Suspect


@pytest.fixture(scope="module")
def ad_match(library: Library) -> tuple[str, str, list[tuple[int, int]]]:
    library.ingest([Document(id="ad-chapter", title="第一章 雾城", text=CHAPTER)])
    library.ingest([Document(id="ad-other", title="别的", text=prose(7, 200))])
    text, ads = ad_dense(CHAPTER, 1)
    checked = library.check_suspect(
        Suspect(id="ad-pirate", text=text, url="http://pirate.example/ad.html"), save=True
    )
    (match,) = [m for m in checked.matches if m.mother_id == "ad-chapter"]
    return match.id, text, ads


def test_report_data_holds_each_region_with_its_texts_and_excluded_ads(
    library: Library, ad_match: tuple[str, str, list[tuple[int, int]]]
) -> None:
    match_id, text, ads = ad_match
    data = report_data(library, match_id)
    regions = data["regions"]
    assert 1 <= len(regions) <= 3 < len(data["passages"])
    excluded = [(x["suspect_start"], x["suspect_end"]) for r in regions for x in r["excluded"]]
    assert set(excluded) <= set(ads) and len(excluded) >= len(ads) - 2
    for r in regions:
        assert r["suspect_text"] == text[r["suspect_start"] : r["suspect_end"]]
        assert r["mother_text"] == CHAPTER[r["mother_start"] : r["mother_end"]]
        assert all(x["suspect_text"] in ADS for x in r["excluded"])
        assert r["region_characters"] == len(r["suspect_text"]) - sum(
            x["suspect_end"] - x["suspect_start"] for x in r["excluded"]
        )
    # Every passage lies in one region, numbered as in the passage list.
    inside = sorted(n for r in regions for n in r["passages"])
    assert inside == [p["n"] for p in data["passages"]]
    # The JSON report carries the same.
    as_json = json.loads(build_report(library, match_id, "json"))
    assert as_json["regions"] == json.loads(json.dumps(regions, ensure_ascii=False))


def test_html_report_shows_regions_with_the_ads_struck_through(
    library: Library, ad_match: tuple[str, str, list[tuple[int, int]]]
) -> None:
    match_id, _text, _ads = ad_match
    data = report_data(library, match_id)
    page = render_html(data)
    assert "抄袭区域对照 / Copied regions side by side" in page
    rows = re.findall(r'<tr id="region-R\d+">', page)
    assert len(rows) == len(data["regions"])
    struck = re.findall(r'<del class="m-excluded">([^<]*)</del>', page)
    excluded = sum(len(r["excluded"]) for r in data["regions"])
    # The legend's sample plus every excluded ad line, each with its own text.
    assert len(struck) == excluded + 1 and set(struck[1:]) <= set(ADS)
    assert f"{excluded} 处已排除" in page
    for r in data["regions"]:
        assert f"similarity (initials) {r['similarity']:.2f}" in page
    # The passages are still there, folded under their summary (many more than regions).
    summary = f"Copied passages side by side ({len(data['passages'])})"
    assert re.search(r"<details>\s*<summary>抄袭段落对照 / " + re.escape(summary), page)
    assert page.count("字符 chars ") == len(data["passages"])
    assert '<meta name="viewport"' in page


def test_pdf_report_has_a_region_table_before_the_passages(
    library: Library, ad_match: tuple[str, str, list[tuple[int, int]]]
) -> None:
    pypdf = pytest.importorskip("pypdf")
    match_id, _text, _ads = ad_match
    data = report_data(library, match_id)
    pdf = render_pdf(data, pdfa=False)
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    flat = re.sub(r"\s+", "", "".join(page.extract_text() for page in reader.pages))
    regions_at = flat.index("抄袭区域对照/Copiedregionssidebyside")
    assert regions_at < flat.index("抄袭段落对照/Copiedpassagessidebyside")
    excluded = sum(len(r["excluded"]) for r in data["regions"])
    assert f"{len(data['regions'])}个区域，由{len(data['passages'])}个段落组成" in flat
    assert f"插入文字{excluded}处已排除" in flat
    assert f"抄袭区域数Copiedregions{len(data['regions'])}" in flat


def test_a_match_stored_without_regions_reports_its_passages_as_before(
    library: Library, ad_match: tuple[str, str, list[tuple[int, int]]]
) -> None:
    checked = library.check_suspect(Suspect(id="old-record", text=CHAPTER[:1500]), save=True)
    (match,) = [m for m in checked.matches if m.mother_id == "ad-chapter"]
    assert match.regions
    match.regions = []  # as a match checked before regions existed is stored
    library.store.put_matches(match.suspect_id, [match])
    data = report_data(library, match.id)
    assert data["regions"] == [] and data["passages"]
    page = render_html(data)
    assert "Copied regions" not in page and "<details" not in page
    assert "抄袭段落对照 / Copied passages side by side" in page
