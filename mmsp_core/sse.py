"""Server-sent events: ``SSEEvent`` and the bounded, chunking-invariant ``SSEDecoder``.

Theory of operation (WHATWG HTML §9.2.6 "Interpreting an event stream"):

- ``SSEDecoder.feed`` appends the chunk to a ``bytearray``. At rest the buffer holds only the
  unterminated tail of the stream (no line ending), so a new chunk is searched for line endings
  from where it starts: each byte is searched once, whatever the chunk sizes.
- Everything up to the last line ending of the buffer is cut off in one piece, CRLF and CR are
  turned into LF, and the piece is split into lines, all on bytes. A CR that is the last byte of a
  chunk ends its line at once; a LF starting the next chunk is then dropped, as the second half
  of that CRLF.
- Lines are interpreted on bytes too (every byte the rules look at is ASCII, which UTF-8 never
  uses inside a multibyte character); only the values kept are decoded, with replacement. Data
  lines are kept as a list of byte strings and joined and decoded once, at dispatch, which gives
  the same text as decoding each line (LF ends every invalid sequence).
- A limit overflow is not raised at once: the events completed before the offending line are
  returned first and the error is kept for the next call (09), so the events and the error do not
  depend on where the bytes were cut.

``BodyDecoder`` has the same interface for responses that are one JSON body, not a stream.
"""

from __future__ import annotations

import contextlib
from typing import Final, NamedTuple, final

from .errors import StreamLimitError

__all__ = ["BodyDecoder", "SSEDecoder", "SSEEvent"]

_BOM: Final = b"\xef\xbb\xbf"
_LF: Final = 0x0A
_CR: Final = 0x0D


def _split_field(line: bytes) -> tuple[bytes, bytes]:
    """The name and value of a field line that is no comment (WHATWG §9.2.6): the value
    follows the first colon, less one leading space; a name alone has an empty value."""
    name, _, value = line.partition(b":")
    if value[:1] == b" ":
        value = value[1:]
    return name, value


class SSEEvent(NamedTuple):
    """One dispatched event of an event stream (WHATWG HTML §9.2).

    An internal value (08 D65): a named tuple, the cheapest immutable record to build once
    per event.
    """

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


class _Lifecycle:
    """Open until ``close`` or an error; a limit error is kept to be raised by the next call."""

    def __init__(self) -> None:
        self._open = True
        self._pending: StreamLimitError | None = None

    def _enter(self) -> None:
        """Raise the pending limit error, or ``RuntimeError`` once closed or failed."""
        if self._pending is not None:
            error, self._pending = self._pending, None
            self._open = False
            raise error
        if not self._open:
            raise RuntimeError(f"{type(self).__name__} used after close() or after an error")


