"""Record ids in URLs.

Ids are the users' strings: they may hold "/", "?", spaces, Chinese, and a match id
holds the separator "\\x1f" (``suspect_id + "\\x1f" + mother_id``). Every id in a
route is therefore the URL-safe base64 of its UTF-8 bytes, without "=" padding:
``encode_id("s1\\x1fm1") == "czEfbTE"``. The ``id`` URL converter does this both ways,
so handlers receive and ``url_for`` takes the plain id.
"""

from __future__ import annotations

import base64
import binascii
import re

from werkzeug.routing import BaseConverter, ValidationError

_TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")
MAX_TOKEN = 4096


def encode_id(value: str) -> str:
    return base64.urlsafe_b64encode(value.encode("utf-8")).rstrip(b"=").decode("ascii")


def decode_id(token: str) -> str:
    """The id a token stands for; ``ValueError`` for anything that is not one."""
    if not token or len(token) > MAX_TOKEN or not _TOKEN.match(token) or len(token) % 4 == 1:
        raise ValueError(f"not an encoded id: {token[:40]!r}")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        value = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError(f"not an encoded id: {token[:40]!r}") from None
    if encode_id(value) != token:  # one id, one spelling (no non-canonical tail bits)
        raise ValueError(f"not an encoded id: {token[:40]!r}")
    return value


class IdConverter(BaseConverter):
    """``<id:name>``: URL-safe base64 in the URL, the plain id in the handler."""

    regex = r"[A-Za-z0-9_-]+"

    def to_python(self, value: str) -> str:
        try:
            return decode_id(value)
        except ValueError:
            raise ValidationError() from None  # no route matches: 404

    def to_url(self, value: str) -> str:
        return encode_id(value)
