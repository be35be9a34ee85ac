"""Tests of tracker.reports (data, HTML, PDF, list exports)."""
