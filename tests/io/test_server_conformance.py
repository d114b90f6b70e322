"""Conformance: ``AutoLLMClient(client_type="mmsp")`` -> MMSP server -> provider simulator gives
the stream the same client sees from the simulator directly (issue 11), through both front
ends (the h11 server and the ASGI app under hypercorn), under asyncio and trio.

- every wire protocol the simulator serves: the same events (items, usage, finish reason);
- every error class a request can raise crosses the server as ``UpstreamError`` with its
  ``error_type`` and its fields intact (08 D13, 03 §5);
- a cancelled call (the server shutting down) writes only ``[DONE]``, which the mmsp client
  reports as its own ``IncompleteStreamError``;
- relaying: a server whose row is ``mmsp`` pointing at another server.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from serverkit import (
    ERROR_CASES,
    FRONTS,
    RELAXED,
    SHORT_FIRST_EVENT,
    TOKEN,
    client_type_of,
    config,
    running,
    without_stamps,
)

from mmsp_core.errors import IncompleteStreamError, MMSPError, UpstreamError
from mmsp_core.model import TextDone, UniMessage
from mmsp_core.wire import to_wire
from mmsp_io import AutoLLMClient
from mmsp_io.server import Gateway
from mmsp_io.simulator import Reply, Simulator, simulated_protocols

pytestmark = pytest.mark.anyio

PROTOCOLS = list(simulated_protocols())
QUESTION = UniMessage(role="user", content_items=(TextDone(text="Wéather in Paris?"),))


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def outcome(
    client: AutoLLMClient, messages: list[Any], config: dict[str, Any] | None = None
) -> tuple[list[Any], MMSPError | None]:
    """The events' wire form (no stamps) and the MMSP error the stream ended with."""
    events: list[Any] = []
    async with client:
        try:
            async with aclosing(client.streaming_response(messages, config)) as stream:
                async for event in stream:
                    events.append(without_stamps(to_wire(event)))
        except MMSPError as exc:
            return events, exc
    return events, None


def direct_client(sim: Simulator, protocol: str, **options: Any) -> AutoLLMClient:
    options = {"timeouts": RELAXED, "max_retries": 0, **options}
    return AutoLLMClient("sim-model", api_key=sim.api_key, base_url=sim.base_url(protocol),
                         client_type=client_type_of(protocol), **options)


def mmsp_client(origin: str, model: str) -> AutoLLMClient:
    return AutoLLMClient(model, api_key=TOKEN, base_url=origin + "/v1", client_type="mmsp",
                         timeouts=RELAXED, max_retries=0)


def gateway(sim: Simulator, protocols: list[str], tmp_path: Path, **options: Any) -> Gateway:
    options = {"timeouts": RELAXED, "max_retries": 0, "trace_dir": tmp_path, **options}
    return Gateway(config(sim, protocols), **options)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_every_protocol_through_the_server_equals_the_stream_seen_directly(
    protocol: str, front: str, tmp_path: Path
) -> None:
    async with Simulator.running() as sim:
        expected, expected_error = await outcome(direct_client(sim, protocol), [QUESTION])
        async with running(gateway(sim, [protocol], tmp_path), front) as origin:
            events, error = await outcome(mmsp_client(origin, protocol), [QUESTION])
    assert events == expected
    if expected_error is None:
        assert error is None
        assert events[-1]["event_type"] == "stop"
    else:  # a protocol the row's client cannot stream yet: its error crosses the server
        assert isinstance(error, UpstreamError)
        assert error.error == json.loads(json.dumps(to_wire(expected_error)))["error"]


@pytest.mark.parametrize("case", list(ERROR_CASES))
async def test_every_error_class_crosses_the_server_as_upstream_error(
    case: str, front: str, tmp_path: Path
) -> None:
    spec = ERROR_CASES[case]
    body = spec.body()
    timeouts = SHORT_FIRST_EVENT if case == "timeout" else RELAXED
    async with Simulator.running() as sim:
        if spec.reply is not None:
            sim.script.extend([spec.reply, spec.reply])
        row = spec.row(sim)
        direct = AutoLLMClient(row["model_id"], api_key=sim.api_key, base_url=row["base_url"],
                               client_type=row["client_type"], timeouts=timeouts, max_retries=0)
        expected_events, expected = await outcome(direct, body["messages"], body["config"])
        gate = Gateway({"models": [row], "api_keys": [TOKEN]}, timeouts=timeouts,
                       max_retries=0, trace_dir=tmp_path)
        async with running(gate, front) as origin:
            events, error = await outcome(mmsp_client(origin, spec.protocol), body["messages"],
                                          body["config"])
    assert type(expected).__name__ == spec.error_type
    assert isinstance(error, UpstreamError)
    assert error.client == "mmsp"
    assert error.error_type == spec.error_type
    wire = json.loads(json.dumps(to_wire(expected)))["error"]
    crossed = dict(error.error)
    if "request_id" in wire:  # the simulator numbers its requests
        assert crossed.pop("request_id") != wire.pop("request_id")
    assert crossed == wire
    assert error.status == wire.get("status")
    assert events == expected_events
    if spec.reply is None:
        assert sim.requests == []


