"""The provider simulator on its own: raw HTTP against it, no MMSP client involved."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import attrs
import httpx
import pytest

import adapters
from mmsp_core.model import FinishReason, TextDone, ThinkingDone, ToolCallDone
from mmsp_io import httpserver
from mmsp_io.simulator import (
    RecordedRequest,
    Reply,
    Simulator,
    demo_script,
    simulated_protocols,
)

pytestmark = pytest.mark.anyio

# A small Anthropic-shaped body written for these tests (the simulator never parses it).
BODY = (
    b'event: message_start\ndata: {"type":"message_start"}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
EVENTS = BODY.split(b"\n\n")[:-1]
ANTHROPIC = {"x-api-key": "sk-sim", "anthropic-version": "2023-06-01"}
BEARER = {"authorization": "Bearer sk-sim"}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


async def post(
    sim: Simulator, path: str, headers: dict[str, str], body: object = CHAT
) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(sim.url + path, headers=headers, json=body)


async def test_a_recorded_body_is_served_byte_for_byte_and_the_request_recorded() -> None:
    async with Simulator.running(Reply(body=BODY)) as sim:
        response = await post(sim, "/v1/messages?beta=true", ANTHROPIC)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["transfer-encoding"] == "chunked"
    assert response.content == BODY
    [request] = sim.requests
    assert (request.method, request.path, request.query) == ("POST", "/v1/messages", "beta=true")
    assert request.protocol == "ant-messages"
    assert request.header("X-API-Key") == "sk-sim"
    assert request.json == CHAT
    assert json.loads(request.body) == CHAT
    assert sim.disconnects == []


async def test_a_fixture_file_is_replayed_as_recorded(tmp_path: Path) -> None:
    path = tmp_path / "case.sse"
    path.write_bytes(BODY)
    async with Simulator.running(Reply.recorded(path, chunk_size=7)) as sim:
        response = await post(sim, "/v1/chat/completions", BEARER)
    assert response.content == BODY


@pytest.mark.parametrize(
    ("path", "headers", "protocol"),
    [
        ("/v1/messages", ANTHROPIC, "ant-messages"),
        ("/v1/messages", BEARER, "ant-messages"),  # ant-messages sends both forms (spec 04 §3)
        ("/v1/chat/completions", BEARER, "openai-chat"),
        ("/v1/responses", BEARER, "openai-responses"),
    ],
)
async def test_each_endpoint_accepts_its_credential(
    path: str, headers: dict[str, str], protocol: str
) -> None:
    async with Simulator.running(Reply(body=BODY)) as sim:
        response = await post(sim, path, headers)
    assert response.status_code == 200
    assert sim.requests[0].protocol == protocol


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/v1/messages", {"x-api-key": "sk-wrong"}),
        ("/v1/messages", {}),
        ("/v1/chat/completions", {"authorization": "Bearer sk-wrong"}),
        ("/v1/chat/completions", {"x-api-key": "sk-sim"}),  # OpenAI reads only Authorization
        ("/v1/responses", {"authorization": "sk-sim"}),  # no Bearer scheme
    ],
)
async def test_a_wrong_key_gets_the_providers_401_and_leaves_the_script(
    path: str, headers: dict[str, str]
) -> None:
    async with Simulator.running(Reply(body=BODY)) as sim:
        sim.script.append(Reply(status=500))
        response = await post(sim, path, headers)
        assert response.status_code == 401
        assert len(sim.script) == 1
    error = response.json()["error"]
    if path == "/v1/messages":
        assert response.json()["type"] == "error"
        assert error["type"] == "authentication_error"
        assert response.headers["request-id"] == "req_sim_1"
    else:
        assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_api_key")
        assert response.headers["x-request-id"] == "req_sim_1"
    assert "sk-" not in response.text


async def test_scripted_replies_come_in_order_then_the_default() -> None:
    async with Simulator.running(Reply(body=BODY)) as sim:
        sim.script.extend([Reply(status=500), Reply(status=429, retry_after=1.5, message="Slow")])
        first = await post(sim, "/v1/chat/completions", BEARER)
        second = await post(sim, "/v1/chat/completions", BEARER)
        third = await post(sim, "/v1/chat/completions", BEARER)
    assert first.status_code == 500
    assert first.json()["error"]["type"] == "server_error"
    assert second.status_code == 429
    assert second.headers["retry-after"] == "1.5"
    assert second.json() == {
        "error": {
            "message": "Slow",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    assert third.content == BODY


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (429, "rate_limit_error"),
        (500, "api_error"),
        (529, "overloaded_error"),
        (400, "invalid_request_error"),
    ],
)
async def test_anthropic_error_bodies(status: int, error_type: str) -> None:
    async with Simulator.running(Reply(status=status, message="nope")) as sim:
        response = await post(sim, "/v1/messages", ANTHROPIC)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"type": "error", "error": {"type": error_type, "message": "nope"}}


async def test_a_behaviour_can_be_a_function_of_the_request() -> None:
    seen: list[RecordedRequest] = []

    def behaviour(request: RecordedRequest) -> Reply:
        seen.append(request)
        return Reply(body=request.json["model"].encode())

    async with Simulator.running(behaviour) as sim:
        response = await post(sim, "/v1/responses", BEARER, {"model": "echo-me"})
    assert response.content == b"echo-me"
    assert seen == sim.requests


async def test_unknown_routes_and_bodies_that_are_not_json() -> None:
    async with Simulator.running(Reply(body=BODY)) as sim, httpx.AsyncClient() as http:
        missing = await http.post(sim.url + "/v1/completions", headers=BEARER, json=CHAT)
        wrong_method = await http.get(sim.url + "/v1/messages", headers=ANTHROPIC)
        not_json = await http.post(sim.url + "/v1/messages", headers=ANTHROPIC, content=b"{oops")
    assert missing.status_code == wrong_method.status_code == 404
    assert missing.json()["error"]["message"] == "No route for POST /v1/completions."
    assert not_json.status_code == 400
    assert not_json.json()["error"]["type"] == "invalid_request_error"
    assert sim.requests[2].json is None


@pytest.mark.parametrize("headers", [ANTHROPIC, BEARER])
async def test_models_are_listed_for_every_provider(headers: dict[str, str]) -> None:
    async with Simulator.running(models=("a", "b")) as sim, httpx.AsyncClient() as http:
        listed = await http.get(sim.url + "/v1/models", headers=headers)
        refused = await http.get(sim.url + "/v1/models")
    assert [m["id"] for m in listed.json()["data"]] == ["a", "b"]
    assert listed.json()["has_more"] is False
    assert refused.status_code == 401


async def test_base_urls_follow_each_protocols_convention() -> None:
    async with Simulator.running() as sim:
        assert sim.base_url("ant-messages") == sim.url
        assert sim.base_url("openai-chat") == sim.base_url("openai-responses") == sim.url + "/v1"
        assert sim.url.startswith("http://127.0.0.1:")


async def test_error_after_keeps_that_many_events_then_sends_the_providers_error() -> None:
    async with (
        Simulator.running(Reply(body=BODY, error_after=2)) as sim,
        httpx.AsyncClient() as http,
    ):
        anthropic = await http.post(sim.url + "/v1/messages", headers=ANTHROPIC, json=CHAT)
        sim.script.append(Reply(body=BODY, error_after=0))
        chat = await http.post(sim.url + "/v1/chat/completions", headers=BEARER, json=CHAT)
    prefix = EVENTS[0] + b"\n\n" + EVENTS[1] + b"\n\n"
    assert anthropic.content.startswith(prefix)
    error_frame = anthropic.content[len(prefix) :]
    assert error_frame.startswith(b"event: error\ndata: ")
    assert json.loads(error_frame.split(b"data: ")[1])["error"]["type"] == "overloaded_error"
    assert chat.content.startswith(b"data: ")
    assert json.loads(chat.content[6:])["error"]["code"] == "overloaded"


async def test_cut_after_closes_the_connection_mid_body() -> None:
    received = bytearray()
    async with (
        Simulator.running(Reply(body=BODY, cut_after=50)) as sim,
        httpx.AsyncClient() as http,
    ):
        async with http.stream("POST", sim.url + "/v1/messages", headers=ANTHROPIC, json=CHAT) as r:
            with pytest.raises(httpx.RemoteProtocolError):
                async for chunk in r.aiter_raw():
                    received += chunk
        # The simulator cut the body itself: that is no client disconnect.
        assert sim.disconnects == []
    assert bytes(received) == BODY[:50]


async def test_a_stall_is_ended_by_the_client_and_the_disconnect_is_seen() -> None:
    async with Simulator.running(Reply(body=BODY, stall_at=len(EVENTS[0]) + 2)) as sim:
        async with httpx.AsyncClient() as http:
            request = http.build_request(
                "POST", sim.url + "/v1/messages", headers=ANTHROPIC, json=CHAT
            )
            response = await http.send(request, stream=True)
            chunks = response.aiter_raw()
            assert await chunks.__anext__() == EVENTS[0] + b"\n\n"
            await response.aclose()
        with anyio.fail_after(5):
            await sim.wait_disconnects(1)
    assert sim.disconnects == sim.requests


async def test_a_stall_before_headers_trips_a_client_timeout_and_is_seen() -> None:
    async with Simulator.running(Reply(body=BODY, stall_before_headers=True)) as sim:
        async with httpx.AsyncClient(timeout=httpx.Timeout(5, read=0.2)) as http:
            with pytest.raises(httpx.ReadTimeout):
                await http.post(sim.url + "/v1/responses", headers=BEARER, json=CHAT)
        with anyio.fail_after(5):
            await sim.wait_disconnects(1)


async def test_keepalive_comments_flow_while_stalled() -> None:
    reply = Reply(body=BODY, stall_at=0, keepalive=0.01)
    async with Simulator.running(reply) as sim, httpx.AsyncClient() as http:
        async with http.stream("POST", sim.url + "/v1/messages", headers=ANTHROPIC, json=CHAT) as r:
            received = b""
            async for chunk in r.aiter_raw():
                received += chunk
                if received.count(b": keep-alive\n\n") >= 3:
                    break
        assert received == b": keep-alive\n\n" * 3
        with anyio.fail_after(5):
            await sim.wait_disconnects(1)


async def test_delay_is_spent_before_every_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk is written after a wait of ``delay``: checked by the order of the waits and
    the writes the simulator asks for, never by a clock (08 D80)."""
    steps: list[object] = []
    real_sleep, real_send = anyio.sleep, httpserver.Response.send

    async def sleep(delay: float) -> None:
        steps.append(delay)
        await real_sleep(delay)

    async def send(self: httpserver.Response, data: bytes) -> None:
        steps.append(len(data))
        await real_send(self, data)

    monkeypatch.setattr(anyio, "sleep", sleep)
    monkeypatch.setattr(httpserver.Response, "send", send)
    async with Simulator.running(Reply(body=BODY), chunk_size=40, delay=0.02) as sim:
        response = await post(sim, "/v1/messages", ANTHROPIC)
    sizes = [len(BODY[i : i + 40]) for i in range(0, len(BODY), 40)]
    assert response.content == BODY
    assert steps == [step for size in sizes for step in (0.02, size)]


