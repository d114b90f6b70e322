"""The Responses front door (08 D73): the reader of a caller's ``POST /v1/responses`` body, its
inverse property with the builder, the writer of the public stream as Responses SSE, the whole
response and the error body.

The writer's output is decoded with this protocol's own machine, whole, byte by byte and in
random chunkings, and must give back the stream it was fed; its error frames decode to the
typed error, never to a clean end.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import adapters
from adapters._convert import arguments_json
from adapters._front import FrontRequest
from adapters.openai_responses import (
    PROTOCOL,
    normalize,
    normalize_request,
    profiles,
    read_request,
)
from adapters.openai_responses.profiles import ResponsesProfile
from adapters.openai_responses.writer import RESPONSE_ID, ResponsesWriter, error_body, response
from mmsp_core import (
    IncompleteStreamError,
    InvalidMessageError,
    MMSPError,
    ProviderStreamError,
    UnsupportedContentError,
    UnsupportedParameterError,
    WireFormatError,
    to_wire,
)
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    ImageUrlDone,
    Item,
    ResponseFormat,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDelta,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.testing import outcome, run
from mmsp_core.testing.strategies import (
    apply_edits,
    chunked,
    configs,
    edits,
    finish_reasons,
    hostile_json,
    json_objects,
    messages,
    usage,
)

SOURCE = "openai-responses"
MODEL = "gpt-5.6"
PNG = "data:image/png;base64,iVBORw0KGgo="



def body(**fields: Any) -> dict[str, Any]:
    """A minimal request body with ``fields``."""
    return {"model": MODEL, "input": "Hi", **fields}


# ------------------------------------------------------------------------------------------
# Reader: each field family
# ------------------------------------------------------------------------------------------


def test_a_string_input_is_one_user_text_and_instructions_the_system_prompt() -> None:
    read = read_request(body(instructions="Be brief.", stream=True))
    assert read == FrontRequest(MODEL, (UniMessage.user("Hi"),),
                                UniConfig(system_prompt="Be brief."), True)


def test_stream_is_false_by_default() -> None:
    assert read_request(body()).stream is False
    assert read_request(body(stream=None)).stream is False


def test_system_and_developer_messages_join_the_instructions_in_order() -> None:
    read = read_request(body(instructions="A", input=[
        {"role": "system", "content": "B"},
        {"type": "message", "role": "user", "content": "Hi"},
        {"role": "developer", "content": [{"type": "input_text", "text": "C"}]},
    ]))
    assert read.config.system_prompt == "A\n\nB\n\nC"
    assert read.messages == (UniMessage.user("Hi"),)


def test_user_text_and_images_by_url_and_data_uri() -> None:
    read = read_request(body(input=[{"role": "user", "content": [
        {"type": "input_text", "text": "What is this?"},
        {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "low"},
        {"type": "input_image", "image_url": PNG},
    ]}]))
    assert read.messages == (UniMessage.user(
        "What is this?", ImageUrlDone("https://example.com/cat.png"), ImageUrlDone(PNG)),)


def test_an_agent_turn_reads_back_as_its_messages() -> None:
    """Reasoning with its encrypted content, a phased answer, a call, its result with an
    image: consecutive items of one role are one message."""
    read = read_request(body(input=[
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "reasoning", "id": "rs_1", "summary": [
            {"type": "summary_text", "text": "Need "}, {"type": "summary_text", "text": "it."}],
         "encrypted_content": "gAAA", "status": None},
        {"type": "message", "role": "assistant", "phase": "commentary",
         "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather",
         "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
        {"type": "function_call_output", "call_id": "call_2", "output": [
            {"type": "input_text", "text": "map"}, {"type": "input_image", "image_url": PNG}]},
        {"type": "reasoning", "summary": [],
         "content": [{"type": "reasoning_text", "text": "raw"}]},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
    ]))
    call = ToolCallDone("weather", "call_1", {"city": "Paris"})
    assert read.messages == (
        UniMessage.user("Weather in Paris?"),
        UniMessage.assistant(
            ThinkingDone("Need it.", {"channel": "summary", "encrypted_content": "gAAA"}),
            TextDone("Checking.", {"phase": "commentary"}),
            call,
        ),
        UniMessage("user", (ToolResultDone("18C", "call_1"),
                            ToolResultDone("map", "call_2", (PNG,)))),
        UniMessage.assistant(ThinkingDone("raw", {"channel": "content"}), TextDone("No.")),
    )


def test_sampling_and_token_keys() -> None:
    read = read_request(body(max_output_tokens=300, temperature=0.5, top_p=1))
    assert read.config == UniConfig(max_tokens=300, temperature=0.5, top_p=1.0)


@pytest.mark.parametrize(("effort", "level"), [
    ("minimal", ThinkingLevel.LOW), ("none", ThinkingLevel.NONE), ("low", ThinkingLevel.LOW),
    ("medium", ThinkingLevel.MEDIUM), ("high", ThinkingLevel.HIGH),
    ("xhigh", ThinkingLevel.XHIGH),
])
def test_reasoning_effort_is_the_thinking_level_of_its_name(
    effort: str, level: ThinkingLevel
) -> None:
    config = read_request(body(reasoning={"effort": effort})).config
    assert config == UniConfig(thinking_level=level)


def test_a_reasoning_summary_asks_for_the_thinking_summary() -> None:
    config = read_request(body(reasoning={"effort": "high", "summary": "auto"})).config
    assert config == UniConfig(thinking_level=ThinkingLevel.HIGH, thinking_summary=True)


@pytest.mark.parametrize(("wire", "expected"), [
    ({"type": "json_schema", "name": "city", "schema": {"type": "object"}, "strict": True},
     ResponseFormat("json_schema", "city", {"type": "object"}, strict=True)),
    # The API's default strictness is false.
    ({"type": "json_schema", "name": "city", "schema": {"type": "object"}},
     ResponseFormat("json_schema", "city", {"type": "object"}, strict=False)),
    ({"type": "json_object"}, ResponseFormat("json_object")),
    ({"type": "text"}, None),
])
def test_text_format_is_the_response_format(
    wire: dict[str, Any], expected: ResponseFormat | None
) -> None:
    assert read_request(body(text={"format": wire})).config.response_format == expected


_WEATHER = {"type": "function", "name": "weather", "description": "The weather.",
            "parameters": {"type": "object"}, "strict": True}
_TIME = {"type": "function", "name": "time"}


@pytest.mark.parametrize(("choice", "tools", "expected"), [
    (None, 2, None),
    ("auto", 2, "auto"),
    ("required", 2, "required"),
    ("none", 2, "none"),
    ({"type": "function", "name": "time"}, 2, ("time",)),
    ({"type": "allowed_tools", "mode": "required",
      "tools": [{"type": "function", "name": "weather"}]}, 2, ("weather",)),
    # Allowed tools the model may call or not: those tools, and auto.
    ({"type": "allowed_tools", "mode": "auto",
      "tools": [{"type": "function", "name": "time"}]}, 1, "auto"),
])
def test_tools_and_tool_choice(choice: Any, tools: int, expected: Any) -> None:
    config = read_request(body(tools=[_WEATHER, _TIME], tool_choice=choice)).config
    schemas = (ToolSchema("weather", "The weather.", {"type": "object"}), ToolSchema("time", ""))
    assert config == UniConfig(tools=schemas[-tools:], tool_choice=expected)


def test_the_priority_tier_is_fast_mode_and_any_other_tier_is_ignored() -> None:
    assert read_request(body(service_tier="priority")).config == UniConfig(fast_mode=True)
    flex = read_request(body(service_tier="flex"))
    assert (flex.config, flex.ignored) == (UniConfig(), ("service_tier",))


# ------------------------------------------------------------------------------------------
# Reader: refused and ignored fields (08 D73)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "value"), [
    ("background", True),
    ("previous_response_id", "resp_1"),
    ("conversation", "conv_1"),
    ("prompt", {"id": "pmpt_1"}),
    ("top_logprobs", 5),
    ("prediction", {"type": "content", "content": "x"}),
    ("n", 2),
    ("logprobs", True),
    ("audio", {"voice": "alloy"}),
    ("modalities", ["text", "audio"]),
    ("include", ["message.output_text.logprobs"]),
])
def test_a_field_the_door_cannot_honour_is_refused_by_name(field: str, value: Any) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        read_request(body(**{field: value}))
    assert caught.value.parameter == field


@pytest.mark.parametrize(("field", "value"), [
    ("background", False), ("top_logprobs", 0), ("n", 1), ("logprobs", False),
    ("previous_response_id", None), ("modalities", ["text"]),
])
def test_a_refused_field_that_asks_for_nothing_passes(field: str, value: Any) -> None:
    assert read_request(body(**{field: value})).ignored == ()


@pytest.mark.parametrize(("field", "value"), [
    ("tools", [{"type": "web_search"}]),
    ("tool_choice", {"type": "file_search"}),
    ("tool_choice", "web_search"),
    ("tool_choice", {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "mcp"}]}),
    ("reasoning.effort", "maximal"),
])
def test_built_in_tools_and_unknown_efforts_are_refused(field: str, value: Any) -> None:
    head, _, tail = field.partition(".")
    with pytest.raises(UnsupportedParameterError) as caught:
        read_request(body(**{head: {tail: value} if tail else value}))
    assert caught.value.parameter in (field, head)


@pytest.mark.parametrize("entry", [
    {"type": "item_reference", "id": "msg_1"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    {"role": "user", "content": [{"type": "input_file", "file_id": "file_1"}]},
    {"role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]},
    {"role": "system", "content": [{"type": "input_image", "image_url": PNG}]},
])
def test_input_the_gateway_cannot_carry_is_refused(entry: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedContentError):
        read_request(body(input=[entry]))


def test_other_fields_are_ignored_and_named_in_order() -> None:
    read = read_request(body(
        metadata={"a": "b"}, user="u", store=True, context_management=[{"type": "x"}],
        top_k=3, include=["reasoning.encrypted_content"], text={"verbosity": "low"},
        parallel_tool_calls=False, seed=1, stop=["x"],
    ))
    assert read.ignored == ("metadata", "user", "store", "context_management", "top_k",
                            "include", "text.verbosity", "parallel_tool_calls", "seed", "stop")
    assert read.config == UniConfig()


# ------------------------------------------------------------------------------------------
# Reader: malformed bodies are typed errors
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("bad", "error"), [
    ([], WireFormatError),
    ({"input": "Hi"}, WireFormatError),
    (body(model=""), WireFormatError),
    (body(stream="yes"), WireFormatError),
    (body(input=3), WireFormatError),
    (body(input=["Hi"]), WireFormatError),
    (body(input=[{"role": "tool", "content": "x"}]), InvalidMessageError),
    (body(input=[{"role": "user", "content": 3}]), InvalidMessageError),
    (body(input=[{"role": "user", "content": [{"type": "input_text"}]}]), InvalidMessageError),
    (body(input=[{"role": "user", "content": [{"type": "input_image",
                                                "image_url": "data:image/png,xx"}]}]),
     InvalidMessageError),
    (body(input=[{"type": "function_call", "name": "f", "arguments": "{}"}]),
     InvalidMessageError),
    (body(input=[{"type": "reasoning", "summary": ["x"]}]), InvalidMessageError),
    (body(max_output_tokens="100"), WireFormatError),
    (body(max_output_tokens=True), WireFormatError),
    (body(temperature="hot"), WireFormatError),
    (body(top_p=10**400), WireFormatError),
    (body(reasoning="high"), WireFormatError),
    (body(reasoning={"effort": 1}), WireFormatError),
    (body(text={"format": {"type": "xml"}}), WireFormatError),
    (body(text={"format": {"type": "json_schema", "schema": {}}}), WireFormatError),
    (body(text={"format": {"type": "json_schema", "name": "n", "strict": "yes"}}),
     WireFormatError),
    (body(tools={"type": "function"}), WireFormatError),
    (body(tools=[{"type": "function"}]), WireFormatError),
    (body(tool_choice=3), WireFormatError),
    (body(tool_choice={"type": "allowed_tools", "mode": "any", "tools": []}), WireFormatError),
    (body(instructions=["x"]), WireFormatError),
])
def test_a_malformed_body_is_a_typed_error(bad: Any, error: type[MMSPError]) -> None:
    with pytest.raises(error):
        read_request(bad)


@pytest.mark.parametrize("arguments", ["[1]", "{", "null"])
def test_call_arguments_that_are_no_json_object_are_an_invalid_message(arguments: str) -> None:
    entry = {"type": "function_call", "call_id": "c", "name": "f", "arguments": arguments}
    with pytest.raises(InvalidMessageError) as caught:
        read_request(body(input=[entry]))
    assert caught.value.message_index == 0


def test_a_body_nested_too_deep_is_refused_without_recursion() -> None:
    deep: Any = {}
    for _ in range(100_000):
        deep = {"a": deep}
    with pytest.raises(WireFormatError):
        read_request(body(metadata=deep))


_AGENT_BODY = {
    "model": MODEL, "stream": True, "instructions": "Be brief.",
    "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Hi"},
                                     {"type": "input_image", "image_url": PNG}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}],
         "encrypted_content": "e"},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "c", "output": "r"},
    ],
    "tools": [_WEATHER], "tool_choice": {"type": "function", "name": "weather"},
    "reasoning": {"effort": "low", "summary": "auto"}, "max_output_tokens": 9,
    "text": {"format": {"type": "json_schema", "name": "n", "schema": {}}},
    "background": False, "metadata": {},
}


@given(changes=edits(_AGENT_BODY), whole=hostile_json())
def test_hostile_json_gives_only_typed_errors(changes: Any, whole: Any) -> None:
    """Any JSON value at any path of a full body, or as the whole body: a request or an
    ``MMSPError`` (08 D59), never a ``KeyError``, ``TypeError`` or ``RecursionError``."""
    for hostile in (apply_edits(_AGENT_BODY, changes, build=True),
                    apply_edits(whole, [], build=True)):
        with contextlib.suppress(MMSPError):
            assert isinstance(read_request(hostile), FrontRequest)


# ------------------------------------------------------------------------------------------
# The inverse property: read(build(x)) == normalize_request(x)
# ------------------------------------------------------------------------------------------

#: Each client of the protocol, its profile and models of its generations that take images.
_CLIENT_MODELS: dict[str, tuple[ResponsesProfile, list[str]]] = {
    "openai-official": (profiles.OPENAI, ["gpt-5.6", "gpt-6", "gpt-6-luna"]),
    "openai-responses": (profiles.COMPATIBLE, ["my-model", "gpt-6"]),
    "deepseek-official": (profiles.DEEPSEEK, ["deepseek-chat"]),
    "minimax-official": (profiles.MINIMAX, ["minimax-m3", "minimax-m3.1-flash"]),
}
_SENDABLE = (TextDone, ThinkingDone, ToolCallDone, ToolResultDone, ImageUrlDone)


def _sendable(message: UniMessage) -> UniMessage:
    """The message with only the items a Responses body carries, and a text when nothing
    but thinking is left (a message needs content besides thinking, 08 D67)."""
    items = tuple(item for item in message.content_items if isinstance(item, _SENDABLE))
    if all(isinstance(item, ThinkingDone) for item in items):
        items += (TextDone("answer"),)
    return attrs.evolve(message, content_items=items)


#: Configs a Responses client may take: the Responses API has no stop sequences and no seed
#: (every client of the protocol refuses them), nor image, speech or embedding options.
_request_configs = configs().map(lambda config: attrs.evolve(
    config, stop_sequences=None, seed=None, image_config=None, tts_config=None,
    embedding_config=None, extra={},
    prompt_caching=config.prompt_caching if config.prompt_caching == "enable" else None,
))


@given(
    client_model=st.sampled_from([(c, m) for c, (_profile, models) in _CLIENT_MODELS.items()
                                  for m in models]),
    history=st.lists(messages().map(_sendable), min_size=1, max_size=4),
    config=_request_configs,
)
def test_reading_a_built_request_gives_its_normalisation(
    client_model: tuple[str, str], history: list[UniMessage], config: UniConfig
) -> None:
    client, model = client_model
    try:
        request = adapters.build_request(client, model, history, config)
    except MMSPError:
        return  # what the client refuses has no body to read
    read = read_request(json.loads(request.body))
    profile = _CLIENT_MODELS[client][0]
    assert adapters.client_spec(client).profile is profile
    expected = normalize_request(profile, model, history, config)
    assert [to_wire(m) for m in read.messages] == [to_wire(m) for m in expected[0]]
    assert read.config == expected[1]
    assert (read.model, read.stream) == (model, True)


# ------------------------------------------------------------------------------------------
# The writer: decoding its output gives back the stream it was fed
# ------------------------------------------------------------------------------------------

_names = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)
_thinking_fidelity = st.none() | st.fixed_dictionaries(
    {}, optional={"channel": st.sampled_from(["summary", "content", "other"]),
                  "encrypted_content": st.text(max_size=6), "signature": st.text(max_size=6),
                  "format": st.just("openai-responses-v1")})
_text_fidelity = st.none() | st.fixed_dictionaries(
    {}, optional={"phase": st.sampled_from(["commentary", "final_answer"])})


def _cut(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut into non-empty fragments where ``draw`` says."""
    cuts = sorted(set(draw(st.lists(st.integers(1, max(len(text) - 1, 1)), max_size=4))))
    bounds = [0, *[c for c in cuts if c < len(text)], len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@st.composite
def public_streams(draw: st.DrawFn) -> list[UniEvent]:
    """A public stream of text, thinking and tool-call groups (02 §3): text fidelity on the
    first fragment (a message's phase opens it), thinking fidelity on any fragment or on an
    empty fragment of its own at the end (as a Responses upstream records it), then a stop."""
    events: list[Item] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text", "thinking", "tool_call"]))
        if kind == "tool_call":
            arguments = draw(json_objects())
            pieces = _cut(draw, arguments_json(arguments))
            name, call_id = draw(_names), draw(_names)
            events.append(ToolCallDelta(name, call_id, pieces[0]))
            events += [ToolCallDelta("", "", piece) for piece in pieces[1:]]
            events.append(ToolCallDone(name, call_id, arguments))
            continue
        fidelity = draw(_text_fidelity if kind == "text" else _thinking_fidelity) or None
        text = draw(st.text(min_size=0 if fidelity else 1, max_size=30))
        delta, done = (TextDelta, TextDone) if kind == "text" else (ThinkingDelta, ThinkingDone)
        fragments: list[Any] = [delta(piece) for piece in _cut(draw, text)] if text else []
        if fidelity is not None:
            where = draw(st.integers(0, len(fragments) if kind == "thinking" else 0))
            if where == len(fragments):
                fragments.append(delta("", fidelity))
            else:
                fragments[where] = attrs.evolve(fragments[where], fidelity=fidelity)
        events += [*fragments, done(text, fidelity)]
    stop = UniEvent("stop", (), draw(usage()), draw(finish_reasons()), 1_700_000_000_000)
    return [UniEvent("delta", (item,), created_at=1_700_000_000_000) for item in events] + [stop]


def _fragments(events: list[UniEvent]) -> list[tuple[str, Any]]:
    """The non-empty fragments of a stream: kind and growing field."""
    growing: dict[type, Callable[[Any], Any]] = {
        TextDelta: lambda item: item.text, ThinkingDelta: lambda item: item.thinking,
        ToolCallDelta: lambda item: item.arguments,
    }
    return [(item.type, growing[type(item)](item)) for event in events
            for item in event.content_items if type(item) in growing and growing[type(item)](item)]


def _decode_every_way(body: bytes, data: st.DataObject) -> tuple[list[UniEvent], Any]:
    """Decode ``body`` whole, byte by byte and in a drawn chunking: all three agree."""
    events, error = run(adapters.new_pipeline(SOURCE, clock=None), [body])
    whole = outcome(events, error)
    bytewise = [body[i : i + 1] for i in range(len(body))]
    assert outcome(*run(adapters.new_pipeline(SOURCE, clock=None), bytewise)) == whole
    chunks = data.draw(chunked(body), label="chunks")
    assert outcome(*run(adapters.new_pipeline(SOURCE, clock=None), chunks)) == whole
    return events, error


def _done_items(events: list[UniEvent]) -> list[DoneItem]:
    return [item for event in events for item in event.content_items
            if isinstance(item, TextDone | ThinkingDone | ToolCallDone)]


@given(stream=public_streams(), data=st.data())
def test_the_writer_fed_event_by_event_decodes_to_the_same_stream(
    stream: list[UniEvent], data: st.DataObject
) -> None:
    writer = ResponsesWriter(MODEL)
    body = b"".join(writer.event(event) for event in stream)
    events, error = _decode_every_way(body, data)
    done = _done_items(stream)
    expected, finish = normalize(done, stream[-1].finish_reason or FinishReason.UNKNOWN)
    assert [to_wire(item) for item in _done_items(events)] == [to_wire(i) for i in expected]
    assert _fragments(events) == _fragments(stream)
    if not expected or all(isinstance(item, ThinkingDone) for item in expected):
        assert error is not None  # EmptyResponseError: nothing but thinking
        return
    assert error is None
    assert events[-1].usage_metadata == stream[-1].usage_metadata
    assert events[-1].finish_reason == finish


def test_the_writer_frames_as_a_responses_server() -> None:
    writer = ResponsesWriter(MODEL)
    first = writer.event(UniEvent("delta", (TextDelta("Hel", {"phase": "final_answer"}),),
                                  created_at=1_700_000_000_123))
    frames = [frame for frame in first.split(b"\n\n") if frame]
    assert [frame.split(b"\n")[0] for frame in frames] == [
        b"event: response.created", b"event: response.in_progress",
        b"event: response.output_item.added", b"event: response.content_part.added",
        b"event: response.output_text.delta",
    ]
    data = [json.loads(frame.split(b"\n")[1][6:]) for frame in frames]
    assert [d["sequence_number"] for d in data] == [0, 1, 2, 3, 4]
    assert data[0]["response"]["created_at"] == 1_700_000_000
    assert data[2]["item"]["phase"] == "final_answer"
    assert writer.event(UniEvent("delta", (TextDelta("lo"),))).startswith(
        b"event: response.output_text.delta\n")
    done = writer.event(UniEvent("delta", (TextDone("Hello", {"phase": "final_answer"}),)))
    assert [line for line in done.split(b"\n") if line.startswith(b"event:")] == [
        b"event: response.output_text.done", b"event: response.content_part.done",
        b"event: response.output_item.done",
    ]
    stop = writer.event(UniEvent("stop", (), UsageMetadata(2, 8, 5, 3), FinishReason.STOP))
    completed = json.loads(stop.split(b"\n")[1][6:])
    assert completed["type"] == "response.completed"
    assert completed["response"]["usage"] == {
        "input_tokens": 10, "input_tokens_details": {"cached_tokens": 2}, "output_tokens": 8,
        "output_tokens_details": {"reasoning_tokens": 5}, "total_tokens": 18,
    }
    assert completed["response"]["output"][0]["content"][0]["text"] == "Hello"


def test_the_writer_refuses_items_a_responses_output_cannot_carry() -> None:
    with pytest.raises(UnsupportedContentError):
        ResponsesWriter(MODEL).event(UniEvent("delta", (ImageUrlDone(PNG),)))


# ------------------------------------------------------------------------------------------
# The writer: errors end the stream as failed, never cleanly
# ------------------------------------------------------------------------------------------

_CUT = IncompleteStreamError("anthropic-official", ("usage_metadata", "finish_reason"),
                             usage_metadata=UsageMetadata(prompt_tokens=4))


@pytest.mark.parametrize("sent", [0, 1, 2, 3])
def test_a_cut_upstream_is_a_failed_response_never_a_clean_end(sent: int) -> None:
    """Cut after ``sent`` public events (inside a text group, after it, before anything)."""
    stream = [UniEvent("delta", (TextDelta("Hi"),)), UniEvent("delta", (TextDone("Hi"),)),
              UniEvent("delta", (ThinkingDelta("hm"),))][:sent]
    writer = ResponsesWriter(MODEL)
    body = b"".join(writer.event(event) for event in stream) + writer.error(_CUT)
    events, error = run(adapters.new_pipeline(SOURCE, clock=None), [body])
    assert isinstance(error, ProviderStreamError)
    assert error.code == "server_error"
    assert error.provider_message is not None and "ended without" in error.provider_message
    assert error.usage_metadata == UsageMetadata(prompt_tokens=4)
    assert not [event for event in events if event.event_type == "stop"]


def test_a_provider_error_keeps_its_code_and_message() -> None:
    writer = ResponsesWriter(MODEL)
    body = writer.event(UniEvent("delta", (TextDelta("Hi"),))) + writer.error(
        ProviderStreamError("openai-official", "rate_limit_exceeded", None, "Slow down."))
    _events, error = run(adapters.new_pipeline(SOURCE, clock=None), [body])
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.provider_message) == ("rate_limit_exceeded", "Slow down.")


