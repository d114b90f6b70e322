"""Load: 1,000 concurrent streams in one process against the simulator, under asyncio and trio.

Each stream asks its own question and must get its own answer back, whole and in grammar.
The simulator waits before every event, so the streams overlap: run one after another they
would take far longer than the bound asserted here. Wall time and peak memory are printed
(``pytest -n 0 -s`` shows them; a test worker's output is not shown).

The streams share ``POOLS`` ``httpx.AsyncClient`` objects of ``STREAMS / POOLS`` connections
each rather than one client of ``STREAMS`` connections: httpcore's pool walks all its
connections on every request and response, so one pool of 1,000 makes the run quadratic
(measured: 300 raw streams took 14 s through one pool, 2.9 s through ten).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, aclosing

import anyio
import httpx
import pytest

import adapters
from benchmarks.consumers import peak_rss_kib
from mmsp_core.model import FinishReason, TextDone, UniEvent, UniMessage
from mmsp_core.sse import SSEDecoder
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import AutoLLMClient, Timeouts
from mmsp_io.simulator import Simulator, simulated_protocols

STREAMS = 1000
POOLS = 20
#: Seconds the simulator waits before each event: a stream lasts ~20 of them.
EVENT_DELAY = 0.01
#: Event-stream protocols: a one-body protocol (embeddings) streams no generation scenario
#: (tests/io/test_e2e_embeddings.py runs those).
PROTOCOLS = [
    p for p in simulated_protocols()
    if isinstance(adapters.PROTOCOLS[p].new_decoder(), SSEDecoder)
]
#: Two sockets per stream (both ends live in this process) plus headroom.
FILES_NEEDED = 2 * STREAMS + 512


@pytest.fixture
def enough_open_files() -> Iterator[None]:
    """Raise the soft limit on open files to what the test needs; a lower hard limit fails."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < FILES_NEEDED:
        pytest.fail(f"the hard limit on open files ({hard}) is below {FILES_NEEDED}")
    if soft != resource.RLIM_INFINITY and soft < FILES_NEEDED:
        resource.setrlimit(resource.RLIMIT_NOFILE, (FILES_NEEDED, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.anyio
async def test_a_thousand_concurrent_streams(enough_open_files: None, anyio_backend: str) -> None:
    per_pool = STREAMS // POOLS
    limits = httpx.Limits(max_connections=per_pool, max_keepalive_connections=per_pool)
    timeouts = Timeouts(connect=60, first_event=120, idle=60, total=300)
    outcomes: dict[int, list[UniEvent]] = {}

    async def one_stream(index: int, client: AutoLLMClient) -> None:
        question = UniMessage(role="user", content_items=(TextDone(text=f"question {index}"),))
        stream = client.streaming_response([question], None)
        async with aclosing(stream) as events:  # type: ignore[type-var]
            outcomes[index] = [event async for event in events]

    peak_before = peak_rss_kib() / 1024
    started = time.monotonic()
    async with Simulator.running(delay=EVENT_DELAY) as sim, AsyncExitStack() as stack:
        clients = []
        for _ in range(POOLS):
            # A caller's client keeps its own timeouts (08 D62): httpx's default 5 s would
            # bound the wait for a pooled connection, so this one sets none of its own.
            http = await stack.enter_async_context(httpx.AsyncClient(limits=limits, timeout=None))
            clients += [
                AutoLLMClient(
                    "sim-model",
                    api_key=sim.api_key,
                    base_url=sim.base_url(protocol),
                    client_type=adapters.PROTOCOLS[protocol].compatible_client or protocol,
                    http_client=http,
                    timeouts=timeouts,
                    max_retries=0,
                )
                for protocol in PROTOCOLS
            ]
        async with anyio.create_task_group() as tasks:
            for index in range(STREAMS):
                tasks.start_soon(one_stream, index, clients[index % len(clients)])
    wall = time.monotonic() - started
    peak = peak_rss_kib() / 1024

    print(
        f"\nload [{anyio_backend}]: {STREAMS} concurrent streams over {len(PROTOCOLS)} wire "
        f"protocols: {wall:.2f} s wall; peak RSS of the process {peak:.0f} MiB "
        f"(+{peak - peak_before:.0f} MiB during the run)"
    )
    assert sorted(outcomes) == list(range(STREAMS))
    for index, events in outcomes.items():
        assert_stream_grammar(events)
        texts = [item for e in events for item in e.content_items if isinstance(item, TextDone)]
        assert texts == [TextDone(text=f"You asked: question {index}")], index
        assert events[-1].finish_reason == FinishReason.STOP
    assert len(sim.requests) == STREAMS
    assert sim.disconnects == []
    # Every stream has more than ten events: one after another they would take 100 s or more.
    assert wall < STREAMS * 10 * EVENT_DELAY / 2


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_thousand_concurrent_streams_through_one_client(
    enough_open_files: None, anyio_backend: str
) -> None:
    """One ``AutoLLMClient`` with the pool it builds itself carries 1,000 streams at once: the
    library's own transport has no pool walk (``mmsp_io._transport``), the caller shards
    nothing (issue 9)."""
    protocol = PROTOCOLS[0]
    outcomes: dict[int, list[UniEvent]] = {}
    peak_before = peak_rss_kib() / 1024
    started = time.monotonic()
    async with Simulator.running(delay=EVENT_DELAY) as sim, AutoLLMClient(
        "sim-model", api_key=sim.api_key, base_url=sim.base_url(protocol),
        client_type=protocol, timeouts=Timeouts(first_event=900, idle=300, total=1800),
        max_retries=0,
    ) as client:

        async def one_stream(index: int) -> None:
            question = UniMessage(role="user", content_items=(TextDone(text=f"question {index}"),))
            stream = client.streaming_response([question], None)
            async with aclosing(stream) as events:  # type: ignore[type-var]
                outcomes[index] = [event async for event in events]

        async with anyio.create_task_group() as tasks:
            for index in range(STREAMS):
                tasks.start_soon(one_stream, index)
    wall = time.monotonic() - started
    peak = peak_rss_kib() / 1024
    print(
        f"\nload [{anyio_backend}]: {STREAMS} concurrent streams through one client's own pool "
        f"({protocol}): {wall:.2f} s wall; peak RSS {peak:.0f} MiB "
        f"(+{peak - peak_before:.0f} MiB during the run)"
    )
    assert sorted(outcomes) == list(range(STREAMS))
    for index, events in outcomes.items():
        assert_stream_grammar(events)
        texts = [item for e in events for item in e.content_items if isinstance(item, TextDone)]
        assert texts == [TextDone(text=f"You asked: question {index}")], index
    assert len(sim.requests) == STREAMS
    # No bound on the wall time: on a shared machine it measures the other processes too.