async def test_one_connection_serves_several_requests() -> None:
    async with Simulator.running(Reply(body=BODY)) as sim, httpx.AsyncClient() as http:
        ports = set()
        for _ in range(3):
            async with http.stream(
                "POST", sim.url + "/v1/messages", headers=ANTHROPIC, json=CHAT
            ) as r:
                assert await r.aread() == BODY
                ports.add(r.extensions["network_stream"].get_extra_info("client_addr"))
    assert len(ports) == 1
    assert len(sim.requests) == 3


async def test_a_protocol_registered_later_is_served_from_its_record() -> None:
    chat = adapters.PROTOCOLS["openai-chat"]
    assert chat.traits.dialect is not None
    dialect = attrs.evolve(chat.traits.dialect, route=("POST", r"/later/v\d/chat"),
                           base_path="/later", key_headers=("x-later-key",),
                           request_id_header="x-later-id")
    later = attrs.evolve(chat, name="later-chat",
                         traits=attrs.evolve(chat.traits, dialect=dialect))
    row = attrs.evolve(adapters.CLIENTS["openai-chat"], client_type="later-client",
                       protocol="later-chat", aliases=(), model_prefixes=())
    with adapters.register(later, [row]):
        assert simulated_protocols()[-1] == "later-chat"
        async with Simulator.running(Reply(body=BODY)) as sim, httpx.AsyncClient() as http:
            assert sim.base_url("later-chat") == sim.url + "/later"
            served = await http.post(sim.url + "/later/v2/chat", json=CHAT,
                                     headers={"x-later-key": "sk-sim"})
            refused = await http.post(sim.url + "/later/v2/chat", json=CHAT, headers=BEARER)
            listed = await http.get(sim.url + "/later/models", headers={"x-later-key": "sk-sim"})
    assert served.content == BODY
    assert served.headers["x-later-id"] == "req_sim_1"
    assert refused.status_code == 401
    assert [m["id"] for m in listed.json()["data"]] == ["sim-model"]
    assert [r.protocol for r in sim.requests] == ["later-chat", "later-chat", None]
    assert "later-chat" not in simulated_protocols()
    with pytest.raises(ValueError):
        sim.base_url("later-chat")


