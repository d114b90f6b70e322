"""Chat Completions requests: config mapping, thinking tables, messages (spec 04 §4, 05).

Every expected value below is written from spec 05 (the row it comes from is named), not
from the builder's output.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import pytest

import adapters
from mmsp_core import (
    InvalidMessageError,
    UnsupportedContentError,
    UnsupportedParameterError,
)
from mmsp_core.model import (
    ImageUrlDone,
    InlineDataDone,
    PromptCaching,
    TextDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniMessage,
)

LEVELS = ["none", "low", "medium", "high", "xhigh", "max"]
HELLO = [UniMessage("user", (TextDone("Hello"),))]


def body(client: str, model: str, config: UniConfig | None = None, messages: Any = None) -> Any:
    request = adapters.build_request(client, model, HELLO if messages is None else messages, config)
    return json.loads(request.body)


def level_body(client: str, model: str, level: str) -> Any:
    return body(client, model, UniConfig(thinking_level=ThinkingLevel(level)))


# --------------------------------------------------------------------------------------------
# Thinking-level tables: one case per row x level (05 §2.4, §2.5, §2.8)
# --------------------------------------------------------------------------------------------

ON = {"type": "enabled", "clear_thinking": False}
OFF = {"type": "disabled"}
ABSENT = None

# 05 §2.4, zai-official: level -> (thinking, reasoning_effort).
ZAI_ROWS = {
    ("glm-5.3", "glm-5.3-flash", "zai-org/GLM-5.3"): [
        (ON, "low"),
        (ON, "low"),
        (ON, "high"),
        (ON, "high"),
        (ON, "max"),
        (ON, "max"),
    ],
    ("glm-5.2", "glm-5.1", "zai-org/GLM-5.2", "Pro/zai-org/GLM-5.1"): [
        (OFF, ABSENT),
        (ON, "low"),
        (ON, "medium"),
        (ON, "high"),
        (ON, "xhigh"),
        (ON, "max"),
    ],
}


@pytest.mark.parametrize(
    ("model", "level", "thinking", "effort"),
    [
        (model, level, thinking, effort)
        for models, row in ZAI_ROWS.items()
        for model in models
        for level, (thinking, effort) in zip(LEVELS, row, strict=True)
    ],
)
def test_zai_thinking_table(model: str, level: str, thinking: Any, effort: str | None) -> None:
    sent = level_body("zai-official", model, level)
    assert sent["thinking"] == thinking
    assert sent.get("reasoning_effort") == effort
    assert sent["model"] == model  # sent exactly as given (08 D9)


K2_ON = {"type": "enabled", "keep": "all"}
# 05 §2.5, moonshot-official: K3 -> reasoning_effort; K2 -> extra thinking.
K3_MODELS = ("kimi-k3", "kimi-k3.1-pro", "kimi-k3.1-pro-highspeed", "moonshotai/kimi-k3")
K3_EFFORT = ["none", "low", "high", "high", "max", "max"]
K2_MODELS = ("kimi-k2.6", "Pro/moonshotai/Kimi-K2.6")
K2_THINKING = [{"type": "disabled"}, K2_ON, K2_ON, K2_ON, K2_ON, K2_ON]


@pytest.mark.parametrize(
    ("model", "level", "effort"),
    [(m, lv, e) for m in K3_MODELS for lv, e in zip(LEVELS, K3_EFFORT, strict=True)],
)
def test_moonshot_k3_thinking_table(model: str, level: str, effort: str) -> None:
    sent = level_body("moonshot-official", model, level)
    assert sent["reasoning_effort"] == effort
    assert "thinking" not in sent


@pytest.mark.parametrize(
    ("model", "level", "thinking"),
    [(m, lv, t) for m in K2_MODELS for lv, t in zip(LEVELS, K2_THINKING, strict=True)],
)
def test_moonshot_k2_thinking_table(model: str, level: str, thinking: Any) -> None:
    sent = level_body("moonshot-official", model, level)
    assert sent["thinking"] == thinking
    assert "reasoning_effort" not in sent


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("model", ["gpt-5.6", "Qwen/Qwen3.8-27B", "deepseek-ai/DeepSeek-V4-Pro"])
def test_openai_chat_sends_no_thinking_level(model: str, level: str) -> None:
    sent = level_body("openai-chat", model, level)  # 05 §2.8: nothing sent
    assert not {"reasoning_effort", "thinking", "chat_template_kwargs"} & sent.keys()


def effort(value: str) -> dict[str, Any]:
    return {"thinking": True, "reasoning_effort": value}


# 05 §2.8, openai-chat-vllm-adapter: chat_template_kwargs per profile (None = absent).
P0 = [{"enable_thinking": False}] + [{"enable_thinking": True}] * 5
P1 = [{"enable_thinking": False}] + [{"reasoning_effort": e} for e in ["low", "medium"]]
P1 += [{"reasoning_effort": "xhigh"}] * 3
P2 = [None, effort("high"), effort("high"), effort("high"), effort("high"), effort("max")]
P3 = [None, effort("low"), effort("high"), effort("high"), effort("high"), effort("max")]
VLLM_ROWS = {
    ("Qwen/Qwen3.8-Flash-Next", "Qwen/Qwen3.8-27B"): P1,
    ("Qwen/Qwen3.6-35B-A3B", "Qwen/Qwen3.5-0.8B", "Qwen/Qwen3.5-9B"): P0,
    ("deepseek-ai/DeepSeek-V4-Flash-Vision-Exp",): P3,
    ("deepseek-ai/DeepSeek-V4-Pro", "deepseek-ai/DeepSeek-V4-Flash"): P2,
    ("meta-llama/Llama-4-70B", "mistral-large"): P0,  # no match: the Qwen3 switch
}


@pytest.mark.parametrize(
    ("model", "level", "kwargs"),
    [
        (m, lv, kw)
        for models, row in VLLM_ROWS.items()
        for m in models
        for lv, kw in zip(LEVELS, row, strict=True)
    ],
)
def test_vllm_profile_table(model: str, level: str, kwargs: Any) -> None:
    sent = level_body("openai-chat-vllm-adapter", model, level)
    assert sent.get("chat_template_kwargs") == kwargs
    assert not {"reasoning_effort", "thinking"} & sent.keys()


@pytest.mark.parametrize(
    ("client", "model"),
    [
        ("openai-chat", "gpt-5.6"),
        ("openai-chat-vllm-adapter", "Qwen/Qwen3.6-35B-A3B"),
        ("zai-official", "glm-5.3"),
        ("moonshot-official", "kimi-k3"),
        ("moonshot-official", "kimi-k2.6"),
    ],
)
def test_no_thinking_level_sends_no_thinking_keys(client: str, model: str) -> None:
    sent = body(client, model, UniConfig())
    assert not {"reasoning_effort", "thinking", "chat_template_kwargs"} & sent.keys()


# 05 §2.9, the pinned cases for these clients.
PINNED = [
    ("zai-official", "glm-5.3", "none", {"thinking": "enabled", "reasoning_effort": "low"}),
    ("zai-official", "glm-5.3", "low", {"thinking": "enabled", "reasoning_effort": "low"}),
    ("zai-official", "glm-5.3", "medium", {"thinking": "enabled", "reasoning_effort": "high"}),
    ("zai-official", "glm-5.3", "high", {"thinking": "enabled", "reasoning_effort": "high"}),
    ("zai-official", "glm-5.3", "xhigh", {"thinking": "enabled", "reasoning_effort": "max"}),
    ("zai-official", "glm-5.3", "max", {"thinking": "enabled", "reasoning_effort": "max"}),
    ("zai-official", "glm-5.3-flash", "max", {"thinking": "enabled", "reasoning_effort": "max"}),
    ("zai-official", "glm-5.2", "none", {"thinking": "disabled", "reasoning_effort": None}),
    ("zai-official", "glm-5.2", "medium", {"thinking": "enabled", "reasoning_effort": "medium"}),
    ("zai-official", "glm-5.2", "xhigh", {"thinking": "enabled", "reasoning_effort": "xhigh"}),
    ("zai-official", "glm-5.2", "max", {"thinking": "enabled", "reasoning_effort": "max"}),
    ("zai-official", "glm-5.1", "none", {"thinking": "disabled", "reasoning_effort": None}),
    ("zai-official", "glm-5.1", "high", {"thinking": "enabled", "reasoning_effort": "high"}),
    (
        "zai-official",
        "zai-org/GLM-5.2",
        "xhigh",
        {"thinking": "enabled", "reasoning_effort": "xhigh"},
    ),
    (
        "zai-official",
        "Pro/zai-org/GLM-5.1",
        "high",
        {"thinking": "enabled", "reasoning_effort": "high"},
    ),
    ("moonshot-official", "kimi-k3", "low", {"reasoning_effort": "low"}),
    ("moonshot-official", "kimi-k3", "medium", {"reasoning_effort": "high"}),
    ("moonshot-official", "kimi-k3", "xhigh", {"reasoning_effort": "max"}),
    ("moonshot-official", "kimi-k3", "max", {"reasoning_effort": "max"}),
]
VLLM = "openai-chat-vllm-adapter"
PINNED_VLLM = [
    ("Qwen/Qwen3.6-35B-A3B", "none", {"enable_thinking": False}),
    ("Qwen/Qwen3.6-35B-A3B", "low", {"enable_thinking": True}),
    ("Qwen/Qwen3.6-35B-A3B", "max", {"enable_thinking": True}),
    ("Qwen/Qwen3.8-Flash-Next", "none", {"enable_thinking": False}),
    ("Qwen/Qwen3.8-Flash-Next", "low", {"reasoning_effort": "low"}),
    ("Qwen/Qwen3.5-0.8B", "none", {"enable_thinking": False}),
    ("Qwen/Qwen3.5-9B", "medium", {"enable_thinking": True}),
    ("Qwen/Qwen3.8-27B", "none", {"enable_thinking": False}),
    ("Qwen/Qwen3.8-27B", "low", {"reasoning_effort": "low"}),
    ("Qwen/Qwen3.8-27B", "medium", {"reasoning_effort": "medium"}),
    ("Qwen/Qwen3.8-27B", "high", {"reasoning_effort": "xhigh"}),
    ("Qwen/Qwen3.8-27B", "xhigh", {"reasoning_effort": "xhigh"}),
    ("Qwen/Qwen3.8-27B", "max", {"reasoning_effort": "xhigh"}),
    ("deepseek-ai/DeepSeek-V4-Pro", "none", None),
    ("deepseek-ai/DeepSeek-V4-Pro", "low", effort("high")),
    ("deepseek-ai/DeepSeek-V4-Pro", "medium", effort("high")),
    ("deepseek-ai/DeepSeek-V4-Pro", "high", effort("high")),
    ("deepseek-ai/DeepSeek-V4-Pro", "xhigh", effort("high")),
    ("deepseek-ai/DeepSeek-V4-Pro", "max", effort("max")),
    ("deepseek-ai/DeepSeek-V4-Flash", "low", effort("high")),
    ("deepseek-ai/DeepSeek-V4-Flash-Vision-Exp", "none", None),
    ("deepseek-ai/DeepSeek-V4-Flash-Vision-Exp", "low", effort("low")),
    ("deepseek-ai/DeepSeek-V4-Flash-Vision-Exp", "high", effort("high")),
    ("meta-llama/Llama-4-70B", "none", {"enable_thinking": False}),
    ("meta-llama/Llama-4-70B", "high", {"enable_thinking": True}),
]


@pytest.mark.parametrize(("client", "model", "level", "expected"), PINNED)
def test_pinned_cases(client: str, model: str, level: str, expected: dict[str, Any]) -> None:
    sent = level_body(client, model, level)
    if "thinking" in expected:
        assert sent["thinking"]["type"] == expected["thinking"]
    assert sent.get("reasoning_effort") == expected["reasoning_effort"]


@pytest.mark.parametrize(("model", "level", "kwargs"), PINNED_VLLM)
def test_pinned_vllm_cases(model: str, level: str, kwargs: Any) -> None:
    assert level_body(VLLM, model, level).get("chat_template_kwargs") == kwargs


@pytest.mark.parametrize("level", LEVELS)
def test_plain_openai_chat_never_sends_kwargs(level: str) -> None:
    assert "chat_template_kwargs" not in level_body("openai-chat", "Qwen/Qwen3.6-35B-A3B", level)


# --------------------------------------------------------------------------------------------
# Config mapping (05 §4.3)
# --------------------------------------------------------------------------------------------

UPE_CASES = [
    ("openai-chat", "gpt-5.6", UniConfig(prompt_caching=PromptCaching.DISABLE), "prompt_caching"),
    ("openai-chat", "gpt-5.6", UniConfig(prompt_caching=PromptCaching.ENHANCE), "prompt_caching"),
    ("openai-chat", "gpt-5.6", UniConfig(tool_choice=()), "tool_choice"),
    (
        VLLM,
        "Qwen/Qwen3.6-35B-A3B",
        UniConfig(prompt_caching=PromptCaching.DISABLE),
        "prompt_caching",
    ),
    (
        VLLM,
        "Qwen/Qwen3.6-35B-A3B",
        UniConfig(prompt_caching=PromptCaching.ENHANCE),
        "prompt_caching",
    ),
    (VLLM, "Qwen/Qwen3.6-35B-A3B", UniConfig(tool_choice=()), "tool_choice"),
    ("zai-official", "glm-5.3", UniConfig(tool_choice="none"), "tool_choice"),
    ("zai-official", "glm-5.3", UniConfig(tool_choice="required"), "tool_choice"),
    ("zai-official", "glm-5.3", UniConfig(tool_choice=("f",)), "tool_choice"),
    ("zai-official", "glm-5.3", UniConfig(tool_choice=()), "tool_choice"),
    ("zai-official", "glm-5.3", UniConfig(prompt_caching=PromptCaching.DISABLE), "prompt_caching"),
    ("zai-official", "glm-5.3", UniConfig(prompt_caching=PromptCaching.ENHANCE), "prompt_caching"),
    ("zai-official", "glm-5.3", UniConfig(fast_mode=True), "fast_mode"),
    ("moonshot-official", "kimi-k3", UniConfig(temperature=0.7), "temperature"),
    ("moonshot-official", "kimi-k2.6", UniConfig(temperature=0.0), "temperature"),
    ("moonshot-official", "kimi-k2.6", UniConfig(tool_choice="required"), "tool_choice"),
    ("moonshot-official", "kimi-k3", UniConfig(tool_choice=("f",)), "tool_choice"),
    ("moonshot-official", "kimi-k3", UniConfig(tool_choice=()), "tool_choice"),
    (
        "moonshot-official",
        "kimi-k3",
        UniConfig(prompt_caching=PromptCaching.DISABLE),
        "prompt_caching",
    ),
    (
        "moonshot-official",
        "kimi-k2.6",
        UniConfig(prompt_caching=PromptCaching.DISABLE),
        "prompt_caching",
    ),
    (
        "moonshot-official",
        "kimi-k2.6",
        UniConfig(prompt_caching=PromptCaching.ENHANCE),
        "prompt_caching",
    ),
    ("moonshot-official", "kimi-k3", UniConfig(fast_mode=True), "fast_mode"),
]


@pytest.mark.parametrize(("client", "model", "config", "parameter"), UPE_CASES)
def test_unsupported_parameters(client: str, model: str, config: UniConfig, parameter: str) -> None:
    with pytest.raises(UnsupportedParameterError) as raised:
        adapters.check_config(client, model, config)
    assert (raised.value.client, raised.value.parameter) == (client, parameter)
    with pytest.raises(UnsupportedParameterError) as built:
        adapters.build_request(client, model, HELLO, config)
    assert built.value.parameter == parameter


def test_config_errors_come_before_message_errors() -> None:
    only_thinking = [UniMessage("assistant", (ThinkingDone("hm"),))]
    with pytest.raises(UnsupportedParameterError):
        adapters.build_request("zai-official", "glm-5.3", only_thinking, UniConfig(fast_mode=True))


@pytest.mark.parametrize(
    ("client", "model", "config", "expected"),
    [
        (
            "moonshot-official",
            "kimi-k3",
            UniConfig(tool_choice="required"),
            {"tool_choice": "required"},
        ),
        ("moonshot-official", "kimi-k2.6", UniConfig(tool_choice="none"), {"tool_choice": "none"}),
        ("moonshot-official", "kimi-k3", UniConfig(temperature=1.0), {}),
        ("moonshot-official", "kimi-k3", UniConfig(prompt_caching=PromptCaching.ENABLE), {}),
        (
            "moonshot-official",
            "kimi-k3",
            UniConfig(prompt_caching=PromptCaching.ENHANCE),
            {"prompt_cache_options": {"mode": "implicit", "ttl": "1h"}},
        ),
        (
            "moonshot-official",
            "kimi-k2.6",
            UniConfig(trace_id="run-1"),
            {"prompt_cache_key": "run-1"},
        ),
        ("moonshot-official", "kimi-k3", UniConfig(trace_id="run-1"), {}),
        ("moonshot-official", "kimi-k3", UniConfig(max_tokens=9), {"max_completion_tokens": 9}),
        ("zai-official", "glm-5.1", UniConfig(tool_choice="auto"), {"tool_choice": "auto"}),
        (
            "zai-official",
            "glm-5.1",
            UniConfig(max_tokens=9, temperature=0.2),
            {"max_tokens": 9, "temperature": 0.2},
        ),
        ("zai-official", "glm-5.1", UniConfig(fast_mode=False), {}),
        ("openai-chat", "gpt-5.6", UniConfig(fast_mode=True), {"service_tier": "priority"}),
        ("openai-chat", "gpt-5.6", UniConfig(max_tokens=9), {"max_completion_tokens": 9}),
        ("openai-chat", "gpt-5.6", UniConfig(temperature=0.3), {"temperature": 0.3}),
        ("openai-chat", "gpt-5.6", UniConfig(tool_choice="required"), {"tool_choice": "required"}),
        (
            "openai-chat",
            "gpt-5.6",
            UniConfig(tool_choice=("a", "b")),
            {
                "tool_choice": {
                    "type": "allowed_tools",
                    "allowed_tools": {
                        "mode": "auto",
                        "tools": [
                            {"type": "function", "function": {"name": "a"}},
                            {"type": "function", "function": {"name": "b"}},
                        ],
                    },
                }
            },
        ),
        (VLLM, "Qwen/Qwen3.6-35B-A3B", UniConfig(fast_mode=True), {"service_tier": "priority"}),
        ("openai-chat", "gpt-5.6", UniConfig(thinking_summary=True, trace_id="t"), {}),
    ],
)
def test_config_keys(client: str, model: str, config: UniConfig, expected: dict[str, Any]) -> None:
    sent = body(client, model, config)
    always = {"model", "messages", "stream", "stream_options", "tool_stream"}
    assert {k: v for k, v in sent.items() if k not in always} == expected


@pytest.mark.parametrize(
    ("client", "model", "stream_keys"),
    [
        ("openai-chat", "gpt-5.6", {"stream": True, "stream_options": {"include_usage": True}}),
        (VLLM, "m", {"stream": True, "stream_options": {"include_usage": True}}),
        (
            "moonshot-official",
            "kimi-k3",
            {"stream": True, "stream_options": {"include_usage": True}},
        ),
        ("zai-official", "glm-5.3", {"stream": True, "tool_stream": True}),  # no include_usage, D36
    ],
)
def test_always_sent(client: str, model: str, stream_keys: dict[str, Any]) -> None:
    sent = body(client, model)
    assert {k: sent[k] for k in sent if k not in ("model", "messages")} == stream_keys


def test_tools_and_system_prompt() -> None:
    tools = (ToolSchema("get", "Get it", {"type": "object"}), ToolSchema("now", "No params"))
    sent = body("zai-official", "glm-5.3", UniConfig(tools=tools, system_prompt="Be brief"))
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {"name": "get", "description": "Get it", "parameters": {"type": "object"}},
        },
        {"type": "function", "function": {"name": "now", "description": "No params"}},
    ]
    assert sent["messages"][0] == {"role": "system", "content": "Be brief"}
    assert body("openai-chat", "m", UniConfig(system_prompt=""))["messages"][0]["role"] == "user"


# --------------------------------------------------------------------------------------------
# Messages (05 §5)
# --------------------------------------------------------------------------------------------


def png_uri(width: int, height: int) -> str:
    header = (
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height)
    )
    return "data:image/png;base64," + base64.b64encode(header + b"\x08\x06\0\0\0").decode()


BIG = png_uri(6400, 8608)  # 200 x 269 = 53,800 patches
SMALL = png_uri(1024, 1024)


def messages_of(client: str, model: str, messages: list[UniMessage]) -> list[dict[str, Any]]:
    return body(client, model, UniConfig(), messages)["messages"]  # type: ignore[no-any-return]


def test_tool_results_go_before_the_user_message_with_their_images_in_it() -> None:
    messages = [
        UniMessage("user", (TextDone("Look"),)),
        UniMessage("assistant", (ToolCallDone("shot", "call_1", {"path": "a.png"}),)),
        UniMessage(
            "user",
            (
                ToolResultDone("image/png", "call_1", (SMALL,)),
                ToolResultDone("done", "call_2"),
                TextDone("What is it?"),
            ),
        ),
        UniMessage("user", (ToolResultDone("plain", "call_3"),)),
    ]
    assert messages_of("openai-chat", "gpt-5.5", messages) == [
        {"role": "user", "content": [{"type": "text", "text": "Look"}]},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "shot", "arguments": '{"path":"a.png"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "image/png"},
        {"role": "tool", "tool_call_id": "call_2", "content": "done"},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": SMALL}},
                {"type": "text", "text": "What is it?"},
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "plain"},  # no empty user message
    ]


@pytest.mark.parametrize(
    ("fidelities", "fields"),
    [
        ([{"reasoning_field": "reasoning_content"}], ["reasoning_content"]),
        ([{"reasoning_field": "reasoning"}, {"reasoning_field": "reasoning"}], ["reasoning"]),
        ([None], ["reasoning_content", "reasoning"]),  # unknown: both spellings
        (
            [{"reasoning_field": "reasoning"}, {"reasoning_field": "reasoning_content"}],
            ["reasoning_content", "reasoning"],
        ),
        ([{"reasoning_field": "reasoning"}, None], ["reasoning_content", "reasoning"]),  # mixed
    ],
)
@pytest.mark.parametrize("client", ["openai-chat", "zai-official", "moonshot-official", VLLM])
def test_thinking_goes_back_in_the_recorded_field(
    client: str, fidelities: list[Any], fields: list[str]
) -> None:
    thoughts = tuple(ThinkingDone(f"t{i}", f) for i, f in enumerate(fidelities))
    sent = messages_of(
        client,
        "glm-5.3" if client == "zai-official" else "kimi-k3",
        [
            UniMessage("user", (TextDone("q"),)),
            UniMessage("assistant", (*thoughts, TextDone("a"))),
        ],
    )
    joined = "".join(t.thinking for t in thoughts)
    assistant = sent[1]
    assert {k: v for k, v in assistant.items() if k.startswith("reasoning")} == dict.fromkeys(
        fields, joined
    )


def tool_turn(*thinking: ThinkingDone) -> UniMessage:
    return UniMessage("assistant", (*thinking, ToolCallDone("f", "c", {})))


def test_later_tool_call_turns_get_empty_reasoning_fields_on_openai_chat() -> None:
    history = [
        UniMessage("user", (TextDone("q"),)),
        tool_turn(),  # before any thinking: nothing added
        UniMessage("user", (ToolResultDone("r", "c"),)),
        tool_turn(ThinkingDone("why", {"reasoning_field": "reasoning_content"})),
        UniMessage("user", (ToolResultDone("r", "c"),)),
        tool_turn(),
        UniMessage("user", (ToolResultDone("r", "c"),)),
        UniMessage("assistant", (TextDone("answer"),)),  # no tool calls: nothing added
    ]
    sent = messages_of("openai-chat", "deepseek-chat", history)
    assistants = [m for m in sent if m["role"] == "assistant"]
    reasoning = [{k: v for k, v in m.items() if k.startswith("reasoning")} for m in assistants]
    assert reasoning == [{}, {"reasoning_content": "why"}, {"reasoning_content": ""}, {}]
    # zai and moonshot do not add them.
    for client, model in (("zai-official", "glm-5.3"), ("moonshot-official", "kimi-k3")):
        others = [m for m in messages_of(client, model, history) if m["role"] == "assistant"]
        assert [k for m in others for k in m if k.startswith("reasoning")] == ["reasoning_content"]


def test_empty_reasoning_fields_use_both_spellings_when_unknown() -> None:
    history = [UniMessage("user", (TextDone("q"),)), tool_turn(ThinkingDone("x")), tool_turn()]
    last = messages_of(VLLM, "m", history)[-1]
    assert (last["reasoning_content"], last["reasoning"]) == ("", "")


def test_gateway_encrypted_reasoning_is_replayed_on_openai_chat_only() -> None:
    fidelity = {"encrypted_content": "ENC", "format": "openai-responses-v1", "reasoning_id": "rs_1"}
    legacy = {"reasoning_details": [{"type": "reasoning.text", "text": "old"}]}
    responses_only = {"encrypted_content": "X"}  # no format: recorded by a Responses client
    history = [
        UniMessage("user", (TextDone("q"),)),
        UniMessage(
            "assistant",
            (
                ThinkingDone("", fidelity),
                ThinkingDone("", legacy),
                ThinkingDone("", responses_only),
                TextDone("a"),
            ),
        ),
    ]
    assistant = messages_of("openai-chat", "m", history)[1]
    assert assistant["reasoning_details"] == [
        {
            "type": "reasoning.encrypted",
            "data": "ENC",
            "format": "openai-responses-v1",
            "id": "rs_1",
        },
        {"type": "reasoning.text", "text": "old"},
    ]
    assert "reasoning_content" not in assistant  # no thinking text
    for client, model in (("zai-official", "glm-5.3"), ("moonshot-official", "kimi-k3")):
        assert "reasoning_details" not in messages_of(client, model, history)[1]


@pytest.mark.parametrize(
    ("client", "model", "details"),
    [
        ("openai-chat", "gpt-5.6-sol", ["high", None, "high", None]),
        ("openai-chat", "GPT-5.6-Sol", ["high", None, "high", None]),
        (VLLM, "openai/gpt-5.6", ["high", None, "high", None]),
        ("openai-chat", "gpt-5.5", [None, None, None, None]),
        ("moonshot-official", "kimi-k3", [None, None, None, None]),
        ("zai-official", "glm-5.3-flash", [None, None, None, None]),
    ],
)
def test_gpt_5_6_detail_rule(client: str, model: str, details: list[str | None]) -> None:
    history = [
        UniMessage("user", (TextDone("these?"), ImageUrlDone(BIG), ImageUrlDone(SMALL))),
        UniMessage("assistant", (ToolCallDone("read", "c1", {}),)),
        UniMessage("user", (ToolResultDone("pngs", "c1", (BIG, SMALL)),)),
    ]
    sent = messages_of(client, model, history)
    parts = sent[0]["content"][1:] + sent[3]["content"]
    assert [p["image_url"].get("detail") for p in parts] == details
    assert [p["image_url"]["url"] for p in parts] == [BIG, SMALL, BIG, SMALL]


def test_http_image_urls_pass_through_unmeasured() -> None:
    url = "https://example.com/huge.png"
    sent = messages_of("openai-chat", "gpt-5.6", [UniMessage("user", (ImageUrlDone(url),))])
    assert sent[0]["content"] == [{"type": "image_url", "image_url": {"url": url}}]


def test_malformed_data_uri_measured_for_gpt_5_6() -> None:
    with pytest.raises(InvalidMessageError) as raised:
        messages_of(
            "openai-chat",
            "gpt-5.6",
            [HELLO[0], UniMessage("user", (ImageUrlDone("data:image/png;base64,@@"),))],
        )
    assert (raised.value.item_type, raised.value.message_index) == ("image_url", 1)


@pytest.mark.parametrize(
    "url", ["data:image/png;base64,@@", "data:image/png,plain", "data:;base64,AAAA"]
)
@pytest.mark.parametrize(
    ("client", "model"),
    [
        ("openai-chat", "gpt-4o"),
        ("openai-chat", "gpt-5.6"),
        ("moonshot-official", "kimi-k3"),
        (VLLM, "qwen3"),
        ("zai-official", "glm-5.3-flash"),
    ],
)
def test_a_malformed_data_uri_is_refused_on_every_model(client: str, model: str, url: str) -> None:
    """A data URI that is not base64 cannot be sent as an image, measured or not: the same
    ``InvalidMessageError(item_type="image_url")`` as on the other protocols (03 §2)."""
    for item in (ImageUrlDone(url), ToolResultDone("r", "c", (url,))):
        with pytest.raises(InvalidMessageError) as raised:
            messages_of(client, model, [HELLO[0], UniMessage("user", (item,))])
        assert (raised.value.item_type, raised.value.message_index) == ("image_url", 1)


@pytest.mark.parametrize(
    ("item", "item_type"),
    [
        (ImageUrlDone("https://x/a.png"), "image_url"),
        (ToolResultDone("r", "c", ("https://x/a.png",)), "tool_result"),
    ],
)
@pytest.mark.parametrize("model", ["glm-5.3", "glm-5.2", "GLM-5.1"])
def test_zai_text_only_models_refuse_images(model: str, item: Any, item_type: str) -> None:
    with pytest.raises(UnsupportedContentError) as raised:
        messages_of("zai-official", model, [UniMessage("user", (item,))])
    assert (raised.value.client, raised.value.item_type) == ("zai-official", item_type)


def test_glm_5_3_flash_takes_image_urls_as_given() -> None:
    url = "https://x/a.png"
    sent = messages_of(
        "zai-official", "z-ai/GLM-5.3-Flash", [UniMessage("user", (ImageUrlDone(url),))]
    )
    assert sent[0]["content"] == [{"type": "image_url", "image_url": {"url": url}}]


@pytest.mark.parametrize(
    ("message", "item_type"),
    [
        (UniMessage("assistant", (ThinkingDone("only thinking"),)), None),
        (UniMessage("assistant", (ThinkingDone("x", {"encrypted_content": "E"}),)), None),
        (UniMessage("user", ()), None),
        (UniMessage("user", (InlineDataDone(b"x", "image/png"),)), "inline_data"),
        (UniMessage("user", (ToolResultDone("r", ""),)), "tool_result"),
    ],
)
@pytest.mark.parametrize("client", ["openai-chat", "zai-official", "moonshot-official", VLLM])
def test_invalid_messages(client: str, message: UniMessage, item_type: str | None) -> None:
    with pytest.raises(InvalidMessageError) as raised:
        messages_of(
            client, "glm-5.3" if client == "zai-official" else "kimi-k3", [HELLO[0], message]
        )
    assert (raised.value.client, raised.value.item_type, raised.value.message_index) == (
        client,
        item_type,
        1,
    )


# --------------------------------------------------------------------------------------------
# Golden requests: method, path, headers, body bytes
# --------------------------------------------------------------------------------------------

GOLDEN_MESSAGES = [
    UniMessage("user", (TextDone("Weather in Paris?"),)),
    UniMessage(
        "assistant",
        (
            ThinkingDone("Use the tool.", {"reasoning_field": "reasoning_content"}),
            ToolCallDone("get_weather", "call_1", {"city": "Paris"}),
        ),
    ),
    UniMessage("user", (ToolResultDone("18°C", "call_1"),)),
]
GOLDEN_CONFIG = UniConfig(
    max_tokens=512,
    tools=(ToolSchema("get_weather", "Current weather", {"type": "object"}),),
    tool_choice="auto",
    thinking_level=ThinkingLevel.HIGH,
    system_prompt="Be brief.",
)
GOLDEN_MESSAGES_JSON = (
    '"messages":[{"role":"system","content":"Be brief."},'
    '{"role":"user","content":[{"type":"text","text":"Weather in Paris?"}]},'
    '{"role":"assistant","tool_calls":[{"id":"call_1","type":"function",'
    '"function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}],'
    '"reasoning_content":"Use the tool."},'
    '{"role":"tool","tool_call_id":"call_1","content":"18°C"}]'
)
GOLDEN_TOOLS_JSON = (
    '"tools":[{"type":"function","function":{"name":"get_weather",'
    '"description":"Current weather","parameters":{"type":"object"}}}],"tool_choice":"auto"'
)
INCLUDE_USAGE = '"stream":true,"stream_options":{"include_usage":true}'
GOLDEN = {
    ("openai-chat", "gpt-5.6"): (
        '{"model":"gpt-5.6",'
        + GOLDEN_MESSAGES_JSON
        + ","
        + INCLUDE_USAGE
        + ',"max_completion_tokens":512,'
        + GOLDEN_TOOLS_JSON
        + "}"
    ),
    (VLLM, "Qwen/Qwen3.8-27B"): (
        '{"model":"Qwen/Qwen3.8-27B",'
        + GOLDEN_MESSAGES_JSON
        + ","
        + INCLUDE_USAGE
        + ',"max_completion_tokens":512,'
        + GOLDEN_TOOLS_JSON
        + ',"chat_template_kwargs":{"reasoning_effort":"xhigh"}}'
    ),
    ("zai-official", "glm-5.2"): (
        '{"model":"glm-5.2",'
        + GOLDEN_MESSAGES_JSON
        + ',"stream":true,"max_tokens":512,'
        + GOLDEN_TOOLS_JSON
        + ',"reasoning_effort":"high","thinking":{"type":"enabled","clear_thinking":false},'
        + '"tool_stream":true}'
    ),
    ("moonshot-official", "kimi-k3"): (
        '{"model":"kimi-k3",'
        + GOLDEN_MESSAGES_JSON
        + ","
        + INCLUDE_USAGE
        + ',"max_completion_tokens":512,'
        + GOLDEN_TOOLS_JSON
        + ',"reasoning_effort":"high"}'
    ),
}


@pytest.mark.parametrize(("client", "model"), list(GOLDEN))
def test_golden_request(client: str, model: str) -> None:
    request = adapters.build_request(client, model, GOLDEN_MESSAGES, GOLDEN_CONFIG)
    assert request.method == "POST"
    assert request.path == "/chat/completions"
    assert request.headers == (
        ("content-type", "application/json"),
        ("accept", "text/event-stream"),
    )
    assert request.body == GOLDEN[client, model].encode()
