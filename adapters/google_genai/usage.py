"""The one mapping between generateContent ``usageMetadata`` and ``UsageMetadata`` (06 §4).

Gemini reports cumulative counts on every chunk; the finalizer's stop merge keeps the latest
value of each field, so counts are replaced, never summed (08 D7). ``promptTokenCount``
includes ``cachedContentTokenCount``; ``candidatesTokenCount`` excludes the thinking, which is
``thoughtsTokenCount``. MMSP keeps the four parts apart: reading subtracts the cached count
from the prompt, writing adds it back, so ``read_usage({"usageMetadata": usage_json(u)}) == u``
for every ``u`` without negative counts. The machine reads with ``read_usage``, the renderer
writes with ``usage_json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters._json import opt_integer, opt_obj
from mmsp_core.model import UsageMetadata

__all__ = ["read_usage", "usage_json"]


def read_usage(chunk: Mapping[str, Any]) -> UsageMetadata | None:
    """Return the usage a chunk carries, or ``None`` when it carries none (spec 06 §4).

    A ``usageMetadata`` object counts only when it has a ``promptTokenCount`` key: Vertex puts
    a traffic-type-only object on every chunk, which says nothing. ``cached =
    cachedContentTokenCount``, ``prompt = promptTokenCount - cached`` (the prompt count itself
    should the cached one exceed it: a negative count is never reported, 08 D52), ``thoughts =
    thoughtsTokenCount``, ``response = candidatesTokenCount``; an absent or null count is
    unknown (``None``), a null ``promptTokenCount`` included.

    Raises:
        BadField: a usage object or count of the wrong JSON type.
    """
    raw = opt_obj(chunk, "usageMetadata")
    if raw is None or "promptTokenCount" not in raw:
        return None
    prompt = opt_integer(raw, "promptTokenCount")
    cached = opt_integer(raw, "cachedContentTokenCount")
    if prompt is not None and cached is not None and cached <= prompt:
        prompt -= cached
    return UsageMetadata(
        cached,
        prompt,
        opt_integer(raw, "thoughtsTokenCount"),
        opt_integer(raw, "candidatesTokenCount"),
    )


def usage_json(usage: UsageMetadata) -> dict[str, Any]:
    """Write ``usage`` as a ``usageMetadata`` object that ``read_usage`` reads back unchanged.

    ``promptTokenCount`` is always written (``null`` when unknown, so the object still counts);
    the other counts only when known; ``totalTokenCount`` is the sum of the known counts.
    """
    cached, prompt, thoughts, response = (
        usage.cached_tokens,
        usage.prompt_tokens,
        usage.thoughts_tokens,
        usage.response_tokens,
    )
    prompt_total = None if prompt is None else prompt + (cached or 0)
    body: dict[str, Any] = {"promptTokenCount": prompt_total}
    for key, value in (
        ("cachedContentTokenCount", cached),
        ("candidatesTokenCount", response),
        ("thoughtsTokenCount", thoughts),
    ):
        if value is not None:
            body[key] = value
    body["totalTokenCount"] = (prompt_total or 0) + (response or 0) + (thoughts or 0)
    return body
