"""The Chat Completions machine and renderer (spec 06 §3, §7; 02; 08 D4, D6, D33, D36, D42,
D43, D45, D49).

Recorded bodies run through ``adapters.testing.check_protocol`` (``test_check_protocol.py``)
and, per client type, through ``check_fixture``; hand-written bodies run whole, byte by byte and
in random chunkings (``outcome_every_way``), which must all agree.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from harness import FIXTURES, check_fixture, decode_every_way
from hypothesis import given
from hypothesis import strategies as st

import adapters
from adapters.openai_chat.machine import ChatMachine
from adapters.openai_chat.render import normalize
from mmsp_core import (
    EmptyResponseError,
    IncompleteStreamError,
    MalformedEventError,
    ProviderStreamError,
    ToolCallArgumentParseError,
    UnknownEventError,
)
from mmsp_core.items import ClientEvent
from mmsp_core.kinds import Fragment
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    Item,
    TextDone,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.sse import SSEEvent
from mmsp_core.testing import assert_stream_grammar, outcome, run
from mmsp_core.testing.strategies import chunked, done_items, finish_reasons, usage

SOURCE = "openai-chat"


def test_the_base_url_does_not_change_the_usage() -> None:
    # 10 completion tokens, 11 of them reasoning: OpenRouter left reasoning out, and D52 reads
    # it the same on every endpoint (08 D52 subsumes 06 §7), so no base URL changes the result.
    case = FIXTURES / "openai-chat" / "openrouter-comments-inline-error-length"
    check_fixture(
        SOURCE,
        case.with_suffix(".sse"),
        case.with_suffix(".expected.json"),
        base_url="https://openrouter.ai/api/v1",
    )


# --------------------------------------------------------------------------------------------
# Hand-written bodies
# --------------------------------------------------------------------------------------------


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    index: int = 0,
    **extra: Any,
) -> bytes:
    """One ``data:`` event holding a chunk with one choice."""
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": index, "delta": delta or {}, "finish_reason": finish}],
        **extra,
    }
    return data(body)


def data(payload: Any) -> bytes:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {text}\n\n".encode()


def usage_chunk(prompt: int = 10, completion: int = 5, **extra: Any) -> bytes:
    """The ``choices: []`` chunk ``stream_options.include_usage`` asks for."""
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, **extra}
    return data(
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage}
    )


def call(
    index: int | None, *, id: str | None = None, name: str | None = None, args: str = ""
) -> dict[str, Any]:
    """One ``delta.tool_calls`` entry; ``None`` leaves a key out."""
    fragment: dict[str, Any] = {"function": {"arguments": args}}
    if index is not None:
        fragment["index"] = index
    if id is not None:
        fragment["id"] = id
        fragment["type"] = "function"
    if name is not None:
        fragment["function"]["name"] = name
    return fragment


DONE = b"data: [DONE]\n\n"
END = chunk(finish="stop") + usage_chunk() + DONE
TOOL_END = chunk(finish="tool_calls") + usage_chunk() + DONE


def _decode(chunks: list[bytes], **options: Any) -> tuple[list[UniEvent], Any]:
    ticks = iter(range(1 << 30))
    return run(adapters.new_pipeline(SOURCE, clock=lambda: next(ticks), **options), chunks)


def done(events: list[UniEvent]) -> list[Any]:
    """The done items of a public stream, in order."""
    return [i for e in events for i in e.content_items if i.type.endswith(".done")]


def stop(events: list[UniEvent]) -> UniEvent:
    assert events[-1].event_type == "stop"
    return events[-1]


def test_text_then_finish_and_separate_usage_chunk() -> None:
    body = (
        chunk({"role": "assistant", "content": ""})
        + chunk({"content": "Hel"})
        + chunk({"content": "lo"})
    )
    events, error = decode_every_way(
        SOURCE, body + chunk(finish="stop") + usage_chunk(12, 3) + DONE
    )
    assert error is None
    assert done(events) == [TextDone("Hello")]
    assert stop(events).usage_metadata == UsageMetadata(None, 12, None, 3)
    assert stop(events).finish_reason == "stop"


def test_truncated_stream_is_incomplete() -> None:
    events, error = decode_every_way(SOURCE, chunk({"content": "Hel"}) + chunk({"content": "lo"}))
    assert isinstance(error, IncompleteStreamError)
    assert error.missing == ("usage_metadata", "finish_reason")
    assert done(events) == [TextDone("Hello")]  # other open items close first (02 §7)


def test_stream_cut_inside_a_tool_call_is_incomplete_not_a_parse_error() -> None:
    body = chunk({"tool_calls": [call(0, id="call_a", name="f", args='{"city": "Par')]})
    events, error = decode_every_way(SOURCE, body + chunk(finish="tool_calls"))
    assert isinstance(error, IncompleteStreamError)  # 08 D33
    assert error.missing == ("usage_metadata",)
    assert error.finish_reason == "tool_call"
    assert done(events) == []


def test_only_reasoning_is_an_empty_response() -> None:
    body = chunk({"reasoning_content": "Let me think"}) + chunk({"reasoning_content": "..."})
    events, error = decode_every_way(SOURCE, body + END)
    assert isinstance(error, EmptyResponseError)
    assert error.usage_metadata == UsageMetadata(None, 10, None, 5)
    assert done(events) == [
        ThinkingDone("Let me think...", {"reasoning_field": "reasoning_content"})
    ]


def test_complete_stream_with_invalid_tool_arguments() -> None:
    body = chunk({"tool_calls": [call(0, id="call_a", name="f", args='{"city": ')]})
    _, error = decode_every_way(SOURCE, body + TOOL_END)
    assert isinstance(error, ToolCallArgumentParseError)
    assert (error.tool_name, error.tool_call_id, error.raw_arguments_preview) == (
        "f",
        "call_a",
        '{"city": ',
    )


def test_error_object_in_a_chunk_carries_the_usage_merged_so_far() -> None:
    early = usage_chunk(7, 1, prompt_tokens_details={"cached_tokens": 3})
    failing = data(
        {
            "error": {"code": 429, "type": "rate_limit", "message": "slow down"},
            "choices": [],
            "usage": {"completion_tokens": 4},
        }
    )
    events, error = decode_every_way(SOURCE, chunk({"content": "Hi"}) + early + failing + DONE)
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type, error.provider_message) == (
        429,
        "rate_limit",
        "slow down",
    )
    # 7 - 3 cached from the first usage, 4 completion tokens from the failing chunk (08 D36).
    assert error.usage_metadata == UsageMetadata(3, 4, None, 4)
    assert error.retryable
    assert done(events) == []


def test_error_event_frame_carries_the_usage_so_far() -> None:
    error_json = {"error": {"message": "boom", "type": "server_error", "code": "oops"}}
    frame = b"event: error\n" + data(error_json)
    _, error = decode_every_way(SOURCE, chunk({"content": "Hi"}) + usage_chunk(5, 2) + frame)
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type, error.provider_message) == (
        "oops",
        "server_error",
        "boom",
    )
    assert error.usage_metadata == UsageMetadata(None, 5, None, 2)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("upstream went away", "upstream went away"),
        ('"overloaded"', "overloaded"),
        ('{"message": "bare object"}', "bare object"),
        (
            '{"error": {"message": {"detail": "nested"}}, "usage": {"prompt_tokens": "x"}}',
            '{"detail": "nested"}',
        ),
    ],
)
def test_error_frame_without_the_usual_envelope(payload: str, message: str) -> None:
    _, error = decode_every_way(SOURCE, f"event: error\ndata: {payload}\n\n".encode())
    assert isinstance(error, ProviderStreamError)
    assert error.provider_message == message
    assert error.usage_metadata is None


def test_parallel_tool_calls_split_by_index() -> None:
    body = (
        chunk({"tool_calls": [call(0, id="call_a", name="get_weather", args="")]})
        + chunk({"tool_calls": [call(0, args='{"city":')]})
        + chunk({"tool_calls": [call(0, args='"Paris"}')]})
        + chunk({"tool_calls": [call(1, id="call_b", name="get_time", args='{"tz":')]})
        + chunk({"tool_calls": [call(1, args='"CET"}')]})
    )
    events, error = decode_every_way(SOURCE, body + TOOL_END)
    assert error is None
    assert done(events) == [
        ToolCallDone("get_weather", "call_a", {"city": "Paris"}),
        ToolCallDone("get_time", "call_b", {"tz": "CET"}),
    ]
    assert stop(events).finish_reason == "tool_call"


def test_two_calls_in_one_chunk() -> None:
    both = [
        call(0, id="call_a", name="a", args="{}"),
        call(1, id="call_b", name="b", args='{"x":1}'),
    ]
    events, error = decode_every_way(SOURCE, chunk({"tool_calls": both}) + TOOL_END)
    assert error is None
    assert done(events) == [ToolCallDone("a", "call_a", {}), ToolCallDone("b", "call_b", {"x": 1})]


@pytest.mark.parametrize("arguments", [None, ""])
def test_tool_call_without_arguments_is_an_empty_object(arguments: str | None) -> None:
    fragment: dict[str, Any] = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "now"},
    }
    if arguments is not None:
        fragment["function"]["arguments"] = arguments
    events, error = decode_every_way(SOURCE, chunk({"tool_calls": [fragment]}) + TOOL_END)
    assert error is None
    assert done(events) == [ToolCallDone("now", "call_a", {})]


def test_gateway_repeating_name_and_id_on_every_fragment() -> None:
    body = b"".join(
        chunk({"tool_calls": [call(0, id="call_a", name="search", args=part)]})
        for part in ('{"q":', ' "mmsp"', "}")
    )
    events, error = decode_every_way(SOURCE, body + TOOL_END)
    assert error is None
    fragments = [i for e in events for i in e.content_items if isinstance(i, ToolCallDelta)]
    assert [(f.name, f.tool_call_id) for f in fragments] == [
        ("search", "call_a"),
        ("", ""),
        ("", ""),
    ]  # D29, D42
    assert done(events) == [ToolCallDone("search", "call_a", {"q": "mmsp"})]


def test_machine_blanks_a_repeated_name_itself() -> None:
    machine = ChatMachine(SOURCE, adapters.CLIENTS[SOURCE].profile, strict=False, base_url=None)
    items = []
    for part in ('{"q":', "1}"):
        sse = SSEEvent(
            data=json.dumps(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"tool_calls": [call(0, id="x", name="f", args=part)]},
                        }
                    ]
                }
            )
        )
        items += [i for e in machine.next_events(sse) for i in client_items(e)]
    assert [(i.name, i.tool_call_id) for i in items] == [("f", "x"), ("", "")]  # 08 D42


def client_items(event: ClientEvent) -> tuple[Item, ...]:
    """The delta items of a client event; a fragment stands for one (08 D65)."""
    return (event.item(),) if isinstance(event, Fragment) else event.content_items


def test_calls_without_id_get_call_n() -> None:
    body = (
        chunk({"tool_calls": [call(0, name="a", args="{}")]})
        + chunk({"tool_calls": [call(1, name="b", args="{")]})
        + chunk({"tool_calls": [call(1, args="}")]})
    )
    events, error = decode_every_way(SOURCE, body + TOOL_END)
    assert error is None
    assert done(events) == [
        ToolCallDone("a", "call_0", {}),
        ToolCallDone("b", "call_1", {}),
    ]  # 08 D43


def test_without_index_or_id_a_name_begins_a_call() -> None:
    body = (
        chunk({"tool_calls": [call(None, name="a", args='{"n":')]})
        + chunk({"tool_calls": [call(None, args="1}")]})
        + chunk({"tool_calls": [call(None, name="b", args="{}")]})
    )
    events, error = decode_every_way(SOURCE, body + TOOL_END)
    assert error is None
    assert done(events) == [ToolCallDone("a", "call_0", {"n": 1}), ToolCallDone("b", "call_1", {})]


def test_a_different_id_on_the_same_index_begins_a_call() -> None:
    body = chunk({"tool_calls": [call(0, id="x", name="a", args="{}")]}) + chunk(
        {"tool_calls": [call(0, id="y", name="b", args="{}")]}
    )
    events, _ = decode_every_way(SOURCE, body + TOOL_END)
    assert done(events) == [ToolCallDone("a", "x", {}), ToolCallDone("b", "y", {})]


def test_a_call_that_would_begin_without_a_name_is_out_of_place() -> None:
    body = chunk({"tool_calls": [call(0, id="x", args="{}")]}) + chunk({"content": "ok"}) + END
    events, error = decode_every_way(SOURCE, body)
    assert error is None
    assert done(events) == [TextDone("ok")]  # skipped (08 D45)
    _, strict_error = decode_every_way(SOURCE, body, strict=True)
    assert isinstance(strict_error, UnknownEventError)


def test_both_reasoning_fields_count_once_without_a_reasoning_field() -> None:
    body = chunk({"reasoning_content": "Hm", "reasoning": "Hm"}) + chunk({"content": "ok"})
    events, _ = decode_every_way(SOURCE, body + END)
    assert done(events) == [ThinkingDone("Hm"), TextDone("ok")]


def test_reasoning_field_spelling_is_recorded() -> None:
    events, _ = decode_every_way(
        SOURCE, chunk({"reasoning": "a"}) + chunk({"reasoning": "b", "content": "c"}) + END
    )
    assert done(events) == [ThinkingDone("ab", {"reasoning_field": "reasoning"}), TextDone("c")]


def test_reasoning_details_take_precedence_and_encrypted_blocks_keep_their_data() -> None:
    text = {"type": "reasoning.text", "text": "Plan", "format": "unknown", "index": 0}
    secret = {
        "type": "reasoning.encrypted",
        "data": "ENC1",
        "format": "openai-responses-v1",
        "id": "rs_1",
    }
    second = {"type": "reasoning.encrypted", "data": "ENC2", "format": "openai-responses-v1"}
    summary = {"type": "reasoning.summary", "summary": "Next", "index": 0}
    body = (
        chunk({"reasoning": "Plan", "reasoning_content": "Plan", "reasoning_details": [text]})
        + chunk({"reasoning_details": [secret]})
        + chunk({"reasoning_details": [summary, second]})
        + chunk({"content": "done"})
    )
    events, error = decode_every_way(SOURCE, body + END)
    assert error is None
    assert done(events) == [
        ThinkingDone(
            "Plan",
            {"encrypted_content": "ENC1", "format": "openai-responses-v1", "reasoning_id": "rs_1"},
        ),
        ThinkingDone("Next", {"encrypted_content": "ENC2", "format": "openai-responses-v1"}),
        TextDone("done"),
    ]


def test_refusal_is_text() -> None:
    events, _ = decode_every_way(
        SOURCE, chunk({"content": None, "refusal": "I can't"}) + chunk({"refusal": " help"}) + END
    )
    assert done(events) == [TextDone("I can't help")]


@pytest.mark.parametrize(
    ("wire", "finish"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool_call"),
        ("content_filter", "stop"),
        ("function_call", "unknown"),
        ("insufficient_system_resource", "unknown"),
    ],
)
def test_finish_reasons(wire: str, finish: str) -> None:
    events, _ = decode_every_way(
        SOURCE, chunk({"content": "x"}) + chunk(finish=wire) + usage_chunk() + DONE
    )
    assert stop(events).finish_reason == finish


def test_only_choice_zero_is_read() -> None:
    body = (
        chunk({"content": "zero"})
        + chunk({"content": "one"}, index=1)
        + chunk(finish="length", index=1)
        + chunk(finish="stop")
        + usage_chunk()
        + DONE
    )
    events, _ = decode_every_way(SOURCE, body)
    assert done(events) == [TextDone("zero")]
    assert stop(events).finish_reason == "stop"


def test_usage_on_the_finish_chunk_and_again_later_is_replaced_not_summed() -> None:
    usage = {
        "prompt_tokens": 20,
        "completion_tokens": 9,
        "prompt_tokens_details": {"cached_tokens": 5},
        "completion_tokens_details": {"reasoning_tokens": 4},
    }
    body = chunk({"content": "x"}) + chunk(finish="stop", usage=usage) + usage_chunk(20, 9) + DONE
    events, _ = decode_every_way(SOURCE, body)
    # The second usage has no detail blocks: its counts replace, its nulls keep (08 D7).
    assert stop(events).usage_metadata == UsageMetadata(5, 20, 4, 9)


def test_usage_only_inside_x_groq() -> None:
    groq = {"id": "req_1", "usage": {"prompt_tokens": 8, "completion_tokens": 3}}
    events, _ = decode_every_way(
        SOURCE, chunk({"content": "x"}) + chunk(finish="stop", x_groq=groq) + DONE
    )
    assert stop(events).usage_metadata == UsageMetadata(None, 8, None, 3)


@pytest.mark.parametrize("base_url", [None, "https://openrouter.ai/api/v1", "https://api.x.ai/v1"])
def test_completion_below_its_reasoning_count_is_the_response_itself(base_url: str | None) -> None:
    """08 D52, on every endpoint: the endpoint left reasoning out of ``completion_tokens``, so
    that count is the response; the reasoning count stays as reported."""
    usage = usage_chunk(10, 2, completion_tokens_details={"reasoning_tokens": 5})
    body = chunk({"content": "x"}) + chunk(finish="stop") + usage
    events, _ = decode_every_way(SOURCE, body, base_url=base_url)
    assert stop(events).usage_metadata == UsageMetadata(None, 10, 5, 2)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(
    "tail",
    [
        chunk({"content": "late"}) + DONE,
        b"data: {late\n\n",
        b"event: error\ndata: {}\n\n",
        data({"error": {"message": "late"}}),
        b"event: brand_new\ndata: x\n\n",
    ],
    ids=["chunk", "not-json", "error-frame", "error-chunk", "unknown"],
)
def test_events_after_done_are_ignored_in_both_modes(tail: bytes, strict: bool) -> None:
    """08 D56 (replacing D45 after the terminal event): the answer is the one that ends at
    ``[DONE]``, however the bytes were read."""
    answer = chunk({"content": "x"}) + END
    expected = decode_every_way(SOURCE, answer, strict=strict)
    assert expected[1] is None and done(expected[0]) == [TextDone("x")]
    events, error = decode_every_way(SOURCE, answer + tail, strict=strict)
    assert error is None
    assert outcome(events, error) == outcome(*expected)


def test_unknown_event_name_is_skipped_or_strict() -> None:
    body = chunk({"content": "x"}) + b"event: ping\ndata: {}\n\n" + END
    events, error = decode_every_way(SOURCE, body)
    assert error is None and done(events) == [TextDone("x")]
    _, strict_error = decode_every_way(SOURCE, body, strict=True)
    assert isinstance(strict_error, UnknownEventError)
    assert "ping" in strict_error.event


def test_heartbeat_chunks_without_choices_are_empty() -> None:
    heartbeat = data({"id": "", "choices": None}) + data({"id": ""})
    events, error = decode_every_way(SOURCE, heartbeat + chunk({"content": "x"}) + heartbeat + END)
    assert error is None and done(events) == [TextDone("x")]


@pytest.mark.parametrize(
    "bad",
    [
        "not json",
        "[1, 2]",
        '{"choices": "nope"}',
        '{"choices": [{"index": 0, "delta": {"content": 5}}]}',
        '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "0"}]}}]}',
        '{"choices": [{"index": 0, "delta": {}}], "usage": {"prompt_tokens": true}}',
        '{"choices": [7]}',
    ],
)
def test_malformed_chunks(bad: str) -> None:
    _, error = decode_every_way(SOURCE, chunk({"content": "x"}) + data(bad) + END)
    assert isinstance(error, MalformedEventError)
    assert error.detail


def _outcome(body: bytes) -> BaseException | None:
    """The error of decoding ``body`` whole, in both modes (they must agree)."""
    errors: list[BaseException | None] = []
    for strict in (False, True):
        try:
            list(adapters.decode(SOURCE, [body], strict=strict))
        except Exception as exc:  # the point is which class escapes
            errors.append(exc)
        else:
            errors.append(None)
    assert type(errors[0]) is type(errors[1])
    return errors[0]


def test_json_nested_past_the_parser_limit_is_a_malformed_event() -> None:
    error = _outcome(b"data: " + b"[" * 100000 + b"\n\n")  # 08 D59
    assert isinstance(error, MalformedEventError)


def test_an_error_frame_nested_past_the_parser_limit_is_a_provider_error() -> None:
    error = _outcome(b"event: error\ndata: " + b"[" * 100000 + b"\n\n")
    assert isinstance(error, ProviderStreamError)


@pytest.mark.parametrize(
    "template",
    [
        b'event: error\ndata: {"error": {"message": NESTED}}\n\n',
        b'data: {"error": {"message": NESTED}}\n\n',
        b'data: {"error": NESTED}\n\n',
        b"event: error\ndata: NESTED\n\n",
        b'data: {"choices": [{"index": 0, "delta": {"content": NESTED}}]}\n\n',
    ],
)
def test_json_nested_near_the_recursion_limit_never_escapes_untyped(template: bytes) -> None:
    # Depths just under the parser's limit parse, then meet json.dumps or a field read in a
    # deeper frame; whatever the depth, only these two errors may come out (08 D59).
    limit = sys.getrecursionlimit()
    for depth in range(limit - 300, limit + 10):
        error = _outcome(template.replace(b"NESTED", b"[" * depth + b"]" * depth))
        assert isinstance(error, MalformedEventError | ProviderStreamError), (depth, error)


# --------------------------------------------------------------------------------------------
# Renderer (08 D49)
# --------------------------------------------------------------------------------------------


def test_render_writes_the_chunks_a_server_sends() -> None:
    body = adapters.render(
        "openai-chat",
        [
            ThinkingDone("Hmm", {"reasoning_field": "reasoning_content"}),
            TextDone("Hi!"),
            ToolCallDone("f", "call_1", {"a": 1}),
        ],
        UsageMetadata(cached_tokens=2, prompt_tokens=8, thoughts_tokens=3, response_tokens=4),
        FinishReason.TOOL_CALL,
        model="gpt-x",
        fragment_size=2,
    )
    head = '{"id":"chatcmpl-mmsp-render","object":"chat.completion.chunk","created":0,'
    head += '"model":"gpt-x",'

    def line(choices: str, tail: str = "") -> bytes:
        return f"data: {head}{choices}{tail}}}\n\n".encode()

    def delta(d: str, finish: str = "null") -> bytes:
        return line(f'"choices":[{{"index":0,"delta":{d},"finish_reason":{finish}}}]')

    call = '"tool_calls":[{"index":0,'
    expected = (
        delta('{"role":"assistant","content":""}')
        + delta('{"reasoning_content":"Hm"}')
        + delta('{"reasoning_content":"m"}')
        + delta('{"content":"Hi"}')
        + delta('{"content":"!"}')
        + delta(
            "{" + call + '"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}'
        )
        + delta("{" + call + '"function":{"arguments":"{\\""}}]}')
        + delta("{" + call + '"function":{"arguments":"a\\""}}]}')
        + delta("{" + call + '"function":{"arguments":":1"}}]}')
        + delta("{" + call + '"function":{"arguments":"}"}}]}')
        + delta("{}", '"tool_calls"')
        + line(
            '"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,'
            '"prompt_tokens_details":{"cached_tokens":2},'
            '"completion_tokens_details":{"reasoning_tokens":3}}'
        )
        + b"data: [DONE]\n\n"
    )
    assert body == expected


def test_render_rejects_a_fragment_size_below_one() -> None:
    with pytest.raises(ValueError, match="fragment_size"):
        adapters.render(
            "openai-chat", [TextDone("x")], UsageMetadata(), FinishReason.STOP, fragment_size=0
        )


_ids = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)
_FIELDS = ["reasoning_content", "reasoning"]
_chat_fidelity = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"reasoning_field": st.sampled_from(["reasoning_content", "reasoning", "other"])}
    ),
    st.fixed_dictionaries(
        {
            "encrypted_content": st.text(max_size=12),
            "format": st.sampled_from(["openai-responses-v1", "x"]),
        },
        optional={"reasoning_id": _ids, "reasoning_field": st.just("reasoning")},
    ),
)
_items = st.lists(
    st.one_of(
        done_items(),
        st.builds(TextDone, st.text(max_size=20)),
        st.builds(ThinkingDone, st.text(max_size=20), _chat_fidelity),
    ),
    max_size=6,
)


@given(
    items=_items,
    usage_=usage(),
    finish=finish_reasons(),
    size=st.none() | st.integers(1, 12),
    cuts=st.data(),
)
def test_round_trip(
    items: list[DoneItem],
    usage_: UsageMetadata,
    finish: FinishReason,
    size: int | None,
    cuts: st.DataObject,
) -> None:
    body = adapters.render("openai-chat", items, usage_, finish, model="m", fragment_size=size)
    events, error = _decode(cuts.draw(chunked(body)))
    expected_items, expected_finish = normalize(items, finish)
    assert done(events) == expected_items
    if all(isinstance(i, ThinkingDone) for i in expected_items):
        assert isinstance(error, EmptyResponseError)
        return
    assert error is None
    assert_stream_grammar(events)
    assert (stop(events).usage_metadata, stop(events).finish_reason) == (usage_, expected_finish)
