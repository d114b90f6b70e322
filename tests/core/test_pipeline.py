"""``StreamPipeline`` and ``JsonEventsMachine``: the pull API, error positions, chunking.

Expectations come from 09 (the pipeline contract), spec 02 §6 (items before the usage part),
spec 03 §5 (an ``{"error": ...}`` event raises that error) and 08 D18, D44.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_errors import ERROR_NAMES, sample

from mmsp_core import (
    END,
    NEED_DATA,
    IncompleteStreamError,
    JsonEventsMachine,
    MalformedEventError,
    MMSPError,
    SSEDecoder,
    SSEEvent,
    StreamItems,
    StreamLimitError,
    StreamPipeline,
    StreamProtocolError,
    TextDelta,
    TextDone,
    ToolCallDelta,
    UniEvent,
    UnknownEventError,
    UsageMetadata,
    error_from_wire,
    to_wire,
)
from mmsp_core.pipeline import Decoder
from mmsp_core.testing import chunkings, outcome, run
from mmsp_core.testing.strategies import chunked, client_streams

USAGE = UsageMetadata(1, 2, 3, 4)
STOP = UniEvent("stop", (), USAGE, "stop")


def ticking() -> Callable[[], int]:
    ticks: Iterator[int] = iter(range(1000, 1 << 62))
    return lambda: next(ticks)


def frame(event: UniEvent | dict[str, Any] | str) -> bytes:
    """One SSE event whose data is a client event (or any JSON, or raw text)."""
    if isinstance(event, UniEvent):
        event = to_wire(event)
    data = event if isinstance(event, str) else json.dumps(event)
    return f"data: {data}\n\n".encode()


def body(*events: UniEvent | dict[str, Any] | str) -> bytes:
    return b"".join(frame(e) for e in events)


def new(decoder: Decoder | None = None) -> StreamPipeline:
    machine = JsonEventsMachine("json")
    return StreamPipeline(machine, client="test", clock=ticking(), decoder=decoder)


def items(events: Sequence[UniEvent]) -> list[Any]:
    return [e.content_items[0] for e in events if e.event_type == "delta"]


def every_way(data: bytes, make: Callable[[], StreamPipeline] = new) -> tuple[Any, Any]:
    """The outcome of ``data`` fed whole, after checking that every chunking agrees."""
    whole = outcome(*run(make(), [data]))
    bytewise = [piece for i in range(len(data)) for piece in (data[i : i + 1], b"")]
    assert outcome(*run(make(), bytewise)) == whole
    for chunks in chunkings(data, max_two_piece=600):
        assert outcome(*run(make(), chunks)) == whole
    return whole


# -- the pull API --------------------------------------------------------------------------------


def test_need_data_until_eof_then_end_forever() -> None:
    pipeline = new()
    assert pipeline.next_event() is NEED_DATA
    data = body(UniEvent("delta", (TextDelta("hi"),)), STOP)
    pipeline.receive_data(data[:10])
    assert pipeline.next_event() is NEED_DATA
    pipeline.receive_data(data[10:])
    first = pipeline.next_event()
    assert isinstance(first, UniEvent) and first.content_items == (TextDelta("hi"),)
    # The stop event was received, but the stream may go on: nothing more before EOF.
    assert pipeline.next_event() is NEED_DATA
    assert pipeline.next_event() is NEED_DATA
    pipeline.receive_eof()
    done = pipeline.next_event()
    assert isinstance(done, UniEvent) and done.content_items == (TextDone("hi"),)
    stop = pipeline.next_event()
    assert isinstance(stop, UniEvent) and stop.event_type == "stop"
    assert stop.usage_metadata == USAGE
    for _ in range(3):
        assert pipeline.next_event() is END


def test_receive_data_or_eof_after_eof_raises_runtime_error() -> None:
    pipeline = new()
    pipeline.receive_eof()
    with pytest.raises(RuntimeError):
        pipeline.receive_data(b"data: {}\n\n")
    with pytest.raises(RuntimeError):
        pipeline.receive_eof()


def test_an_exception_poisons_the_pipeline() -> None:
    pipeline = new()
    pipeline.receive_data(body(UniEvent("delta", (TextDone("x"),))))
    with pytest.raises(StreamProtocolError):
        pipeline.next_event()
    with pytest.raises(RuntimeError):
        pipeline.next_event()
    with pytest.raises(RuntimeError):
        pipeline.receive_data(b"")
    with pytest.raises(RuntimeError):
        pipeline.receive_eof()


def test_an_error_waits_until_the_events_decided_before_it_are_handed_out() -> None:
    pipeline = new()
    pipeline.receive_data(
        body(
            UniEvent("delta", (TextDelta("a"),)),
            UniEvent("delta", (TextDelta("b"),)),
            "not json",
            UniEvent("delta", (TextDelta("c"),)),
        )
    )
    assert items([pipeline.next_event(), pipeline.next_event()]) == [
        TextDelta("a"),
        TextDelta("b"),
    ]
    with pytest.raises(MalformedEventError):
        pipeline.next_event()


# -- one client event with several items (09, spec 02 §6) ---------------------------------------


def test_a_multi_item_event_is_split_so_its_2nd_items_error_comes_after_the_1st() -> None:
    event = UniEvent("delta", (TextDelta("a"), ToolCallDelta("", "", "{}")))
    events, error = run(new(), [body(UniEvent("delta", (TextDelta("0"),)), event, STOP)])
    assert isinstance(error, StreamProtocolError)
    assert items(events) == [TextDelta("0"), TextDelta("a")]
    # StreamItems itself refuses the event whole: each push is all-or-nothing.
    finalizer = StreamItems(client="test", clock=ticking())
    with pytest.raises(StreamProtocolError):
        finalizer.push(event)


def test_a_multi_item_event_gives_its_items_before_its_usage_part() -> None:
    event = UniEvent("delta", (TextDelta("a"), TextDelta("b")), USAGE, None)
    events, error = run(new(), [body(event, STOP)])
    assert isinstance(error, StreamProtocolError)
    assert "usage_metadata or finish_reason" in str(error)
    assert items(events) == [TextDelta("a"), TextDelta("b")]


def test_a_multi_item_stop_event_is_finalized_like_separate_events() -> None:
    event = UniEvent("stop", (TextDelta("a"), TextDelta("b")), USAGE, "stop")
    events, error = run(new(), [body(event)])
    assert error is None
    assert items(events) == [TextDelta("a"), TextDelta("b"), TextDone("ab")]
    assert events[-1].usage_metadata == USAGE


# -- the decoder and machine stages ------------------------------------------------------------


def test_sse_limit_error_comes_after_the_events_before_the_long_line() -> None:
    data = body(
        UniEvent("delta", (TextDelta("a"),)),
        UniEvent("delta", (TextDelta("b"),)),
        UniEvent("delta", (TextDelta("x" * 300),)),
        STOP,
    )
    events, error = every_way(data, lambda: new(SSEDecoder(max_line_bytes=200)))
    assert error["error"]["type"] == "StreamLimitError"
    assert error["error"]["limit"] == 200
    assert [e["content_items"][0] for e in events] == [
        {"type": "text.delta", "text": "a"},
        {"type": "text.delta", "text": "b"},
    ]


def test_sse_event_limit_error_position() -> None:
    # Each JSON event is under 300 bytes; the third event's two data lines are 401 together.
    long_event = b"data: " + b"x" * 200 + b"\ndata: " + b"y" * 200 + b"\n\n"
    data = body(UniEvent("delta", (TextDelta("a"),))) + long_event + frame(STOP)
    events, error = every_way(data, lambda: new(SSEDecoder(max_event_bytes=300)))
    assert error["error"]["type"] == "StreamLimitError"
    assert error["error"]["limit"] == 300
    assert [e["content_items"][0]["text"] for e in events] == ["a"]


def test_a_final_event_without_its_blank_line_is_discarded() -> None:
    # 08 D44: the stop arrives unterminated, so the stream counts as cut.
    data = body(UniEvent("delta", (TextDelta("a"),))) + frame(STOP)[:-1]
    events, error = every_way(data)
    assert error["error"]["type"] == "IncompleteStreamError"
    assert error["error"]["missing"] == ["usage_metadata", "finish_reason"]
    assert [e["content_items"][0]["type"] for e in events] == ["text.delta", "text.done"]


class _Scripted:
    """A machine that returns scripted client events, and more from ``finish``."""

    def __init__(self, tail: list[UniEvent], fail_on: str | None = None) -> None:
        self.tail = tail
        self.fail_on = fail_on

    def next_events(self, sse: SSEEvent) -> list[UniEvent]:
        if sse.data == self.fail_on:
            raise MalformedEventError("scripted", sse.data)
        return [UniEvent("delta", (TextDelta(sse.data),))]

    def finish(self) -> list[UniEvent]:
        return self.tail


def test_machine_finish_events_are_finalized_before_the_stop() -> None:
    machine = _Scripted([UniEvent("delta", (TextDelta("!"),)), STOP])
    pipeline = StreamPipeline(machine, client="scripted", clock=ticking())
    events, error = run(pipeline, [b"data: a\n\ndata: b\n\n"])
    assert error is None
    assert items(events) == [TextDelta("a"), TextDelta("b"), TextDelta("!"), TextDone("ab!")]
    assert events[-1].event_type == "stop"
    assert [e.created_at for e in events] == [1000, 1001, 1002, 1003, 1004]


def test_a_machine_error_comes_at_its_position() -> None:
    def make() -> StreamPipeline:
        return StreamPipeline(_Scripted([STOP], fail_on="bad"), client="s", clock=ticking())

    events, error = every_way(b"data: a\n\ndata: bad\n\ndata: c\n\n", make)
    assert error["error"]["type"] == "MalformedEventError"
    assert [e["content_items"][0]["text"] for e in events] == ["a"]


# -- JsonEventsMachine ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    ["not json", "", "[1, 2]", '{"event_type": "middle", "content_items": []}', "[" * 100_000],
    ids=["text", "empty", "array", "bad-event", "deep"],
)
def test_malformed_data_is_a_malformed_event_error(data: str) -> None:
    with pytest.raises(MalformedEventError) as info:
        JsonEventsMachine("json").next_events(SSEEvent(data=data))
    assert info.value.client == "json"
    preview = data if len(data) <= 160 else data[:72] + "...[truncated]..." + data[-72:]
    assert info.value.event == preview


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_an_error_event_raises_that_error(name: str) -> None:
    error = sample(name, detail="from the server")
    with pytest.raises(MMSPError) as info:
        JsonEventsMachine().next_events(SSEEvent(data=json.dumps(to_wire(error))))
    assert type(info.value) is type(error)
    assert to_wire(info.value) == to_wire(error)


def test_an_error_event_raises_at_its_position_in_the_stream() -> None:
    cut = IncompleteStreamError("upstream", ("finish_reason",), None, USAGE)
    events, error = every_way(body(UniEvent("delta", (TextDelta("a"),)), to_wire(cut), STOP))
    assert error == to_wire(cut)
    assert [e["content_items"][0]["text"] for e in events] == ["a"]
    unknown = {"error": {"type": "AuthenticationError", "message": "no"}}
    _, error = every_way(body(unknown))
    assert error == to_wire(error_from_wire(unknown))
    assert error["error"]["type"] == "UpstreamError"


# -- chunking invariance (hypothesis) -----------------------------------------------------------


_BREAKS: dict[str, bytes] = {
    "none": b"",
    "not-json": b"data: {oops\n\n",
    "done-item": frame(UniEvent("delta", (TextDone("x"),))),
    "usage-on-delta": frame(UniEvent("delta", (), USAGE, None)),
    "error-event": frame(to_wire(StreamLimitError("what", 1, 2))),
    "unterminated": b"data: {}",
    "comment-and-unknown": b": keep-alive\n\nevent: other\ndata: " + frame(STOP)[6:],
}


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A generated client stream as SSE; maybe cut, maybe with a breaking event inserted."""
    frames = [frame(e) for e in draw(client_streams())]
    if draw(st.booleans()):
        frames = frames[: draw(st.integers(0, len(frames)))]
    position = draw(st.integers(0, len(frames)))
    frames.insert(position, _BREAKS[draw(st.sampled_from(sorted(_BREAKS)))])
    if draw(st.booleans()):
        frames = [f.replace(b"\n", b"\r\n") for f in frames]
    return b"".join(frames)


