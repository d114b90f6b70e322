"""Anthropic Messages requests: anthropic-official and ant-messages (spec 04 §4, 05, 08 D9-D11,
D30). Every expected value below is written from the spec tables, not from the code."""

from __future__ import annotations

import json
from typing import Any

import pytest

import adapters
from mmsp_core import InvalidMessageError, UnsupportedParameterError
from mmsp_core.model import ThinkingLevel

OFFICIAL = "anthropic-official"
COMPATIBLE = "ant-messages"
HELLO = [{"role": "user", "content_items": [{"type": "text.done", "text": "hi"}]}]


def body(client: str, model: str, config: dict[str, Any], messages: Any = None) -> Any:
    request = adapters.build_request(client, model, HELLO if messages is None else messages, config)
    return json.loads(request.body)


def adaptive(effort: str) -> tuple[dict[str, str], dict[str, str]]:
    """A(e) of spec 05: adaptive thinking at effort e."""
    return {"type": "adaptive"}, {"effort": effort}


DISABLED = ({"type": "disabled"}, None)
BETWEEN_TOOLS = ({"type": "between_tools"}, None)
LEVELS = ("none", "low", "medium", "high", "xhigh", "max")

# --------------------------------------------------------------------------------------------
# THE thinking-level table: every level x every generation (05 §2.1, §2.8)
# --------------------------------------------------------------------------------------------

#: (client, generation, example ids, expected (thinking, output_config) per level)
TABLE: list[tuple[str, str, tuple[str, ...], dict[str, Any]]] = [
    (
        OFFICIAL,
        "Claude 4.6",
        ("claude-sonnet-4-6", "global.anthropic.claude-sonnet-4-6"),
        {
            "none": DISABLED,
            "low": adaptive("low"),
            "medium": adaptive("medium"),
            "high": adaptive("high"),
            "xhigh": adaptive("high"),
            "max": adaptive("max"),
        },
    ),
    (
        OFFICIAL,
        "other >= 4.7",
        ("claude-opus-4-8", "claude-opus-5", "claude-sonnet-5"),
        {
            "none": DISABLED,
            "low": adaptive("low"),
            "medium": adaptive("medium"),
            "high": adaptive("high"),
            "xhigh": adaptive("xhigh"),
            "max": adaptive("max"),
        },
    ),
    (
        OFFICIAL,
        "always thinking",
        ("claude-opus-5-5", "claude-fable-5", "claude-fable-5-1", "claude-haiku-5-5"),
        {
            "none": adaptive("low"),
            "low": adaptive("low"),
            "medium": adaptive("medium"),
            "high": adaptive("high"),
            "xhigh": adaptive("xhigh"),
            "max": adaptive("max"),
        },
    ),
    (
        OFFICIAL,
        "Sonnet 5.5",
        ("claude-sonnet-5-5",),
        {
            "none": BETWEEN_TOOLS,
            "low": adaptive("low"),
            "medium": adaptive("medium"),
            "high": adaptive("high"),
            "xhigh": adaptive("xhigh"),
            "max": adaptive("max"),
        },
    ),
    (
        COMPATIBLE,
        "any model",
        ("claude-sonnet-5", "claude-sonnet-4-6", "claude-opus-5-5", "minimax-m3.1-flash"),
        {
            "none": DISABLED,
            "low": adaptive("low"),
            "medium": adaptive("medium"),
            "high": adaptive("high"),
            "xhigh": adaptive("xhigh"),
            "max": adaptive("max"),
        },
    ),
]

ROWS = [
    pytest.param(client, model, level, expected[level], id=f"{client}-{model}-{level}")
    for client, _, models, expected in TABLE
    for model in models
    for level in LEVELS
]


@pytest.mark.parametrize(("client", "model", "level", "expected"), ROWS)
def test_thinking_level_table(client: str, model: str, level: str, expected: Any) -> None:
    thinking, output_config = expected
    sent = body(client, model, {"thinking_level": level})
    assert sent["thinking"] == thinking
    assert sent.get("output_config") == output_config
    assert sent["model"] == model


def test_generation_tokens_match_the_lower_cased_id_and_the_id_is_sent_as_given() -> None:
    sent = body(OFFICIAL, "Claude-Sonnet-4-6", {"thinking_level": "xhigh"})
    assert sent["output_config"] == {"effort": "high"}
    assert sent["model"] == "Claude-Sonnet-4-6"


