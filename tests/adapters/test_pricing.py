"""``adapters.price`` and ``adapters.catalog_pricing`` (08 D75): the cost of a call from its
usage and a list price, against the catalog's figures.

The counts are spec 01 §6's: ``prompt_tokens`` excludes the cached input, so a call costs
``prompt × prompt price + cached × cached price + (thoughts + response) × output price`` per
million tokens. The hand-checked figures below are worked out from the spec 04 §7 table.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import adapters
from adapters import ModelPricing
from adapters._catalog import CATALOG, CatalogRow
from mmsp_core.model import UsageMetadata

ANTHROPIC = "https://api.anthropic.com"
OPENAI = "https://api.openai.com/v1"
MOONSHOT = "https://api.moonshot.cn/v1"
TOKENDANCE = "https://tokendance.space/gateway/v1"
SILICONFLOW = "https://api.siliconflow.cn/v1"

PRICED = [row for row in CATALOG if row.prices is not None]
counts = st.none() | st.integers(min_value=0, max_value=10**9)
usages = st.builds(UsageMetadata, counts, counts, counts, counts)


# (model, base_url, usage, USD), worked out by hand from the spec 04 §7 table.
HAND_CHECKED = [
    # claude-opus-5: 5 / 0.5 cached / 25 out: 0.05 + 0.001 + 4000 × 25e-6
    ("claude-opus-5", ANTHROPIC, UsageMetadata(2000, 10_000, 3000, 1000), 0.151),
    # gpt-6-luna: 0.125 / 0.01 / 0.5, a million of each input and two of output
    ("gpt-6-luna", OPENAI, UsageMetadata(1_000_000, 1_000_000, None, 2_000_000), 1.135),
    # kimi-k2.6 is priced per endpoint: Moonshot's own, then TokenDance's
    ("kimi-k2.6", MOONSHOT, UsageMetadata(None, 1_000_000, 0, 1_000_000), 0.928571 + 3.857143),
    ("kimi-k2.6", TOKENDANCE, UsageMetadata(None, 1_000_000, 0, 1_000_000), 0.742857 + 3.085714),
    # Qwen3.8-27B publishes no cached price: cached input costs the prompt price
    ("Qwen/Qwen3.8-27B", SILICONFLOW, UsageMetadata(1_000_000, 0, 0, 0), 0.428571),
    # the Z.ai endpoint is written with a trailing slash in the catalog, without one here
    ("glm-5.3", "https://api.z.ai/api/paas/v4", UsageMetadata(100, 1000, 50, 200), 0.002526),
    # a free model costs nothing
    ("minimax/minimax-m3.1-flash:free", "https://openrouter.ai/api/v1",
     UsageMetadata(10, 10, 10, 10), 0.0),
]


@pytest.mark.parametrize(("model", "base_url", "usage", "usd"), HAND_CHECKED)
def test_hand_checked_costs(model: str, base_url: str, usage: UsageMetadata, usd: float) -> None:
    pricing = adapters.catalog_pricing(model, base_url)
    assert pricing is not None
    assert math.isclose(adapters.price(usage, pricing), usd, rel_tol=1e-12, abs_tol=1e-15)


@given(st.sampled_from(PRICED), usages)
def test_every_priced_row_costs_its_catalog_figures(
    row: CatalogRow, usage: UsageMetadata
) -> None:
    assert row.prices is not None
    prompt, cached, output = row.prices
    pricing = adapters.catalog_pricing(row.model, row.base_url)
    assert pricing is not None and pricing.currency == "USD"
    expected = ((usage.prompt_tokens or 0) * prompt
                + (usage.cached_tokens or 0) * (prompt if cached is None else cached)
                + ((usage.thoughts_tokens or 0) + (usage.response_tokens or 0)) * output) / 1e6
    assert math.isclose(adapters.price(usage, pricing), expected, rel_tol=1e-12, abs_tol=1e-12)


@given(usages, usages)
def test_cost_adds_up_over_usages_and_is_never_negative(
    first: UsageMetadata, second: UsageMetadata
) -> None:
    pricing = ModelPricing("USD", 3.0, 15.0, 15.0, 0.3)
    total = UsageMetadata(*((a or 0) + (b or 0) for a, b in (
        (first.cached_tokens, second.cached_tokens),
        (first.prompt_tokens, second.prompt_tokens),
        (first.thoughts_tokens, second.thoughts_tokens),
        (first.response_tokens, second.response_tokens))))
    both = adapters.price(first, pricing) + adapters.price(second, pricing)
    assert adapters.price(first, pricing) >= 0
    assert math.isclose(adapters.price(total, pricing), both, rel_tol=1e-12, abs_tol=1e-12)


def test_unreported_counts_cost_nothing() -> None:
    pricing = ModelPricing("USD", 3.0, 15.0, 15.0, 0.3)
    assert adapters.price(UsageMetadata(), pricing) == 0.0
    assert adapters.price(UsageMetadata(0, 0, 0, 0), pricing) == 0.0


def test_thoughts_are_priced_apart_from_the_response() -> None:
    pricing = ModelPricing("USD", 0.0, thoughts_tokens=2.0, response_tokens=1.0)
    assert adapters.price(UsageMetadata(thoughts_tokens=1_000_000), pricing) == 2.0
    assert adapters.price(UsageMetadata(response_tokens=1_000_000), pricing) == 1.0


def test_a_row_without_a_price_or_outside_the_catalog_has_none() -> None:
    assert adapters.catalog_pricing("Qwen/Qwen3-Embedding-8B", SILICONFLOW) is None
    assert adapters.catalog_pricing("gpt-6-luna", "http://127.0.0.1:9/v1") is None
    assert adapters.catalog_pricing("gpt-6-lun", OPENAI) is None


def test_every_catalog_price_is_found_at_its_endpoint() -> None:
    for entry in adapters.list_supported_models():
        assert adapters.catalog_pricing(entry.model, entry.base_url) == entry.pricing
        assert adapters.catalog_pricing(entry.model, entry.base_url + "/") == entry.pricing
