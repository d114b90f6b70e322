"""The Chat Completions front door (08 D73): the reader of a caller's request, the stream
writer, the whole response and the error body of ``adapters.openai_chat``.

The reader is the inverse of the ``openai-chat`` builder up to ``normalize_request``; what the
writer writes decodes, with the protocol's own machine, to the public stream it was given
(up to ``render.normalize``), and an error it writes decodes to the error, never a clean end.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import attrs
import pytest
from harness import decode_every_way
from hypothesis import given
from hypothesis import strategies as st

import adapters
from adapters._openai import error_body
from adapters._render import public_events
from adapters.openai_chat.reader import normalize_request, read_request
from adapters.openai_chat.render import normalize
from adapters.openai_chat.writer import COMPLETION_ID, ChatStreamWriter, response
from mmsp_core.errors import (
    EmptyResponseError,
    IncompleteStreamError,
    InvalidMessageError,
    MMSPError,
    ProviderStreamError,
    UnsupportedParameterError,
    WireFormatError,
)
from mmsp_core.items import StreamItems
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    ImageUrlDone,
    PromptCaching,
    ResponseFormat,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar, outcome, run
from mmsp_core.testing.strategies import (
    Edit,
    Huge,
    apply_edits,
    chunked,
    client_streams,
    configs,
    done_items,
    edits,
    finish_reasons,
    json_objects,
    usage,
)

PROTOCOL = "openai-chat"
USAGE = UsageMetadata(cached_tokens=2, prompt_tokens=8, thoughts_tokens=3, response_tokens=4)


def request(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "gpt-x", "messages": list(messages), **fields}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


HI = user("Hi")


def read(*messages: dict[str, Any], **fields: Any) -> Any:
    return read_request(request(*messages, **fields))


# --------------------------------------------------------------------------------------------
# Reader: each field family
# --------------------------------------------------------------------------------------------


def test_the_record_names_the_door() -> None:
    front = adapters.PROTOCOLS[PROTOCOL].front
    assert front is not None
    assert (front.path, front.id_prefix) == ("/v1/chat/completions", "chatcmpl-")
    assert front.read_request is read_request
    assert (front.response, front.error_body) == (response, error_body)
    assert isinstance(front.new_writer("m", response_id="chatcmpl-1"), ChatStreamWriter)


def test_system_and_developer_messages_are_the_system_prompt_and_text_and_images_are_read() -> None:
    got = read(
        {"role": "developer", "content": "Be brief."},
        user([
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA",
                                                "detail": "high"}},
        ]),
        {"role": "system", "content": [{"type": "text", "text": "In French."}]},
    )
    assert got.model == "gpt-x"
    assert got.stream is False
    assert got.config == UniConfig(system_prompt="Be brief.\n\nIn French.")
    assert got.messages == (UniMessage.user(
        "What is this?",
        ImageUrlDone("https://example.com/a.png"),
        ImageUrlDone("data:image/png;base64,AAAA"),
    ),)
    assert got.ignored == ()


def test_stream_and_empty_texts() -> None:
    got = read(user(""), {"role": "assistant", "content": ""}, user("x"), stream=True,
               stream_options={"include_usage": True})
    assert got.stream is True
    assert got.messages == (UniMessage.user("x"),)
    assert got.ignored == ()  # stream_options is honoured as far as usage goes (08 D73)


def test_tool_calls_and_their_results() -> None:
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get", "arguments": '{"city": "Paris"}'}}
    got = read(
        HI,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2",
         "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        user("thanks"),
        {"role": "assistant", "tool_calls": [{**call, "id": "call_3"}]},
        {"role": "tool", "tool_call_id": "call_3", "content": "rain"},
    )
    get = ToolCallDone("get", "call_1", {"city": "Paris"})
    assert got.messages == (
        UniMessage.user("Hi"),
        UniMessage.assistant(get),
        UniMessage.user(ToolResultDone("sunny", "call_1"), ToolResultDone("ab", "call_2"),
                        "thanks"),
        UniMessage.assistant(attrs.evolve(get, tool_call_id="call_3")),
        UniMessage.user(ToolResultDone("rain", "call_3")),
    )


def test_tool_results_before_an_assistant_message_stand_alone() -> None:
    got = read(
        {"role": "tool", "tool_call_id": "c", "content": "r"},
        {"role": "assistant", "content": "ok"},
        user("more"),
    )
    assert got.messages == (
        UniMessage.user(ToolResultDone("r", "c")),
        UniMessage.assistant("ok"),
        UniMessage.user("more"),
    )
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    empty = read(HI, {"role": "assistant", "tool_calls": [call]})
    assert empty.messages[1] == UniMessage.assistant(ToolCallDone("f", "c", {}))


@pytest.mark.parametrize(
    ("fields", "thinking"),
    [
        ({"reasoning_content": "Hmm"}, [ThinkingDone("Hmm", {"reasoning_field":
                                                             "reasoning_content"})]),
        ({"reasoning": "Hmm"}, [ThinkingDone("Hmm", {"reasoning_field": "reasoning"})]),
        ({"reasoning_content": "Hmm", "reasoning": "Hmm"}, [ThinkingDone("Hmm")]),
        ({"reasoning_content": "A", "reasoning": "B"},
         [ThinkingDone("A", {"reasoning_field": "reasoning_content"}),
          ThinkingDone("B", {"reasoning_field": "reasoning"})]),
        ({"reasoning_content": ""}, []),
        (
            {"reasoning": "Hmm", "reasoning_details": [
                {"type": "reasoning.text", "text": "Hmm", "index": 0},
                {"type": "reasoning.encrypted", "data": "E1", "format": "f", "id": "r1"},
                {"type": "reasoning.encrypted", "data": "E2", "format": "f"},
            ]},
            [ThinkingDone("Hmm", {"reasoning_field": "reasoning", "encrypted_content": "E1",
                                  "format": "f", "reasoning_id": "r1"}),
             ThinkingDone("", {"encrypted_content": "E2", "format": "f"})],
        ),
        (
            {"reasoning_details": [{"type": "reasoning.encrypted", "data": "E", "format": "f"}]},
            [ThinkingDone("", {"encrypted_content": "E", "format": "f"})],
        ),
    ],
)
def test_thinking_of_assistant_messages(fields: dict[str, Any], thinking: list[DoneItem]) -> None:
    got = read(HI, {"role": "assistant", "content": "Answer", **fields})
    assert got.messages[1] == UniMessage("assistant", (*thinking, TextDone("Answer")))


def test_refusal_parts_are_text() -> None:
    got = read(HI, {"role": "assistant", "content": [
        {"type": "text", "text": "A"}, {"type": "refusal", "refusal": "No."}]})
    assert got.messages[1] == UniMessage.assistant("A", "No.")


def test_config_fields() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    got = read(
        HI,
        max_completion_tokens=100,
        max_tokens=50,
        temperature=1,
        top_p=0.5,
        stop="END",
        seed=7,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "answer", "schema": schema, "strict": True}},
        tools=[{"type": "function", "function": {"name": "f", "parameters": schema}},
               {"type": "function", "function": {"name": "g", "description": "G"}}],
        tool_choice="required",
        reasoning_effort="high",
        service_tier="priority",
    )
    assert got.config == UniConfig(
        max_tokens=100,
        temperature=1.0,
        top_p=0.5,
        stop_sequences=("END",),
        seed=7,
        response_format=ResponseFormat("json_schema", "answer", schema, True),
        tools=(ToolSchema("f", "", schema), ToolSchema("g", "G")),
        tool_choice="required",
        thinking_level=ThinkingLevel.HIGH,
        fast_mode=True,
    )
    assert got.ignored == ()
    assert read(HI, max_tokens=50).config.max_tokens == 50


@pytest.mark.parametrize(
    ("fields", "config"),
    [
        ({"stop": ["a", "b"]}, UniConfig(stop_sequences=("a", "b"))),
        ({"stop": []}, UniConfig()),
        ({"response_format": {"type": "text"}}, UniConfig()),
        ({"response_format": {"type": "json_object"}},
         UniConfig(response_format=ResponseFormat("json_object"))),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "n"}}},
         UniConfig(response_format=ResponseFormat("json_schema", "n", None, False))),
        ({"tool_choice": {"type": "function", "function": {"name": "f"}}},
         UniConfig(tool_choice=("f",))),
        ({"tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
            {"type": "function", "function": {"name": "f"}},
            {"type": "function", "function": {"name": "g"}}]}}},
         UniConfig(tool_choice=("f", "g"))),
        ({"service_tier": "auto"}, UniConfig()),
        ({"n": 1, "logprobs": False, "modalities": ["text"]}, UniConfig()),
    ],
)
def test_config_field_forms(fields: dict[str, Any], config: UniConfig) -> None:
    got = read(HI, **fields)
    assert (got.config, got.ignored) == (config, ())


@pytest.mark.parametrize(
    ("effort", "level"),
    [("none", "none"), ("minimal", "low"), ("low", "low"), ("medium", "medium"),
     ("high", "high"), ("xhigh", "xhigh")],
)
def test_reasoning_effort_is_the_thinking_level_of_its_name(effort: str, level: str) -> None:
    """08 D73: ``minimal`` -> ``low``, ``none`` -> ``none``, every other the same name."""
    assert read(HI, reasoning_effort=effort).config.thinking_level == ThinkingLevel(level)


@pytest.mark.parametrize(
    ("fields", "parameter"),
    [
        ({"n": 2}, "n"),
        ({"logprobs": True}, "logprobs"),
        ({"top_logprobs": 3}, "top_logprobs"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"prediction": {"type": "content", "content": "x"}}, "prediction"),
        ({"tools": [{"type": "custom", "custom": {"name": "x"}}]}, "tools"),
        ({"tool_choice": {"type": "custom", "custom": {"name": "x"}}}, "tool_choice"),
    ],
)
def test_refused_fields_are_named(fields: dict[str, Any], parameter: str) -> None:
    """08 D73: a field whose honouring would change the answer is refused, named."""
    with pytest.raises(UnsupportedParameterError) as info:
        read(HI, **fields)
    assert info.value.parameter == parameter


def test_other_fields_are_ignored_and_listed_in_request_order() -> None:
    got = read_request({
        "metadata": {"a": "b"}, "model": "m", "user": "u", "messages": [HI], "store": True,
        "parallel_tool_calls": False, "service_tier": "flex", "top_k": 5,
        "frequency_penalty": 0.5, "context_management": {}, "stream": True,
    })
    assert got.ignored == ("metadata", "user", "store", "parallel_tool_calls", "service_tier",
                           "top_k", "frequency_penalty", "context_management")
    assert got.config == UniConfig()


# --------------------------------------------------------------------------------------------
# Reader: malformed bodies
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ([], "body"),
        ({"messages": [HI]}, "body"),
        (request(), "body.messages"),
        ({"model": "m", "messages": {}}, "body"),
        (request(HI, stream="yes"), "body"),
        (request(HI, temperature="hot"), "body"),
        (request(HI, max_tokens=True), "body"),
        (request(HI, reasoning_effort="turbo"), "body"),
        (request(HI, tool_choice="sometimes"), "body"),
        (request(HI, stop=[1]), "body"),
        (request(HI, response_format={"type": "yaml"}), "body"),
        (request(HI, tools=[{"type": "function", "function": {"description": "no name"}}]),
         "body"),
        (request(HI, {"role": "robot", "content": "x"}), "messages[1]"),
        ({"model": "m", "messages": ["Hi"]}, "messages[0]"),
        (request(user(3)), "messages[0]"),
        (request(user([{"type": "image_url", "image_url": {}}])), "messages[0]"),
        (request({"role": "tool", "content": "r"}), "messages[0]"),
        (request(HI, {"role": "assistant", "reasoning_details": [
            {"type": "reasoning.encrypted", "format": "f"}]}), "messages[1]"),
    ],
)
def test_malformed_bodies_are_wire_format_errors(body: Any, path: str) -> None:
    with pytest.raises(WireFormatError) as info:
        read_request(body)
    assert info.value.path == path


def test_a_content_part_of_another_type_is_an_invalid_message() -> None:
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    with pytest.raises(InvalidMessageError) as info:
        read(HI, user([audio]))
    assert (info.value.item_type, info.value.message_index) == ("input_audio", 1)


@pytest.mark.parametrize("arguments", ['{"a": ', "[1]", "null"])
def test_tool_call_arguments_that_are_no_object_are_an_invalid_message(arguments: str) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
    with pytest.raises(InvalidMessageError) as info:
        read(HI, {"role": "assistant", "tool_calls": [call]})
    assert (info.value.item_type, info.value.message_index) == ("tool_call", 1)


#: A body with every field the reader reads, for the hostile values to reach them all.
RICH = request(
    {"role": "system", "content": "S"},
    user([{"type": "text", "text": "T"}, {"type": "image_url", "image_url": {"url": "u"}}]),
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "R"}],
     "reasoning_content": "A", "reasoning": "A",
     "reasoning_details": [{"type": "reasoning.encrypted", "data": "E", "format": "f",
                            "id": "i"}],
     "tool_calls": [{"id": "c", "type": "function",
                     "function": {"name": "f", "arguments": '{"x": [1]}'}}]},
    {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "r"}]},
    stream=True, stream_options={"include_usage": True}, max_completion_tokens=5, max_tokens=5,
    temperature=0.5, top_p=1, stop=["s"], seed=1, n=1, logprobs=False, modalities=["text"],
    response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": {},
                                                            "strict": True}},
    tools=[{"type": "function", "function": {"name": "f", "description": "d",
                                             "parameters": {}}}],
    tool_choice={"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "function", "function": {"name": "f"}}]}},
    reasoning_effort="low", service_tier="priority", metadata={},
)


@given(st.data())
def test_any_json_value_anywhere_raises_only_mmsp_errors(data: st.DataObject) -> None:
    """08 D59: whatever JSON value stands at any path of a request, only ``MMSPError``
    leaves the reader (never ``KeyError``, ``TypeError`` or ``RecursionError``)."""
    changes: list[Edit] = data.draw(edits(RICH))
    with contextlib.suppress(MMSPError):
        read_request(apply_edits(RICH, changes, build=True))


@pytest.mark.parametrize("value", [Huge("arrays", 5_000), Huge("objects", 5_000),
                                   Huge("digits", 5_000)], ids=repr)
def test_a_part_type_too_deep_or_too_long_to_show_is_a_wire_format_error(value: Huge) -> None:
    """The reason never shows a value it cannot write (``repr`` recursing, or an integer past
    Python's 4,300 digits)."""
    path = ("messages", 2, "content", 0, "type")  # the assistant message's refusal part
    with pytest.raises(WireFormatError, match="of type another"):
        read_request(apply_edits(RICH, [(path, value)], build=True))


def test_the_rich_body_is_a_request() -> None:
    """The hostile property's starting body is itself a request, so its edits reach past the
    first check."""
    got = read_request(RICH)
    assert got.ignored == ("metadata",)
    assert got.messages[1].content_items[-1] == ToolCallDone("f", "c", {"x": [1]})


# --------------------------------------------------------------------------------------------
# Reader: the inverse of the builder (08 D73)
# --------------------------------------------------------------------------------------------

_ids = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)
_urls = st.sampled_from(["https://example.com/a.png", "data:image/png;base64,iVBORw0KGgo="])
_thinking_fidelity = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"reasoning_field": st.sampled_from(["reasoning_content", "reasoning", "other"])}
    ),
    st.fixed_dictionaries(
        {"encrypted_content": st.text(max_size=8), "format": st.sampled_from(["f", "g"])},
        optional={"reasoning_id": _ids, "reasoning_field": st.just("reasoning"),
                  "signature": st.just("s")},
    ),
    st.just({"signature": "s"}),
)
_user_items = st.one_of(
    st.builds(TextDone, st.text(max_size=10)),
    st.builds(ImageUrlDone, _urls),
    st.builds(ToolResultDone, st.text(max_size=10), _ids,
              st.none() | st.lists(_urls, max_size=2).map(tuple)),
)
_assistant_items = st.one_of(
    st.builds(TextDone, st.text(max_size=10), st.none() | st.just({"phase": "final"})),
    st.builds(ThinkingDone, st.text(max_size=10), _thinking_fidelity),
    st.builds(ToolCallDone, _ids, _ids, json_objects()),
)
_messages = st.lists(
    st.one_of(
        st.lists(_user_items, min_size=1, max_size=4).map(lambda i: UniMessage("user", tuple(i))),
        st.lists(_assistant_items, min_size=1, max_size=4)
        .filter(lambda items: not all(isinstance(item, ThinkingDone) for item in items))
        .map(lambda i: UniMessage("assistant", tuple(i))),
    ),
    min_size=1,
    max_size=5,
)