def test_a_family_name_alone_decides_nothing() -> None:
    # An unknown Claude generation takes the default row, whatever family substring it holds.
    for model in ("claude-opus-9", "claude-haiku-9-9", "sonnet"):
        sent = body(OFFICIAL, model, {"thinking_level": "none"})
        assert sent["thinking"] == {"type": "disabled"}, model


@pytest.mark.parametrize("client", [OFFICIAL, COMPATIBLE])
@pytest.mark.parametrize("level", list(ThinkingLevel))
def test_no_level_ever_raises(client: str, level: ThinkingLevel) -> None:
    for model in ("claude-sonnet-4-6", "claude-opus-5-5", "claude-sonnet-5-5", "gpt-x"):
        adapters.check_config(client, model, {"thinking_level": level})


# Pinned by the reference test file (05 §2.9), effort read from output_config.effort.
PINNED = [
    (OFFICIAL, "claude-sonnet-5", "xhigh", "xhigh"),
    (OFFICIAL, "claude-sonnet-5", "max", "max"),
    (OFFICIAL, "claude-sonnet-4-6", "xhigh", "high"),
    (OFFICIAL, "claude-sonnet-4-6", "max", "max"),
    (COMPATIBLE, "claude-sonnet-5", "max", "max"),
    (OFFICIAL, "claude-opus-5-5", "none", "low"),
    (OFFICIAL, "claude-opus-5-5", "max", "max"),
    (OFFICIAL, "claude-fable-5-1", "none", "low"),
    (OFFICIAL, "claude-fable-5-1", "xhigh", "xhigh"),
    (OFFICIAL, "claude-sonnet-5-5", "none", None),
    (OFFICIAL, "claude-sonnet-5-5", "xhigh", "xhigh"),
]


@pytest.mark.parametrize(("client", "model", "level", "effort"), PINNED)
def test_pinned_effort_cases(client: str, model: str, level: str, effort: str | None) -> None:
    sent = body(client, model, {"thinking_level": level})
    assert sent.get("output_config", {}).get("effort") == effort


# --------------------------------------------------------------------------------------------
# thinking_summary (05 §3, 08 D11)
# --------------------------------------------------------------------------------------------

SUMMARY = [
    # 0.5.6 results with thinking_level none, as 05 §3 lists them.
    (
        OFFICIAL,
        "claude-opus-5-5",
        {"thinking_level": "none", "thinking_summary": True},
        {"type": "adaptive", "display": "summarized"},
    ),
    (
        OFFICIAL,
        "claude-sonnet-5-5",
        {"thinking_level": "none", "thinking_summary": True},
        {"type": "between_tools"},
    ),
    (
        OFFICIAL,
        "claude-sonnet-5",
        {"thinking_level": "none", "thinking_summary": True},
        {"type": "disabled"},
    ),
    (
        COMPATIBLE,
        "claude-sonnet-5",
        {"thinking_level": "none", "thinking_summary": True},
        {"type": "disabled"},
    ),
    # A summary on its own creates an adaptive block.
    (
        OFFICIAL,
        "claude-opus-5",
        {"thinking_summary": True},
        {"type": "adaptive", "display": "summarized"},
    ),
    (
        OFFICIAL,
        "claude-opus-5",
        {"thinking_summary": False},
        {"type": "adaptive", "display": "omitted"},
    ),
    (
        COMPATIBLE,
        "anything",
        {"thinking_summary": False},
        {"type": "adaptive", "display": "omitted"},
    ),
    (
        OFFICIAL,
        "claude-sonnet-4-6",
        {"thinking_level": "high", "thinking_summary": False},
        {"type": "adaptive", "display": "omitted"},
    ),
    (
        COMPATIBLE,
        "claude-sonnet-5-5",
        {"thinking_level": "low", "thinking_summary": True},
        {"type": "adaptive", "display": "summarized"},
    ),
]


@pytest.mark.parametrize(("client", "model", "config", "thinking"), SUMMARY)
def test_thinking_summary(client: str, model: str, config: Any, thinking: Any) -> None:
    assert body(client, model, config)["thinking"] == thinking


def test_summary_alone_sends_no_effort() -> None:
    assert "output_config" not in body(OFFICIAL, "claude-opus-5", {"thinking_summary": True})


def test_no_thinking_keys_without_level_or_summary() -> None:
    sent = body(OFFICIAL, "claude-opus-5", {})
    assert "thinking" not in sent and "output_config" not in sent


# --------------------------------------------------------------------------------------------
# Every UnsupportedParameterError of 05 §4.1, before anything else is looked at
# --------------------------------------------------------------------------------------------

