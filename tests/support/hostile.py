"""The hostile corpus, made on demand in a temporary folder (nothing of it is stored in
git): JSON lines that break naive parsers, zip bombs, folders with links, FIFOs and
devices, text in surprising encodings. Tests and ``bench/chaos.py`` import it.

Every builder returns what it wrote, with what a reader must say about each item
(``Case.error``: a substring of the expected error, or None for a good document), so a
test can check that each bad item became its own error and every good one was read.
"""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

GOOD_TEXT = (
    "第一章 山雨欲来\n天色渐暗，城门外的驿道上行人稀少。老掌柜收起幌子，望着远处的烟尘，"
    "心里明白这一夜不会太平。他把账本锁进柜子，又吩咐伙计去后院备马。"
)


@dataclass(frozen=True)
class Case:
    label: str  # what the item is, for messages
    data: bytes  # a .jsonl line (without its newline) or a file's bytes
    error: str | None  # substring of the expected error message; None: a good document
    doc_id: str | None = None  # the id a good document gets


def good_line(doc_id: str, text: str = GOOD_TEXT, **extra: object) -> Case:
    line = json.dumps({"id": doc_id, "text": text, **extra}, ensure_ascii=False)
    return Case(f"good {doc_id}", line.encode("utf-8"), None, doc_id)


def hostile_json_lines(depth: int = 100_000, digits: int = 5_000) -> list[Case]:
    """One .jsonl line per way of breaking a reader, each followed by nothing special:
    the reader must turn each into that line's error."""
    deep_list = "[" * depth + "]" * depth
    deep_meta = '{"a":' * depth + "1" + "}" * depth
    text = json.dumps(GOOD_TEXT, ensure_ascii=False)
    return [
        Case("deep list", deep_list.encode(), "nested"),
        Case("deep metadata", f'{{"id":"d","text":{text},"m":{deep_meta}}}'.encode(), "nested"),
        Case("deep id", f'{{"id":{deep_list},"text":{text}}}'.encode(), "nested"),
        Case("huge int id", f'{{"id":{"9" * digits},"text":{text}}}'.encode(), "invalid JSON"),
        Case(
            "huge int metadata",
            f'{{"id":"h","text":{text},"n":{"1" * digits}}}'.encode(),
            "invalid JSON",
        ),
        Case("int64 overflow", f'{{"id":"o","text":{text},"n":{2**70}}}'.encode(), "64-bit"),
        Case("NaN", f'{{"id":"n","text":{text},"score":NaN}}'.encode(), "NaN"),
        Case("Infinity", f'{{"id":"i","text":{text},"score":-Infinity}}'.encode(), "Infinity"),
        Case("1e999", f'{{"id":"e","text":{text},"score":1e999}}'.encode(), "out of range"),
        Case("object id", f'{{"id":{{"a":1}},"text":{text}}}'.encode(), "'id' must be a string"),
        Case("bool id", f'{{"id":true,"text":{text}}}'.encode(), "'id' must be a string"),
        Case("list id", f'{{"id":[1,2],"text":{text}}}'.encode(), "'id' must be a string"),
        Case("null id", f'{{"id":null,"text":{text}}}'.encode(), "missing 'id'"),
        Case("blank id", f'{{"id":"   ","text":{text}}}'.encode(), "must not be blank"),
        Case("long id", json.dumps({"id": "长" * 5000, "text": GOOD_TEXT}).encode(), "longer than"),
        Case("control id", json.dumps({"id": "a\nb", "text": GOOD_TEXT}).encode(), "control"),
        Case("no text", b'{"id":"t"}', "missing 'text'"),
        Case("empty text", b'{"id":"t","text":"  "}', "empty document"),
        Case("not an object", b'"just a string"', "expected a JSON object"),
        Case("truncated", b'{"id":"x","text":"abc', "invalid JSON"),
        Case("title object", f'{{"id":"t2","text":{text},"title":{{}}}}'.encode(), "'title'"),
        Case("bad bytes", b'{"id":"u","text":"\xff\xfe\xfd"}', "not valid UTF-8"),
    ]


def jsonl_bytes(cases: Iterable[Case]) -> bytes:
    return b"\n".join(c.data for c in cases) + b"\n"


