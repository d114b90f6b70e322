"""Write the body Gemini's ``batchEmbedContents`` answers for given done items (08 D49).

The body: ``{"embeddings": [{"values": [...]}, ...], "usageMetadata": {"promptTokenCount",
"totalTokenCount"}}``, one embedding per ``embedding.done`` item in order, the usage left out
when it has no input count. One JSON body: ``fragment_size`` changes nothing.

What the answer cannot carry, i.e. the normalisation under which ``decode(render(x)) == x``
(``normalize`` and ``normalize_usage`` implement it, the round-trip test uses them): items
other than embeddings are dropped; the finish reason is always ``stop``; of the usage only
``prompt_tokens`` is carried. Values are JSON numbers, so they travel exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters._embedding import carried
from mmsp_core.model import DoneItem, EmbeddingDone, FinishReason, UsageMetadata
from mmsp_core.request import encode_json_body

from .usage import usage_json

__all__ = ["normalize", "normalize_usage", "render"]


def render(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    *,
    model: str,
    fragment_size: int | None,
) -> bytes:
    """Return the JSON body of a ``batchEmbedContents`` answer for these done items."""
    body: dict[str, Any] = {
        "embeddings": [
            {"values": list(item.embedding)} for item in items if isinstance(item, EmbeddingDone)
        ]
    }
    counts = usage_json(usage)
    if counts is not None:
        body["usageMetadata"] = counts
    return encode_json_body(body)


def normalize(
    items: Sequence[DoneItem], finish_reason: FinishReason
) -> tuple[list[DoneItem], FinishReason]:
    """Apply the module docstring's normalisation: what ``decode(render(...))`` gives back."""
    return [item for item in items if isinstance(item, EmbeddingDone)], FinishReason.STOP


def normalize_usage(usage: UsageMetadata) -> UsageMetadata:
    """What of ``usage`` survives the round trip: ``prompt_tokens`` alone."""
    return carried(usage)