def sendable(config: UniConfig) -> UniConfig:
    """``config`` without what ``openai-chat`` refuses (05 §4.3: caching other than
    ``enable``, an empty tool list) and without unknown keys (they only warn)."""
    return attrs.evolve(
        config,
        prompt_caching=PromptCaching.ENABLE if config.prompt_caching else None,
        tool_choice=config.tool_choice or None,
        extra={},
    )


@given(messages=_messages, config=configs().map(sendable))
def test_reading_what_the_builder_writes_gives_back_the_normalised_request(
    messages: list[UniMessage], config: UniConfig
) -> None:
    built = adapters.build_request(PROTOCOL, "gpt-x", messages, config)
    got = read_request(json.loads(built.body))
    assert (got.model, got.stream, got.ignored) == ("gpt-x", True, ())
    assert (list(got.messages), got.config) == normalize_request(messages, config)


# --------------------------------------------------------------------------------------------
# Writer: what it writes decodes to the public stream it was given
# --------------------------------------------------------------------------------------------


def write(events: list[UniEvent], model: str = "m") -> bytes:
    writer = ChatStreamWriter(model)
    return b"".join(writer.event(event) for event in events)


def decoded(chunks: list[bytes]) -> tuple[list[UniEvent], BaseException | None]:
    ticks = iter(range(1 << 30))
    return run(adapters.new_pipeline(PROTOCOL, clock=lambda: next(ticks)), chunks)


