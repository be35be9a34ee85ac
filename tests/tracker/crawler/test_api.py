"""The package's public API: pages as suspects, picklable errors, config, exports.

No network: see conftest.py.
"""

from __future__ import annotations

import hashlib
import importlib
import pickle
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from tracker.crawler import Blocked, CrawlerConfig, CrawlError, HTTPStatusError, Page, Unreachable
from tracker.plumbing.config import Settings

pytestmark = pytest.mark.timeout(60)


# --------------------------------------------------------------------------- records


def test_page_to_suspect() -> None:
    page = Page(
        url="http://Pirate.TEST/a",
        final_url="http://Pirate.TEST/b?x=1",
        status=200,
        headers={"content-type": "text/html; charset=gbk"},
        encoding="gb18030",
        raw=b"raw bytes",
        html="<p>x</p>",
        title="标题",
        text="正文",
        fetched_at=datetime.now(UTC),
    )
    suspect = page.to_suspect()
    assert suspect.id == hashlib.sha1(b"http://Pirate.TEST/b?x=1").hexdigest()
    assert suspect.domain == "pirate.test"
    assert suspect.source == "crawl"
    assert suspect.raw == b"raw bytes"
    assert (suspect.title, suspect.text, suspect.url) == ("标题", "正文", page.final_url)
    assert suspect.metadata["encoding"] == "gb18030"
    assert suspect.metadata["final_url"] == page.final_url
    assert suspect.metadata["status"] == 200
    assert suspect.fetched_at == page.fetched_at
    assert page.to_suspect(id="s-1").id == "s-1"


def test_errors_pickle_for_celery() -> None:
    for err in (
        HTTPStatusError("http://x.test/", "HTTP 503 Service Unavailable", 503, retry_after=7.0),
        Blocked("http://10.0.0.1/", "x resolves to non-public address 10.0.0.1"),
        Unreachable("http://x.test/", "TLS error", transient=False),
    ):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
        assert (back.url, back.status, back.retry_after, back.transient) == (
            err.url,
            err.status,
            err.retry_after,
            err.transient,
        )
        assert isinstance(back, CrawlError)


def test_config_from_settings() -> None:
    assert CrawlerConfig.from_settings(Settings()).allow_private is False
    cfg = CrawlerConfig.from_settings(Settings(allow_private_urls=True), max_redirects=2)
    assert cfg.allow_private is True and cfg.max_redirects == 2
    defaults = CrawlerConfig()
    assert defaults.max_bytes == 5 * 1024 * 1024 and defaults.max_redirects == 5
    assert defaults.user_agent == "YinjiBot/0.1 (+copyright tracking)"
    assert defaults.min_interval == 1.0 and defaults.retries == 2


def test_every_exported_name_resolves() -> None:
    import tracker.crawler as crawler

    for name, module in crawler._EXPORTS.items():
        defined = getattr(importlib.import_module(f"tracker.crawler.{module}"), name)
        assert getattr(crawler, name) is defined, name
    assert sorted(crawler.__all__) == sorted(crawler._EXPORTS)
    with pytest.raises(AttributeError, match="no_such_name"):
        crawler.no_such_name  # noqa: B018


def test_importing_the_light_parts_loads_no_heavy_library() -> None:
    # The document readers and the workers' error handling import these; urllib3,
    # trafilatura, lxml and charset_normalizer load only when a page is fetched/parsed.
    code = (
        "import sys\n"
        "import tracker.crawler.decoding, tracker.crawler.extraction\n"
        "from tracker.crawler import CrawlError, decode_html, extract\n"
        "heavy = ('urllib3', 'trafilatura', 'lxml', 'charset_normalizer')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    code = "import sys; from tracker.crawler import Crawler; print('urllib3' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"  # the check above would see a heavy import
