"""The AWS event-stream framing: ``EventStreamDecoder``, ``EventStreamMessage``, ``encode_message``.

Amazon's streaming APIs (Bedrock's ``InvokeModelWithResponseStream``, 08 D72) answer with binary
messages, not SSE: this is the one framing that lives in the core beside ``mmsp_core.sse``.
Every integer is big-endian. A message is

- a 12-byte prelude: the total length of the message (u32), the length of its headers (u32)
  and the CRC32 of those 8 bytes (u32);
- its headers, one after another: the length of the name (u8), the name (UTF-8), the type of
  the value (u8, ``HeaderType``) and the value: nothing for the two booleans, 1, 2, 4 or 8
  bytes for the integers and the timestamp, 16 bytes for a UUID, a u16 length and that many
  bytes for a byte array or a string;
- the payload: the bytes between the headers and
- the message CRC: the CRC32 of everything before it (u32).

Theory of operation: ``EventStreamDecoder.feed`` scans the bytes held from the previous call
followed by the chunk (the chunk itself, without a copy, when nothing is held). A message is
judged by its prelude as soon as its 12 bytes are there, so a length over a limit is refused
before the rest of the message arrives; the message is cut off, checked and decoded once all
its bytes are there. Between calls only the bytes of one unfinished message are held. As in
``SSEDecoder``, an error is raised once the messages before it have been returned, so the
messages and the error do not depend on where the bytes were cut.
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Iterable
from typing import Final, TypeAlias, final

import attrs

from .errors import IncompleteStreamError, MalformedEventError, MMSPError, StreamLimitError

__all__ = [
    "EventHeader",
    "EventStreamDecoder",
    "EventStreamMessage",
    "HeaderType",
    "HeaderValue",
    "encode_message",
]

_PRELUDE: Final = struct.Struct("!III")
_LENGTHS: Final = struct.Struct("!II")
_U16: Final = struct.Struct("!H")
_U32: Final = struct.Struct("!I")
_PRELUDE_SIZE: Final = _PRELUDE.size
#: The smallest message: a prelude and the message CRC, with no header and no payload.
_MIN_MESSAGE: Final = _PRELUDE_SIZE + _U32.size
_MAX_NAME: Final = 0xFF
_MAX_VARIABLE: Final = 0xFFFF
_MAX_TOTAL: Final = 0xFFFFFFFF
#: What a stream cut inside a message leaves out, for ``IncompleteStreamError`` (03 §2: the
#: framing cannot tell which of the two the lost bytes carried).
_CUT: Final = ("usage_metadata", "finish_reason")


class HeaderType(enum.IntEnum):
    """The type byte of a header value, as the event-stream encoding numbers them."""

    TRUE = 0
    FALSE = 1
    BYTE = 2
    SHORT = 3
    INTEGER = 4
    LONG = 5
    BYTE_ARRAY = 6
    STRING = 7
    TIMESTAMP = 8
    UUID = 9


#: A header value: ``bool`` for ``TRUE`` and ``FALSE``; ``int`` for the four integers and the
#: timestamp (milliseconds since the Unix epoch); ``bytes`` for a byte array and a UUID (its 16
#: bytes); ``str`` for a string.
HeaderValue: TypeAlias = bool | int | bytes | str

#: The size of each fixed-size value; a byte array and a string carry a u16 length instead.
_FIXED_SIZE: Final = {
    HeaderType.TRUE: 0,
    HeaderType.FALSE: 0,
    HeaderType.BYTE: 1,
    HeaderType.SHORT: 2,
    HeaderType.INTEGER: 4,
    HeaderType.LONG: 8,
    HeaderType.TIMESTAMP: 8,
    HeaderType.UUID: 16,
}


@final
@attrs.frozen(slots=True)
class EventHeader:
    """One header of a message: its name, its value and the type the value travels as.

    ``type`` may be left out for a ``bool`` (``TRUE`` or ``FALSE``), an ``int`` (``LONG``),
    ``bytes`` (``BYTE_ARRAY``) and a ``str`` (``STRING``); a narrower integer, a timestamp and
    a UUID name their type.
    """

    name: str
    value: HeaderValue
    type: HeaderType = attrs.field()

    @type.default
    def _type_of_value(self) -> HeaderType:
        value = self.value
        if isinstance(value, bool):
            return HeaderType.TRUE if value else HeaderType.FALSE
        if isinstance(value, int):
            return HeaderType.LONG
        return HeaderType.BYTE_ARRAY if isinstance(value, bytes) else HeaderType.STRING


@final
@attrs.frozen(slots=True)
class EventStreamMessage:
    """One decoded message: its headers in the order they came, and its payload."""

    headers: tuple[EventHeader, ...] = ()
    payload: bytes = b""

    def header(self, name: str) -> HeaderValue | None:
        """The value of the header ``name`` (Bedrock's ``:message-type``, ``:event-type``,
        ``:exception-type``...), ``None`` when the message has none."""
        for header in self.headers:
            if header.name == name:
                return header.value
        return None


@final
class EventStreamDecoder:
    """Decode an AWS event stream from bytes in chunks of any size (module doc).

    ``client`` is the name errors carry. ``max_message_bytes`` bounds the total length of one
    message (AWS's own maximum is 16 MB), ``max_header_bytes`` the headers of one message
    (AWS's maximum is 128 KiB); a prelude that announces more raises ``StreamLimitError``
    (``what`` "event-stream message" or "event-stream headers", ``size`` the length announced;
    08 D18) before the rest of the message arrives.
    """

    def __init__(
        self,
        client: str = "event-stream",
        *,
        max_message_bytes: int = 16 << 20,
        max_header_bytes: int = 128 << 10,
    ) -> None:
        self._client = client
        self._max_message = max_message_bytes
        self._max_headers = max_header_bytes
        self._buf = bytearray()
        self._count = 0  # messages decoded so far: the index of the next one
        self._offset = 0  # the position in the stream of the first byte held
        self._open = True
        self._pending: MMSPError | None = None

    def feed(self, data: bytes) -> list[EventStreamMessage]:
        """Take the next chunk of the stream and return the messages it completes.

        ``b""`` is a no-op, never the end of input. An error in the bytes is raised once the
        messages before it have been returned: at once when the chunk completes none, else by
        the next call.

        Raises:
            MalformedEventError: a prelude or message CRC that does not match, lengths no
                message can have, or headers that do not decode (an unknown type, a value
                running past the headers, a name or string that is not UTF-8, a name twice).
            StreamLimitError: a message or its headers longer than the limits.
            RuntimeError: after ``end`` or after an error.
        """
        self._enter()
        if not data:
            return []
        held = self._buf
        if held:
            held += data
        source = held if held else data
        messages: list[EventStreamMessage] = []
        error: MMSPError | None = None
        with memoryview(source) as view:
            try:
                used = self._scan(view, messages)
            except MMSPError as exc:
                error = exc
        if error is not None:
            self._buf = bytearray()
            self._open = False
            if not messages:
                raise error
            self._pending = error
            return messages
        if source is held:
            del held[:used]
        else:
            held += data[used:]
        self._offset += used
        return messages

    def end(self) -> None:
        """End the input.

        Raises:
            IncompleteStreamError: the stream stopped inside a message (it was cut; 08 D19);
                ``missing`` is ``("usage_metadata", "finish_reason")`` as the framing cannot
                tell what the lost bytes carried, and ``detail`` says where it stopped.
            MalformedEventError, StreamLimitError: the error the last ``feed`` kept.
            RuntimeError: after ``end`` or after an error.
        """
        self._enter()
        self._open = False
        held, self._buf = self._buf, bytearray()
        if not held:
            return
        if len(held) < _PRELUDE_SIZE:
            where = f"{len(held)} bytes into the prelude"
        else:
            where = f"after {len(held)} of its {_U32.unpack_from(held)[0]} bytes"
        raise IncompleteStreamError(
            self._client,
            _CUT,
            detail=f"the stream ended inside event-stream message {self._count}, {where}",
        )

    def _enter(self) -> None:
        """Raise the error kept by the last ``feed``, or ``RuntimeError`` once closed."""
        if self._pending is not None:
            error, self._pending = self._pending, None
            raise error
        if not self._open:
            raise RuntimeError("EventStreamDecoder used after end() or after an error")

    def _scan(self, view: memoryview, out: list[EventStreamMessage]) -> int:
        """Append the whole messages at the start of ``view`` to ``out``; return their size.

        What follows them is the start of one unfinished message, whose prelude, once there,
        has been checked. Raises what ``feed`` documents.
        """
        start = 0
        while len(view) - start >= _PRELUDE_SIZE:
            total, header_size = self._prelude(view, start)
            if len(view) - start < total:
                break
            out.append(self._message(view[start : start + total], header_size, start))
            self._count += 1
            start += total
        return start

    def _prelude(self, view: memoryview, start: int) -> tuple[int, int]:
        """Check the prelude at ``start``; return the message's total and header lengths."""
        total, header_size, crc = _PRELUDE.unpack_from(view, start)
        computed = zlib.crc32(view[start : start + _LENGTHS.size])
        if crc != computed:
            raise self._malformed(start, f"prelude CRC32 {crc:#010x}, computed {computed:#010x}")
        if total < _MIN_MESSAGE or header_size > total - _MIN_MESSAGE:
            raise self._malformed(
                start,
                f"a total length of {total} bytes cannot hold the prelude, {header_size} bytes "
                "of headers and the message CRC",
            )
        if total > self._max_message:
            raise StreamLimitError("event-stream message", self._max_message, total)
        if header_size > self._max_headers:
            raise StreamLimitError("event-stream headers", self._max_headers, header_size)
        return total, header_size

    def _message(self, view: memoryview, header_size: int, start: int) -> EventStreamMessage:
        """Check the message CRC of the message ``view`` (at ``start``) and decode it."""
        crc_at = len(view) - _U32.size
        (crc,) = _U32.unpack_from(view, crc_at)
        computed = zlib.crc32(view[:crc_at])
        if crc != computed:
            raise self._malformed(start, f"message CRC32 {crc:#010x}, computed {computed:#010x}")
        headers_end = _PRELUDE_SIZE + header_size
        headers = self._headers(view[_PRELUDE_SIZE:headers_end], start)
        return EventStreamMessage(headers, bytes(view[headers_end:crc_at]))

    def _headers(self, view: memoryview, start: int) -> tuple[EventHeader, ...]:
        """Decode the headers block ``view`` of the message at ``start``."""
        headers: list[EventHeader] = []
        names: set[str] = set()
        end = len(view)
        pos = 0
        while pos < end:
            type_at = pos + 1 + view[pos]
            if type_at >= end:
                raise self._malformed(start, f"header {len(headers)} runs past the headers")
            name = self._text(view[pos + 1 : type_at], start, "a header name")
            if view[type_at] > HeaderType.UUID:
                raise self._malformed(
                    start, f"the header {name!r} has the unknown type {view[type_at]}"
                )
            kind = HeaderType(view[type_at])
            pos = type_at + 1
            if kind in _FIXED_SIZE:
                size = _FIXED_SIZE[kind]
            else:  # a byte array or a string: its length comes first
                if pos + _U16.size > end:
                    raise self._malformed(start, f"the header {name!r} runs past the headers")
                (size,) = _U16.unpack_from(view, pos)
                pos += _U16.size
            if pos + size > end:
                raise self._malformed(start, f"the header {name!r} runs past the headers")
            if name in names:
                raise self._malformed(start, f"the header {name!r} appears twice")
            names.add(name)
            headers.append(self._header(name, kind, view[pos : pos + size], start))
            pos += size
        return tuple(headers)

    def _header(
        self, name: str, kind: HeaderType, raw: memoryview, start: int
    ) -> EventHeader:
        """The header ``name`` whose value of type ``kind`` is the bytes ``raw``."""
        value: HeaderValue
        if kind is HeaderType.TRUE or kind is HeaderType.FALSE:
            value = kind is HeaderType.TRUE
        elif kind is HeaderType.STRING:
            value = self._text(raw, start, f"the value of the header {name!r}")
        elif kind is HeaderType.BYTE_ARRAY or kind is HeaderType.UUID:
            value = bytes(raw)
        else:
            value = int.from_bytes(raw, "big", signed=True)
        return EventHeader(name, value, kind)

    def _text(self, raw: memoryview, start: int, what: str) -> str:
        """``raw`` decoded as UTF-8; ``MalformedEventError`` naming ``what`` if it is not."""
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError:
            raise self._malformed(start, f"{what} is not UTF-8") from None

    def _malformed(self, start: int, detail: str) -> MalformedEventError:
        """The error for the message that starts ``start`` bytes into the held bytes."""
        return MalformedEventError(
            self._client,
            f"event-stream message {self._count} at byte {self._offset + start}",
            detail=detail,
        )


def encode_message(headers: Iterable[EventHeader] = (), payload: bytes = b"") -> bytes:
    """Encode one event-stream message (module doc), CRCs included.

    Raises:
        ValueError: a header whose value its type cannot hold (an integer out of range, a
            byte array or string over 65535 bytes, a UUID that is not 16 bytes...), a name
            over 255 bytes, or a message over 4 GiB.
    """
    block = b"".join(_encode_header(header) for header in headers)
    total = _MIN_MESSAGE + len(block) + len(payload)
    if total > _MAX_TOTAL:
        raise ValueError(f"an event-stream message holds at most {_MAX_TOTAL} bytes, not {total}")
    lengths = _LENGTHS.pack(total, len(block))
    body = b"".join((lengths, _U32.pack(zlib.crc32(lengths)), block, payload))
    return body + _U32.pack(zlib.crc32(body))


def _encode_header(header: EventHeader) -> bytes:
    """The bytes of one header; ``ValueError`` as ``encode_message`` documents."""
    name = header.name.encode("utf-8")
    if len(name) > _MAX_NAME:
        raise ValueError(f"a header name is at most {_MAX_NAME} bytes of UTF-8: {header.name!r}")
    kind = header.type
    value = header.value
    raw: bytes | None = None
    if kind is HeaderType.TRUE or kind is HeaderType.FALSE:
        raw = b"" if value is (kind is HeaderType.TRUE) else None
    elif kind is HeaderType.UUID:
        raw = value if isinstance(value, bytes) and len(value) == _FIXED_SIZE[kind] else None
    elif kind is HeaderType.STRING:
        if isinstance(value, str):
            raw = _sized(value.encode("utf-8"))
    elif kind is HeaderType.BYTE_ARRAY:
        if isinstance(value, bytes):
            raw = _sized(value)
    elif type(value) is int:
        bits = 8 * _FIXED_SIZE[kind] - 1
        if -(1 << bits) <= value < 1 << bits:
            raw = value.to_bytes(_FIXED_SIZE[kind], "big", signed=True)
    if raw is None:
        raise ValueError(f"the header {header.name!r} of type {kind.name} cannot hold {value!r}")
    return bytes((len(name),)) + name + bytes((kind,)) + raw


def _sized(data: bytes) -> bytes | None:
    """``data`` after its u16 length, ``None`` when it is too long for one."""
    return _U16.pack(len(data)) + data if len(data) <= _MAX_VARIABLE else None
