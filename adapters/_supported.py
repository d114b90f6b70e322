"""The public values of the model catalog and ``list_supported_models`` (spec 01 §10, 04 §7).

The rows themselves are ``adapters._catalog``'s; this module builds the public values from
them. Pure: no I/O.
"""

from __future__ import annotations

import enum
import types
from typing import Any, Final, final

import attrs

from ._catalog import CATALOG

__all__ = ["Modality", "ModelPricing", "SupportedModel", "list_supported_models"]


class Modality(enum.StrEnum):
    """A kind of content a catalog model takes or produces (spec 01 §1, registry)."""

    TEXT = "Text"
    IMAGE = "Image"
    VIDEO = "Video"
    AUDIO = "Audio"
    EMBED = "Embed"


@final
@attrs.frozen
class ModelPricing:
    """List price per million tokens (spec 01 §10); ``cached_tokens`` is None where unpublished.

    ``thoughts_tokens`` and ``response_tokens`` both carry the vendor's output price.
    """

    currency: str
    prompt_tokens: float
    thoughts_tokens: float
    response_tokens: float
    cached_tokens: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of spec 01 §10 (``cached_tokens`` left out when absent)."""
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


@final
@attrs.frozen
class SupportedModel:
    """One catalog entry (spec 01 §10); ``(model, base_url, client)`` feed ``AutoLLMClient``."""

    model: str
    base_url: str
    client: str
    input_modalities: tuple[Modality, ...]
    output_modalities: tuple[Modality, ...]
    context_window: int | None = None
    pricing: ModelPricing | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of spec 01 §10 (``context_window``, ``pricing`` left out when absent)."""
        result: dict[str, Any] = {
            "model": self.model,
            "base_url": self.base_url,
            "client": self.client,
            "input_modalities": [str(m) for m in self.input_modalities],
            "output_modalities": [str(m) for m in self.output_modalities],
        }
        if self.context_window is not None:
            result["context_window"] = self.context_window
        if self.pricing is not None:
            result["pricing"] = self.pricing.to_dict()
        return result


#: Currencies ``list_supported_models`` answers in, with the factor applied to stored USD
#: (spec 04 §7: "CNY" multiplies by 7.0, rounded to 6 decimals).
_CURRENCY_RATES: Final = types.MappingProxyType({"USD": 1.0, "CNY": 7.0})


def list_supported_models(currency: str = "USD") -> list[SupportedModel]:
    """Return a fresh list of the 125 catalog entries of spec 04 §7, in table order.

    Prices are USD per million tokens; ``"CNY"`` multiplies them by 7 and rounds to 6 decimals
    (spec 01 §10). The currency code is matched case-insensitively.

    Raises:
        ValueError: any other currency. A plain ``ValueError`` (the error of a bad argument to
            a pure function): no ``MMSPError`` class describes a catalog query, and every
            ``MMSPError`` is a ``ValueError`` too, so callers catch both the same way.
    """
    code = currency.upper()
    rate = _CURRENCY_RATES.get(code)
    if rate is None:
        raise ValueError(
            f"unsupported currency {currency!r}: list_supported_models answers in "
            f"{' or '.join(_CURRENCY_RATES)}"
        )

    def price(usd: float) -> float:
        return usd if rate == 1.0 else round(usd * rate, 6)

    models = []
    for row in CATALOG:
        pricing = None
        if row.prices is not None:
            prompt, cached, output = row.prices
            pricing = ModelPricing(
                code, price(prompt), price(output), price(output),
                None if cached is None else price(cached),
            )
        models.append(SupportedModel(
            row.model, row.base_url, row.client,
            tuple(Modality(m) for m in row.inputs.split(",")),
            tuple(Modality(m) for m in row.outputs.split(",")),
            row.context_window, pricing,
        ))
    return models
