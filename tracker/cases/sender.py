"""Who sends the notices and where they go: the rights holder's profile with its
attachments, and each case's platform (``SenderSetup``, a part of
``tracker.cases.service.CaseService``)."""

from __future__ import annotations

import logging
import mimetypes
from typing import TYPE_CHECKING

from tracker.common.records import NotFound

from .core import MAX_ATTACHMENTS, PROFILE_KEY, CaseCore, check_who
from .grouping import host_of
from .model import (
    Attachment,
    Case,
    CaseError,
    CaseEvent,
    Profile,
    now,
)

if TYPE_CHECKING:
    from .platforms import Platform


log = logging.getLogger(__name__)


class SenderSetup(CaseCore):
    """The profile, its attachments, the platforms."""

    def platforms(self) -> list[Platform]:
        """The platform registry (``tracker.cases.platforms``) with the data folder's
        ``platforms.json`` applied."""
        from .platforms import load_platforms

        return load_platforms(self.settings.data_dir if self.settings else None)

    def platform_of(self, case: Case) -> Platform | None:
        """The case's platform: the one chosen for it (``metadata.platform``), else the
        registry's platform serving its domain; None when the registry has none."""
        from .platforms import platform_for

        known = self.platforms()
        chosen = case.metadata.get("platform")
        if isinstance(chosen, str):
            found = next((p for p in known if p.id == chosen), None)
            if found is not None:
                return found
        return platform_for(host_of(case.domain), known)

    def set_platform(self, case_id: str, platform_id: str | None, *, who: str) -> Case:
        """Choose the case's platform by registry id (None or "": back to the domain's)."""
        who = check_who(who)
        if platform_id:
            ids = [p.id for p in self.platforms()]
            if platform_id not in ids:
                raise CaseError(
                    f"unknown platform {platform_id!r}; the registry has: {', '.join(ids)}"
                )

        def change(c: Case) -> list[CaseEvent]:
            if (c.metadata.get("platform") or None) == (platform_id or None):
                return []
            if platform_id:
                c.metadata["platform"] = platform_id
            else:
                c.metadata.pop("platform", None)
            note = f"platform: {platform_id or 'by domain'}"
            return [CaseEvent(c.id, "note", who, note, data={"platform": platform_id or None})]

        return self.update(case_id, change)

    # --- the rights holder ----------------------------------------------------------------
    def profile(self) -> Profile:
        return Profile.from_dict(self.store.get_meta(PROFILE_KEY))

    def set_profile(self, *, who: str = "", **fields: str | None) -> Profile:
        """Change the given fields (None: keep) of the rights-holder profile."""
        allowed = {"name", "contact", "email", "phone", "address"}
        unknown = set(fields) - allowed
        if unknown:
            raise CaseError(f"unknown profile field(s): {', '.join(sorted(unknown))}")
        profile = self.profile()
        for key, value in fields.items():
            if value is None:
                continue
            if not isinstance(value, str) or len(value) > 2000:
                raise CaseError(f"profile {key} must be text of at most 2000 characters")
            if key == "email" and value.strip() and "@" not in value:
                raise CaseError(f"profile email is not an e-mail address: {value!r}")
            setattr(profile, key, value.strip())
        profile.updated_at = now()
        self.store.set_meta(PROFILE_KEY, profile.to_dict())
        return profile

    def add_attachment(self, name: str, data: bytes, content_type: str | None = None) -> Profile:
        """Add (or replace, by file name) a proof-of-ownership file."""
        name = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
        if not name or any(ord(ch) < 0x20 for ch in name):
            raise CaseError(f"attachment needs a plain file name, got {name!r}")
        if not data:
            raise CaseError(f"attachment {name} is empty")
        profile = self.profile()
        others = [a for a in profile.attachments if a.name != name]
        if len(others) >= MAX_ATTACHMENTS:
            raise CaseError(f"at most {MAX_ATTACHMENTS} attachments")
        try:
            key = self.store.put_blob(data)
        except ValueError as exc:
            raise CaseError(f"attachment {name}: {exc}") from None
        ctype = content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        profile.attachments = [*others, Attachment(name, key, len(data), ctype)]
        profile.updated_at = now()
        self.store.set_meta(PROFILE_KEY, profile.to_dict())
        return profile

    def remove_attachment(self, name: str) -> Profile:
        profile = self.profile()
        kept = [a for a in profile.attachments if a.name != name]
        if len(kept) == len(profile.attachments):
            raise CaseError(f"no attachment named {name!r}")
        profile.attachments = kept
        profile.updated_at = now()
        self.store.set_meta(PROFILE_KEY, profile.to_dict())
        return profile

    def attachment_files(self, profile: Profile | None = None) -> list[tuple[str, bytes, str]]:
        """(file name, bytes, content type) of each proof-of-ownership file."""
        out = []
        for a in (profile or self.profile()).attachments:
            try:
                out.append((a.name, self.store.get_blob(a.sha256), a.content_type))
            except NotFound:
                log.warning("attachment %s (%s) is missing from the blob store", a.name, a.sha256)
        return out
