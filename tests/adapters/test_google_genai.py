"""The generateContent machine and renderer (spec 06 §4; 02; 08 D4, D7, D51, D59, D66, D72).

The bodies of ``tests/fixtures/google-genai`` run through ``adapters.testing.check_protocol``
(one test per check): the recordings of ``shared/fixtures/google-generate-content`` (the two
Vertex ``partialArgs`` ones included, 08 D72) and hand-written ``hand-*`` bodies for what no
public recording shows (``MAX_TOKENS``, ``SAFETY``, a blocked prompt, an in-stream error, a
thought image signed after it, audio chunks). The bodies below run whole, byte by byte and in
random chunkings (``decode_every_way``), which must all agree.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from harness import FIXTURES, decode_every_way

from adapters.google_genai.render import normalize
from adapters.testing import ProtocolCheck, protocol_checks
from mmsp_core import (
    EmptyResponseError,
    IncompleteStreamError,
    MalformedEventError,
    ProviderStreamError,
    UnknownEventError,
)
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    InlineThinkingDone,
    TextDone,
    ThinkingDone,
    ToolCallDelta,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.wire import to_wire

SOURCE = "google-genai"

CHECKS: list[ProtocolCheck] = protocol_checks(SOURCE, FIXTURES / "google-genai")


@pytest.mark.parametrize("check", CHECKS, ids=[check.id for check in CHECKS])
def test_protocol_check(check: ProtocolCheck) -> None:
    check.run()


# --------------------------------------------------------------------------------------------
# Hand-written bodies
# --------------------------------------------------------------------------------------------


def chunk(*parts: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    """One ``data:`` event holding a ``GenerateContentResponse`` with one candidate."""
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    body = {"candidates": [candidate], "modelVersion": "gemini-3.8-flash", **extra}
    return b"data: " + json.dumps(body).encode() + b"\r\n\r\n"


def usage(prompt: int, response: int, **counts: int) -> dict[str, Any]:
    return {"usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": response,
                              **counts}}


def decode(*events: bytes, strict: bool = False) -> tuple[list[Any], BaseException | None]:
    """The done items (wire form) and the error of a body made of ``events``."""
    events_out, error = decode_every_way(SOURCE, b"".join(events), strict=strict)
    done = [
        to_wire(e.content_items[0])
        for e in events_out
        if e.event_type == "delta" and e.content_items[0].type.endswith(".done")
    ]
    return done, error


def last_stop(*events: bytes) -> UniEvent:
    out, error = decode_every_way(SOURCE, b"".join(events))
    assert error is None, error
    return out[-1]


IMAGE = base64.b64encode(b"\x89PNG image").decode()
AUDIO1 = base64.b64encode(b"\x00\x01").decode()
AUDIO2 = base64.b64encode(b"\x02\x03").decode()


def test_a_signature_on_an_empty_trailing_text_part_signs_the_text() -> None:
    done, error = decode(
        chunk({"text": "Hel"}),
        chunk({"text": "lo"}),
        chunk({"text": "", "thoughtSignature": "S1"}, finish="STOP", **usage(3, 2)),
    )
    assert error is None
    assert done == [{"type": "text.done", "text": "Hello", "fidelity": {"signature": "S1"}}]


def test_a_signature_on_a_function_call_part_signs_that_call_only() -> None:
    done, error = decode(
        chunk({"text": "thinking it over", "thought": True}),
        chunk(
            {"functionCall": {"name": "add", "args": {"a": 1}}, "thoughtSignature": "S1"},
            {"functionCall": {"name": "mul", "args": {"a": 2}, "id": "c2"}},
            finish="STOP",
            **usage(3, 2),
        ),
    )
    assert error is None
    assert done == [
        {"type": "thinking.done", "thinking": "thinking it over"},
        {"type": "tool_call.done", "name": "add", "tool_call_id": "add", "arguments": {"a": 1},
         "fidelity": {"signature": "S1"}},
        {"type": "tool_call.done", "name": "mul", "tool_call_id": "c2", "arguments": {"a": 2}},
    ]


def test_a_signature_after_a_thought_image_signs_the_image() -> None:
    done, error = decode(
        chunk({"inlineData": {"mimeType": "image/png", "data": IMAGE}, "thought": True}),
        chunk({"text": "", "thought": True, "thoughtSignature": "S1"}),
        chunk({"inlineData": {"mimeType": "image/png", "data": IMAGE}}),
        chunk({"text": "", "thoughtSignature": "S2"}, finish="STOP", **usage(3, 2)),
    )
    assert error is None
    assert done == [
        {"type": "inline_thinking.done", "data": IMAGE, "mime_type": "image/png",
         "fidelity": {"signature": "S1"}},
        {"type": "inline_data.done", "data": IMAGE, "mime_type": "image/png"},
        {"type": "text.done", "text": "", "fidelity": {"signature": "S2"}},
    ]


def test_a_second_signature_starts_a_new_item() -> None:
    done, error = decode(
        chunk({"text": "a", "thoughtSignature": "S1"}),
        chunk({"text": "b"}),
        chunk({"text": "c", "thoughtSignature": "S2"}),
        chunk({"text": "", "thoughtSignature": "S3"}, finish="STOP", **usage(3, 2)),
    )
    assert error is None
    assert done == [
        {"type": "text.done", "text": "ab", "fidelity": {"signature": "S1"}},
        {"type": "text.done", "text": "c", "fidelity": {"signature": "S2"}},
        {"type": "text.done", "text": "", "fidelity": {"signature": "S3"}},
    ]


def test_images_are_items_of_their_own_and_audio_chunks_of_one_type_join() -> None:
    done, error = decode(
        chunk({"inlineData": {"mimeType": "image/png", "data": IMAGE}},
              {"inlineData": {"mimeType": "image/png", "data": IMAGE}}),
        chunk({"inlineData": {"mimeType": "audio/L16;rate=24000", "data": AUDIO1}}),
        chunk({"inlineData": {"mimeType": "audio/L16;rate=24000", "data": AUDIO2}}),
        chunk({"inlineData": {"data": AUDIO1}}, finish="STOP", **usage(3, 2)),
    )
    assert error is None
    joined = base64.b64encode(b"\x00\x01\x02\x03").decode()
    assert done == [
        {"type": "inline_data.done", "data": IMAGE, "mime_type": "image/png"},
        {"type": "inline_data.done", "data": IMAGE, "mime_type": "image/png"},
        {"type": "inline_data.done", "data": joined, "mime_type": "audio/L16;rate=24000"},
        {"type": "inline_data.done", "data": AUDIO1, "mime_type": "application/octet-stream"},
    ]


def test_function_call_arguments_are_python_style_json_text() -> None:
    events, error = decode_every_way(
        SOURCE, chunk({"functionCall": {"name": "f", "args": {"a": 1, "b": "é"}}}, finish="STOP",
                      **usage(1, 1)))
    assert error is None
    deltas = [item for e in events for item in e.content_items
              if isinstance(item, ToolCallDelta)]
    assert deltas[0].arguments == '{"a": 1, "b": "é"}'
    assert events[-1].finish_reason == FinishReason.TOOL_CALL


@pytest.mark.parametrize(
    ("wire", "finish"),
    [
        ("STOP", FinishReason.STOP),
        ("MAX_TOKENS", FinishReason.LENGTH),
        ("SAFETY", FinishReason.UNKNOWN),
        ("RECITATION", FinishReason.UNKNOWN),
        ("MALFORMED_FUNCTION_CALL", FinishReason.UNKNOWN),
        ("OTHER", FinishReason.UNKNOWN),
    ],
)
def test_finish_reasons(wire: str, finish: FinishReason) -> None:
    stop = last_stop(chunk({"text": "Hi"}), chunk(finish=wire, **usage(1, 1)))
    assert stop.finish_reason == finish


def test_stop_after_a_call_in_an_earlier_chunk_is_tool_call() -> None:
    stop = last_stop(
        chunk({"functionCall": {"name": "f", "args": {}}}),
        chunk({"text": ""}, finish="STOP", **usage(1, 1)),
    )
    assert stop.finish_reason == FinishReason.TOOL_CALL


def test_cumulative_usage_is_replaced_and_the_prompt_excludes_the_cache() -> None:
    stop = last_stop(
        chunk({"text": "a"}, **usage(10, 1, thoughtsTokenCount=5)),
        chunk({"text": "b"}, **usage(10, 2, thoughtsTokenCount=5)),
        chunk({"text": "c"}, finish="STOP",
              **usage(10, 3, thoughtsTokenCount=7, cachedContentTokenCount=4)),
    )
    assert stop.usage_metadata == UsageMetadata(
        cached_tokens=4, prompt_tokens=6, thoughts_tokens=7, response_tokens=3
    )


def test_a_usage_object_without_counts_is_nothing() -> None:
    # Vertex's traffic-type-only usage on every chunk says nothing (06 §4).
    body = (
        chunk({"text": "a"}, usageMetadata={"trafficType": "ON_DEMAND"}),
        chunk({"text": "b"}, finish="STOP", usageMetadata={"trafficType": "ON_DEMAND"}),
    )
    _, error = decode(*body)
    assert isinstance(error, IncompleteStreamError)
    assert error.missing == ("usage_metadata",)


def test_a_blocked_prompt_ends_as_an_empty_response_with_its_usage() -> None:
    body = b"data: " + json.dumps({
        "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
    }).encode() + b"\r\n\r\n"
    done, error = decode(body)
    assert done == []
    assert isinstance(error, EmptyResponseError)
    assert error.finish_reason == "unknown"
    assert error.usage_metadata == UsageMetadata(prompt_tokens=7)


def test_an_error_object_in_the_stream_is_a_provider_stream_error() -> None:
    error_chunk = b"data: " + json.dumps({"error": {
        "code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE",
    }}).encode() + b"\r\n\r\n"
    events, error = decode_every_way(
        SOURCE, chunk({"text": "Hi"}, **usage(5, 1)) + error_chunk
    )
    # The open item gets no .done: the error comes where the provider put it (08 D4).
    assert [to_wire(e.content_items[0]) for e in events] == [{"type": "text.delta", "text": "Hi"}]
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type, error.provider_message) == (
        503, "UNAVAILABLE", "The model is overloaded."
    )
    assert error.usage_metadata == UsageMetadata(prompt_tokens=5, response_tokens=1)
    assert error.retryable


def test_server_tool_parts_are_skipped_in_strict_mode_too() -> None:
    body = (
        chunk({"executableCode": {"language": "PYTHON", "code": "1+1"}, "thoughtSignature": "S"}),
        chunk({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2"}}),
        chunk({"toolCall": {"toolType": "FILE_SEARCH"}}, {"toolResponse": {"id": "x"}}),
        chunk({"text": "2"}, finish="STOP", **usage(1, 1)),
    )
    done, error = decode(*body, strict=True)
    assert error is None
    assert done == [{"type": "text.done", "text": "2"}]


def test_an_unknown_part_is_skipped_or_unknown_when_strict() -> None:
    body = (chunk({"videoMetadata": {}}), chunk({"text": "a"}, finish="STOP", **usage(1, 1)))
    done, error = decode(*body)
    assert error is None and done == [{"type": "text.done", "text": "a"}]
    _, error = decode(*body, strict=True)
    assert isinstance(error, UnknownEventError)


def test_a_function_call_without_a_name_is_malformed() -> None:
    _, error = decode(chunk({"functionCall": {"args": {}}}, finish="STOP", **usage(1, 1)))
    assert isinstance(error, MalformedEventError)


def test_a_chunk_without_candidates_or_usage_is_empty() -> None:
    done, error = decode(b"data: {}\r\n\r\n", chunk({"text": "a"}, finish="STOP", **usage(1, 1)))
    assert error is None and done == [{"type": "text.done", "text": "a"}]


def test_only_the_first_candidate_is_read() -> None:
    body = b"data: " + json.dumps({"candidates": [
        {"content": {"parts": [{"text": "first"}]}, "finishReason": "STOP", "index": 0},
        {"content": {"parts": [{"text": "second"}]}, "finishReason": "STOP", "index": 1},
    ], **usage(1, 1)}).encode() + b"\r\n\r\n"
    done, error = decode(body)
    assert error is None and done == [{"type": "text.done", "text": "first"}]


def test_normalize_merges_what_the_wire_joins() -> None:
    items: list[DoneItem] = [
        TextDone("a"),
        TextDone("b", {"signature": "S", "x": "y"}),
        TextDone("c", {"signature": "T"}),
        ThinkingDone(""),
        InlineThinkingDone(b"i", "image/png"),
        ThinkingDone("", {"signature": "U"}),
        ThinkingDone("t"),
        InlineThinkingDone(b"", "image/png", {"signature": "V"}),
    ]
    out, finish = normalize(items, FinishReason.TOOL_CALL)
    assert out == [
        TextDone("ab", {"signature": "S"}), TextDone("c", {"signature": "T"}),
        InlineThinkingDone(b"i", "image/png", {"signature": "U"}),
        ThinkingDone("t", {"signature": "V"}),
    ]
    assert finish == FinishReason.STOP
