"""Page-level similarity for the crawler: URL SimHash, HTML structure SimHash, and a small
near-duplicate filter built on both.

- :func:`url_simhash` hashes a URL's parts with importance weights (host 4, path 3,
  query 2, scheme 0.5, fragment 0.5). URLs built from the same template on the same site
  (``/book/123/456.html`` and ``/book/123/457.html``) come out close, the same path on
  another host far.
- :func:`structure_simhash` hashes the tag tree of a page (tag paths with normalized class
  names, no text), so two chapter pages rendered by the same template score high whatever
  their text, and pages of another site's template low.

Similarities are percentages ``100 * (1 - hamming / 64)``. The thresholds below were chosen
on the URL and page shapes of ``tests/test_pagesim.py`` (numbers in the comments).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

import numpy as np

from tracker.fingerprints.simhash import hamming, simhash_features
from tracker.indexes.hamming import popcount

if TYPE_CHECKING:
    from tracker.indexes.redis_client import RedisClient

__all__ = [
    "STRUCTURE_NEAR_DUPLICATE",
    "STRUCTURE_SAME_TEMPLATE",
    "URL_NEAR_DUPLICATE",
    "URL_SAME_TEMPLATE",
    "NearDuplicateFilter",
    "canonical_url",
    "page_text_simhash",
    "similarity",
    "structure_features",
    "structure_simhash",
    "structure_similarity",
    "url_features",
    "url_simhash",
    "url_similarity",
]

# Thresholds (percent; similarities move in steps of 100/64 = 1.5625). Chosen on 400 random
# pairs per kind over 7 pirate-site URL templates and random hosts (and checked on the
# hand-written URLs of tests/test_pagesim.py):
#   kind                               min   p5  median  p95   max
#   sibling (next chapter, same book)  82.8 89.1  95.3   98.4 100.0
#   same host, another page/template   57.8 71.9  84.4   93.8  98.4
#   another host, same path            35.9 43.8  54.7   67.2  76.6
#   the same URL spelled otherwise     87.5 93.8 100.0  100.0 100.0
# URL_SAME_TEMPLATE = 87.5 (<= 8 bits): 98% of siblings, 36% of other same-host pages,
# no other-host pair. URL_NEAR_DUPLICATE = 96.875 (<= 2 bits): 82% of respellings but also
# 12% of siblings -- a URL alone cannot tell a respelling from the next chapter (see
# NearDuplicateFilter).
URL_SAME_TEMPLATE = 87.5
URL_NEAR_DUPLICATE = 96.875
# Structure: one template with other text and paragraph counts 95.3-100; other templates
# (three site layouts, and a site's chapter page against its index page) 53-72.
STRUCTURE_SAME_TEMPLATE = 85.0
STRUCTURE_NEAR_DUPLICATE = 95.0

WEIGHT_HOST = 4.0
WEIGHT_PATH = 3.0
WEIGHT_QUERY = 2.0
WEIGHT_SCHEME = 0.5
WEIGHT_FRAGMENT = 0.5

_DIGITS = re.compile(r"\d+")
# Second-level labels under which registrations happen one level deeper (a.com.cn).
_SECOND_LEVEL = {"com", "net", "org", "gov", "edu", "ac", "co", "or", "ne", "go"}
_TRACKING = {
    "spm",
    "from",
    "fr",
    "ref",
    "referer",
    "referrer",
    "share",
    "share_from",
    "fbclid",
    "gclid",
    "yclid",
    "mc_cid",
    "mc_eid",
    "_hsenc",
    "_hsmi",
}
_IPV4 = re.compile(r"\d+\.\d+\.\d+\.\d+\Z")


def similarity(a: int, b: int, bits: int = 64) -> float:
    """``100 * (1 - hamming(a, b) / bits)``."""
    return 100.0 * (1.0 - hamming(a, b) / bits)


def _shape(token: str) -> str:
    """Template shape of a URL token: digit runs collapsed to ``0`` (``457.html`` ->
    ``0.html``), so the numbered siblings of one template share it."""
    return _DIGITS.sub("0", token)


def _is_tracking(key: str) -> bool:
    """Parameters that only say where a click came from (same page with or without)."""
    k = key.lower()
    return k.startswith("utm_") or k in _TRACKING


def base_domain(host: str) -> str:
    """Registrable domain, approximately: the last two labels, three under a generic
    second level (``a.com.cn``, ``a.co.uk``); an IP address as is."""
    labels = host.split(".")
    if _IPV4.match(host) or ":" in host or len(labels) <= 2:
        return host
    n = 3 if labels[-2] in _SECOND_LEVEL and len(labels[-1]) == 2 else 2
    return ".".join(labels[-n:])


def url_features(url: str) -> dict[str, float]:
    """Weighted features of a URL (see the module docstring)."""
    parts = urlsplit(url.strip())
    feats: dict[str, float] = defaultdict(float)
    # host 4: full host 2.5, registrable domain 1.5 (1 + 0.5 spread over the sub-domain
    # labels if any), so m.a.com and a.com share part of the host weight, other.com none.
    # Unequal halves on purpose: two equal features cancel out on the half of the bits
    # where their hashes disagree, leaving those bits to the light features (noise); with
    # 2.5 / 1.5 the host always votes, and other hosts separate from same-host pages in
    # 99.8% of our random pairs instead of 97.8%.
    host = (parts.hostname or "").lower().rstrip(".")
    if host.startswith("www."):  # www.a.com and a.com are one site
        host = host[4:]
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if host:
        base = base_domain(host.split(":")[0])
        feats[f"h:{host}"] += WEIGHT_HOST * 5 / 8
        subs = host.split(":")[0][: -len(base)].strip(".").split(".") if host != base else []
        subs = [s for s in subs if s]
        if subs:
            feats[f"d:{base}"] += WEIGHT_HOST / 4
            for label in subs:
                feats[f"hl:{label}"] += WEIGHT_HOST / 8 / len(subs)
        else:
            feats[f"d:{base}"] += WEIGHT_HOST * 3 / 8
    # path 3, shared by its segments; each segment: its value (2/3) and shape (1/3), both
    # tied to the segment's position.
    segments = [unquote(s) for s in parts.path.split("/") if s]
    if segments:
        share = WEIGHT_PATH / len(segments)
        for i, seg in enumerate(segments):
            feats[f"p{i}:{seg}"] += share * 2 / 3
            feats[f"ps{i}:{_shape(seg)}"] += share / 3
    else:
        feats["p:/"] += WEIGHT_PATH
    # query 2, shared by its parameters: each as k=v (half) and as the key alone (half).
    params = [
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _is_tracking(k)
    ]
    if params:
        share = WEIGHT_QUERY / len(params)
        for k, v in params:
            feats[f"q:{k}={v}"] += share / 2
            feats[f"qk:{k}"] += share / 2
    # http and https serve the same pages on the sites we crawl: one scheme feature.
    scheme = parts.scheme.lower() or "http"
    feats[f"s:{'http' if scheme == 'https' else scheme}"] += WEIGHT_SCHEME
    if parts.fragment:
        feats[f"f:{parts.fragment}"] += WEIGHT_FRAGMENT
    return dict(feats)


def url_simhash(url: str) -> int:
    """64-bit SimHash of a URL's weighted parts."""
    return simhash_features(url_features(url))


