"""The pool of a client the library builds itself is spread over several pools (08 D62)."""

from __future__ import annotations

from contextlib import AsyncExitStack, aclosing

import httpx
import pytest

from mmsp_core.model import TextDone, UniMessage
from mmsp_io import AutoLLMClient, Timeouts
from mmsp_io._pool import SpreadTransport
from mmsp_io.simulator import Simulator, simulated_protocols

pytestmark = pytest.mark.anyio

PROTOCOL = next(iter(simulated_protocols()))
QUESTION = [UniMessage(role="user", content_items=(TextDone(text="hi"),))]


async def test_requests_fill_a_pool_then_open_the_next_then_share() -> None:
    limits = httpx.Limits(max_connections=2, max_keepalive_connections=2)
    transport = SpreadTransport(httpx.AsyncHTTPTransport(limits=limits), limits=limits,
                                per_pool=2, max_pools=3)
    async with Simulator.running(delay=0.01) as sim, AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx.AsyncClient(transport=transport))
        client = AutoLLMClient("sim-model", api_key=sim.api_key, base_url=sim.base_url(PROTOCOL),
                               client_type=PROTOCOL, http_client=http, timeouts=Timeouts(),
                               max_retries=0)
        streams = [await stack.enter_async_context(aclosing(
            client.streaming_response(QUESTION))) for _ in range(6)]
        for stream in streams:  # each holds its connection while it is open
            await anext(stream)  # type: ignore[arg-type]
        assert transport.pools == 3
        assert transport._busy == [2, 2, 2]
        for stream in streams:
            events = [event async for event in stream]  # type: ignore[attr-defined]
            assert events[-1].event_type == "stop"
        assert transport._busy == [0, 0, 0]


async def test_a_failed_request_gives_its_slot_back() -> None:
    limits = httpx.Limits(max_connections=2)
    transport = SpreadTransport(httpx.AsyncHTTPTransport(limits=limits), limits=limits)
    async with httpx.AsyncClient(transport=transport) as http:
        with pytest.raises(httpx.ConnectError):
            await http.get("http://127.0.0.1:1/")
    assert transport._busy == [0]


async def test_the_own_client_is_spread_and_a_callers_stays_as_given() -> None:
    async with AutoLLMClient("gpt-4o", api_key="sk-test-key", client_type="openai-chat") as own:
        assert isinstance(own._http._transport, SpreadTransport)
    given = httpx.AsyncClient()
    transport = given._transport
    async with given, AutoLLMClient("gpt-4o", api_key="sk-test-key", client_type="openai-chat",
                                    http_client=given) as client:
        assert client._http is given
        assert given._transport is transport
