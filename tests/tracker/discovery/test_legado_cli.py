"""``yinji discover site import`` as a user runs it: a Legado file shared by readers
(BOM, comment, trailing comma), one line per source (``--json``: one object), the sites
listed with where they came from, then ``yinji discover run`` finding the copies."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from discokit import env_for
from legadokit import GbkPostSite, JsonApiSite, legado_file
from textgen import work


def _yinji(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _chapters(seed: int) -> list[str]:
    sentences = [s + "。" for s in work(seed, 60).split("。") if s]
    return ["".join(sentences[i : i + 30]) for i in (0, 30)]


@pytest.mark.slow
def test_import_a_users_file_then_run(tmp_path):
    books = {"寒江夜渡": ("林远", _chapters(31))}
    api_books = {"青石巷记": ("苏晴", _chapters(32))}
    with GbkPostSite(books) as gbk, JsonApiSite(api_books) as api:
        env = env_for(tmp_path / "data")
        rows = []
        for title, (author, chapters) in {**books, **api_books}.items():
            for i, text in enumerate(chapters, 1):
                rows.append(
                    {
                        "id": f"{title}-{i}",
                        "title": f"《{title}》第{i}章",
                        "text": text,
                        "book_id": title,
                        "book_title": title,
                        "author": author,
                    }
                )
        works = tmp_path / "works.jsonl"
        works.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
        assert _yinji(env, "ingest", str(works)).returncode == 0
        sources = tmp_path / "我的书源.json"
        sources.write_text(legado_file(gbk.base, api.base), encoding="utf-8")

        done = _yinji(env, "discover", "site", "import", str(sources), "--json")
        assert done.returncode == 0, done.stderr
        verdicts = [json.loads(line) for line in done.stdout.splitlines()]
        assert [(v["name"], v["status"]) for v in verdicts] == [
            ("GBK 笔趣阁", "imported"),
            ("JSON 小说 API", "imported"),
            ("要脚本的站", "partial"),
        ]
        assert all({"name", "url", "status", "reasons"} <= set(v) for v in verdicts)
        assert "3 sources: 2 imported, 1 partial" in done.stderr
        plain = _yinji(env, "discover", "site", "import", str(sources))  # again: updated
        assert plain.stdout.splitlines()[2].startswith("partial\t要脚本的站\t")
        assert "search needs JavaScript" in plain.stdout
        listed = _yinji(env, "discover", "site", "list")
        assert listed.stdout.count(str(sources)) == 3 and "not searched yet" in listed.stdout
        missing = _yinji(env, "discover", "site", "import", str(tmp_path / "nope.json"))
        assert missing.returncode != 0 and "nope.json" in missing.stderr

        ran = _yinji(env, "discover", "run", "--json", "--interval", "0")
        assert ran.returncode == 0, ran.stderr
        pages = [json.loads(line) for line in ran.stdout.splitlines()]
        found = {m["mother_id"] for p in pages for m in p["matches"]}
        assert found == {f"{t}-{i}" for t in ("寒江夜渡", "青石巷记") for i in (1, 2)}, ran.stderr
        assert "no book 《青石巷记》" in ran.stderr
        again = _yinji(env, "discover", "run", "--interval", "0")
        assert "did nothing:" in again.stderr and "already made today" in again.stderr
        listed = _yinji(env, "discover", "site", "list")
        assert "enabled; last search " in listed.stdout and " ok, " in listed.stdout