def url_similarity(a: str, b: str) -> float:
    """Percentage 0..100 (100: same fingerprint)."""
    return similarity(url_simhash(a), url_simhash(b))


# -- structure -----------------------------------------------------------------------------
STRUCTURE_DECAY = 0.9
MAX_DEPTH = 40
MAX_CLASSES = 3


def _node_name(el: Any) -> str:
    tag = str(el.tag).lower()
    classes = el.get("class")
    if not classes:
        return tag
    # Class names normalized: lower case, digits collapsed (post-123 / post-456 are one
    # class), deduplicated and sorted (order in the attribute is irrelevant to templates).
    names = sorted({_shape(c.lower()) for c in classes.split()})[:MAX_CLASSES]
    return ".".join([tag, *names])


def _parse(html: str | bytes) -> Any:
    """The page as an lxml tree rooted at ``<html>`` (fragments are wrapped, broken markup
    repaired by libxml2's HTML parser), or None when there is nothing to parse."""
    import lxml.html
    from lxml import etree

    try:
        return lxml.html.document_fromstring(html)
    except ValueError:
        if isinstance(html, str):  # "Unicode strings with encoding declaration"
            return _parse(html.encode("utf-8"))
        return None
    except etree.ParserError:  # empty document
        return None


def structure_features(html: str | bytes) -> dict[str, float]:
    """Tag paths of a page with weights: ``0.9 ** depth * (1 + ln(count))``.

    Paths (``html/body/div.content/p``) ignore text and attributes other than ``class``;
    the depth decay keeps the page's frame more important than deep repeated detail, and the
    log count lets 40 or 60 paragraphs of a chapter weigh about the same.
    """
    root = _parse(html)
    if root is None:
        return {}
    counts: dict[tuple[str, int], int] = defaultdict(int)
    stack: list[tuple[Any, str, int]] = [(root, "", 0)]
    while stack:
        el, parent, depth = stack.pop()
        if not isinstance(el.tag, str):  # comments, processing instructions, entities
            continue
        path = f"{parent}/{_node_name(el)}" if parent else _node_name(el)
        counts[(path, depth)] += 1
        if depth < MAX_DEPTH:
            stack.extend((child, path, depth + 1) for child in el)
    return {
        path: STRUCTURE_DECAY**depth * (1.0 + math.log(n)) for (path, depth), n in counts.items()
    }


