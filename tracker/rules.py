"""The input rules, once: what a URL, a domain, a title, a verdict, a note, a sort key,
a text to check and a document to ingest must look like.

The web forms, the REST API, the job API, the Celery tasks, the stores and the crawler
all call these functions, so a value one of them accepts is accepted by every other.
Every ``check_*`` function returns the value normalised and raises ``ValueError`` with a
message that names the input; ``where`` (``"texts[3]"``, ``"URL"``) prefixes it.

A leaf module: it imports only ``tracker.records`` and the standard library, so the
document readers and the stores can use it without import cycles.
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlsplit

from tracker.records import SORTS, VERDICTS, MatchSort

# sitemaps.org and most HTTP servers and proxies cap URLs near 2 kB; a longer "URL" is
# almost never a page a person wants checked, and it would be kept in every match row.
MAX_URL_LENGTH = 2048
MAX_NOTE_LENGTH = 10_000
TITLE_LENGTH = 80  # a title made from a text's first line is cut to this many characters
URL_SCHEMES = ("http", "https")


def _prefix(where: str, message: str) -> str:
    return f"{where}: {message}" if where else message


# --- URLs and domains --------------------------------------------------------------
def check_url(url: Any, where: str = "") -> str:
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


def url_problem(url: Any) -> str | None:
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


def normalize_domain(value: str) -> str:
    """A domain filter or stored domain: lower case, no surrounding dots; a full URL is
    reduced to its host."""
    value = (value or "").strip().lower()
    if "://" in value:
        return domain_of(value)
    return value.strip(".")


# --- titles ---------------------------------------------------------------------------
def default_title(text: str) -> str:
    """The title of a document given without one: its first non-empty line, cut."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:TITLE_LENGTH]
    return ""


# --- verdicts, notes, sort keys ---------------------------------------------------------
def check_verdict(verdict: Any) -> str:
    if not isinstance(verdict, str) or verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    return verdict


def check_note(note: Any) -> str | None:
    """A reviewer's note: a string of at most ``MAX_NOTE_LENGTH`` characters, or None
    (leave the stored note as it is)."""
    if note is None:
        return None
    if not isinstance(note, str):
        raise ValueError(f"note must be a string, got {type(note).__name__}")
    if len(note) > MAX_NOTE_LENGTH:
        raise ValueError(f"note longer than {MAX_NOTE_LENGTH} characters ({len(note)})")
    return note


def check_sort(sort: Any) -> MatchSort:
    if not isinstance(sort, str) or sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}, got {sort!r}")
    return cast(MatchSort, sort)


# --- job items --------------------------------------------------------------------------
def _id_value(value: Any) -> bool:
    """JSON ids may be numbers; ``true`` is not an id."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def check_text_item(item: Any, where: str = "") -> dict[str, str]:
    """A text to check, ``{text, id?, title?, url?}``, as the job carries it: strings
    only, empty optional fields dropped, the URL checked."""
    if not isinstance(item, dict):
        raise ValueError(_prefix(where, "expected an object with a non-empty 'text' string"))
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(_prefix(where, "missing 'text' (a non-empty string)"))
    out = {"text": text}
    for key in ("id", "title", "url"):
        value = item.get(key)
        if value is None or value == "":
            continue
        if not _id_value(value):
            raise ValueError(_prefix(where, f"'{key}' must be a string"))
        out[key] = str(value)
    if "id" in out:
        out["id"] = out["id"].strip()
        if not out["id"]:
            raise ValueError(_prefix(where, "'id' must not be blank"))
    if "url" in out:
        out["url"] = check_url(out["url"], f"{where}.url" if where else "url")
    return out


DOCUMENT_FIELDS = ("id", "title", "text", "source", "metadata")


def check_document_item(item: Any, where: str = "", *, source: str = "") -> dict[str, Any]:
    """A work to ingest, ``{id, text, title?, source?, metadata?, ...}``, as the job
    carries it: ``{id, title, text, source, metadata}``. The title defaults to
    ``default_title(text)``, the source to ``source`` (else ``where``); other keys are
    kept in the metadata, as the ``.jsonl`` reader keeps them."""
    if not isinstance(item, dict):
        raise ValueError(_prefix(where, "expected an object with 'id' and 'text'"))
    doc_id = item.get("id")
    if not _id_value(doc_id) or not str(doc_id).strip():
        raise ValueError(_prefix(where, "missing 'id' (a non-empty string)"))
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
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
        "id": str(doc_id).strip(),
        "title": title or default_title(text),
        "text": text,
        "source": given_source or source or where,
        "metadata": {**(metadata or {}), **extra},
    }
