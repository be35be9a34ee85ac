"""What the SimHash and MinHash engines share: a text stream (pinyin initials or
normalized characters), content-defined windows over it, row ids and evidence spans.

A window starts wherever a short hash of the stream is 0 mod ``window_gap``
(``tracker.fingerprints.simhash.content_windows``), so a copied passage gets the same windows in
suspect and mother whatever its offset. Row 0 of a mother is the whole stream; ids in
the indexes are ``seq << ROW_BITS | row``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tracker.engines.base import Engine
from tracker.fingerprints.simhash import content_windows, normalize
from tracker.text.units import unit_letters

ROW_BITS = 20
ROW_MASK = (1 << ROW_BITS) - 1

NORMALIZATIONS = ("initials", "chars")


def text_stream(text: str, normalization: str) -> str:
    """The string an engine takes its features from: pinyin initials or normalized chars."""
    if normalization == "initials":
        return unit_letters(text)
    if normalization == "chars":
        return normalize(text)
    raise ValueError(
        f"unknown normalization {normalization!r} (choose from {', '.join(NORMALIZATIONS)})"
    )


def span_evidence(spans: Sequence[tuple[int, int]], window: int) -> np.ndarray:
    """Sorted positions whose ``window``-long spans cover exactly the union of ``spans``
    (the verifier counts ``[p, p + window)`` as supported for every position ``p``)."""
    if not spans:
        return np.zeros(0, dtype=np.int64)
    parts = [np.arange(s, max(s, e - window) + 1, dtype=np.int64) for s, e in spans]
    return np.unique(np.concatenate(parts))


def check_normalization(normalization: str) -> None:
    if normalization not in NORMALIZATIONS:
        raise ValueError(
            f"unknown normalization {normalization!r} (choose from {', '.join(NORMALIZATIONS)})"
        )


class WindowedEngine(Engine):
    """An engine whose fingerprints are one row for the whole stream plus one per
    content-defined window. Subclasses set ``normalization``, ``window_gap``,
    ``window_min``, ``window_max`` and ``anchor``."""

    normalization: str
    window_gap: int
    window_min: int
    window_max: int
    anchor: int

    @property
    def window(self) -> int:
        """Span of one evidence position, in initials (see ``span_evidence``)."""
        return self.window_min

    def stream(self, text: str) -> str:
        return text_stream(text, self.normalization)

    def spans(self, stream: str) -> list[tuple[int, int]]:
        """The whole stream, then its content-defined windows (none if empty)."""
        if not stream:
            return []
        spans = [(0, len(stream))]
        spans += content_windows(
            stream,
            gap=self.window_gap,
            min_len=self.window_min,
            max_len=self.window_max,
            anchor_n=self.anchor,
        )[:ROW_MASK]
        return spans