def hostile_jsonl(path: Path, *, depth: int = 100_000) -> list[Case]:
    """A .jsonl file mixing good lines and every hostile line; returns its cases in
    line order (line n is ``cases[n - 1]``)."""
    hostile = [c for c in hostile_json_lines(depth) if c.error is not None]
    cases: list[Case] = [good_line("good-1")]
    for i, case in enumerate(hostile):
        cases.append(case)
        if i % 5 == 4:
            cases.append(good_line(f"good-{len(cases)}"))
    cases.append(good_line("good-last", "尾声\n" + GOOD_TEXT))
    path.write_bytes(jsonl_bytes(cases))
    return cases


def zip_of(members: dict[str, bytes], *, level: int = 6) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    return buf.getvalue()


def zip_bomb(path: Path, *, members: int = 1000, size: int = 1024 * 1024 - 1) -> Path:
    """The README's bomb: ``members`` members of ``size`` bytes of "0" each in .txt files,
    every one under the old 1 MiB ratio floor (about 1 KiB per member on disk). The
    member is deflated once and its bytes repeated, written with ``struct``: quick."""
    body = b"0" * size
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    deflated = packer.compress(body) + packer.flush()
    crc = zlib.crc32(body)
    central = []
    with path.open("wb") as fh:
        for i in range(members):
            name = f"part{i:05d}.txt".encode()
            offset = fh.tell()
            fh.write(
                struct.pack(
                    "<IHHHHHIIIHH",
                    0x04034B50,
                    20,
                    0,
                    8,
                    0,
                    0,
                    crc,
                    len(deflated),
                    size,
                    len(name),
                    0,
                )
                + name
                + deflated
            )
            central.append(
                struct.pack(
                    "<IHHHHHHIIIHHHHHII",
                    0x02014B50,
                    20,
                    20,
                    0,
                    8,
                    0,
                    0,
                    crc,
                    len(deflated),
                    size,
                    len(name),
                    0,
                    0,
                    0,
                    0,
                    0o100644 << 16,
                    offset,
                )
                + name
            )
        start = fh.tell()
        directory = b"".join(central)
        fh.write(directory)
        fh.write(
            struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, members, members, len(directory), start, 0)
        )
    return path


def utf16_without_bom(text: str, *, big_endian: bool = False) -> bytes:
    return text.encode("utf-16-be" if big_endian else "utf-16-le")


def big5_html_declared_gb2312(text: str) -> bytes:
    """An HTML page in Big5 whose meta tag says gb2312 (a template copied across sites)."""
    body = f"<html><head><meta charset=gb2312><title>{text[:8]}</title></head>"
    body += f"<body><article><p>{text}</p></article></body></html>"
    return body.encode("big5")


@dataclass(frozen=True)
class Folder:
    root: Path
    good: list[str]  # ids of the regular files that must be read
    refused: dict[str, str]  # file name -> substring of its error


def hostile_folder(root: Path, outside: Path) -> Folder:
    """A folder to ingest holding good files, a symlink to a file outside it, a symlink
    inside it, a FIFO and a link to a character device, both with a .txt suffix.
    ``outside`` is a folder next to it holding the link's target."""
    root.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    (root / "a.txt").write_text(GOOD_TEXT, encoding="utf-8")
    (root / "sub").mkdir(exist_ok=True)
    (root / "sub" / "b.txt").write_text("第二篇\n" + GOOD_TEXT, encoding="utf-8")
    secret = outside / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n" * 3, encoding="utf-8")
    refused: dict[str, str] = {}
    (root / "escape.txt").symlink_to(secret)
    refused["escape.txt"] = "outside"
    (root / "inside.txt").symlink_to(root / "a.txt")
    (root / "outdir").symlink_to(outside, target_is_directory=True)
    refused["outdir"] = "outside"
    fifo = root / "pipe.txt"
    os.mkfifo(fifo)
    refused["pipe.txt"] = "not a regular file"
    (root / "zero.txt").symlink_to("/dev/zero")
    refused["zero.txt"] = "outside"
    return Folder(root, ["a", "b", "inside"], refused)
