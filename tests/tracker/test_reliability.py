"""Issue 10: one bad input never sinks a batch. The hostile corpus comes from
``tests/hostile.py`` (made here, in tmp_path; nothing of it is in git)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from clikit import yinji_here
from hostile import (
    GOOD_TEXT,
    big5_html_declared_gb2312,
    hostile_folder,
    hostile_jsonl,
    utf16_without_bom,
    zip_bomb,
    zip_of,
)
from textgen import work

from tracker.common.rules import MAX_ID_LENGTH, check_document_item, check_id, parse_json
from tracker.documents.readers import Document, DocumentError, iter_documents, read_bytes, read_path
from tracker.library import Library
from tracker.plumbing.config import ReadLimits, SettingError, Settings
from tracker.store import Mother, open_store


def _yinji(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture()
def lib(tmp_path, redis_client):
    settings = Settings(data_dir=tmp_path, redis_prefix="rel")
    library = Library(settings, open_store(settings), redis_client)
    yield library
    library.store.close()


def test_every_hostile_line_is_its_own_error_and_good_lines_are_read(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    cases = hostile_jsonl(path)
    items = list(iter_documents([path]))
    assert len(items) == len(cases)
    for lineno, (case, item) in enumerate(zip(cases, items, strict=True), 1):
        if case.error is None:
            assert isinstance(item, Document) and item.id == case.doc_id, case.label
        else:
            assert isinstance(item, DocumentError), case.label
            assert item.source == f"{path}:{lineno}" and case.error in item.message, (
                case.label,
                item.message,
            )


def test_the_same_bytes_read_from_memory_give_the_same_answers(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    cases = hostile_jsonl(path, depth=5000)
    items = list(read_bytes(path.read_bytes(), "upload.jsonl"))
    assert [isinstance(i, Document) for i in items] == [c.error is None for c in cases]


def test_a_reader_failure_nobody_foresaw_is_that_files_error(monkeypatch, tmp_path) -> None:
    import tracker.documents.readers as documents

    def broken(data: bytes, name: str, *args: object) -> str:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(documents, "docx_text", broken)
    (tmp_path / "a.docx").write_bytes(b"PK whatever")
    (tmp_path / "b.txt").write_text(GOOD_TEXT, encoding="utf-8")
    items = list(iter_documents([tmp_path / "a.docx", tmp_path / "b.txt"]))
    assert isinstance(items[0], DocumentError) and "RecursionError" in items[0].message
    assert isinstance(items[1], Document) and items[1].id == "b"


def test_an_empty_jsonl_is_reported(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"\n  \n")
    (err,) = list(iter_documents([tmp_path / "empty.jsonl"]))
    assert isinstance(err, DocumentError) and "empty file" in err.message


def test_one_id_rule_for_readers_and_the_api() -> None:
    assert check_id(" 12 ") == "12" and check_id(7) == "7"
    for bad, reason in [
        ({"a": 1}, "got dict"),
        (True, "got bool"),
        ([1], "got list"),
        (None, "got null"),
        (" \t", "must not be blank"),
        ("x" * (MAX_ID_LENGTH + 1), "longer than"),
        ("a\x00b", "control characters"),
    ]:
        with pytest.raises(ValueError, match=reason):
            check_id(bad, "line 3")
        line = json.dumps({"id": bad, "text": "正文"})
        (item,) = list(read_bytes(line.encode(), "x.jsonl"))
        assert isinstance(item, DocumentError), bad
        with pytest.raises(ValueError):
            check_document_item({"id": bad, "text": "正文"}, "documents[0]")


def test_parse_json_refuses_what_a_store_or_client_cannot_hold() -> None:
    assert parse_json('{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    for text, reason in [
        ("[" * 100_000 + "]" * 100_000, "nested"),
        ("[" * 65 + "]" * 65, "nested"),
        ("1" * 5000, "4300 digits"),
        ('{"x": NaN}', "NaN"),
        ('{"x": Infinity}', "Infinity"),
        ('{"x": 1e400}', "out of range"),
        ('{"x": 123456789012345678901234567890}', "64-bit"),
    ]:
        with pytest.raises(ValueError, match=reason):
            parse_json(text, "body")


def test_metadata_with_nan_never_reaches_a_store(lib: Library) -> None:
    bad = Document(id="nan", text=work(1, 30), metadata={"score": math.nan})
    good = Document(id="ok", text=work(2, 30), metadata={"score": 0.5})
    report = lib.ingest([bad, good])
    assert report.ingested == 1 and [e.source for e in report.errors] == ["nan"]
    assert "NaN" in report.errors[0].message
    with pytest.raises(ValueError):
        lib.store.put_mother(Mother(id="m", title="t", text="x", metadata={"x": math.inf}))
    with pytest.raises(ValueError):
        lib.store.set_meta("k", {"x": math.nan})


def test_duplicate_ids_in_one_batch_are_errors_and_leave_no_orphan_postings(lib: Library) -> None:
    first = Document(id="dup", text=work(3, 40), source="a.jsonl:1")
    second = Document(id="dup", text=work(4, 40), source="a.jsonl:2")
    other = Document(id="other", text=work(5, 40), source="a.jsonl:3")
    report = lib.ingest([first, second, other])
    assert report.ingested == 2
    (err,) = report.errors
    assert err.source == "a.jsonl:2" and "duplicate id 'dup'" in err.message
    assert "a.jsonl:1" in err.message
    assert lib.store.get_mother("dup").text == first.text
    stats = lib.engine().stats()
    seq_dup = lib.store.get_mother("dup").seq
    seq_other = lib.store.get_mother("other").seq
    expected = sum(
        len(lib.engine().from_bytes(lib.store.get_fingerprints(s, "daguan") or b""))
        for s in (seq_dup, seq_other)
    )
    assert stats["postings"] == expected


@pytest.mark.slow
def test_cli_ingest_stores_every_good_item_of_a_hostile_run(tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.jsonl"
    cases = hostile_jsonl(hostile)
    (tmp_path / "novel.txt").write_text(work(7, 60), encoding="utf-8")
    data = tmp_path / "data"
    r = _yinji(data, "ingest", str(hostile), str(tmp_path / "novel.txt"))
    good = [c.doc_id for c in cases if c.error is None]
    bad = [c for c in cases if c.error is not None]
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert f"ingested {len(good) + 1} documents" in r.stderr
    assert f"{len(bad)} errors" in r.stderr
    store = open_store(Settings(data_dir=data))
    try:
        assert store.count_mothers() == len(good) + 1
        assert store.get_mother("novel").text == work(7, 60)
    finally:
        store.close()

    # check goes on after a bad line: every good line is checked, every bad one reported
    r = _yinji(data, "check", "--json", "--no-save", str(hostile))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    ids = [json.loads(line)["suspect_id"] for line in r.stdout.splitlines()]
    assert ids == good
    assert f"checked {len(good)} suspects; {len(bad)} errors" in r.stderr


# --- item 3: zip limits and the path reader ---------------------------------------------
def test_the_readme_zip_bomb_is_refused_by_name(tmp_path: Path) -> None:
    bomb = zip_bomb(tmp_path / "bomb.zip")  # 1,000 members of 1 MiB - 1 byte: 1.1 MB
    assert bomb.stat().st_size < 2 * 1024 * 1024
    (err,) = list(iter_documents([bomb]))
    assert isinstance(err, DocumentError) and err.source == str(bomb)
    assert "over the 268435456 bytes allowed per archive" in err.message
    (err,) = list(read_bytes(bomb.read_bytes(), "upload.zip"))
    assert err.source == "upload.zip" and "refused" in err.message


def test_every_zip_member_takes_the_ratio_test(tmp_path: Path) -> None:
    # 600 KiB of one character: under the old 1 MiB floor, about 1000x compressed.
    data = zip_of({"a.txt": GOOD_TEXT.encode(), "flat.txt": b"0" * 600_000})
    items = list(read_bytes(data, "x.zip"))
    assert [type(i).__name__ for i in items] == ["Document", "DocumentError"]
    assert items[1].source == "x.zip!flat.txt" and "zip bomb" in items[1].message
    # a small member is no bomb, whatever its ratio
    data = zip_of({"tiny.txt": "好".encode() * 1300})
    assert isinstance(next(read_bytes(data, "y.zip")), Document)


def test_zip_member_count_and_budget_are_limits(tmp_path: Path) -> None:
    members = {f"m{i}.txt": f"第{i}篇\n{GOOD_TEXT}".encode() for i in range(6)}
    data = zip_of(members)
    (err,) = list(read_bytes(data, "many.zip", limits=ReadLimits(max_zip_members=5)))
    assert "6 members, over the 5 allowed" in err.message and err.source == "many.zip"
    budget = sum(len(v) for v in members.values()) - 1
    (err,) = list(read_bytes(data, "big.zip", limits=ReadLimits(max_zip_bytes=budget)))
    assert "allowed per archive" in err.message
    assert len(list(read_bytes(data, "ok.zip", limits=ReadLimits(max_zip_bytes=budget + 1)))) == 6


def test_the_archive_budget_is_a_setting(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("YINJI_MAX_ZIP_MB", "1")
    assert ReadLimits.from_env().max_zip_bytes == 1024 * 1024
    data = zip_of({f"m{i}.txt": ("字" * 200_000).encode() for i in range(2)}, level=9)
    (err,) = list(read_bytes(data, "two.zip"))
    assert "YINJI_MAX_ZIP_MB" in err.message
    monkeypatch.setenv("YINJI_MAX_ZIP_MB", "lots")
    with pytest.raises(SettingError, match="YINJI_MAX_ZIP_MB"):
        ReadLimits.from_env()


def test_read_path_streams_a_jsonl_and_labels_it(tmp_path: Path) -> None:
    import tracemalloc

    path = tmp_path / "saved-upload.bin"
    line = json.dumps({"id": "x", "text": "字" * 50_000}, ensure_ascii=False).encode()
    with path.open("wb") as fh:
        for i in range(300):  # 45 MB
            fh.write(line.replace(b'"x"', f'"d{i}"'.encode()) + b"\n")
    tracemalloc.start()
    try:
        count = sum(1 for item in read_path(path, "books.jsonl") if isinstance(item, Document))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 300
    assert peak < 10 * 1024 * 1024  # the file is 45 MB: it was never held whole
    first = next(read_path(path, "books.jsonl"))
    assert first.source == "books.jsonl:1"


def test_read_path_skips_an_overlong_line_without_holding_it(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    small = ReadLimits(max_document_bytes=1000)
    long_line = json.dumps({"id": "big", "text": "x" * (small.max_line_bytes + 1)})
    path.write_text(f"{long_line}\n{json.dumps({'id': 'ok', 'text': '正文'})}\n")
    items = list(read_path(path, limits=small))
    assert isinstance(items[0], DocumentError) and "line longer than" in items[0].message
    assert isinstance(items[1], Document) and items[1].id == "ok"


def test_read_path_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    (err,) = list(read_path(fifo))
    assert "not a regular file (a FIFO)" in err.message
    (err,) = list(read_path(tmp_path, "folder.txt"))
    assert "not a regular file (a folder)" in err.message


# --- item 5: folders ----------------------------------------------------------------------
def test_a_folder_gives_its_regular_files_only_and_names_what_it_skipped(tmp_path: Path) -> None:
    folder = hostile_folder(tmp_path / "works", tmp_path / "elsewhere")
    items = list(iter_documents([folder.root]))  # would hang on the FIFO or /dev/zero
    docs = [i for i in items if isinstance(i, Document)]
    assert sorted(d.id for d in docs) == sorted(folder.good)
    assert all("root:x:0:0" not in d.text for d in docs)
    errors = {Path(e.source).name: e.message for e in items if isinstance(e, DocumentError)}
    assert set(errors) == set(folder.refused)
    for name, reason in folder.refused.items():
        assert reason in errors[name], (name, errors[name])


def test_a_device_or_fifo_argument_is_refused_before_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    items = list(iter_documents([fifo, tmp_path / "zero.txt", Path("/dev/zero")]))
    assert "not a regular file (a FIFO)" in items[0].message
    assert "not a regular file (a character device)" in items[1].message
    assert "unsupported file type" in items[2].message


def test_the_size_cap_comes_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "huge.txt"
    with big.open("wb") as fh:  # sparse: 5 GB on paper, nothing on disk
        fh.truncate(5 * 1024**3)
    (err,) = list(iter_documents([big]))
    assert "over the 67108864-byte document limit" in err.message


@pytest.mark.slow
def test_cli_ingest_of_a_hostile_folder(tmp_path: Path) -> None:
    folder = hostile_folder(tmp_path / "works", tmp_path / "elsewhere")
    r = _yinji(tmp_path / "data", "ingest", str(folder.root))
    assert r.returncode == 0, r.stderr
    assert f"ingested {len(folder.good)} documents" in r.stderr
    assert "escape.txt: symbolic link to" in r.stderr and "pipe.txt: not a regular" in r.stderr


# --- item 4: read-only and full data folders ----------------------------------------------
@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """``folder`` read-only for the commands run meanwhile: permissions when not root,
    a read-only bind mount when root (root writes through permissions)."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [folder, *folder.iterdir()]}
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot make a read-only folder here: {mounted.stderr.decode()}")
    try:
        r = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True, text=True
        )
        if r.returncode != 0:
            pytest.skip(f"cannot remount read-only: {r.stderr}")
        yield
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


