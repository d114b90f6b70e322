"""The attempt loop of one call (spec 02 §8-§9, 03 §4; 08 D20, D21, D27, D60, D61).

``Sender.stream`` runs one call of a client: it prepares the ``Call`` (the client's preflight,
``AutoLLMClient``), then makes attempts until one gives its first event:

1. An attempt opens the stream (``open_stream``) with a fresh pipeline
   (``CallPlan.new_pipeline``), its request first given a cloud's credentials by the client's
   ``Authorizer`` if it has one (Bedrock signs each attempt, Vertex AI adds its OAuth token,
   08 D72), and waits for its first event. With a signal, each wait for an event runs under
   ``abortable`` (none across a ``yield``, and no scope at all without a signal).
2. An error before the first event is retried as ``retry_wait`` decides (``mmsp_io._retry``),
   after a wait under the signal; once an event has been yielded nothing is retried. A 401
   whose credentials the authorizer can renew (Vertex's token) is tried once more at once.
3. When the call has stop steps (``Call.at_stop``: writing the trace, recording the stateful
   turn), the done items are collected and, at the stop, the assistant message is assembled
   from them and handed to each step in turn before the stop is yielded (spec 02 §9); a call
   without steps collects nothing.

Every ``MMSPError`` leaving the call, the preflight's included, has the client's key and its
authorizer's secrets, as they are when it leaves, redacted from it (``redacting``, 08 D61).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, aclosing, contextmanager
from pathlib import Path
from typing import Protocol

import anyio
import anyio.to_thread
import attrs
import httpx

from adapters import CallPlan
from mmsp_core.errors import MMSPError, ProviderHTTPError, redact, redact_error
from mmsp_core.messages import concat_uni_events_to_uni_message
from mmsp_core.model import UniEvent, UniMessage
from mmsp_core.request import HTTPRequest

from . import tracer
from ._retry import retry_wait
from .abort import AbortSignal, abortable
from .driver import ErrorForStatus, Timeouts, open_stream

__all__ = ["Authorizer", "Call", "Sender", "StopStep", "TraceStep", "now_ms", "redacting"]

_logger = logging.getLogger("mmsp_io")

#: A step run at the stop with the assembled assistant message, before the stop is yielded.
StopStep = Callable[["Call", UniMessage], Awaitable[None]]


def now_ms() -> int:
    """The real clock, Unix milliseconds (09)."""
    return time.time_ns() // 1_000_000


@contextmanager
def redacting(*secrets: str | None) -> Iterator[None]:
    """Remove each of ``secrets`` from every ``MMSPError`` raised in the block (08 D61): every
    field, ``args`` and the exception chain, after the pure layers built and shortened the
    text."""
    try:
        yield
    except MMSPError as exc:
        for secret in secrets:
            if secret:
                redact_error(exc, secret)
        raise


class Authorizer(Protocol):
    """A cloud's credentials, added to the request of each attempt (08 D72: Bedrock's SigV4
    signature, made at the attempt's time; ``mmsp_io._bedrock.BedrockAuth``)."""

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secrets it holds, redacted from every error (08 D61)."""
        ...

    async def authorize(self, request: HTTPRequest, url: str) -> HTTPRequest:
        """``request``, to be sent to ``url``, with its credentials."""
        ...

    def unauthorized(self) -> bool:
        """The endpoint answered 401: drop what was sent; whether one more attempt with new
        credentials may succeed (08 D72: Vertex AI's token, fetched again once)."""
        ...


@attrs.frozen
class Call:
    """One call, ready to send: what the client's preflight decided (spec 02 §8)."""

    plan: CallPlan
    #: The exact request, credentials and ``default_headers`` included.
    request: HTTPRequest
    url: str
    timeouts: Timeouts
    signal: AbortSignal | None
    #: When the call started (``anyio.current_time()``): ``total`` counts from there (08 D60).
    started: float
    #: Run in order at the stop (module doc, step 3).
    at_stop: tuple[StopStep, ...] = ()


@attrs.frozen
class Sender:
    """What every call of one client shares: where it sends, how it retries, what it hides."""

    client: str
    http: httpx.AsyncClient
    max_retries: int
    error_for_status: ErrorForStatus | None
    #: The client's key, redacted from every error (08 D61).
    secret: str | None
    #: Adds a cloud's credentials to each attempt's request; ``None``: the request carries
    #: its credentials already.
    authorizer: Authorizer | None = None

    async def stream(
        self, prepare: Callable[[], Awaitable[Call]]
    ) -> AsyncGenerator[UniEvent, None]:
        """The public events of the call ``prepare`` makes ready (module doc).

        Raises:
            MMSPError: what ``prepare`` raises; ``AbortedError`` when the signal fires;
                what the last attempt raised, once it may not be retried (its ``detail``
                saying why, 08 D21, D60); whatever the stream or a stop step raises.
        """
        try:
            with redacting(self.secret):
                call = await prepare()
                async with AsyncExitStack() as stack:
                    first, events = await self._first_event(call, stack)
                    if first is not None:
                        yield first
                    async for event in events:
                        yield event
        except MMSPError:
            # The authorizer's secrets as they are now: a token may come during the call.
            with redacting(*(self.authorizer.secrets if self.authorizer is not None else ())):
                raise

    async def _first_event(
        self, call: Call, stack: AsyncExitStack
    ) -> tuple[UniEvent | None, AsyncIterator[UniEvent]]:
        """Make attempts until one gives its first event (``None``: its stream ended without
        one), waiting between them as ``retry_wait`` says; the stream that gave it is closed
        with ``stack``.

        Raises:
            MMSPError: the error of the last attempt; ``AbortedError`` during a wait. A 401
                the authorizer can answer with new credentials is tried once more first.
        """
        attempt = 0
        reauthorized = False
        while True:
            try:
                return await self._open(call, stack)
            except MMSPError as exc:
                if not reauthorized and self._reauthorize(exc):
                    reauthorized = True
                    continue
                delay = retry_wait(exc, attempt, max_retries=self.max_retries,
                                   total=call.timeouts.total,
                                   elapsed=anyio.current_time() - call.started)
                if delay is None:
                    raise
                _logger.info("%s: retrying after %s (attempt %d)", self.client,
                             type(exc).__name__, attempt + 1)
            with abortable(call.signal, self.client):
                await anyio.sleep(delay)
            attempt += 1

    def _reauthorize(self, exc: MMSPError) -> bool:
        """Whether ``exc`` is a 401 the authorizer answers by dropping its credentials, so that
        one more attempt, at once and not counted as a retry, may succeed (08 D72)."""
        return (isinstance(exc, ProviderHTTPError) and exc.status == 401
                and self.authorizer is not None and self.authorizer.unauthorized())

    async def _open(
        self, call: Call, stack: AsyncExitStack
    ) -> tuple[UniEvent | None, AsyncIterator[UniEvent]]:
        """One attempt: open the stream and wait for its first event; once it came, the
        stream is closed with ``stack``, else at once.

        Raises:
            MMSPError: what opening or reading the stream raises (``AbortedError`` included).
        """
        async with AsyncExitStack() as attempt:
            with abortable(call.signal, self.client):
                request = call.request
                if self.authorizer is not None:
                    request = await self.authorizer.authorize(request, call.url)
                events: AsyncIterator[UniEvent] = await attempt.enter_async_context(open_stream(
                    self.http, call.url, request, call.plan.new_pipeline(now_ms),
                    client=self.client, timeouts=call.timeouts,
                    error_for_status=self.error_for_status, started=call.started,
                ))
            if call.signal is not None:  # no scope per event without a signal
                events = await attempt.enter_async_context(
                    aclosing(_each_abortable(events, call.signal, self.client)))
            if call.at_stop:
                events = await attempt.enter_async_context(
                    aclosing(_with_stop_steps(call, events)))
            first = await anext(events, None)
            stack.push_async_exit(attempt.pop_all())
        return first, events


@attrs.frozen
class TraceStep:
    """The stop step that writes the trace of a call's turn (spec 07 §7) into ``root``; a
    failure is a logged warning (08 D27)."""

    root: Path
    trace_id: str
    client: str
    model: str
    #: The client's key, redacted from the trace and the warning (08 D61).
    secret: str | None

    async def __call__(self, call: Call, assistant: UniMessage) -> None:
        """Write the trace of ``call``'s messages and ``assistant``, in a worker thread.

        Raises:
            AbortedError: the call's signal fired while writing.
        """
        plan = call.plan
        write = functools.partial(tracer.write_trace, self.root, self.trace_id, self.client,
                                  self.model, [*plan.messages, assistant], plan.config,
                                  secret=self.secret)
        with abortable(call.signal, self.client):
            try:
                await anyio.to_thread.run_sync(write)
            except (OSError, MMSPError) as exc:
                _logger.warning("%s: could not write the trace %r: %s", self.client,
                                self.trace_id, redact(str(exc), self.secret or ""))


async def _each_abortable(
    events: AsyncIterator[UniEvent], signal: AbortSignal, client: str
) -> AsyncGenerator[UniEvent, None]:
    """``events``, each wait for the next one under ``abortable(signal)`` (none across a
    ``yield``).

    Raises:
        AbortedError: the signal was aborted before or during a wait.
    """
    while True:
        with abortable(signal, client):
            event = await anext(events, None)
        if event is None:
            return
        yield event


async def _with_stop_steps(
    call: Call, events: AsyncIterator[UniEvent]
) -> AsyncGenerator[UniEvent, None]:
    """``events``, the done items collected; at the stop, the assistant message assembled
    from them (spec 02 §9) goes to each of ``call.at_stop`` before the stop is yielded.

    Raises:
        MMSPError: what ``events`` or a step raises.
    """
    done: list[UniEvent] = []
    async for event in events:
        if event.event_type == "stop":
            assistant = concat_uni_events_to_uni_message([*done, event])
            for step in call.at_stop:
                await step(call, assistant)
        elif event.content_items[0].type.endswith(".done"):
            done.append(event)
        yield event
