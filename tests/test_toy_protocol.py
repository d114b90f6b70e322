"""Proof that the house is ready (the kernel issue): a protocol from outside the library.

``tests/toy_protocol`` defines a made-up wire format, its record and one client row, and
nothing else in the repository knows it. One ``adapters.register`` call makes every layer speak
it: ``adapters.decode`` and ``render``, ``AutoLLMClient`` against the provider simulator (which
serves it from the record's dialect), ``list_models``, the tracer, and the CLI's ``replay``.
Leaving the ``with`` block removes it again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import aclosing
from pathlib import Path

import attrs
import pytest

import adapters
from adapters import ModelClass
from mmsp_core import (
    FinishReason,
    IncompleteStreamError,
    MalformedEventError,
    ProviderHTTPError,
    ProviderStreamError,
    RoutingError,
    TextDone,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UnknownEventError,
    UnsupportedOperationError,
    UnsupportedParameterError,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar, run
from mmsp_io import AutoLLMClient, Timeouts
from mmsp_io.cli import main
from mmsp_io.simulator import Reply, Simulator
from tests.toy_protocol import TOY, TOY_CLIENT

ITEMS = (TextDone("Let me look that up."),
         ToolCallDone("get_weather", "toy_1", {"city": "Paris"}))
USAGE = UsageMetadata(cached_tokens=0, prompt_tokens=12, thoughts_tokens=0, response_tokens=30)
WEATHER = ToolSchema("get_weather", "The weather in a city.",
                     {"type": "object", "properties": {"city": {"type": "string"}}})
QUESTION = UniMessage("user", (TextDone("What is the weather in Paris?"),))
RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=None)


@pytest.fixture
def toy() -> Iterator[None]:
    with adapters.register(TOY, [TOY_CLIENT]):
        yield


def done_items(events: list[UniEvent]) -> list[object]:
    return [e.content_items[0] for e in events
            if e.event_type == "delta" and e.content_items[0].type.endswith(".done")]


def test_decode_and_render_speak_the_toy_protocol(toy: None) -> None:
    body = adapters.render("toy", ITEMS, USAGE, FinishReason.TOOL_CALL, fragment_size=3)
    assert b"event: say" in body and b"event: args" in body
    for source in ("toy", "toy-client", "TOY-CLIENT"):
        events = list(adapters.decode(source, [body[i:i + 7] for i in range(0, len(body), 7)]))
        assert_stream_grammar(events)
        assert done_items(events) == list(ITEMS)
        assert (events[-1].usage_metadata, events[-1].finish_reason) == (
            USAGE, FinishReason.TOOL_CALL)


def test_the_kernel_gives_the_toy_its_errors(toy: None) -> None:
    unknown = b"event: whatever\ndata: {}\n\n" + adapters.render("toy", ITEMS[:1], USAGE, "stop")
    assert done_items(list(adapters.decode("toy", [unknown]))) == [ITEMS[0]]
    with pytest.raises(UnknownEventError):
        list(adapters.decode("toy", [unknown], strict=True))
    with pytest.raises(MalformedEventError):
        list(adapters.decode("toy", [b'event: say\ndata: {"text": ["x"]}\n\n']))
    with pytest.raises(MalformedEventError):
        list(adapters.decode("toy", [b"event: say\ndata: " + b"[" * 100_000 + b"\n\n"]))
    with pytest.raises(ProviderStreamError) as caught:
        list(adapters.decode("toy", [b'event: oops\ndata: {"kind": "k", "text": "t"}\n\n']))
    assert (caught.value.error_type, caught.value.provider_message) == ("k", "t")


def test_the_builder_reads_the_profile_and_the_skeleton_walks_the_messages(toy: None) -> None:
    history = [QUESTION, UniMessage("assistant", ITEMS),
               UniMessage("user", (ToolResultDone("toy_1", "18 degrees"),))]
    request = adapters.build_request("toy-client", "toy-1", history, UniConfig(tools=(WEATHER,)))
    assert (request.method, request.path) == ("POST", "/toy/v1/generate")
    body = json.loads(request.body)
    assert [turn["who"] for turn in body["turns"]] == ["user", "assistant", "assistant", "tool"]
    with pytest.raises(UnsupportedParameterError):  # ToyProfile.max_tokens_limit
        adapters.check_config("toy-client", "toy-1", {"max_tokens": 5000})
    assert adapters.route("toy-7") == "toy-client"  # the row's model prefix


def test_registration_is_undone() -> None:
    with adapters.register(TOY, [TOY_CLIENT]):
        assert "toy" in adapters.PROTOCOLS and "toy-client" in adapters.CLIENTS
        with pytest.raises(ValueError):
            adapters.register(TOY, [TOY_CLIENT])
    assert "toy" not in adapters.PROTOCOLS and "toy-client" not in adapters.CLIENTS
    with pytest.raises(RoutingError):
        list(adapters.decode("toy", [b""]))


@pytest.mark.anyio
async def test_the_client_streams_lists_models_and_traces_against_the_simulator(
    toy: None, tmp_path: Path
) -> None:
    reply = Reply(items=ITEMS, usage=USAGE, finish_reason=FinishReason.TOOL_CALL,
                  fragment_size=4, chunk_size=5)
    async with Simulator.running(reply, models=("toy-1", "toy-2")) as sim:
        base_url = sim.base_url("toy")
        async with AutoLLMClient("toy-1", api_key=sim.api_key, base_url=base_url,
                                 client_type="toy-client", trace_dir=tmp_path,
                                 timeouts=RELAXED, max_retries=0) as client:
            config = UniConfig(tools=(WEATHER,), trace_id="toy/turn")
            async with aclosing(client.streaming_response([QUESTION], config)) as stream:
                events = [event async for event in stream]
            assert await client.list_models() == ["toy-1", "toy-2"]
        [request, _listing] = sim.requests
        assert request.protocol == "toy"
        assert request.header("authorization") == f"Bearer {sim.api_key}"
        assert request.json["turns"] == [{"who": "user", "say": "What is the weather in Paris?"}]

        sim.script.append(Reply(status=503, message="toy is tired"))
        async with AutoLLMClient("toy-1", api_key=sim.api_key, base_url=base_url,
                                 client_type="toy-client", timeouts=RELAXED,
                                 max_retries=0) as client:
            with pytest.raises(ProviderHTTPError) as caught:
                async with aclosing(client.streaming_response([QUESTION], None)) as stream:
                    [event async for event in stream]
        # The record's ErrorShape read the toy's own error body.
        assert (caught.value.status, caught.value.error_type, caught.value.provider_message) \
            == (503, "toy_overload", "toy is tired")

    assert_stream_grammar(events)
    assert done_items(events) == list(ITEMS)
    assert (events[-1].usage_metadata, events[-1].finish_reason) == (USAGE, FinishReason.TOOL_CALL)
    trace = json.loads((tmp_path / "toy" / "turn.json").read_text("utf-8"))
    assert [m["role"] for m in trace["history"]] == ["user", "assistant"]


def test_the_cli_replays_a_toy_body(toy: None, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    body = tmp_path / "toy.sse"
    body.write_bytes(adapters.render("toy", ITEMS, USAGE, FinishReason.TOOL_CALL))
    assert main(["replay", "--source", "toy", "--chunk-size", "3", str(body)]) == 0
    out = capsys.readouterr().out
    assert "text> Let me look that up." in out
    assert '[tool_call.done] get_weather {"city": "Paris"} (id=toy_1)' in out
    assert "[stop] finish_reason=tool_call" in out


def test_a_client_row_sends_one_model_class_to_another_protocol(toy: None) -> None:
    """08 D64's shape: one client type, two protocols chosen by the model's class."""
    chat = adapters.CLIENTS["openai-chat"]
    both = attrs.evolve(chat, client_type="chat-and-toy", aliases=(),
                        model_classes=(ModelClass("-toy", "toy", TOY_CLIENT.profile),))
    with adapters.register(None, [both]):
        chat_request = adapters.build_request("chat-and-toy", "gpt-x", [QUESTION], None)
        toy_request = adapters.build_request("chat-and-toy", "gpt-x-toy", [QUESTION], None)
        body = adapters.render("toy", ITEMS[:1], USAGE, FinishReason.STOP)
        as_chat = run(adapters.new_pipeline("chat-and-toy", clock=None), [body])
        as_toy = run(adapters.new_pipeline("chat-and-toy", clock=None, model="gpt-x-toy"), [body])
    assert chat_request.path == "/chat/completions"
    assert toy_request.path == "/toy/v1/generate"
    # Without a model the row's own protocol reads the body, and finds nothing in it.
    assert isinstance(as_chat[1], IncompleteStreamError)
    assert done_items(as_toy[0]) == [ITEMS[0]] and as_toy[1] is None


def test_a_model_class_of_a_protocol_not_built_yet_is_refused_before_the_request() -> None:
    chat = adapters.CLIENTS["openai-chat"]
    pending = attrs.evolve(chat, client_type="chat-and-pending", aliases=(),
                           model_classes=(ModelClass("-later", "later-protocol"),))
    with adapters.register(None, [pending]), pytest.raises(UnsupportedOperationError) as caught:
        adapters.build_request("chat-and-pending", "gpt-x-later", [QUESTION], None)
    assert "later-protocol" in str(caught.value)
