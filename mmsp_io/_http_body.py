"""An HTTP/1.1 response body decoder with no I/O: bytes in, body chunks out (RFC 9112 §6-7).

The library's own transport (``mmsp_io._transport``) parses a response head with h11, then
decodes the body with this instead of h11's per-event machinery: a streamed answer is tens of
thousands of HTTP chunks, and h11 builds an event object, a buffer slice and a validation pass
for each (about 4 µs a chunk, as much as the whole MMSP pipeline). This decoder accepts what
h11 accepts and refuses what it refuses (a chunk-size line of 1-20 hex digits with an optional
extension and CRLF, chunk data followed by CRLF, trailer fields up to a blank line, checked by
h11 itself), and hands a chunk out as one ``bytes`` slice of what was received.

Theory of operation: ``receive_data`` appends to one buffer, ``next_chunk`` hands out the next
piece of body (``NEED_DATA`` when it needs more bytes, ``END`` once the body is whole), and
``receive_eof`` says the connection closed. The framing is fixed when the reader is made
(``framing_of``): chunked, a ``Content-Length``, or until the connection closes. A chunked body
is a machine of five states, each reading one thing and naming the state after it:

=========  ====================  =========================================
state      reads                 then
=========  ====================  =========================================
SIZE       a chunk-size line     DATA (size > 0) or TRAILER (size 0)
DATA       the chunk's bytes     DATA_END once all are handed out
DATA_END   the CRLF after them   SIZE
TRAILER    the trailer section   DONE after its blank line
DONE       nothing               (``END``; bytes after it: not reusable)
=========  ====================  =========================================

The common case, a whole chunk and its CRLF already received, is read in one step from SIZE.
Data is handed out as it arrives, however large the chunk, so the buffer holds at most one
read plus an incomplete line. A chunk-size line with its CRLF, or a trailer section with its
blank line, longer than ``MAX_LINE_BYTES`` is an error, the same however the bytes arrive.

An incomplete chunk-size line or trailer section costs linear time however it trickles in: the
search for its end resumes where the previous one stopped, and once it waits for more bytes at
the start of the buffer (it waited before, or its read brought nothing else) it is gathered in
a ``bytearray`` that the next bytes are appended to (no copy of what is held per read), which
becomes the ``bytes`` buffer again once it is whole. The buffer is otherwise the ``bytes``
received, so that a piece of body is one slice of it; a read that ends inside a chunk-size
line after whole chunks (the common split) costs one copy of that line's start at the next
read, and the chunk is then read in one step.
"""

from __future__ import annotations

import re
from typing import Final, final

import h11

__all__ = [
    "BLANK_LINE",
    "CHUNKED",
    "END",
    "LENGTH",
    "MAX_LINE_BYTES",
    "NEED_DATA",
    "UNTIL_CLOSE",
    "BodyError",
    "BodyReader",
    "framing_of",
]


@final
class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: ``next_chunk``: more bytes are needed before the next piece of body.
NEED_DATA: Final = _Sentinel("NEED_DATA")
#: ``next_chunk``: the body is whole.
END: Final = _Sentinel("END")

#: The framings of a response body (RFC 9112 §6.3).
CHUNKED: Final = "chunked"
LENGTH: Final = "length"
UNTIL_CLOSE: Final = "until-close"

#: The longest chunk-size line (with its CRLF) or trailer section (with its blank line) read
#: (h11's default limit on what it holds incomplete is 16 KiB; httpcore raises it to 100 KiB).
MAX_LINE_BYTES: Final = 100 * 1024

# The chunked machine's states (module doc).
_SIZE: Final = 0
_DATA: Final = 1
_DATA_END: Final = 2
_TRAILER: Final = 3
_DONE: Final = 4

#: A chunk-size line without its CRLF, as h11 reads it.
_CHUNK_SIZE: Final = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*")
#: The blank line that ends a head or a trailer section, as h11 finds it.
BLANK_LINE: Final = re.compile(rb"\n\r?\n")


class BodyError(Exception):
    """The body broke its framing, or the connection closed before it was whole."""


def framing_of(method: bytes, response: h11.Response) -> tuple[str, int]:
    """The framing of ``response``'s body to a ``method`` request and, for ``LENGTH``, its
    length (RFC 9112 §6.3, as h11 decides it: h11 has already refused a ``Transfer-Encoding``
    other than ``chunked`` and conflicting ``Content-Length`` values)."""
    if method == b"HEAD" or response.status_code in (204, 304):
        return LENGTH, 0
    length: int | None = None
    for name, value in response.headers:
        if name == b"transfer-encoding":
            return CHUNKED, 0
        if name == b"content-length":
            length = int(value)
    return (UNTIL_CLOSE, 0) if length is None else (LENGTH, length)