@pytest.mark.parametrize("end", ["stop", "error"])
def test_every_response_object_carries_the_id_given(end: str) -> None:
    """The pure writers draw no id: the gateway gives each response its own, which the
    opening, terminal and failed response objects and the whole response all carry; without
    one, ``RESPONSE_ID``."""
    writer = ResponsesWriter(MODEL, response_id="resp_7")
    body = writer.event(UniEvent("delta", (TextDone("Hi"),)))
    body += (writer.event(UniEvent("stop", (), UsageMetadata(), FinishReason.STOP))
             if end == "stop" else writer.error(_CUT))
    data = [json.loads(frame.split(b"\n")[1][6:]) for frame in body.split(b"\n\n") if frame]
    objects = [d["response"] for d in data if "response" in d]
    assert len(objects) == 3 and {o["id"] for o in objects} == {"resp_7"}
    whole = response([TextDone("Hi")], UsageMetadata(), FinishReason.STOP, model=MODEL,
                     response_id="resp_7")
    assert whole["id"] == "resp_7"
    assert response([], UsageMetadata(), FinishReason.STOP, model=MODEL)["id"] == RESPONSE_ID


def test_nothing_follows_the_end_of_the_stream() -> None:
    writer = ResponsesWriter(MODEL)
    writer.event(UniEvent("stop", (), UsageMetadata(), FinishReason.STOP))
    assert writer.error(_CUT) == b""
    with pytest.raises(MMSPError):
        writer.event(UniEvent("delta", (TextDelta("late"),)))