BAD_MESSAGE = [
    {
        "role": "user",
        "content_items": [{"type": "inline_data.done", "data": "AA==", "mime_type": "audio/wav"}],
    }
]

REJECTED = [
    (OFFICIAL, "claude-opus-5", {"temperature": 0.5}, "temperature"),
    (OFFICIAL, "claude-sonnet-4-6", {"temperature": 0.0}, "temperature"),
    (OFFICIAL, "claude-opus-5", {"tool_choice": ["a", "b"]}, "tool_choice"),
    (COMPATIBLE, "claude-opus-5", {"tool_choice": ["a", "b"]}, "tool_choice"),
    (OFFICIAL, "claude-opus-5", {"tool_choice": []}, "tool_choice"),
    (COMPATIBLE, "claude-opus-5", {"tool_choice": []}, "tool_choice"),
    (OFFICIAL, "claude-opus-5", {"tool_choice": "sometimes"}, "tool_choice"),
    *[
        (OFFICIAL, model, {"tool_choice": choice}, "tool_choice")
        for model in (
            "claude-opus-5-5",
            "claude-sonnet-5-5",
            "claude-haiku-5-5",
            "claude-fable-5-1",
        )
        for choice in ("required", ["get_weather"])
    ],
    (COMPATIBLE, "claude-opus-5", {"prompt_caching": "disable"}, "prompt_caching"),
    (COMPATIBLE, "claude-opus-5", {"prompt_caching": "enhance"}, "prompt_caching"),
    *[
        (OFFICIAL, model, {"fast_mode": True}, "fast_mode")
        for model in (
            "claude-sonnet-4-6",
            "claude-sonnet-5-5",
            "claude-haiku-5-5",
            "claude-fable-5-1",
        )
    ],
]


@pytest.mark.parametrize(("client", "model", "config", "parameter"), REJECTED)
def test_unsupported_parameters(client: str, model: str, config: Any, parameter: str) -> None:
    with pytest.raises(UnsupportedParameterError) as raised:
        adapters.check_config(client, model, config)
    assert (raised.value.client, raised.value.parameter) == (client, parameter)
    # build_request raises the same, before it looks at a message it cannot send (02 §8).
    with pytest.raises(UnsupportedParameterError) as again:
        adapters.build_request(client, model, BAD_MESSAGE, config)
    assert again.value.parameter == parameter


ACCEPTED = [
    (OFFICIAL, "claude-opus-5", {"temperature": 1.0}),
    (OFFICIAL, "claude-fable-5", {"tool_choice": "required", "fast_mode": True}),
    (OFFICIAL, "claude-opus-5-5", {"tool_choice": "none", "fast_mode": True}),
    (OFFICIAL, "claude-sonnet-5-5", {"tool_choice": "auto", "fast_mode": False}),
    (COMPATIBLE, "claude-sonnet-5-5", {"tool_choice": ["f"], "fast_mode": True}),
    (COMPATIBLE, "claude-opus-5", {"prompt_caching": "enable", "temperature": 0.3}),
]


@pytest.mark.parametrize(("client", "model", "config"), ACCEPTED)
def test_values_each_client_accepts(client: str, model: str, config: Any) -> None:
    adapters.check_config(client, model, config)


# --------------------------------------------------------------------------------------------
# The other keys of 05 §4.1
# --------------------------------------------------------------------------------------------


def test_minimal_bodies() -> None:
    assert body(OFFICIAL, "claude-opus-5", {}) == {
        "model": "claude-opus-5",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "max_tokens": 64000,
        "stream": True,
        "cache_control": {"type": "ephemeral"},
    }
    assert body(COMPATIBLE, "claude-opus-5", {}) == {
        "model": "claude-opus-5",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "max_tokens": 64000,
        "stream": True,
    }


@pytest.mark.parametrize("client", [OFFICIAL, COMPATIBLE])
def test_max_tokens_and_an_empty_system_prompt(client: str) -> None:
    sent = body(client, "claude-opus-5", {"max_tokens": 300, "system_prompt": ""})
    assert (sent["max_tokens"], sent["system"]) == (300, "")


@pytest.mark.parametrize("client", [OFFICIAL, COMPATIBLE])
def test_tools_rename_parameters_to_input_schema(client: str) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [
        {"name": "search", "description": "Find", "parameters": schema},
        {"name": "now", "description": "Time"},
    ]
    assert body(client, "claude-opus-5", {"tools": tools})["tools"] == [
        {"name": "search", "description": "Find", "input_schema": schema},
        {"name": "now", "description": "Time"},
    ]


