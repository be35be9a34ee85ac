import io
import json
import zipfile

from textgen import work

from tracker.documents.readers import (
    Document,
    DocumentError,
    decode_text,
    iter_documents,
    read_bytes,
    split_documents,
)


def _docs(items):
    return split_documents(items)


def test_jsonl_keeps_metadata_and_reports_bad_lines(tmp_path):
    p = tmp_path / "lib.jsonl"
    lines = [
        json.dumps(
            {"id": "a", "title": "甲", "text": work(1, 3), "author": "某人"}, ensure_ascii=False
        ),
        "{not json",
        json.dumps({"title": "no id", "text": "正文"}, ensure_ascii=False),
        json.dumps({"id": "b", "text": ""}),
        "",
        json.dumps([1, 2]),
        json.dumps({"id": 7, "text": work(2, 3)}, ensure_ascii=False),
    ]
    p.write_text("\n".join(lines), encoding="utf-8")
    docs, errors = _docs(iter_documents([p]))
    assert [d.id for d in docs] == ["a", "7"]
    assert docs[0].metadata == {"author": "某人"} and docs[0].title == "甲"
    assert [e.source for e in errors] == [f"{p}:2", f"{p}:3", f"{p}:4", f"{p}:6"]
    assert "invalid JSON" in errors[0].message and "missing 'id'" in errors[1].message


def test_txt_encodings(tmp_path):
    text = work(3, 4)
    for enc in ("utf-8", "utf-8-sig", "gb18030", "utf-16"):
        p = tmp_path / f"doc-{enc}.txt"
        p.write_bytes(text.encode(enc))
        docs, errors = _docs(iter_documents([p]))
        assert not errors, errors
        assert docs[0].text == text and docs[0].id == f"doc-{enc}"
    big5 = "春眠不覺曉，處處聞啼鳥。"
    assert decode_text(big5.encode("big5")) == big5


def test_bad_inputs_are_named_errors(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"   \n")
    (tmp_path / "binary.txt").write_bytes(b"\x00\x01\x02PNG")
    (tmp_path / "latin.txt").write_bytes(bytes(range(0x80, 0x100)) * 3)
    (tmp_path / "notes.pdf").write_bytes(b"%PDF-1.4")
    (tmp_path / "good.txt").write_text(work(4, 2), encoding="utf-8")
    items = list(iter_documents([*sorted(tmp_path.iterdir()), tmp_path / "missing.txt"]))
    docs, errors = _docs(items)
    assert [d.id for d in docs] == ["good"]
    by_name = {e.source.rsplit("/", 1)[-1]: e.message for e in errors}
    assert "empty" in by_name["empty.txt"]
    assert "binary" in by_name["binary.txt"]
    assert "unsupported" in by_name["notes.pdf"]
    assert "no such file" in by_name["missing.txt"]
    assert "latin.txt" in by_name


def test_html_is_extracted_and_malformed_html_survives():
    body = work(5, 6)
    html = f"<html><head><title>第一章</title></head><body><nav>首页</nav><p>{body}</p>"
    docs, errors = _docs(read_bytes(html.encode("utf-8"), "page.html"))
    assert not errors
    assert docs[0].title == "第一章" and body[:50] in docs[0].text
    gbk = f'<meta charset="gbk"><p>{body}</p>'.encode("gbk")
    docs, errors = _docs(read_bytes(gbk, "gbk.htm"))
    assert body[:30] in docs[0].text
    docs, errors = _docs(read_bytes(b"<p><div><<<>>" + body.encode(), "broken.html"))
    assert docs and body[:20] in docs[0].text


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_zip_members_and_hostile_paths():
    data = _zip(
        {
            "works/one.txt": work(6, 3).encode(),
            "../evil.txt": work(7, 3).encode(),
            "/abs.txt": work(8, 3).encode(),
            "nested.zip": _zip({"x.txt": b"x"}),
            "image.png": b"\x89PNG",
            "lib.jsonl": json.dumps({"id": "j1", "text": work(9, 2)}, ensure_ascii=False).encode(),
        }
    )
    docs, errors = _docs(read_bytes(data, "upload.zip"))
    assert sorted(d.id for d in docs) == ["j1", "one"]
    messages = {e.source: e.message for e in errors}
    assert "unsafe path" in messages["upload.zip!../evil.txt"]
    assert "unsafe path" in messages["upload.zip!/abs.txt"]
    assert "nested" in messages["upload.zip!nested.zip"]


def test_zip_bomb_refused():
    bomb = _zip({"bomb.txt": b"\x00" * (80 * 1024 * 1024)})
    assert len(bomb) < 200_000
    docs, errors = _docs(read_bytes(bomb, "bomb.zip"))
    assert not docs and "refused" in errors[0].message


def test_corrupt_zip_and_docx():
    docs, errors = _docs(read_bytes(b"PK\x03\x04garbage", "broken.zip"))
    assert not docs and "not a valid zip" in errors[0].message
    docs, errors = _docs(read_bytes(b"not a zip", "broken.docx"))
    assert not docs and "docx" in errors[0].message


def test_docx_text():
    ns = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = work(10, 3)
    xml = (
        f'<w:document xmlns:w="{ns}"><w:body><w:p><w:r><w:t>标题</w:t></w:r></w:p>'
        f"<w:p><w:r><w:t>{body[:40]}</w:t></w:r><w:r><w:t>{body[40:]}</w:t></w:r></w:p>"
        "</w:body></w:document>"
    )
    data = _zip({"word/document.xml": xml.encode()})
    docs, errors = _docs(read_bytes(data, "story.docx"))
    assert not errors and docs[0].text == "标题\n" + body and docs[0].title == "标题"


def test_folder_is_walked_in_order(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.txt").write_text(work(11, 2), encoding="utf-8")
    (tmp_path / "1.txt").write_text(work(12, 2), encoding="utf-8")
    (tmp_path / "skip.bin").write_bytes(b"\x00")
    (tmp_path / ".hidden.txt").write_text(work(13, 2), encoding="utf-8")
    items = list(iter_documents([tmp_path]))
    assert [d.id for d in items if isinstance(d, Document)] == ["1", "2"]
    # A file passed over is said (issue #14); hidden files are not works.
    (err,) = [e for e in items if isinstance(e, DocumentError)]
    assert err.source.endswith("skip.bin") and "unsupported file type" in err.message


def test_zip_member_ids_come_from_the_member_name():
    data = _zip({"top.txt": work(20, 3).encode(), "dir/sub.txt": work(21, 3).encode()})
    docs, errors = _docs(read_bytes(data, "bundle.zip"))
    assert sorted(d.id for d in docs) == ["sub", "top"] and not errors
