"""Where the repository is, for tests that read its files (docs, templates, bench)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