@pytest.mark.parametrize("client", [OFFICIAL, COMPATIBLE])
@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        (["get_weather"], {"type": "tool", "name": "get_weather"}),
    ],
)
def test_tool_choice(client: str, choice: Any, sent: Any) -> None:
    assert body(client, "claude-opus-5", {"tool_choice": choice})["tool_choice"] == sent


@pytest.mark.parametrize(
    ("caching", "sent"),
    [
        (None, {"type": "ephemeral"}),
        ("enable", {"type": "ephemeral"}),
        ("enhance", {"type": "ephemeral", "ttl": "1h"}),
        ("disable", None),
    ],
)
def test_prompt_caching_on_anthropic_official(caching: str | None, sent: Any) -> None:
    config = {} if caching is None else {"prompt_caching": caching}
    assert body(OFFICIAL, "claude-opus-5", config).get("cache_control") == sent


@pytest.mark.parametrize("client", [OFFICIAL, COMPATIBLE])
def test_fast_mode_sends_speed_and_the_beta(client: str) -> None:
    request = adapters.build_request(client, "claude-opus-5", HELLO, {"fast_mode": True})
    assert json.loads(request.body)["speed"] == "fast"
    assert ("anthropic-beta", "fast-mode-2026-02-01") in request.headers
    plain = adapters.build_request(client, "claude-opus-5", HELLO, {"fast_mode": False})
    assert "speed" not in json.loads(plain.body)
    assert all(name != "anthropic-beta" for name, _ in plain.headers)


def test_temperature() -> None:
    assert "temperature" not in body(OFFICIAL, "claude-opus-5", {"temperature": 1.0})
    assert body(COMPATIBLE, "claude-opus-5", {"temperature": 0.3})["temperature"] == 0.3


@pytest.mark.parametrize("client", [OFFICIAL, COMPATIBLE])
def test_keys_without_a_use_are_ignored(client: str) -> None:
    ignored = {
        "image_config": {"aspect_ratio": "1:1"},
        "tts_config": [{"voice": "Kore"}],
        "embedding_config": {"dimensions": 8},
        "trace_id": "run-1",
        "some_future_key": 1,
    }
    with pytest.warns(UserWarning, match="ignores the config key 'some_future_key'"):  # D57
        sent = body(client, "claude-opus-5", ignored)
    assert sent == body(client, "claude-opus-5", {})


def test_only_anthropic_clients_are_served_here() -> None:
    from adapters.anthropic_messages import build_request
    from mmsp_core import UnsupportedOperationError
    from mmsp_core.model import UniConfig

    foreign = adapters.CLIENTS["openai-chat"].profile
    with pytest.raises(UnsupportedOperationError):
        build_request("openai-chat", foreign, "m", [], UniConfig())


def test_the_profile_decides_not_the_client_name() -> None:
    """Per-client rules are profile fields (08 D63): the official profile under another
    client name drops unsigned thinking and refuses temperature 0.5."""
    from adapters.anthropic_messages import build_request, check_config
    from adapters.anthropic_messages.profiles import OFFICIAL as OFFICIAL_PROFILE
    from mmsp_core.model import UniConfig

    messages = adapters.coerce_messages(COMPATIBLE, assistant(UNSIGNED, TEXT))
    request = build_request(COMPATIBLE, OFFICIAL_PROFILE, "claude-opus-5", messages, UniConfig())
    assert json.loads(request.body)["messages"][1]["content"] == [{"type": "text", "text": "ok"}]
    with pytest.raises(UnsupportedParameterError):
        check_config(COMPATIBLE, OFFICIAL_PROFILE, "claude-opus-5", UniConfig(temperature=0.5))


# --------------------------------------------------------------------------------------------
# Message conversion (05 §5, 08 D30)
# --------------------------------------------------------------------------------------------


def assistant(*items: dict[str, Any]) -> list[dict[str, Any]]:
    return [*HELLO, {"role": "assistant", "content_items": list(items)}]


SIGNED = {"type": "thinking.done", "thinking": "hmm", "fidelity": {"signature": "S"}}
UNSIGNED = {"type": "thinking.done", "thinking": "hmm"}
REDACTED = {
    "type": "thinking.done",
    "thinking": "_REDACTED_THINKING",
    "fidelity": {"signature": "DATA"},
}
REDACTED_BARE = {"type": "thinking.done", "thinking": "_REDACTED_THINKING"}
TEXT = {"type": "text.done", "text": "ok"}


