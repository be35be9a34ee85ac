"""Search providers against local stand-ins: the JSON shapes of SearXNG, Google
Programmable Search and Brave; quotas, the cache, 429 backoff and every kind of failure."""

from __future__ import annotations

import json

import pytest
from discokit import FakeSearxng, LocalServer

from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.providers import (
    BraveProvider,
    GoogleProvider,
    ProviderError,
    Searcher,
    SearxngProvider,
    providers_from_env,
    quota_of,
)
from tracker.plumbing.config import SettingError

# Every test here talks to a local stand-in server (tests/support/fasttier.py).
pytestmark = pytest.mark.slow


@pytest.mark.slow
def test_searxng_json_api():
    with FakeSearxng() as searx:
        searx.index = [("http://a.test/1", "标题", "他在灯下翻看那封泛黄的旧信")]
        hits = SearxngProvider(searx.url).search('"那封泛黄的旧信"')
        assert [(h.url, h.provider) for h in hits] == [("http://a.test/1", "searxng")]
        assert searx.queries == ['"那封泛黄的旧信"']


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("html", "not JSON"),
        ("500", "HTTP 500"),
        ("429", "429 too many requests"),
    ],
)
@pytest.mark.slow
def test_searxng_failures_are_provider_errors(mode, message):
    with FakeSearxng() as searx:
        searx.mode = mode
        with pytest.raises(ProviderError, match=message) as err:
            SearxngProvider(searx.url).search("x")
        assert err.value.provider == "searxng"


@pytest.mark.slow
def test_timeout_and_unreachable():
    with FakeSearxng() as searx:
        searx.mode, searx.delay = "slow", 2.0
        with pytest.raises(ProviderError, match=r"no answer within 0\.5 s"):
            SearxngProvider(searx.url, timeout=0.5).search("x")
        port = searx.server.port
    with pytest.raises(ProviderError, match="unreachable"):
        SearxngProvider(f"http://127.0.0.1:{port}/search", timeout=1).search("x")


@pytest.mark.slow
def test_google_and_brave_shapes():
    seen: list[str] = []

    def route(path: str):
        seen.append(path)
        if path.startswith("/customsearch/v1?"):
            body = {"items": [{"link": "http://g.test/1", "title": "t", "snippet": "s"}]}
        elif path.startswith("/res/v1/web/search?"):
            body = {"web": {"results": [{"url": "http://b.test/1", "title": "t",
                                         "description": "d"}]}}  # fmt: skip
        else:
            return 404, {}, b""
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    with LocalServer(route) as srv:
        g = GoogleProvider("KEY", "CX", f"{srv.base}/customsearch/v1").search("q")
        b = BraveProvider("BKEY", f"{srv.base}/res/v1/web/search").search("q")
    assert [h.url for h in g] == ["http://g.test/1"] and g[0].snippet == "s"
    assert [h.url for h in b] == ["http://b.test/1"] and b[0].snippet == "d"
    assert "key=KEY" in seen[0] and "cx=CX" in seen[0]


def test_providers_from_env_and_quota_setting():
    env = {"YINJI_SEARCH_URL": "http://s/search", "YINJI_BRAVE_API_KEY": "k",
           "YINJI_GOOGLE_API_KEY": "g"}  # fmt: skip
    assert [p.name for p in providers_from_env(env)] == ["searxng", "brave"]
    assert quota_of("google", {}) == 100
    assert quota_of("brave", {"YINJI_SEARCH_QUOTA_BRAVE": "7"}) == 7
    with pytest.raises(SettingError, match="YINJI_SEARCH_QUOTA_BRAVE"):
        quota_of("brave", {"YINJI_SEARCH_QUOTA_BRAVE": "lots"})


@pytest.mark.slow
def test_searcher_caches_counts_quota_and_backs_off(redis_client):
    sleeps: list[float] = []
    with FakeSearxng() as searx:
        searx.index = [("http://a.test/1", "t", "一句话")]
        provider = SearxngProvider(searx.url)
        s = Searcher([provider], redis_client, DiscoveryKeys("t"), quotas={"searxng": 2},
                     sleep=sleeps.append)  # fmt: skip
        first = s.search(provider, "一句话")
        again = s.search(provider, "一句话")
        assert not first.cached and again.cached and again.hits == first.hits
        assert len(searx.queries) == 1  # the cached answer cost nothing
        assert s.search(provider, "另一句").error == ""
        over = s.search(provider, "第三句")
        assert "daily quota of 2 queries used" in over.error
        assert len(searx.queries) == 2

        s2 = Searcher([provider], redis_client, DiscoveryKeys("t2"), sleep=sleeps.append)
        searx.mode = "429"
        limited = s2.search(provider, "x")
        assert "429" in limited.error and sleeps == [0.0]  # Retry-After: 0, tried once more
        resting = s2.search(provider, "y")
        assert "resting after 429" in resting.error
        assert searx.queries.count("y") == 0  # not asked while resting
