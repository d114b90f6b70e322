"""Load: 500 concurrent streams through the MMSP server, under asyncio and trio (issue 11).

The mmsp client -> the h11 server -> the provider simulator, all in this process. Each stream
asks its own question over one of the generation protocols and must get its own answer back,
whole and in grammar. The same 500 streams are first run against the simulator directly, so
the server's added latency to the first event shows, under load and, measured on
``SINGLE_CALLS`` calls one at a time, without. Printed (``pytest -n 0 -s``: a test worker's
output is not shown): the server's throughput in events per second, the first-event latency
direct and through the server (median and 90th percentile), and the process's peak memory.

Everything runs in one process, so the run is CPU-bound: through the server each event is
parsed, checked and serialised twice more than directly. The bound asserted is relative to
the direct run, so that a busy machine slows both alike.

The callers share ``POOLS`` ``httpx.AsyncClient`` objects (see ``test_load.py`` for why: one
pool of hundreds of connections makes httpcore quadratic).
"""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, aclosing

import anyio
import httpx
import pytest
from serverkit import TOKEN, config

from benchmarks.consumers import peak_rss_kib
from mmsp_core.model import FinishReason, TextDone, UniEvent, UniMessage
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import AutoLLMClient, Timeouts
from mmsp_io.server import Gateway, serve
from mmsp_io.simulator import Simulator

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

STREAMS = 500
POOLS = 10
#: Seconds the simulator waits before each event: a stream lasts ~20 of them.
EVENT_DELAY = 0.01
PROTOCOLS = ["ant-messages", "openai-chat", "openai-responses"]
#: Four sockets per stream (caller-server and server-simulator, both ends here) plus headroom.
FILES_NEEDED = 4 * STREAMS + 512
TIMEOUTS = Timeouts(connect=60, first_event=120, idle=60, total=300)
SINGLE_CALLS = 20


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


async def _run_streams(
    make_client: Callable[[httpx.AsyncClient, str], AutoLLMClient],
) -> tuple[dict[int, list[UniEvent]], list[float], float]:
    """Run ``STREAMS`` concurrent streams; their events, first-event latencies (ms), wall."""
    per_pool = STREAMS // POOLS
    limits = httpx.Limits(max_connections=per_pool, max_keepalive_connections=per_pool)
    outcomes: dict[int, list[UniEvent]] = {}
    first_ms: list[float] = []

    async def one_stream(index: int, client: AutoLLMClient) -> None:
        question = UniMessage(role="user", content_items=(TextDone(text=f"question {index}"),))
        started = time.monotonic()
        events = []
        async with aclosing(client.streaming_response([question])) as stream:
            async for event in stream:
                if not events:
                    first_ms.append((time.monotonic() - started) * 1000)
                events.append(event)
        outcomes[index] = events

    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(POOLS):
            http = await stack.enter_async_context(httpx.AsyncClient(limits=limits, timeout=None))
            clients += [make_client(http, protocol) for protocol in PROTOCOLS]
        started = time.monotonic()
        async with anyio.create_task_group() as tasks:
            for index in range(STREAMS):
                tasks.start_soon(one_stream, index, clients[index % len(clients)])
        wall = time.monotonic() - started
    return outcomes, first_ms, wall


async def _single_first_event_ms(client: AutoLLMClient) -> float:
    """The median first-event latency (ms) of ``SINGLE_CALLS`` calls one after another."""
    samples = []
    question = UniMessage(role="user", content_items=(TextDone(text="one at a time"),))
    for _ in range(SINGLE_CALLS):
        started = time.monotonic()
        async with aclosing(client.streaming_response([question])) as stream:
            async for _event in stream:
                samples.append((time.monotonic() - started) * 1000)
                break
    return statistics.median(samples)


def _check(outcomes: dict[int, list[UniEvent]]) -> None:
    assert sorted(outcomes) == list(range(STREAMS))
    for index, events in outcomes.items():
        assert_stream_grammar(events)
        texts = [item for e in events for item in e.content_items if isinstance(item, TextDone)]
        assert texts == [TextDone(text=f"You asked: question {index}")], index
        assert events[-1].finish_reason == FinishReason.STOP


def _p(samples: list[float], fraction: float) -> float:
    return sorted(samples)[int(fraction * (len(samples) - 1))]


async def test_five_hundred_concurrent_streams_through_the_server(
    enough_open_files: None, anyio_backend: str
) -> None:
    peak_before = peak_rss_kib() / 1024
    async with Simulator.running(delay=EVENT_DELAY) as sim:

        def direct(http: httpx.AsyncClient, protocol: str) -> AutoLLMClient:
            return AutoLLMClient("sim-model", api_key=sim.api_key,
                                 base_url=sim.base_url(protocol), client_type=protocol,
                                 http_client=http, timeouts=TIMEOUTS, max_retries=0)

        direct_outcomes, direct_first, direct_wall = await _run_streams(direct)
        _check(direct_outcomes)
        gateway = Gateway(config(sim, PROTOCOLS), timeouts=TIMEOUTS, max_retries=0)
        async with serve(gateway) as server, httpx.AsyncClient(timeout=None) as http:

            def via_server(http: httpx.AsyncClient, protocol: str) -> AutoLLMClient:
                return AutoLLMClient(protocol, api_key=TOKEN, base_url=server.url + "/v1",
                                     client_type="mmsp", http_client=http, timeouts=TIMEOUTS,
                                     max_retries=0)

            single_direct = await _single_first_event_ms(direct(http, "openai-chat"))
            single_server = await _single_first_event_ms(via_server(http, "openai-chat"))
            outcomes, first, wall = await _run_streams(via_server)
            metrics = gateway.metrics.snapshot()
    peak = peak_rss_kib() / 1024
    _check(outcomes)
    events = sum(len(e) for e in outcomes.values())
    added = statistics.median(first) - statistics.median(direct_first)
    print(
        f"\nserver load [{anyio_backend}]: {STREAMS} concurrent streams over "
        f"{len(PROTOCOLS)} protocols through the MMSP server: {wall:.2f} s wall "
        f"(direct {direct_wall:.2f} s), {events} events, {events / wall:.0f} events/s; "
        f"first event p50/p90 direct {statistics.median(direct_first):.1f}/"
        f"{_p(direct_first, 0.9):.1f} ms, through the server {statistics.median(first):.1f}/"
        f"{_p(first, 0.9):.1f} ms (+{added:.1f} ms p50); one call at a time: first event "
        f"direct {single_direct:.1f} ms, through the server {single_server:.1f} ms "
        f"(+{single_server - single_direct:.1f} ms); peak RSS of the process "
        f"{peak:.0f} MiB (+{peak - peak_before:.0f} MiB during the run)"
    )
    # The single calls leave after their first event: the server sees each caller go and
    # aborts its upstream call.
    assert (metrics["successes"], metrics["disconnects"]) == (STREAMS, SINGLE_CALLS)
    assert metrics["failures"] == 0
    assert len(sim.requests) == 2 * STREAMS + 2 * SINGLE_CALLS
    left_early = sim.requests[STREAMS : STREAMS + 2 * SINGLE_CALLS]
    assert len(sim.disconnects) == len(left_early)
    assert all(any(gone is r for r in left_early) for gone in sim.disconnects)
    # Two more hops per event than directly, and still as concurrent.
    assert wall < 4 * direct_wall
