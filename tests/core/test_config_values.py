"""UniConfig's keys of 08 D74 (``top_p``, ``stop_sequences``, ``seed``, ``response_format``):
their checks, their wire form, and dict configs holding the library's own values (issue 24).

A value is read from a dict or a ``UniConfig`` with the same checks (08 D58); a wrong one is a
``WireFormatError`` naming the key's path, which the clients report as
``UnsupportedParameterError`` naming the key, and nothing else leaves for any value (08 D59).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import adapters
from mmsp_core import (
    EmbeddingConfig,
    ImageConfig,
    MMSPError,
    PromptCaching,
    ResponseFormat,
    SpeakerConfig,
    ThinkingLevel,
    ToolSchema,
    UniConfig,
    UnsupportedParameterError,
    WireFormatError,
    config_from_wire,
    to_wire,
)
from mmsp_core.testing.strategies import hostile_json, response_formats

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
MESSAGES = [{"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}]


@pytest.mark.parametrize(("wire", "value"), [
    ({"top_p": 0.5}, UniConfig(top_p=0.5)),
    ({"top_p": 1}, UniConfig(top_p=1.0)),
    ({"top_p": 1e-9}, UniConfig(top_p=1e-9)),
    ({"stop_sequences": ["END"]}, UniConfig(stop_sequences=("END",))),
    ({"stop_sequences": ["a", "b", "c", "d"]}, UniConfig(stop_sequences=("a", "b", "c", "d"))),
    ({"seed": 0}, UniConfig(seed=0)),
    ({"seed": -(2**63)}, UniConfig(seed=-(2**63))),
    ({"seed": 2**63 - 1}, UniConfig(seed=2**63 - 1)),
    ({"response_format": {"type": "json_schema", "name": "city", "schema": SCHEMA}},
     UniConfig(response_format=ResponseFormat("json_schema", "city", SCHEMA))),
    ({"response_format": {"type": "json_schema", "name": "c", "schema": {}, "strict": False}},
     UniConfig(response_format=ResponseFormat("json_schema", "c", {}, strict=False))),
    ({"response_format": {"type": "json_object"}},
     UniConfig(response_format=ResponseFormat("json_object"))),
])
def test_good_values_are_read(wire: dict[str, Any], value: UniConfig) -> None:
    assert config_from_wire(wire) == value
    assert config_from_wire(json.loads(json.dumps(to_wire(value)))) == value


def test_the_wire_form_of_each_key() -> None:
    config = UniConfig(top_p=0.9, stop_sequences=("x",), seed=3,
                       response_format=ResponseFormat("json_schema", "n", SCHEMA))
    assert to_wire(config) == {
        "top_p": 0.9, "stop_sequences": ["x"], "seed": 3,
        "response_format": {"type": "json_schema", "name": "n", "schema": SCHEMA, "strict": True},
    }
    assert to_wire(UniConfig(response_format=ResponseFormat("json_object"))) == {
        "response_format": {"type": "json_object", "strict": True}
    }


BAD = [
    ({"top_p": 0}, "config.top_p"),
    ({"top_p": -0.1}, "config.top_p"),
    ({"top_p": 1.0000001}, "config.top_p"),
    ({"top_p": float("nan")}, "config.top_p"),
    ({"top_p": float("inf")}, "config.top_p"),
    ({"top_p": True}, "config.top_p"),
    ({"top_p": "0.5"}, "config.top_p"),
    ({"top_p": 10**400}, "config.top_p"),
    ({"stop_sequences": []}, "config.stop_sequences"),
    ({"stop_sequences": ["a", "b", "c", "d", "e"]}, "config.stop_sequences"),
    ({"stop_sequences": "END"}, "config.stop_sequences"),
    ({"stop_sequences": [""]}, "config.stop_sequences[0]"),
    ({"stop_sequences": ["a", 1]}, "config.stop_sequences[1]"),
    ({"seed": True}, "config.seed"),
    ({"seed": 1.0}, "config.seed"),
    ({"seed": "7"}, "config.seed"),
    ({"seed": 2**63}, "config.seed"),
    ({"seed": -(2**63) - 1}, "config.seed"),
    ({"response_format": "json"}, "config.response_format"),
    ({"response_format": {"type": "text"}}, "config.response_format.type"),
    ({"response_format": {}}, "config.response_format.type"),
    ({"response_format": {"type": "json_schema", "schema": SCHEMA}},
     "config.response_format.name"),
    ({"response_format": {"type": "json_schema", "name": "", "schema": SCHEMA}},
     "config.response_format.name"),
    ({"response_format": {"type": "json_schema", "name": "n"}}, "config.response_format.schema"),
    ({"response_format": {"type": "json_schema", "name": "n", "schema": [1]}},
     "config.response_format.schema"),
    ({"response_format": {"type": "json_schema", "name": "n", "schema": {}, "strict": 1}},
     "config.response_format.strict"),
    ({"response_format": {"type": "json_object", "schema": SCHEMA}},
     "config.response_format.schema"),
]


@pytest.mark.parametrize(("wire", "path"), BAD)
def test_bad_values_name_their_path(wire: dict[str, Any], path: str) -> None:
    with pytest.raises(WireFormatError) as caught:
        config_from_wire(wire)
    assert caught.value.path == path


@pytest.mark.parametrize("as_value", [False, True], ids=["dict", "UniConfig"])
@pytest.mark.parametrize(("wire", "path"), BAD)
def test_a_client_refuses_a_bad_value_naming_the_key(
    wire: dict[str, Any], path: str, as_value: bool
) -> None:
    """The same error from a dict and from a ``UniConfig`` built directly (08 D58)."""
    key = next(iter(wire))
    value = wire[key]
    if as_value and isinstance(value, dict):
        value = ResponseFormat(**value) if set(value) <= {"type", "name", "schema"} else value
    config: Any = UniConfig(**{key: value}) if as_value else wire
    with pytest.raises(UnsupportedParameterError) as caught:
        adapters.coerce_config("openai-chat", config)
    assert caught.value.parameter == key
    assert isinstance(caught.value.__cause__, WireFormatError)


@given(key=st.sampled_from(["top_p", "stop_sequences", "seed", "response_format"]),
       value=hostile_json())
def test_any_value_of_a_key_raises_only_mmsp_errors(key: str, value: Any) -> None:
    """08 D59: whatever a caller puts under a key, only ``MMSPError`` leaves, on the reader
    and on every client type."""
    with contextlib.suppress(WireFormatError):
        config_from_wire({key: value})
    for client in adapters.CLIENTS:
        with contextlib.suppress(MMSPError):
            adapters.check_config(client, "model-x", {key: value})


@given(response_formats())
def test_response_formats_round_trip(value: ResponseFormat) -> None:
    config = UniConfig(response_format=value)
    assert config_from_wire(json.loads(json.dumps(to_wire(config)))) == config


# -- item 5: a dict config takes the library's own values -------------------------------------

TOOL = ToolSchema("get_weather", "The weather of a city", SCHEMA)

#: The same config three ways: plain JSON, a dict of the library's values, a UniConfig.
SAME: list[tuple[dict[str, Any], dict[str, Any], UniConfig]] = [
    ({"tools": [{"name": "get_weather", "description": "The weather of a city",
                 "parameters": SCHEMA}]},
     {"tools": [TOOL]},
     UniConfig(tools=(TOOL,))),
    ({"tools": [{"name": "get_weather", "description": "The weather of a city",
                 "parameters": SCHEMA}], "tool_choice": ["get_weather"]},
     {"tools": (TOOL,), "tool_choice": ("get_weather",)},
     UniConfig(tools=(TOOL,), tool_choice=("get_weather",))),
    ({"image_config": {"aspect_ratio": "16:9"}},
     {"image_config": ImageConfig("16:9")},
     UniConfig(image_config=ImageConfig("16:9"))),
    ({"tts_config": [{"voice": "Kore", "speaker": "A"}, {"voice": "Puck", "speaker": "B"}]},
     {"tts_config": [SpeakerConfig("Kore", "A"), SpeakerConfig("Puck", "B")]},
     UniConfig(tts_config=(SpeakerConfig("Kore", "A"), SpeakerConfig("Puck", "B")))),
    ({"embedding_config": {"dimensions": 8}},
     {"embedding_config": EmbeddingConfig(8)},
     UniConfig(embedding_config=EmbeddingConfig(8))),
    ({"response_format": {"type": "json_schema", "name": "w", "schema": SCHEMA}},
     {"response_format": ResponseFormat("json_schema", "w", SCHEMA)},
     UniConfig(response_format=ResponseFormat("json_schema", "w", SCHEMA))),
    ({"thinking_level": "high", "prompt_caching": "enable", "stop_sequences": ["a"]},
     {"thinking_level": ThinkingLevel.HIGH, "prompt_caching": PromptCaching.ENABLE,
      "stop_sequences": ("a",)},
     UniConfig(thinking_level=ThinkingLevel.HIGH, prompt_caching=PromptCaching.ENABLE,
               stop_sequences=("a",))),
]


@pytest.mark.parametrize(("plain", "values", "config"), SAME)
def test_a_dict_config_takes_the_librarys_values(
    plain: dict[str, Any], values: dict[str, Any], config: UniConfig
) -> None:
    """``{"tools": [ToolSchema(...)]}`` reads as ``{"tools": [{...}]}`` (it was refused with
    "expected an object, got ToolSchema")."""
    assert config_from_wire(values) == config_from_wire(plain) == config
    assert adapters.coerce_config("google-genai", values) == config


@pytest.mark.parametrize(("client", "model"), [
    ("openai-chat", "gpt-5.5"), ("anthropic-official", "claude-sonnet-5"),
    ("google-genai", "gemini-3.8-flash"), ("openai-official", "gpt-5.6"),
    ("google-official", "gemini-3.8-flash"),
])
def test_a_dict_of_values_builds_the_request_the_plain_dict_builds(client: str, model: str) -> None:
    plain, values, config = SAME[0]
    configs: list[UniConfig | dict[str, Any]] = [plain, values, config]
    built = [adapters.build_request(client, model, MESSAGES, c).body for c in configs]
    assert built[0] == built[1] == built[2]


def test_a_value_with_a_wrong_field_is_refused_naming_the_field() -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        adapters.coerce_config("openai-chat", {"tools": [ToolSchema(5, "d")]})  # type: ignore[arg-type]
    assert caught.value.parameter == "tools"
    assert isinstance(caught.value.__cause__, WireFormatError)
    assert caught.value.__cause__.path == "config.tools[0].name"
