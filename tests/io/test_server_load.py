"""Load: many concurrent streams through the MMSP server, under asyncio and trio (issue 11).

The mmsp client -> the h11 server -> the provider simulator, all in this process. Each stream
asks its own question over one of the generation protocols and must get its own answer back,
whole and in grammar; callers that leave after their first event make the server abort their
upstream calls; the server's metrics count every stream; and when it is all over no socket of
the process is left open. The server's cost per relayed event and its first-event latency
are benchmarks (``benchmarks/``), never asserted here (08 D80).

The callers share ``POOLS`` ``httpx.AsyncClient`` objects (one pool of hundreds of connections
makes httpcore quadratic).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack, aclosing

import anyio
import httpx
import pytest
from serverkit import TOKEN, config
from test_load import open_sockets

from mmsp_core.model import FinishReason, TextDone, UniEvent, UniMessage
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import AutoLLMClient, Timeouts
from mmsp_io.server import Gateway, serve
from mmsp_io.simulator import Simulator

pytestmark = pytest.mark.anyio

STREAMS = 120
POOLS = 4
#: Seconds the simulator waits before each event: the streams are all open at once.
EVENT_DELAY = 0.005
PROTOCOLS = ["ant-messages", "openai-chat", "openai-responses"]
TIMEOUTS = Timeouts(connect=60, first_event=120, idle=60, total=300)
#: Callers that leave after the first event.
LEAVING = 10


async def _run_streams(
    make_client: Callable[[httpx.AsyncClient, str], AutoLLMClient],
) -> dict[int, list[UniEvent]]:
    """Run ``STREAMS`` concurrent streams; the events of each."""
    per_pool = STREAMS // POOLS
    limits = httpx.Limits(max_connections=per_pool, max_keepalive_connections=per_pool)
    outcomes: dict[int, list[UniEvent]] = {}

    async def one_stream(index: int, client: AutoLLMClient) -> None:
        question = UniMessage(role="user", content_items=(TextDone(text=f"question {index}"),))
        async with aclosing(client.streaming_response([question])) as stream:
            outcomes[index] = [event async for event in stream]

    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(POOLS):
            http = await stack.enter_async_context(httpx.AsyncClient(limits=limits, timeout=None))
            clients += [make_client(http, protocol) for protocol in PROTOCOLS]
        async with anyio.create_task_group() as tasks:
            for index in range(STREAMS):
                tasks.start_soon(one_stream, index, clients[index % len(clients)])
    return outcomes


async def _leave_after_the_first_event(client: AutoLLMClient) -> None:
    question = UniMessage(role="user", content_items=(TextDone(text="one at a time"),))
    async with aclosing(client.streaming_response([question])) as stream:
        async for _event in stream:
            break


def _check(outcomes: dict[int, list[UniEvent]]) -> None:
    assert sorted(outcomes) == list(range(STREAMS))
    for index, events in outcomes.items():
        assert_stream_grammar(events)
        texts = [item for e in events for item in e.content_items if isinstance(item, TextDone)]
        assert texts == [TextDone(text=f"You asked: question {index}")], index
        assert events[-1].finish_reason == FinishReason.STOP


async def test_concurrent_streams_through_the_server_complete_and_leak_nothing(
    anyio_backend: str,
) -> None:
    sockets_before = open_sockets()
    async with Simulator.running(delay=EVENT_DELAY) as sim:
        gateway = Gateway(config(sim, PROTOCOLS), timeouts=TIMEOUTS, max_retries=0)
        async with serve(gateway) as server, httpx.AsyncClient(timeout=None) as http:

            def via_server(http: httpx.AsyncClient, protocol: str) -> AutoLLMClient:
                return AutoLLMClient(protocol, api_key=TOKEN, base_url=server.url + "/v1",
                                     client_type="mmsp", http_client=http, timeouts=TIMEOUTS,
                                     max_retries=0)

            for _ in range(LEAVING):
                await _leave_after_the_first_event(via_server(http, "openai-chat"))
            outcomes = await _run_streams(via_server)
            metrics = gateway.metrics.snapshot()
        await gateway.aclose()
    _check(outcomes)
    # The callers who left after their first event: the server saw each go and aborted its
    # upstream call.
    assert (metrics["successes"], metrics["disconnects"]) == (STREAMS, LEAVING)
    assert metrics["failures"] == 0
    assert len(sim.requests) == STREAMS + LEAVING
    left_early = sim.requests[:LEAVING]
    assert len(sim.disconnects) == LEAVING
    assert all(any(gone is r for r in left_early) for gone in sim.disconnects)
    assert open_sockets() == sockets_before
