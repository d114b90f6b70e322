"""The one mapping between an Interactions ``usage`` object and ``UsageMetadata`` (06 §5).

On the wire, ``total_input_tokens`` counts the cached tokens too, while ``total_output_tokens``
already leaves the thought tokens out (they are ``total_thought_tokens``)::

    cached_tokens   = total_cached_tokens
    prompt_tokens   = total_input_tokens - (total_cached_tokens or 0)
    thoughts_tokens = total_thought_tokens
    response_tokens = total_output_tokens

A missing count is ``None`` and subtracts nothing; a missing usage object is all ``None``
(06 §5). The machine reads with ``usage_from_wire``, the renderer writes with
``usage_to_wire``, its exact inverse: a ``None`` count leaves its wire field out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmsp_core.model import UsageMetadata

from .._json import opt_integer

__all__ = ["usage_from_wire", "usage_to_wire"]


def usage_from_wire(usage: Mapping[str, Any]) -> UsageMetadata:
    """Read an interaction's ``usage`` object (06 §5).

    Raises:
        BadField: a count that is not an integer.
    """
    inputs = opt_integer(usage, "total_input_tokens")
    cached = opt_integer(usage, "total_cached_tokens")
    return UsageMetadata(
        cached_tokens=cached,
        prompt_tokens=None if inputs is None else inputs - (cached or 0),
        thoughts_tokens=opt_integer(usage, "total_thought_tokens"),
        response_tokens=opt_integer(usage, "total_output_tokens"),
    )


def usage_to_wire(usage: UsageMetadata) -> dict[str, Any]:
    """Write ``usage`` as an Interactions ``usage`` object, with ``total_tokens`` (06 §5)."""
    wire: dict[str, Any] = {}
    if usage.prompt_tokens is not None:
        wire["total_input_tokens"] = usage.prompt_tokens + (usage.cached_tokens or 0)
    if usage.cached_tokens is not None:
        wire["total_cached_tokens"] = usage.cached_tokens
    if usage.response_tokens is not None:
        wire["total_output_tokens"] = usage.response_tokens
    if usage.thoughts_tokens is not None:
        wire["total_thought_tokens"] = usage.thoughts_tokens
    wire["total_tokens"] = (
        wire.get("total_input_tokens", 0)
        + wire.get("total_output_tokens", 0)
        + wire.get("total_thought_tokens", 0)
    )
    return wire
