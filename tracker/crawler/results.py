"""What the crawler returns: ``FetchResult`` (bytes of one resource) and ``Page`` (a
decoded, extracted page that becomes a ``Suspect``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

from tracker.records import Suspect


@dataclass
class FetchResult:
    """One fetched resource: the body is the content-decoded (gunzipped) bytes."""

    url: str  # as requested
    final_url: str  # after redirects
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes
    content_type: str  # mime type, lower case, "" if absent
    redirects: list[str] = field(default_factory=list)  # URLs that answered with a redirect
    fetched_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    elapsed: float = 0.0


@dataclass
class Page:
    """A crawled page: evidence (raw bytes) plus decoded HTML and extracted text."""

    url: str
    final_url: str
    status: int
    headers: dict[str, str]
    encoding: str
    raw: bytes
    html: str
    title: str
    text: str
    fetched_at: datetime

    def to_suspect(self, id: str | None = None) -> Suspect:
        """The store record; the id defaults to sha1(final_url) so a re-crawl replaces it."""
        final = self.final_url or self.url
        suspect_id = id or hashlib.sha1(final.encode("utf-8"), usedforsecurity=False).hexdigest()
        return Suspect(
            id=suspect_id,
            text=self.text,
            title=self.title,
            url=final,
            domain=(urlsplit(final).hostname or "").lower(),
            fetched_at=self.fetched_at,
            source="crawl",
            metadata={
                "encoding": self.encoding,
                "final_url": final,
                "requested_url": self.url,
                "status": self.status,
                "content_type": self.headers.get("content-type", ""),
            },
            raw=self.raw,
        )
