"""Write the body an OpenAI embeddings endpoint answers for given done items (08 D49).

The body: ``{"object": "list", "data": [{"object": "embedding", "index": i, "embedding":
<base64 float32>}, ...], "model": <model>, "usage": {"prompt_tokens", "total_tokens"}}``, one
entry per ``embedding.done`` item in order. It is one JSON body, so ``fragment_size`` changes
nothing: a vector is never cut.

What an embeddings answer cannot carry, i.e. the normalisation under which
``decode(render(x)) == x`` (``normalize`` and ``normalize_usage`` implement it, and the
round-trip test uses them):

* items other than embeddings are dropped;
* each value becomes the nearest float32 (infinite beyond its range), as base64 float32 does;
* the finish reason is always ``stop``;
* of the usage only ``prompt_tokens`` is carried.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmsp_core.model import DoneItem, EmbeddingDone, FinishReason, UsageMetadata
from mmsp_core.request import encode_json_body

from . import vectors
from .usage import carried, usage_json

__all__ = ["normalize", "normalize_usage", "render"]


def render(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    *,
    model: str,
    fragment_size: int | None,
) -> bytes:
    """Return the JSON body of an embeddings answer for these done items (08 D49)."""
    data: list[dict[str, Any]] = [
        {"object": "embedding", "index": index, "embedding": vectors.encode(item.embedding)}
        for index, item in enumerate(i for i in items if isinstance(i, EmbeddingDone))
    ]
    return encode_json_body(
        {"object": "list", "data": data, "model": model, "usage": usage_json(usage)}
    )


def normalize(
    items: Sequence[DoneItem], finish_reason: FinishReason
) -> tuple[list[DoneItem], FinishReason]:
    """Apply the module docstring's normalisation: what ``decode(render(...))`` gives back."""
    kept: list[DoneItem] = [
        EmbeddingDone(vectors.float32(item.embedding))
        for item in items
        if isinstance(item, EmbeddingDone)
    ]
    return kept, FinishReason.STOP


def normalize_usage(usage: UsageMetadata) -> UsageMetadata:
    """What of ``usage`` survives the round trip: ``prompt_tokens`` alone."""
    return carried(usage)