@given(st.data())
def test_any_chunking_gives_the_output_of_feeding_the_body_whole(data: st.DataObject) -> None:
    whole = data.draw(bodies())
    chunks = data.draw(chunked(whole))
    assert b"".join(chunks) == whole
    assert outcome(*run(new(), chunks)) == outcome(*run(new(), [whole]))


def test_an_item_on_a_delta_event_with_usage_comes_out_before_the_protocol_error() -> None:
    """A delta event may not carry usage; its item still reaches the caller first (02 §6)."""
    body = (
        b'data: {"event_type":"delta","content_items":[{"type":"text.delta","text":"hi"}],'
        b'"usage_metadata":{"prompt_tokens":1},"finish_reason":null}\n\n'
    )
    pipeline = StreamPipeline(JsonEventsMachine(), client="c", clock=lambda: 0)
    events, error = run(pipeline, [body])
    assert [e.content_items[0] for e in events] == [TextDelta("hi")]
    assert isinstance(error, StreamProtocolError)


# -- the terminal event (08 D56) ------------------------------------------------------------------


TERMINAL = b"data: [DONE]\n\n"
#: Over every line of the answers below, under the over-long lines.
LINE_LIMIT = 256


class _EndsAtDone:
    """A kernel-like machine: client events in MMSP JSON until ``[DONE]``, which sets
    ``finished``; like a strict kernel machine, it refuses anything after that."""

    def __init__(self) -> None:
        self.inner = JsonEventsMachine("json")
        self.finished = False

    def next_events(self, sse: SSEEvent) -> list[UniEvent]:
        if self.finished:
            raise UnknownEventError("json", sse.data, detail="after [DONE]")
        if sse.data == "[DONE]":
            self.finished = True
            return [UniEvent("delta")]
        return self.inner.next_events(sse)

    def finish(self) -> list[UniEvent]:
        return []


