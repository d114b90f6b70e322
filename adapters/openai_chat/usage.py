"""The one mapping between Chat Completions usage JSON and ``UsageMetadata`` (spec 06 §3).

The wire counts totals: ``prompt_tokens`` includes ``prompt_tokens_details.cached_tokens``
and ``completion_tokens`` includes ``completion_tokens_details.reasoning_tokens``. MMSP keeps
the four parts apart, so reading subtracts the details and writing adds them back:
``read_usage({"usage": usage_json(u)}) == u`` for every ``u`` with no negative count. The
machine reads with ``read_usage``, the renderer writes with ``usage_json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters._convert import response_tokens
from adapters._json import opt_integer, opt_obj
from mmsp_core.model import UsageMetadata

__all__ = ["read_usage", "usage_json"]


def read_usage(chunk: Mapping[str, Any]) -> UsageMetadata | None:
    """Return the usage a chunk carries, or ``None`` when it carries none (spec 06 §3).

    The usage is ``chunk.usage``, else ``chunk.x_groq.usage`` (older Groq responses carry it
    only there; an ``x_groq`` that is not an object is not Groq's and is ignored).
    ``cached = prompt_tokens_details.cached_tokens``, ``prompt = prompt_tokens - cached``,
    ``thoughts = completion_tokens_details.reasoning_tokens``,
    ``response = completion_tokens - thoughts``, or ``completion_tokens`` itself when that
    would be negative (the endpoint left reasoning out of it: ``response_tokens``, 08 D52); a
    missing detail leaves its total whole.

    Raises:
        BadField: a usage object or count of the wrong JSON type.
    """
    raw = opt_obj(chunk, "usage")
    if raw is None:
        groq = chunk.get("x_groq")
        raw = opt_obj(groq, "usage") if type(groq) is dict else None
        if raw is None:
            return None
    prompt = opt_integer(raw, "prompt_tokens")
    completion = opt_integer(raw, "completion_tokens")
    prompt_details = opt_obj(raw, "prompt_tokens_details")
    cached = None if prompt_details is None else opt_integer(prompt_details, "cached_tokens")
    completion_details = opt_obj(raw, "completion_tokens_details")
    thoughts = (
        None
        if completion_details is None
        else opt_integer(completion_details, "reasoning_tokens")
    )
    if prompt is not None and cached is not None:
        prompt -= cached
    return UsageMetadata(cached, prompt, thoughts, response_tokens(completion, thoughts))


def usage_json(usage: UsageMetadata) -> dict[str, Any]:
    """Write ``usage`` as a Chat ``usage`` object that ``read_usage`` reads back unchanged.

    ``total_tokens`` is the sum of the two totals, unknown counts taken as 0; a detail object
    is written only for a known cached or reasoning count.
    """
    cached, prompt, thoughts, response = (
        usage.cached_tokens,
        usage.prompt_tokens,
        usage.thoughts_tokens,
        usage.response_tokens,
    )
    prompt_total = None if prompt is None else prompt + (cached or 0)
    completion_total = None if response is None else response + (thoughts or 0)
    body: dict[str, Any] = {
        "prompt_tokens": prompt_total,
        "completion_tokens": completion_total,
        "total_tokens": (prompt_total or 0) + (completion_total or 0),
    }
    if cached is not None:
        body["prompt_tokens_details"] = {"cached_tokens": cached}
    if thoughts is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": thoughts}
    return body