def decode_three_ways(body: bytes, data: st.DataObject) -> tuple[list[UniEvent], Any]:
    """``decode_every_way`` inside a property: whole, byte by byte and one drawn chunking
    agree, and a stream that ends without error passes the grammar."""
    events, error = decoded([body])
    for chunks in ([body[i : i + 1] for i in range(len(body))], data.draw(chunked(body))):
        assert outcome(*decoded(chunks)) == outcome(events, error)
    if error is None:
        assert_stream_grammar(events)
    return events, error


def done(events: list[UniEvent]) -> list[Any]:
    return [
        e.content_items[0]
        for e in events
        if e.event_type == "delta" and e.content_items[0].type.endswith(".done")
    ]


_chat_items = st.lists(
    st.one_of(done_items(), st.builds(ThinkingDone, st.text(max_size=12), _thinking_fidelity)),
    max_size=6,
)


@given(items=_chat_items, counts=usage(), finish=finish_reasons(),
       size=st.integers(1, 12), data=st.data())
def test_the_writer_fed_event_by_event_decodes_to_its_stream(
    items: list[DoneItem],
    counts: UsageMetadata,
    finish: FinishReason,
    size: int,
    data: st.DataObject,
) -> None:
    """Decoded whole, byte by byte and in random chunkings, the writer's chunks give back the
    stream's done items under ``normalize``, its usage and its finish reason."""
    body = write(list(public_events(items, counts, finish, size)))
    events, error = decode_three_ways(body, data)
    expected, expected_finish = normalize(items, finish)
    assert done(events) == expected
    if all(isinstance(item, ThinkingDone) for item in expected):
        assert isinstance(error, EmptyResponseError)
        return
    assert error is None
    assert (events[-1].usage_metadata, events[-1].finish_reason) == (counts, expected_finish)


