"""The attempt loop of one call (spec 02 §8-§9, 03 §4; 08 D20, D21, D27, D60, D61, D78).

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
4. A traced call (``Call.trace``, 08 D78) also keeps its ``TurnLog``: each attempt's start and
   error, when the first event came, and the deltas of the item arriving. Its trace is the
   first stop step; when the call fails after its request was built (not on an abort, 08
   D20), the trace is written with the error and what had arrived before it is raised.
5. With a ``Recorder`` (``record_to``), each attempt's exchange is recorded as a cassette
   (``mmsp_io._cassettes``): the driver taps the raw body chunks, and the cassette is written
   when the attempt's response is closed. Without one, nothing is wrapped.

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
from typing import Any, Protocol

import anyio
import anyio.to_thread
import attrs
import httpx

from adapters import CallPlan
from mmsp_core.errors import AbortedError, MMSPError, ProviderHTTPError, redact, redact_error
from mmsp_core.messages import concat_uni_events_to_uni_message
from mmsp_core.model import Item, UniEvent, UniMessage
from mmsp_core.request import HTTPRequest
from mmsp_core.wire import to_wire

from . import tracer
from ._cassettes import Recorder, Recording
from ._retry import retry_wait
from .abort import AbortSignal, abortable
from .driver import ErrorForStatus, Timeouts, open_stream

__all__ = ["Authorizer", "Call", "Sender", "StopStep", "TraceStep", "TurnLog", "now_ms",
           "redacting"]

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
        _redact(exc, secrets)
        raise


def _secrets(secret: str | None, authorizer: Authorizer | None) -> tuple[str | None, ...]:
    """``secret`` (a key) and ``authorizer``'s secrets as they are now (a token may come
    during a call)."""
    return (secret, *(authorizer.secrets if authorizer is not None else ()))


def _redact(exc: MMSPError, secrets: tuple[str | None, ...]) -> None:
    """Remove each of ``secrets`` from ``exc`` in place (``redacting``)."""
    for secret in secrets:
        if secret:
            redact_error(exc, secret)


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


@attrs.define
class TurnLog:
    """What a traced call's trace says besides its messages (08 D78, ``tracer`` module doc),
    gathered while it runs; times are ``anyio.current_time()`` values."""

    #: Each attempt: when it started, and its error in wire form (``None``: it streamed);
    #: kept for every call (its span counts them, ``mmsp_io._telemetry``).
    attempts: list[tuple[float, dict[str, Any] | None]] = attrs.Factory(list)
    first_event: float | None = None
    #: The events carrying a done item, in order.
    done: list[UniEvent] = attrs.Factory(list)
    #: The delta items since the last done item: the item arriving.
    arriving: list[Item] = attrs.Factory(list)

    def turn(self, started: float, error: MMSPError | None) -> dict[str, Any]:
        """The turn's keys of the trace (``tracer.TURN_KEYS``), the call having started at
        ``started`` and ended now, with ``error`` or at its stop."""
        turn: dict[str, Any] = {"outcome": "stop" if error is None else "error"}
        if error is not None:
            turn["error"] = to_wire(error)["error"]
            turn["partial"] = tracer.joined_deltas(self.arriving)
        turn["attempts"] = [{"started_s": round(at - started, 6), "error": failed}
                            for at, failed in self.attempts]
        turn["first_event_s"] = (None if self.first_event is None
                                 else round(self.first_event - started, 6))
        turn["duration_s"] = round(anyio.current_time() - started, 6)
        return turn


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
    #: Writes the call's trace (module doc, step 4); ``None``: the call is not traced.
    trace: TraceStep | None = None
    #: What the stream brought: the done items when there are stop steps or a trace, the
    #: rest only for a trace.
    log: TurnLog = attrs.Factory(TurnLog)


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
    #: Records each exchange as a cassette (module doc, step 5); ``None``: nothing recorded.
    recorder: Recorder | None = None

    @property
    def secrets(self) -> tuple[str | None, ...]:
        """Every secret of the client as it is now (``_secrets``)."""
        return _secrets(self.secret, self.authorizer)

    async def stream(
        self, prepare: Callable[[], Awaitable[Call]]
    ) -> AsyncGenerator[UniEvent, None]:
        """The public events of the call ``prepare`` makes ready (module doc).

        Raises:
            MMSPError: what ``prepare`` raises; ``AbortedError`` when the signal fires;
                what the last attempt raised, once it may not be retried (its ``detail``
                saying why, 08 D21, D60); whatever the stream or a stop step raises. A
                traced call's trace is written first (module doc, step 4).
        """
        call: Call | None = None
        try:
            with redacting(self.secret):
                call = await prepare()
                async with AsyncExitStack() as stack:
                    first, events = await self._first_event(call, stack)
                    if first is not None:
                        yield first
                    async for event in events:
                        yield event
        except MMSPError as exc:
            # The authorizer's secrets as they are now: a token may come during the call.
            _redact(exc, self.secrets)
            if call is not None and call.trace is not None and not isinstance(exc, AbortedError):
                await call.trace.failed(call, exc, self.secrets)
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
            began = anyio.current_time()
            try:
                opened = await self._open(call, stack)
            except MMSPError as exc:
                call.log.attempts.append((began, to_wire(exc)["error"]))
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
            else:
                call.log.attempts.append((began, None))
                return opened
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
            tap = None
            if self.recorder is not None:
                recording = self.recorder.start(call.plan.protocol.name, call.plan.model)
                attempt.push_async_callback(self._save, recording)  # after the response closed
                tap = recording.tap
            with abortable(call.signal, self.client):
                request = call.request
                if self.authorizer is not None:
                    request = await self.authorizer.authorize(request, call.url)
                events: AsyncIterator[UniEvent] = await attempt.enter_async_context(open_stream(
                    self.http, call.url, request, call.plan.new_pipeline(now_ms),
                    client=self.client, timeouts=call.timeouts,
                    error_for_status=self.error_for_status, started=call.started, tap=tap,
                ))
            if call.signal is not None:  # no scope per event without a signal
                events = await attempt.enter_async_context(
                    aclosing(_each_abortable(events, call.signal, self.client)))
            if call.at_stop or call.trace is not None:
                events = await attempt.enter_async_context(
                    aclosing(_with_stop_steps(call, events)))
            first = await anext(events, None)
            if first is not None:
                call.log.first_event = anyio.current_time()
            stack.push_async_exit(attempt.pop_all())
        return first, events

    async def _save(self, recording: Recording) -> None:
        """Write ``recording``'s cassette without the client's secrets as they are now."""
        await recording.save(self.secrets)


@attrs.frozen
class TraceStep:
    """Writes the trace of a call's turn (spec 07 §7, 08 D78) into ``root``: at the stop, or
    when the call failed; a failure to write is a logged warning (08 D27)."""

    root: Path
    trace_id: str
    client: str
    model: str
    #: The client's base URL, written in the trace (the trace page prices a turn by it).
    base_url: str
    #: The client's key, redacted from the trace and the warning (08 D61).
    secret: str | None
    #: The cloud credentials whose secrets are redacted too, as they are when writing.
    authorizer: Authorizer | None = None

    async def __call__(self, call: Call, assistant: UniMessage) -> None:
        """Write the trace of ``call``'s messages and ``assistant`` at the stop, in a worker
        thread.

        Raises:
            AbortedError: the call's signal fired while writing.
        """
        with abortable(call.signal, self.client):
            await self._write(call, [*call.plan.messages, assistant],
                              call.log.turn(call.started, None),
                              _secrets(self.secret, self.authorizer))

    async def failed(self, call: Call, error: MMSPError, secrets: tuple[str | None, ...]) -> None:
        """Write the trace of ``call``, which failed with ``error`` (already redacted): its
        messages, the assistant message of the items done before it (if any), the item that
        was arriving, and the turn's keys (``tracer`` module doc)."""
        history = list(call.plan.messages)
        if call.log.done:
            history.append(concat_uni_events_to_uni_message(call.log.done))
        await self._write(call, history, call.log.turn(call.started, error), secrets)

    async def _write(
        self, call: Call, history: list[UniMessage], turn: dict[str, Any],
        secrets: tuple[str | None, ...],
    ) -> None:
        write = functools.partial(tracer.write_trace, self.root, self.trace_id, self.client,
                                  self.model, history, call.plan.config,
                                  base_url=self.base_url, secrets=secrets, turn=turn)
        try:
            await anyio.to_thread.run_sync(write)
        except (OSError, MMSPError) as exc:
            text = str(exc)
            for secret in secrets:
                text = redact(text, secret or "")
            _logger.warning("%s: could not write the trace %r: %s", self.client,
                            self.trace_id, text)


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
    """``events``, the done items collected in ``call.log`` (and, for a traced call, the
    deltas of the item arriving); at the stop, the assistant message assembled from them
    (spec 02 §9) goes to the trace, then to each of ``call.at_stop``, before the stop is
    yielded.

    Raises:
        MMSPError: what ``events`` or a step raises.
    """
    log, trace = call.log, call.trace
    async for event in events:
        if event.event_type == "stop":
            assistant = concat_uni_events_to_uni_message([*log.done, event])
            if trace is not None:
                await trace(call, assistant)
            for step in call.at_stop:
                await step(call, assistant)
        elif event.content_items[0].type.endswith(".done"):
            log.done.append(event)
            log.arriving.clear()
        elif trace is not None:
            log.arriving.extend(event.content_items)
        yield event
