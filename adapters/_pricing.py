"""The cost of a call from its usage and a list price (08 D75), and the catalog's price of a
model at an endpoint. Pure: no I/O, no clock.

A price is a ``ModelPricing`` (spec 01 §10), the catalog's own value: USD per million tokens
for the prompt, for cached input (``None`` where unpublished) and for output, which both
``thoughts_tokens`` and ``response_tokens`` carry.

The counts are spec 01 §6's, which keep the parts of the input apart: ``prompt_tokens`` are
the input tokens *not* read from cache and ``cached_tokens`` those that were (the adapters
subtract the cached count from a vendor's prompt total as they read it). So D75's "(prompt −
cached) × input price", written of a vendor's prompt total, is ``prompt_tokens`` × input price
here: subtracting the cached count again would charge cached tokens twice at a negative rate.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Final

from mmsp_core.model import UsageMetadata

from ._supported import ModelPricing, list_supported_models

__all__ = ["catalog_pricing", "price"]

#: Prices are per this many tokens (spec 01 §10).
_PER: Final = 1_000_000


def _endpoint(base_url: str) -> str:
    """A base URL as the catalog index compares it: without trailing slashes."""
    return base_url.rstrip("/")


@functools.cache
def _catalog_prices() -> Mapping[tuple[str, str], ModelPricing]:
    """The catalog's USD prices by ``(model id, endpoint)``, built on first use; the rows
    without pricing are absent."""
    return {(entry.model, _endpoint(entry.base_url)): entry.pricing
            for entry in list_supported_models() if entry.pricing is not None}


def price(usage: UsageMetadata, pricing: ModelPricing) -> float:
    """The cost of a call that reported ``usage``, in ``pricing``'s currency (USD for the
    catalog's and a gateway row's prices), 08 D75:

    ``prompt × prompt price + cached × cached price + thoughts × thoughts price + response ×
    response price``, prices per million tokens. A count the provider did not report (``None``)
    counts 0 (spec 01 §6); cached tokens of a model whose cached price is unpublished cost the
    prompt price (the list price without a cache discount). See the module doc for how this
    reads D75's "(prompt − cached)".
    """
    cached_price = pricing.prompt_tokens if pricing.cached_tokens is None else pricing.cached_tokens
    cost = ((usage.prompt_tokens or 0) * pricing.prompt_tokens
            + (usage.cached_tokens or 0) * cached_price
            + (usage.thoughts_tokens or 0) * pricing.thoughts_tokens
            + (usage.response_tokens or 0) * pricing.response_tokens)
    return cost / _PER


def catalog_pricing(model: str, base_url: str) -> ModelPricing | None:
    """The catalog's list price (USD) of ``model`` served at ``base_url`` (spec 04 §7), or
    ``None`` when the catalog has no such row or the row has no price. The model id is
    compared exactly; the base URL without trailing slashes (the catalog writes Z.ai's with
    one)."""
    return _catalog_prices().get((model, _endpoint(base_url)))
