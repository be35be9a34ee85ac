"""A takedown notice as rendered (``Notice``: its subject, marked-up text and what went
into it), the languages and formats there are, the checks of recipients, language and
format, and the notice number (``tracker.cases.notices`` builds notices)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import Path

from .facts import LeftOut, URLFact
from .model import CaseError, Profile

LANGS: tuple[str, ...] = ("zh", "en")
FORMATS: tuple[str, ...] = ("pdf", "docx", "eml")
TEMPLATE_DIR = Path(__file__).parent / "templates" / "notices"
CONTENT_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "eml": "message/rfc822",
}
# Statements 17 U.S.C. 512(c)(3)(A)(v) and (vi) require, and the signature of (i).
EN_REQUIRED = {
    "good-faith statement (v)": "good faith belief",
    "accuracy / penalty-of-perjury statement (vi)": "under penalty of perjury",
    "signature (i)": "/s/",
}
ZH_REQUIRED = {"构成侵权的初步证明材料": "初步证明"}


class NoticeIncomplete(CaseError):
    """The rendered notice lacks elements the law requires."""


class TemplateTooCostly(CaseError):
    """A notice template asked for more work than a notice needs (a huge loop, a huge
    string): refused with a message instead of holding the process."""


# The sandbox's bounds: iterations of every range() of one rendering together, the size
# of a string or list made by * or **, and the size of the rendered text.
MAX_TEMPLATE_ITERATIONS = 100_000
MAX_TEMPLATE_VALUE = 1_000_000
MAX_NOTICE_CHARS = 2_000_000
BUDGET_NAME = "__yinji_loop_budget"  # the loop wrapper the sandbox puts around every for
# Recipient addresses: one line, no controls (a CR/LF would add mail headers).
_BAD_ADDRESS = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\u0085]")


def check_recipients(to: Iterable[str]) -> list[str]:
    """The recipient addresses, each checked: one address on one line with an @.
    A CR/LF or other control character (header injection) is refused naming it."""
    from email.utils import parseaddr

    out = []
    for raw in to:
        if not isinstance(raw, str):
            raise CaseError(f"recipient must be text, got {raw!r}")
        if _BAD_ADDRESS.search(raw):
            raise CaseError(
                f"recipient {raw!r} contains a line break or control character; "
                "give one e-mail address per recipient"
            )
        address = raw.strip()
        if not address:
            continue
        if len(address) > 320 or "@" not in parseaddr(address)[1]:
            raise CaseError(f"recipient {address!r} is not an e-mail address")
        out.append(address)
    return out


def notice_reference(case_ids: Iterable[str], today: Date) -> str:
    """The notice number (YJ-date-digest of the case ids): known before the notice is
    rendered, so the evidence reports can name it."""
    ids = sorted(set(case_ids))
    digest = hashlib.sha1("\x1f".join(ids).encode(), usedforsecurity=False).hexdigest()[:8]
    return f"YJ-{today:%Y%m%d}-{digest}"


def check_lang(lang: object) -> str:
    if lang not in LANGS:
        raise CaseError(f"language must be one of {', '.join(LANGS)}, got {lang!r}")
    return str(lang)


def check_format(fmt: object) -> str:
    if fmt not in FORMATS:
        raise CaseError(f"notice format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return str(fmt)


@dataclass
class Notice:
    """A rendered notice: its subject and marked-up text, and what went into it."""

    lang: str
    platform: str
    reference: str
    date: str
    subject: str
    text: str
    case_ids: list[str]
    profile: Profile
    urls: list[str] = field(default_factory=list)
    to: str = ""  # the recipients named in the notice (the platform's, by default)
    facts: list[URLFact] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)  # URLs of the cases not named

    def blocks(self) -> list[tuple[str, str]]:
        """(kind, text) per line: title, h2, h3, item, para, space; ``keep`` and
        ``endkeep`` (lines ``!keep`` / ``!endkeep``) hold a block on one page (the
        statements with their signature)."""
        out: list[tuple[str, str]] = []
        for raw in self.text.splitlines():
            line = raw.rstrip()
            if line.strip() in ("!keep", "!endkeep"):
                out.append((line.strip()[1:], ""))
                continue
            if not line.strip():
                if out and out[-1][0] != "space":
                    out.append(("space", ""))
                continue
            for prefix, kind in (("### ", "h3"), ("## ", "h2"), ("# ", "title"), ("- ", "item")):
                if line.startswith(prefix):
                    out.append((kind, line[len(prefix) :].strip()))
                    break
            else:
                out.append(("para", line.strip()))
        return out

    def plain_text(self) -> str:
        """The notice as the text of an e-mail."""
        lines: list[str] = []
        for kind, text in self.blocks():
            if kind == "title":
                lines += [text, ""]
            elif kind == "h2":
                lines += ["", text]
            elif kind == "item":
                lines.append(f"  - {text}")
            elif kind == "space":
                lines.append("")
            elif kind in ("keep", "endkeep"):
                continue
            else:
                lines.append(text)
        return "\n".join(lines).strip() + "\n"

    @property
    def filename_stem(self) -> str:
        return f"notice-{self.reference}-{self.lang}"
