"""MMSP wire JSON: the seed's exact shape, lossless round trips, path-naming errors.

Expectations come from the seed "流式" (the two example events), spec 01 (field names, bytes
as base64), spec 03 §3 (error wire form) and 09 (``WireFormatError(path, reason)``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_errors import ERROR_NAMES, SPEC_FIELDS, error_instances, sample

from mmsp_core import (
    FinishReason,
    InlineDataDone,
    MMSPError,
    TextDelta,
    TextDone,
    ThinkingDelta,
    UniConfig,
    UniEvent,
    UniMessage,
    UpstreamError,
    UsageMetadata,
    WireFormatError,
    config_from_wire,
    error_from_wire,
    event_from_wire,
    message_from_wire,
    to_wire,
)
from mmsp_core.testing.strategies import (
    Edit,
    apply_edits,
    configs,
    done_items,
    edits,
    hostile_json,
    messages,
    public_events,
    usage,
)
from mmsp_core.wire import usage_from_wire

# The seed's two example events, byte for byte.
SEED_DELTA = (
    '{"role": "assistant", "event_type": "delta", "content_items": [{"type": "text.delta", '
    '"text": "Hel"}], "usage_metadata": null, "finish_reason": null, "created_at": 1694502400000}'
)
SEED_STOP = (
    '{"role": "assistant", "event_type": "stop", "content_items": [], "usage_metadata": '
    '{"cached_tokens": 0, "prompt_tokens": 10, "thoughts_tokens": null, "response_tokens": 5}, '
    '"finish_reason": "stop", "created_at": 1694502400100}'
)
# Spec 01 §3's examples (compact separators).
SPEC_DELTA = (
    '{"role":"assistant","event_type":"delta","content_items":[{"type":"thinking.delta",'
    '"thinking":"","fidelity":{"signature":"abc"}}],"usage_metadata":null,"finish_reason":null,'
    '"created_at":1760000000123}'
)
SPEC_STOP = (
    '{"role":"assistant","event_type":"stop","content_items":[],"usage_metadata":'
    '{"cached_tokens":null,"prompt_tokens":12,"thoughts_tokens":40,"response_tokens":7},'
    '"finish_reason":"tool_call","created_at":1760000000456}'
)


def through_json(value: Any) -> Any:
    """``to_wire`` then a real JSON text and back."""
    return json.loads(json.dumps(to_wire(value)))


# -- the seed's shape -------------------------------------------------------------------------


def test_seed_examples_parse_to_the_values_they_describe() -> None:
    assert event_from_wire(json.loads(SEED_DELTA)) == UniEvent(
        "delta", (TextDelta("Hel"),), None, None, 1694502400000
    )
    stop = event_from_wire(json.loads(SEED_STOP))
    usage = UsageMetadata(0, 10, None, 5)
    assert stop == UniEvent("stop", (), usage, FinishReason.STOP, 1694502400100)
    assert stop.usage_metadata is not None and stop.usage_metadata.cached_tokens == 0
    assert event_from_wire(json.loads(SPEC_DELTA)) == UniEvent(
        "delta", (ThinkingDelta("", {"signature": "abc"}),), None, None, 1760000000123
    )
    assert event_from_wire(json.loads(SPEC_STOP)).finish_reason == "tool_call"


@pytest.mark.parametrize("text", [SEED_DELTA, SEED_STOP])
def test_seed_examples_serialize_exactly(text: str) -> None:
    assert json.dumps(to_wire(event_from_wire(json.loads(text)))) == text


@pytest.mark.parametrize("text", [SPEC_DELTA, SPEC_STOP])
def test_spec_examples_serialize_exactly(text: str) -> None:
    compact = json.dumps(to_wire(event_from_wire(json.loads(text))), separators=(",", ":"))
    assert compact == text


def test_bytes_travel_as_base64() -> None:
    item = InlineDataDone(b"\x00\xff\x10", "audio/wav", {"signature": "s"})
    assert to_wire(item) == {
        "type": "inline_data.done",
        "data": "AP8Q",
        "mime_type": "audio/wav",
        "fidelity": {"signature": "s"},
    }
    message = message_from_wire({"role": "assistant", "content_items": [to_wire(item)]})
    assert message.content_items == (item,)


def test_a_message_needs_only_role_and_content_items() -> None:
    wire = {"role": "user", "content_items": [{"type": "text.done", "text": "hi"}]}
    message = message_from_wire(wire)
    assert message == UniMessage("user", (TextDone("hi"),), None, None, None)
    assert to_wire(message) == wire


def test_config_keeps_unknown_keys_in_extra_and_sends_them_back() -> None:
    config = config_from_wire({"max_tokens": 5, "x_vendor": {"a": [1]}, "thinking_level": "high"})
    assert config == UniConfig(max_tokens=5, thinking_level="high", extra={"x_vendor": {"a": [1]}})
    assert to_wire(config) == {"max_tokens": 5, "thinking_level": "high", "x_vendor": {"a": [1]}}
    assert to_wire(UniConfig()) == {}


# -- round trips --------------------------------------------------------------------------------


@given(public_events())
def test_events_round_trip(event: UniEvent) -> None:
    assert event_from_wire(through_json(event)) == event


@given(messages())
def test_messages_round_trip(message: UniMessage) -> None:
    assert message_from_wire(through_json(message)) == message


@given(done_items())
def test_done_items_round_trip(item: Any) -> None:
    wire = through_json(item)
    assert wire["type"] == item.type
    assert message_from_wire({"role": "user", "content_items": [wire]}).content_items == (item,)


@given(configs())
def test_configs_round_trip(config: UniConfig) -> None:
    assert config_from_wire(through_json(config)) == config


@given(usage())
def test_usage_round_trips_with_all_four_keys(value: UsageMetadata) -> None:
    wire = through_json(value)
    assert list(wire) == ["cached_tokens", "prompt_tokens", "thoughts_tokens", "response_tokens"]
    assert usage_from_wire(wire) == value


@given(error_instances())
def test_errors_round_trip(error: MMSPError) -> None:
    back = error_from_wire(through_json(error))
    assert type(back) is type(error)
    assert to_wire(back) == to_wire(error)
    assert str(back) == str(error)


# -- the error wire form (spec 03 §3) -------------------------------------------------------------


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_error_wire_form(name: str) -> None:
    error = sample(name, detail="why")
    wire = to_wire(error)
    assert list(wire) == ["error"]
    inner = wire["error"]
    assert list(inner)[:2] == ["type", "message"]
    assert (inner["type"], inner["message"], inner["detail"]) == (name, str(error), "why")
    assert set(inner) == {"type", "message", *SPEC_FIELDS[name], "detail"}
    for field in SPEC_FIELDS[name]:
        value = getattr(error, field)
        if isinstance(value, UsageMetadata):
            assert inner[field] == {
                "cached_tokens": 1,
                "prompt_tokens": 2,
                "thoughts_tokens": 3,
                "response_tokens": 4,
            }
        elif isinstance(value, tuple):
            assert inner[field] == list(value)
        else:
            assert inner[field] == value
    json.dumps(wire)


def test_routing_error_has_no_client_key() -> None:
    assert "client" not in to_wire(sample("RoutingError"))["error"]


def test_an_unknown_error_type_comes_back_as_upstream_error_holding_the_object() -> None:
    body = {"error": {"type": "AuthenticationError", "message": "bad key", "status": 401}}
    error = error_from_wire(json.loads(json.dumps(body)))
    assert isinstance(error, UpstreamError)
    assert error.error_type == "AuthenticationError"
    assert error.status == 401
    assert error.error == body["error"]
    assert "bad key" in str(error)


def test_incomplete_stream_error_fields_survive_the_wire() -> None:
    wire = {
        "error": {
            "type": "IncompleteStreamError",
            "message": "x's stream ended without finish_reason.",
            "client": "x",
            "missing": ["finish_reason"],
            "finish_reason": None,
            "usage_metadata": {"cached_tokens": None, "prompt_tokens": 3},
            "detail": None,
        }
    }
    error = error_from_wire(wire)
    assert error.missing == ("finish_reason",)
    assert error.usage_metadata == UsageMetadata(None, 3, None, None)
    assert error.retryable


# -- malformed input names the path -------------------------------------------------------------


def _event(**fields: Any) -> dict[str, Any]:
    return {"event_type": "delta", "content_items": [], **fields}


def _item(**fields: Any) -> dict[str, Any]:
    return _event(content_items=[fields])


BAD: list[tuple[Callable[[Any], Any], Any, str]] = [
    (event_from_wire, [], "event"),
    (event_from_wire, _event(role="user"), "event.role"),
    (event_from_wire, _event(event_type="middle"), "event.event_type"),
    (event_from_wire, {"event_type": "delta"}, "event.content_items"),
    (event_from_wire, _event(content_items=["x"]), "event.content_items[0]"),
    (event_from_wire, _event(created_at="now"), "event.created_at"),
    (event_from_wire, _event(created_at=True), "event.created_at"),
    (event_from_wire, _event(finish_reason="done"), "event.finish_reason"),
    (event_from_wire, _event(usage_metadata=[]), "event.usage_metadata"),
    (
        event_from_wire,
        _event(usage_metadata={"prompt_tokens": "5"}),
        "event.usage_metadata.prompt_tokens",
    ),
    (event_from_wire, _item(type="text.delta", text=5), "event.content_items[0].text"),
    (event_from_wire, _item(type="text.delta"), "event.content_items[0].text"),
    (event_from_wire, _item(type="text.partial", text=""), "event.content_items[0].type"),
    (event_from_wire, _item(text="a"), "event.content_items[0].type"),
    (
        event_from_wire,
        _item(type="text.delta", text="", fidelity=["s"]),
        "event.content_items[0].fidelity",
    ),
    (
        event_from_wire,
        _item(type="tool_call.delta", tool_call_id="c", arguments=""),
        "event.content_items[0].name",
    ),
    (
        event_from_wire,
        _item(type="inline_data.delta", data="not base64!", mime_type="audio/wav"),
        "event.content_items[0].data",
    ),
    (
        event_from_wire,
        _item(type="inline_data.delta", data="AP8Q", mime_type=None),
        "event.content_items[0].mime_type",
    ),
    (
        event_from_wire,
        _item(type="embedding.delta", embedding=[1.0, "2"]),
        "event.content_items[0].embedding[1]",
    ),
    (
        event_from_wire,
        _item(type="embedding.delta", embedding=[10**400]),
        "event.content_items[0].embedding[0]",
    ),
    (message_from_wire, {"content_items": []}, "message.role"),
    (message_from_wire, {"role": "system", "content_items": []}, "message.role"),
    (message_from_wire, {"role": "user"}, "message.content_items"),
    (
        message_from_wire,
        {"role": "user", "content_items": [{"type": "text.delta", "text": "a"}]},
        "message.content_items[0].type",
    ),
    (
        message_from_wire,
        {
            "role": "assistant",
            "content_items": [
                {"type": "text.done", "text": "a"},
                {"type": "tool_call.done", "name": "f", "tool_call_id": "c", "arguments": "{}"},
            ],
        },
        "message.content_items[1].arguments",
    ),
    (
        message_from_wire,
        {
            "role": "user",
            "content_items": [{"type": "tool_result.done", "text": "", "tool_call_id": "c",
                               "images": [1]}],
        },
        "message.content_items[0].images",
    ),
    (
        message_from_wire,
        {"role": "user", "content_items": [], "created_at": 1.5},
        "message.created_at",
    ),
    (
        message_from_wire,
        {"role": "user", "content_items": [], "finish_reason": "halt"},
        "message.finish_reason",
    ),
    (config_from_wire, [], "config"),
    (config_from_wire, {"thinking_level": "extreme"}, "config.thinking_level"),
    (config_from_wire, {"prompt_caching": "sometimes"}, "config.prompt_caching"),
    (config_from_wire, {"max_tokens": "10"}, "config.max_tokens"),
    (config_from_wire, {"max_tokens": True}, "config.max_tokens"),
    (config_from_wire, {"max_tokens": 0}, "config.max_tokens"),
    (config_from_wire, {"max_tokens": -1}, "config.max_tokens"),
    (config_from_wire, {"max_tokens": 2**31}, "config.max_tokens"),
    (config_from_wire, {"max_tokens": 2**70}, "config.max_tokens"),
    (config_from_wire, {"temperature": float("nan")}, "config.temperature"),
    (config_from_wire, {"temperature": float("-inf")}, "config.temperature"),
    (config_from_wire, {"extra_body": [1]}, "config.extra_body"),
    (config_from_wire, {"extra_body": "x"}, "config.extra_body"),
    (config_from_wire, {"temperature": "hot"}, "config.temperature"),
    (config_from_wire, {"temperature": 10**400}, "config.temperature"),
    (config_from_wire, {"thinking_summary": "yes"}, "config.thinking_summary"),
    (config_from_wire, {"tools": {}}, "config.tools"),
    (config_from_wire, {"tools": [{"description": "d"}]}, "config.tools[0].name"),
    (config_from_wire, {"tools": [{"name": "f", "parameters": []}]}, "config.tools[0].parameters"),
    (config_from_wire, {"tool_choice": 5}, "config.tool_choice"),
    (config_from_wire, {"tool_choice": "sometimes"}, "config.tool_choice"),
    (config_from_wire, {"tool_choice": ["f", 1]}, "config.tool_choice"),
    (config_from_wire, {"tts_config": [{"speaker": "a"}]}, "config.tts_config[0].voice"),
    (config_from_wire, {"image_config": "wide"}, "config.image_config"),
    (
        config_from_wire,
        {"embedding_config": {"dimensions": 1.5}},
        "config.embedding_config.dimensions",
    ),
    (error_from_wire, [], "error_body"),
    (error_from_wire, {"detail": "x"}, "error"),
    (error_from_wire, {"error": {"message": "m"}}, "error.type"),
]


@pytest.mark.parametrize(("read", "value", "path"), BAD, ids=[p for _, _, p in BAD])
def test_malformed_input_raises_wire_format_error_naming_the_path(
    read: Callable[[Any], Any], value: Any, path: str
) -> None:
    with pytest.raises(WireFormatError) as info:
        read(value)
    assert info.value.path == path
    assert info.value.reason
    assert str(info.value).startswith(path)


@pytest.mark.parametrize(
    "inner",
    [
        {"type": "StreamProtocolError"},
        {"type": "StreamProtocolError", "client": 5},
        {"type": "StreamLimitError", "what": "line", "limit": "10", "size": 11},
        {"type": "IncompleteStreamError", "client": "c", "missing": "usage_metadata"},
        {"type": "IncompleteStreamError", "client": "c", "missing": [1]},
        {"type": "IncompleteStreamError", "client": "c", "missing": [], "usage_metadata": 5},
        {"type": "UpstreamError", "client": "c", "error": "text"},
        {"type": "InvalidMessageError", "client": "c", "message_index": "0"},
        {"type": "StreamTimeoutError", "client": "c", "which": "idle", "seconds": "10"},
        {"type": "ApiKeyRequiredError", "client": "c", "client_type": "c", "api_key_env": "K",
         "base_url_env": "U", "base_url": None, "detail": 3},
    ],
    ids=[
        "missing-client",
        "client-int",
        "limit-str",
        "missing-str",
        "missing-int",
        "usage-int",
        "error-str",
        "index-str",
        "seconds-str",
        "detail-int",
    ],
)
def test_error_fields_of_the_wrong_type_raise_wire_format_error(inner: dict[str, Any]) -> None:
    with pytest.raises(WireFormatError) as info:
        error_from_wire({"error": {"message": "m", **inner}})
    assert info.value.path.startswith("error")


@given(st.sampled_from(["WireFormatError", "StreamLimitError", "UpstreamError"]).flatmap(
    lambda name: error_instances([name])
))
def test_an_error_read_from_the_wire_is_returned_not_raised(error: MMSPError) -> None:
    assert type(error_from_wire(to_wire(error))) is type(error)


# --------------------------------------------------------------------------------------------
# Any JSON value: only WireFormatError (08 D59)
# --------------------------------------------------------------------------------------------


def test_an_unhashable_item_type_is_a_wire_format_error() -> None:
    with pytest.raises(WireFormatError) as info:
        message_from_wire({"role": "user", "content_items": [{"type": ["x"]}]})
    assert info.value.path == "message.content_items[0].type"


#: Each reader with valid documents to start from: the edits then reach every field it reads.
_READERS: list[tuple[Callable[[Any], Any], st.SearchStrategy[Any]]] = [
    (event_from_wire, public_events().map(to_wire)),
    (message_from_wire, messages().map(to_wire)),
    (config_from_wire, configs().map(to_wire)),
    (error_from_wire, error_instances().map(to_wire)),
]


@given(
    reader=st.sampled_from(range(len(_READERS))).flatmap(
        lambda i: st.tuples(st.just(i), _READERS[i][1]).flatmap(
            lambda pair: st.tuples(st.just(pair[0]), st.just(pair[1]), edits(pair[1]))
        )
    )
)
def test_the_readers_raise_only_wire_format_error(reader: tuple[int, Any, list[Edit]]) -> None:
    """Any JSON value at any path of a valid document (08 D59)."""
    index, document, changes = reader
    read = _READERS[index][0]
    with contextlib.suppress(WireFormatError):
        read(apply_edits(document, changes, build=True))


@given(value=hostile_json())
def test_any_json_value_as_the_document_raises_only_wire_format_error(value: Any) -> None:
    document = apply_edits(None, [((), value)], build=True)
    for read, _ in _READERS:
        with contextlib.suppress(WireFormatError):
            read(document)


# --------------------------------------------------------------------------------------------
# What a reason says (08 D58, D68, D69): what was wrong and what is accepted
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "reason"), [
    ({"thinking_level": "extreme"},
     "unknown value 'extreme'; accepted: none, low, medium, high, xhigh, max"),
    ({"prompt_caching": "x"}, "unknown value 'x'; accepted: enable, disable, enhance"),
    ({"max_tokens": "100"}, "expected an integer from 1 to 2147483647, got '100'"),
    ({"max_tokens": 0}, "expected an integer from 1 to 2147483647, got 0"),
    ({"temperature": float("inf")}, "expected a finite number, got inf"),
    ({"system_prompt": 5}, "expected a string, got 5"),
])
def test_a_config_reason_says_what_was_given_and_what_is_accepted(
    value: dict[str, Any], reason: str
) -> None:
    with pytest.raises(WireFormatError) as info:
        config_from_wire(value)
    assert info.value.reason == reason


def test_a_system_role_says_where_system_text_goes() -> None:
    with pytest.raises(WireFormatError) as info:
        message_from_wire({"role": "system", "content_items": []})
    assert info.value.path == "message.role"
    assert "system_prompt" in info.value.reason


def test_the_bounds_of_max_tokens_are_accepted() -> None:
    assert config_from_wire({"max_tokens": 1}).max_tokens == 1
    assert config_from_wire({"max_tokens": 2**31 - 1}).max_tokens == 2**31 - 1


def test_extra_body_travels_in_the_wire_form() -> None:
    config = UniConfig(max_tokens=5, extra_body={"seed": 7, "nested": {"a": [1]}})
    wire = to_wire(config)
    assert wire == {"max_tokens": 5, "extra_body": {"seed": 7, "nested": {"a": [1]}}}
    assert config_from_wire(wire) == config
    assert config_from_wire({"extra_body": None}).extra_body is None