async def test_a_request_body_over_the_limit_is_answered_413() -> None:
    async with Simulator.running(Reply(body=BODY)) as sim, httpx.AsyncClient() as http:
        refused = await http.post(sim.url + "/v1/messages", headers=ANTHROPIC,
                                  content=b"x" * (50 * 1024 * 1024 + 1))
    assert refused.status_code == 413
    assert sim.requests == []


async def test_an_error_in_the_block_propagates_unwrapped() -> None:
    with pytest.raises(KeyError):
        async with Simulator.running():
            raise KeyError("from the test")


# -- the demo script (pure: reads the request, writes a Reply) -------------------------------

WEATHER_TOOL = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
QUESTION = "What is the weather in Paris?"


def recorded(protocol: str, body: dict[str, object]) -> RecordedRequest:
    raw = json.dumps(body).encode()
    return RecordedRequest("POST", "/", "", (), raw, body, protocol)


FIRST_TURNS = {
    "ant-messages": {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}],
        "tools": [{"name": "get_weather", "description": "d", "input_schema": WEATHER_TOOL}],
    },
    "openai-chat": {
        "model": "m",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": QUESTION}],
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_TOOL}}
        ],
    },
    "openai-responses": {
        "model": "m",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": QUESTION}]}],
        "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER_TOOL}],
    },
}
RESULT = "18 °C, light rain"
SECOND_TURNS = {
    "ant-messages": {
        "messages": [
            *FIRST_TURNS["ant-messages"]["messages"],  # type: ignore[misc]
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "get_weather", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [{"type": "text", "text": RESULT}],
                    }
                ],
            },
        ],
    },
    "openai-chat": {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": RESULT},
        ],
    },
    "openai-responses": {
        "input": [
            *FIRST_TURNS["openai-responses"]["input"],  # type: ignore[misc]
            {"type": "function_call", "call_id": "c", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": RESULT},
        ],
    },
}


