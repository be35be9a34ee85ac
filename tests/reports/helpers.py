"""Helpers of the report tests (not tests): hostile markup and a generated work."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: textgen

from textgen import work

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(1)>'
MOTHER = work(7001, 30)
