"""The input rules, once: what a URL, a domain, a title, a verdict, a note, a sort key,
a text to check and a document to ingest must look like.

The web forms, the REST API, the job API, the Celery tasks, the stores and the crawler
all call these functions, so a value one of them accepts is accepted by every other.
Every ``check_*`` function returns the value normalised and raises ``ValueError`` with a
message that names the input; ``where`` (``"texts[3]"``, ``"URL"``) prefixes it.

The id rule is ``tracker.common.ids.check_id`` (re-exported here).

A leaf module: it imports only ``tracker.common.records``, ``tracker.common.ids``,
``tracker.text.textform``
and the standard library, so the
document readers and the stores can use it without import cycles.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any, TypedDict, TypeVar, cast
from urllib.parse import urlsplit

# The id rule lives in tracker.common.ids; re-exported for the callers of tracker.common.rules.
from tracker.common.ids import MAX_ID_LENGTH as MAX_ID_LENGTH
from tracker.common.ids import check_id as check_id
from tracker.common.records import SORTS, VERDICTS, JSONObject, JSONValue, MatchSort
from tracker.text.textform import is_blank

# sitemaps.org and most HTTP servers and proxies cap URLs near 2 kB; a longer "URL" is
# almost never a page a person wants checked, and it would be kept in every match row.
MAX_URL_LENGTH = 2048
MAX_NOTE_LENGTH = 10_000
TITLE_LENGTH = 80  # a title made from a text's first line is cut to this many characters
URL_SCHEMES = ("http", "https")
# JSON of an item (a .jsonl line, an API document): nesting and size bounds, so one
# hostile value cannot exhaust the stack or memory of a reader, a store or a client.
MAX_JSON_DEPTH = 64
MAX_METADATA_BYTES = 1024 * 1024
_INT64 = 2**63
_T = TypeVar("_T")


def _prefix(where: str, message: str) -> str:
    return f"{where}: {message}" if where else message


# --- URLs and domains --------------------------------------------------------------
def check_url(url: object, where: str = "") -> str:
    """An http(s) URL with a host and no credentials, stripped; else ``ValueError``.

    Only the URL's shape: the crawler's SSRF guard still resolves the host and refuses
    private addresses when it fetches.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValueError(_prefix(where, f"expected a non-empty URL string, got {url!r}"))
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise ValueError(
            _prefix(where, f"URL longer than {MAX_URL_LENGTH} characters: {url[:60]}…")
        )
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        # Tabs and newlines are dropped by URL parsers in different ways: refuse them.
        raise ValueError(_prefix(where, f"control characters in URL {url[:60]!r}"))
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError on a bad port
    except ValueError as exc:
        raise ValueError(_prefix(where, f"not a valid URL ({exc}): {url[:60]!r}")) from None
    if parts.scheme.lower() not in URL_SCHEMES or not parts.hostname:
        raise ValueError(_prefix(where, f"not an http(s) URL with a host: {url[:60]!r}"))
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        # user@host is a classic parser-confusion trick and would leak credentials.
        raise ValueError(_prefix(where, f"credentials in URLs are not allowed: {url[:60]!r}"))
    return url


def url_problem(url: object) -> str | None:
    """Why ``url`` fails ``check_url``, or None (for code that collects problems)."""
    try:
        check_url(url)
    except ValueError as exc:
        return str(exc)
    return None


def domain_of(url: str) -> str:
    """The host of a URL, lower case, without surrounding dots; "" for a malformed URL."""
    try:
        host = urlsplit(url.strip()).hostname or ""
    except ValueError:  # bad port, bad IPv6 literal: no domain
        return ""
    return host.strip(".").lower()


_DEFAULT_PORTS = {"http": 80, "https": 443}


def site_of(url: str) -> str:
    """The site of an http(s) page, as cases, book grids and the crawl count sites: its
    host (``domain_of``: lower case, no surrounding dots) and its port when that is not
    the scheme's default (``127.0.0.1:8001``: two servers on one host are two sites,
    two platforms to notice); ``http`` and ``https`` of one host are one site. An IPv6
    host keeps its brackets. "" for a URL that is not http(s) or has no usable host."""
    scheme, sep, rest = (url or "").strip().partition("://")
    if not sep:
        return ""
    netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return _site(scheme.lower(), netloc)


