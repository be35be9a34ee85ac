"""RFC 6962 Merkle tree: published test vectors, a direct transcription of the RFC's
recursive definitions as the oracle for random trees of every size 1..70, and tampered
proofs that must fail."""

from __future__ import annotations

import hashlib
import random

import pytest

from tracker.evidence.merkle import (
    EMPTY_ROOT,
    MemoryTree,
    ProofError,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root_from_inclusion_proof,
    verify_consistency,
    verify_inclusion,
)

# The Certificate Transparency reference leaves and the tree heads of sizes 0..8
# (RFC 6962 test data as published with Trillian / transparency-dev/merkle).
CT_LEAVES = [
    bytes.fromhex(h)
    for h in [
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    ]
]
CT_ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
# (leaf index, tree size, audit path)
CT_INCLUSION = [
    (
        0,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        [
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (
        1,
        5,
        [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
]
# (first size, second size, consistency proof)
CT_CONSISTENCY = [
    (
        1,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        [
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
]


# --- the RFC's definitions, transcribed literally (recursion over slices) ----------
def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(d: list[bytes]) -> bytes:
    n = len(d)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return hashlib.sha256(b"\x00" + d[0]).digest()
    k = _k(n)
    return hashlib.sha256(b"\x01" + mth(d[:k]) + mth(d[k:])).digest()


def path(m: int, d: list[bytes]) -> list[bytes]:
    n = len(d)
    if n == 1:
        return []
    k = _k(n)
    if m < k:
        return [*path(m, d[:k]), mth(d[k:])]
    return [*path(m - k, d[k:]), mth(d[:k])]


def subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    n = len(d)
    if m == n:
        return [] if b else [mth(d)]
    k = _k(n)
    if m <= k:
        return [*subproof(m, d[:k], b), mth(d[k:])]
    return [*subproof(m - k, d[k:], False), mth(d[:k])]


def random_entries(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.randint(0, 40)) for _ in range(n)]


def flipped(proof: list[bytes], i: int) -> list[bytes]:
    bad = list(proof)
    bad[i] = bytes([bad[i][0] ^ 0x10]) + bad[i][1:]
    return bad


# --- tests -------------------------------------------------------------------------
def test_hash_prefixes() -> None:
    assert leaf_hash(b"") == hashlib.sha256(b"\x00").digest()
    a, b = b"\x11" * 32, b"\x22" * 32
    assert node_hash(a, b) == hashlib.sha256(b"\x01" + a + b).digest()
    assert EMPTY_ROOT.hex() == CT_ROOTS[0]


def test_reference_roots_for_every_size() -> None:
    tree = MemoryTree.of_entries(CT_LEAVES)
    for size in range(len(CT_LEAVES) + 1):
        assert tree.root(size).hex() == CT_ROOTS[size], size


@pytest.mark.parametrize(("index", "size", "expected"), CT_INCLUSION)
def test_reference_inclusion_proofs(index: int, size: int, expected: list[str]) -> None:
    tree = MemoryTree.of_entries(CT_LEAVES)
    proof = tree.inclusion_proof(index, size)
    assert [p.hex() for p in proof] == expected
    root = bytes.fromhex(CT_ROOTS[size])
    assert verify_inclusion(leaf_hash(CT_LEAVES[index]), index, size, proof, root)


@pytest.mark.parametrize(("first", "second", "expected"), CT_CONSISTENCY)
def test_reference_consistency_proofs(first: int, second: int, expected: list[str]) -> None:
    tree = MemoryTree.of_entries(CT_LEAVES)
    proof = tree.consistency_proof(first, second)
    assert [p.hex() for p in proof] == expected
    r1, r2 = bytes.fromhex(CT_ROOTS[first]), bytes.fromhex(CT_ROOTS[second])
    assert verify_consistency(first, second, r1, r2, proof)
    assert not verify_consistency(first, second, r2, r1, proof)


def test_hand_computed_three_leaf_tree() -> None:
    a, b, c = b"a", b"b", b"c"
    la, lb, lc = (hashlib.sha256(b"\x00" + x).digest() for x in (a, b, c))
    ab = hashlib.sha256(b"\x01" + la + lb).digest()
    root = hashlib.sha256(b"\x01" + ab + lc).digest()
    tree = MemoryTree.of_entries([a, b, c])
    assert tree.root() == root
    assert tree.inclusion_proof(0) == [lb, lc]
    assert tree.inclusion_proof(1) == [la, lc]
    assert tree.inclusion_proof(2) == [ab]
    assert tree.consistency_proof(1) == [lb, lc]
    assert tree.consistency_proof(2) == [lc]
    assert verify_consistency(2, 3, ab, root, [lc])


def test_random_trees_every_size_against_the_rfc_definitions() -> None:
    entries = random_entries(70, seed=6962)
    tree = MemoryTree()
    for n in range(1, 71):
        tree.append(leaf_hash(entries[n - 1]))
        d = entries[:n]
        root = mth(d)
        assert tree.root() == root, n
        for m in range(n):
            proof = tree.inclusion_proof(m)
            assert proof == path(m, d), (m, n)
            assert root_from_inclusion_proof(leaf_hash(d[m]), m, n, proof) == root
        for m in range(1, n):
            proof = tree.consistency_proof(m)
            assert proof == subproof(m, d, True), (m, n)
            assert verify_consistency(m, n, mth(d[:m]), root, proof), (m, n)


def test_tampered_inclusion_proofs_fail() -> None:
    entries = random_entries(70, seed=1)
    tree = MemoryTree.of_entries(entries)
    for n in (1, 2, 3, 5, 8, 13, 33, 64, 70):
        root = tree.root(n)
        for m in range(n):
            leaf = leaf_hash(entries[m])
            proof = tree.inclusion_proof(m, n)
            assert verify_inclusion(leaf, m, n, proof, root)
            assert not verify_inclusion(leaf_hash(entries[m] + b"x"), m, n, proof, root)
            assert not verify_inclusion(leaf, m, n, proof, EMPTY_ROOT)
            for i in range(len(proof)):
                assert not verify_inclusion(leaf, m, n, flipped(proof, i), root)
            if proof:
                assert not verify_inclusion(leaf, m, n, proof[:-1], root)
                assert not verify_inclusion(leaf, m, n, [*proof, root], root)
                assert not verify_inclusion(leaf, m, n, [root, *proof], root)
            for wrong in (m - 1, m + 1, m ^ 2):
                if 0 <= wrong < n and entries[wrong] != entries[m]:
                    assert not verify_inclusion(leaf, wrong, n, proof, root), (m, wrong, n)
            # (a path can be valid for a neighbouring size: leaf 0 of 3 and of 4 leaves
            # have the same siblings; halving or doubling the size never keeps it valid)
            for size in (n * 2, n // 2):
                if m < size and size != n:
                    assert not verify_inclusion(leaf, m, size, proof, root), (m, n, size)


def test_tampered_consistency_proofs_fail() -> None:
    entries = random_entries(70, seed=2)
    tree = MemoryTree.of_entries(entries)
    for n in (2, 3, 7, 8, 9, 31, 64, 70):
        r2 = tree.root(n)
        for m in range(1, n):
            r1 = tree.root(m)
            proof = tree.consistency_proof(m, n)
            assert verify_consistency(m, n, r1, r2, proof)
            assert not verify_consistency(m, n, r2, r1, proof)
            assert not verify_consistency(m, n, r1, r2, [])
            assert not verify_consistency(m, n, r1, r2, proof[:-1])
            assert not verify_consistency(m, n, r1, r2, [*proof, r1])
            assert not verify_consistency(m, n, r1, r2, [proof[0], *proof])
            for i in range(len(proof)):
                assert not verify_consistency(m, n, r1, r2, flipped(proof, i)), (m, n, i)
            for wrong in (m - 1, m + 1):
                if 0 < wrong < n:
                    assert not verify_consistency(wrong, n, r1, r2, proof), (m, wrong, n)
            assert not verify_consistency(m, n * 2, r1, r2, proof)


def test_trivial_and_invalid_sizes() -> None:
    tree = MemoryTree.of_entries([b"x", b"y"])
    r = tree.root()
    assert verify_consistency(2, 2, r, r, [])
    assert not verify_consistency(2, 2, r, EMPTY_ROOT, [])
    assert verify_consistency(0, 2, EMPTY_ROOT, r, [])
    assert not verify_consistency(0, 2, r, r, [])
    assert not verify_consistency(2, 1, r, r, [])
    assert not verify_inclusion(b"short", 0, 1, [], r)
    with pytest.raises(ProofError, match="leaf 2 is not in a tree of 2"):
        inclusion_proof(tree, 2, 2)
    with pytest.raises(ProofError, match="from size 3 to size 2"):
        consistency_proof(tree, 3, 2)
    with pytest.raises(ProofError, match="has 2 leaves, not 3"):
        tree.root(3)
    with pytest.raises(ProofError):
        root_from_inclusion_proof(leaf_hash(b"x"), 0, 2, [])
