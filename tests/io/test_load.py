"""Load: many concurrent streams in one process against the simulator, under asyncio and trio.

Each stream asks its own question and must get its own answer back, whole and in grammar, and
when the streams are done nothing is left behind: no socket of the process stays open and the
simulator saw no caller leave early. The simulator waits before every event, so the streams
overlap. How fast they go is a benchmark (``python -m benchmarks``: 1,000 concurrent streams),
never asserted here (08 D80).

The streams of the first test share ``POOLS`` ``httpx.AsyncClient`` objects (callers' own
clients, 08 D62) over every event-stream protocol; the second runs them all through one
``AutoLLMClient`` with the pool it builds itself (the library's transport, which has no walk
over its connections).
"""

from __future__ import annotations

import os
from contextlib import AsyncExitStack, aclosing

import anyio
import httpx
import pytest

import adapters
from mmsp_core.model import FinishReason, TextDone, UniEvent, UniMessage
from mmsp_core.sse import SSEDecoder
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import AutoLLMClient, Timeouts
from mmsp_io.simulator import Simulator, simulated_protocols

STREAMS = 120
POOLS = 4
#: Seconds the simulator waits before each event: the streams are all open at once.
EVENT_DELAY = 0.005
#: Generous bounds: a stalled stream fails as a timeout instead of hanging the suite.
TIMEOUTS = Timeouts(connect=60, first_event=120, idle=60, total=300)
#: Event-stream protocols: a one-body protocol (embeddings) streams no generation scenario
#: (tests/io/test_e2e_embeddings.py runs those).
PROTOCOLS = [
    p for p in simulated_protocols()
    if isinstance(adapters.PROTOCOLS[p].new_decoder(), SSEDecoder)
]


def open_sockets() -> int:
    """How many sockets this process holds open (Linux's ``/proc``; elsewhere the test skips)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        pytest.skip("no /proc/self/fd to count this process's sockets")
    count = 0
    for name in names:
        try:
            count += os.readlink(f"/proc/self/fd/{name}").startswith("socket:")
        except OSError:  # closed between the listing and the look
            continue
    return count


def question(index: int) -> UniMessage:
    return UniMessage(role="user", content_items=(TextDone(text=f"question {index}"),))


def check_answers(outcomes: dict[int, list[UniEvent]]) -> None:
    """Every stream whole, in grammar, and answering its own question."""
    assert sorted(outcomes) == list(range(STREAMS))
    for index, events in outcomes.items():
        assert_stream_grammar(events)
        texts = [item for e in events for item in e.content_items if isinstance(item, TextDone)]
        assert texts == [TextDone(text=f"You asked: question {index}")], index
        assert events[-1].finish_reason == FinishReason.STOP


async def collect(client: AutoLLMClient, index: int, outcomes: dict[int, list[UniEvent]]) -> None:
    stream = client.streaming_response([question(index)], None)
    async with aclosing(stream) as events:  # type: ignore[type-var]
        outcomes[index] = [event async for event in events]


@pytest.mark.anyio
async def test_concurrent_streams_over_every_protocol_complete_and_leak_nothing() -> None:
    per_pool = STREAMS // POOLS
    limits = httpx.Limits(max_connections=per_pool, max_keepalive_connections=per_pool)
    outcomes: dict[int, list[UniEvent]] = {}
    sockets_before = open_sockets()
    async with Simulator.running(delay=EVENT_DELAY) as sim:
        async with AsyncExitStack() as stack:
            clients = []
            for _ in range(POOLS):
                # A caller's client keeps its own timeouts (08 D62): httpx's default 5 s would
                # bound the wait for a pooled connection, so this one sets none of its own.
                http = await stack.enter_async_context(
                    httpx.AsyncClient(limits=limits, timeout=None))
                clients += [
                    AutoLLMClient(
                        "sim-model",
                        api_key=sim.api_key,
                        base_url=sim.base_url(protocol),
                        client_type=adapters.PROTOCOLS[protocol].compatible_client or protocol,
                        http_client=http,
                        timeouts=TIMEOUTS,
                        max_retries=0,
                    )
                    for protocol in PROTOCOLS
                ]
            async with anyio.create_task_group() as tasks:
                for index in range(STREAMS):
                    tasks.start_soon(collect, clients[index % len(clients)], index, outcomes)
        assert sim.disconnects == []
    check_answers(outcomes)
    assert len(sim.requests) == STREAMS
    assert open_sockets() == sockets_before


@pytest.mark.anyio
async def test_concurrent_streams_through_one_client_share_its_own_pool() -> None:
    """One ``AutoLLMClient`` with the pool it builds itself carries every stream at once, the
    caller shards nothing, and closing the client closes every socket it opened."""
    protocol = PROTOCOLS[0]
    outcomes: dict[int, list[UniEvent]] = {}
    sockets_before = open_sockets()
    async with Simulator.running(delay=EVENT_DELAY) as sim:
        async with AutoLLMClient(
            "sim-model", api_key=sim.api_key, base_url=sim.base_url(protocol),
            client_type=protocol, timeouts=TIMEOUTS, max_retries=0,
        ) as client, anyio.create_task_group() as tasks:
            for index in range(STREAMS):
                tasks.start_soon(collect, client, index, outcomes)
        assert sim.disconnects == []
    check_answers(outcomes)
    assert len(sim.requests) == STREAMS
    assert open_sockets() == sockets_before