# ------------------------------------------------------------------------------------------
# The whole response and the error body
# ------------------------------------------------------------------------------------------


def test_the_whole_response_is_the_response_object() -> None:
    items: list[DoneItem] = [
        ThinkingDone("t", {"channel": "summary", "encrypted_content": "e"}),
        TextDone("Hi", {"phase": "final_answer"}),
        ToolCallDone("f", "call_1", {"a": 1}),
    ]
    whole = response(items, UsageMetadata(1, 2, 3, 4), FinishReason.TOOL_CALL, model=MODEL)
    assert {k: whole[k] for k in ("id", "object", "status", "model", "error")} == {
        "id": "resp_mmsp", "object": "response", "status": "completed", "model": MODEL,
        "error": None,
    }
    assert whole["output"] == [
        {"id": "rs_0", "type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}],
         "encrypted_content": "e"},
        {"id": "msg_1", "type": "message", "role": "assistant", "phase": "final_answer",
         "status": "completed",
         "content": [{"type": "output_text", "annotations": [], "text": "Hi"}]},
        {"id": "fc_2", "type": "function_call", "call_id": "call_1", "name": "f",
         "arguments": '{"a":1}', "status": "completed"},
    ]
    assert whole["usage"] == {
        "input_tokens": 3, "input_tokens_details": {"cached_tokens": 1}, "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 3}, "total_tokens": 10,
    }


