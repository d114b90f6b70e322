"""The one mapping between a Gemini embeddings answer's usage and ``UsageMetadata`` (08 D64).

``prompt_tokens`` is ``usageMetadata.promptTokenCount`` when the answer has it, else, on
Vertex AI's one-embedding answer, the embedding's ``statistics.tokenCount`` (04 §4, 08 D72;
Vertex writes it as a JSON number such as ``13.0``), else null
(``metadata.billableCharacterCount`` counts characters, not tokens, so it is not read); the
other three counts are null. ``usage_json`` writes what ``read_usage`` reads back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters._json import BadField, opt_integer, opt_obj
from mmsp_core.model import UsageMetadata

__all__ = ["read_usage", "usage_json"]


def read_usage(body: Mapping[str, Any]) -> UsageMetadata:
    """The usage of an embeddings answer: ``prompt_tokens`` only (08 D64, D72).

    Raises:
        BadField: ``usageMetadata`` or ``statistics`` is not an object, or a count is not a
            whole number.
    """
    usage = opt_obj(body, "usageMetadata")
    count = None if usage is None else opt_integer(usage, "promptTokenCount")
    if count is None and type(body.get("embedding")) is dict:
        statistics = opt_obj(body["embedding"], "statistics")
        count = None if statistics is None else _token_count(statistics)
    return UsageMetadata(prompt_tokens=count)


def _token_count(statistics: Mapping[str, Any]) -> int | None:
    """``statistics.tokenCount``: an integer, or a JSON number with no fraction.

    Raises:
        BadField: any other value.
    """
    count = statistics.get("tokenCount")
    if count is None or type(count) is int:
        return count
    if type(count) is float and count.is_integer() and 0 <= count < 2**63:
        return int(count)
    raise BadField("'tokenCount' must be a whole number")


def usage_json(usage: UsageMetadata) -> dict[str, Any] | None:
    """The ``usageMetadata`` of an answer for ``usage``; ``None`` (left out) without a count."""
    count = usage.prompt_tokens
    return None if count is None else {"promptTokenCount": count, "totalTokenCount": count}
