"""``yinji discover`` end to end: a fake SearXNG and a fake GBK pirate site on 127.0.0.1,
the real CLI in a subprocess, the JSON-line contract and the summary."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from discokit import FakePirateSite, FakeSearxng, LocalServer, env_for
from textgen import work

WORKS = {
    "w-hanjiang": ("寒江夜渡", work(101, 60)),
    "w-qingshi": ("青石巷记", work(202, 60)),
    "w-untouched": ("未被复制的书", work(303, 60)),
}


def _yinji(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _ingest(env: dict[str, str], tmp_path) -> None:
    lib = tmp_path / "works.jsonl"
    lib.write_text(
        "\n".join(
            json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False)
            for i, (t, x) in WORKS.items()
        ),
        encoding="utf-8",
    )
    done = _yinji(env, "ingest", str(lib))
    assert done.returncode == 0, done.stderr


def _blog(text: str) -> bytes:
    paras = "".join(f"<p>{p}。</p>" for p in text.split("。") if p)
    return (
        f"<html><head><meta charset='utf-8'><title>转载</title></head><body>"
        f"<article>{paras}</article></body></html>"
    ).encode()


@pytest.mark.slow
def test_discover_run_finds_search_and_site_copies(tmp_path):
    copied = WORKS["w-hanjiang"][1][:1400]
    pages = {"/post/1.html": _blog(copied), "/mirror/9.html": _blog(copied)}

    def blog_route(path: str):
        if path in pages:
            return 200, {"Content-Type": "text/html; charset=utf-8"}, pages[path]
        return 404, {}, b"not found"

    qingshi = WORKS["w-qingshi"][1]
    sentences = [s + "。" for s in qingshi.split("。") if s]
    chapters = ["".join(sentences[i : i + 20]) for i in range(0, 60, 20)]
    with (
        LocalServer(blog_route) as blog,
        FakeSearxng() as searx,
        FakePirateSite({"青石巷记": chapters, "别的书": ["无关的内容。" * 30]}) as pirate,
    ):
        searx.index = [
            (f"{blog.base}/post/1.html", "转载", copied),
            (f"{blog.base}/mirror/9.html", "镜像", copied),
        ]
        env = env_for(tmp_path / "data", YINJI_SEARCH_URL=searx.url)
        _ingest(env, tmp_path)

        added = _yinji(env, "discover", "site", "add", pirate.base + "/")
        assert added.returncode == 0, added.stderr
        host, profile, encoding, template = added.stdout.strip().split("\t")
        assert profile == "jieqi" and encoding == "gbk"
        assert template.startswith(pirate.base + "/modules/article/search.php?")
        assert "searchkey={q}" in template
        listed = _yinji(env, "discover", "site", "list")
        assert host in listed.stdout

        done = _yinji(env, "discover", "run", "--json", "--interval", "0.05", "--max-queries", "4")
        assert done.returncode == 0, done.stderr
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        by_url = {line["url"]: line for line in lines}
        for line in lines:
            assert {"url", "source", "matches"} <= set(line)

        # The search hit: found by searxng, matched to the work it copies.
        blog_hits = [line for url, line in by_url.items() if url.startswith(blog.base)]
        assert len(blog_hits) == 1  # the mirror is a near-duplicate: not checked again
        assert blog_hits[0]["source"] == "searxng"
        assert [m["mother_id"] for m in blog_hits[0]["matches"]] == ["w-hanjiang"]
        assert "1 skipped as duplicates" in done.stderr

        # The pirate site: searched by title in GBK, the book, its chapters checked.
        site_lines = [line for line in lines if line["url"].startswith(pirate.base)]
        assert {line["source"] for line in site_lines} == {f"site:{host}"}, done.stderr
        chapter_urls = sorted(line["url"] for line in site_lines)
        assert chapter_urls == [f"{pirate.base}/book/1/{n}.html" for n in (1, 2, 3)]
        for line in site_lines:
            assert [m["mother_id"] for m in line["matches"]] == ["w-qingshi"]
        searched = [p for p in pirate.server.paths() if p.startswith("/modules/article/")]
        assert any("searchkey=%C7%E0%CA%AF%CF%EF%BC%C7" in p for p in searched)  # GBK

        # Nothing matched the untouched work; the quoted sentences went to searxng.
        assert not any(m["mother_id"] == "w-untouched" for line in lines for m in line["matches"])
        assert any(q.startswith('"') and len(q) > 12 for q in searx.queries)
        assert "pages with matches" in done.stderr

        # Evidence: the checked chapter is a stored suspect with a capture, like check URL.
        runs = _yinji(env, "discover", "runs", "--json")
        report = json.loads(runs.stdout.splitlines()[0])
        assert report["checked"] == len(lines)
        assert report["sources"][f"site:{host}"]["matched"] == 3
        assert {m["mother_id"] for m in report["matches"]} == {"w-hanjiang", "w-qingshi"}
        suspect = site_lines[0]["suspect_id"]
        exported = _yinji(env, "evidence", "export", suspect, "-o", str(tmp_path / "b.zip"))
        assert exported.returncode == 0, exported.stderr

        # A second run fetches none of these pages again (the frontier remembers them),
        # in two crawl processes as in one.
        before = len(pirate.server.paths())
        again = _yinji(env, "discover", "run", "--json", "--interval", "0.05", "--processes", "2")
        assert again.returncode == 0, again.stderr
        assert again.stdout.strip() == ""
        chapter_fetches = [p for p in pirate.server.paths()[before:] if p.startswith("/book/1/")]
        assert chapter_fetches == []

        removed = _yinji(env, "discover", "site", "remove", host)
        assert removed.returncode == 0
        assert host not in _yinji(env, "discover", "site", "list").stdout
