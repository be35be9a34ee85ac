"""The measure of "a big library" for local snapshots of the index: the characters of
text its mothers hold, whatever their script (``YINJI_SNAPSHOT_MIN_CHARS``). Postings
would not do: an English word is one unit of three characters, so an English library
makes fewer postings a character than a Chinese one of the same size.

Counted from the store's listing (each text's length is kept or computed there; no text
is read into Python), only up to the floor asked about, and remembered while the store
holds the same mothers (its last seq and count); an ingest adds its own characters to
what is known instead of a recount (``LibraryChars.added``)."""

from __future__ import annotations

from tracker.store import Store

#: Mothers listed at a time when the characters are counted.
PAGE = 5000


class LibraryChars:
    """A library's characters of text, counted cheaply (see the module)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # ((last seq, mothers), whether counted whole, characters)
        self._known: tuple[tuple[int, int], bool, int] | None = None

    def count(self, *, up_to: int) -> int:
        """Characters of text the library's mothers hold, counted until ``up_to`` (a
        big library is not listed whole; ~5 ms a million characters with sqlite), and
        not counted again while the store holds the same mothers."""
        state = (self.store.last_seq(), self.store.count_mothers())
        known = self._known
        if known is not None and known[0] == state and (known[1] or known[2] >= up_to):
            return known[2]
        total = offset = 0
        whole = False
        while total < up_to:
            page = self.store.list_mothers(offset=offset, limit=PAGE, with_text=False)
            total += sum(m.chars for m in page)
            if len(page) < PAGE:
                whole = True
                break
            offset += len(page)
        self._known = (state, whole, total)
        return total

    def added(self, stored: int, replaced: int, chars: int) -> None:
        """After an ingest of ``stored`` mothers (``replaced`` of them new versions) of
        ``chars`` characters: the count known without a recount when the store changed
        by exactly these (no other writer meanwhile, nothing replaced, whose old length
        is not known here)."""
        if replaced or not stored:
            return
        # (no count known: a store that never held a mother before, seqs from 1)
        (seq, mothers), whole, total = self._known or ((0, 0), True, 0)
        state = (self.store.last_seq(), self.store.count_mothers())
        if state == (seq + stored, mothers + stored):
            self._known = (state, whole, total + chars)
