#!/usr/bin/env python3
"""Check a Yinji evidence bundle's Merkle proofs with nothing but Python's standard library.

Usage, in the folder the bundle was unzipped to::

    python3 verify_proof.py            # or: python3 verify_proof.py FOLDER

For every log record in ``manifest.json`` it recomputes the record's leaf hash,
``SHA-256(0x00 || file bytes)``, walks the audit path in ``proofs/`` up to a root with
the algorithm of RFC 9162 section 2.1.3.2, and compares that root (and the tree size)
with ``treehead.json``. Then it checks that every evidence file's SHA-256 is the one a
proven record names. It prints one line per check and exits 0 when all pass, 1 otherwise.

It does not check the tree head's Ed25519 signature or the timestamp token (the standard
library cannot): ``openssl`` does, as VERIFY.txt explains. This file is part of the
bundle and can be read in full; it was copied from Yinji's ``tracker/evidence/``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_path(leaf: bytes, index: int, size: int, path: list[bytes]) -> bytes | None:
    """RFC 9162, 2.1.3.2; None when the path cannot fit this index and size."""
    if not 0 <= index < size:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def consistent(
    first: int, second: int, first_root: bytes, second_root: bytes, proof: list[bytes]
) -> bool:
    """RFC 9162, 2.1.4.2: the tree of ``second`` leaves begins with that of ``first``."""
    if not 0 < first <= second:
        return False
    if first == second:
        return not proof and first_root == second_root
    path = ([first_root] if first & (first - 1) == 0 else []) + list(proof)
    if not path:
        return False
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == first_root and sr == second_root


def lookup(obj: object, path: list[str]) -> object:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def main(argv: list[str]) -> int:
    folder = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent
    failures = 0

    def report(ok: bool, message: str) -> None:
        nonlocal failures
        failures += 0 if ok else 1
        print(("OK    " if ok else "FAIL  ") + message)

    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        head = json.loads((folder / "treehead.json").read_text(encoding="utf-8"))
        size, root = int(head["size"]), bytes.fromhex(head["root_hash"])
    except (OSError, ValueError, KeyError) as exc:
        print(f"FAIL  cannot read manifest.json and treehead.json in {folder}: {exc}")
        return 1
    print(f"tree head: {size} records, root {root.hex()}, {head.get('time_utc')}")

    proven: dict[int, dict[str, object]] = {}
    for record in manifest.get("records", []):
        try:
            index, name, proof_name = record["leaf_index"], record["file"], record["proof"]
            data = (folder / name).read_bytes()
            proof = json.loads((folder / proof_name).read_text(encoding="utf-8"))
            path = [bytes.fromhex(h) for h in proof["audit_path"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            report(False, f"record {record!r}: cannot read it or its proof ({exc})")
            continue
        leaf = leaf_hash(data)
        same_tree = proof.get("tree_size") == size and proof.get("root_hash") == root.hex()
        ok = same_tree and proof.get("leaf_index") == index
        ok = ok and root_from_path(leaf, index, size, path) == root
        report(ok, f"{name}: leaf {leaf.hex()} is record {index} of the tree head")
        if ok:
            proven[index] = json.loads(data.decode("utf-8"))

    for anchor in manifest.get("anchors", []):
        try:
            first = json.loads((folder / anchor["head"]).read_text(encoding="utf-8"))
            proof = json.loads((folder / anchor["consistency"]).read_text(encoding="utf-8"))
            ok = consistent(
                int(first["size"]),
                size,
                bytes.fromhex(first["root_hash"]),
                root,
                [bytes.fromhex(h) for h in proof["proof"]],
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            report(False, f"anchor {anchor!r}: cannot read it ({exc})")
            continue
        report(ok, f"{anchor['head']}: the tree head extends it (consistency proof)")

    for member in manifest.get("members", []):
        check = member.get("proof") if isinstance(member, dict) else None
        if not check:
            continue
        try:
            name, index = member["name"], check["leaf_index"]
            digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        except (OSError, KeyError, TypeError) as exc:
            report(False, f"member {member!r}: cannot read it ({exc})")
            continue
        if index not in proven:
            report(False, f"{name}: record {index}, which names it, is not proven")
            continue
        named = lookup(proven[index], check["path"])
        report(named == digest, f"{name}: sha256 {digest} is named by record {index}")

    print("all checks passed" if failures == 0 else f"{failures} check(s) FAILED")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