@pytest.mark.slow
def test_a_read_only_library_can_still_be_read(tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = work(20, 40)
    (tmp_path / "w.txt").write_text(source, encoding="utf-8")
    (tmp_path / "copy.txt").write_text(work(21, 5) + source[100:800], encoding="utf-8")
    assert _yinji(data, "ingest", str(tmp_path / "w.txt")).returncode == 0
    with _read_only(data):
        r = _yinji(data, "check", "--json", "--no-save", str(tmp_path / "copy.txt"))
        assert r.returncode == 0, r.stderr
        assert [m["mother_id"] for m in json.loads(r.stdout)["matches"]] == ["w"]
        r = _yinji(data, "index", "stats")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["engines"]["daguan"]["health"]["state"] == "ok"
        r = _yinji(data, "list")
        assert r.returncode == 0 and r.stdout.startswith("w\t"), r.stderr
        for args in (["ingest", str(tmp_path / "copy.txt")], ["check", str(tmp_path / "copy.txt")]):
            r = _yinji(data, *args)
            assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
            assert f"the data folder {data} is read-only" in r.stderr
    assert not list(data.glob("*.tmp*"))


@pytest.mark.slow
def test_a_full_data_folder_is_said_and_loses_nothing_silently(tmp_path: Path) -> None:
    import resource

    total = 3000
    data = tmp_path / "data"
    books = tmp_path / "books.jsonl"
    with books.open("w", encoding="utf-8") as fh:
        # Many short works: the store writes a batch (256 works) at a time, all or
        # nothing, so the disk must fill after a few whole batches.
        for i in range(total):
            fh.write(json.dumps({"id": f"b{i}", "text": work(300 + i, 6)}, ensure_ascii=False))
            fh.write("\n")
    (tmp_path / "first.txt").write_text(work(299, 5), encoding="utf-8")
    assert _yinji(data, "ingest", str(tmp_path / "first.txt")).returncode == 0
    limit = (data / "yinji.sqlite3").stat().st_size + 1_200_000

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), "ingest", str(books)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=small_disk,
    )
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert f"the data folder {data} is full" in r.stderr
    stored_note = re.search(r"(\d+) documents were stored before this", r.stderr)
    assert stored_note, r.stderr
    store = open_store(Settings(data_dir=data))
    try:
        ids = [m.id for m in store.iter_mothers()]
    finally:
        store.close()
    assert ids[0] == "first" and 0 < len(ids) - 1 == int(stored_note.group(1)) < total
    assert ids[1:] == [f"b{i}" for i in range(len(ids) - 1)]  # in order, none missing
    # Everything stored can be found (the index is repaired if the failure cut it short).
    probe = tmp_path / "probe.txt"
    probe.write_text(work(300 + len(ids) - 2, 6)[20:270], encoding="utf-8")
    r = _yinji(data, "check", "--json", "--no-save", str(probe))
    assert r.returncode == 0, r.stderr
    assert [m["mother_id"] for m in json.loads(r.stdout)["matches"]] == [ids[-1]]


