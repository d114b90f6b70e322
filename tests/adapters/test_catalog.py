"""``list_supported_models`` over the catalog of spec 04 §7 (types: spec 01 §10).

The rows below are copied by hand from the spec table, not from the catalog module.
"""

from __future__ import annotations

import attrs
import pytest

from adapters.clients import (
    CLIENTS,
    Modality,
    ModelPricing,
    SupportedModel,
    list_supported_models,
)

TXT, IMG, AUD, EMB = (Modality.TEXT, Modality.IMAGE, Modality.AUDIO, Modality.EMBED)
TXT_IMG = (TXT, IMG)
TXT_IMG_VID_AUD = (TXT, IMG, Modality.VIDEO, AUD)
ANTHROPIC = "https://api.anthropic.com"
VERTEX = "https://aiplatform.googleapis.com"
GEMINI = "https://generativelanguage.googleapis.com"
OPENROUTER = "https://openrouter.ai/api/v1"
SILICONFLOW = "https://api.siliconflow.cn/v1"
TOKENDANCE = "https://tokendance.space/gateway/v1"

# (model, client, base_url, inputs, outputs, context window, (prompt, cached, output) or None)
SPEC_ROWS = [
    ("gemini-4-argon", "google-official", GEMINI, TXT_IMG_VID_AUD, (TXT,), 1048576,
     (4.0, 0.2, 20.0)),
    ("gemini-3.5-flash-lite", "google-official", GEMINI, TXT_IMG_VID_AUD, (TXT,), 1048576,
     (0.3, 0.03, 2.5)),
    ("gemini-3.8-flash-tts", "google-official", GEMINI, (TXT,), (AUD,), None, None),
    ("gemini-3.1-flash-image", "google-official", GEMINI, TXT_IMG, (IMG,), None, None),
    ("gemini-embedding-2", "google-official", GEMINI, (TXT,), (EMB,), None, None),
    ("claude-fable-5-1", "anthropic-official", ANTHROPIC, TXT_IMG, (TXT,), 1000000,
     (10.0, 0.25, 50.0)),
    ("claude-haiku-5-5", "anthropic-official", ANTHROPIC, TXT_IMG, (TXT,), 1000000,
     (0.1, 0.01, 0.5)),
    ("gpt-6-luna", "openai-official", "https://api.openai.com/v1", TXT_IMG, (TXT,), 1050000,
     (0.125, 0.01, 0.5)),
    ("text-embedding-3-large", "openai-official", "https://api.openai.com/v1", (TXT,), (EMB,), None,
     (0.13, None, 0.0)),
    ("glm-5.3", "zai-official", "https://api.z.ai/api/paas/v4/", (TXT,), (TXT,), 1000000,
     (1.4, 0.26, 4.4)),
    ("kimi-k3.1-pro-highspeed", "moonshot-official", "https://api.moonshot.cn/v1", TXT_IMG, (TXT,),
     1048576, (3.714286, 0.185714, 19.428571)),
    ("deepseek-v4-pro", "deepseek-official", "https://api.deepseek.com", (TXT,), (TXT,), 1000000,
     (0.642857, 0.021429, 1.928571)),
    ("MiniMax-M3.1-Flash", "minimax-official", "https://api.minimax.io/v1", TXT_IMG, (TXT,),
     1000000, (0.15, 0.015, 0.6)),
    ("minimax/minimax-m3.1-flash:free", "openai-responses", OPENROUTER, TXT_IMG, (TXT,), 1000000,
     (0.0, None, 0.0)),
    ("qwen/qwen3-embedding-4b", "openai-embedding", OPENROUTER, (TXT,), (EMB,), 32768,
     (0.02, None, 0.0)),
    ("tencent/hy3", "openai-responses", OPENROUTER, (TXT,), (TXT,), 262144,
     (0.0825, 0.020625, 0.33)),
    ("x-ai/grok-4.5", "openai-responses", OPENROUTER, TXT_IMG, (TXT,), 500000, (2.0, 0.3, 6.0)),
    ("Qwen/Qwen3-Embedding-8B", "openai-embedding", SILICONFLOW, (TXT,), (EMB,), 32768, None),
    ("Pro/moonshotai/Kimi-K2.6", "moonshot-official", SILICONFLOW, TXT_IMG, (TXT,), 262144,
     (0.928571, 0.157143, 3.857143)),
    ("gemini-embedding-2", "google-genai", VERTEX, (TXT,), (EMB,), None, (0.2, None, 0.0)),
    ("gemini-3.7-flash", "google-genai", VERTEX, TXT_IMG_VID_AUD, (TXT,), 1048576,
     (1.5, 0.15, 7.5)),
    ("global.anthropic.claude-sonnet-4-6", "anthropic-official", "bedrock://us-east-1", TXT_IMG,
     (TXT,), 1000000, (3.0, 0.3, 15.0)),
    ("minimax-m3", "minimax-official", TOKENDANCE, TXT_IMG, (TXT,), 1000000, None),
    ("minimax-m3.1-flash", "ant-messages", "https://tokendance.space/gateway", TXT_IMG, (TXT,),
     1000000, (0.142857, 0.014286, 0.571429)),
    ("qwen3.7-text-embedding", "openai-embedding", TOKENDANCE, (TXT,), (EMB,), 128000,
     (0.071429, None, 0.0)),
]

