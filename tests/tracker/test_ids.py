"""The one id rule (tracker.common.ids): normalisation, refused characters, duplicates, and
ids made from file names in a folder (issue 25)."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import pytest
from textgen import work

from tracker.common.ids import MAX_ID_LENGTH, DuplicateIds, check_id
from tracker.common.rules import check_document_item, check_text_item
from tracker.documents.readers import Document, DocumentError, iter_documents, read_bytes


def test_ids_are_stripped_and_nfc() -> None:
    assert check_id(" col ") == "col" and check_id(7) == "7"
    assert check_id("\u3000第一章 ") == "第一章"
    decomposed = "cafe\u0301"  # e + combining acute
    assert check_id(decomposed) == "caf\u00e9" == unicodedata.normalize("NFC", decomposed)
    assert check_id("\uf91d") == "\u6b04"  # a CJK compatibility ideograph: the unified one
    assert check_id("第 1 章") == "第 1 章"  # spaces inside are kept


@pytest.mark.parametrize(
    "bad",
    [
        "abc\u202etxt.exe",  # right-to-left override
        "a\u200bb",  # zero-width space
        "a\u2066b\u2069",  # bidi isolates
        "a\u200eb",  # left-to-right mark
        "a\ufeffb",  # BOM
        "a\nb",
        "a\rb",
        "a\tb",
        "a\u2028b",  # line separator
        "a\u2029b",  # paragraph separator
        "a\u3164b",  # Hangul filler: looks like nothing
        "bad\udcff",  # a file name byte that is not UTF-8
    ],
)
def test_spoofing_and_line_breaking_characters_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"U\+[0-9A-F]{4}") as info:
        check_id(bad, "documents[0]")
    assert str(info.value).startswith("documents[0]: 'id'")
    # every surface calls the same rule
    with pytest.raises(ValueError):
        check_document_item({"id": bad, "text": "正文"}, "documents[0]")
    with pytest.raises(ValueError):
        check_text_item({"id": bad, "text": "正文"}, "texts[0]")
    if "\udcff" not in bad:
        line = json.dumps({"id": bad, "text": "正文"}).encode()
        (item,) = list(read_bytes(line, "x.jsonl"))
        assert isinstance(item, DocumentError)


def test_length_limit_is_256_after_normalisation() -> None:
    assert MAX_ID_LENGTH == 256
    assert check_id("字" * 256) == "字" * 256
    assert check_id(" " + "字" * 256 + " ") == "字" * 256
    with pytest.raises(ValueError, match="longer than 256"):
        check_id("字" * 257)


def test_a_second_spelling_of_one_id_names_both() -> None:
    ids = DuplicateIds()
    assert ids.seen(check_id(7), "documents[0]", 7) is None
    message = ids.seen(check_id("7"), "documents[1]", "7")
    assert message is not None
    assert 'given as "7" at documents[1] and as 7 at documents[0]' in message
    assert ids.seen(check_id("col"), "documents[2]", "col") is None
    message = ids.seen(check_id(" col "), "documents[3]", " col ")
    assert message is not None and '" col "' in message and '"col"' in message
    same = ids.seen(check_id("col"), "documents[4]", "col")
    assert same is not None and "first at documents[2]" in same


def test_a_file_name_that_is_not_utf8_is_named_and_the_others_stored(tmp_path: Path) -> None:
    folder = tmp_path / "works"
    folder.mkdir()
    (folder / "good.txt").write_text(work(11, 4), encoding="utf-8")
    with open(os.path.join(os.fsencode(folder), b"bad\xff.txt"), "w", encoding="utf-8") as fh:
        fh.write(work(12, 4))
    (folder / "spoof\u202etxt.exe.txt").write_text(work(13, 4), encoding="utf-8")
    items = list(iter_documents([folder]))
    docs = [i for i in items if isinstance(i, Document)]
    errors = {Path(e.source).name: e.message for e in items if isinstance(e, DocumentError)}
    assert [d.id for d in docs] == ["good"]
    assert "not UTF-8" in errors["bad\\xff.txt"]  # the name shown as an escape
    assert "rename the file" in errors["bad\\xff.txt"]
    assert "U+202E" in errors["spoof\u202etxt.exe.txt"]
    for source in errors:
        source.encode("utf-8")  # printable and storable


@pytest.mark.slow
def test_cli_ingest_of_a_folder_with_a_bad_name_stores_the_good_files(
    tmp_path: Path, data_dir: Path
) -> None:
    import subprocess
    import sys

    folder = tmp_path / "works"
    folder.mkdir()
    (folder / "good.txt").write_text(work(14, 4), encoding="utf-8")
    with open(os.path.join(os.fsencode(folder), b"bad\xff.txt"), "w", encoding="utf-8") as fh:
        fh.write(work(15, 4))
    run = subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data_dir), "ingest", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "bad\\xff.txt" in run.stderr and "not UTF-8" in run.stderr
    assert "ingested 1 documents" in run.stdout + run.stderr