def ends_at_done(decoder: Decoder | None = None) -> StreamPipeline:
    return StreamPipeline(_EndsAtDone(), client="test", clock=ticking(), decoder=decoder)


def pulled_after_feeding(pipeline: StreamPipeline, chunks: Sequence[bytes]) -> Any:
    """The outcome when every chunk (and the EOF) is fed before the first ``next_event``."""
    events: list[UniEvent] = []
    for chunk in chunks:
        pipeline.receive_data(chunk)
    pipeline.receive_eof()
    try:
        while (event := pipeline.next_event()) is not END:
            assert isinstance(event, UniEvent)
            events.append(event)
    except MMSPError as exc:
        return outcome(events, exc)
    return outcome(events, None)


ANSWER = body(UniEvent("delta", (TextDelta("a"),)), STOP) + TERMINAL
#: What may follow the terminal event: each would be an error or an event before it.
AFTER_TERMINAL = {
    "an event": frame(UniEvent("delta", (TextDelta("late"),))),
    "not json": b"data: {oops\n\n",
    "an over-long line": b"data: " + b"x" * 2 * LINE_LIMIT + b"\n\n",
    "an unterminated event": b"data: {",
    "a second terminal": TERMINAL,
}


@pytest.mark.parametrize("tail", AFTER_TERMINAL.values(), ids=AFTER_TERMINAL.keys())
def test_everything_after_the_terminal_event_is_ignored(tail: bytes) -> None:
    def make() -> StreamPipeline:
        return ends_at_done(SSEDecoder(max_line_bytes=LINE_LIMIT))

    expected = every_way(ANSWER, make)
    assert expected[1] is None
    assert every_way(ANSWER + tail, make) == expected
    chunks = [ANSWER[:5], ANSWER[5:] + tail[:3], tail[3:]]
    assert outcome(*run(make(), chunks)) == expected
    assert pulled_after_feeding(make(), chunks) == expected


