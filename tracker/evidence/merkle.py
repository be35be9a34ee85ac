"""The Merkle tree of RFC 6962 (Certificate Transparency), section 2.1, as RFC 9162 restates it.

- leaf hash: ``SHA-256(0x00 || entry bytes)``;
- node hash: ``SHA-256(0x01 || left || right)``;
- the tree hash of n > 1 leaves splits them at k, the largest power of two below n:
  ``MTH(D[0:n]) = node(MTH(D[0:k]), MTH(D[k:n]))``; one leaf is its leaf hash; the
  empty tree is ``SHA-256("")``.

An *inclusion proof* (audit path) for leaf m of a tree of n leaves is the list of
sibling hashes from the leaf up to the root; a *consistency proof* between sizes m and n
shows that the first m leaves of the tree of size n are exactly the tree of size m (the
log only grew). Verification follows RFC 9162, sections 2.1.3.2 and 2.1.4.2.

Proof *generation* reads hashes of perfect subtrees (2^level leaves starting at a
multiple of 2^level) from a ``NodeSource``: the evidence log keeps them, so a proof
touches O(log² n) stored hashes instead of every leaf. ``MemoryTree`` is the in-memory
source (tests, and recomputing a log from its leaves).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Protocol

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"


class ProofError(ValueError):
    """A proof is malformed for the sizes given, or asked for sizes the tree has not."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


class NodeSource(Protocol):
    def perfect(self, level: int, index: int) -> bytes:
        """Hash of the perfect subtree over leaves ``[index·2^level, (index+1)·2^level)``;
        level 0 is the leaf hash itself."""
        ...


def subtree_hash(source: NodeSource, lo: int, hi: int) -> bytes:
    """``MTH(D[lo:hi])`` for a range the RFC recursion produces (``lo`` aligned)."""
    n = hi - lo
    if n <= 0:
        raise ProofError(f"empty range {lo}..{hi}")
    if n & (n - 1) == 0:
        level = n.bit_length() - 1
        if lo % n:
            raise ProofError(f"range {lo}..{hi} is not an aligned subtree")
        return source.perfect(level, lo >> level)
    k = _split(n)
    return node_hash(subtree_hash(source, lo, lo + k), subtree_hash(source, lo + k, hi))


def root_hash(source: NodeSource, size: int) -> bytes:
    """The tree hash of the first ``size`` leaves."""
    if size < 0:
        raise ProofError(f"negative tree size {size}")
    return EMPTY_ROOT if size == 0 else subtree_hash(source, 0, size)


def inclusion_proof(source: NodeSource, index: int, size: int) -> list[bytes]:
    """RFC 6962 ``PATH(index, D[0:size])``: sibling hashes, leaf level first."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size} leaves")
    path: list[bytes] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = _split(hi - lo)
        if index < lo + k:
            path.append(subtree_hash(source, lo + k, hi))
            hi = lo + k
        else:
            path.append(subtree_hash(source, lo, lo + k))
            lo += k
    path.reverse()
    return path


def consistency_proof(source: NodeSource, first: int, second: int) -> list[bytes]:
    """RFC 6962 ``PROOF(first, D[0:second])``; empty when first is 0 or equals second."""
    if not 0 <= first <= second:
        raise ProofError(f"no consistency proof from size {first} to size {second}")
    if first == 0 or first == second:
        return []
    proof: list[bytes] = []
    m, lo, hi, whole = first, 0, second, True
    while True:
        n = hi - lo
        if m == n:
            if not whole:
                proof.append(subtree_hash(source, lo, hi))
            break
        k = _split(n)
        if m <= k:
            proof.append(subtree_hash(source, lo + k, hi))
            hi = lo + k
        else:
            proof.append(subtree_hash(source, lo, lo + k))
            lo += k
            m -= k
            whole = False
    proof.reverse()
    return proof


def _check_hashes(what: str, hashes: Iterable[bytes]) -> None:
    for i, h in enumerate(hashes):
        if not isinstance(h, bytes | bytearray) or len(h) != HASH_SIZE:
            raise ProofError(f"{what}[{i}] is not a {HASH_SIZE}-byte hash")


def root_from_inclusion_proof(leaf: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    """The root an audit path leads to (RFC 9162, 2.1.3.2); ``ProofError`` when the
    path cannot belong to a leaf ``index`` of a tree of ``size`` leaves."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size} leaves")
    _check_hashes("leaf", [leaf])
    _check_hashes("proof", proof)
    fn, sn, r = index, size - 1, bytes(leaf)
    for p in proof:
        if sn == 0:
            raise ProofError("the proof is longer than the tree is high")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the proof is shorter than the tree is high")
    return r


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """True when ``proof`` shows leaf hash ``leaf`` at ``index`` in the tree ``root``."""
    try:
        return root_from_inclusion_proof(leaf, index, size, proof) == root
    except ProofError:
        return False


def verify_consistency(
    first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]
) -> bool:
    """True when ``proof`` shows the tree ``second_root`` of ``second`` leaves begins
    with the tree ``first_root`` of ``first`` leaves (RFC 9162, 2.1.4.2)."""
    try:
        _check_hashes("roots", [first_root, second_root])
        _check_hashes("proof", proof)
    except ProofError:
        return False
    if not 0 <= first <= second:
        return False
    if first == second:
        return not proof and first_root == second_root
    if first == 0:
        return not proof and first_root == EMPTY_ROOT
    if not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == first_root and sr == second_root


class MemoryTree:
    """All perfect-subtree hashes of a list of leaves, kept in memory; grows by ``append``."""

    def __init__(self, leaf_hashes: Iterable[bytes] = ()) -> None:
        self.levels: list[list[bytes]] = [[]]
        for h in leaf_hashes:
            self.append(h)

    @classmethod
    def of_entries(cls, entries: Iterable[bytes]) -> MemoryTree:
        return cls(leaf_hash(e) for e in entries)

    @property
    def size(self) -> int:
        return len(self.levels[0])

    def append(self, leaf: bytes) -> int:
        """Add a leaf hash; returns its index."""
        _check_hashes("leaf", [leaf])
        index = len(self.levels[0])
        self.levels[0].append(bytes(leaf))
        level, i = 0, index
        while i & 1:
            if len(self.levels) == level + 1:
                self.levels.append([])
            row = self.levels[level]
            self.levels[level + 1].append(node_hash(row[i - 1], row[i]))
            level += 1
            i >>= 1
        return index

    def perfect(self, level: int, index: int) -> bytes:
        try:
            return self.levels[level][index]
        except IndexError:
            raise ProofError(
                f"the tree of {self.size} leaves has no complete subtree {level}/{index}"
            ) from None

    def root(self, size: int | None = None) -> bytes:
        size = self.size if size is None else size
        if size > self.size:
            raise ProofError(f"the tree has {self.size} leaves, not {size}")
        return root_hash(self, size)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        size = self.size if size is None else size
        if size > self.size:
            raise ProofError(f"the tree has {self.size} leaves, not {size}")
        return inclusion_proof(self, index, size)

    def consistency_proof(self, first: int, second: int | None = None) -> list[bytes]:
        second = self.size if second is None else second
        if second > self.size:
            raise ProofError(f"the tree has {self.size} leaves, not {second}")
        return consistency_proof(self, first, second)
