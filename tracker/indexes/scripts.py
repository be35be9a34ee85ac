"""The Lua scripts of the inverted index, kept as package data (``tracker/indexes/lua``)
and loaded by name.

A script may include another with a line ``--! include NAME.lua`` (the shared value
codec ``codec.lua`` and the bulk loader's ``fill_core.lua``): the line is replaced by that
file's text, so every script Redis runs is one self-contained source, as before.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_INCLUDE = re.compile(r"^--! include ([a-z_]+\.lua)$", re.MULTILINE)


@cache
def lua(name: str) -> str:
    """The source of ``lua/NAME`` (``NAME`` with or without ``.lua``), includes expanded."""
    if not name.endswith(".lua"):
        name += ".lua"
    text = resources.files("tracker.indexes").joinpath("lua", name).read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: lua(m.group(1)).rstrip("\n"), text)
