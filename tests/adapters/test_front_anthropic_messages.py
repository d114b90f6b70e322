"""The Anthropic Messages front door (08 D73): the reader of ``POST /v1/messages`` bodies, its
inverse property against the builder, the event-by-event writer, the whole response and the
error body.

The writer is checked with the protocol's own machine: what it writes decodes (whole, byte by
byte, in random chunkings) into the public stream it was fed, and an error it writes decodes
into a typed error, never a clean end. Tests that only read dicts run in one JSON mode; the
ones that decode or parse run in both.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from harness import decode_every_way
from hypothesis import assume, given
from hypothesis import strategies as st

import adapters
from adapters.anthropic_messages import PROTOCOL
from adapters.anthropic_messages.reader import FORMAT_NAME, read_request
from adapters.anthropic_messages.render import normalize
from adapters.anthropic_messages.request_normalization import normalize_request
from adapters.anthropic_messages.writer import MESSAGE_ID, MessagesWriter, error_body, response
from adapters.testing import check_only_mmsp_errors, check_recording, split_events
from mmsp_core import jsonlib
from mmsp_core.errors import (
    IncompleteStreamError,
    InvalidMessageError,
    MMSPError,
    ProviderHTTPError,
    ProviderStreamError,
    StreamTimeoutError,
    UnsupportedParameterError,
    WireFormatError,
)
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    ImageUrlDone,
    PromptCaching,
    ResponseFormat,
    TextDelta,
    TextDone,
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
from mmsp_core.testing import outcome, run
from mmsp_core.testing.strategies import (
    Huge,
    apply_edits,
    chunked,
    configs,
    done_items,
    edits,
    finish_reasons,
    hostile_json,
    json_objects,
    usage,
)
from mmsp_core.wire import to_wire

SOURCE = "ant-messages"
REDACTED = "_REDACTED_THINKING"
PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG").decode()


def body_of(**fields: Any) -> dict[str, Any]:
    """A minimal request with ``fields`` added."""
    return {
        "model": "claude-x",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Hi"}],
        **fields,
    }


def config_of(**fields: Any) -> UniConfig:
    return read_request(body_of(**fields)).config


# --------------------------------------------------------------------------------------------
# Reading requests
# --------------------------------------------------------------------------------------------

AGENT_TURN: dict[str, Any] = {
    "model": "claude-opus-5",
    "max_tokens": 4096,
    "system": [
        {"type": "text", "text": "You are terse."},
        {"type": "text", "text": "Use tools.", "cache_control": {"type": "ephemeral"}},
    ],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": "iVBORw=="}},
                {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": "SIG"},
                {"type": "redacted_thinking", "data": "OPAQUE"},
                {"type": "text", "text": "Checking.", "citations": [{"type": "x"}]},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "a"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "is_error": False,
                    "content": [
                        {"type": "text", "text": "found"},
                        {"type": "text", "text": "twice"},
                        {"type": "image", "source": {"type": "url", "url": "https://x.test/b"}},
                    ],
                },
            ],
        },
    ],
    "tools": [
        {"name": "lookup", "description": "Look up.", "strict": True,
         "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
        {"type": "custom", "name": "noop", "input_schema": {"type": "object"}},
    ],
    "tool_choice": {"type": "any", "disable_parallel_tool_use": False},
    "thinking": {"type": "adaptive", "display": "summarized"},
    "output_config": {"effort": "high", "format": {"type": "json_schema",
                                                   "schema": {"type": "object"}}},
    "temperature": 0.5,
    "top_p": 0.9,
    "top_k": 40,
    "stop_sequences": ["END"],
    "metadata": {"user_id": "u"},
    "context_management": {"edits": []},
    "speed": "fast",
    "stream": True,
}


def test_an_agent_turn_is_read_field_by_field() -> None:
    read = read_request(AGENT_TURN)
    assert read.model == "claude-opus-5" and read.stream is True
    assert read.messages == (
        UniMessage.user(
            "What is this?",
            ImageUrlDone("data:image/png;base64,iVBORw=="),
            ImageUrlDone("https://x.test/a.png"),
        ),
        UniMessage.assistant(
            ThinkingDone("Look it up.", {"signature": "SIG"}),
            ThinkingDone(REDACTED, {"signature": "OPAQUE"}),
            TextDone("Checking."),
            ToolCallDone("lookup", "toolu_1", {"q": "a"}),
        ),
        UniMessage("user", (ToolResultDone("found\n\ntwice", "toolu_1", ("https://x.test/b",)),)),
    )
    assert read.config == UniConfig(
        max_tokens=4096,
        temperature=0.5,
        top_p=0.9,
        stop_sequences=("END",),
        response_format=ResponseFormat("json_schema", FORMAT_NAME, {"type": "object"}),
        tools=(
            ToolSchema("lookup", "Look up.",
                       {"type": "object", "properties": {"q": {"type": "string"}}}),
            ToolSchema("noop", "", {"type": "object"}),
        ),
        tool_choice="required",
        thinking_level=ThinkingLevel.HIGH,
        thinking_summary=True,
        system_prompt="You are terse.\n\nUse tools.",
        prompt_caching=PromptCaching.ENABLE,
        fast_mode=True,
    )
    # In the order the request wrote them; a false is_error is still a field dropped.
    assert read.ignored == (
        "text.citations",
        "tool_result.is_error",
        "tools.strict",
        "top_k",
        "metadata",
        "context_management",
    )
    tools_first = {"tools": AGENT_TURN["tools"], "top_k": 1, **AGENT_TURN}
    assert read_request(tools_first).ignored[:3] == ("tools.strict", "top_k", "text.citations")


def test_defaults_strings_and_null_fields() -> None:
    read = read_request({
        "model": "m", "messages": [{"role": "assistant", "content": "Hello"}],
        "system": "Be kind.", "metadata": None, "thinking": None, "stream": None,
    })
    assert read.messages == (UniMessage.assistant("Hello"),)
    assert read.config == UniConfig(system_prompt="Be kind.")
    assert (read.stream, read.ignored) == (False, ())


@pytest.mark.parametrize(
    ("fields", "level", "summary"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 0}}, ThinkingLevel.LOW, None),
        ({"thinking": {"type": "enabled", "budget_tokens": 2047}}, ThinkingLevel.LOW, None),
        ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, ThinkingLevel.MEDIUM, None),
        ({"thinking": {"type": "enabled", "budget_tokens": 8191}}, ThinkingLevel.MEDIUM, None),
        ({"thinking": {"type": "enabled", "budget_tokens": 8192}}, ThinkingLevel.HIGH, None),
        ({"thinking": {"type": "enabled", "budget_tokens": 24575}}, ThinkingLevel.HIGH, None),
        ({"thinking": {"type": "enabled", "budget_tokens": 24576}}, ThinkingLevel.XHIGH, None),
        ({"thinking": {"type": "disabled"}}, ThinkingLevel.NONE, None),
        ({"thinking": {"type": "between_tools"}}, ThinkingLevel.NONE, None),
        ({"thinking": {"type": "adaptive"}}, ThinkingLevel.MEDIUM, None),
        ({"thinking": {"type": "adaptive", "display": "omitted"},
          "output_config": {"effort": "max"}}, ThinkingLevel.MAX, False),
        ({"output_config": {"effort": "xhigh"}}, ThinkingLevel.XHIGH, None),
        ({"output_config": {"effort": "minimal"}}, ThinkingLevel.LOW, None),
        ({"output_config": {"effort": "none"}}, ThinkingLevel.NONE, None),
        ({}, None, None),
    ],
)
def test_thinking_and_effort_map_to_a_level(
    fields: dict[str, Any], level: ThinkingLevel | None, summary: bool | None
) -> None:
    config = config_of(**fields)
    assert (config.thinking_level, config.thinking_summary) == (level, summary)


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "f"}, ("f",)),
    ],
)
def test_tool_choice(choice: dict[str, Any], expected: str | tuple[str, ...]) -> None:
    assert config_of(tool_choice=choice).tool_choice == expected


@pytest.mark.parametrize(
    ("fields", "caching"),
    [
        ({}, None),
        ({"cache_control": {"type": "ephemeral"}}, PromptCaching.ENABLE),
        ({"cache_control": {"type": "ephemeral", "ttl": "1h"}}, PromptCaching.ENHANCE),
        ({"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]},
         PromptCaching.ENABLE),
        ({"tools": [{"name": "f", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
          "cache_control": {"type": "ephemeral"}}, PromptCaching.ENHANCE),
        ({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "5m"}},
        ]}]}, PromptCaching.ENABLE),
    ],
)
def test_cache_control_anywhere_asks_for_prompt_caching(
    fields: dict[str, Any], caching: PromptCaching | None
) -> None:
    assert config_of(**fields).prompt_caching is caching


@pytest.mark.parametrize(
    ("fields", "fast", "ignored"),
    [
        ({"speed": "fast"}, True, ()),
        ({"speed": "standard"}, False, ()),
        ({"service_tier": "priority"}, True, ()),
        ({"service_tier": "auto"}, None, ("service_tier",)),
        ({"service_tier": "standard_only", "speed": "fast"}, True, ("service_tier",)),
    ],
)
def test_speed_and_priority_tier_are_fast_mode(
    fields: dict[str, Any], fast: bool | None, ignored: tuple[str, ...]
) -> None:
    read = read_request(body_of(**fields))
    assert (read.config.fast_mode, read.ignored) == (fast, ignored)


@pytest.mark.parametrize(
    ("fields", "parameter"),
    [
        ({"container": "container_1"}, "container"),
        ({"mcp_servers": [{"type": "url", "url": "https://mcp.test", "name": "m"}]},
         "mcp_servers"),
        ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools"),
        ({"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}, "tool_choice"),
    ],
)
def test_fields_that_cannot_be_honoured_are_refused_by_name(
    fields: dict[str, Any], parameter: str
) -> None:
    with pytest.raises(UnsupportedParameterError) as refused:
        read_request(body_of(**fields))
    assert refused.value.parameter == parameter
    # The gateway answers it with 400 in Anthropic's error body, which names the field.
    assert error_body(400, str(refused.value), param=parameter) == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": str(refused.value)},
    }
    assert repr(parameter) in str(refused.value)


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ([], "body"),
        ("text", "body"),
        ({"messages": []}, "body"),
        (body_of(model=""), "body"),
        (body_of(stream="yes"), "body"),
        (body_of(messages={"role": "user"}), "body"),
        (body_of(max_tokens="100"), "body"),
        (body_of(max_tokens=True), "body"),
        (body_of(temperature=10**400), "body"),
        (body_of(top_p="high"), "body"),
        (body_of(stop_sequences=["a", 1]), "body"),
        (body_of(system=[{"type": "image"}]), "body"),
        (body_of(speed="slow"), "body"),
        (body_of(cache_control="ephemeral"), "body"),
        (body_of(thinking={"type": "enabled"}), "thinking"),
        (body_of(thinking={"type": "maybe"}), "thinking"),
        (body_of(thinking={"type": "adaptive", "display": "loud"}), "thinking"),
        (body_of(output_config={"effort": "huge"}), "output_config"),
        (body_of(output_config={"format": {"type": "json_object"}}), "output_config.format"),
        (body_of(output_format={"type": "json_schema"}), "output_format"),
        (body_of(tools=[{"description": "no name"}]), "tools[0]"),
        (body_of(tool_choice={"type": "tool"}), "tool_choice"),
        (body_of(tool_choice={"type": "some"}), "tool_choice"),
        (body_of(messages=[{"role": "system", "content": "x"}]), "messages[0]"),
        (body_of(messages=[{"role": "user", "content": 3}]), "messages[0]"),
        (body_of(messages=[{"role": "user", "content": [{"type": "text"}]}]),
         "messages[0].content[0]"),
        (body_of(messages=[{"role": "user", "content": [{"type": "tool_use", "id": "t",
                                                         "name": "f", "input": []}]}]),
         "messages[0].content[0]"),
        (body_of(messages=[{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": [{"text": "x"}]}]}]),
         "messages[0].content[0].content[0]"),
    ],
)
def test_malformed_bodies_are_wire_format_errors_naming_the_place(body: Any, path: str) -> None:
    with pytest.raises(WireFormatError) as bad:
        read_request(body)
    assert bad.value.path == path


@pytest.mark.parametrize(
    ("block", "item_type"),
    [
        ({"type": "document", "source": {"type": "text", "data": "x"}}, "document"),
        ({"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
         "server_tool_use"),
        ({"type": "image", "source": {"type": "file", "file_id": "f"}}, "image"),
        ({"type": "tool_result", "tool_use_id": "t",
          "content": [{"type": "document", "source": {}}]}, "tool_result"),
        ({"type": "tool_result", "tool_use_id": "t",
          "content": [{"type": "tool_result", "tool_use_id": "u"}]}, "tool_result"),
    ],
)
def test_blocks_the_door_cannot_carry_are_invalid_messages(
    block: dict[str, Any], item_type: str
) -> None:
    messages = [{"role": "user", "content": "Hi"}, {"role": "user", "content": [block]}]
    with pytest.raises(InvalidMessageError) as refused:
        read_request(body_of(messages=messages))
    assert (refused.value.item_type, refused.value.message_index) == (item_type, 1)


#: A body that holds every field family the reader reads, for the hostile-value property.
RICH_BODY: dict[str, Any] = {
    **AGENT_TURN,
    "thinking": {"type": "enabled", "budget_tokens": 5000, "display": "omitted"},
    "tool_choice": {"type": "tool", "name": "lookup"},
    "output_format": {"type": "json_schema", "schema": {"type": "object"}},
    "cache_control": {"type": "ephemeral", "ttl": "1h"},
    "service_tier": "priority",
    "messages": [*AGENT_TURN["messages"], {"role": "assistant", "content": "ok"}],
}


def _built(value: Any) -> Any:
    return value.build() if isinstance(value, Huge) else value


@given(
    body=st.one_of(
        hostile_json().map(_built),
        edits(RICH_BODY).map(lambda changes: apply_edits(RICH_BODY, changes, build=True)),
    )
)
def test_any_json_value_anywhere_reads_or_raises_an_mmsp_error(body: Any) -> None:
    try:
        read = read_request(body)
    except MMSPError:
        return
    assert isinstance(read.config, UniConfig)


# --------------------------------------------------------------------------------------------
# The inverse property: read(build(x)) == normalize_request(x)
# --------------------------------------------------------------------------------------------

#: The clients of this protocol and models whose generation rows differ (05 §2.1).
CALLS = [
    ("ant-messages", "claude-any"),
    ("anthropic-official", "claude-opus-5"),
    ("anthropic-official", "claude-sonnet-4-6"),
    ("anthropic-official", "claude-opus-5-5"),
    ("anthropic-official", "claude-sonnet-5-5"),
]
_ids = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)
_urls = st.one_of(
    st.builds(lambda data: "data:image/png;base64," + base64.b64encode(data).decode(),
              st.binary(max_size=12)),
    # Not canonical: the last character carries bits that decoding drops.
    st.just("data:image/gif;base64,AB=="),
    st.sampled_from(["https://x.test/a.png", "http://x.test/b"]),
)
_signatures = st.none() | st.fixed_dictionaries({"signature": st.text(max_size=6)})
_items = st.one_of(
    done_items().filter(lambda item: isinstance(item, TextDone | ThinkingDone | ToolCallDone)),
    st.builds(ThinkingDone, st.just(REDACTED) | st.text(max_size=6), _signatures),
    st.builds(ImageUrlDone, _urls),
    st.builds(ToolResultDone, st.text(max_size=8), _ids, st.none() | st.lists(_urls,
                                                                             max_size=2).map(tuple)),
)
# A message needs content besides thinking (08 D67): each one ends with a text.
_messages = st.builds(
    lambda role, items, text: UniMessage(role, (*items, TextDone(text))),
    st.sampled_from(["user", "assistant"]),
    st.lists(_items, max_size=3),
    st.text(max_size=6),
)


def _buildable(client: str, model: str, messages: list[UniMessage], config: UniConfig) -> Any:
    """``(request, config)`` with every config key the client refuses unset (the refusals
    are the builder's tests); ``assume`` away calls refused for their messages."""
    for _ in range(len(attrs.fields(UniConfig))):
        try:
            return adapters.build_request(client, model, messages, config), config
        except UnsupportedParameterError as refused:
            config = attrs.evolve(config, **{refused.parameter: None})
        except InvalidMessageError:
            assume(False)
    raise AssertionError(f"still refused: {config}")


@given(
    call=st.sampled_from(CALLS),
    messages=st.lists(_messages, min_size=1, max_size=3),
    config=configs().map(lambda config: attrs.evolve(config, extra={})),
)
def test_reading_what_a_client_built_gives_back_the_normalised_call(
    call: tuple[str, str], messages: list[UniMessage], config: UniConfig
) -> None:
    client, model = call
    request, config = _buildable(client, model, messages, config)
    read = read_request(jsonlib.loads(request.body.decode()))
    normal_messages, normal_config = normalize_request(
        adapters.CLIENTS[client].profile, model, messages, config
    )
    assert (read.model, read.stream, read.ignored) == (model, True, ())
    assert read.config == normal_config
    assert read.messages == normal_messages


# --------------------------------------------------------------------------------------------
# The writer
# --------------------------------------------------------------------------------------------


def _decode(body: bytes, chunks: list[bytes] | None = None) -> tuple[list[UniEvent], Any]:
    ticks = iter(range(1 << 30))
    pipeline = adapters.new_pipeline(SOURCE, clock=lambda: next(ticks))
    return run(pipeline, [body] if chunks is None else chunks)


def _write(events: list[UniEvent], writer: MessagesWriter | None = None) -> bytes:
    writer = writer or MessagesWriter("claude-gw")
    return b"".join(writer.event(event) for event in events)


def _comparable(events: list[UniEvent], error: Any) -> Any:
    """A run's outcome without timestamps (two decodes tick their clocks alike, but the
    comparison should not depend on it)."""
    wire, wire_error = outcome(events, error)
    return [{**event, "created_at": None} for event in wire], wire_error


def _live(counts: UsageMetadata) -> UsageMetadata:
    """The usage a live writer reports (Anthropic's SDKs need input and output counts)."""
    return attrs.evolve(
        counts,
        prompt_tokens=counts.prompt_tokens or 0,
        response_tokens=counts.response_tokens or 0,
    )


_signature = st.fixed_dictionaries({"signature": st.text(max_size=20)})
anthropic_items = st.one_of(
    st.builds(TextDone, st.text(max_size=60)),
    st.builds(ThinkingDone, st.text(max_size=60), st.none() | _signature),
    st.builds(ThinkingDone, st.sampled_from([REDACTED, "_REDACTED", ""]), st.none() | _signature),
    st.builds(ToolCallDone, _ids, _ids, json_objects()),
    done_items(),
)


@given(
    items=st.lists(anthropic_items, max_size=5),
    counts=usage(),
    finish=finish_reasons(),
    size=st.none() | st.integers(1, 20),
    data=st.data(),
)
def test_the_writer_fed_an_anthropic_stream_event_by_event_writes_it_back(
    items: list[DoneItem],
    counts: UsageMetadata,
    finish: FinishReason,
    size: int | None,
    data: st.DataObject,
) -> None:
    # An upstream Anthropic stream, as the gateway receives it (always with an answer).
    upstream = adapters.render(
        SOURCE, [*items, TextDone("answer")], counts, finish, fragment_size=size
    )
    public, error = _decode(upstream)
    assert error is None
    body = _write(public)
    events, error = _decode(body, data.draw(chunked(body), label="chunks"))
    expected = [*public[:-1], attrs.evolve(public[-1], usage_metadata=_live(counts))]
    assert _comparable(events, error) == _comparable(expected, None)


@given(
    items=st.lists(done_items(), max_size=5),
    counts=usage(),
    finish=finish_reasons(),
    size=st.none() | st.integers(1, 20),
)
def test_the_writer_carries_another_protocols_stream_as_anthropic_normalises_it(
    items: list[DoneItem], counts: UsageMetadata, finish: FinishReason, size: int | None
) -> None:
    upstream = adapters.render(
        "openai-chat", [*items, TextDone("answer")], counts, finish, fragment_size=size
    )
    ticks = iter(range(1 << 30))
    public, error = run(adapters.new_pipeline("openai-chat", clock=lambda: next(ticks)),
                        [upstream])
    assume(error is None)
    events, error = _decode(_write(public))
    assert error is None
    done = [e.content_items[0] for e in public[:-1] if e.content_items[0].type.endswith(".done")]
    expected_items, expected_finish = normalize(done, public[-1].finish_reason or "unknown")
    assert [to_wire(e.content_items[0]) for e in events[:-1]
            if e.content_items[0].type.endswith(".done")] == [to_wire(i) for i in expected_items]
    usage_in = public[-1].usage_metadata or UsageMetadata()
    assert (events[-1].usage_metadata, events[-1].finish_reason) == (
        _live(usage_in), expected_finish
    )


STREAM_ITEMS: list[DoneItem] = [
    ThinkingDone("Let me check", {"signature": "S"}),
    ThinkingDone(REDACTED, {"signature": "R"}),
    TextDone("Checking the weather."),
    ToolCallDone("get_weather", "toolu_1", {"location": "Paris"}),
]


def _agent_stream() -> list[UniEvent]:
    body = adapters.render(SOURCE, STREAM_ITEMS, UsageMetadata(2, 30, 5, 7),
                           FinishReason.TOOL_CALL, fragment_size=4)
    events, error = _decode(body)
    assert error is None
    return events


def test_the_written_stream_decodes_alike_whole_byte_by_byte_and_chunked() -> None:
    public = _agent_stream()
    events, error = decode_every_way(SOURCE, _write(public))
    assert _comparable(events, error) == _comparable(public, None)


def test_a_body_recorded_from_the_door_passes_the_conformance_checks(tmp_path: Path) -> None:
    public = _agent_stream()
    recorded = tmp_path / "front-door.sse"
    recorded.write_bytes(_write(public))
    stop = to_wire(public[-1])
    expected = {
        "items": [to_wire(e.content_items[0]) for e in public[:-1]
                  if e.content_items[0].type.endswith(".done")],
        "stop": {"usage_metadata": stop["usage_metadata"], "finish_reason": "tool_call"},
    }
    (tmp_path / "front-door.expected.json").write_text(json.dumps(expected))
    check_recording(SOURCE, recorded, examples=5)
    check_only_mmsp_errors(SOURCE, recorded.read_bytes(), examples=20)


def test_the_frames_are_anthropics_one_event_at_a_time() -> None:
    writer = MessagesWriter("claude-gw", response_id="msg_gw")
    public = _agent_stream()
    written = [writer.event(event) for event in public]
    names = [
        [line[7:] for line in frames.decode().splitlines() if line.startswith("event: ")]
        for frames in written
    ]
    # The first event opens the message; the redacted block waits for its item's end.
    assert names[0] == ["message_start", "ping", "content_block_start", "content_block_delta"]
    assert names[-1] == ["message_delta", "message_stop"]
    # The signature goes last in its block, when the thinking item is done.
    assert b'"signature_delta","signature":"S"' in written[public.index(next(
        e for e in public if isinstance(e.content_items[0], ThinkingDone)))]
    redacted = [frames for frames in written if b"redacted_thinking" in frames]
    assert len(redacted) == 1 and b'"data":"R"' in redacted[0]
    start = json.loads(split_events(written[0])[0].split(b"data: ", 1)[1])
    assert start["message"]["id"] == "msg_gw" and start["message"]["model"] == "claude-gw"
    assert start["message"]["usage"] == {"input_tokens": 0, "output_tokens": 0}
    delta = json.loads(split_events(written[-1])[0].split(b"data: ", 1)[1])
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert delta["usage"] == {"input_tokens": 30, "cache_read_input_tokens": 2,
                              "output_tokens": 12,
                              "output_tokens_details": {"thinking_tokens": 5}}
    assert writer.event(public[-1]) == b""


def test_every_frame_is_an_event_the_official_sdk_reads() -> None:
    anthropic_types = pytest.importorskip("anthropic.types")
    pydantic = pytest.importorskip("pydantic")
    events = pydantic.TypeAdapter(anthropic_types.RawMessageStreamEvent)
    body = _write([*_agent_stream()[:-1], UniEvent("stop", (), UsageMetadata(),
                                                   FinishReason.STOP)])
    for frame in split_events(body):
        name, data = frame.decode().split("\n")[:2]
        if name != "event: ping":
            events.validate_python(jsonlib.loads(data.removeprefix("data: ")))


def test_a_live_writer_reports_counts_the_sdks_require() -> None:
    body = _write([UniEvent("delta", (TextDelta("Hi"),)), UniEvent("delta", (TextDone("Hi"),)),
                   UniEvent("stop", (), UsageMetadata(), FinishReason.STOP)])
    assert b'"usage":{"input_tokens":0,"output_tokens":0}' in body
    events, error = _decode(body)
    assert error is None and events[-1].usage_metadata == UsageMetadata(None, 0, None, 0)


def _message_id(body: bytes) -> str:
    """The message id ``message_start`` carries in ``body``."""
    start = json.loads(split_events(body)[0].split(b"data: ", 1)[1])
    return str(start["message"]["id"])


def test_the_writer_echoes_the_id_it_is_given_and_makes_none() -> None:
    """The pure writer draws no id: the gateway gives each response its own; without one,
    every writer writes ``MESSAGE_ID``."""
    given = [MessagesWriter("m", response_id=f"msg_{n}").event(UniEvent("stop")) for n in (1, 2)]
    assert [_message_id(body) for body in given] == ["msg_1", "msg_2"]
    first, second = (MessagesWriter("m").event(UniEvent("stop")) for _ in range(2))
    assert first == second and _message_id(first) == MESSAGE_ID
    whole = response([], UsageMetadata(), FinishReason.STOP, model="m")
    assert whole["id"] == MESSAGE_ID


ERRORS = [
    (ProviderStreamError("anthropic-official", error_type="overloaded_error",
                         provider_message="Overloaded"), "overloaded_error"),
    (ProviderStreamError("openai-chat", error_type="server_error"), "overloaded_error"),
    (ProviderStreamError("openai-chat", error_type="invalid_prompt"), "api_error"),
    (ProviderStreamError("google-genai", code=429), "rate_limit_error"),
    (ProviderHTTPError("openai-chat", 401), "authentication_error"),
    (IncompleteStreamError("openai-chat", ("usage_metadata",)), "overloaded_error"),
    (StreamTimeoutError("openai-chat", "read", 30.0), "overloaded_error"),
    (UnsupportedParameterError("openai-chat", "seed"), "invalid_request_error"),
]


@pytest.mark.parametrize(("error", "error_type"), ERRORS, ids=[t for _, t in ERRORS])
@pytest.mark.parametrize("after", [0, 3, 9])
def test_an_error_ends_the_stream_as_anthropic_writes_it_and_decodes_typed(
    error: MMSPError, error_type: str, after: int
) -> None:
    writer = MessagesWriter("claude-gw")
    body = _write(_agent_stream()[:after], writer) + writer.error(error)
    assert body.endswith(b"\n\n") and b"message_stop" not in body
    assert writer.event(UniEvent("stop")) == b"" and writer.error(error) == b""
    _, decoded = decode_every_way(SOURCE, body)
    assert isinstance(decoded, ProviderStreamError)
    assert (decoded.error_type, decoded.provider_message) == (error_type, str(error))


def test_an_error_after_the_stop_writes_nothing() -> None:
    writer = MessagesWriter("claude-gw")
    _write(_agent_stream(), writer)
    assert writer.error(ProviderStreamError("x")) == b""


# --------------------------------------------------------------------------------------------
# The whole response and the error body
# --------------------------------------------------------------------------------------------


def test_the_whole_response_is_anthropics_message_object() -> None:
    items = [*STREAM_ITEMS, ThinkingDone("unsigned"), ImageUrlDone("https://x.test/i")]
    body = response(items, UsageMetadata(2, 30, 5, 7), FinishReason.TOOL_CALL,
                    model="claude-gw", response_id="msg_1")
    assert body == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-gw",
        "content": [
            {"type": "thinking", "thinking": "Let me check", "signature": "S"},
            {"type": "redacted_thinking", "data": "R"},
            {"type": "text", "text": "Checking the weather."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
             "input": {"location": "Paris"}},
            {"type": "thinking", "thinking": "unsigned", "signature": ""},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 30,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 2,
            "output_tokens": 12,
            "output_tokens_details": {"thinking_tokens": 5},
        },
    }
    anthropic_types = pytest.importorskip("anthropic.types")
    anthropic_types.Message.model_validate(body)
    bare = response([TextDone("x")], UsageMetadata(), FinishReason.STOP, model="m")
    assert bare["usage"] == {"input_tokens": 0, "cache_creation_input_tokens": 0,
                             "cache_read_input_tokens": None, "output_tokens": 0}
    assert bare["id"].startswith("msg_") and bare["stop_reason"] == "end_turn"
    anthropic_types.Message.model_validate(bare)


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (422, "invalid_request_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (503, "api_error"),
        (529, "overloaded_error"),
    ],
)
def test_the_error_body_types_each_status_as_anthropic_does(status: int, error_type: str) -> None:
    body = error_body(status, "no")
    assert body == {"type": "error", "error": {"type": error_type, "message": "no"}}
    anthropic_types = pytest.importorskip("anthropic.types")
    if error_type != "request_too_large":  # sent by Anthropic's proxy; the SDK has no type
        anthropic_types.ErrorResponse.model_validate({**body, "request_id": None})


def test_the_protocol_record_carries_the_front_door() -> None:
    door = PROTOCOL.front
    assert door is not None and door.path == "/v1/messages" and door.id_prefix == "msg_"
    assert door.read_request is read_request and door.response is response
    assert isinstance(door.new_writer("m", response_id="msg_1"), MessagesWriter)
    assert adapters.PROTOCOLS[SOURCE].front is door