# --- item 6: the low ones ------------------------------------------------------------------
def test_html_uses_the_crawlers_decoder(tmp_path: Path) -> None:
    from tracker.crawler import decode_html

    text = "第一章 山雨欲來，天色漸暗，城門外的驛道上行人稀少。老掌櫃收起幌子，望著遠處的煙塵。" * 3
    page = big5_html_declared_gb2312(text)
    crawled, codec = decode_html(page)
    assert codec.startswith("big5") and text[:20] in crawled
    (doc,) = list(read_bytes(page, "page.html"))
    assert isinstance(doc, Document) and text[:30] in doc.text


@pytest.mark.parametrize("big_endian", [False, True])
def test_utf16_without_bom_is_text(tmp_path: Path, big_endian: bool) -> None:
    for name, body in [
        ("a.txt", GOOD_TEXT),
        ("b.txt", "第一章山雨欲来天色渐暗城门外的驿道上行人稀少老掌柜收起幌子望着远处的烟尘"),
        ("c.txt", "Chapter one\nPlain ASCII text, written by a Windows tool.\n"),
        ("d.html", f"<html><body><article><p>{GOOD_TEXT}</p></article></body></html>"),
    ]:
        (doc,) = list(read_bytes(utf16_without_bom(body, big_endian=big_endian), name))
        assert isinstance(doc, Document), (name, doc)
        assert "山雨欲来" in doc.text or body.strip() == doc.text.strip()
    (err,) = list(read_bytes(b"\x00\x01\x02\x03\xff\xfe\x00\x00", "bin.txt"))
    assert "binary file" in err.message


