"""The rules of 08 D74 per client that the configuration page's table does not show: limits of
a client narrower than UniConfig's, the temperature rule applied to ``top_p``, keys given
together with the other config keys, and ``extra_body`` around a refusal (RFC-0003 §6, 08 D57).

The page's table (``tests/test_configuration_sampling.py``) shows one value of each key per
client; these tests show the edges.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import adapters
from adapters._sampling import SAMPLING_KEYS
from mmsp_core import UnsupportedParameterError

MESSAGES = [{"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}]
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
JSON_SCHEMA = {"type": "json_schema", "name": "answer", "schema": SCHEMA}


def body(client: str, model: str, config: dict[str, Any]) -> dict[str, Any]:
    sent = json.loads(adapters.build_request(client, model, MESSAGES, config).body)
    assert isinstance(sent, dict)
    return sent


def refused(client: str, model: str, config: dict[str, Any]) -> UnsupportedParameterError:
    with pytest.raises(UnsupportedParameterError) as caught:
        adapters.build_request(client, model, MESSAGES, config)
    return caught.value


@pytest.mark.parametrize(("client", "model"), [
    ("anthropic-official", "claude-sonnet-5"),
    ("openai-official", "gpt-5.6"),
    ("deepseek-official", "deepseek-v4-pro"),
])
def test_top_p_follows_the_temperature_rule(client: str, model: str) -> None:
    """Where a client fixes the temperature at 1.0, ``top_p`` 1.0 is the default and is not
    sent; any other value is refused as a temperature would be (08 D74)."""
    assert body(client, model, {"top_p": 1.0}) == body(client, model, {})
    assert refused(client, model, {"top_p": 0.9}).parameter == "top_p"
    assert refused(client, model, {"temperature": 0.9}).parameter == "temperature"


def test_kimi_refuses_any_top_p_its_platform_fixes() -> None:
    assert refused("moonshot-official", "kimi-k3", {"top_p": 1.0}).parameter == "top_p"


def test_glm_takes_one_stop_word() -> None:
    assert body("zai-official", "glm-5.3", {"stop_sequences": ["x"]})["stop"] == ["x"]
    error = refused("zai-official", "glm-5.3", {"stop_sequences": ["x", "y"]})
    assert error.parameter == "stop_sequences"
    assert "at most 1" in str(error)


@pytest.mark.parametrize("client", ["google-genai", "google-official"])
def test_gemini_takes_a_32_bit_seed(client: str) -> None:
    assert body(client, "gemini-3.8-flash", {"seed": 2**31 - 1})
    assert body(client, "gemini-3.8-flash", {"seed": -(2**31)})
    for seed in (2**31, -(2**31) - 1):
        assert refused(client, "gemini-3.8-flash", {"seed": seed}).parameter == "seed"


def test_chat_takes_a_64_bit_seed() -> None:
    assert body("openai-chat", "gpt-5.5", {"seed": 2**63 - 1})["seed"] == 2**63 - 1


@pytest.mark.parametrize("client", ["google-genai", "google-official"])
@pytest.mark.parametrize("key", SAMPLING_KEYS)
def test_a_speech_model_takes_none_of_them(client: str, key: str) -> None:
    config = {"top_p": 0.5, "stop_sequences": ["x"], "seed": 1, "response_format": JSON_SCHEMA}
    assert refused(client, "gemini-3.8-flash-tts", {key: config[key]}).parameter == key


def test_anthropic_sends_the_format_beside_the_thinking_effort() -> None:
    sent = body("anthropic-official", "claude-opus-5-5",
                {"thinking_level": "high", "response_format": JSON_SCHEMA})
    assert sent["output_config"] == {
        "effort": "high", "format": {"type": "json_schema", "schema": SCHEMA},
    }


def test_interactions_puts_the_json_format_on_the_text_entry_beside_an_image() -> None:
    sent = body("google-official", "gemini-3-pro-image",
                {"image_config": {"aspect_ratio": "1:1"}, "response_format": JSON_SCHEMA})
    assert sent["response_format"] == [
        {"type": "text", "mime_type": "application/json", "schema": SCHEMA},
        {"type": "image", "aspect_ratio": "1:1"},
    ]


def test_gemini_sends_them_with_the_other_generation_fields() -> None:
    sent = body("google-genai", "gemini-3.8-flash", {
        "max_tokens": 10, "top_p": 0.25, "stop_sequences": ["a", "b", "c", "d"], "seed": 5,
        "response_format": JSON_SCHEMA, "thinking_level": "low",
    })
    assert sent["generationConfig"] == {
        "maxOutputTokens": 10, "topP": 0.25, "stopSequences": ["a", "b", "c", "d"], "seed": 5,
        "responseMimeType": "application/json", "responseJsonSchema": SCHEMA,
        "thinkingConfig": {"thinkingLevel": "LOW"},
    }


def test_chat_sends_strict_false_as_given() -> None:
    sent = body("openai-chat", "gpt-5.5", {"response_format": {**JSON_SCHEMA, "strict": False}})
    assert sent["response_format"]["json_schema"]["strict"] is False


def test_responses_sends_strict_false_as_given() -> None:
    sent = body("openai-responses", "gpt-5.6",
                {"response_format": {**JSON_SCHEMA, "strict": False}})
    assert sent["text"] == {"format": {**JSON_SCHEMA, "strict": False}}


def test_extra_body_cannot_send_a_refused_top_p() -> None:
    """``extra_body.top_p`` is the UniConfig key's counterpart: a model that refuses the key
    refuses it there too (08 D57)."""
    error = refused("anthropic-official", "claude-sonnet-5", {"extra_body": {"top_p": 0.5}})
    assert error.parameter == "extra_body"
    assert body("ant-messages", "claude-sonnet-5", {"extra_body": {"top_p": 0.5}})["top_p"] == 0.5


def test_the_refusal_comes_before_the_messages_are_converted() -> None:
    """Config errors come first (02 §8): a refused key with a message Responses cannot send."""
    thinking_only = [{"role": "user", "content_items": [{"type": "thinking.done",
                                                          "thinking": "x"}]}]
    with pytest.raises(UnsupportedParameterError):
        adapters.build_request("openai-official", "gpt-5.6", thinking_only, {"seed": 1})