def public_stream(client_events: list[UniEvent]) -> list[UniEvent]:
    """The finalizer's public stream of a client stream."""
    ticks = iter(range(10**12, 10**13))
    items = StreamItems(client=PROTOCOL, clock=lambda: next(ticks))
    out = [event for client_event in client_events for event in items.push(client_event)]
    return [*out, *items.end(), items.close()]


@given(client=client_streams(), data=st.data())
def test_a_live_public_stream_decodes_to_its_done_items(
    client: list[UniEvent], data: st.DataObject
) -> None:
    """Streams whose fidelity arrives on any fragment, as upstreams send it."""
    events = public_stream(client)
    got, error = decode_three_ways(write(events), data)
    stop = events[-1]
    assert stop.finish_reason is not None
    expected, finish = normalize(done(events), stop.finish_reason)
    assert error is None
    assert done(got) == expected
    assert (got[-1].usage_metadata, got[-1].finish_reason) == (stop.usage_metadata, finish)


def test_encrypted_reasoning_arriving_last_stays_with_its_text() -> None:
    """A gateway's encrypted block ends the thinking item it belongs to, however late its
    fidelity arrives on the public stream (08 D73)."""
    encrypted = {"encrypted_content": "E", "format": "f", "reasoning_id": "r"}
    events = public_stream([
        UniEvent("delta", (ThinkingDelta("Let me ", {"item_id": "t"}),)),
        UniEvent("delta", (ThinkingDelta("think", {"item_id": "t"}),)),
        UniEvent("delta", (ThinkingDelta("", {"item_id": "t", **encrypted}),)),
        UniEvent("delta", (TextDelta("Hi", {"item_id": "x"}),)),
        UniEvent("stop", (), USAGE, FinishReason.STOP),
    ])
    decoded, error = decode_every_way(PROTOCOL, write(events))
    assert error is None
    assert done(decoded) == [ThinkingDone("Let me think", encrypted), TextDone("Hi")]


