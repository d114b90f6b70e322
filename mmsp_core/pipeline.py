"""``StreamPipeline``: decoder, machine and finalizer behind an h11-style pull API (09).

Theory of operation: ``receive_data`` only buffers (it runs the decoder and queues the SSE
events it completes). ``next_event`` does one unit of work at a time until it has an event to
hand out: one SSE event through the machine, whose client events go to the finalizer one item
at a time (an event with several items is split, its usage/finish part last), or whole to a
finalizer of an already-public stream (``takes_whole_events``: ``PassThrough``, which must see
each event as the server sent it to judge it, 02 §12). After
``receive_eof``, draining runs ``decoder.close()``, ``machine.finish()``, ``items.end()`` and
``items.close()`` in that order, then returns ``END`` forever.

An exception from any stage is held until every public event decided before it has been
handed out, then raised from ``next_event``; the pipeline is then in ``ERROR`` and every later
call raises ``RuntimeError``. A decoder error raised by ``receive_data`` is about bytes after
every SSE event already queued, so it waits behind them. So the output never depends on where
the bytes were cut.

The terminal event (08 D56): a machine that has a ``finished`` attribute (every machine built
on the kernel, ``adapters._table``) sets it when its protocol's terminal event arrives
(``message_stop``, ``data: [DONE]``, ``response.completed``, ...). From then on the pipeline
ignores everything after that event, in both modes: the SSE events still queued are dropped
with any decoder error behind them, later ``receive_data`` bytes are accepted and never
decoded, and draining after ``receive_eof`` skips ``decoder.close()``. So a body read past its
terminal event (a server that keeps the connection open, or sends more) gives the same result
as one read up to it; ``finished`` tells the I/O layer that it may stop reading.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from .errors import MalformedEventError
from .items import ClientEvent, StreamItems
from .kinds import Fragment
from .model import UniEvent
from .sse import SSEDecoder, SSEEvent

__all__ = [
    "END",
    "NEED_DATA",
    "Decoder",
    "Finalizer",
    "Machine",
    "PipelineState",
    "Sentinel",
    "StreamPipeline",
]


class Machine(Protocol):
    """One wire protocol's parser: SSE events in, client-stream events out (spec 02 §2.1):
    ``UniEvent``s, or ``Fragment``s for the commonest deltas (08 D65).

    A machine whose protocol has a terminal event also has a ``finished`` attribute, false
    until that event has been taken (08 D56); the pipeline reads it when it is built, so the
    attribute must exist from construction on.
    """

    def next_events(self, sse: SSEEvent) -> Sequence[ClientEvent]:
        """Return the client events of one SSE event (all-or-nothing)."""
        ...

    def finish(self) -> Sequence[ClientEvent]:
        """End of input: return whatever the machine still holds (usually ``[]``)."""
        ...


class Finalizer(Protocol):
    """Client stream to public stream: ``StreamItems``, or a checker that passes an already
    public stream through (the mmsp client).

    A finalizer with a true ``takes_whole_events`` attribute is pushed every event as the
    machine made it; any other gets one item per push (09). The pipeline reads the attribute
    once, when it is built.
    """

    def push(self, event: ClientEvent) -> list[UniEvent]: ...

    def end(self) -> list[UniEvent]: ...

    def close(self) -> UniEvent: ...


class Decoder(Protocol):
    """Bytes to SSE events: ``SSEDecoder`` or ``BodyDecoder``."""

    def feed(self, data: bytes) -> list[SSEEvent]: ...

    def close(self) -> list[SSEEvent]: ...


class Sentinel(enum.Enum):
    """The type of ``NEED_DATA`` and ``END``, the non-event answers of ``next_event``."""

    NEED_DATA = "NEED_DATA"
    END = "END"

    def __repr__(self) -> str:
        return self.value


#: ``next_event`` needs more bytes (``receive_data``) or the end of input (``receive_eof``).
NEED_DATA: Final = Sentinel.NEED_DATA
#: The stream is over: the ``stop`` event has been handed out.
END: Final = Sentinel.END


class PipelineState(enum.Enum):
    #: Taking bytes.
    OPEN = enum.auto()
    #: ``receive_eof`` was called; draining what is left.
    EOF = enum.auto()
    #: ``END`` was returned.
    CLOSED = enum.auto()
    #: An exception was raised; every later call raises ``RuntimeError``.
    ERROR = enum.auto()


_OPEN: Final = PipelineState.OPEN


class _Stage(enum.IntEnum):
    """What ``next_event`` runs once the queued SSE events are used up after EOF."""

    DECODER_CLOSE = 0
    MACHINE_FINISH = 1
    ITEMS_END = 2
    ITEMS_CLOSE = 3
    DONE = 4


class StreamPipeline:
    """Bytes in, public ``UniEvent``s out.

    Args:
        machine: the wire protocol's machine.
        client: the client type (or protocol name) named in errors.
        clock: Unix milliseconds for ``created_at`` (the finalizer stamps every public event).
        decoder: bytes to SSE events; an ``SSEDecoder`` with default limits when ``None``.
        finalizer: builds the finalizer from ``client`` and ``clock``; ``StreamItems`` when
            ``None``.
    """

    def __init__(
        self,
        machine: Machine,
        *,
        client: str,
        clock: Callable[[], int],
        decoder: Decoder | None = None,
        finalizer: Callable[..., Finalizer] | None = None,
    ) -> None:
        self._client = client
        self._machine = machine
        self._decoder: Decoder = decoder if decoder is not None else SSEDecoder()
        self._items: Finalizer = (finalizer or StreamItems)(client=client, clock=clock)
        self._sse: deque[SSEEvent] = deque()
        self._out: deque[UniEvent] = deque()
        self._failure: BaseException | None = None
        #: A decoder error from ``receive_data``: raised once the queued SSE events are used.
        self._feed_failure: BaseException | None = None
        #: The machine reports its terminal event (08 D56); checked once, not per event.
        self._has_terminal = hasattr(machine, "finished")
        #: The finalizer takes events unsplit (``PassThrough``); checked once, not per event.
        self._whole_events = bool(getattr(self._items, "takes_whole_events", False))
        self._finished = False
        self._stage = _Stage.DECODER_CLOSE
        self._state = PipelineState.OPEN

    @property
    def state(self) -> PipelineState:
        """``OPEN``, ``EOF``, ``CLOSED`` or ``ERROR``."""
        return self._state

    @property
    def finished(self) -> bool:
        """The machine has taken its protocol's terminal event: the I/O layer may stop reading
        now (and close the response), then call ``receive_eof`` and drain ``next_event``.

        Set while ``next_event`` runs the terminal event, so it is seen at the first
        ``NEED_DATA`` after it; always false for a protocol without a terminal event, which
        ends at the end of the body (08 D56). Bytes received after it are ignored.
        """
        return self._finished

    def receive_data(self, data: bytes) -> None:
        """Buffer body bytes. Errors they cause come out of ``next_event`` in stream order.

        Once ``finished`` is true (or an error is pending) the bytes are accepted and
        ignored: nothing after the terminal event counts (08 D56).

        Raises:
            RuntimeError: after ``receive_eof`` or after an error.
        """
        if self._state is not _OPEN:
            raise RuntimeError(f"receive_data in state {self._state.name}")
        if self._finished or self._failure is not None or self._feed_failure is not None:
            return
        try:
            self._sse.extend(self._decoder.feed(data))
        except Exception as exc:
            self._feed_failure = exc

    def receive_eof(self) -> None:
        """Mark the end of the body.

        Raises:
            RuntimeError: called twice or after an error.
        """
        if self._state is not PipelineState.OPEN:
            raise RuntimeError(f"receive_eof in state {self._state.name}")
        self._state = PipelineState.EOF

    def next_event(self) -> UniEvent | Sentinel:
        """Return the next public event, ``NEED_DATA`` or ``END``.

        Raises:
            MMSPError: whatever a stage raised, after every event decided before it.
            RuntimeError: called after an error was raised.
        """
        out = self._out
        while True:
            if out:
                return out.popleft()
            if self._failure is not None:
                return self._raise_failure()
            if self._sse:
                self._run_machine(self._sse.popleft())
                continue
            if self._feed_failure is not None:
                self._failure, self._feed_failure = self._feed_failure, None
                continue
            if self._state is _OPEN:
                return NEED_DATA
            if self._state is PipelineState.CLOSED:
                return END
            if self._state is PipelineState.ERROR:
                raise RuntimeError("the pipeline failed earlier; start a new one")
            self._advance_after_eof()

    # -- stages ----------------------------------------------------------------------------

    def _run_machine(self, sse: SSEEvent) -> None:
        machine = self._machine
        try:
            events = machine.next_events(sse)
        except Exception as exc:
            self._failure = exc
            return
        if self._has_terminal and machine.finished:  # type: ignore[attr-defined]
            # 08 D56: whatever was decoded after the terminal event is dropped.
            self._finished = True
            self._sse.clear()
            self._feed_failure = None
        self._push(events)

    def _push(self, events: Sequence[ClientEvent]) -> None:
        """Feed client events to the finalizer one item at a time (09), or whole to one that
        takes whole events; a ``Fragment`` is one item already."""
        push = self._items.push
        out = self._out
        try:
            for event in events:
                if isinstance(event, Fragment) or self._whole_events:
                    out.extend(push(event))
                    continue
                items = event.content_items
                if not items or (
                    len(items) == 1 and event.usage_metadata is None and not event.finish_reason
                ):
                    out.extend(push(event))
                    continue
                for item in items:
                    out.extend(push(UniEvent("delta", (item,))))
                out.extend(
                    push(UniEvent(event.event_type, (), event.usage_metadata, event.finish_reason))
                )
        except RecursionError:
            # Only a provider's value nested as deeply as the JSON parser allows gets here (a
            # fidelity payload compared or copied): the event is malformed (08 D59).
            self._failure = MalformedEventError(
                self._client, "(a client event)", detail="a value is nested too deeply"
            )
        except Exception as exc:
            self._failure = exc

    def _advance_after_eof(self) -> None:
        stage = self._stage
        if stage is _Stage.DONE:
            self._state = PipelineState.CLOSED
            return
        self._stage = _Stage(stage + 1)
        try:
            if stage is _Stage.DECODER_CLOSE:
                if not self._finished:  # nothing after the terminal event counts (08 D56)
                    self._sse.extend(self._decoder.close())
            elif stage is _Stage.MACHINE_FINISH:
                self._push(self._machine.finish())
            elif stage is _Stage.ITEMS_END:
                self._out.extend(self._items.end())
            else:
                self._out.append(self._items.close())
        except Exception as exc:
            self._failure = exc

    def _raise_failure(self) -> UniEvent:
        failure = self._failure
        assert failure is not None
        self._failure = None
        self._state = PipelineState.ERROR
        self._sse.clear()
        self._feed_failure = None
        raise failure