@pytest.mark.parametrize("client", [OFFICIAL, COMPATIBLE])
def test_signed_and_redacted_thinking_are_replayed(client: str) -> None:
    sent = body(client, "claude-opus-5", {}, assistant(SIGNED, REDACTED, TEXT))
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "S"},
            {"type": "redacted_thinking", "data": "DATA"},
            {"type": "text", "text": "ok"},
        ],
    }


def test_unsigned_thinking_is_dropped_by_anthropic_official() -> None:
    sent = body(OFFICIAL, "claude-opus-5", {}, assistant(UNSIGNED, REDACTED_BARE, TEXT))
    assert sent["messages"][1]["content"] == [{"type": "text", "text": "ok"}]


def test_unsigned_thinking_is_sent_without_signature_by_ant_messages() -> None:
    sent = body(COMPATIBLE, "claude-opus-5", {}, assistant(UNSIGNED, REDACTED_BARE, TEXT))
    assert sent["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "ok"},
    ]


ONLY_THINKING = {
    "unsigned": [UNSIGNED],
    "signed": [SIGNED],
    "redacted": [REDACTED],
    "signed and redacted": [SIGNED, REDACTED],
    "unsigned and bare redacted": [UNSIGNED, REDACTED_BARE],
    "bare redacted": [REDACTED_BARE],
}


@pytest.mark.parametrize("client", [OFFICIAL, COMPATIBLE])
@pytest.mark.parametrize("items", ONLY_THINKING.values(), ids=ONLY_THINKING.keys())
def test_a_message_of_only_thinking_is_refused(client: str, items: list[Any]) -> None:
    """08 D67 (RFC-0003 §3.3): thinking, signed or not, is not content on its own; ant-messages
    too, although it replays unsigned thinking next to content."""
    with pytest.raises(InvalidMessageError) as raised:
        adapters.build_request(client, "claude-opus-5", assistant(*items), {})
    assert (raised.value.message_index, raised.value.item_type) == (1, None)
    assert "thinking" in str(raised.value)


@pytest.mark.parametrize("client", [OFFICIAL, COMPATIBLE])
def test_tool_call_and_tool_result_with_images(client: str) -> None:
    call = {
        "type": "tool_call.done",
        "name": "shot",
        "tool_call_id": "toolu_9",
        "arguments": {"url": "x", "n": [1, {"deep": True}]},
    }
    result = {
        "type": "tool_result.done",
        "text": "done",
        "tool_call_id": "toolu_9",
        "images": ["data:image/gif;base64,R0lGOA==", "https://e.com/a.png"],
    }
    messages = [*assistant(call), {"role": "user", "content_items": [result]}]
    sent = body(client, "claude-opus-5", {}, messages)
    assert sent["messages"][1]["content"] == [
        {
            "type": "tool_use",
            "id": "toolu_9",
            "name": "shot",
            "input": {"url": "x", "n": [1, {"deep": True}]},
        }
    ]
    assert sent["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_9",
            "content": [
                {"type": "text", "text": "done"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGOA=="},
                },
                {"type": "image", "source": {"type": "url", "url": "https://e.com/a.png"}},
            ],
        }
    ]


BAD_ITEMS = [
    ({"type": "tool_result.done", "text": "x", "tool_call_id": ""}, "tool_result"),
    ({"type": "inline_data.done", "data": "AA==", "mime_type": "image/png"}, "inline_data"),
    ({"type": "inline_thinking.done", "data": "AA==", "mime_type": "image/png"}, "inline_thinking"),
    ({"type": "embedding.done", "embedding": [0.5]}, "embedding"),
    ({"type": "image_url.done", "image_url": "data:image/png;base64,@@@"}, "image_url"),
    ({"type": "image_url.done", "image_url": "data:image/png,plain"}, "image_url"),
    ({"type": "image_url.done", "image_url": "ftp://e.com/a.png"}, "image_url"),
]


@pytest.mark.parametrize("client", [OFFICIAL, COMPATIBLE])
@pytest.mark.parametrize(("item", "item_type"), BAD_ITEMS)
def test_items_anthropic_cannot_take(client: str, item: Any, item_type: str) -> None:
    messages = [*HELLO, {"role": "user", "content_items": [TEXT, item]}]
    with pytest.raises(InvalidMessageError) as raised:
        adapters.build_request(client, "claude-opus-5", messages, {})
    assert (raised.value.item_type, raised.value.message_index) == (item_type, 1)


