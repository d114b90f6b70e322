"""``AbortSignal``: abort before, during and between reads; cancellation stays cancellation.

Spec 03 §4 and 08 D20: an abort ends the stream with ``AbortedError`` (no stop, no history, no
trace) and closes the response; a pending read stops at once; between events the caller's next
step raises; outside cancellation propagates untouched.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx
import pytest
from httpfakes import Body, clean_environment, mock_client

import adapters
from mmsp_core import AbortedError, InvalidMessageError, TextDone, UniMessage, UsageMetadata
from mmsp_io import AbortSignal, AutoLLMClient

pytestmark = pytest.mark.anyio
__all__ = ["clean_environment"]

HELLO = adapters.render("openai-responses", [TextDone("Hello world")],
                        UsageMetadata(0, 5, None, 2), "stop", fragment_size=4)
FIRST_DELTA = HELLO[: HELLO.rindex(b"\n\n", 0, HELLO.index(b"o wo")) + 2]
USER = {"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}
#: The stalls below never end: an abort that does not interrupt a pending read hangs the test,
#: which this guard turns into a failure (it bounds a hang; it measures nothing, 08 D80).
HANG_GUARD = 60.0
FOREVER = math.inf


def client_for(
    *bodies: Body, handler: Callable[[httpx.Request], Any] | None = None, **options: Any
) -> tuple[AutoLLMClient, list[httpx.Request]]:
    """A client whose successive requests get ``bodies`` (the last one repeats)."""
    requests: list[httpx.Request] = []
    queue = list(bodies)

    def serve(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200, stream=queue.pop(0) if len(queue) > 1 else queue[0])

    client = AutoLLMClient("gpt-6", client_type="openai-responses", api_key="k",
                           http_client=mock_client(handler or serve), **options)
    return client, requests


async def abort_soon(signal: AbortSignal, reason: str, delay: float = 0.1) -> None:
    await anyio.sleep(delay)
    signal.abort(reason)


async def raises_aborted(step: Awaitable[Any], signal: AbortSignal, reason: str) -> AbortedError:
    """Await ``step`` while another task aborts ``signal``; return the ``AbortedError``."""
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(abort_soon, signal, reason)
            with pytest.raises(AbortedError) as caught:
                await step
    assert (caught.value.client, caught.value.reason) == ("openai-responses", reason)
    return caught.value


# -- the signal itself --------------------------------------------------------------------------


def test_abort_is_idempotent_and_the_first_reason_wins() -> None:
    signal = AbortSignal()
    assert (signal.aborted, signal.reason) == (False, None)
    signal.abort("first")
    signal.abort("second")
    assert (signal.aborted, signal.reason) == (True, "first")
    assert "first" in repr(signal)


async def test_wait_returns_once_aborted() -> None:
    signal = AbortSignal()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(abort_soon, signal, "done")
            await signal.wait()
        await signal.wait()  # already aborted: returns at once
    assert signal.reason == "done"


# -- through a call ---------------------------------------------------------------------------


async def test_an_aborted_signal_stops_the_call_before_any_request() -> None:
    client, requests = client_for(Body(HELLO))
    signal = AbortSignal()
    signal.abort("not now")
    # Message preflight still runs first (spec 03 §4).
    with pytest.raises(InvalidMessageError):
        await anext(client.streaming_response([UniMessage("user", ())], None, signal))
    with pytest.raises(AbortedError) as caught:
        await anext(client.streaming_response([USER], None, signal))
    assert caught.value.reason == "not now"
    assert requests == []


async def test_abort_while_waiting_for_the_response_headers() -> None:
    async def stall(request: httpx.Request) -> httpx.Response:
        await anyio.sleep_forever()
        return httpx.Response(200, stream=Body(HELLO))

    client, _ = client_for(handler=stall)
    signal = AbortSignal()
    stream = client.streaming_response([USER], None, signal)
    await raises_aborted(anext(stream), signal, "user left")


async def test_abort_while_waiting_for_bytes_cancels_the_read_and_closes_the_response() -> None:
    body = Body(FIRST_DELTA, FOREVER, HELLO[len(FIRST_DELTA):])
    client, _ = client_for(body)
    signal = AbortSignal()
    stream = client.streaming_response([USER], None, signal)
    await anext(stream)
    await raises_aborted(anext(stream), signal, "user left")
    assert body.closed


async def test_abort_from_another_thread() -> None:
    body = Body(FIRST_DELTA, FOREVER)
    client, _ = client_for(body)
    signal = AbortSignal()
    stream = client.streaming_response([USER], None, signal)
    await anext(stream)

    async def abort_from_a_thread() -> None:
        await anyio.sleep(0.1)
        await anyio.to_thread.run_sync(
            functools.partial(anyio.from_thread.run_sync, signal.abort, "thread")
        )

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(abort_from_a_thread)
        with anyio.fail_after(HANG_GUARD), pytest.raises(AbortedError):
            await anext(stream)
    assert signal.reason == "thread"
    assert body.closed


async def test_abort_between_events_takes_effect_at_the_next_step() -> None:
    body = Body(HELLO)
    client, _ = client_for(body)
    signal = AbortSignal()
    stream = client.streaming_response([USER], None, signal)
    await anext(stream)
    signal.abort("enough")
    with pytest.raises(AbortedError):
        await anext(stream)
    assert body.closed


async def test_abort_during_a_retry_pause() -> None:
    requests: list[httpx.Request] = []

    def busy(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(503, headers={"retry-after": "30"})

    client, _ = client_for(handler=busy)
    signal = AbortSignal()
    await raises_aborted(anext(client.streaming_response([USER], None, signal)), signal,
                         "stop retrying")
    assert len(requests) == 1


async def test_an_abort_landing_at_the_stop_yields_no_stop_and_records_nothing(
    tmp_path: Path,
) -> None:
    client, _ = client_for(Body(HELLO), trace_dir=tmp_path)
    signal = AbortSignal()
    seen = []
    with pytest.raises(AbortedError):
        async for event in client.streaming_response_stateful(USER, {"trace_id": "t"}, signal):
            seen.append(event.event_type)
            if event.content_items and event.content_items[0] == TextDone("Hello world"):
                signal.abort("too late")
    assert "stop" not in seen
    assert client.get_history() == []
    assert list(tmp_path.iterdir()) == []


async def test_an_aborted_call_in_flight_does_not_block_the_next_stateful_call() -> None:
    client, _ = client_for(Body(FIRST_DELTA, FOREVER), Body(HELLO))
    signal = AbortSignal()
    first = client.streaming_response_stateful(USER, None, signal)
    await anext(first)
    signal.abort("replaced")
    events = [event async for event in client.streaming_response_stateful(USER, None)]
    assert events[-1].event_type == "stop"
    with pytest.raises(AbortedError):
        await anext(first)
    assert len(client.get_history()) == 2


async def test_outside_cancellation_is_not_an_abort() -> None:
    body = Body(FIRST_DELTA, FOREVER)
    client, _ = client_for(body)
    signal = AbortSignal()
    with anyio.move_on_after(0.2) as scope:
        async for _event in client.streaming_response([USER], None, signal):
            pass
    assert scope.cancelled_caught
    assert not signal.aborted
    assert body.closed


async def test_an_unaborted_signal_changes_nothing() -> None:
    client, _ = client_for(Body(HELLO))
    events = [e async for e in client.streaming_response([USER], None, AbortSignal())]
    assert events[-1].event_type == "stop"
