"""Faults: what goes wrong on the wire, passed as ``Reply(..., fault=...)``.

A fault shapes how the simulator sends the answer a ``Reply`` describes, whatever that answer
is (rendered items, a recorded body): it cuts it, splits it, pads it, pauses it or leaves the
socket in a bad state. Each is made by one function of this module (listed below), e.g.::

    sim.script.append(Reply(items=[TextDone("Hi")], fault=faults.cut(after_events=2)))

- ``cut(after_events=K)``, ``cut(at_byte=N)``: the connection closes there;
  ``IncompleteStreamError``.
- ``reset(after_events=K)``: a TCP reset after K events; ``IncompleteStreamError`` chained
  from the transport's error.
- ``error_event(after_events=K)``: the provider's in-stream error after K events
  (``SimulatorDialect.stream_error``); ``ProviderStreamError`` (a gateway's ``UpstreamError``
  on mmsp).
- ``stall(seconds, after_events=K)``: nothing for ``seconds`` after K events; a
  ``StreamTimeoutError`` when the call's ``Timeouts`` are shorter.
- ``split_characters()``: every multi-byte UTF-8 character split across two writes; the
  complete stream.
- ``keepalive_flood(n)``: ``n`` SSE comments before every event; the complete stream.
- ``ping_flood(n)``: ``n`` of the provider's own ping events (``SimulatorDialect.ping``) before
  every event; the complete stream.
- ``trickle()``: one byte per write; the complete stream.
- ``hold_open()``: every byte sent, the socket kept open without ending the body; the complete
  stream where the protocol has a terminal event (08 D56), else the ``idle`` timeout.

A fault that needs what a framing lacks raises ``FaultMisfit`` when the simulator applies it,
and the client then gets a 500 naming it: SSE comments on a JSON body or AWS event stream
(``keepalive_flood``), a ping on a protocol that has none (``ping_flood``), events inside one
JSON body (``after_events`` other than 0 on an embedding answer).

A fault is any object with a ``steps(answer) -> list[Step]`` method (``Fault``): the answer's
events in, the writes, pauses and hang-ups the simulator plays out. The simulator's ``delay``
still comes before each write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol, TypeAlias, final

import attrs

import adapters

__all__ = [
    "Answer",
    "Fault",
    "FaultMisfit",
    "Hangup",
    "Hold",
    "Pause",
    "Step",
    "cut",
    "error_event",
    "hold_open",
    "keepalive_flood",
    "ping_flood",
    "reset",
    "split_characters",
    "stall",
    "trickle",
]

#: The SSE comment of a keep-alive flood (spec: comment lines are ignored).
KEEPALIVE_COMMENT: Final = b": keep-alive\n\n"


class FaultMisfit(ValueError):
    """A fault makes no sense for the answer it is applied to (the module docstring)."""


@final
@attrs.frozen
class Answer:
    """The answer a fault shapes."""

    #: Its events in order, each with its delimiter (an SSE event with its blank line, a frame
    #: of a binary framing); a one-body answer (JSON) is one event.
    events: tuple[bytes, ...]
    #: Whether it is an SSE stream (comments are allowed between its events).
    sse: bool
    #: Whether it is one body (JSON) rather than a stream of events.
    one_body: bool
    #: The protocol's simulator dialect: its ping and in-stream error.
    dialect: adapters.SimulatorDialect
    #: The protocol's name, for the errors of a fault that makes no sense on it.
    protocol: str


@final
@attrs.frozen
class Pause:
    """Send nothing for ``seconds``."""

    seconds: float


@final
@attrs.frozen
class Hangup:
    """Close the connection now, the body unfinished; with ``reset``, with a TCP reset."""

    reset: bool = False


@final
@attrs.frozen
class Hold:
    """Keep the connection open without ending the body, until the client leaves."""


#: One thing the simulator does while answering: write bytes, pause, hang up, hold.
Step: TypeAlias = bytes | Pause | Hangup | Hold


class Fault(Protocol):
    """How an answer is sent: its events in, the steps the simulator plays out."""

    def steps(self, answer: Answer) -> list[Step]:
        """The writes, pauses and hang-ups that send ``answer``.

        Raises:
            FaultMisfit: the fault makes no sense for ``answer``'s framing.
        """
        ...


def _at_least_0(name: str, value: float) -> None:
    """Check a fault's count or seconds.

    Raises:
        ValueError: ``value`` is negative, naming ``name``.
    """
    if value < 0:
        raise ValueError(f"{name} must be at least 0, got {value}")


def _events_before(answer: Answer, after_events: int) -> tuple[list[Step], list[Step]]:
    """``answer``'s events split after the first ``after_events`` (a one-body answer has no
    event boundary inside it: only 0 makes sense there).

    Raises:
        FaultMisfit: a count other than 0 on a one-body answer.
    """
    if answer.one_body and after_events != 0:
        raise FaultMisfit(f"{answer.protocol} answers with one JSON body, which has no events: "
                         "only after_events=0 applies")
    return list(answer.events[:after_events]), list(answer.events[after_events:])


@final
@attrs.frozen
class _Cut:
    after_events: int | None
    at_byte: int | None

    def steps(self, answer: Answer) -> list[Step]:
        if self.at_byte is not None:
            return [b"".join(answer.events)[: self.at_byte], Hangup()]
        assert self.after_events is not None  # ``cut`` takes exactly one of the two
        kept, _ = _events_before(answer, self.after_events)
        return [*kept, Hangup()]


def cut(*, after_events: int | None = None, at_byte: int | None = None) -> Fault:
    """Close the connection after ``after_events`` events, or after ``at_byte`` body bytes
    (a cut inside an event, a frame or a multi-byte character is allowed).

    Raises:
        ValueError: neither or both given, or a negative value.
    """
    if (after_events is None) == (at_byte is None):
        raise ValueError("cut takes exactly one of after_events and at_byte")
    _at_least_0("at_byte" if at_byte is not None else "after_events", at_byte or after_events or 0)
    return _Cut(after_events, at_byte)


@final
@attrs.frozen
class _SplitCharacters:
    def steps(self, answer: Answer) -> list[Step]:
        body = b"".join(answer.events)
        writes: list[Step] = []
        start = 0
        for index, byte in enumerate(body):
            if byte >= 0xC0:  # the lead byte of a multi-byte character: cut right after it
                writes.append(body[start : index + 1])
                start = index + 1
        writes.append(body[start:])
        return writes


def split_characters() -> Fault:
    """Write the body so that every multi-byte UTF-8 character is split across two writes
    (after its lead byte): harmless, the client reassembles bytes before decoding text."""
    return _SplitCharacters()


def _padded(answer: Answer, filler: bytes, count: int) -> list[Step]:
    """``count`` copies of ``filler`` before every event of ``answer``."""
    return [step for event in answer.events for step in (filler * count, event)]


@final
@attrs.frozen
class _KeepaliveFlood:
    count: int

    def steps(self, answer: Answer) -> list[Step]:
        if not answer.sse:
            raise FaultMisfit(f"{answer.protocol} is not an SSE stream: it has no comments")
        return _padded(answer, KEEPALIVE_COMMENT, self.count)


def keepalive_flood(count: int = 1000) -> Fault:
    """Send ``count`` SSE keep-alive comments (``: keep-alive``) before every event: harmless
    (comments are ignored, and the client's buffers do not grow with them).

    Raises:
        ValueError: a negative count.
    """
    _at_least_0("count", count)
    return _KeepaliveFlood(count)


@final
@attrs.frozen
class _PingFlood:
    count: int

    def steps(self, answer: Answer) -> list[Step]:
        if answer.dialect.ping is None:
            raise FaultMisfit(f"{answer.protocol} has no ping event")
        return _padded(answer, answer.dialect.ping, self.count)


def ping_flood(count: int = 1000) -> Fault:
    """Send ``count`` of the provider's own ping events (``SimulatorDialect.ping``: Anthropic's
    ``ping``, Responses' ``keepalive``, Gemini's empty chunk) before every event: harmless,
    even in strict mode (the machines know them).

    Raises:
        ValueError: a negative count.
    """
    _at_least_0("count", count)
    return _PingFlood(count)


@final
@attrs.frozen
class _ErrorEvent:
    after_events: int

    def steps(self, answer: Answer) -> list[Step]:
        kept, _ = _events_before(answer, self.after_events)
        return [*kept, answer.dialect.stream_error]


def error_event(*, after_events: int = 1) -> Fault:
    """Send ``after_events`` events, then the provider's in-stream error in its own form
    (``SimulatorDialect.stream_error``, an overload, 08 D4) and end the body.

    Raises:
        ValueError: a negative count.
    """
    _at_least_0("after_events", after_events)
    return _ErrorEvent(after_events)


@final
@attrs.frozen
class _Stall:
    seconds: float
    after_events: int

    def steps(self, answer: Answer) -> list[Step]:
        before, after = _events_before(answer, self.after_events)
        return [*before, Pause(self.seconds), *after]


def stall(seconds: float, *, after_events: int = 1) -> Fault:
    """Send ``after_events`` events, send nothing for ``seconds``, then send the rest.

    Raises:
        ValueError: a negative number of seconds or events.
    """
    _at_least_0("seconds", seconds)
    _at_least_0("after_events", after_events)
    return _Stall(seconds, after_events)


@final
@attrs.frozen
class _Trickle:
    def steps(self, answer: Answer) -> list[Step]:
        body = b"".join(answer.events)
        return [body[i : i + 1] for i in range(len(body))]


def trickle() -> Fault:
    """Write the body one byte at a time: harmless."""
    return _Trickle()


@final
@attrs.frozen
class _Reset:
    after_events: int

    def steps(self, answer: Answer) -> list[Step]:
        kept, _ = _events_before(answer, self.after_events)
        return [*kept, Hangup(reset=True)]


def reset(*, after_events: int = 1) -> Fault:
    """Send ``after_events`` events, then reset the connection (a TCP RST, as a crashed peer
    or a middlebox sends).

    Raises:
        ValueError: a negative count.
    """
    _at_least_0("after_events", after_events)
    return _Reset(after_events)


@final
@attrs.frozen
class _HoldOpen:
    def steps(self, answer: Answer) -> list[Step]:
        return [*answer.events, Hold()]


def hold_open() -> Fault:
    """Send every event, then keep the socket open without ending the body: a client that
    stops at the protocol's terminal event (08 D56) completes; one that waits for the end of
    the body waits until its ``idle`` timeout."""
    return _HoldOpen()


def declared_length(steps: Sequence[Step]) -> int | None:
    """The ``content-length`` a one-body answer played as ``steps`` declares: the bytes it
    sends, or ``None`` (a chunked body) when it hangs up, so that the cut shows."""
    if any(isinstance(step, Hangup) for step in steps):
        return None
    return sum(len(step) for step in steps if isinstance(step, bytes))
