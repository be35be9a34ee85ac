import json
import subprocess
import sys

import pytest
from clikit import yinji_here
from textgen import work


def _yinji(data_dir, *args, input_text=None):
    return subprocess.run(
        [sys.executable, "-m", "tracker.cli", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=120,
        input=input_text,
    )


@pytest.mark.slow
def test_ingest_check_json_contract(tmp_path):
    data = tmp_path / "data"
    lib = tmp_path / "lib.jsonl"
    docs = [{"id": f"w{i}", "title": f"标题{i}", "text": work(200 + i, 50)} for i in range(3)]
    lib.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs) + "\n{bad", "utf-8")
    r = _yinji(data, "ingest", str(lib), str(tmp_path / "missing.txt"))
    assert r.returncode == 0, r.stderr
    assert (
        "ingested 3 documents" in r.stderr
        and "missing.txt" in r.stderr
        and "lib.jsonl:4" in r.stderr
    )

    suspect_text = work(9, 10) + docs[1]["text"][300:900]
    (tmp_path / "copy.txt").write_text(suspect_text, encoding="utf-8")
    (tmp_path / "clean.txt").write_text(work(10, 30), encoding="utf-8")
    (tmp_path / "bin.txt").write_bytes(b"\x00\x01")
    r = _yinji(
        data,
        "check",
        "--json",
        str(tmp_path / "copy.txt"),
        str(tmp_path / "clean.txt"),
        str(tmp_path / "bin.txt"),
    )
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [x["suspect_id"] for x in lines] == ["copy", "clean"]
    assert lines[1]["matches"] == []
    (m,) = lines[0]["matches"]
    assert list(m) == [
        "mother_id", "title", "score", "coverage", "passages", "regions",
        "book_id", "book_title", "chapter", "chapter_index",
    ]  # fmt: skip
    assert m["book_id"] is None and m["chapter_index"] is None  # a work in no book
    (region,) = m["regions"]  # one copied stretch
    assert region["excluded"] == []
    assert m["mother_id"] == "w1" and m["title"] == "标题1"
    p = m["passages"][0]
    assert set(p) == {"suspect_start", "suspect_end", "mother_start", "mother_end", "similarity"}
    copied = suspect_text[p["suspect_start"] : p["suspect_end"]]
    assert copied[10:60] in docs[1]["text"]
    assert "bin.txt" in r.stderr

    r = _yinji(data, "check", str(tmp_path / "copy.txt"))
    assert "w1" in r.stdout and "标题1" in r.stdout


@pytest.mark.slow
def test_index_rebuild_and_stats(tmp_path):
    data = tmp_path / "data"
    (tmp_path / "a.txt").write_text(work(1, 40), encoding="utf-8")
    assert yinji_here(data, "ingest", str(tmp_path / "a.txt")).exit_code == 0
    r = yinji_here(data, "index", "rebuild")
    assert r.exit_code == 0 and "1 mothers" in r.stderr
    stats = json.loads(yinji_here(data, "index", "stats").stdout)
    assert stats["mothers"] == 1 and stats["engines"]["daguan"]["postings"] > 0


def test_fingerprint_and_reference(tmp_path):
    (tmp_path / "a.txt").write_text(work(2, 10), encoding="utf-8")
    r = yinji_here(tmp_path, "fingerprint", str(tmp_path / "a.txt"))
    assert r.exit_code == 0, r.stderr
    rows = [line.split("\t") for line in r.stdout.splitlines() if not line.startswith("#")]
    assert len(rows) > 5 and all(len(x) == 3 and int(x[0]) < int(x[1]) for x in rows)
    r = yinji_here(
        tmp_path, "reference", "build", str(tmp_path / "a.txt"), "-o", str(tmp_path / "ref.json")
    )
    assert r.exit_code == 0, r.stderr
    ref = json.loads((tmp_path / "ref.json").read_text())
    assert ref["format"] == "yinji-reference/1"
    r = yinji_here(tmp_path, "fingerprint", "--levels", "10", str(tmp_path / "a.txt"))
    assert r.exit_code != 0 and "do not fit" in r.stderr


@pytest.mark.slow
def test_nothing_readable_exits_nonzero(tmp_path):
    (tmp_path / "x.txt").write_bytes(b"\x00")
    r = yinji_here(tmp_path / "d", "ingest", str(tmp_path / "x.txt"))
    assert r.exit_code == 1 and "x.txt" in r.stderr


@pytest.mark.slow
def test_check_against_an_empty_library_is_an_error(tmp_path):
    # Issue #14: an empty library (or a mistyped --data-dir) answered "no match", exit 0.
    (tmp_path / "one.txt").write_text(work(3, 20), encoding="utf-8")
    r = yinji_here(tmp_path / "mistyped", "check", "--json", str(tmp_path / "one.txt"))
    assert r.exit_code == 1
    assert r.stdout == ""
    assert "no data folder at" in r.stderr and "mistyped" in r.stderr
    assert not (tmp_path / "mistyped").exists()  # issue #23: a mistyped folder creates nothing
    (tmp_path / "empty").mkdir()
    r = yinji_here(tmp_path / "empty", "check", "--json", str(tmp_path / "one.txt"))
    assert r.exit_code == 1 and "holds no works" in r.stderr


