"""The ingest's faster paths (issue #36) give what the plain ones give: the bulk load's
field values, a chapter's fingerprints, the text decoders' choice, one decoding a book."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tracker.books import parse
from tracker.books.service import BookIngest
from tracker.documents.readers import Document, clean_text, decode_text
from tracker.fingerprints.daguan import Fingerprinter, FingerprintParams, distinct, letter_indices
from tracker.indexes.bulk import fill_values
from tracker.indexes.codec import new_value
from tracker.text.pinyin import initial_codes
from tracker.text.textcodec import _han_share, _plausibility
from tracker.text.textform import reading_order

TEXT = (
    "滚滚长江东逝水，浪花淘尽英雄。是非成败转头空。青山依旧在，几度夕阳红。"
    "白发渔樵江渚上，惯看秋月春风。一壶浊酒喜相逢。古今多少事，都付笑谈中。"
) * 40


def _fields_one_by_one(
    seqs: np.ndarray, starts: np.ndarray, stop_df: int
) -> tuple[list[bytes], list[int]]:
    """Each field's value and postings as adds write them (``new_value``, the Python
    twin of ``lua/codec.lua``: a stop marker keeps the holders the field had when the
    next one stopped it, at most ``SAMPLE``)."""
    raw = seqs.astype("<u4").tobytes()
    ends = [*starts[1:].tolist(), seqs.size]
    values, posts = [], []
    for a, z in zip(starts.tolist(), ends, strict=True):
        value, added = new_value([raw[4 * i : 4 * i + 4] for i in range(a, z)], stop_df)
        values.append(value)
        posts.append(added)
    return values, posts


@pytest.mark.parametrize("stop_df", [1, 2, 3, 6, 1000])
def test_bulk_field_values_are_the_values_adds_write(stop_df: int) -> None:
    rng = np.random.default_rng(stop_df)
    # Fields of one to eight seqs, some seqs twice in a field (edition groups, collisions),
    # seqs of one to ten digits.
    counts = rng.integers(1, 9, 3000)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    seqs = rng.choice(
        np.array([0, 1, 7, 42, 999, 123456, 4294967295], dtype=np.uint32), int(counts.sum())
    )
    seqs[::5] = rng.integers(0, 2**32, seqs[::5].size, dtype=np.uint64).astype(np.uint32)
    vlen, vdata, posts = fill_values(seqs, starts, stop_df)
    values, want_posts = _fields_one_by_one(seqs, starts, stop_df)
    got = vdata.tobytes()
    offsets = np.concatenate([[0], np.cumsum(vlen)]).tolist()
    assert [got[a:z] for a, z in itertools.pairwise(offsets)] == values
    assert posts.tolist() == want_posts
    assert any(v[:1] == b"\x00" for v in values) or stop_df == 1000  # stops were made


def test_a_chapter_s_fingerprints_are_the_letter_by_letter_packing() -> None:
    for params in (FingerprintParams(), FingerprintParams(levels=8, letters="abcdefghjklmnop")):
        fp = Fingerprinter(params)
        idx = letter_indices(initial_codes(TEXT)[0])
        for stride in (params.stride, 1):
            values, starts = fp.from_letter_indices(idx, stride)
            counts = np.asarray(
                [np.bincount(idx[s : s + params.granularity], minlength=23) for s in starts]
            ).T
            want = np.zeros(values.size, dtype=np.uint64)
            for row, col in enumerate(fp._columns):
                want = want * np.uint64(params.levels) + fp._table[row][counts[col]]
            assert values.dtype == np.uint64 and np.array_equal(values, want)


def test_distinct_is_numpy_unique() -> None:
    for values in ([], [5], [3, 3, 1, 2**63 + 5, 1, 2**64 - 1]):
        arr = np.asarray(values, dtype=np.uint64)
        assert np.array_equal(distinct(arr), np.unique(arr))


def test_the_decoder_scores_and_chooses_as_before() -> None:
    def plausibility(text: str) -> float:
        good = sum(
            "\u4e00" <= ch <= "\u9fff"
            or " " <= ch <= "~"
            or ch in "\n\r\t"
            or "\u3000" <= ch <= "\u303f"
            or "\uff00" <= ch <= "\uffef"
            for ch in text
        )
        return good / len(text) if text else 0.0

    def han_share(text: str) -> float:
        chars = [ch for ch in text if not ch.isspace()]
        return sum("\u4e00" <= ch <= "\u9fff" for ch in chars) / len(chars) if chars else 0.0

    for text in ("", " \u3000\n", TEXT[:50], "abc\x85\u2028é中", "\ue3d5 ½ 中文 ﾊ", "\U0001f600x"):
        assert _plausibility(text) == plausibility(text)
        assert _han_share(text) == han_share(text)
    # GB18030 bytes that Big5 also decodes: the reading that looks like Chinese wins.
    assert decode_text("三国演义".encode("gb18030")) == "三国演义"
    assert decode_text("三國演義，話說天下大勢".encode("big5")) == "三國演義，話說天下大勢"
    assert decode_text(TEXT.encode("gb18030")) == TEXT


def test_clean_text_as_before() -> None:
    for text in (TEXT, "a\ud800b", "x\u202eabc\u202c y\nz", "", "\u2067x\n中"):
        assert clean_text(text) == reading_order(text.replace("\ud800", "\ufffd"))


def test_a_whole_book_txt_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    book = "《三国演义》\n" + "".join(
        f"\n第{n}回 标题{n}\n{TEXT[i * 7 :]}\n" for i, n in enumerate(("一", "二", "三"))
    )
    data = book.encode("gb18030")
    calls: list[int] = []
    decode = parse._decode_book_text

    def counted(name: str, raw: bytes) -> str:
        calls.append(len(raw))
        return decode(name, raw)

    monkeypatch.setattr(parse, "_decode_book_text", counted)

    class NoService:
        def ensure_migrated(self) -> None: ...

    ingest = BookIngest(NoService(), mode="auto")  # type: ignore[arg-type]
    docs = ingest.read_file(data, "sanguo.txt", "sanguo")
    assert docs is not None and len(docs) == 3
    assert calls == [len(data)]  # the book test and the book reader: one decoding
    titles = [d.title for d in docs if isinstance(d, Document)]
    assert len(titles) == 3 and titles[0].startswith("《三国演义》")
    assert parse.decode_book_text("sanguo.txt", data) == decode("sanguo.txt", data)
    assert len(calls) == 2  # outside an ingest, nothing is remembered
