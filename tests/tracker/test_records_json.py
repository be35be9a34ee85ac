"""Reading a stored JSON value back (``tracker.common.records``): the value when it has the shape
asked for, a default when the key was never set, never the stored object itself."""

from __future__ import annotations

from tracker.common.records import json_int, json_object, json_strings


def test_json_object_copies_an_object_and_defaults_to_empty() -> None:
    stored = {"min_copied": 80, "nested": {"a": [1, 2]}}
    got = json_object(stored)
    assert got == stored and got is not stored
    got["min_copied"] = 1  # the caller may change its copy
    assert stored["min_copied"] == 80
    assert json_object(None) == {} and json_object([1, 2]) == {} and json_object("x") == {}


def test_json_int_reads_numbers_and_digits() -> None:
    assert json_int(7) == 7 and json_int("12") == 12 and json_int(3.9) == 3
    assert json_int(None) == 0 and json_int([1]) == 0 and json_int({"a": 1}) == 0


def test_json_strings_keeps_only_strings_of_a_list() -> None:
    assert json_strings(["daguan", "simhash"]) == ["daguan", "simhash"]
    assert json_strings(["daguan", 3, None]) == ["daguan"]
    assert json_strings(None) == [] and json_strings("daguan") == [] and json_strings({}) == []