@pytest.mark.slow
def test_check_folder_reports_every_file_passed_over(tmp_path):
    # Issue #14: `yinji check .` skipped a .pdf in the folder without a word.
    data = tmp_path / "data"
    lib = tmp_path / "lib.jsonl"
    lib.write_text(json.dumps({"id": "w", "text": work(5, 40)}, ensure_ascii=False), "utf-8")
    assert yinji_here(data, "ingest", str(lib)).exit_code == 0
    folder = tmp_path / "suspects"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "config").write_text("[core]", encoding="utf-8")
    (folder / "a.txt").write_text(work(6, 20), encoding="utf-8")
    (folder / "real.pdf").write_bytes(b"%PDF-1.4\n")
    (folder / ".DS_Store").write_bytes(b"\x00\x00")
    r = yinji_here(data, "check", "--json", str(folder))
    assert r.exit_code == 0, r.stderr
    assert [json.loads(x)["suspect_id"] for x in r.stdout.splitlines()] == ["a"]
    assert "real.pdf: unsupported file type" in r.stderr
    assert ".DS_Store" not in r.stderr and ".git" not in r.stderr
    assert f"library: {data.resolve()}" in r.stderr


@pytest.mark.slow
def test_check_json_include_text_gives_what_offsets_index(tmp_path):
    # Issue #14: for .html input the offsets point into extracted text --json never showed.
    import hashlib

    data = tmp_path / "data"
    text = work(7, 40)
    lib = tmp_path / "lib.jsonl"
    lib.write_text(json.dumps({"id": "w", "text": text}, ensure_ascii=False), "utf-8")
    assert yinji_here(data, "ingest", str(lib)).exit_code == 0
    page = tmp_path / "page.html"
    page.write_text(
        f"<html><head><title>盗版</title></head><body><p>{text[100:700]}</p></body></html>",
        encoding="utf-8",
    )
    plain = json.loads(yinji_here(data, "check", "--json", str(page)).stdout)
    r = yinji_here(data, "check", "--json", "--include-text", str(page))
    assert r.exit_code == 0, r.stderr
    line = json.loads(r.stdout)
    assert "text" not in plain and plain["text_sha256"] == line["text_sha256"]
    assert line["text_sha256"] == hashlib.sha256(line["text"].encode("utf-8")).hexdigest()
    (m,) = line["matches"]
    p = m["passages"][0]
    copied = line["text"][p["suspect_start"] : p["suspect_end"]]
    assert copied == text[p["mother_start"] : p["mother_end"]]


def test_every_option_has_help_and_tiny_reference_warns(tmp_path):
    # Issue #14: fingerprint and index configure options had no help; reference build on
    # 1,076 characters said nothing about the corpus being too small.
    from click.testing import CliRunner

    from tracker.cli import main

    for command in (("fingerprint",), ("index", "configure"), ("reference", "build")):
        ctx = main.make_context("yinji", [*command[:-1], "--help"], resilient_parsing=True)
        group = main
        for name in command:
            group = group.get_command(ctx, name)
        for param in group.params:
            if param.param_type_name == "option":
                assert param.help, f"{' '.join(command)} {param.opts} has no help"

    corpus = tmp_path / "tiny.txt"
    corpus.write_text(work(4, 10), encoding="utf-8")
    r = CliRunner().invoke(main, ["reference", "build", str(corpus), "-o", str(tmp_path / "r")])
    assert r.exit_code == 0 and "corpus too small" in r.output


def test_a_signal_ends_the_command_with_its_status_even_if_unwinding_fails() -> None:
    """SIGTERM becomes ``SystemExit(143)`` (``tracker.cli_group.exit_cleanly_on_signals``); when the
    unwinding it starts hits an error of its own (a store transaction cut in two), the
    command still ends with 143, not with that error's message and status 1."""
    import sqlite3

    import click
    from click.testing import CliRunner

    from tracker.cli_group import YinjiGroup

    @click.group(cls=YinjiGroup)
    def group() -> None:
        pass

    @group.command()
    def ingest() -> None:
        try:
            raise SystemExit(143)  # what the SIGTERM handler raises
        finally:
            raise sqlite3.OperationalError("cannot start a transaction within a transaction")

    @group.command()
    def fails() -> None:
        raise sqlite3.OperationalError("cannot start a transaction within a transaction")

    runner = CliRunner()
    assert runner.invoke(group, ["ingest"]).exit_code == 143
    assert runner.invoke(group, ["fails"]).exit_code != 143  # no signal: reported as before
