"""Requests of the Responses clients (spec 04 §4, 05 §2.2, §2.6-§2.9, §3, §4.2, §5, 08 D10).

Expected values are copied from the spec tables, row by row, not from the code.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import pytest

import adapters
from mmsp_core.errors import (
    InvalidMessageError,
    UnsupportedContentError,
    UnsupportedOperationError,
    UnsupportedParameterError,
)

OFFICIAL, RESPONSES, DEEPSEEK, MINIMAX = (
    "openai-official", "openai-responses", "deepseek-official", "minimax-official"
)
CLIENTS = (OFFICIAL, RESPONSES, DEEPSEEK, MINIMAX)
LEVELS = ("none", "low", "medium", "high", "xhigh", "max")
HELLO = [{"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}]


def body(client: str, model: str, config: dict[str, Any] | None = None,
         messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    request = adapters.build_request(client, model, HELLO if messages is None else messages,
                                     config or {})
    decoded: dict[str, Any] = json.loads(request.body)
    return decoded


def inputs(client: str, messages: list[dict[str, Any]], model: str = "model-x") -> list[Any]:
    result: list[Any] = body(client, model, {}, messages)["input"]
    return result


# ------------------------------------------------------------------------------------------
# THE thinking-level table: one case per row, level and example id (05 §2.2, §2.6-§2.8)
# ------------------------------------------------------------------------------------------

def _rows(clients: tuple[str, ...], models: tuple[str, ...], efforts: tuple[str, ...]) -> list[
    tuple[str, str, str, str]
]:
    return [(client, model, level, effort) for client in clients for model in models
            for level, effort in zip(LEVELS, efforts, strict=True)]


OPENAI = (OFFICIAL, RESPONSES)
LEVEL_TABLE = [
    # 05 §2.2 / §2.8: GPT-6 except Luna
    *_rows(OPENAI, ("gpt-6-astra", "gpt-6.1-sol", "openai/gpt-6-astra"),
           ("low", "low", "medium", "high", "xhigh", "max")),
    # 05 §2.2 / §2.8: everything else
    *_rows(OPENAI, ("gpt-6-luna", "gpt-5.6-sol", "gpt-5.6", "gpt-5.5"),
           ("none", "low", "medium", "high", "xhigh", "max")),
    *_rows((RESPONSES,), ("anthropic/claude-opus-5.5", "qwen3.8-max"),
           ("none", "low", "medium", "high", "xhigh", "max")),
    # 05 §2.6: every DeepSeek model
    *_rows((DEEPSEEK,), ("deepseek-v4-pro", "deepseek-v4-flash", "deepseek-flash",
                         "deepseek/deepseek-v4.1-flash"),
           ("none", "low", "high", "high", "high", "max")),
    # 05 §2.7: MiniMax M3.1-Flash always reasons; M3 stops at high
    *_rows((MINIMAX,), ("MiniMax-M3.1-Flash",), ("low", "low", "medium", "high", "xhigh", "max")),
    *_rows((MINIMAX,), ("MiniMax-M3", "minimax-m3"),
           ("none", "low", "medium", "high", "high", "high")),
]


@pytest.mark.parametrize(("client", "model", "level", "effort"), LEVEL_TABLE)
def test_thinking_level_table(client: str, model: str, level: str, effort: str) -> None:
    sent = body(client, model, {"thinking_level": level})
    assert sent["reasoning"] == {"effort": effort}
    assert sent["model"] == model  # the id is sent exactly as given (08 D9)


# 05 §2.9: the cases the reference test file pins, for these clients.
PINNED = [
    (OFFICIAL, "gpt-6-astra", "none", "low"), (OFFICIAL, "gpt-6-astra", "low", "low"),
    (OFFICIAL, "gpt-6-astra", "max", "max"), (RESPONSES, "gpt-6-astra", "none", "low"),
    (RESPONSES, "gpt-6-astra", "low", "low"), (RESPONSES, "gpt-6-astra", "max", "max"),
    (OFFICIAL, "gpt-6.1-sol", "none", "low"), (OFFICIAL, "gpt-6.1-sol", "max", "max"),
    (OFFICIAL, "gpt-5.6", "none", "none"), (OFFICIAL, "gpt-5.6", "xhigh", "xhigh"),
    (OFFICIAL, "gpt-5.6", "max", "max"), (RESPONSES, "gpt-5.6", "max", "max"),
    (DEEPSEEK, "deepseek-v4", "none", "none"), (DEEPSEEK, "deepseek-v4", "low", "low"),
    (DEEPSEEK, "deepseek-v4", "medium", "high"), (DEEPSEEK, "deepseek-v4", "high", "high"),
    (DEEPSEEK, "deepseek-v4", "xhigh", "high"), (DEEPSEEK, "deepseek-v4", "max", "max"),
    (DEEPSEEK, "deepseek-flash", "none", "none"), (DEEPSEEK, "deepseek-flash", "max", "max"),
    (MINIMAX, "MiniMax-M3", "xhigh", "high"), (MINIMAX, "MiniMax-M3", "max", "high"),
]


@pytest.mark.parametrize(("client", "model", "level", "effort"), PINNED)
def test_pinned_efforts(client: str, model: str, level: str, effort: str) -> None:
    assert body(client, model, {"thinking_level": level})["reasoning"]["effort"] == effort


def test_generation_tokens_are_matched_case_insensitively() -> None:
    """08 D9: rows match the lower-cased id."""
    assert body(OFFICIAL, "GPT-6-Astra", {"thinking_level": "none"})["reasoning"] == {
        "effort": "low"}
    assert body(MINIMAX, "minimax-m3.1-flash", {"thinking_level": "none"})["reasoning"] == {
        "effort": "low"}


def test_no_level_sends_no_reasoning() -> None:
    for client in CLIENTS:
        assert "reasoning" not in body(client, "gpt-6-astra")


# ------------------------------------------------------------------------------------------
# thinking_summary (05 §3)
# ------------------------------------------------------------------------------------------

SUMMARY = [
    # openai-official and deepseek: summary with or without an effort
    (OFFICIAL, "gpt-5.5", {"thinking_summary": True}, {"summary": "concise"}),
    (OFFICIAL, "gpt-5.5", {"thinking_summary": True, "thinking_level": "low"},
     {"effort": "low", "summary": "concise"}),
    (OFFICIAL, "gpt-5.5", {"thinking_summary": False}, None),
    (DEEPSEEK, "deepseek-v4-pro", {"thinking_summary": True}, {"summary": "concise"}),
    (DEEPSEEK, "deepseek-v4-pro", {"thinking_summary": True, "thinking_level": "medium"},
     {"effort": "high", "summary": "concise"}),
    (DEEPSEEK, "deepseek-v4-pro", {"thinking_summary": False}, None),
    # openai-responses: only together with a level (OpenRouter reads it as "disabled")
    (RESPONSES, "gpt-5.5", {"thinking_summary": True}, None),
    (RESPONSES, "gpt-5.5", {"thinking_summary": True, "thinking_level": "high"},
     {"effort": "high", "summary": "concise"}),
    (RESPONSES, "gpt-5.5", {"thinking_summary": False, "thinking_level": "high"},
     {"effort": "high"}),
    # minimax: ignored
    (MINIMAX, "MiniMax-M3", {"thinking_summary": True}, None),
    (MINIMAX, "MiniMax-M3", {"thinking_summary": True, "thinking_level": "low"},
     {"effort": "low"}),
]


@pytest.mark.parametrize(("client", "model", "config", "reasoning"), SUMMARY)
def test_thinking_summary(client: str, model: str, config: dict[str, Any],
                          reasoning: dict[str, str] | None) -> None:
    assert body(client, model, config).get("reasoning") == reasoning


# ------------------------------------------------------------------------------------------
# Config mapping and every UnsupportedParameterError of 05 §4.2
# ------------------------------------------------------------------------------------------

REJECTED = [
    (OFFICIAL, "gpt-5.5", {"temperature": 0.5}, "temperature"),
    (DEEPSEEK, "deepseek-v4-pro", {"temperature": 0.7}, "temperature"),
    (MINIMAX, "MiniMax-M3", {"temperature": 1.5}, "temperature"),
    (MINIMAX, "MiniMax-M3", {"temperature": -0.1}, "temperature"),
    *[(client, "m", {"tool_choice": []}, "tool_choice") for client in CLIENTS],  # 08 D10
    (DEEPSEEK, "deepseek-v4-pro", {"tool_choice": "required"}, "tool_choice"),
    (DEEPSEEK, "deepseek-v4-pro", {"tool_choice": ["f"]}, "tool_choice"),
    (MINIMAX, "MiniMax-M3", {"tool_choice": "required"}, "tool_choice"),
    (MINIMAX, "MiniMax-M3", {"tool_choice": ["f"]}, "tool_choice"),
    (MINIMAX, "MiniMax-M3.1-Flash", {"tool_choice": "none"}, "tool_choice"),
    *[(client, "m", {"prompt_caching": value}, "prompt_caching")
      for client in CLIENTS for value in ("disable", "enhance")],
    (DEEPSEEK, "deepseek-v4-pro", {"fast_mode": True}, "fast_mode"),
    (MINIMAX, "MiniMax-M3.1-Flash", {"fast_mode": True}, "fast_mode"),
]


@pytest.mark.parametrize(("client", "model", "config", "parameter"), REJECTED)
def test_unsupported_parameters(client: str, model: str, config: dict[str, Any],
                                parameter: str) -> None:
    for check in (adapters.check_config, lambda *a: adapters.build_request(a[0], a[1], HELLO,
                                                                           a[2])):
        with pytest.raises(UnsupportedParameterError) as caught:
            check(client, model, config)
        assert (caught.value.client, caught.value.parameter) == (client, parameter)


def test_config_errors_come_before_message_errors() -> None:
    """02 §8: the config is checked before any message is converted."""
    only_thinking = [{"role": "assistant",
                      "content_items": [{"type": "thinking.done", "thinking": "x"}]}]
    with pytest.raises(UnsupportedParameterError):
        adapters.build_request(OFFICIAL, "gpt-5.5", only_thinking, {"temperature": 0.2})


@pytest.mark.parametrize(
    ("client", "model", "temperature", "sent"),
    [
        (OFFICIAL, "gpt-5.5", 1.0, None),
        (DEEPSEEK, "deepseek-v4-pro", 1.0, None),
        (RESPONSES, "gpt-5.5", 1.7, 1.7),
        (RESPONSES, "gpt-5.5", 0.0, 0.0),
        (MINIMAX, "MiniMax-M3", 0.0, 0.0),
        (MINIMAX, "MiniMax-M3", 1.0, 1.0),
        (MINIMAX, "MiniMax-M3.1-Flash", 0.3, 0.3),
    ],
)
def test_temperature(client: str, model: str, temperature: float, sent: float | None) -> None:
    assert body(client, model, {"temperature": temperature}).get("temperature") == sent


@pytest.mark.parametrize(
    ("client", "model", "choice", "sent"),
    [
        *[(c, "m", v, v) for c in OPENAI for v in ("auto", "none", "required")],
        *[(c, "m", ["a", "b"], {"type": "allowed_tools", "mode": "required",
                                "tools": [{"type": "function", "name": "a"},
                                          {"type": "function", "name": "b"}]})
          for c in OPENAI],
        (DEEPSEEK, "deepseek-v4-pro", "auto", "auto"),
        (DEEPSEEK, "deepseek-v4-pro", "none", "none"),
        (MINIMAX, "MiniMax-M3", "auto", "auto"),
        (MINIMAX, "MiniMax-M3", "none", "none"),
        (MINIMAX, "MiniMax-M3.1-Flash", "auto", "auto"),
    ],
)
def test_tool_choice(client: str, model: str, choice: Any, sent: Any) -> None:
    assert body(client, model, {"tool_choice": choice})["tool_choice"] == sent


@pytest.mark.parametrize(
    ("client", "model", "tier"),
    [(OFFICIAL, "gpt-5.5", "priority"), (RESPONSES, "x", "priority"),
     (MINIMAX, "MiniMax-M3", "priority")],
)
def test_fast_mode(client: str, model: str, tier: str) -> None:
    assert body(client, model, {"fast_mode": True})["service_tier"] == tier
    assert "service_tier" not in body(client, model, {"fast_mode": False})


def test_fast_mode_false_is_a_no_op_everywhere() -> None:
    for client in CLIENTS:
        assert "service_tier" not in body(client, "MiniMax-M3.1-Flash", {"fast_mode": False})


def test_ignored_keys() -> None:
    config = {"image_config": {"aspect_ratio": "1:1"}, "tts_config": [{"voice": "Kore"}],
              "embedding_config": {"dimensions": 8}, "trace_id": "t", "unknown_key": 1,
              "prompt_caching": "enable"}
    for client in CLIENTS:
        with pytest.warns(UserWarning, match="ignores the config key 'unknown_key'"):  # D57
            sent = body(client, "m", config)
        assert set(sent) <= {"model", "input", "stream", "store", "include"}


def test_common_keys() -> None:
    config = {"system_prompt": "Be brief.", "max_tokens": 100,
              "tools": [{"name": "f", "description": "d", "parameters": {"type": "object"}},
                        {"name": "g", "description": "e"}]}
    for client in CLIENTS:
        sent = body(client, "m", config)
        assert sent["instructions"] == "Be brief."
        assert sent["max_output_tokens"] == 100
        assert sent["tools"] == [
            {"type": "function", "name": "f", "description": "d",
             "parameters": {"type": "object"}},
            {"type": "function", "name": "g", "description": "e"},
        ]
        assert (sent["stream"], sent["store"]) == (True, False)
        assert ("include" in sent) == (client == OFFICIAL)


# ------------------------------------------------------------------------------------------
# Golden requests: method, path, headers and body bytes (spec 04 §4)
# ------------------------------------------------------------------------------------------

CONVERSATION = [
    {"role": "user", "content_items": [{"type": "text.done", "text": "Weather in Zürich?"}]},
    {"role": "assistant", "content_items": [
        {"type": "thinking.done", "thinking": "Use the tool.",
         "fidelity": {"channel": "summary", "encrypted_content": "ENC"}},
        {"type": "text.done", "text": "Checking.", "fidelity": {"phase": "commentary"}},
        {"type": "tool_call.done", "name": "weather", "tool_call_id": "call_1",
         "arguments": {"city": "Zürich"}},
    ]},
    {"role": "user", "content_items": [
        {"type": "tool_result.done", "text": "12°C", "tool_call_id": "call_1"}]},
]
GOLDEN_CONFIG = {"system_prompt": "Be brief.", "max_tokens": 256, "thinking_level": "none",
                 "thinking_summary": True, "tools": [{"name": "weather", "description": "Get it",
                 "parameters": {"type": "object"}}], "tool_choice": "auto"}

_USER = ('{"type":"message","role":"user",'
         '"content":[{"type":"input_text","text":"Weather in Zürich?"}]}')
_CALL = ('{"type":"function_call","call_id":"call_1","name":"weather",'
         '"arguments":"{\\"city\\":\\"Zürich\\"}"}')
_RESULT = '{"type":"function_call_output","call_id":"call_1","output":"12°C"}'
_TOOLS = ('"tools":[{"type":"function","name":"weather","description":"Get it",'
          '"parameters":{"type":"object"}}],"tool_choice":"auto"')

GOLDEN = {
    OFFICIAL: (
        "gpt-6-astra",
        '{"model":"gpt-6-astra","input":[' + _USER + ','
        '{"type":"reasoning","summary":[{"type":"summary_text","text":"Use the tool."}],'
        '"encrypted_content":"ENC"},'
        '{"type":"message","role":"assistant","content":[{"type":"output_text",'
        '"text":"Checking."}],"phase":"commentary"},' + _CALL + ',' + _RESULT + '],'
        '"stream":true,"store":false,"include":["reasoning.encrypted_content"],'
        '"instructions":"Be brief.","max_output_tokens":256,'
        '"reasoning":{"effort":"low","summary":"concise"},' + _TOOLS + '}',
    ),
    RESPONSES: (
        "openai/gpt-5.5",
        '{"model":"openai/gpt-5.5","input":[' + _USER + ','
        '{"type":"reasoning","summary":[{"type":"summary_text","text":"Use the tool."}],'
        '"encrypted_content":"ENC"},'
        '{"type":"message","role":"assistant","content":[{"type":"output_text",'
        '"text":"Checking."}],"phase":"commentary"},' + _CALL + ',' + _RESULT + '],'
        '"stream":true,"store":false,"instructions":"Be brief.","max_output_tokens":256,'
        '"reasoning":{"effort":"none","summary":"concise"},' + _TOOLS + '}',
    ),
    DEEPSEEK: (
        "deepseek-v4-pro",
        '{"model":"deepseek-v4-pro","input":[' + _USER + ','
        '{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text",'
        '"text":"Use the tool."}]},'
        '{"type":"message","role":"assistant","content":[{"type":"output_text",'
        '"text":"Checking."}]},' + _CALL + ',' + _RESULT + '],'
        '"stream":true,"store":false,"instructions":"Be brief.","max_output_tokens":256,'
        '"reasoning":{"effort":"none","summary":"concise"},' + _TOOLS + '}',
    ),
    MINIMAX: (
        "MiniMax-M3",
        '{"model":"MiniMax-M3","input":[' + _USER + ','
        '{"type":"reasoning","content":[{"type":"reasoning_text","text":"Use the tool."}]},'
        '{"type":"message","role":"assistant","content":[{"type":"output_text",'
        '"text":"Checking."}]},' + _CALL + ',' + _RESULT + '],'
        '"stream":true,"store":false,"instructions":"Be brief.","max_output_tokens":256,'
        '"reasoning":{"effort":"none"},' + _TOOLS + '}',
    ),
}


@pytest.mark.parametrize("client", CLIENTS)
def test_golden_request(client: str) -> None:
    model, expected = GOLDEN[client]
    request = adapters.build_request(client, model, CONVERSATION, GOLDEN_CONFIG)
    assert request.method == "POST"
    assert request.path == "/responses"
    assert request.headers == (("content-type", "application/json"),
                               ("accept", "text/event-stream"))
    assert request.body == expected.encode("utf-8")


def test_no_credentials_in_headers() -> None:
    for client in CLIENTS:
        names = {name.lower() for name, _ in adapters.build_request(client, "m", HELLO, {}).headers}
        assert not names & {"authorization", "x-api-key", "api-key"}


# ------------------------------------------------------------------------------------------
# Message conversion (05 §5)
# ------------------------------------------------------------------------------------------

def text(value: str, phase: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "text.done", "text": value}
    if phase is not None:
        item["fidelity"] = {"phase": phase}
    return item


def assistant(*items: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content_items": list(items)}


def user(*items: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content_items": list(items)}


def out_message(*texts: str, phase: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "message", "role": "assistant",
                             "content": [{"type": "output_text", "text": t} for t in texts]}
    if phase is not None:
        entry["phase"] = phase
    return entry


@pytest.mark.parametrize("client", OPENAI)
def test_assistant_text_is_split_by_phase(client: str) -> None:
    history = [assistant(text("a", "commentary"), text("b", "commentary"),
                         text("c", "final_answer"), text("d"))]
    assert inputs(client, history) == [
        out_message("a", "b", phase="commentary"),
        out_message("c", phase="final_answer"),
        out_message("d"),
    ]


@pytest.mark.parametrize("client", [DEEPSEEK, MINIMAX])
def test_other_clients_send_no_phase(client: str) -> None:
    history = [assistant(text("a", "commentary"), text("c", "final_answer"))]
    assert inputs(client, history) == [out_message("a", "c")]


def test_items_keep_their_order() -> None:
    call = {"type": "tool_call.done", "name": "f", "tool_call_id": "c1", "arguments": {}}
    history = [assistant(text("before"), call, text("after"))]
    assert inputs(OFFICIAL, history) == [
        out_message("before"),
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        out_message("after"),
    ]


def test_user_text_and_images_share_one_message() -> None:
    history = [user(text("look"), {"type": "image_url.done", "image_url": "https://x/a.png"})]
    assert inputs(RESPONSES, history) == [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "https://x/a.png"},
    ]}]


def test_tool_result_with_images_is_a_content_list() -> None:
    result = {"type": "tool_result.done", "text": "chart", "tool_call_id": "c1",
              "images": ["https://x/c.png"]}
    assert inputs(MINIMAX, [user(result)]) == [{"type": "function_call_output", "call_id": "c1",
                                                "output": [
        {"type": "input_text", "text": "chart"},
        {"type": "input_image", "image_url": "https://x/c.png"},
    ]}]


def thinking(value: str, fidelity: dict[str, Any] | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "thinking.done", "thinking": value}
    if fidelity is not None:
        item["fidelity"] = fidelity
    return item


REPLAY = [
    # openai-official: the recorded channel, or summary for a history with only encrypted content
    (OFFICIAL, thinking("t", {"channel": "summary", "encrypted_content": "E", "signature": "S",
                              "format": "F"}),
     {"type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}],
      "encrypted_content": "E", "signature": "S", "format": "F"}),
    (OFFICIAL, thinking("t", {"channel": "content"}),
     {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "t"}]}),
    (OFFICIAL, thinking("t", {"encrypted_content": "E"}),
     {"type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}],
      "encrypted_content": "E"}),
    (OFFICIAL, thinking("", {"encrypted_content": "E"}),
     {"type": "reasoning", "summary": [], "encrypted_content": "E"}),
    (OFFICIAL, thinking("t"),
     {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "t"}]}),
    # openai-responses: summary only for channel "summary"
    (RESPONSES, thinking("t", {"encrypted_content": "E"}),
     {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "t"}],
      "encrypted_content": "E"}),
    (RESPONSES, thinking("t", {"channel": "summary"}),
     {"type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}]}),
    # deepseek and minimax: rebuilt from the text alone
    (DEEPSEEK, thinking("t", {"channel": "summary", "encrypted_content": "E"}),
     {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "t"}]}),
    (MINIMAX, thinking("t", {"channel": "summary", "encrypted_content": "E"}),
     {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "t"}]}),
    (MINIMAX, thinking(""), {"type": "reasoning", "content": []}),
]


@pytest.mark.parametrize(("client", "item", "sent"), REPLAY)
def test_reasoning_replay(client: str, item: dict[str, Any], sent: dict[str, Any]) -> None:
    assert inputs(client, [assistant(item, text("ok"))])[0] == sent


def test_tool_call_arguments_keep_non_ascii() -> None:
    call = {"type": "tool_call.done", "name": "f", "tool_call_id": "c", "arguments": {"q": "東京"}}
    assert inputs(DEEPSEEK, [assistant(call)])[0]["arguments"] == '{"q":"東京"}'


@pytest.mark.parametrize(
    ("messages", "item_type", "index"),
    [
        ([HELLO[0], assistant(thinking("only thinking"))], None, 1),
        ([HELLO[0], assistant(thinking("x", {"encrypted_content": "E", "channel": "summary"}))],
         None, 1),
        ([user(text("a")), assistant()], None, 1),
        ([user({"type": "inline_data.done", "data": "AAAA", "mime_type": "audio/wav"})],
         "inline_data", 0),
        ([user({"type": "inline_thinking.done", "data": "AAAA", "mime_type": "image/png"})],
         "inline_thinking", 0),
        ([user(text("a"), {"type": "embedding.done", "embedding": [0.5]})], "embedding", 0),
        ([user({"type": "tool_result.done", "text": "r", "tool_call_id": ""})], "tool_result", 0),
        ([user({"type": "image_url.done", "image_url": "data:image/png;base64,@@@"})],
         "image_url", 0),
    ],
    ids=["only-thinking", "only-signed-thinking", "empty", "inline-data", "inline-thinking",
         "embedding", "result-without-id", "bad-data-uri"],
)
def test_invalid_messages(messages: list[dict[str, Any]], item_type: str | None,
                          index: int) -> None:
    for client in CLIENTS:
        with pytest.raises(InvalidMessageError) as caught:
            adapters.build_request(client, "m", messages, {})
        assert caught.value.client == client
        assert caught.value.message_index == index
        assert caught.value.item_type == item_type


def png_uri(width: int, height: int) -> str:
    ihdr = struct.pack(">II5B", width, height, 8, 6, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\0\0\0\0"
    return "data:image/png;base64," + base64.b64encode(data).decode()


BIG, SMALL = png_uri(8000, 8000), png_uri(1000, 1000)  # 62,500 and 1,024 patches


@pytest.mark.parametrize(
    ("client", "model", "url", "detail"),
    [
        (OFFICIAL, "gpt-5.6-sol", BIG, "high"),
        (RESPONSES, "openai/GPT-5.6-terra", BIG, "high"),
        (OFFICIAL, "gpt-5.6-sol", SMALL, None),
        (OFFICIAL, "gpt-5.6-sol", "https://x/huge.png", None),  # URLs are not measured
        (OFFICIAL, "gpt-5.5", BIG, None),
        (DEEPSEEK, "deepseek-flash", BIG, None),
        (MINIMAX, "MiniMax-M3", BIG, None),
    ],
)
def test_image_detail(client: str, model: str, url: str, detail: str | None) -> None:
    """05 §5: detail "high" only for GPT-5.6 data-URI images over 30,000 patches."""
    image = {"type": "image_url.done", "image_url": url}
    result = {"type": "tool_result.done", "text": "r", "tool_call_id": "c", "images": [url]}
    sent = inputs(client, [user(image, result)], model)
    assert sent[0]["content"][0].get("detail") == detail
    assert sent[1]["output"][1].get("detail") == detail


@pytest.mark.parametrize("model", ["deepseek-v4-flash", "deepseek-v4-pro", "deepseek-v4-pro-0731",
                                   "deepseek/deepseek-v4-pro"])
def test_text_only_deepseek_rejects_images(model: str) -> None:
    image = {"type": "image_url.done", "image_url": "https://x/a.png"}
    result = {"type": "tool_result.done", "text": "r", "tool_call_id": "c",
              "images": ["https://x/a.png"]}
    for item, item_type in ((image, "image_url"), (result, "tool_result")):
        with pytest.raises(UnsupportedContentError) as caught:
            adapters.build_request(DEEPSEEK, model, [user(item)], {})
        assert caught.value.item_type == item_type


@pytest.mark.parametrize("model", ["deepseek-flash", "deepseek-v4-flash-vision-exp",
                                   "deepseek/deepseek-v4.1-flash"])
def test_vision_deepseek_takes_images(model: str) -> None:
    image = {"type": "image_url.done", "image_url": "https://x/a.png"}
    assert inputs(DEEPSEEK, [user(image)], model)[0]["content"] == [
        {"type": "input_image", "image_url": "https://x/a.png"}]


@pytest.mark.parametrize("model", ["text-embedding-3-small", "Text-Embedding-3-Large"])
def test_an_embedding_model_on_openai_official_names_the_protocol_it_needs(model: str) -> None:
    """An embedding id is no Responses model: the openai-embedding protocol serves it, so the
    request is refused before anything is built (04 §2), on build_request and check_config
    alike (tests/adapters/test_clients.py checks the message on every entry)."""
    for call in (
        lambda: adapters.build_request(OFFICIAL, model, HELLO, {}),
        lambda: adapters.check_config(OFFICIAL, model, {}),
    ):
        with pytest.raises(UnsupportedOperationError) as caught:
            call()
        assert caught.value.client == OFFICIAL
        assert "openai-embedding" in str(caught.value)


def test_an_embedding_looking_id_elsewhere_is_a_responses_model() -> None:
    assert body(OFFICIAL, "qwen3.7-text-embedding")["model"] == "qwen3.7-text-embedding"
    assert body(RESPONSES, "text-embedding-3-small")["model"] == "text-embedding-3-small"