@final
class BodyReader:
    """Decodes one response body (module doc).

    Args:
        framing: ``CHUNKED``, ``LENGTH`` or ``UNTIL_CLOSE``.
        length: the body's length, for ``LENGTH``.
        data: bytes already received after the head.
    """

    __slots__ = ("_buffer", "_eof", "_framing", "_line", "_position", "_remaining", "_scan",
                 "_state", "trailing")

    def __init__(self, framing: str, length: int = 0, data: bytes = b"") -> None:
        self._framing = framing
        self._buffer = data
        self._position = 0
        #: Where the search for the end of the line (or trailer section) at ``_position``
        #: resumes: the bytes before it were searched already.
        self._scan = 0
        #: An incomplete chunk-size line or trailer section being gathered, in place of
        #: ``_buffer`` (module doc); ``None`` otherwise.
        self._line: bytearray | None = None
        #: Bytes of the current chunk (``CHUNKED``) or of the body (``LENGTH``) not yet read.
        self._remaining = length
        self._state = _SIZE
        self._eof = False
        #: Whether bytes arrived after the end of the body (the connection is then not
        #: reusable: its next answer would start with them).
        self.trailing = False

    @property
    def reusable(self) -> bool:
        """Whether the connection can carry another exchange: the body ended by its framing,
        not by the connection closing, and nothing followed it."""
        return self.can_end and not self.trailing and self._finished()

    @property
    def can_end(self) -> bool:
        """Whether the body can still end by its framing (not by the connection closing)."""
        return self._framing != UNTIL_CLOSE and not self._eof

    def _finished(self) -> bool:
        if self._framing == CHUNKED:
            return self._state == _DONE
        return self._framing == LENGTH and self._remaining == 0

    def receive_data(self, data: bytes) -> None:
        """Add bytes received from the connection: appended to an incomplete line being
        gathered, else after the bytes not read yet (module doc)."""
        line = self._line
        if line is not None:
            line += data
            return
        position = self._position
        if position:
            self._buffer = self._buffer[position:] + data
            self._position = 0
            self._scan -= position
        else:
            self._buffer += data

    def receive_eof(self) -> None:
        """Say that the connection closed: no byte follows."""
        self._eof = True

    def next_chunk(self) -> bytes | _Sentinel:
        """The next piece of body, ``NEED_DATA`` or ``END``.

        Raises:
            BodyError: the body broke its framing (a bad chunk-size line, chunk data not
                followed by CRLF, a line longer than ``MAX_LINE_BYTES``), or the connection
                closed before it was whole.
        """
        if self._framing == CHUNKED:
            if self._state == _SIZE:
                # The common case in one step: a whole chunk and its CRLF are here.
                buffer = self._buffer
                start = self._position
                line_end = buffer.find(b"\r\n", self._scan)
                if 0 <= line_end < start + MAX_LINE_BYTES - 1:
                    match = _CHUNK_SIZE.fullmatch(buffer, start, line_end)
                    if match is not None:
                        size = int(match[1], 16)
                        data_start = line_end + 2
                        data_end = data_start + size
                        if size and buffer[data_end:data_end + 2] == b"\r\n":
                            self._position = self._scan = data_end + 2
                            return buffer[data_start:data_end]
            return self._next_chunked()
        if self._framing == LENGTH:
            return self._next_counted()
        return self._next_until_close()

    # -- chunked -----------------------------------------------------------------------------

    def _next_chunked(self) -> bytes | _Sentinel:
        while True:
            result = _CHUNKED_STEPS[self._state](self)
            if result is not None:
                return result

    def _size(self) -> bytes | _Sentinel | None:
        line = self._line
        held = self._buffer if line is None else line
        position = self._position
        line_end = held.find(b"\r\n", self._scan)
        if line_end < 0:
            self._scan = max(position, len(held) - 1)  # a CR at the end may start the CRLF
            return self._need(len(held) - position)
        if line_end + 2 - position > MAX_LINE_BYTES:
            raise _too_long("chunk-size line")
        buffer = self._buffer if line is None else self._whole()
        match = _CHUNK_SIZE.fullmatch(buffer, position, line_end)
        if match is None:
            raise BodyError(f"illegal chunk header: {buffer[position:line_end][:64]!r}")
        self._remaining = int(match[1], 16)
        self._moved_to(line_end + 2)
        self._state = _DATA if self._remaining else _TRAILER
        return None

    def _data(self) -> bytes | _Sentinel | None:
        available = len(self._buffer) - self._position
        if not available:
            return self._need(0)
        take = min(available, self._remaining)
        start = self._position
        self._moved_to(start + take)
        self._remaining -= take
        if not self._remaining:
            self._state = _DATA_END
        return self._buffer[start:start + take]

    def _data_end(self) -> bytes | _Sentinel | None:
        buffer = self._buffer
        position = self._position
        if len(buffer) - position < 2:
            if buffer[position:] not in (b"", b"\r"):
                raise BodyError(f"malformed chunk footer: {buffer[position:]!r}")
            return self._need(0)
        if buffer[position:position + 2] != b"\r\n":
            raise BodyError(f"malformed chunk footer: {buffer[position:position + 2]!r}")
        self._moved_to(position + 2)
        self._state = _SIZE
        return None

    def _trailer(self) -> bytes | _Sentinel | None:
        line = self._line
        held = self._buffer if line is None else line
        position = self._position
        if held.startswith(b"\r\n", position):
            end = position + 2
        elif held.startswith(b"\n", position):
            end = position + 1
        else:
            # A blank line may start in the last two bytes already searched.
            blank = BLANK_LINE.search(held, max(position, self._scan - 2))
            if blank is None:
                self._scan = len(held)
                return self._need(len(held) - position)
            end = blank.end()
            if end - position > MAX_LINE_BYTES:
                raise _too_long("trailer section")
            _check_trailer(self._whole()[position:end])
        self._whole()
        self._moved_to(end)
        self._state = _DONE
        return None

    def _done(self) -> bytes | _Sentinel | None:
        if len(self._buffer) > self._position:
            self.trailing = True
        return END

    def _moved_to(self, position: int) -> None:
        self._position = self._scan = position

    def _whole(self) -> bytes:
        """The buffer, once the line being gathered (if any) is whole: ``bytes`` again."""
        line = self._line
        if line is not None:
            self._buffer = bytes(line)
            self._line = None
        return self._buffer

    def _need(self, held: int) -> _Sentinel:
        """``NEED_DATA``, or the error of a body that cannot get it (``held`` bytes of an
        incomplete line or trailer section are waiting: with at least one byte more to come,
        past ``held + 1 > MAX_LINE_BYTES`` it can only end too long). Those bytes are then
        gathered in a ``bytearray`` when they start the buffer (module doc)."""
        if held >= MAX_LINE_BYTES:
            raise _too_long("chunk-size line or trailer section")
        if self._eof:
            raise BodyError("peer closed connection without sending complete message body "
                            "(incomplete chunked read)")
        if held and self._position == 0 and self._line is None:
            self._line = bytearray(self._buffer)
            self._buffer = b""
        return NEED_DATA

    # -- Content-Length and until close ------------------------------------------------------

    def _next_counted(self) -> bytes | _Sentinel:
        remaining = self._remaining
        buffer = self._buffer
        start = self._position
        if not remaining:
            if len(buffer) > start:
                self.trailing = True
            return END
        available = len(buffer) - start
        if not available:
            if self._eof:
                raise BodyError("peer closed connection without sending complete message "
                                f"body ({remaining} more bytes expected)")
            return NEED_DATA
        take = min(available, remaining)
        self._remaining = remaining - take
        self._moved_to(start + take)
        return buffer[start:start + take] if start or take < len(buffer) else buffer

    def _next_until_close(self) -> bytes | _Sentinel:
        buffer = self._buffer
        start = self._position
        if len(buffer) > start:
            self._moved_to(len(buffer))
            return buffer[start:] if start else buffer
        return END if self._eof else NEED_DATA


def _too_long(what: str) -> BodyError:
    return BodyError(f"a chunked body's {what} is longer than {MAX_LINE_BYTES} bytes")


def _check_trailer(section: bytes) -> None:
    """Refuse a trailer section (its lines and the blank line) that h11 refuses: h11 reads
    trailer fields as it reads a head's, so it is given them as the fields of a response head.

    Raises:
        BodyError: h11 refuses the fields.
    """
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="GET", target="/", headers=[("host", "trailer")]))
    connection.send(h11.EndOfMessage())
    connection.receive_data(b"HTTP/1.1 200 OK\r\n" + section)
    try:
        connection.next_event()
    except h11.RemoteProtocolError as exc:
        raise BodyError(f"illegal trailer: {exc}") from exc


#: The chunked machine's transition table: each state's step (module doc). A step returns
#: what ``next_chunk`` hands out, or ``None`` when it moved to another state to run at once.
_CHUNKED_STEPS: Final = {
    _SIZE: BodyReader._size,
    _DATA: BodyReader._data,
    _DATA_END: BodyReader._data_end,
    _TRAILER: BodyReader._trailer,
    _DONE: BodyReader._done,
}