@final
class SSEDecoder(_Lifecycle):
    """Decode an event stream (``text/event-stream``) from bytes in chunks of any size.

    Follows WHATWG HTML §9.2.6. ``max_line_bytes`` bounds one line (without its line ending),
    ``max_event_bytes`` the data of one event (its data lines joined by LF, as dispatched); both
    count raw bytes before decoding (08 D18).
    """

    def __init__(self, *, max_line_bytes: int = 16 << 20, max_event_bytes: int = 64 << 20) -> None:
        super().__init__()
        self._max_line = max_line_bytes
        self._max_event = max_event_bytes
        self._buf = bytearray()
        self._bom_checked = False
        self._skip_lf = False
        # The current event's data: ``None`` before its first data line, the line itself after
        # one, and a ``bytearray`` the next lines are appended to after two, so that what is
        # held stays close to the data's size however short the lines are (08 D18).
        self._data: bytes | bytearray | None = None
        # Bytes of data the current event would dispatch: each data line adds its length plus the
        # LF that joins it to the previous one, so it starts at -1.
        self._data_size = -1
        self._event_type = ""
        self._retry: int | None = None
        self._last_event_id: str | None = None

    @property
    def last_event_id(self) -> str | None:
        """The last ``id`` field seen (WHATWG "last event ID buffer"), ``None`` before any."""
        return self._last_event_id

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Take the next chunk of the stream and return the events it completes.

        ``b""`` is a no-op, never the end of input. Raises the ``StreamLimitError`` found by the
        previous call (``what`` "SSE line" or "SSE event"; 09), and ``RuntimeError`` after
        ``close`` or after an error.
        """
        if self._pending is not None or not self._open:
            self._enter()
        if not data:
            return []
        buf = self._buf
        if not buf and data[-1] == _LF and self._bom_checked and not self._skip_lf and (
            b"\r" not in data
        ):
            # The common shape: nothing held and a chunk of whole LF-ended lines (one event
            # per chunk, as providers send). The same steps as below without the copies.
            lines = data.split(b"\n")
            lines.pop()
            if len(data) > self._max_line and self._cut_at_long_line(lines):
                completed = self._interpret(lines)
                if self._pending is None:
                    self._fail_line()
                return completed
            return self._interpret(lines)
        start = len(buf)
        buf += data
        if self._skip_lf:
            # The previous chunk ended with a CR, which ended the line (and emptied the buffer).
            self._skip_lf = False
            if buf[0] == _LF:
                del buf[0]
        if not self._bom_checked:
            # One BOM at the very start of the stream is dropped (WHATWG §9.2.6, UTF-8 decode).
            if len(buf) < len(_BOM) and _BOM.startswith(buf):
                return []
            if buf.startswith(_BOM):
                del buf[: len(_BOM)]
            self._bom_checked = True
            start = 0
        end = max(buf.rfind(b"\n", start), buf.rfind(b"\r", start))  # the last line ending
        events: list[SSEEvent] = []
        if end >= 0:
            block = bytes(buf[: end + 1])
            del buf[: end + 1]
            self._skip_lf = block[-1] == _CR and not buf
            if b"\r" in block:
                block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            lines = block.split(b"\n")
            lines.pop()  # the empty string after the last LF
            too_long = len(block) > self._max_line and self._cut_at_long_line(lines)
            events = self._interpret(lines)
            if too_long and self._pending is None:
                self._fail_line()
        if self._pending is None and len(buf) > self._max_line:
            # Memory stays bounded: an over-long line is refused before its end arrives.
            self._fail_line()
        return events

    def close(self) -> list[SSEEvent]:
        """End the input and return the events it completes: always none.

        A CR was already taken as a line ending when it arrived, so nothing is left but an
        unterminated event, which is discarded (WHATWG §9.2.6: "any pending data must be
        discarded"; 08 D44). Raises the pending ``StreamLimitError``, and ``RuntimeError`` after
        ``close`` or after an error.
        """
        self._enter()
        self._open = False
        self._reset()
        return []

    def _cut_at_long_line(self, lines: list[bytes]) -> bool:
        """Drop the first line over ``max_line_bytes`` and all after it; say if there was one."""
        for index, line in enumerate(lines):
            if len(line) > self._max_line:
                del lines[index:]
                return True
        return False

    def _interpret(self, lines: list[bytes]) -> list[SSEEvent]:
        """Interpret complete lines (WHATWG §9.2.6) and return the events they dispatch.

        Stops at a data line that takes the event over ``max_event_bytes``, keeping the error
        for the next call.
        """
        events: list[SSEEvent] = []
        data = self._data
        size = self._data_size
        for line in lines:
            if not line:
                # A blank line dispatches the event if it has data, and resets the type anyway.
                if data is not None:
                    events.append(
                        SSEEvent(
                            self._event_type or "message",
                            data.decode("utf-8", "replace"),
                            self._last_event_id,
                            self._retry,
                        )
                    )
                    data = None
                    size = -1
                self._event_type = ""
                self._retry = None
                continue
            # Data lines are the common case: they are recognised first.
            if line[:6] == b"data: ":
                value = line[6:]
            elif line[:5] == b"data:":
                value = line[5:]
            elif line[:7] == b"event: ":  # the next most common: named events (Anthropic)
                self._event_type = line[7:].decode("utf-8", "replace")
                continue
            elif line[:1] == b":":  # a comment, such as a keep-alive
                continue
            else:
                name, value = _split_field(line)
                if name != b"data":
                    self._field(name, value)
                    continue
            size += len(value) + 1
            if size > self._max_event:
                self._fail("SSE event", self._max_event, size)
                return events
            if data is None:
                data = value
            else:
                if type(data) is bytes:
                    data = bytearray(data)
                data += b"\n"
                data += value
        self._data = data
        self._data_size = size
        return events

    def _field(self, name: bytes, value: bytes) -> None:
        """Apply an ``event``, ``id`` or ``retry`` field; ignore any other (WHATWG §9.2.6)."""
        if name == b"event":
            self._event_type = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._last_event_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            # More digits than Python converts (sys.get_int_max_str_digits) make no usable delay:
            # ignored like any other value that is not a number.
            with contextlib.suppress(ValueError):
                self._retry = int(value)

    def _fail_line(self) -> None:
        """Keep the error for an over-long line: ``size`` is limit + 1 however the line arrived."""
        self._fail("SSE line", self._max_line, self._max_line + 1)

    def _fail(self, what: str, limit: int, size: int) -> None:
        """Keep a limit error for the next call and drop the buffers."""
        self._pending = StreamLimitError(what, limit, size)
        self._reset()

    def _reset(self) -> None:
        """Drop the buffered line and the current event's data."""
        self._buf = bytearray()
        self._data = None
        self._data_size = -1


@final
class BodyDecoder(_Lifecycle):
    """Decoder for a response that is one JSON body (embeddings), with ``SSEDecoder``'s interface.

    ``close`` returns the whole body as the data of one ``SSEEvent`` (none for an empty body).
    """

    def __init__(self, *, max_body_bytes: int = 64 << 20) -> None:
        super().__init__()
        self._max_body = max_body_bytes
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Buffer a chunk of the body; return no event.

        Raises ``StreamLimitError`` ("response body", with ``size`` = limit + 1 whatever the
        chunks) as soon as the body exceeds ``max_body_bytes`` (08 D18), and ``RuntimeError``
        after ``close`` or after an error.
        """
        self._enter()
        self._buf += data
        if len(self._buf) > self._max_body:
            self._buf = bytearray()
            self._open = False
            raise StreamLimitError("response body", self._max_body, self._max_body + 1)
        return []

    def close(self) -> list[SSEEvent]:
        """End the input; return the body decoded as UTF-8 with replacement as one event.

        Raises ``RuntimeError`` after ``close`` or after an error.
        """
        self._enter()
        self._open = False
        body, self._buf = self._buf, bytearray()
        return [SSEEvent(data=body.decode("utf-8", "replace"))] if body else []
