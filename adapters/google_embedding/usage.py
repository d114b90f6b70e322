"""The one mapping between a Gemini embeddings answer's usage and ``UsageMetadata`` (08 D64).

``prompt_tokens`` is ``usageMetadata.promptTokenCount`` when the answer has it, else null
(``metadata.billableCharacterCount`` counts characters, not tokens, so it is not read); the
other three counts are null. ``usage_json`` writes what ``read_usage`` reads back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters._json import opt_integer, opt_obj
from mmsp_core.model import UsageMetadata

__all__ = ["read_usage", "usage_json"]


def read_usage(body: Mapping[str, Any]) -> UsageMetadata:
    """The usage of a ``batchEmbedContents`` answer: ``prompt_tokens`` only (08 D64).

    Raises:
        BadField: ``usageMetadata`` is not an object, or its count is not an integer.
    """
    usage = opt_obj(body, "usageMetadata")
    count = None if usage is None else opt_integer(usage, "promptTokenCount")
    return UsageMetadata(prompt_tokens=count)


def usage_json(usage: UsageMetadata) -> dict[str, Any] | None:
    """The ``usageMetadata`` of an answer for ``usage``; ``None`` (left out) without a count."""
    count = usage.prompt_tokens
    return None if count is None else {"promptTokenCount": count, "totalTokenCount": count}