@lru_cache(maxsize=4096)
def _site(scheme: str, netloc: str) -> str:
    """``site_of`` of one scheme and network location (a library's pages are on few
    sites: each is parsed once)."""
    if scheme not in _DEFAULT_PORTS:
        return ""
    try:
        parts = urlsplit(f"{scheme}://{netloc}/")
        host = (parts.hostname or "").strip(".").lower()
        port = parts.port
    except ValueError:  # bad port, bad IPv6 literal
        return ""
    if not host:
        return ""
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return host
    return f"{host}:{port}"


def normalize_domain(value: str) -> str:
    """A domain filter or stored domain: lower case, no surrounding dots; a full URL is
    reduced to its host."""
    value = (value or "").strip().lower()
    if "://" in value:
        return domain_of(value)
    return value.strip(".")


# --- titles ---------------------------------------------------------------------------
HEADLINE_LENGTH = 50  # a first line longer than this is text, not a title
_SENTENCE_END = tuple("。！？!?…；;，,、：:")  # a line ending so is a sentence, not a title


def shorten(text: str, length: int = TITLE_LENGTH) -> str:
    """``text`` in at most ``length`` characters: cut after the last punctuation mark or
    space of its final quarter when there is one (never mid-word), and marked "…"."""
    if len(text) <= length:
        return text
    cut = text[: length - 1]
    breaks = [cut.rfind(ch) for ch in " ，。、；：,.;:！？!?）)》」』"]
    best = max(breaks)
    if best >= (length * 3) // 4:
        cut = cut[: best + 1]
    return cut.rstrip() + "…"


