"""Anthropic usage JSON <-> ``UsageMetadata``: the one mapping of spec 06 §1.

The machine reads usage with ``from_message_start`` and ``from_message_delta``, through the
``InputCounts`` of its stream; the renderer writes it with ``to_message_start`` and
``to_message_delta``, so that decoding a rendered body gives back the usage it was rendered
from. The formula (06 §1, the same on both clients, 08 D32):

- ``cached_tokens = cache_read_input_tokens``;
- ``prompt_tokens = input_tokens + (cache_creation_input_tokens or 0)``, null when
  ``input_tokens`` is; each part is the last value the stream gave, so a cache creation count
  that arrives only on ``message_delta`` is added to ``message_start``'s ``input_tokens``
  (08 D53);
- ``thoughts_tokens = output_tokens_details.thinking_tokens``;
- ``response_tokens = output_tokens - (thoughts_tokens or 0)``, or ``output_tokens`` itself
  when that would be negative (08 D52, ``adapters._convert.response_tokens``).

``message_start`` reports only the input counts (its ``output_tokens`` is a placeholder). A
count that is absent or null reads as ``None``; a ``None`` count is written as an absent key,
and the renderer writes no cache creation, so ``prompt_tokens`` travels as ``input_tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters._convert import response_tokens
from adapters._json import opt_integer, opt_obj
from mmsp_core.model import UsageMetadata

__all__ = [
    "InputCounts",
    "from_message_delta",
    "from_message_start",
    "to_message_delta",
    "to_message_start",
]


class InputCounts:
    """The two parts of ``prompt_tokens`` one stream has reported so far (08 D53).

    Anthropic may report ``input_tokens`` on ``message_start`` and
    ``cache_creation_input_tokens`` only on ``message_delta`` (or the other way round): each
    part is remembered, so the prompt count is the sum of the latest of each whenever either
    arrives. A part that is absent or null in a usage object keeps its remembered value.
    """

    __slots__ = ("creation", "input_tokens")

    def __init__(self) -> None:
        self.input_tokens: int | None = None
        self.creation: int | None = None

    def read(self, usage: Mapping[str, Any]) -> tuple[int | None, int | None]:
        """``(cached_tokens, prompt_tokens)`` of a usage object; ``prompt_tokens`` is ``None``
        when the object holds neither part of it, or when no ``input_tokens`` was seen yet.

        Raises:
            BadField: a count that is not an integer.
        """
        cached = opt_integer(usage, "cache_read_input_tokens")
        input_tokens = opt_integer(usage, "input_tokens")
        creation = opt_integer(usage, "cache_creation_input_tokens")
        if input_tokens is None and creation is None:
            return cached, None
        if input_tokens is not None:
            self.input_tokens = input_tokens
        if creation is not None:
            self.creation = creation
        if self.input_tokens is None:
            return cached, None
        return cached, self.input_tokens + (self.creation or 0)


def from_message_start(usage: Mapping[str, Any], inputs: InputCounts) -> UsageMetadata:
    """The usage of ``message_start``'s ``message.usage``: the input counts only (06 §1).

    Raises:
        BadField: a count that is not an integer.
    """
    cached, prompt = inputs.read(usage)
    return UsageMetadata(cached, prompt)


def from_message_delta(usage: Mapping[str, Any], inputs: InputCounts) -> UsageMetadata:
    """The usage of ``message_delta``'s ``usage``: all four counts (06 §1, 08 D52, D53).

    Raises:
        BadField: a count that is not an integer, or details that are not an object.
    """
    cached, prompt = inputs.read(usage)
    details = opt_obj(usage, "output_tokens_details")
    thoughts = None if details is None else opt_integer(details, "thinking_tokens")
    output = opt_integer(usage, "output_tokens")
    return UsageMetadata(cached, prompt, thoughts, response_tokens(output, thoughts))


def _input_json(usage: UsageMetadata) -> dict[str, Any]:
    counts = {"input_tokens": usage.prompt_tokens, "cache_read_input_tokens": usage.cached_tokens}
    return {key: value for key, value in counts.items() if value is not None}


def to_message_start(usage: UsageMetadata) -> dict[str, Any]:
    """``message_start``'s ``message.usage`` for ``usage``: the input counts, and the
    ``output_tokens: 0`` the API always puts there (``from_message_start`` ignores it)."""
    return {**_input_json(usage), "output_tokens": 0}


def to_message_delta(usage: UsageMetadata) -> dict[str, Any]:
    """``message_delta``'s ``usage`` for ``usage``, which ``from_message_delta`` reads back."""
    counts = _input_json(usage)
    if usage.response_tokens is not None:
        counts["output_tokens"] = usage.response_tokens + (usage.thoughts_tokens or 0)
    if usage.thoughts_tokens is not None:
        counts["output_tokens_details"] = {"thinking_tokens": usage.thoughts_tokens}
    return counts