def test_the_stream_is_framed_as_a_server_frames_it() -> None:
    body = write([
        UniEvent("delta", (TextDelta("Hi"),), created_at=1_760_000_000_123),
        UniEvent("delta", (TextDone("Hi"),)),
        UniEvent("stop", (), USAGE, FinishReason.STOP),
    ], model="gpt-x")
    frames = body.split(b"\n\n")
    assert frames[-2:] == [b"data: [DONE]", b""]
    chunks = [json.loads(frame.removeprefix(b"data: ")) for frame in frames[:-2]]
    head = {"id": "chatcmpl-mmsp-render", "object": "chat.completion.chunk",
            "created": 1_760_000_000, "model": "gpt-x"}
    assert chunks == [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                              "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**head, "choices": [], "usage": {
            "prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17,
            "prompt_tokens_details": {"cached_tokens": 2},
            "completion_tokens_details": {"reasoning_tokens": 3}}},
    ]


# --------------------------------------------------------------------------------------------
# Writer: errors end the stream as errors
# --------------------------------------------------------------------------------------------

OVERLOADED = ProviderStreamError(PROTOCOL, "overloaded", "server_error",
                                 "The server is overloaded.")
STREAM = [
    UniEvent("delta", (TextDelta("Hel"),)),
    UniEvent("delta", (TextDelta("lo"),)),
    UniEvent("delta", (TextDone("Hello"),)),
    UniEvent("stop", (), USAGE, FinishReason.STOP),
]