@pytest.mark.parametrize("protocol", sorted(FIRST_TURNS))
def test_demo_script_calls_the_first_tool_with_the_questions_last_word(protocol: str) -> None:
    reply = demo_script(recorded(protocol, FIRST_TURNS[protocol]))
    thinking, call = reply.items
    assert isinstance(thinking, ThinkingDone)
    assert QUESTION in thinking.thinking
    assert isinstance(call, ToolCallDone)
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"})
    assert call.tool_call_id.endswith("_1")
    assert reply.finish_reason == FinishReason.TOOL_CALL


@pytest.mark.parametrize("protocol", sorted(SECOND_TURNS))
def test_demo_script_answers_with_the_tool_result(protocol: str) -> None:
    body = {**FIRST_TURNS[protocol], **SECOND_TURNS[protocol]}
    reply = demo_script(recorded(protocol, body))
    assert reply.items == (TextDone(text=f"Here is what I found: {RESULT}"),)
    assert reply.finish_reason == FinishReason.STOP


def test_demo_script_without_tools_echoes_the_question() -> None:
    reply = demo_script(
        recorded("openai-chat", {"messages": [{"role": "user", "content": "Hello"}]})
    )
    assert reply.items[-1] == TextDone(text="You asked: Hello")
    assert reply.finish_reason == FinishReason.STOP
