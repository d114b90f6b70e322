"""Memory limits hold in bytes, not only in name (08 D18).

Each limit is lowered through its constructor, the input is made of the smallest pieces that
count towards it (2-byte SSE data lines, 2-character fragments), and the peak memory measured
with ``tracemalloc`` until the limit fires must stay within a small factor of the limit: the
per-piece overhead of Python objects may not multiply it.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

from mmsp_core import (
    PassThrough,
    SSEDecoder,
    StreamItems,
    StreamLimitError,
    TextDelta,
    UniEvent,
)

LIMIT = 1 << 18
#: What is held may exceed the counted size by this factor at most.
FACTOR = 2


def peak_until_limit(step: Callable[[], object]) -> int:
    """Run ``step`` until it raises ``StreamLimitError``; return the peak traced bytes."""
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        with pytest.raises(StreamLimitError):
            for _ in range(10 * LIMIT):
                step()
        return tracemalloc.get_traced_memory()[1] - baseline
    finally:
        tracemalloc.stop()


def test_an_event_of_tiny_data_lines_is_held_in_about_its_size() -> None:
    decoder = SSEDecoder(max_event_bytes=LIMIT)
    chunk = b"data:ab\n" * 512  # 4 KiB of 2-byte data lines, one event that never ends

    def step() -> object:
        return decoder.feed(chunk)

    assert peak_until_limit(step) < FACTOR * LIMIT


def test_an_item_of_tiny_fragments_is_held_in_about_its_size() -> None:
    items = StreamItems(client="c", clock=lambda: 0, max_item_size=LIMIT)
    fragment = UniEvent("delta", (TextDelta("ab"),))

    def step() -> object:
        return items.push(fragment)

    assert peak_until_limit(step) < FACTOR * LIMIT


def test_a_passed_through_item_of_tiny_fragments_is_held_in_about_its_size() -> None:
    # The mmsp client's finalizer holds the open group to compare it with its .done.
    finalizer = PassThrough(client="mmsp", clock=lambda: 0, max_item_size=LIMIT)
    fragment = UniEvent("delta", (TextDelta("ab"),), created_at=1)

    def step() -> object:
        return finalizer.push(fragment)

    assert peak_until_limit(step) < FACTOR * LIMIT
