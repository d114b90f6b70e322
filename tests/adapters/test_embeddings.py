"""The two embedding protocols, ``openai-embedding`` and ``google-embedding`` (spec 02 §10,
04 §4, 05 §4.5, §5, 06 §6; 08 D28, D64).

Their answers are one JSON body, not an event stream. Every body under
``tests/fixtures/<protocol>/`` runs through ``adapters.testing.protocol_checks`` (whole, byte by
byte and in random chunkings, the render round trip, and the "only ``MMSPError``" property
with hostile values at any path of the body); hand-written bodies run whole, byte by byte and
in chunkings through ``decode_every_way``, which must agree.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import pytest
from harness import FIXTURES, decode_every_way

import adapters
from adapters.openai_embedding import vectors
from adapters.testing import ProtocolCheck, protocol_checks
from mmsp_core import (
    EmptyResponseError,
    IncompleteStreamError,
    InvalidMessageError,
    MalformedEventError,
    ProviderStreamError,
    StreamLimitError,
    UnsupportedContentError,
    UnsupportedParameterError,
)
from mmsp_core.model import (
    DoneItem,
    EmbeddingDelta,
    EmbeddingDone,
    FinishReason,
    ImageUrlDone,
    InlineDataDone,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.sse import BodyDecoder

OPENAI = "openai-embedding"
GOOGLE = "google-embedding"

CHECKS: list[tuple[str, ProtocolCheck]] = [
    (name, check)
    for name in (OPENAI, GOOGLE)
    for check in protocol_checks(name, FIXTURES / name)
]


@pytest.mark.parametrize(
    ("name", "check"), CHECKS, ids=[f"{name}: {check.id}" for name, check in CHECKS]
)
def test_protocol_check(name: str, check: ProtocolCheck) -> None:
    check.run()


def test_both_read_one_json_body() -> None:
    for name in (OPENAI, GOOGLE):
        assert isinstance(adapters.PROTOCOLS[name].new_decoder(), BodyDecoder)


# -- helpers ------------------------------------------------------------------------------------


def b64(values: list[float]) -> str:
    """Little-endian float32, written independently of ``adapters.openai_embedding.vectors``."""
    return base64.b64encode(b"".join(struct.pack("<f", v) for v in values)).decode()


def decode(source: str, document: Any) -> tuple[list[UniEvent], BaseException | None]:
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    return decode_every_way(source, body)


def openai_body(*entries: tuple[int, Any], usage: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": e} for i, e in entries],
        "model": "text-embedding-3-small",
    }
    if usage is not None:
        body["usage"] = usage
    return body


def vectors_of(events: list[UniEvent]) -> list[tuple[float, ...]]:
    return [
        item.embedding
        for event in events
        for item in event.content_items
        if isinstance(item, EmbeddingDone)
    ]


def user(*items: Any) -> UniMessage:
    return UniMessage(role="user", content_items=items)


# -- the public stream of an embedding answer (02 §10) --------------------------------------------


def test_one_delta_and_done_per_input_in_index_order_then_stop() -> None:
    body = openai_body((2, b64([0.5, -0.25])), (0, [1, 2]), (1, b64([3.0])),
                       usage={"prompt_tokens": 9, "total_tokens": 9})
    events, error = decode(OPENAI, body)
    assert error is None
    assert [e.content_items[0].type for e in events[:-1]] == [
        "embedding.delta", "embedding.done"] * 3
    assert [e.content_items[0] for e in events[:-1]][::2] == [
        EmbeddingDelta((1.0, 2.0)), EmbeddingDelta((3.0,)), EmbeddingDelta((0.5, -0.25))]
    stop = events[-1]
    assert stop.event_type == "stop" and stop.content_items == ()
    assert stop.usage_metadata == UsageMetadata(prompt_tokens=9)
    assert stop.finish_reason is FinishReason.STOP


def test_base64_vectors_are_little_endian_float32() -> None:
    recorded = json.loads((FIXTURES / OPENAI / "base64-single.json").read_bytes())
    text = recorded["data"][0]["embedding"]
    raw = base64.b64decode(text)
    expected = tuple(struct.unpack_from("<f", raw, i)[0] for i in range(0, len(raw), 4))
    events, error = decode(OPENAI, recorded)
    assert error is None
    assert vectors_of(events) == [expected]
    assert len(expected) == 1536


def test_a_float_array_answer_is_accepted_as_given() -> None:  # 08 D28
    events, error = decode(OPENAI, openai_body((0, [0.1, -2, 3e-5])))
    assert error is None
    assert vectors_of(events) == [(0.1, -2.0, 3e-5)]


@pytest.mark.parametrize("empty", ["", []])
def test_an_empty_vector_still_stands_for_its_input(empty: Any) -> None:
    events, error = decode(OPENAI, openai_body((0, [1.5]), (1, empty), (2, [2.5])))
    assert error is None
    assert vectors_of(events) == [(1.5,), (), (2.5,)]
    assert EmbeddingDelta(()) in [e.content_items[0] for e in events if e.content_items]


def test_without_usage_the_input_count_is_null_but_usage_is_there() -> None:
    events, error = decode(OPENAI, openai_body((0, [1.0])))
    assert error is None
    assert events[-1].usage_metadata == UsageMetadata()


@pytest.mark.parametrize(
    "indexes", [(0, 0), (1, 2), (0, 2), (-1, 0)], ids=["repeated", "from-1", "gap", "negative"]
)
def test_indexes_that_do_not_pair_every_vector_with_an_input_are_malformed(
    indexes: tuple[int, int],
) -> None:
    events, error = decode(OPENAI, openai_body(*((i, [1.0]) for i in indexes)))
    assert isinstance(error, MalformedEventError)
    assert events == []


@pytest.mark.parametrize(
    "embedding",
    ["not base64!", base64.b64encode(bytes(6)).decode(), [1, "2"], [True], {"a": 1}, None],
    ids=["not-base64", "not-whole-floats", "a-string-value", "a-bool", "an-object", "missing"],
)
def test_a_vector_that_is_not_one_is_malformed(embedding: Any) -> None:
    _, error = decode(OPENAI, openai_body((0, embedding)))
    assert isinstance(error, MalformedEventError)


def test_an_integer_too_large_for_a_float_is_malformed_not_a_crash() -> None:
    _, error = decode(OPENAI, openai_body((0, [10**400])))
    assert isinstance(error, MalformedEventError)


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'{"data": {}}', b'"text"'])
def test_a_body_that_is_not_an_answer_is_malformed(body: bytes) -> None:
    _, error = decode(OPENAI, body)
    assert isinstance(error, MalformedEventError)


def test_an_empty_body_is_incomplete() -> None:
    _, error = decode(OPENAI, b"")
    assert isinstance(error, IncompleteStreamError)
    assert error.missing == ("usage_metadata", "finish_reason")


def test_an_answer_without_vectors_is_empty() -> None:
    _, error = decode(OPENAI, openai_body(usage={"prompt_tokens": 1}))
    assert isinstance(error, EmptyResponseError)


def test_an_error_object_in_the_answer_is_a_provider_stream_error() -> None:  # 08 D4
    body = {"error": {"message": "overloaded", "type": "server_error", "code": "overloaded"}}
    _, error = decode(OPENAI, body)
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type, error.provider_message) == (
        "overloaded", "server_error", "overloaded")
    assert error.retryable
    _, error = decode(OPENAI, {"error": "plain text"})
    assert isinstance(error, ProviderStreamError)
    assert error.provider_message == "plain text"


def test_the_body_size_is_bounded() -> None:
    pipeline = adapters.new_pipeline(OPENAI, clock=None)
    big = b" " * (64 << 20)
    pipeline.receive_data(big)
    pipeline.receive_data(b" ")
    with pytest.raises(StreamLimitError):
        pipeline.next_event()


# -- Gemini's answer (08 D64) ----------------------------------------------------------------------


def test_gemini_vectors_in_request_order_with_the_prompt_token_count() -> None:
    body = {
        "embeddings": [{"values": [0.25, -1]}, {"values": []}, {}],
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
    }
    events, error = decode(GOOGLE, body)
    assert error is None
    assert vectors_of(events) == [(0.25, -1.0), (), ()]
    assert events[-1].usage_metadata == UsageMetadata(prompt_tokens=7)


def test_gemini_billable_characters_are_not_tokens() -> None:  # 08 D64
    body = {"embeddings": [{"values": [1.0]}], "metadata": {"billableCharacterCount": 40}}
    events, error = decode(GOOGLE, body)
    assert error is None
    assert events[-1].usage_metadata == UsageMetadata()


def test_gemini_error_object_is_a_provider_stream_error() -> None:
    body = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    _, error = decode(GOOGLE, body)
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.error_type) == (503, "UNAVAILABLE")
    assert error.retryable


@pytest.mark.parametrize(
    "body", [{"embeddings": {}}, {"embeddings": [1]}, {"embeddings": [{"values": ["x"]}]}, {}]
)
def test_gemini_answers_of_the_wrong_shape_are_malformed(body: Any) -> None:
    _, error = decode(GOOGLE, body)
    assert isinstance(error, MalformedEventError)


@pytest.mark.parametrize("client", ["google-genai", "google-official"])
def test_both_google_clients_decode_an_embedding_model_through_google_embedding(
    client: str,
) -> None:
    pipeline = adapters.new_pipeline(client, clock=None, model="gemini-embedding-2")
    pipeline.receive_data(b'{"embeddings":[{"values":[1.0]}]}')
    pipeline.receive_eof()
    events = []
    while isinstance(event := pipeline.next_event(), UniEvent):
        events.append(event)
    assert vectors_of(events) == [(1.0,)]


# -- render (08 D49) ---------------------------------------------------------------------------


def test_render_writes_base64_float32_and_the_input_count() -> None:
    items: list[DoneItem] = [EmbeddingDone((0.5, -2.0)), TextDone("dropped"), EmbeddingDone(())]
    body = json.loads(adapters.render(OPENAI, items, UsageMetadata(3, 4, 5, 6), "stop",
                                      model="m"))
    assert body["data"] == [
        {"object": "embedding", "index": 0, "embedding": b64([0.5, -2.0])},
        {"object": "embedding", "index": 1, "embedding": ""},
    ]
    assert body["usage"] == {"prompt_tokens": 4, "total_tokens": 4}
    assert body["model"] == "m"


def test_values_beyond_float32_become_infinite_as_ieee_rounding_does() -> None:
    assert vectors.float32([1e300, -1e300, 0.1]) == (
        float("inf"), float("-inf"), struct.unpack("<f", struct.pack("<f", 0.1))[0])


def test_gemini_render_leaves_out_a_usage_without_a_count() -> None:
    body = json.loads(adapters.render(GOOGLE, [EmbeddingDone((1.0,))], UsageMetadata(), "stop"))
    assert body == {"embeddings": [{"values": [1.0]}]}


# -- OpenAI requests (04 §4, 05 §4.5, §5) --------------------------------------------------------


def openai_request(messages: list[Any], config: Any = None) -> dict[str, Any]:
    request = adapters.build_request(OPENAI, "text-embedding-3-small", messages, config or {})
    assert (request.method, request.path) == ("POST", "/embeddings")
    assert ("content-type", "application/json") in request.headers
    parsed: dict[str, Any] = json.loads(request.body)
    return parsed


def test_one_input_per_message_its_texts_joined_base64_asked() -> None:
    messages = [user(TextDone("Hello"), TextDone(" world")),
                UniMessage(role="assistant", content_items=(TextDone("Bye"),))]
    assert openai_request(messages) == {
        "model": "text-embedding-3-small",
        "input": ["Hello world", "Bye"],
        "encoding_format": "base64",
    }


def test_dimensions_come_from_the_embedding_config_and_other_keys_are_ignored() -> None:
    body = openai_request([user(TextDone("x"))], {
        "embedding_config": {"dimensions": 256}, "thinking_level": "high", "temperature": 0.3,
        "max_tokens": 10, "system_prompt": "ignored",
    })
    assert body == {"model": "text-embedding-3-small", "input": ["x"], "dimensions": 256,
                    "encoding_format": "base64"}


def test_fast_mode_is_refused_on_build_and_check_alike() -> None:
    for call in (
        lambda: adapters.build_request(OPENAI, "m", [user(TextDone("x"))], {"fast_mode": True}),
        lambda: adapters.check_config(OPENAI, "m", {"fast_mode": True}),
    ):
        with pytest.raises(UnsupportedParameterError) as caught:
            call()
        assert caught.value.parameter == "fast_mode"


@pytest.mark.parametrize(
    ("item", "kind"),
    [
        (ImageUrlDone("data:image/png;base64,iVBORw0KGgo="), "image_url"),
        (InlineDataDone(b"\x00", "audio/wav"), "inline_data"),
        (ThinkingDone("hmm"), "thinking"),
        (ToolCallDone("f", "c1", {}), "tool_call"),
    ],
)
def test_any_item_but_text_is_unsupported_content(item: Any, kind: str) -> None:
    with pytest.raises(UnsupportedContentError) as caught:
        openai_request([user(TextDone("x"), item)])
    assert caught.value.item_type == kind


def test_a_message_whose_text_is_empty_is_invalid_with_its_index() -> None:
    with pytest.raises(InvalidMessageError) as caught:
        openai_request([user(TextDone("x")), user(TextDone(""), TextDone(""))])
    assert caught.value.message_index == 1


def test_the_fast_mode_refusal_comes_before_the_content_refusal() -> None:  # 02 §8
    with pytest.raises(UnsupportedParameterError):
        openai_request([user(ThinkingDone("x"))], {"fast_mode": True})


@pytest.mark.parametrize("model", ["text-embedding-3-small", "Text-Embedding-3-Large"])
def test_openai_official_sends_embedding_ids_to_openai_embedding(model: str) -> None:
    assert adapters.route(model) == OPENAI
    assert adapters.route(model, "openai-official") == OPENAI


# -- Gemini requests (04 §4, 05 §4.4, §5, 08 D64) -------------------------------------------------


PNG = b"\x89PNG\r\n\x1a\nrest"


def google_request(
    client: str, messages: list[Any], config: Any = None, model: str = "gemini-embedding-2"
) -> tuple[str, dict[str, Any]]:
    request = adapters.build_request(client, model, messages, config or {})
    assert request.method == "POST"
    assert ("content-type", "application/json") in request.headers
    return request.path, json.loads(request.body)


@pytest.mark.parametrize("client", ["google-genai", "google-official"])
def test_one_batch_call_holds_every_message_on_both_google_clients(client: str) -> None:
    messages = [user(TextDone("Hello"), TextDone(" world")),
                UniMessage(role="assistant", content_items=(TextDone("Bye"),))]
    path, body = google_request(client, messages, {"embedding_config": {"dimensions": 64}})
    assert path == "/v1/models/gemini-embedding-2:batchEmbedContents"
    assert body == {"requests": [
        {"model": "models/gemini-embedding-2",
         "content": {"role": "user", "parts": [{"text": "Hello"}, {"text": " world"}]},
         "outputDimensionality": 64},
        {"model": "models/gemini-embedding-2",
         "content": {"role": "model", "parts": [{"text": "Bye"}]},
         "outputDimensionality": 64},
    ]}


def test_config_conversion_never_runs_for_an_embedding_model() -> None:  # 05 §2.3, §4.4
    config = {"temperature": 0.5, "fast_mode": True, "prompt_caching": "disable",
              "thinking_level": "high", "max_tokens": 5}
    adapters.check_config("google-genai", "gemini-embedding-2", config)
    _, body = google_request("google-official", [user(TextDone("x"))], config)
    assert body == {"requests": [{"model": "models/gemini-embedding-2",
                                  "content": {"role": "user", "parts": [{"text": "x"}]}}]}


def test_images_and_inline_data_are_inline_parts() -> None:
    data_uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    _, body = google_request("google-genai", [user(
        TextDone("a cat"), ImageUrlDone(data_uri), InlineDataDone(b"RIFF", "audio/wav"),
    )])
    assert body["requests"][0]["content"]["parts"] == [
        {"text": "a cat"},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
        {"inlineData": {"mimeType": "audio/wav", "data": base64.b64encode(b"RIFF").decode()}},
    ]


@pytest.mark.parametrize("url", ["data:image/png;base64,@@", "https://example.test/cat.png"])
def test_an_image_that_is_not_a_good_data_uri_is_invalid(url: str) -> None:
    # The Google rows have the client fetch http(s) images first (08 D37): none reaches here.
    assert adapters.needs_image_bytes("google-genai", "gemini-embedding-2")
    with pytest.raises(InvalidMessageError) as caught:
        google_request("google-genai", [user(TextDone("x")), user(ImageUrlDone(url))])
    assert (caught.value.item_type, caught.value.message_index) == ("image_url", 1)


@pytest.mark.parametrize(
    ("item", "kind"),
    [(ThinkingDone("hmm"), "thinking"), (ToolCallDone("f", "c1", {}), "tool_call")],
)
def test_other_items_are_invalid_messages(item: Any, kind: str) -> None:  # 05 §5
    with pytest.raises(InvalidMessageError) as caught:
        google_request("google-official", [user(TextDone("x")), user(TextDone("y"), item)])
    assert (caught.value.item_type, caught.value.message_index) == (kind, 1)


def test_a_message_with_no_part_is_invalid() -> None:
    with pytest.raises(InvalidMessageError) as caught:
        google_request("google-genai", [user(TextDone(""))])
    assert caught.value.message_index == 0


def test_the_model_id_cannot_change_the_path() -> None:
    path, _ = google_request("google-genai", [user(TextDone("x"))],
                             model="my/embedding?x#y")
    assert path == "/v1/models/my%2Fembedding%3Fx%23y:batchEmbedContents"


def test_a_google_client_sends_only_embedding_ids_to_google_embedding() -> None:
    for client in ("google-genai", "google-official"):
        spec = adapters.CLIENTS[client]
        assert spec.speaks("Gemini-Embedding-2")[0] == GOOGLE
        assert spec.speaks("gemini-3.8-flash")[0] != GOOGLE