def default_title(text: str, file_name: str | None = None) -> str:
    """The title of a document given without one.

    From a file (``file_name``: a .txt or .docx, its name without the suffix): its first
    non-empty line when that is clearly a title (at most ``HEADLINE_LENGTH`` characters,
    not ending like a sentence, more text after it), else the file name. Without a file
    (pasted text, a .jsonl line): the first non-empty line, shortened with "…"."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if file_name is not None:
        headline = (
            len(lines) > 1 and len(first) <= HEADLINE_LENGTH and not first.endswith(_SENTENCE_END)
        )
        return first if headline else shorten(file_name)
    return shorten(first)


# --- verdicts, notes, sort keys ---------------------------------------------------------
def check_verdict(verdict: object) -> str:
    if not isinstance(verdict, str) or verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    return verdict


def check_note(note: object) -> str | None:
    """A reviewer's note: a string of at most ``MAX_NOTE_LENGTH`` characters, or None
    (leave the stored note as it is)."""
    if note is None:
        return None
    if not isinstance(note, str):
        raise ValueError(f"note must be a string, got {type(note).__name__}")
    if len(note) > MAX_NOTE_LENGTH:
        raise ValueError(f"note longer than {MAX_NOTE_LENGTH} characters ({len(note)})")
    return note


def check_sort(sort: object) -> MatchSort:
    if not isinstance(sort, str) or sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}, got {sort!r}")
    return cast(MatchSort, sort)


# --- ids and JSON values -----------------------------------------------------------------
def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed (NaN and Infinity are not JSON numbers)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def parse_json(text: str | bytes, where: str = "") -> JSONValue:
    """Parse one JSON document strictly: NaN/Infinity and out-of-range floats refused,
    nesting deeper than ``MAX_JSON_DEPTH`` refused, integers of more than 4300 digits
    refused (Python's limit). Any failure is a ``ValueError`` naming ``where``, never
    a ``RecursionError`` or a crash."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ValueError(_prefix(where, f"invalid JSON ({exc.msg})")) from None
    except RecursionError:
        raise ValueError(
            _prefix(where, f"JSON nested deeper than {MAX_JSON_DEPTH} levels: refused")
        ) from None
    except (ValueError, OverflowError) as exc:  # huge integers, NaN, 1e999
        reason = str(exc)
        if "digits" in reason:
            reason = "a number of more than 4300 digits"
        raise ValueError(_prefix(where, f"invalid JSON ({reason})")) from None
    check_json_value(value, where)
    return value


def check_json_value(value: _T, where: str = "", *, max_depth: int = MAX_JSON_DEPTH) -> _T:
    """A JSON-shaped value every store and every JSON client can hold: dicts with string
    keys, lists, strings, booleans, null, finite floats and integers of 64 bits, nested
    at most ``max_depth`` deep. Walked without recursion. Returns ``value``."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                raise ValueError(_prefix(where, f"nested deeper than {max_depth} levels"))
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        raise ValueError(_prefix(where, f"object key {key!r} is not a string"))
                stack.extend((v, depth + 1) for v in item.values())
            else:
                stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        elif isinstance(item, int):
            if not -_INT64 <= item < _INT64:
                raise ValueError(_prefix(where, "integer out of the 64-bit range"))
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError(_prefix(where, "NaN and Infinity are not valid JSON"))
        else:
            raise ValueError(_prefix(where, f"{type(item).__name__} is not a JSON value"))
    return value


def check_metadata(value: object, where: str = "") -> JSONObject:
    """Metadata of a document: a JSON object (``check_json_value``) of at most
    ``MAX_METADATA_BYTES`` as JSON."""
    if not isinstance(value, dict):
        raise ValueError(_prefix(where, "'metadata' must be an object"))
    check_json_value(value, where)
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(
            _prefix(where, f"metadata of {size} bytes is over the {MAX_METADATA_BYTES} limit")
        )
    return value


# --- job items --------------------------------------------------------------------------
def _id_value(value: Any) -> bool:
    """JSON ids may be numbers; ``true`` is not an id."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def check_text_item(item: object, where: str = "") -> dict[str, str]:
    """A text to check, ``{text, id?, title?, url?}``, as the job carries it: strings
    only, empty optional fields dropped, the URL checked."""
    if not isinstance(item, dict):
        raise ValueError(_prefix(where, "expected an object with a non-empty 'text' string"))
    text = item.get("text")
    if not isinstance(text, str) or is_blank(text):
        raise ValueError(_prefix(where, "missing 'text' (a non-empty string)"))
    out = {"text": text}
    for key in ("title", "url"):
        value = item.get(key)
        if value is None or value == "":
            continue
        if not _id_value(value):
            raise ValueError(_prefix(where, f"'{key}' must be a string"))
        out[key] = str(value)
    doc_id = item.get("id")
    if doc_id is not None and doc_id != "":
        out["id"] = check_id(doc_id, where)
    if "url" in out:
        out["url"] = check_url(out["url"], f"{where}.url" if where else "url")
    return out


DOCUMENT_FIELDS = ("id", "title", "text", "source", "metadata")


class DocumentItem(TypedDict):
    """A work to ingest as ``check_document_item`` returns it (``Document(**item)``)."""

    id: str
    title: str
    text: str
    source: str
    metadata: JSONObject


def check_document_item(item: object, where: str = "", *, source: str = "") -> DocumentItem:
    """A work to ingest, ``{id, text, title?, source?, metadata?, ...}``, as the job
    carries it: ``{id, title, text, source, metadata}``. The title defaults to
    ``default_title(text)``, the source to ``source`` (else ``where``); other keys are
    kept in the metadata, as the ``.jsonl`` reader keeps them."""
    if not isinstance(item, dict):
        raise ValueError(_prefix(where, "expected an object with 'id' and 'text'"))
    if item.get("id") is None:
        raise ValueError(_prefix(where, "missing 'id' (a non-empty string)"))
    doc_id = check_id(item["id"], where)
    text = item.get("text")
    if not isinstance(text, str) or is_blank(text):
        raise ValueError(_prefix(where, "missing 'text' (a non-empty string)"))
    title = item.get("title")
    if title is not None and not isinstance(title, str):
        raise ValueError(_prefix(where, "'title' must be a string"))
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError(_prefix(where, "'metadata' must be an object"))
    given_source = item.get("source")
    if given_source is not None and not isinstance(given_source, str):
        raise ValueError(_prefix(where, "'source' must be a string"))
    extra = {k: v for k, v in item.items() if k not in DOCUMENT_FIELDS}
    return {
        "id": doc_id,
        "title": title or default_title(text),
        "text": text,
        "source": given_source or source or where,
        "metadata": check_metadata({**(metadata or {}), **extra}, where),
    }