def structure_simhash(html: str | bytes) -> int:
    """64-bit SimHash of the page's tag tree (0 for an empty or unparsable page)."""
    return simhash_features(structure_features(html))


def structure_similarity(html_a: str | bytes, html_b: str | bytes) -> float:
    """Percentage 0..100 (100: same fingerprint)."""
    return similarity(structure_simhash(html_a), structure_simhash(html_b))


# -- near-duplicate filter -----------------------------------------------------------------
def canonical_url(url: str) -> str:
    """One spelling per page: host lower case without ``www.``, https as http, no fragment,
    no tracking parameters, parameters sorted, no trailing slash."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower() or "http"
    scheme = "http" if scheme == "https" else scheme
    host = (parts.hostname or "").lower().rstrip(".")
    host = host[4:] if host.startswith("www.") else host
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    path = parts.path.rstrip("/") or "/"
    params = sorted(
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _is_tracking(k)
    )
    query = "&".join(f"{k}={v}" for k, v in params)
    return f"{scheme}://{host}{path}" + (f"?{query}" if query else "")


def page_text_simhash(html: str | bytes) -> int:
    """``char3`` SimHash of the visible text of a page (0 when it has none)."""
    from tracker.fingerprints.simhash import simhash

    root = _parse(html)
    if root is None:
        return 0
    for bad in root.xpath("//script|//style|//noscript"):
        bad.drop_tree()
    return simhash(root.text_content())


_REC = np.dtype([("c", ">u8"), ("u", ">u8"), ("s", ">u8"), ("t", ">u8"), ("h", "u1")])


class NearDuplicateFilter:
    """Remembers seen pages and tells whether a page is a near duplicate of one seen, so the
    crawler can skip the same page reached under another URL of the same site.

    A page is a near duplicate of a seen one when

    1. their :func:`canonical_url` are equal (scheme, ``www.``, fragment, parameter order,
       tracking parameters differ), or
    2. both came with HTML, their URLs are on one site and template
       (``url_similarity >= url_threshold``, default ``URL_SAME_TEMPLATE``), their pages too
       (``structure_similarity >= structure_threshold``, default
       ``STRUCTURE_SAME_TEMPLATE``) and their visible texts have SimHashes within
       ``text_k`` bits (default 3): the same chapter on a mirror path of the same site.

    URL and structure similarity alone never suffice: sibling chapters share both (URL
    similarity mostly 89-98, structure 95-100) and differ only by their text. Pass
    ``url_only_threshold=URL_NEAR_DUPLICATE`` to also skip, without HTML, URLs that close
    (it trades ~12% of siblings skipped for ~82% of URL variants caught). Another site is
    never a near duplicate here: copies on other sites are what the crawler looks for.

    In memory by default (numpy scans: ~1 ms per check at a million pages). With ``redis``
    the entries go to one Redis list ``f"{prefix}:neardup:{name}"`` (read incrementally)
    so several workers share what they have seen.
    """

    def __init__(
        self,
        url_threshold: float = URL_SAME_TEMPLATE,
        structure_threshold: float = STRUCTURE_SAME_TEMPLATE,
        text_k: int = 3,
        *,
        url_only_threshold: float | None = None,
        redis: RedisClient | None = None,
        prefix: str = "yinji",
        name: str = "default",
    ) -> None:
        self.url_threshold = url_threshold
        self.structure_threshold = structure_threshold
        self.text_k = text_k
        self.url_only_threshold = url_only_threshold
        self.redis = redis
        self.prefix, self.name = prefix, name
        self.key = f"{prefix}:neardup:{name}"
        self._rec = np.zeros(0, dtype=_REC)
        self._synced = 0  # entries of the Redis list already loaded

    def __len__(self) -> int:
        self._sync()
        return len(self._rec)

    @staticmethod
    def _prints(url: str, html: str | bytes | None) -> np.ndarray:
        from tracker.fingerprints.simhash import fnv1_64

        rec = np.zeros(1, dtype=_REC)
        rec["c"] = fnv1_64(canonical_url(url).encode("utf-8"))
        rec["u"] = url_simhash(url)
        if html is not None:
            text = page_text_simhash(html)
            rec["s"] = structure_simhash(html)
            rec["t"] = text
            rec["h"] = 1 if text else 0  # a page without text proves nothing by its text
        return rec

    def _sync(self) -> None:
        if self.redis is None:
            return
        new = self.redis.lrange(self.key, self._synced, -1)
        if new:
            self._rec = np.concatenate([self._rec, np.frombuffer(b"".join(new), dtype=_REC)])
            self._synced += len(new)

    @staticmethod
    def _within(a: np.ndarray, b: np.uint64, threshold: float) -> np.ndarray:
        max_bits = math.floor(64 * (1 - threshold / 100) + 1e-9)
        return popcount(a.astype(np.uint64) ^ b) <= max_bits

    def _match(self, rec: np.ndarray) -> bool:
        self._sync()
        seen = self._rec
        if len(seen) == 0:
            return False
        r = rec[0]
        if (seen["c"] == r["c"]).any():
            return True
        if r["h"]:
            ok = (seen["h"] == 1) & self._within(seen["u"], np.uint64(r["u"]), self.url_threshold)
            ok &= self._within(seen["s"], np.uint64(r["s"]), self.structure_threshold)
            ok &= popcount(seen["t"].astype(np.uint64) ^ np.uint64(r["t"])) <= self.text_k
            return bool(ok.any())
        if self.url_only_threshold is not None:
            return bool(self._within(seen["u"], np.uint64(r["u"]), self.url_only_threshold).any())
        return False

    def is_near_duplicate(self, url: str, html: str | bytes | None = None) -> bool:
        """True when a near duplicate of this page was seen (does not remember it)."""
        return self._match(self._prints(url, html))

    def add(self, url: str, html: str | bytes | None = None) -> None:
        """Remember a page."""
        self._add(self._prints(url, html))

    def _add(self, rec: np.ndarray) -> None:
        if self.redis is None:
            self._rec = np.concatenate([self._rec, rec])
            return
        self.redis.rpush(self.key, rec.tobytes())
        self._sync()

    def check_and_add(self, url: str, html: str | bytes | None = None) -> bool:
        """``is_near_duplicate``, and remember the page when it is new; returns the former."""
        rec = self._prints(url, html)
        if self._match(rec):
            return True
        self._add(rec)
        return False

    def clear(self) -> None:
        if self.redis is not None:
            self.redis.delete(self.key)
        self._rec = np.zeros(0, dtype=_REC)
        self._synced = 0