@pytest.mark.slow
def test_cli_delete_list_and_empty_jsonl(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for i in range(2):
        (tmp_path / f"w{i}.txt").write_text(work(30 + i, 30), encoding="utf-8")
    r = yinji_here(data, "ingest", str(tmp_path / "w0.txt"), str(tmp_path / "w1.txt"))
    assert r.exit_code == 0, r.stderr
    r = yinji_here(data, "delete", "w0", "nope")
    assert r.exit_code == 1 and "deleted w0" in r.stderr and "no work with id 'nope'" in r.stderr
    r = yinji_here(data, "list")
    assert [line.split("\t")[0] for line in r.stdout.splitlines()] == ["w1"]
    (tmp_path / "copy.txt").write_text(work(30, 30)[100:800], encoding="utf-8")
    r = yinji_here(data, "check", "--json", "--no-save", str(tmp_path / "copy.txt"))
    assert json.loads(r.stdout)["matches"] == []
    stats = json.loads(yinji_here(data, "index", "stats").stdout)["engines"]["daguan"]
    store = open_store(Settings(data_dir=data))
    try:
        seq = store.get_mother("w1").seq
        assert stats["postings"] == len(store.get_fingerprints(seq, "daguan") or b"") // 8
    finally:
        store.close()
    (tmp_path / "empty.jsonl").write_text("\n\n", encoding="utf-8")
    r = yinji_here(data, "ingest", str(tmp_path / "empty.jsonl"))
    assert r.exit_code == 1 and "empty.jsonl: empty file" in r.stderr


def _server_pid(data: Path) -> int | None:
    from tracker.indexes.redis_client import embedded_server_pid

    return embedded_server_pid(Settings(data_dir=data))


def _ingest_then_kill(tmp_path: Path, data: Path, sig: int) -> subprocess.Popen[str]:
    books = tmp_path / "books.jsonl"
    with books.open("w", encoding="utf-8") as fh:
        for i in range(3000):
            fh.write(json.dumps({"id": f"k{i}", "text": work(9000 + i, 8)}, ensure_ascii=False))
            fh.write("\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data), "ingest", str(books)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and _server_pid(data) is None:
        time.sleep(0.05)
    time.sleep(0.5)  # well inside the ingest
    assert proc.poll() is None, "the ingest ended before the signal"
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    return proc


@pytest.mark.slow
def test_a_terminated_cli_stops_its_redis_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = _ingest_then_kill(tmp_path, data, signal.SIGTERM)
    assert proc.returncode == 128 + signal.SIGTERM
    assert _server_pid(data) is None


@pytest.mark.slow
def test_a_killed_clis_redis_server_is_stopped_by_the_next_command(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _ingest_then_kill(tmp_path, data, signal.SIGKILL)
    pid = _server_pid(data)
    try:
        assert pid is not None  # nothing could stop it: SIGKILL leaves no chance
        r = _yinji(data, "list")
        assert r.returncode == 0, r.stderr
        assert _server_pid(data) is None
    finally:
        if pid is not None and _server_pid(data) == pid:
            os.kill(pid, signal.SIGKILL)
