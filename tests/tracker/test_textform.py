"""Pages browsers show and Yinji must read (issue 25): text nested deeper than
libxml2's 256 levels, a passage stored reversed and shown with U+202E (or <bdo>), and
files of invisible characters refused as empty."""

from __future__ import annotations

import pytest
from textgen import work

from tracker.common.rules import check_document_item, check_text_item
from tracker.documents.readers import Document, DocumentError, read_bytes
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import Suspect, open_store
from tracker.text.textform import is_blank, reading_order

PASSAGE = work(2501, 8)  # about 280 characters, written for the tests


def _page(body: str) -> bytes:
    return f"<html><head><title>页面</title></head><body>{body}</body></html>".encode()


@pytest.mark.parametrize("depth", [252, 256, 300, 2100, 20_000])
def test_text_nested_deeper_than_libxml2_builds_is_read(depth: int) -> None:
    body = "<p>开头一句。</p>" + "<div>" * depth + f"<p>{PASSAGE}</p>" + "</div>" * depth
    (doc,) = list(read_bytes(_page(body + "<p>结尾一句。</p>"), "deep.html"))
    assert isinstance(doc, Document), doc
    assert PASSAGE in doc.text and "结尾一句" in doc.text
    assert doc.title == "页面"


def test_reading_order_of_an_override() -> None:
    assert reading_order("前文\u202e" + "倒序的句子"[::-1] + "\u202c后文") == "前文倒序的句子后文"
    plain = "没有方向控制符的文字，原样返回。\u200f"
    assert reading_order(plain) is plain
    # each line is its own paragraph: an override ends with its line
    assert reading_order("\u202e" + "甲乙"[::-1] + "\n丙丁") == "甲乙\n丙丁"


@pytest.mark.parametrize(
    "shown",
    [
        "前文\u202e{rev}\u202c后文",
        "前文&#x202E;{rev}&#x202c;后文",
        "前文&#8238;{rev}&#8236;后文",
        '前文<bdo dir="rtl">{rev}</bdo>后文',
        "前文\u202e{spans}\u202c后文",  # one <span> per character
    ],
)
def test_a_reversed_passage_shown_with_an_override_reads_as_shown(shown: str) -> None:
    rev = PASSAGE[::-1]
    spans = "".join(f"<span>{c}</span>" for c in rev)
    (doc,) = list(read_bytes(_page(f"<p>{shown.format(rev=rev, spans=spans)}</p>"), "rtl.html"))
    assert isinstance(doc, Document)
    assert PASSAGE in doc.text.replace("\n", "")
    assert "\u202e" not in doc.text and "\u202c" not in doc.text


def test_a_reversed_passage_is_found_by_a_check(tmp_path, redis_client) -> None:
    settings = Settings(data_dir=tmp_path, redis_prefix="tf")
    library = Library(settings, open_store(settings), redis_client)
    try:
        mother = work(2502, 40)
        library.ingest([Document(id="m", title="原作", text=mother)])
        copied = mother[300:700]
        html = _page(f"<p>{work(2503, 4)}\u202e{copied[::-1]}\u202c{work(2504, 4)}</p>")
        (suspect,) = list(read_bytes(html, "pirate.html"))
        assert isinstance(suspect, Document)
        result = library.check_text(suspect.text)
        assert [m.mother_id for m in result.matches] == ["m"]
        # and as a .txt file or a text given to the API
        txt = f"{work(2505, 3)}\u202e{copied[::-1]}\u202c"
        (doc,) = list(read_bytes(txt.encode(), "pirate.txt"))
        assert copied in doc.text
        # a suspect handed in as it came (API, workers): stored and matched as shown
        checked = library.check_suspect(Suspect(id="api-1", text=txt, title="t"), save=True)
        assert [m.mother_id for m in checked.result.matches] == ["m"]
        stored = library.store.get_suspect("api-1").text
        assert copied in stored and "\u202e" not in stored
    finally:
        library.store.close()


@pytest.mark.parametrize(
    "invisible",
    [
        "\u200b" * 50,
        "\ufeff\u200b\u200c\u200d\u2060",
        "\u202e\u202c \n\u3000\u200b",
        "\u3164\u00ad",
    ],
)
def test_a_text_of_invisible_characters_is_empty(invisible: str) -> None:
    assert is_blank(invisible)
    (err,) = list(read_bytes(invisible.encode("utf-8"), "zw.txt"))
    assert isinstance(err, DocumentError) and "empty document" in err.message
    (err,) = list(read_bytes(_page(f"<p>{invisible}</p>"), "zw.html"))
    assert isinstance(err, DocumentError) and "empty document" in err.message
    with pytest.raises(ValueError, match="missing 'text'"):
        check_text_item({"text": invisible}, "texts[0]")
    with pytest.raises(ValueError, match="missing 'text'"):
        check_document_item({"id": "x", "text": invisible}, "documents[0]")
    assert not is_blank(invisible + "字")