@pytest.mark.parametrize("cut", range(len(STREAM)))
def test_an_error_after_any_event_decodes_to_the_error_never_a_clean_end(cut: int) -> None:
    writer = ChatStreamWriter("m")
    body = b"".join(writer.event(event) for event in STREAM[:cut]) + writer.error(OVERLOADED)
    assert b"[DONE]" not in body
    events, error = decode_every_way(PROTOCOL, body)
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type, error.provider_message) == (
        "overloaded", "server_error", "The server is overloaded.")
    assert all(event.event_type == "delta" for event in events)


def test_every_chunk_and_the_whole_response_carry_the_id_given() -> None:
    """The pure writers draw no id: the gateway gives each response its own; without one,
    ``COMPLETION_ID``."""
    writer = ChatStreamWriter("m", response_id="chatcmpl-7")
    body = b"".join(writer.event(event) for event in STREAM)
    chunks = [json.loads(frame.removeprefix(b"data: "))
              for frame in body.split(b"\n\n")[:-2]]
    assert len(chunks) > 3 and {chunk["id"] for chunk in chunks} == {"chatcmpl-7"}
    whole = response([TextDone("Hi")], USAGE, FinishReason.STOP, model="m",
                     response_id="chatcmpl-7")
    assert whole["id"] == "chatcmpl-7"
    assert response([], USAGE, FinishReason.STOP, model="m")["id"] == COMPLETION_ID


