"""Helpers of the report tests (not tests): hostile markup and a generated work."""

from __future__ import annotations

from textgen import work

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(1)>'
MOTHER = work(7001, 30)