def test_the_whole_response_is_what_the_stream_completes_with() -> None:
    items: list[DoneItem] = [TextDone("Hi there"), ToolCallDone("f", "c", {})]
    counts = UsageMetadata(0, 1, 0, 1)
    whole = response(items, counts, FinishReason.LENGTH, model=MODEL)
    streamed = adapters.render(SOURCE, items, counts, FinishReason.LENGTH, model=MODEL,
                               fragment_size=3)
    last = json.loads(streamed.rstrip(b"\n").split(b"\n")[-1][6:])
    assert last["type"] == "response.incomplete"
    assert last["response"] == whole
    assert whole["incomplete_details"] == {"reason": "max_output_tokens"}


def test_the_whole_response_refuses_items_it_cannot_carry() -> None:
    with pytest.raises(UnsupportedContentError):
        response([ImageUrlDone(PNG)], UsageMetadata(), FinishReason.STOP, model=MODEL)


@pytest.mark.parametrize(("status", "error_type", "code"), [
    (400, "invalid_request_error", None),
    (401, "invalid_request_error", "invalid_api_key"),
    (404, "invalid_request_error", "not_found"),
    (429, "requests", "rate_limit_exceeded"),
    (500, "server_error", None),
    (503, "server_error", None),
])
def test_the_error_body_is_openais(status: int, error_type: str, code: str | None) -> None:
    assert error_body(status, "No.", param="background") == {"error": {
        "message": "No.", "type": error_type, "param": "background", "code": code}}


def test_the_protocol_record_has_the_front_door() -> None:
    front = PROTOCOL.front
    assert front is not None and (front.path, front.id_prefix) == ("/v1/responses", "resp_")
    assert front.read_request(body()).model == MODEL
    assert isinstance(front.new_writer(MODEL, response_id="resp_1"), ResponsesWriter)