# The ten rows of the spec table with an empty pricing cell, as (model, client).
UNPRICED = {
    ("gemini-3.1-flash-lite-image", "google-official"),
    ("gemini-3.1-flash-image", "google-official"),
    ("gemini-3.8-flash-tts", "google-official"),
    ("gemini-3.8-flash-lite-tts", "google-official"),
    ("gemini-3.1-flash-tts-preview", "google-official"),
    ("gemini-embedding-2", "google-official"),
    ("Qwen/Qwen3-Embedding-8B", "openai-embedding"),
    ("gemini-3.1-flash-image", "google-genai"),
    ("gemini-3.1-flash-tts-preview", "google-genai"),
    ("minimax-m3", "minimax-official"),
}


def by_key(models: list[SupportedModel]) -> dict[tuple[str, str, str], SupportedModel]:
    return {(m.model, m.client, m.base_url): m for m in models}


def test_125_entries_each_a_distinct_model_client_endpoint() -> None:
    models = list_supported_models()
    assert len(models) == 125
    assert len(by_key(models)) == 125


def test_table_order_first_and_last() -> None:
    models = list_supported_models()
    assert (models[0].model, models[0].client) == ("gemini-4-argon", "google-official")
    assert (models[-1].model, models[-1].client) == ("qwen3.7-text-embedding", "openai-embedding")


@pytest.mark.parametrize(
    ("model", "client", "base_url", "inputs", "outputs", "context", "prices"), SPEC_ROWS
)
def test_rows_match_the_spec_table(
    model: str,
    client: str,
    base_url: str,
    inputs: tuple[Modality, ...],
    outputs: tuple[Modality, ...],
    context: int | None,
    prices: tuple[float, float | None, float] | None,
) -> None:
    entry = by_key(list_supported_models())[(model, client, base_url)]
    assert entry.input_modalities == inputs
    assert entry.output_modalities == outputs
    assert entry.context_window == context
    if prices is None:
        assert entry.pricing is None
    else:
        prompt, cached, output = prices
        assert entry.pricing == ModelPricing("USD", prompt, output, output, cached)


def test_exactly_ten_entries_have_no_pricing() -> None:
    unpriced = {(m.model, m.client) for m in list_supported_models() if m.pricing is None}
    assert unpriced == UNPRICED


def test_thoughts_and_response_prices_are_the_output_price() -> None:
    for entry in list_supported_models():
        if entry.pricing is not None:
            assert entry.pricing.thoughts_tokens == entry.pricing.response_tokens
            assert entry.pricing.currency == "USD"


def test_every_entry_names_a_registered_client() -> None:
    assert {m.client for m in list_supported_models()} <= set(CLIENTS)


def test_cny_multiplies_by_seven_rounded_to_six_decimals() -> None:
    usd = by_key(list_supported_models())
    cny = by_key(list_supported_models("CNY"))
    kimi = cny[("kimi-k3.1-pro", "moonshot-official", "https://api.moonshot.cn/v1")]
    # 1.857143 * 7 = 13.000001, 0.185714 * 7 = 1.299998, 9.714286 * 7 = 68.000002
    assert kimi.pricing == ModelPricing("CNY", 13.000001, 68.000002, 68.000002, 1.299998)
    hy3 = cny[("tencent/hy3", "openai-responses", OPENROUTER)]
    assert hy3.pricing == ModelPricing("CNY", 0.5775, 2.31, 2.31, 0.144375)
    embedding = cny[("text-embedding-3-large", "openai-official", "https://api.openai.com/v1")]
    assert embedding.pricing == ModelPricing("CNY", 0.91, 0.0, 0.0, None)
    for key, entry in cny.items():
        assert (entry.pricing is None) == (usd[key].pricing is None)
        assert attrs.evolve(entry, pricing=None) == attrs.evolve(usd[key], pricing=None)


def test_currency_code_is_case_insensitive() -> None:
    assert list_supported_models("cny") == list_supported_models("CNY")
    assert list_supported_models("usd") == list_supported_models()


@pytest.mark.parametrize("currency", ["EUR", "", "US"])
def test_other_currencies_are_refused(currency: str) -> None:
    with pytest.raises(ValueError, match="unsupported currency"):
        list_supported_models(currency)


def test_results_are_fresh() -> None:
    first = list_supported_models()
    first.clear()
    second = list_supported_models()
    assert len(second) == 125
    second[0] = second[1]
    assert list_supported_models()[0].model == "gemini-4-argon"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        second[1].model = "changed"  # type: ignore[misc]


def test_to_dict_leaves_out_what_is_absent() -> None:
    models = by_key(list_supported_models())
    tts = models[("gemini-3.8-flash-tts", "google-official", GEMINI)]
    assert tts.to_dict() == {
        "model": "gemini-3.8-flash-tts",
        "base_url": GEMINI,
        "client": "google-official",
        "input_modalities": ["Text"],
        "output_modalities": ["Audio"],
    }
    embedding = models[("qwen/qwen3-embedding-4b", "openai-embedding", OPENROUTER)]
    assert embedding.to_dict() == {
        "model": "qwen/qwen3-embedding-4b",
        "base_url": OPENROUTER,
        "client": "openai-embedding",
        "input_modalities": ["Text"],
        "output_modalities": ["Embed"],
        "context_window": 32768,
        "pricing": {"currency": "USD", "prompt_tokens": 0.02, "thoughts_tokens": 0.0,
                    "response_tokens": 0.0},
    }
