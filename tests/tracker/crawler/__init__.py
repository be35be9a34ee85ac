"""Tests of tracker.crawler, one module per part of the package."""
