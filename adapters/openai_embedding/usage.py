"""The one mapping between OpenAI embeddings usage JSON and ``UsageMetadata`` (spec 06 §6).

An embeddings answer reports only its input count: ``usage.prompt_tokens`` (and a
``total_tokens`` equal to it). ``read_usage`` gives ``prompt_tokens`` from it, ``None``
without usage, and the other three counts ``None``; ``usage_json`` writes what ``read_usage``
reads back, and ``carried`` (``adapters._embedding``) is what of a usage survives that round
trip.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters._embedding import carried
from adapters._json import opt_integer, opt_obj
from mmsp_core.model import UsageMetadata

__all__ = ["carried", "read_usage", "usage_json"]


def read_usage(body: Mapping[str, Any]) -> UsageMetadata:
    """The usage of an embeddings body: ``prompt_tokens`` only, ``None`` when absent (06 §6).

    Raises:
        BadField: ``usage`` is not an object, or its count is not an integer.
    """
    usage = opt_obj(body, "usage")
    count = None if usage is None else opt_integer(usage, "prompt_tokens")
    return UsageMetadata(prompt_tokens=count)


def usage_json(usage: UsageMetadata) -> dict[str, Any]:
    """The ``usage`` object of an embeddings body for ``usage`` (its input count)."""
    return {"prompt_tokens": usage.prompt_tokens, "total_tokens": usage.prompt_tokens}