# --------------------------------------------------------------------------------------------
# Golden requests: method, path, headers and the exact body bytes
# --------------------------------------------------------------------------------------------

PNG = "data:image/png;base64,iVBORw0KGgo="
GOLDEN_MESSAGES = [
    {
        "role": "user",
        "content_items": [
            {"type": "text.done", "text": "What is in this image? And the weather?"},
            {"type": "image_url.done", "image_url": PNG},
            {"type": "image_url.done", "image_url": "https://example.com/cat.jpg"},
        ],
    },
    {
        "role": "assistant",
        "content_items": [
            {
                "type": "thinking.done",
                "thinking": "The user wants the weather.",
                "fidelity": {"signature": "sig-1"},
            },
            {"type": "thinking.done", "thinking": "Unsigned aside."},
            {"type": "text.done", "text": "Let me check."},
            {
                "type": "tool_call.done",
                "name": "get_weather",
                "tool_call_id": "toolu_1",
                "arguments": {"city": "Paris"},
            },
        ],
    },
    {
        "role": "user",
        "content_items": [
            {
                "type": "tool_result.done",
                "text": "18°C, sunny",
                "tool_call_id": "toolu_1",
                "images": [PNG],
            },
        ],
    },
]
GOLDEN_CONFIG = {
    "system_prompt": "You are terse.",
    "max_tokens": 1024,
    "tools": [
        {
            "name": "get_weather",
            "description": "Current weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ],
    "tool_choice": "auto",
    "thinking_summary": True,
}

_USER_1 = (
    '{"role":"user","content":[{"type":"text","text":"What is in this image? And the weather?"},'
    '{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},'
    '{"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}}]}'
)
_USER_2 = (
    '{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":['
    '{"type":"text","text":"18°C, sunny"},'
    '{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}'
    "]}]}"
)
_TOOLS = (
    '"tools":[{"name":"get_weather","description":"Current weather","input_schema":'
    '{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],'
    '"tool_choice":{"type":"auto"}'
)
_CALL = '{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}'


def test_golden_anthropic_official_request() -> None:
    config = {**GOLDEN_CONFIG, "thinking_level": "high"}
    request = adapters.build_request(OFFICIAL, "claude-opus-5", GOLDEN_MESSAGES, config)
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers == (
        ("content-type", "application/json"),
        ("accept", "text/event-stream"),
        ("anthropic-version", "2026-10-21"),
    )
    expected = (
        '{"model":"claude-opus-5","messages":[' + _USER_1 + ","
        '{"role":"assistant","content":['
        '{"type":"thinking","thinking":"The user wants the weather.","signature":"sig-1"},'
        '{"type":"text","text":"Let me check."},' + _CALL + "]}," + _USER_2 + "],"
        '"max_tokens":1024,"stream":true,"system":"You are terse.",'
        '"thinking":{"type":"adaptive","display":"summarized"},"output_config":{"effort":"high"},'
        + _TOOLS
        + ',"cache_control":{"type":"ephemeral"}}'
    )
    assert request.body == expected.encode("utf-8")


def test_golden_ant_messages_request() -> None:
    config = {**GOLDEN_CONFIG, "thinking_level": "xhigh", "temperature": 0.2, "fast_mode": True}
    request = adapters.build_request(COMPATIBLE, "minimax-m3.1-flash", GOLDEN_MESSAGES, config)
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers == (
        ("content-type", "application/json"),
        ("accept", "text/event-stream"),
        ("anthropic-version", "2026-10-21"),
        ("anthropic-beta", "fast-mode-2026-02-01"),
    )
    expected = (
        '{"model":"minimax-m3.1-flash","messages":[' + _USER_1 + ","
        '{"role":"assistant","content":['
        '{"type":"thinking","thinking":"The user wants the weather.","signature":"sig-1"},'
        '{"type":"thinking","thinking":"Unsigned aside."},'
        '{"type":"text","text":"Let me check."},' + _CALL + "]}," + _USER_2 + "],"
        '"max_tokens":1024,"stream":true,"system":"You are terse.",'
        '"thinking":{"type":"adaptive","display":"summarized"},"output_config":{"effort":"xhigh"},'
        + _TOOLS
        + ',"speed":"fast","temperature":0.2}'
    )
    assert request.body == expected.encode("utf-8")


def test_headers_carry_no_credentials() -> None:
    request = adapters.build_request(OFFICIAL, "claude-opus-5", HELLO, {"fast_mode": True})
    names = {name.lower() for name, _ in request.headers}
    assert not names & {"x-api-key", "authorization"}
