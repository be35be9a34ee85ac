"""What ``verify_bundle`` (``tracker.evidence.verify``) found: one ``Check`` per name of
``CHECKS``, gathered in a ``VerifyResult`` with its summary for people and its JSON for
machines."""

from __future__ import annotations

from dataclasses import dataclass, field

from tracker.common.records import JSONObject

from .canonical import (
    format_time,
)
from .keys import (
    TreeHead,
    format_fingerprint,
)
from .tsa import TimestampInfo

# How far a record's time may run ahead of the TSA's (the two clocks differ a little).

CHECKS = (
    "members",
    "key",
    "signature",
    "manifest",
    "tree_head",
    "timestamp",
    "records",
    "anchors",
    "files",
    "times",
    "warc",
    "verifier",
)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class VerifyResult:
    """What ``verify_bundle`` found. ``ok`` when nothing is altered, missing, unproven or
    unexpected and there is no other problem *under the key used*; ``pinned`` when that
    key is the one the caller pinned; ``trusted`` = both. ``problems`` says why."""

    altered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unproven: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tree_head: TreeHead | None = None
    key_id: str | None = None  # the key the bundle carries
    pinned_key_id: str | None = None  # the key the caller pinned
    timestamp: TimestampInfo | None = None
    records: int = 0

    @property
    def pinned(self) -> bool:
        return self.pinned_key_id is not None and self.pinned_key_id == self.key_id

    @property
    def ok(self) -> bool:
        return not (
            self.altered or self.missing or self.unproven or self.unexpected or self.problems
        )

    @property
    def trusted(self) -> bool:
        return self.ok and self.pinned

    def to_json(self) -> JSONObject:
        """The result for machines (``yinji evidence verify --json``)."""
        return {
            "altered": self.altered,
            "checks": [{"detail": c.detail, "name": c.name, "ok": c.ok} for c in self.checks],
            "fingerprint": self.key_id,
            "missing": self.missing,
            "notes": self.notes,
            "ok": self.ok,
            "pinned": self.pinned,
            "pinned_fingerprint": self.pinned_key_id,
            "problems": self.problems,
            "records": self.records,
            "timestamp": self.timestamp.to_json() if self.timestamp else None,
            "tree_head": self.tree_head.to_json() if self.tree_head else None,
            "trusted": self.trusted,
            "unexpected": self.unexpected,
            "unproven": self.unproven,
            "verified": self.verified,
        }

    def failed(self) -> list[str]:
        """The names of the checks that failed."""
        return [c.name for c in self.checks if not c.ok]

    def _flag(self, bucket: list[str], name: str, problem: str) -> None:
        if name not in self.altered and name not in self.missing and name not in bucket:
            bucket.append(name)
        if problem not in self.problems:
            self.problems.append(problem)

    def summary(self) -> str:
        fp = format_fingerprint(self.key_id) if self.key_id else "?"
        if self.ok:
            head = self.tree_head
            verdict = "OK" if self.pinned else "UNPINNED"
            lines = [
                f"{verdict}: {len(self.verified)} files verified; {self.records} log records "
                f"proven in the tree head of {head.size if head else '?'} records signed by "
                f"the key with fingerprint {fp}"
            ]
            if not self.pinned:
                lines.append(
                    "  NOT VERIFIED AS ANYONE'S: no key was pinned, so the bundle was checked "
                    "against the key it carries, which whoever made it chose. Compare the "
                    "fingerprint with the one the rights holder published and pin it "
                    "(--fingerprint HEX or --key FILE)."
                )
            if self.timestamp is not None:
                checked = (
                    ""
                    if self.timestamp.chain_checked
                    else " (TSA certificate not checked against a trusted root)"
                )
                lines.append(
                    f"timestamp: {format_time(self.timestamp.gen_time)} by "
                    f"{self.timestamp.tsa_subject}{checked}"
                )
            else:
                lines.append("timestamp: none (the tree head was not timestamped)")
            lines.extend(f"note: {n}" for n in self.notes)
            return "\n".join(lines)
        lines = [f"FAILED ({', '.join(self.failed()) or 'bundle'}):"]
        for label, names in (
            ("altered", self.altered),
            ("missing", self.missing),
            ("unproven", self.unproven),
            ("unexpected", self.unexpected),
        ):
            lines.extend(f"  {label}: {name}" for name in sorted(names))
        lines.extend(f"  - {p}" for p in self.problems)
        return "\n".join(lines)
