"""The mmsp protocol: the request to an MMSP server and the pass-through of its public stream
(spec 07 §4, §6; 06 §8; 05 §4.5; 03 §3, §5; 08 D13, D56, D57, D58, D59).

The bodies under ``tests/fixtures/mmsp`` were rendered by ``adapters.render("mmsp", ...)`` (and
cut or given an error event as a server does) and run through every check of
``adapters.testing.check_protocol``; hand-written bodies run whole, byte by byte and in random
chunkings (``decode_every_way``), which must all agree.
"""

from __future__ import annotations

import base64
import json
import warnings
from typing import Any

import pytest
from harness import FIXTURES, decode_every_way

import adapters
from adapters.mmsp import simulate
from adapters.mmsp.machine import MMSPMachine
from adapters.mmsp.render import DONE, error_event, normalize
from adapters.testing import ProtocolCheck, protocol_checks
from mmsp_core import (
    EmptyResponseError,
    IncompleteStreamError,
    MalformedEventError,
    PassThrough,
    ProviderStreamError,
    StreamPipeline,
    UnknownEventError,
    UpstreamError,
)
from mmsp_core.model import (
    FinishReason,
    ImageUrlDone,
    InlineDataDelta,
    InlineDataDone,
    TextDelta,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.testing import run
from mmsp_core.wire import event_from_wire, to_wire

SOURCE = "mmsp"
USAGE = UsageMetadata(cached_tokens=1, prompt_tokens=12, thoughts_tokens=None, response_tokens=4)
ANSWER = (ThinkingDone("Let me see.", {"signature": "c2ln"}), TextDone("Hi there"))

CHECKS: list[ProtocolCheck] = protocol_checks(SOURCE, FIXTURES / "mmsp")


@pytest.mark.parametrize("check", CHECKS, ids=[check.id for check in CHECKS])
def test_protocol_check(check: ProtocolCheck) -> None:
    check.run()


# --------------------------------------------------------------------------------------------
# The request (07 §4, §6; 05 §4.5; 08 D57, D58)
# --------------------------------------------------------------------------------------------


def request_body(messages: Any, config: Any = None, **options: Any) -> dict[str, Any]:
    request = adapters.build_request(SOURCE, "served-model", messages, config, **options)
    assert (request.method, request.path) == ("POST", "/stream")
    assert dict(request.headers) == {
        "content-type": "application/json", "accept": "text/event-stream"
    }
    body: dict[str, Any] = json.loads(request.body)
    return body


def test_the_body_is_model_messages_and_config_with_bytes_as_base64() -> None:
    image = InlineDataDone(b"\x89PNG\x00", "image/png")
    question = UniMessage("user", (TextDone("Où est la tour ?"), image), created_at=5)
    request = adapters.build_request(SOURCE, "served-model", [question], {"max_tokens": 50})
    assert "Où est la tour ?".encode() in request.body  # UTF-8, non-ASCII not escaped
    assert json.loads(request.body) == {
        "model": "served-model",
        "messages": [{
            "role": "user",
            "content_items": [
                {"type": "text.done", "text": "Où est la tour ?"},
                {"type": "inline_data.done", "data": base64.b64encode(b"\x89PNG\x00").decode(),
                 "mime_type": "image/png"},
            ],
            "created_at": 5,
        }],
        "config": {"max_tokens": 50},
    }


def test_the_config_is_forwarded_verbatim_unknown_keys_and_extra_body_included() -> None:
    config = {
        "temperature": 0.5,
        "tools": [{"name": "get_weather", "description": "d", "parameters": {"type": "object"}}],
        "thinking_level": "high",
        "trace_id": "runs/1",
        "extra_body": {"top_k": 3},
        "vendor_option": {"nested": [1, 2]},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # forwarded, not ignored: nothing to warn about (D57)
        body = request_body([UniMessage.user("hi")], config)
        strict = request_body([UniMessage.user("hi")], config, strict=True)
        adapters.check_config(SOURCE, "served-model", config, strict=True)
    assert body["config"] == strict["config"] == config
    assert set(body) == {"model", "messages", "config"}  # extra_body stays in the config


def test_a_config_value_is_the_servers_to_refuse() -> None:
    # temperature on a GPT-6 row is the server's UnsupportedParameterError event (07 §4).
    adapters.check_config(SOURCE, "gpt-6", {"temperature": 0.5, "fast_mode": True})
    assert request_body([UniMessage.user("hi")], UniConfig())["config"] == {}


def test_messages_are_sent_as_given_even_empty_ones() -> None:
    # The server's client checks messages (08 D58): no base preflight here.
    assert request_body([])["messages"] == []
    assert request_body([UniMessage("user", ())])["messages"] == [
        {"role": "user", "content_items": []}
    ]
    odd = UniMessage("user", (TextDone(5), {"type": "text.done", "text": "raw"}))  # type: ignore[arg-type]
    assert request_body([odd])["messages"][0]["content_items"] == [
        {"type": "text.done", "text": 5}, {"type": "text.done", "text": "raw"}
    ]


def test_history_keeps_usage_finish_reason_and_tool_items() -> None:
    call = ToolCallDone("get_weather", "call_1", {"city": "Paris"}, {"signature": "s"})
    turn = [
        UniMessage.user("Weather?"),
        UniMessage("assistant", (call,), USAGE, FinishReason.TOOL_CALL, 7),
        UniMessage("user", (ToolResultDone("18 C", "call_1"),)),
    ]
    assert request_body(turn)["messages"] == [to_wire(message) for message in turn]


# --------------------------------------------------------------------------------------------
# The stream (06 §8, 03 §5, 08 D13, D56, D59)
# --------------------------------------------------------------------------------------------


def data(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def event(item: Any = None, *, stop: bool = False, at: int | None = 1, **fields: Any) -> bytes:
    """One public event as a server writes it."""
    payload = to_wire(UniEvent("stop", (), USAGE, FinishReason.STOP, at) if stop
                      else UniEvent("delta", (item,), None, None, at))
    return data({**payload, **fields})


STOP = event(stop=True)
HELLO = event(TextDelta("Hello")) + event(TextDone("Hello"))


def test_the_servers_events_pass_unchanged() -> None:
    body = adapters.render(SOURCE, ANSWER, USAGE, "stop", fragment_size=3)
    sent = [event_from_wire(json.loads(line[6:])) for line in body.split(b"\n\n")[:-2]]
    events, error = decode_every_way(SOURCE, body)
    assert error is None
    assert events == sent  # deltas, done items and the stop, created_at as the server stamped


def test_inline_bytes_are_decoded_from_base64() -> None:
    image = bytes(range(256))
    body = (event(InlineDataDelta(image[:100], "image/png"))
            + event(InlineDataDelta(image[100:], "image/png"))
            + event(InlineDataDone(image, "image/png")) + STOP + DONE)
    events, error = decode_every_way(SOURCE, body)
    assert error is None
    assert [e.content_items[0].data for e in events[:3]] == [image[:100], image[100:], image]


@pytest.mark.parametrize("payload", [
    {"type": "ProviderHTTPError", "message": "rate limited", "client": "openai-official",
     "status": 429, "error_type": "rate_limit_error", "provider_message": "slow down"},
    {"type": "InvalidMessageError", "message": "empty", "client": "openai-chat",
     "item_type": None, "message_index": 0},
    {"type": "IncompleteStreamError", "message": "cut", "client": "ant-messages",
     "missing": ["finish_reason"], "finish_reason": None,
     "usage_metadata": {"cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": None,
                        "response_tokens": 1}},
], ids=["http-429", "before-the-request", "incomplete-upstream"])
def test_an_error_event_is_an_upstream_error_with_its_fields(payload: dict[str, Any]) -> None:
    events, error = decode_every_way(SOURCE, data({"error": payload}) + DONE)
    assert events == []
    assert isinstance(error, UpstreamError)
    assert (error.client, error.error_type, error.error) == ("mmsp", payload["type"], payload)
    assert error.status == payload.get("status")
    assert payload["message"] in str(error)


def test_an_error_after_events_comes_after_them() -> None:
    overload = ProviderStreamError("ant-messages", None, "overloaded_error", "Overloaded")
    events, error = decode_every_way(SOURCE, HELLO + error_event(overload))
    assert [e.content_items[0] for e in events] == [TextDelta("Hello"), TextDone("Hello")]
    assert isinstance(error, UpstreamError)
    assert error.error == to_wire(overload)["error"]


def test_an_error_given_as_text_is_an_upstream_error() -> None:
    _, error = decode_every_way(SOURCE, data({"error": "model overloaded"}) + DONE)
    assert isinstance(error, UpstreamError)
    assert (error.error_type, error.status, error.error) == (None, None,
                                                             {"message": "model overloaded"})
    assert "model overloaded" in str(error)


@pytest.mark.parametrize("body", [
    pytest.param(HELLO + DONE, id="done-before-stop"),
    pytest.param(HELLO, id="cut-before-stop"),
    # No JSON to parse: one JSON mode (tests/conftest.py).
    pytest.param(b"", id="empty-body"),
    pytest.param(DONE, id="only-done"),
])
def test_a_stream_without_its_stop_is_the_clients_incomplete_stream(body: bytes) -> None:
    _, error = decode_every_way(SOURCE, body)
    assert isinstance(error, IncompleteStreamError)
    assert (error.client, error.missing) == ("mmsp", ("usage_metadata", "finish_reason"))
    assert (error.finish_reason, error.usage_metadata) == (None, None)


def test_a_stop_without_done_ends_the_stream_and_nothing_after_done_counts() -> None:
    events, error = decode_every_way(SOURCE, HELLO + STOP)
    assert error is None and events[-1].event_type == "stop"
    assert decode_every_way(SOURCE, HELLO + STOP + DONE + b"data: {not json\n\n") == (
        events, None)


MALFORMED = {
    "two-items": data({**json.loads(event(TextDelta("a"))[6:]),
                       "content_items": [to_wire(TextDelta("a")), to_wire(TextDelta("b"))]}),
    "stop-with-items": data({**json.loads(STOP[6:]), "content_items": [to_wire(TextDone("x"))]}),
    "usage-on-a-delta": event(TextDelta("a"), usage_metadata=to_wire(USAGE)),
    "no-created-at": event(TextDelta("a"), at=None),
    "done-differs": event(TextDelta("a")) + event(TextDone("b")),
    "done-alone": event(TextDone("a")),
    "unclosed-group": event(TextDelta("a")) + STOP,
    "event-after-stop": STOP + HELLO,
    "bad-base64": data({**json.loads(event(TextDelta("a"))[6:]),
                        "content_items": [{"type": "inline_data.delta", "data": "!!",
                                           "mime_type": "image/png"}]}),
    "unknown-item": data({**json.loads(event(TextDelta("a"))[6:]),
                          "content_items": [{"type": "hologram.delta"}]}),
    "not-json": b"data: {\"event_type\": \n\n",
    "not-an-object": b"data: [1, 2]\n\n",
    "event-type-not-a-string": data({"event_type": 5}),
    "error-not-an-object": data({"error": [1]}),
    "error-too-deep": data({"error": {"type": "X", "message": "m",
                                      "detail": json.loads("[" * 300 + "]" * 300)}}),
    "role": event(TextDelta("a"), role="user"),
}


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_stream_that_breaks_the_grammar_is_malformed(body: bytes) -> None:
    # The server's fault (08 D59); never an exception other than MMSPError.
    _, error = decode_every_way(SOURCE, body + STOP + DONE)
    assert isinstance(error, MalformedEventError), error
    assert error.client == "mmsp"


def test_a_multi_item_event_reaches_the_pass_through_whole() -> None:
    # The pipeline splits the client events of other protocols; PassThrough sees each event
    # as the server sent it, so two items in one event are refused, not split and passed.
    machine = MMSPMachine(SOURCE, None, strict=False, base_url=None)
    pipeline = StreamPipeline(machine, client=SOURCE, clock=lambda: 0, finalizer=PassThrough)
    events, error = run(pipeline, [MALFORMED["two-items"] + STOP + DONE])
    assert events == []
    assert isinstance(error, MalformedEventError)
    assert "exactly one item" in str(error)


UNKNOWN = [
    data({"event_type": "heartbeat", "created_at": 1}),
    data({"type": "ping"}),
    b"event: error\ndata: {\"type\": \"mmsp_test\"}\n\n",
]


@pytest.mark.parametrize("noise", UNKNOWN, ids=["event-type", "no-event-type", "event-field"])
def test_an_unknown_event_is_skipped_or_refused_in_strict_mode(noise: bytes) -> None:
    plain, error = decode_every_way(SOURCE, HELLO + noise + STOP + DONE)
    assert error is None
    assert plain == decode_every_way(SOURCE, HELLO + STOP + DONE)[0]
    _, strict = decode_every_way(SOURCE, HELLO + noise + STOP + DONE, strict=True)
    assert isinstance(strict, UnknownEventError)


def test_the_sse_event_field_and_comments_are_ignored() -> None:
    named = b": keep-alive\n\nevent: message\n" + HELLO + b": keep-alive\n\n" + STOP + DONE
    assert decode_every_way(SOURCE, named) == decode_every_way(SOURCE, HELLO + STOP + DONE)


# --------------------------------------------------------------------------------------------
# Render and normalize (08 D49)
# --------------------------------------------------------------------------------------------


def test_items_that_never_stream_are_dropped() -> None:
    items = [ImageUrlDone("https://x/a.png"), TextDone("a"), ToolResultDone("r", "c1")]
    assert normalize(items, FinishReason.STOP) == ([TextDone("a")], FinishReason.STOP)


@pytest.mark.parametrize("items", [(), (ThinkingDone("only"),), (ImageUrlDone("https://x"),)])
def test_nothing_but_thinking_is_no_stream_but_the_servers_empty_response(
    items: tuple[Any, ...]
) -> None:
    with pytest.raises(EmptyResponseError):
        adapters.render(SOURCE, items, USAGE, "stop")
    with pytest.raises(EmptyResponseError):
        normalize(items, FinishReason.STOP)


def test_the_error_event_is_the_wire_error_then_done() -> None:
    error = EmptyResponseError("openai-chat", "stop", USAGE)
    lines = error_event(error).split(b"\n\n")
    assert json.loads(lines[0][6:]) == to_wire(error)
    assert lines[1:] == [b"data: [DONE]", b""]


# --------------------------------------------------------------------------------------------
# The simulator's dialect
# --------------------------------------------------------------------------------------------


def test_the_dialect_reads_a_stream_request() -> None:
    weather = ToolSchema("get_weather", "", {"type": "object"})
    turn = [UniMessage.user("Weather in Paris?"),
            UniMessage("assistant", (ToolCallDone("get_weather", "c1", {}),)),
            UniMessage("user", (ToolResultDone("18 C", "c1"),))]
    body = request_body(turn, UniConfig(tools=(weather,)))
    read = simulate.read_turn(body)
    assert read.question == "Weather in Paris?"
    assert read.tools == (("get_weather", {"type": "object"}),)
    assert read.tool_results == ("18 C",)
    assert simulate.error_body(401, "no") == {
        "error": {"type": "AuthenticationError", "message": "no"}
    }


def test_the_dialects_stream_error_is_an_upstream_error() -> None:
    body = adapters.render(SOURCE, ANSWER, USAGE, "stop")
    cut = b"".join(piece + b"\n\n" for piece in body.split(b"\n\n")[:3])
    _, error = decode_every_way(SOURCE, cut + simulate.DIALECT.stream_error)
    assert isinstance(error, UpstreamError)
    assert error.error_type == "ProviderStreamError"
