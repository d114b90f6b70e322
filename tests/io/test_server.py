"""The MMSP server over real loopback HTTP, through both front ends (the h11 one and the ASGI
app under hypercorn), under asyncio and trio, read with raw HTTP requests (spec 07 §3-§5).

Upstream is the provider simulator; every stream is compared with the one the same client
sees directly from the simulator, so what the server adds or loses shows.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from serverkit import (
    AUTH,
    ERROR_CASES,
    FRONTS,
    RELAXED,
    SHORT_FIRST_EVENT,
    TOKEN,
    client_type_of,
    config,
    parse_sse,
    post_stream,
    running,
    stream_body,
    without_stamps,
)

from mmsp_core.errors import MMSPError
from mmsp_core.model import (
    FinishReason,
    InlineDataDone,
    TextDone,
    ToolCallDone,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.wire import to_wire
from mmsp_io import AutoLLMClient
from mmsp_io.server import Gateway
from mmsp_io.simulator import Reply, Simulator, simulated_protocols

pytestmark = pytest.mark.anyio

PROTOCOLS = list(simulated_protocols())


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def gateway(sim: Simulator, protocols: list[str], tmp_path: Path, **options: Any) -> Gateway:
    """A gateway over the simulator's ``protocols``; ``settings`` are added to its
    configuration document, the other options go to ``Gateway``."""
    options = {"timeouts": RELAXED, "max_retries": 0, "trace_dir": tmp_path / "traces",
               **options}
    document = {**config(sim, protocols, keys=options.pop("keys", True)),
                **options.pop("settings", {})}
    return Gateway(document, **options)


#: The operator's setting that shows error texts in ``GET /v1/metrics`` (08 D75).
SHOW_ERRORS = {"metrics": {"show_errors": True}}


async def direct(
    sim: Simulator, protocol: str, body: dict[str, Any], tmp_path: Path
) -> list[Any]:
    """What the row's client yields talking to the simulator itself: the events' wire form,
    then the wire form of the error it raised, if any."""
    client = AutoLLMClient("sim-model", api_key=sim.api_key, base_url=sim.base_url(protocol),
                           client_type=client_type_of(protocol), timeouts=RELAXED,
                           max_retries=0, trace_dir=tmp_path / "direct")
    out: list[Any] = []
    async with client:
        try:
            stream = client.streaming_response(body["messages"], body.get("config"))
            async with aclosing(stream) as events:
                async for event in events:
                    out.append(to_wire(event))
        except MMSPError as exc:
            out.append(to_wire(exc))
    return out


# -- the stream ------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_every_protocol_streams_through_the_server_as_it_does_directly(
    protocol: str, front: str, tmp_path: Path
) -> None:
    body = stream_body(protocol, "héllo, wörld")
    async with Simulator.running() as sim:
        expected = await direct(sim, protocol, body, tmp_path)
        async with running(gateway(sim, [protocol], tmp_path), front) as origin, \
                httpx.AsyncClient() as http:
            response, events = await post_stream(http, origin, body)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    assert events[-1] == "[DONE]"
    assert without_stamps(events[:-1]) == without_stamps(expected)
    assert "\\u00e9" not in response.text  # non-ASCII kept (07 §4)
    direct_request, forwarded = sim.requests
    assert forwarded.json == direct_request.json  # the same provider request either way


async def test_message_bytes_arrive_as_base64_and_reach_the_provider_as_sent_directly(
    front: str, tmp_path: Path
) -> None:
    protocol = "google-genai"  # the protocol whose requests carry inline bytes
    if protocol not in PROTOCOLS:
        pytest.skip(f"the simulator does not serve {protocol}")
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    message = UniMessage(role="user", content_items=(
        TextDone(text="What is in this picture?"),
        InlineDataDone(data=png, mime_type="image/png"),
    ))
    body = {"model": protocol, "messages": [to_wire(message)]}
    assert isinstance(body["messages"][0]["content_items"][1]["data"], str)  # base64 text
    async with Simulator.running() as sim:
        expected = await direct(sim, protocol, {"messages": [message]}, tmp_path)
        async with running(gateway(sim, [protocol], tmp_path), front) as origin, \
                httpx.AsyncClient() as http:
            _response, events = await post_stream(http, origin, body)
    assert without_stamps(events[:-1]) == without_stamps(expected)
    assert events[-2]["event_type"] == "stop"
    direct_request, forwarded = sim.requests
    assert forwarded.json == direct_request.json
    assert base64.b64encode(png).decode() in forwarded.body.decode()


@pytest.mark.parametrize("case", list(ERROR_CASES))
async def test_every_error_class_is_one_event_under_status_200(
    case: str, front: str, tmp_path: Path
) -> None:
    spec = ERROR_CASES[case]
    body = spec.body()
    timeouts = SHORT_FIRST_EVENT if case == "timeout" else RELAXED
    async with Simulator.running() as sim:
        if spec.reply is not None:
            sim.script.extend([spec.reply, spec.reply])
        row = spec.row(sim)
        client = AutoLLMClient(row["model_id"], api_key=sim.api_key, base_url=row["base_url"],
                               client_type=row["client_type"], timeouts=timeouts, max_retries=0)
        async with client:
            with pytest.raises(MMSPError) as raised:
                async with aclosing(client.streaming_response(body["messages"],
                                                              body.get("config"))) as events:
                    async for _ in events:
                        pass
        gate = Gateway({"models": [row], "api_keys": [TOKEN]}, timeouts=timeouts,
                       max_retries=0, trace_dir=tmp_path)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            response, events = await post_stream(http, origin, body)
    assert type(raised.value).__name__ == spec.error_type
    assert response.status_code == 200
    assert events[-1] == "[DONE]"
    error = events[-2]
    assert list(error) == ["error"]
    assert error["error"]["type"] == spec.error_type
    expected = json.loads(json.dumps(to_wire(raised.value)))
    if "request_id" in expected["error"]:  # the simulator numbers its requests
        assert error["error"].pop("request_id") != expected["error"].pop("request_id")
    assert error == expected
    assert all(isinstance(e, dict) and "event_type" in e for e in events[:-2])
    if spec.reply is None:  # refused before any provider request, and still under 200 (07 §4)
        assert sim.requests == []


async def test_keep_alive_comments_while_no_event_is_ready(front: str, tmp_path: Path) -> None:
    body = stream_body("openai-chat")
    reply = Reply(items=[TextDone(text="slow to come")], fragment_size=6)
    async with Simulator.running(reply, delay=0.15) as sim:
        expected = await direct(sim, "openai-chat", body, tmp_path)
        async with running(gateway(sim, ["openai-chat"], tmp_path, keepalive=0.04), front) \
                as origin, httpx.AsyncClient() as http:
            response, events = await post_stream(http, origin, body)
    assert events.count(":") >= 3
    assert response.text.count(": keep-alive\n\n") == events.count(":")
    data = [e for e in events if e != ":"]
    assert data[-1] == "[DONE]"
    assert without_stamps(data[:-1]) == without_stamps(expected)


async def test_a_caller_who_leaves_aborts_the_upstream_call_at_once(
    front: str, tmp_path: Path
) -> None:
    stall = Reply(items=[TextDone(text="Half of this arrives and then nothing more.")],
                  fragment_size=5, stall_at=400)
    async with Simulator.running(stall) as sim:
        gate = gateway(sim, ["openai-chat"], tmp_path)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            async with http.stream("POST", origin + "/v1/stream",
                                   json=stream_body("openai-chat"), headers=AUTH) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        break
            with anyio.fail_after(5):
                await sim.wait_disconnects(1)
                while gate.metrics.snapshot()["in_flight"]:
                    await anyio.sleep(0.01)
            metrics = (await http.get(origin + "/v1/metrics", headers=AUTH)).json()
    assert sim.disconnects == sim.requests
    assert (metrics["disconnects"], metrics["failures"], metrics["successes"]) == (1, 0, 0)


async def _silent_caller(origin: str, body: dict[str, Any]) -> AsyncIterator[None]:
    """Send a stream request and then read nothing, holding the connection open."""
    host, port = origin.removeprefix("http://").rsplit(":", 1)
    payload = json.dumps(body).encode()
    head = (f"POST /v1/stream HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {TOKEN}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n")
    async with await anyio.connect_tcp(host, int(port)) as stream:
        await stream.send(head.encode() + payload)
        yield


async def test_a_caller_who_reads_nothing_blocks_no_other_stream_and_is_cut(
    front: str, tmp_path: Path
) -> None:
    # 16 MB of text: more than the socket buffers between the server and a silent caller hold.
    big = Reply(items=[TextDone(text="x" * (16 * 1024 * 1024))], fragment_size=256 * 1024)
    small = stream_body("openai-chat", "a small question")
    async with Simulator.running() as sim:
        sim.script.append(big)
        gate = gateway(sim, ["openai-chat"], tmp_path, idle_timeout=1.0, settings=SHOW_ERRORS)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            silent = aclosing(_silent_caller(origin, stream_body("openai-chat")))
            async with silent as held:
                await anext(held)
                with anyio.fail_after(5):
                    while not sim.requests:
                        await anyio.sleep(0.01)
                _response, events = await post_stream(http, origin, small)
                assert events[-2]["finish_reason"] == "stop"  # not held up by the silent one
                with anyio.fail_after(10):
                    await sim.wait_disconnects(1)  # the silent one's upstream call, aborted
            metrics = (await http.get(origin + "/v1/metrics", headers=AUTH)).json()
    assert sim.disconnects == sim.requests[:1]
    assert (metrics["successes"], metrics["failures"]) == (1, 1)
    assert "read nothing for 1 s" in metrics["errors"][0]["message"]


async def test_graceful_shutdown_lets_streams_finish_then_aborts_what_is_left(
    tmp_path: Path,
) -> None:
    slow = Reply(items=[TextDone(text="finishes inside the grace period")], fragment_size=8,
                 delay=0.05)
    stalled = Reply(items=[TextDone(text="never finishes")], fragment_size=4, stall_at=300)
    results: dict[str, list[Any]] = {}
    # The stalled stream never ends but for the abort after the grace period; the guard turns
    # a missing abort into a failure instead of a hang (it measures nothing, 08 D80).
    with anyio.fail_after(60):
        async with Simulator.running() as sim:
            sim.script.extend([slow, stalled])
            gate = gateway(sim, ["openai-chat"], tmp_path)
            async with httpx.AsyncClient() as http:

                async def call(name: str, origin: str) -> None:
                    _response, results[name] = await post_stream(http, origin, stream_body(
                        "openai-chat"))

                async with (
                    anyio.create_task_group() as tasks,
                    running(gate, "h11", grace=1.0) as origin,
                ):
                    tasks.start_soon(call, "slow", origin)
                    with anyio.fail_after(5):
                        while not sim.requests:
                            await anyio.sleep(0.01)
                    tasks.start_soon(call, "stalled", origin)
                    with anyio.fail_after(5):
                        while len(sim.requests) < 2:
                            await anyio.sleep(0.01)
    assert results["slow"][-2]["finish_reason"] == "stop"
    assert results["stalled"][-1] == "[DONE]"
    assert all(e["event_type"] == "delta" for e in results["stalled"][:-1])  # no error, no stop


# -- security and limits ---------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{}, {"authorization": "Bearer wrong"},
                                     {"authorization": f"Basic {TOKEN}"},
                                     {"authorization": TOKEN}])
async def test_a_missing_or_wrong_token_is_401_and_reaches_no_provider(
    headers: dict[str, str], front: str, tmp_path: Path
) -> None:
    async with (
        Simulator.running() as sim,
        running(gateway(sim, ["openai-chat"], tmp_path), front) as origin,
        httpx.AsyncClient() as http,
    ):
        answers = [
            await http.post(origin + "/v1/stream", json=stream_body("openai-chat"),
                            headers=headers),
            await http.get(origin + "/v1/models", headers=headers),
            await http.get(origin + "/v1/metrics", headers=headers),
            await http.get(origin + "/v1/elsewhere", headers=headers),
        ]
        outside = await http.get(origin + "/", headers=headers)
    for answer in answers:
        assert answer.status_code == 401
        assert answer.json() == {"error": {"type": "AuthenticationError",
                                           "message": "Invalid or missing API key."}}
    assert outside.status_code == 404  # only /v1/ paths need the token (07 §3)
    assert sim.requests == []


async def test_an_open_server_accepts_every_request(front: str, tmp_path: Path) -> None:
    async with (
        Simulator.running() as sim,
        running(gateway(sim, ["openai-chat"], tmp_path, keys=False), front) as origin,
        httpx.AsyncClient() as http,
    ):
        _response, events = await post_stream(http, origin, stream_body("openai-chat"), {})
    assert events[-2]["event_type"] == "stop"


BAD_REQUESTS: list[tuple[bytes | None, str | None, int, str]] = [
    (b"[1, 2]", "application/json", 400, "Request body must be a JSON object."),
    (b"{not json", "application/json", 400, "Request body must be a JSON object."),
    (b'{"model": "openai-chat", "messages": []}', None, 400,
     "Request body must be a JSON object."),
    (b'{"model": "openai-chat", "messages": []}', "text/plain", 400,
     "Request body must be a JSON object."),
    (b'{"model": "", "messages": []}', "application/json", 400,
     "model must be a non-empty string."),
    (b'{"model": 7, "messages": []}', "application/json", 400,
     "model must be a non-empty string."),
    (b'{"model": "openai-chat", "messages": {}}', "application/json", 400,
     "messages must be a list of messages."),
    (b'{"model": "openai-chat"}', "application/json", 400,
     "messages must be a list of messages."),
    (b'{"model": "openai-chat", "messages": [], "config": [1]}', "application/json", 400,
     "config must be an object."),
    (b'{"model": "gpt-nope", "messages": [], "config": 1}', "application/json; charset=utf-8",
     400, "config must be an object."),
    (b'{"model": "gpt-nope", "messages": []}', "application/json; charset=utf-8", 404,
     "The model 'gpt-nope' does not exist; GET /v1/models lists the models this server "
     "serves."),
]


@pytest.mark.parametrize(("body", "content_type", "status", "message"), BAD_REQUESTS)
async def test_each_refusal_of_the_stream_route_has_its_status_and_message(
    body: bytes, content_type: str | None, status: int, message: str, front: str,
    tmp_path: Path,
) -> None:
    headers = dict(AUTH)
    if content_type is not None:
        headers["content-type"] = content_type
    async with Simulator.running() as sim:
        gate = gateway(sim, ["openai-chat"], tmp_path)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            answer = await http.post(origin + "/v1/stream", content=body, headers=headers)
    kind = "NotFoundError" if status == 404 else "InvalidRequestError"
    assert answer.status_code == status
    assert answer.json() == {"error": {"type": kind, "message": message}}
    assert sim.requests == []
    refused = gate.metrics.snapshot()["refused"]
    assert refused["unknown_model" if status == 404 else "invalid_request"] == 1


@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/stream"), ("POST", "/v1/models"),
                                              ("GET", "/v1/chat/completions"),
                                              ("DELETE", "/v1/metrics"), ("GET", "/")])
async def test_any_other_route_is_404_with_the_routes_named(
    method: str, path: str, front: str, tmp_path: Path
) -> None:
    async with (
        Simulator.running() as sim,
        running(gateway(sim, ["openai-chat"], tmp_path), front) as origin,
        httpx.AsyncClient() as http,
    ):
        answer = await http.request(method, origin + path, headers=AUTH)
    assert answer.status_code == 404
    assert answer.json() == {"error": {"type": "NotFoundError", "message": (
        f"No route for {method} {path}; the server serves POST /v1/stream, "
        "POST /v1/messages, POST /v1/chat/completions, POST /v1/responses, GET /v1/models "
        "and GET /v1/metrics.")}}


@pytest.mark.parametrize("declared", [True, False])
async def test_a_body_over_50_mib_is_answered_413(
    declared: bool, front: str, tmp_path: Path
) -> None:
    size = 50 * 1024 * 1024 + 1

    async def chunks() -> AsyncIterator[bytes]:
        piece = b" " * (1024 * 1024)
        for _ in range(size // len(piece)):
            yield piece
        yield b" " * (size % len(piece))

    content: Any = b" " * size if declared else chunks()
    async with (
        Simulator.running() as sim,
        running(gateway(sim, ["openai-chat"], tmp_path), front) as origin,
        httpx.AsyncClient(timeout=30) as http,
    ):
        answer = await http.post(origin + "/v1/stream", content=content,
                                 headers={**AUTH, "content-type": "application/json"})
    assert answer.status_code == 413
    assert answer.json() == {"error": {"type": "InvalidRequestError",
                                       "message": "Request body is too large."}}
    assert sim.requests == []


@pytest.mark.parametrize(("trace_id", "label"), [
    ("../outside", "_outside"), ("/etc/outside", "_etc_outside"),
    ("a/../../outside", "a_.._.._outside"), ("link/outside", "link_outside"),
    ("..", "_"), ("runs/one", "runs_one"),
])
async def test_a_callers_trace_id_is_a_label_in_the_servers_trace_dir(
    trace_id: str, label: str, front: str, tmp_path: Path
) -> None:
    # 08 D78: a caller names a trace, it never chooses a path (no sub-directory, no way out).
    traces = tmp_path / "traces"
    traces.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (traces / "link").symlink_to(tmp_path / "elsewhere")
    body = stream_body("openai-chat", config={"trace_id": trace_id})
    async with (
        Simulator.running() as sim,
        running(gateway(sim, ["openai-chat"], tmp_path), front) as origin,
        httpx.AsyncClient() as http,
    ):
        response, events = await post_stream(http, origin, body)
    assert response.status_code == 200
    assert events[-2]["event_type"] == "stop"
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json"))
    assert written == [f"traces/{label}.json"]
    assert json.loads((traces / f"{label}.json").read_text())["config"]["trace_id"] == label
    assert list((tmp_path / "elsewhere").iterdir()) == []


async def test_a_trace_id_inside_the_cache_dir_saves_the_servers_trace(
    front: str, tmp_path: Path
) -> None:
    body = stream_body("openai-chat", config={"trace_id": "runs/one", "unknown_key": 1})
    async with (
        Simulator.running() as sim,
        running(gateway(sim, ["openai-chat"], tmp_path), front) as origin,
        httpx.AsyncClient() as http,
    ):
        with pytest.warns(UserWarning, match="unknown_key"):
            _response, events = await post_stream(http, origin, body)
    assert events[-2]["event_type"] == "stop"
    trace = json.loads((tmp_path / "traces" / "runs_one.json").read_text())
    assert trace["config"]["trace_id"] == "runs_one"
    assert [m["role"] for m in trace["history"]] == ["user", "assistant"]


# -- models and metrics ----------------------------------------------------------------------


async def test_models_and_metrics(front: str, tmp_path: Path) -> None:
    protocols = ["openai-chat", "ant-messages"]
    tool_reply = Reply(items=[ToolCallDone(name="f", tool_call_id="call_1", arguments={})],
                       usage=UsageMetadata(prompt_tokens=7, cached_tokens=2, response_tokens=5),
                       finish_reason=FinishReason.TOOL_CALL)
    async with Simulator.running() as sim:
        sim.script.extend([tool_reply, Reply(status=400)])
        gate = gateway(sim, protocols, tmp_path, settings=SHOW_ERRORS)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            await post_stream(http, origin, stream_body("openai-chat"))
            await post_stream(http, origin, stream_body("ant-messages"))
            await post_stream(http, origin, stream_body("nope"))
            await http.get(origin + "/v1/models")
            models = (await http.get(origin + "/v1/models", headers=AUTH)).json()
            metrics = (await http.get(origin + "/v1/metrics", headers=AUTH)).json()
    created = int(gate.metrics.started_at)
    assert models == {"object": "list", "data": [
        {"id": p, "object": "model", "created": created, "owned_by": "mmsp"} for p in protocols]}
    assert (metrics["requests"], metrics["successes"], metrics["failures"]) == (2, 1, 1)
    assert (metrics["disconnects"], metrics["in_flight"], metrics["success_rate"]) == (0, 0, 0.5)
    assert metrics["refused"] == {"unauthorized": 1, "invalid_request": 0, "unknown_model": 1}
    assert metrics["tokens"] == {"prompt": 7, "cached": 2, "thoughts": 0, "response": 5}
    assert metrics["tokens_out"] == 5
    assert metrics["latency_ms"]["first_event"]["p50"] > 0
    assert metrics["latency_ms"]["total"]["p90"] >= metrics["latency_ms"]["first_event"]["p90"]
    assert metrics["tps"] is None or metrics["tps"] > 0
    assert [e["model"] for e in metrics["errors"]] == ["ant-messages"]
    by_model = {m["id"]: m for m in metrics["models"]}
    assert list(by_model) == protocols
    assert by_model["openai-chat"]["last_outcome"] == "success"
    assert by_model["ant-messages"]["last_outcome"] == "failure"
    assert by_model["ant-messages"]["last_error"] == metrics["errors"][0]["message"]
    assert metrics["uptime_s"] >= 0 and metrics["started_at"] == metrics["since"]


def test_parse_sse_reads_comments_and_done() -> None:
    assert parse_sse(b": keep-alive\n\ndata: {\"a\": 1}\n\ndata: [DONE]\n\n") == [
        ":", {"a": 1}, "[DONE]"]


async def test_a_failure_that_is_no_mmsp_error_is_one_event_too_the_key_redacted(
    front: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-sim-0123456789abcdef"
    async with Simulator.running(api_key=key) as sim:
        gate = gateway(sim, ["openai-chat"], tmp_path, settings=SHOW_ERRORS)

        async def broken(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            raise LookupError(f"a bug that shows the key {key}-and-more")
            yield

        monkeypatch.setattr(gate._clients[gate.config.models[0]], "streaming_response", broken)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            _response, events = await post_stream(http, origin, stream_body("openai-chat"))
    assert events[-1] == "[DONE]"
    error = events[0]["error"]
    assert error["type"] == "LookupError"
    assert error["message"] == "a bug that shows the key [redacted]-and-more"
    assert gate.metrics.snapshot()["errors"][0]["message"] == error["message"]
    assert key not in caplog.text and "[redacted]" in caplog.text


async def test_bytes_that_are_not_http_are_answered_400_in_the_servers_form(
    tmp_path: Path,
) -> None:
    async with Simulator.running() as sim, running(gateway(sim, ["openai-chat"], tmp_path),
                                                    "h11") as origin:
        host, port = origin.removeprefix("http://").rsplit(":", 1)
        async with await anyio.connect_tcp(host, int(port)) as stream:
            await stream.send(b"NOT HTTP AT ALL\r\n\r\n")
            received = b""
            with anyio.fail_after(5):
                while b"}}" not in received:
                    received += await stream.receive()
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/json" in head.lower()
    assert json.loads(body) == {"error": {"type": "InvalidRequestError",
                                          "message": "The request is not valid HTTP/1.1."}}
