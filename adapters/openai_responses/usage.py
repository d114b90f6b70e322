"""The one mapping between a Responses ``usage`` object and ``UsageMetadata`` (spec 06 §2).

On the wire, ``input_tokens`` counts the cached tokens too and ``output_tokens`` the reasoning
tokens too; each has a detail block with the part (``input_tokens_details.cached_tokens``,
``output_tokens_details.reasoning_tokens``). ``UsageMetadata`` keeps the four counts apart:

    prompt_tokens   = input_tokens  - cached_tokens       response_tokens = output_tokens
    cached_tokens   = input_tokens_details.cached_tokens                   - reasoning_tokens
    thoughts_tokens = output_tokens_details.reasoning_tokens

A missing count or detail block is ``None`` and subtracts nothing; an ``output_tokens`` below
its reasoning count left the reasoning out, so it is the response itself (08 D52). The machine
reads with ``usage_from_wire``, the renderer writes with ``usage_to_wire``, its exact inverse
for counts that are not negative: a ``None`` count leaves its wire field out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mmsp_core.model import UsageMetadata

from .._convert import response_tokens
from .._json import opt_integer, opt_obj

__all__ = ["usage_from_wire", "usage_to_wire"]


def _count_and_part(usage: Mapping[str, Any], key: str, part: str) -> tuple[int | None, int | None]:
    """Return ``usage[key]`` and ``usage[key + "_details"][part]``.

    Raises:
        BadField: a count that is not an integer, a detail block that is not an object.
    """
    details = opt_obj(usage, key + "_details")
    return opt_integer(usage, key), None if details is None else opt_integer(details, part)


def usage_from_wire(usage: Mapping[str, Any]) -> UsageMetadata:
    """Read a response's ``usage`` object (06 §2).

    Raises:
        BadField: a count that is not an integer, a detail block that is not an object.
    """
    inputs, cached = _count_and_part(usage, "input_tokens", "cached_tokens")
    outputs, thoughts = _count_and_part(usage, "output_tokens", "reasoning_tokens")
    return UsageMetadata(
        cached_tokens=cached,
        prompt_tokens=None if inputs is None else inputs - (cached or 0),
        thoughts_tokens=thoughts,
        response_tokens=response_tokens(outputs, thoughts),
    )


def usage_to_wire(usage: UsageMetadata) -> dict[str, Any]:
    """Write ``usage`` as a Responses ``usage`` object, with ``total_tokens`` (06 §2)."""
    wire: dict[str, Any] = {}
    if usage.prompt_tokens is not None:
        wire["input_tokens"] = usage.prompt_tokens + (usage.cached_tokens or 0)
    if usage.cached_tokens is not None:
        wire["input_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    if usage.response_tokens is not None:
        wire["output_tokens"] = usage.response_tokens + (usage.thoughts_tokens or 0)
    if usage.thoughts_tokens is not None:
        wire["output_tokens_details"] = {"reasoning_tokens": usage.thoughts_tokens}
    wire["total_tokens"] = wire.get("input_tokens", 0) + wire.get("output_tokens", 0)
    return wire
