"""The gateway's streams: steps 2-5 of ``handler``'s theory of operation (spec 07 §4, 08 D73).

1. A ``StreamCall``, or a ``FrontCall`` with ``stream: true``, is streamed by two tasks joined
   by a buffer of at most ``_BUFFERED_BYTES`` bytes of SSE frames (``Frames``; a larger frame
   waits for the buffer to empty and is then held alone). The *producer* runs the row's call
   (``Gateway._call``, which first refuses the ``extra_body`` keys the row does not forward)
   and puts the frames of each public event in the buffer, as the stream's encoding writes
   them. ``POST /v1/stream``'s (``MMSPStream``) is ``data: <json>`` per event, ending with
   ``data: [DONE]``; every error the client raises, those raised before any provider request
   included, becomes one ``data: {"error": <wire error>}`` frame under status 200 (07 §4,
   03 §3). A front door's (``doors.DoorStream``) is the protocol's SSE, its head sent only
   when the upstream answered (an error first is an HTTP error in the protocol's body), an
   error after it written in the stream as the protocol does. The producer queues a frame
   without waiting for the loop (it waits only for room), but lets the loop run once after
   its first frame, so that a stream's first event goes out before the rest of the burst it
   came in is encoded. The call's signal (``Flight.signal``) aborts it through one
   ``abort.abortable`` scope around the producer's whole call, not a scope per event in the
   client (``Gateway._call``'s ``each_wait``). The *writer* takes every frame
   queued at once and sends them in one write of at most ``_STEP`` bytes, so that a busy
   server gets back to its other streams between writes; while no frame is ready it sends
   ``: keep-alive`` every ``keepalive`` seconds. The head waits for the first bytes of the
   body (``Output.start(hold=True)``: the first frames, or the first keep-alive) and the last
   frames go out with the body's end (``Output.end``), each pair in one write: a short answer
   is two writes to its caller.
2. A caller that reads nothing blocks only its own writer: the buffer fills, then the producer
   waits, and no other stream is touched. A send that makes no progress for ``idle_timeout``
   seconds (frames go out in pieces of at most ``_PIECE`` bytes, each timed) aborts the
   upstream call and cuts the connection. The keep-alive and idle times are deadlines of the
   stream, one cancel scope for the writer's life whose deadline the writer moves where it
   waits (``_Writer``): no scope is opened per event or per write.
3. A caller that leaves cancels the handler (the front end does it): the producer's
   ``aclosing`` closes the upstream response at once, and the signal is aborted with
   ``"client disconnected"`` (``Gateway._flight``).
4. ``Gateway.abort_streams(reason)`` (graceful shutdown) aborts the upstream call of every
   stream in flight: on ``/v1/stream`` each writes ``data: [DONE]`` only, as a cancelled call
   does (07 §4); a front door writes its protocol's error, never a clean end.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import anyio
import anyio.lowlevel

from mmsp_core.errors import AbortedError
from mmsp_core.model import UniConfig, UniEvent, UniMessage
from mmsp_core.wire import to_wire

from ..abort import abortable
from ..httpserver import Request
from .answers import SSE_HEADERS, Answer, wire_error
from .config import KeyRow, ModelRow

if TYPE_CHECKING:
    from .calls import Flight, Output
    from .handler import Gateway

__all__ = ["Encoding", "Frames", "MMSPStream", "stream"]

#: Bytes of frames a stream holds between its upstream call and its caller (module doc,
#: steps 1 and 2).
_BUFFERED_BYTES: Final = 1024 * 1024
#: The most bytes of queued frames one write sends (``Frames.take``), so that a busy server
#: goes back to its other streams between writes.
_STEP: Final = 64 * 1024
#: The largest piece of a frame sent at once, so that a slow caller's progress is seen.
_PIECE: Final = 64 * 1024

_DONE: Final = b"data: [DONE]\n\n"
_KEEPALIVE: Final = b": keep-alive\n\n"
#: What a send to a caller who went away raises.
_GONE: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError)


#: Compact JSON, non-ASCII kept; one encoder for every frame (``json.dumps`` with options
#: builds one per call). The documents are ``to_wire``'s, never circular.
_ENCODE: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"),
                                  check_circular=False).encode


def _frame(document: Mapping[str, Any]) -> bytes:
    """One SSE event ``data: <json>`` (non-ASCII kept; the JSON holds no line break)."""
    return b"data: " + _ENCODE(document).encode() + b"\n\n"


@final
class Frames:
    """The frames between a stream's producer and its writer: at most ``limit`` bytes, but a
    frame larger than that is held alone (module docstring, step 1). One producer, one writer.
    The ASGI front end queues a response's body in one too (``asgi``).
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._frames: collections.deque[bytes] = collections.deque()
        self._held = 0
        self._closed = False
        #: The event a waiting side waits on (the producer for room, the writer for a frame,
        #: never both at once); made only when one waits.
        self._changed: anyio.Event | None = None

    async def _wait(self) -> None:
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def put(self, frame: bytes) -> None:
        """Queue ``frame`` once there is room for it (or nothing else is held); an empty one
        (an event the encoding writes nothing for) is dropped."""
        if not frame:
            return
        while self._frames and self._held + len(frame) > self._limit:
            await self._wait()
        self._frames.append(frame)
        self._held += len(frame)
        self._notify()

    def close(self) -> None:
        """No more frames: ``take`` returns ``None`` once the queued ones are taken."""
        self._closed = True
        self._notify()

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called: no frame will be queued any more."""
        return self._closed

    @property
    def finished(self) -> bool:
        """Whether every frame was taken and none will come (``close``)."""
        return self._closed and not self._frames

    async def ready(self) -> None:
        """Wait until a frame is queued or none will come (``close``), taking nothing."""
        while not self._frames and not self._closed:
            await self._wait()

    def take(self, most: int) -> bytes | None:
        """The frames queued now, joined, as many as fit in ``most`` bytes (always the first
        one, however large), without waiting: ``b""`` when none is queued yet, ``None`` after
        the last one (``close``)."""
        frames = self._frames
        if not frames:
            return None if self._closed else b""
        taken = [frames.popleft()]
        size = len(taken[0])
        while frames and size + len(frames[0]) <= most:
            frame = frames.popleft()
            taken.append(frame)
            size += len(frame)
        self._held -= size
        self._notify()
        return taken[0] if len(taken) == 1 else b"".join(taken)


class Encoding(Protocol):
    """How one stream's events reach its caller: ``MMSPStream`` for ``POST /v1/stream``,
    ``doors.DoorStream`` for a front door (module docstring, step 1)."""

    #: The head's headers.
    @property
    def headers(self) -> Sequence[tuple[str, str]]: ...

    #: Whether the head waits for the upstream's answer: the first frame, or ``refusal``.
    @property
    def deferred(self) -> bool: ...

    #: The whole answer sent instead of a deferred head: the stream failed before it began.
    @property
    def refusal(self) -> Answer | None: ...

    def event(self, event: UniEvent, /) -> bytes:
        """The frames of a public event."""
        ...

    def failure(self, exc: Exception, /) -> bytes:
        """The last frames of a call that raised ``exc``."""
        ...

    def aborted(self, exc: AbortedError, /) -> bytes:
        """The last frames of an aborted call (shutdown, an idle caller)."""
        ...

    def end(self) -> bytes:
        """The last frames of a call that ended with its stop."""
        ...


@final
class MMSPStream:
    """``POST /v1/stream``'s frames (07 §4): the head whatever the call gives (status 200,
    sent with the first frames or keep-alive: ``hold``), each event as ``data: <json>``,
    an error as one ``data: {"error": ...}`` frame, then ``data: [DONE]``; an aborted call
    writes ``[DONE]`` only. ``secret`` (the row's key) is redacted from an error that is no
    MMSP error."""

    headers: Final = SSE_HEADERS
    deferred: Final = False
    refusal: Final = None

    def __init__(self, secret: str) -> None:
        self._secret = secret

    def event(self, event: UniEvent) -> bytes:
        return _frame(to_wire(event))

    def failure(self, exc: Exception) -> bytes:
        return _frame(wire_error(exc, self._secret)) + _DONE

    def aborted(self, exc: AbortedError) -> bytes:
        return _DONE

    def end(self) -> bytes:
        return _DONE


async def stream(
    gateway: Gateway,
    row: ModelRow,
    messages: Sequence[UniMessage | Mapping[str, Any]],
    config: UniConfig | Mapping[str, Any] | None,
    out: Output,
    encoding: Encoding,
    key: KeyRow | None,
    request: Request,
) -> None:
    """Steps 1-3 of the module docstring for one accepted call of ``key`` to ``row``, tracked
    by ``gateway`` (``Gateway._flight``) as ``request``'s: the producer runs in the request's
    task, so the upstream request goes out in the step that read the caller's, and the writer
    in a task of its own (``_deliver``). A deferred head (a front door's, 08 D73) is sent when
    the upstream answered: with the first frame, or as the whole ``encoding.refusal`` when the
    call failed first. A caller gone while the head was being sent ends the stream (the
    output has seen it: ``client_gone``)."""
    async with gateway._flight(row, out, key, request) as flight:
        if not encoding.deferred:
            flight.status = 200
            await out.start(200, encoding.headers, hold=True)
        frames = Frames(_BUFFERED_BYTES)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_deliver, frames, out, flight, encoding, gateway,
                             tasks.cancel_scope)
            await _produce(gateway, row, messages, config, flight, frames, encoding)


async def _deliver(
    frames: Frames,
    out: Output,
    flight: Flight,
    encoding: Encoding,
    gateway: Gateway,
    producing: anyio.CancelScope,
) -> None:
    """The writer's task (step 1): a deferred head once the upstream answered, then the frames
    (``_write``); when it stops before the last frame (the caller left, or was cut for
    idling), it cancels ``producing``, the scope of the producer's call."""
    try:
        if encoding.deferred:
            await frames.ready()
            refused = encoding.refusal
            flight.status = 200 if refused is None else refused.status
            if refused is not None:
                await out.respond(refused.status, refused.headers, refused.body)
            else:
                await out.start(200, encoding.headers, hold=True)
            flight.delivered = refused is not None
        if not flight.delivered:
            flight.delivered = await _write(frames, out, flight, gateway.keepalive,
                                            gateway.idle_timeout)
    except _GONE:  # the head's write; the output has seen the caller go
        pass
    if not frames.closed:
        producing.cancel()


async def _produce(
    gateway: Gateway,
    row: ModelRow,
    messages: Sequence[UniMessage | Mapping[str, Any]],
    config: UniConfig | Mapping[str, Any] | None,
    flight: Flight,
    frames: Frames,
    encoding: Encoding,
) -> None:
    """Run the row's call and queue the frames of its events, then its last frames as
    ``encoding`` writes the end, an error or an abort (shutdown, an idle caller)."""
    waiting = True  # for the first frame
    try:
        with abortable(flight.signal, gateway._clients[row].client_type):
            calling = gateway._call(row, messages, config, flight, each_wait=False)
            async with aclosing(calling) as events:
                async for event in events:
                    flight.tally.event(stop=event.event_type == "stop",
                                       usage=event.usage_metadata)
                    frame = encoding.event(event)
                    await frames.put(frame)
                    if waiting and frame:
                        waiting = False
                        await anyio.lowlevel.checkpoint()
        last = encoding.end()
    except AbortedError as exc:  # named after the client of the row that served the call
        exc = AbortedError(gateway._clients[flight.row].client_type, exc.reason)
        flight.error_type = type(exc).__name__
        flight.tally.failed(str(exc))
        last = encoding.aborted(exc)
    except Exception as exc:  # /v1/stream: one event under status 200 (07 §4)
        gateway._failed(flight.row, exc, flight)
        last = encoding.failure(exc)
    await frames.put(last)
    frames.close()


async def _write(
    frames: Frames, out: Output, flight: Flight, keepalive: float, idle_timeout: float
) -> bool:
    """Send the stream's frames with ``_Writer`` under one cancel scope whose deadline the
    writer moves (steps 1 and 2), a new scope only after one expired; return at the end of the
    stream (``True``: every frame was sent), once the caller is gone, or after cutting a
    caller idle for ``idle_timeout`` seconds."""
    writer = _Writer(frames, out, keepalive, idle_timeout)
    while True:
        with anyio.CancelScope() as writer.deadline:
            try:
                ended = await writer.run()
            except _GONE:  # the front end has seen it: client_gone is set
                return False
            if ended:
                return True
        if writer.sending:  # the idle deadline expired during a send
            reason = f"the caller read nothing for {idle_timeout:g} s"
            flight.signal.abort(reason)
            flight.error_type = AbortedError.__name__
            flight.tally.failed(reason)
            await out.cut()
            return False
        if not writer.pending:  # the keep-alive deadline expired while no frame was ready
            writer.pending = _KEEPALIVE


@final
class _Writer:
    """The writer of one stream (module docstring, steps 1 and 2). Its two deadlines are the
    ``deadline`` scope's, set where it waits: ``keepalive`` seconds from when it begins to
    wait for a frame, ``idle_timeout`` seconds from when it begins a send; ``sending`` says
    whether a send was under way when the scope expired."""

    def __init__(self, frames: Frames, out: Output, keepalive: float,
                 idle_timeout: float) -> None:
        self.frames = frames
        self.out = out
        self.keepalive = keepalive
        self.idle_timeout = idle_timeout
        self.deadline = anyio.CancelScope()
        self.sending = False
        #: Bytes to send before the next frames: a keep-alive that came due, or what a
        #: deadline that expired before a send began held back (no keep-alive then: it could
        #: fall inside a frame, and data is about to go out anyway).
        self.pending = b""

    async def run(self) -> bool:
        """Send ``pending``, then the frames as they come, every frame queued at once in one
        write of at most ``_STEP`` bytes (a larger frame in pieces of ``_PIECE``): ``True``
        after the last one, ``False`` when a deadline expired before a send began (the
        scope's cancellation ends a wait or a send that one interrupts).

        Raises:
            anyio.BrokenResourceError, anyio.ClosedResourceError: the caller went away.
        """
        frames, deadline = self.frames, self.deadline
        while True:
            data = self.pending or frames.take(_STEP)
            self.pending = b""
            if data is None:
                return True
            if not data:
                deadline.deadline = anyio.current_time() + self.keepalive
                await frames.ready()
                continue
            for start in range(0, len(data), _PIECE):
                deadline.deadline = anyio.current_time() + self.idle_timeout
                if deadline.cancel_called:  # an earlier deadline expired meanwhile
                    self.pending = data[start:]
                    return False
                self.sending = True
                piece = data[start : start + _PIECE]
                if start + _PIECE >= len(data) and frames.finished:
                    await self.out.end(piece)  # the last bytes and the body's end: one write
                    return True
                await self.out.send(piece)
                self.sending = False
