"""The platforms notices go to: a registry shipped as an editable data file
(``tracker/cases/data/platforms.json``), which ``<data folder>/platforms.json``
overrides entry by entry (same ``id``: replaced; new ``id``: added).

Each platform has a name, the domains it serves (a page's host matches a domain or any
subdomain of it; the longest match wins), its abuse e-mail and/or web form, the
documents it asks for and a note on its process, and where that was read (``source``):
contacts change, so the case page shows the source beside them. A notice to a page on a
known platform is addressed to the platform by name, and an e-mail notice goes to its
abuse address when no other recipient is given.

JSON rather than YAML: the standard library reads it, so no dependency is added for
one file a person edits rarely.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from tracker.common.records import JSONObject
from tracker.common.rules import normalize_domain

from .model import CaseError

SHIPPED = Path(__file__).parent / "data" / "platforms.json"
FILE_NAME = "platforms.json"


@dataclass(frozen=True)
class Platform:
    id: str
    name: str
    name_en: str = ""
    domains: tuple[str, ...] = ()
    abuse_email: str | None = None
    web_form: str | None = None
    documents: tuple[str, ...] = field(default_factory=tuple)
    process: str = ""
    source: str = ""

    def display_name(self, lang: str) -> str:
        """The name to show in ``lang``: ``name_en`` in English (the Chinese ``name``
        when the registry has no English one), ``name`` in Chinese."""
        return (self.name_en or self.name) if lang == "en" else self.name

    def serves(self, domain: str) -> str | None:
        """The registry domain that ``domain`` falls under, or None."""
        domain = normalize_domain(domain)
        return next((d for d in self.domains if domain == d or domain.endswith("." + d)), None)

    def to_dict(self) -> JSONObject:
        return {
            "id": self.id,
            "name": self.name,
            "name_en": self.name_en,
            "domains": list(self.domains),
            "abuse_email": self.abuse_email,
            "web_form": self.web_form,
            "documents": list(self.documents),
            "process": self.process,
            "source": self.source,
        }


def _text(entry: dict[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = entry.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise CaseError(f"{where}: {key!r} must be text, got {value!r}")
    return value.strip()


def _platform(entry: Any, where: str) -> Platform:
    if not isinstance(entry, dict):
        raise CaseError(f"{where}: each platform must be an object, got {entry!r}")
    domains = entry.get("domains") or []
    documents = entry.get("documents") or []
    if not isinstance(domains, list) or not all(isinstance(d, str) for d in domains):
        raise CaseError(f"{where}: 'domains' must be a list of domain names")
    if not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
        raise CaseError(f"{where}: 'documents' must be a list of texts")
    email = _text(entry, "abuse_email", where) or None
    if email is not None and ("@" not in email or any(ord(c) < 0x20 for c in email)):
        raise CaseError(f"{where}: 'abuse_email' is not an e-mail address: {email!r}")
    form = _text(entry, "web_form", where) or None
    if form is not None and not form.lower().startswith(("https://", "http://")):
        raise CaseError(f"{where}: 'web_form' must be an http(s) URL, got {form!r}")
    return Platform(
        id=_text(entry, "id", where, required=True),
        name=_text(entry, "name", where, required=True),
        name_en=_text(entry, "name_en", where),
        domains=tuple(normalize_domain(d) for d in domains if d.strip()),
        abuse_email=email,
        web_form=form,
        documents=tuple(d.strip() for d in documents if d.strip()),
        process=_text(entry, "process", where),
        source=_text(entry, "source", where),
    )


def _read(path: Path) -> list[Platform]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseError(f"platform registry {path}: cannot be read: {exc}") from None
    entries = data.get("platforms") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise CaseError(f"platform registry {path}: needs a 'platforms' list")
    return [_platform(e, f"platform registry {path}, entry {i}") for i, e in enumerate(entries, 1)]


@cache
def _shipped() -> tuple[Platform, ...]:
    return tuple(_read(SHIPPED))


def load_platforms(data_dir: Path | None = None) -> list[Platform]:
    """The shipped registry with ``<data_dir>/platforms.json`` applied over it."""
    by_id = {p.id: p for p in _shipped()}
    own = data_dir / FILE_NAME if data_dir is not None else None
    if own is not None and own.is_file():
        for p in _read(own):
            by_id[p.id] = p
    return list(by_id.values())


def platform_for(domain: str, platforms: list[Platform]) -> Platform | None:
    """The platform serving ``domain`` (the longest matching registry domain)."""
    best: tuple[int, Platform] | None = None
    for p in platforms:
        hit = p.serves(domain)
        if hit is not None and (best is None or len(hit) > best[0]):
            best = (len(hit), p)
    return best[1] if best else None