def test_a_library_error_is_written_with_its_class_as_the_code() -> None:
    cut = IncompleteStreamError("anthropic-official", ("usage_metadata",))
    writer = ChatStreamWriter("m")
    body = writer.event(STREAM[0]) + writer.error(cut)
    _, error = decode_every_way(PROTOCOL, body)
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type, error.provider_message) == (
        "IncompleteStreamError", "server_error", str(cut))


# --------------------------------------------------------------------------------------------
# The whole response and the error body
# --------------------------------------------------------------------------------------------


def test_the_whole_response_is_a_chat_completion() -> None:
    items: list[DoneItem] = [
        ThinkingDone("Hmm", {"reasoning_field": "reasoning_content"}),
        ThinkingDone("", {"encrypted_content": "E", "format": "f"}),
        TextDone("Hel"),
        TextDone("lo"),
        ToolCallDone("f", "call_1", {"a": 1}),
    ]
    assert response(items, USAGE, FinishReason.TOOL_CALL, model="gpt-x") == {
        "id": "chatcmpl-mmsp-render",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-x",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Hello",
                "refusal": None,
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "f", "arguments": '{"a":1}'}}],
                "reasoning_content": "Hmm",
                "reasoning_details": [{"type": "reasoning.encrypted", "data": "E",
                                       "format": "f", "index": 0}],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17,
                  "prompt_tokens_details": {"cached_tokens": 2},
                  "completion_tokens_details": {"reasoning_tokens": 3}},
    }


def test_the_whole_response_of_calls_only_has_no_content_and_counts_unknowns_as_zero() -> None:
    body = response([ToolCallDone("f", "c", {}), ImageUrlDone("u")], UsageMetadata(),
                    FinishReason.UNKNOWN, model="m")
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert "reasoning_content" not in message
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
                             "prompt_tokens_details": {"cached_tokens": 0},
                             "completion_tokens_details": {"reasoning_tokens": 0}}


@pytest.mark.parametrize(
    ("status", "param", "expected"),
    [
        (400, "n", {"type": "invalid_request_error", "param": "n", "code": None}),
        (401, None, {"type": "invalid_request_error", "param": None, "code": "invalid_api_key"}),
        (404, None, {"type": "invalid_request_error", "param": None, "code": "not_found"}),
        (429, None, {"type": "requests", "param": None, "code": "rate_limit_exceeded"}),
        (503, None, {"type": "server_error", "param": None, "code": None}),
    ],
)
def test_the_error_body_is_openais(status: int, param: str | None, expected: Any) -> None:
    assert error_body(status, "what went wrong", param=param) == {
        "error": {"message": "what went wrong", **expected}
    }


def test_the_error_body_of_a_refused_field_names_it() -> None:
    with pytest.raises(UnsupportedParameterError) as info:
        read(HI, n=3)
    body = error_body(400, str(info.value), param=info.value.parameter)
    assert body["error"]["param"] == "n"
    assert body["error"]["type"] == "invalid_request_error"
