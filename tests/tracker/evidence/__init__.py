"""Tests of tracker.evidence (the evidence log, timestamps, captures and bundles)."""
