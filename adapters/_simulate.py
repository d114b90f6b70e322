"""What the provider simulator's dialects share: reading the text of a request's content.

Each protocol package's ``simulate.py`` holds its ``SimulatorDialect`` (``adapters._spec``):
how its provider is reached and answers, and how its request bodies read for the simulator's
demo script. Pure, like the rest of ``adapters``; ``mmsp_io.simulator`` serves them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["dimensions", "text_parts"]


def dimensions(value: Any) -> int | None:
    """A requested vector size (``dimensions``, ``outputDimensionality``): ``value`` when it
    is a positive integer, else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def text_parts(content: Any, text_types: tuple[str, ...]) -> list[str]:
    """The texts of a message's ``content``: a string, or a list of typed parts whose
    ``type`` is one of ``text_types``; anything else holds none."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        part["text"]
        for part in content
        if isinstance(part, Mapping) and part.get("type") in text_types and "text" in part
    ]
