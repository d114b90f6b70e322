"""The Gemini Interactions machine and renderer (spec 06 §5, 02 §4, 08 D4, D8, D45, D49, D51,
D56, D59, D66), over recorded fixtures and hand-written streams.

``adapters.testing.check_protocol`` runs every recording (whole, byte by byte, random
chunkings, CRLF, keep-alives and unknown events, the only-``MMSPError`` property) and the
render round trip. Every hand-written body is decoded whole, byte by byte and in random
chunkings (``decode``) with identical results.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from harness import FIXTURES, decode_every_way

import adapters
from adapters.google_interactions import normalize
from adapters.google_interactions.render import split_audio_mime
from adapters.testing import ProtocolCheck, protocol_checks
from mmsp_core import (
    EmptyResponseError,
    MalformedEventError,
    ProviderStreamError,
    UnknownEventError,
    UnsupportedContentError,
)
from mmsp_core.model import (
    DoneItem,
    EmbeddingDone,
    FinishReason,
    InlineDataDelta,
    InlineDataDone,
    InlineThinkingDone,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
)

PROTOCOL = "google-interactions"
CLIENT = "google-official"

CHECKS: list[ProtocolCheck] = protocol_checks(PROTOCOL, FIXTURES / PROTOCOL)


@pytest.mark.parametrize("check", CHECKS, ids=[check.id for check in CHECKS])
def test_protocol_check(check: ProtocolCheck) -> None:
    check.run()


# ------------------------------------------------------------------------------------------
# Hand-written streams
# ------------------------------------------------------------------------------------------

USAGE = {
    "total_tokens": 60,
    "total_input_tokens": 30,
    "total_cached_tokens": 10,
    "total_output_tokens": 12,
    "total_thought_tokens": 18,
}
USAGE_VALUE = UsageMetadata(cached_tokens=10, prompt_tokens=20, thoughts_tokens=18,
                            response_tokens=12)
PNG = b"\x89PNG\r\n\x1a\n-image-bytes"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def sse(*events: dict[str, Any], event_lines: bool = False) -> bytes:
    """Frame events as the recordings do (``data:`` only), or with ``event:`` lines too."""
    out = []
    for event in events:
        head = f"event: {event['event_type']}\n" if event_lines else ""
        out.append(f"{head}data: {json.dumps(event)}\n\n".encode())
    return b"".join(out)


def created() -> list[dict[str, Any]]:
    return [
        {"event_type": "interaction.created",
         "interaction": {"id": "v1_x", "status": "in_progress", "object": "interaction"}},
        {"event_type": "interaction.status_update", "interaction_id": "v1_x",
         "status": "in_progress"},
    ]


def step(index: int, step_type: str, *deltas: dict[str, Any], **fields: Any) -> list[
    dict[str, Any]
]:
    return [
        {"event_type": "step.start", "index": index, "step": {"type": step_type, **fields}},
        *({"event_type": "step.delta", "index": index, "delta": d} for d in deltas),
        {"event_type": "step.stop", "index": index},
    ]


def completed(status: str = "completed", usage: Any = USAGE) -> dict[str, Any]:
    interaction: dict[str, Any] = {"id": "v1_x", "status": status, "object": "interaction"}
    if usage is not None:
        interaction["usage"] = usage
    return {"event_type": "interaction.completed", "interaction": interaction}


def summary(text: str) -> dict[str, Any]:
    return {"type": "thought_summary", "content": {"type": "text", "text": text}}


def signature(value: str) -> dict[str, Any]:
    return {"type": "thought_signature", "signature": value}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def body(*steps: list[dict[str, Any]], end: dict[str, Any] | None = None) -> bytes:
    events = [*created(), *(event for s in steps for event in s)]
    return sse(*events, completed() if end is None else end)


def decode(data: bytes, *, strict: bool = False) -> tuple[list[UniEvent], BaseException | None]:
    return decode_every_way(PROTOCOL, data, strict=strict)


def done_items(events: list[UniEvent]) -> list[DoneItem]:
    return [
        e.content_items[0]  # type: ignore[misc]
        for e in events
        if e.event_type == "delta" and e.content_items[0].type.endswith(".done")
    ]


def test_thought_summaries_and_signature_then_text() -> None:
    events, error = decode(body(
        step(0, "thought", summary("Let me"), summary(" think."), signature("sig-0")),
        step(1, "model_output", text("Hello"), text(" there")),
    ))
    assert error is None
    assert done_items(events) == [
        ThinkingDone("Let me think.", {"signature": "sig-0"}),
        TextDone("Hello there"),
    ]
    stop = events[-1]
    assert (stop.usage_metadata, stop.finish_reason) == (USAGE_VALUE, FinishReason.STOP)


def test_a_signature_after_a_thought_image_lands_on_the_image() -> None:
    """02 §4 step 3: the fidelity-only fragment of the same step joins the open image item."""
    image = {"type": "thought_summary",
             "content": {"type": "image", "data": b64(PNG), "mime_type": "image/png"}}
    events, error = decode(body(
        step(0, "thought", summary("Sketching."), image, signature("sig-img")),
        step(1, "model_output", text("Done.")),
    ))
    assert error is None
    assert done_items(events) == [
        ThinkingDone("Sketching."),
        InlineThinkingDone(PNG, "image/png", {"signature": "sig-img"}),
        TextDone("Done."),
    ]


def test_a_thought_image_without_a_mime_type_is_jpeg() -> None:
    image = {"type": "thought_summary", "content": {"type": "image", "data": b64(PNG)}}
    events, _ = decode(body(step(0, "thought", image), step(1, "model_output", text("x"))))
    assert done_items(events)[0] == InlineThinkingDone(PNG, "image/jpeg")


def test_each_step_signature_stays_on_its_own_step() -> None:
    events, error = decode(body(
        step(0, "thought", summary("a"), signature("s0")),
        step(1, "model_output", text("b")),
        step(2, "thought", signature("s2")),
        step(3, "function_call", name="f", id="c1", arguments={"x": 1}),
        end=completed("requires_action"),
    ))
    assert error is None
    assert done_items(events) == [
        ThinkingDone("a", {"signature": "s0"}),
        TextDone("b"),
        ThinkingDone("", {"signature": "s2"}),
        ToolCallDone("f", "c1", {"x": 1}),
    ]
    assert events[-1].finish_reason == FinishReason.TOOL_CALL


def test_streamed_function_call_arguments_and_several_calls() -> None:
    events, error = decode(body(
        step(0, "function_call",
             {"type": "arguments_delta", "arguments": '{"city": "Par'},
             {"type": "arguments_delta", "arguments": 'is"}'},
             name="get_weather", id="call_a", arguments={}),
        step(1, "function_call", {"type": "arguments_delta", "arguments": "{}"},
             name="get_time", id="call_b"),
        end=completed("requires_action"),
    ))
    assert error is None
    assert done_items(events) == [
        ToolCallDone("get_weather", "call_a", {"city": "Paris"}),
        ToolCallDone("get_time", "call_b", {}),
    ]
    first = events[0].content_items[0]
    assert (first.name, first.tool_call_id) == ("get_weather", "call_a")  # type: ignore[union-attr]


def test_a_call_without_an_id_is_named_by_its_name() -> None:
    events, _ = decode(body(step(0, "function_call", name="lookup", arguments={"q": "x"}),
                            end=completed("requires_action")))
    assert done_items(events) == [ToolCallDone("lookup", "lookup", {"q": "x"})]


def test_a_call_without_a_name_is_malformed() -> None:
    _, error = decode(body(step(0, "function_call", name="", id="c")))
    assert isinstance(error, MalformedEventError)


def test_images_are_items_of_their_own_and_audio_chunks_join() -> None:
    audio = {"type": "audio", "mime_type": "audio/L16", "sample_rate": 24000, "channels": 1}
    events, error = decode(body(
        step(0, "model_output", text("Look:"),
             {"type": "image", "data": b64(PNG), "mime_type": "image/png"},
             {"type": "image", "data": b64(b"second")}),
        step(1, "model_output", {**audio, "data": b64(b"\x00\x01")},
             {**audio, "data": b64(b"\x02\x03")}),
        step(2, "model_output", {"type": "audio", "data": b64(b"\x04")}),
    ))
    assert error is None
    assert done_items(events) == [
        TextDone("Look:"),
        InlineDataDone(PNG, "image/png"),
        InlineDataDone(b"second", "image/jpeg"),
        InlineDataDone(b"\x00\x01\x02\x03", "audio/L16; rate=24000; channels=1"),
        InlineDataDone(b"\x04", "audio/L16"),
    ]
    assert isinstance(events[7].content_items[0], InlineDataDelta)


def test_media_without_inline_data_is_skipped() -> None:
    events, error = decode(body(
        step(0, "model_output", {"type": "image", "uri": "gs://bucket/x.png"}, text("ok")),
    ))
    assert error is None
    assert done_items(events) == [TextDone("ok")]


def test_bad_base64_is_malformed() -> None:
    _, error = decode(body(step(0, "model_output", {"type": "image", "data": "not base64!"})))
    assert isinstance(error, MalformedEventError)


@pytest.mark.parametrize(
    ("status", "finish"),
    [
        ("completed", FinishReason.STOP),
        ("requires_action", FinishReason.TOOL_CALL),
        ("incomplete", FinishReason.LENGTH),
        ("failed", FinishReason.UNKNOWN),
        ("cancelled", FinishReason.UNKNOWN),
    ],
)
def test_statuses(status: str, finish: FinishReason) -> None:
    events, error = decode(body(step(0, "model_output", text("x")), end=completed(status)))
    assert error is None
    assert events[-1].finish_reason == finish


def test_usage_missing_is_all_null_and_counts_are_not_summed() -> None:
    events, error = decode(body(step(0, "model_output", text("x")), end=completed(usage=None)))
    assert error is None
    assert events[-1].usage_metadata == UsageMetadata()
    only_input = completed(usage={"total_input_tokens": 7})
    events, _ = decode(body(step(0, "model_output", text("x")), end=only_input))
    assert events[-1].usage_metadata == UsageMetadata(prompt_tokens=7)


def test_an_error_event_is_a_provider_stream_error() -> None:
    error_event = {"event_type": "error",
                   "error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
    events, error = decode(sse(*created(), *step(0, "model_output", text("par"))[:2],
                               error_event))
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type, error.provider_message) == (503, "UNAVAILABLE",
                                                                      "overloaded")
    assert error.usage_metadata is None
    assert error.retryable
    assert done_items(events) == []  # the open item gets no .done before the error


def test_an_error_event_without_an_error_object_is_unknown() -> None:
    heartbeat = {"event_type": "error"}
    data = body(step(0, "model_output", text("x")))
    noisy = data.replace(b"\n\n", b"\n\n" + sse(heartbeat), 1)
    events, error = decode(noisy)
    assert error is None
    assert done_items(events) == [TextDone("x")]
    _, strict_error = decode(noisy, strict=True)
    assert isinstance(strict_error, UnknownEventError)


def test_server_tool_steps_and_annotations_are_skipped_even_when_strict() -> None:
    annotation = {"type": "text_annotation_delta", "annotations": [{"url": "https://x"}]}
    data = body(
        step(0, "google_search_call", {"type": "google_search_call", "arguments": {"q": 1}},
             id="s1"),
        step(1, "google_search_result", {"type": "google_search_result", "result": []},
             call_id="s1"),
        step(2, "code_execution_call", {"type": "code_execution_call", "arguments": {}}),
        step(3, "model_output", text("Found it."), annotation),
    )
    for strict in (False, True):
        events, error = decode(data, strict=strict)
        assert error is None
        assert done_items(events) == [TextDone("Found it.")]


def test_an_unknown_step_type_is_skipped_with_its_deltas_or_raises_when_strict() -> None:
    data = body(step(0, "hologram", {"type": "text", "text": "hidden"}),
                step(1, "model_output", text("shown")))
    events, error = decode(data)
    assert error is None
    assert done_items(events) == [TextDone("shown")]
    _, strict_error = decode(data, strict=True)
    assert isinstance(strict_error, UnknownEventError)


@pytest.mark.parametrize(
    "stray",
    [
        # a delta for a step that is not open
        {"event_type": "step.delta", "index": 9, "delta": text("x")},
        # a step index opened a second time
        {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}},
        # an unknown delta type in a known step
        {"event_type": "step.delta", "index": 1, "delta": {"type": "hologram"}},
    ],
    ids=["closed-step", "reopened-index", "unknown-delta"],
)
def test_events_out_of_place_are_skipped_or_raise_when_strict(stray: dict[str, Any]) -> None:
    events = [*created(), *step(0, "model_output", text("a")),
              {"event_type": "step.start", "index": 1, "step": {"type": "model_output"}},
              stray,
              {"event_type": "step.delta", "index": 1, "delta": text("b")},
              {"event_type": "step.stop", "index": 1}, completed()]
    result, error = decode(sse(*events))
    assert error is None
    assert done_items(result) == [TextDone("a"), TextDone("b")]
    _, strict_error = decode(sse(*events), strict=True)
    assert isinstance(strict_error, UnknownEventError)
    assert "unexpected" in (strict_error.detail or "") or "unknown" in (strict_error.detail or "")


def test_a_second_signature_on_one_step_is_out_of_place() -> None:
    data = body(step(0, "thought", signature("one"), signature("two")),
                step(1, "model_output", text("x")))
    events, error = decode(data)
    assert error is None
    assert done_items(events)[0] == ThinkingDone("", {"signature": "one"})
    _, strict_error = decode(data, strict=True)
    assert isinstance(strict_error, UnknownEventError)


def test_event_lines_are_accepted_as_well() -> None:
    events = [*created(), *step(0, "model_output", text("hi")), completed()]
    plain, _ = decode(sse(*events))
    framed, error = decode(sse(*events, event_lines=True))
    assert error is None
    assert done_items(framed) == done_items(plain) == [TextDone("hi")]


def test_nothing_after_the_completed_event_counts() -> None:
    """08 D56: the pipeline stops at ``interaction.completed``."""
    data = body(step(0, "model_output", text("x"))) + sse(
        {"event_type": "step.delta", "index": 0, "delta": text("late")},
        {"event_type": "error", "error": {"code": 500, "message": "late"}},
    )
    events, error = decode(data)
    assert error is None
    assert done_items(events) == [TextDone("x")]


def test_the_live_wires_done_trailer_is_ignored() -> None:
    """The live API frames events with ``event:`` lines and ends with ``event: done`` /
    ``data: [DONE]``, which is not JSON: it comes after the terminal event (08 D56)."""
    events = [*created(), *step(0, "model_output", text("hi")), completed()]
    data = sse(*events, event_lines=True) + b"event: done\ndata: [DONE]\n\n"
    for strict in (False, True):
        result, error = decode(data, strict=strict)
        assert error is None
        assert done_items(result) == [TextDone("hi")]


def test_only_thinking_is_an_empty_response() -> None:
    _, error = decode(body(step(0, "thought", summary("hmm"), signature("s"))))
    assert isinstance(error, EmptyResponseError)


def test_a_stream_without_completed_is_incomplete() -> None:
    events, error = decode(sse(*created(), *step(0, "model_output", text("x"))))
    assert type(error).__name__ == "IncompleteStreamError"
    assert done_items(events) == [TextDone("x")]


# ------------------------------------------------------------------------------------------
# The renderer and its normalisation
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mime", "parts"),
    [
        ("audio/L16; rate=24000; channels=1", ("audio/L16", 24000, 1)),
        ("audio/L16;codec=pcm;rate=16000", ("audio/L16", 16000, None)),
        ("audio/wav", ("audio/wav", None, None)),
        ("audio/L16; rate=fast", ("audio/L16", None, None)),
    ],
)
def test_split_audio_mime(mime: str, parts: tuple[str, int | None, int | None]) -> None:
    assert split_audio_mime(mime) == parts


def test_render_round_trips_every_kind_it_carries() -> None:
    items: list[DoneItem] = [
        ThinkingDone("Plan the picture.", {"signature": "s0", "x": "dropped"}),
        InlineThinkingDone(PNG, "image/png", {"signature": "s1"}),
        TextDone("Here:", {"phase": "dropped"}),
        InlineDataDone(PNG, "image/png"),
        InlineDataDone(b"\x00" * 40, "audio/L16;codec=pcm;rate=24000"),
        ToolCallDone("draw", "call_1", {"what": "cat"}),
    ]
    usage = UsageMetadata(cached_tokens=1, prompt_tokens=2, thoughts_tokens=3, response_tokens=4)
    data = adapters.render(PROTOCOL, items, usage, FinishReason.TOOL_CALL, fragment_size=7)
    events, error = decode(data)
    assert error is None
    expected, finish = normalize(items, FinishReason.TOOL_CALL)
    assert done_items(events) == expected
    assert expected[4] == InlineDataDone(b"\x00" * 40, "audio/L16; rate=24000")
    assert expected[0].fidelity == {"signature": "s0"}
    assert (events[-1].usage_metadata, events[-1].finish_reason) == (usage, finish)


def test_what_an_interactions_body_cannot_carry() -> None:
    for item in (EmbeddingDone((1.0,)), InlineDataDone(b"%PDF", "application/pdf")):
        with pytest.raises(UnsupportedContentError):
            adapters.render(PROTOCOL, [item], UsageMetadata(), FinishReason.STOP)
        with pytest.raises(UnsupportedContentError):
            normalize([item], FinishReason.STOP)
    # A thought image without bytes keeps only its signature, as empty thinking.
    kept, _ = normalize([InlineThinkingDone(b"", "image/png", {"signature": "s"})],
                        FinishReason.STOP)
    assert kept == [ThinkingDone("", {"signature": "s"})]
