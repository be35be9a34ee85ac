"""POST /api/v1/mothers warns about works shorter
than the library's minimum copied length (a copy of one alone can never be reported)."""

from __future__ import annotations

from textgen import work
from webkit import WebSystem, wait_job, web_system

from web.ids import encode_id

system = web_system()


def test_short_works_are_imported_with_a_warning(system: WebSystem) -> None:
    api = system.client()
    headers = {"Authorization": f"Bearer {system.tokens['analyst']}"}
    short = "春眠不觉晓，处处闻啼鸟。"  # 10 Chinese characters
    response = api.post(
        "/api/v1/mothers",
        json={
            "documents": [
                {"id": "poem", "title": "春晓", "text": short},
                {"id": "long", "title": "长篇", "text": work(4242, 30)},
            ]
        },
        headers=headers,
    )
    assert response.status_code == 202
    body = response.get_json()
    (warning,) = body["warnings"]
    assert "'poem'" in warning and "10 Chinese characters" in warning
    assert "minimum copied length" in warning and "--min-copied" in warning
    assert wait_job(api, body["job_id"], headers=headers)["state"] == "SUCCESS"
    poem = api.get(f"/api/v1/mothers/{encode_id('poem')}", headers=headers)
    assert poem.status_code == 200  # imported all the same


def test_a_compensated_case_counts_as_a_removal() -> None:
    from tracker.cases.model import Case, now
    from web.casework import is_removal

    paid = Case(id="c1", work="w", domain="p.example", state="compensated", removed_at=now())
    back = Case(id="c2", work="w", domain="p.example", state="open", removed_at=now())
    assert is_removal(paid) and not is_removal(back)
