"""Small pieces every renderer shares (08 D49): fragment sizes, fragments, SSE frames."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from mmsp_core.request import encode_json_body

__all__ = ["fragment_size", "fragments", "sse_event"]


def fragment_size(requested: int | None, default: int) -> int:
    """Return the fragment size to render with: ``requested``, or ``default`` for ``None``.

    Raises:
        ValueError: ``requested`` is less than 1.
    """
    size = default if requested is None else requested
    if size < 1:
        raise ValueError(f"fragment_size must be at least 1, not {requested}")
    return size


def fragments(text: str, size: int) -> Iterator[str]:
    """Cut ``text`` into pieces of ``size`` characters (the last may be shorter)."""
    return (text[i : i + size] for i in range(0, len(text), size))


def sse_event(name: str | None, payload: Mapping[str, Any]) -> bytes:
    """One SSE frame: ``event: <name>`` (omitted for ``None``) and one compact JSON data line."""
    head = b"" if name is None else b"event: " + name.encode() + b"\n"
    return head + b"data: " + encode_json_body(payload) + b"\n\n"