def test_finished_is_set_by_the_terminal_event_and_later_bytes_are_accepted_and_ignored() -> None:
    pipeline = ends_at_done(SSEDecoder(max_line_bytes=LINE_LIMIT))
    assert not pipeline.finished
    pipeline.receive_data(ANSWER[: -len(TERMINAL)])
    while pipeline.next_event() is not NEED_DATA:
        pass
    assert not pipeline.finished
    pipeline.receive_data(TERMINAL)
    assert pipeline.next_event() is NEED_DATA
    assert pipeline.finished
    pipeline.receive_data(AFTER_TERMINAL["an over-long line"])  # ignored, not a limit error
    assert pipeline.next_event() is NEED_DATA
    pipeline.receive_eof()
    done = pipeline.next_event()
    assert isinstance(done, UniEvent) and done.content_items == (TextDone("a"),)
    stop = pipeline.next_event()
    assert isinstance(stop, UniEvent) and stop.event_type == "stop"
    assert pipeline.next_event() is END
    with pytest.raises(RuntimeError):
        pipeline.receive_data(b"")


def test_a_machine_without_a_terminal_event_never_finishes() -> None:
    pipeline = new()
    events, error = run(pipeline, [body(UniEvent("delta", (TextDelta("a"),)), STOP)])
    assert error is None and events[-1].event_type == "stop"
    assert not pipeline.finished


def test_a_decoder_error_comes_after_the_events_fed_before_it_however_they_were_fed() -> None:
    data = body(UniEvent("delta", (TextDelta("a"),))) + b"data: " + b"x" * 2 * LINE_LIMIT + b"\n\n"
    chunks = [data[:20], data[20:100], data[100:], frame(STOP)]
    events, error = every_way(b"".join(chunks), lambda: new(SSEDecoder(max_line_bytes=LINE_LIMIT)))
    assert [e["content_items"][0]["text"] for e in events] == ["a"]
    assert error["error"]["type"] == "StreamLimitError"
    fed_first = pulled_after_feeding(new(SSEDecoder(max_line_bytes=LINE_LIMIT)), chunks)
    assert fed_first == (events, error)


@given(st.data())
def test_any_chunking_of_a_body_past_its_terminal_event_gives_the_answer(
    data: st.DataObject,
) -> None:
    tail = b"".join(data.draw(st.lists(st.sampled_from(sorted(AFTER_TERMINAL.values())))))
    chunks = data.draw(chunked(ANSWER + tail))
    expected = outcome(*run(ends_at_done(SSEDecoder(max_line_bytes=LINE_LIMIT)), [ANSWER]))
    assert outcome(*run(ends_at_done(SSEDecoder(max_line_bytes=LINE_LIMIT)), chunks)) == expected