async def test_a_refusal_crosses_as_upstream_error_with_its_status(
    front: str, tmp_path: Path
) -> None:
    async with Simulator.running() as sim, running(gateway(sim, ["openai-chat"], tmp_path),
                                                    front) as origin:
        _, unknown = await outcome(mmsp_client(origin, "no-such-model"), [QUESTION])
        wrong = AutoLLMClient("openai-chat", api_key="wrong-token", base_url=origin + "/v1",
                              client_type="mmsp", max_retries=0)
        _, unauthorised = await outcome(wrong, [QUESTION])
    assert isinstance(unknown, UpstreamError)
    assert (unknown.status, unknown.error_type) == (404, "NotFoundError")
    assert isinstance(unauthorised, UpstreamError)
    assert (unauthorised.status, unauthorised.error_type) == (401, "AuthenticationError")
    assert sim.requests == []


async def test_a_cancelled_call_writes_only_done(front: str, tmp_path: Path) -> None:
    stalled = Reply(items=[TextDone(text="this never gets to its end")], fragment_size=4,
                    stall_at=900)
    raw: list[bytes] = []
    async with Simulator.running(stalled) as sim:
        gate = gateway(sim, ["openai-chat"], tmp_path)
        results: dict[str, Any] = {}

        async def via_mmsp(origin: str) -> None:
            results["mmsp"] = await outcome(mmsp_client(origin, "openai-chat"), [QUESTION])

        async def via_raw(origin: str) -> None:
            body = {"model": "openai-chat", "messages": [to_wire(QUESTION)]}
            async with httpx.AsyncClient() as http:
                response = await http.post(origin + "/v1/stream", json=body,
                                           headers={"authorization": f"Bearer {TOKEN}"})
            raw.append(response.content)

        async with (
            anyio.create_task_group() as tasks,
            running(gate, front, grace=0.3) as origin,
        ):
            tasks.start_soon(via_mmsp, origin)
            tasks.start_soon(via_raw, origin)
            with anyio.fail_after(5):
                while len(sim.requests) < 2:
                    await anyio.sleep(0.01)
            if front == "asgi":  # hypercorn's shutdown waits; the gateway's abort is ours
                await anyio.sleep(0.3)
                gate.abort_streams("the server is shutting down")
    events, error = results["mmsp"]
    assert isinstance(error, IncompleteStreamError)
    assert error.client == "mmsp"
    assert events and all(e["event_type"] == "delta" for e in events)
    tail = raw[0].split(b"\n\n")
    assert tail[-2:] == [b"data: [DONE]", b""]
    assert b"error" not in tail[-3]


async def test_a_server_relays_to_another_server(front: str, tmp_path: Path) -> None:
    async with Simulator.running() as sim:
        expected, _ = await outcome(direct_client(sim, "ant-messages"), [QUESTION])
        inner = gateway(sim, ["ant-messages"], tmp_path / "inner")
        async with running(inner, "h11") as inner_origin:
            relay = Gateway({"models": [{
                "server_model_id": "relayed", "model_id": "ant-messages", "api_key": TOKEN,
                "base_url": inner_origin + "/v1", "client_type": "mmsp"}]},
                timeouts=RELAXED, max_retries=0)
            async with running(relay, front) as origin:
                events, error = await outcome(
                    AutoLLMClient("relayed", base_url=origin + "/v1", client_type="mmsp",
                                  max_retries=0), [QUESTION])
                _, refused = await outcome(
                    AutoLLMClient("relayed", base_url=origin + "/v1", client_type="mmsp",
                                  max_retries=0), [{"role": "user", "content_items": []}])
    assert error is None
    assert events == expected
    # The inner server's error event crosses the relay as the relay's own: the inner
    # UpstreamError's wire form, whose ``error`` is the original error object.
    assert isinstance(refused, UpstreamError)
    assert refused.error_type == "UpstreamError"
    assert refused.error["error_type"] == "InvalidMessageError"
    assert refused.error["error"]["message_index"] == 0
