"""The AWS event-stream framing: decoding in any chunking, botocore as the oracle, errors, bounds.

Every case goes through ``outcome``, which feeds the stream whole, byte by byte (with empty
chunks between the bytes) and in a random chunking, and checks that all three give the same
messages and the same error. botocore's ``EventStreamBuffer`` decodes the generated messages too
(botocore is a test dependency only).
"""

from __future__ import annotations

import struct
import tracemalloc
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmsp_core.errors import (
    IncompleteStreamError,
    MalformedEventError,
    MMSPError,
    StreamLimitError,
)
from mmsp_core.eventstream import (
    EventHeader,
    EventStreamDecoder,
    EventStreamMessage,
    HeaderType,
    encode_message,
)
from mmsp_core.testing.strategies import chunked

# (messages in order, then the error as (class name, str(error)) or None)
Outcome = tuple[list[EventStreamMessage], tuple[str, str] | None]


def run(chunks: list[bytes], **limits: int) -> Outcome:
    """Feed ``chunks`` then end; collect the messages until an ``MMSPError``."""
    decoder = EventStreamDecoder("bedrock-test", **limits)
    messages: list[EventStreamMessage] = []
    try:
        for chunk in chunks:
            messages += decoder.feed(chunk)
        decoder.end()
    except MMSPError as exc:
        return messages, (type(exc).__name__, str(exc))
    return messages, None


def outcome(data: bytes, chunks: list[bytes], **limits: int) -> Outcome:
    """The outcome of ``data`` fed whole, after checking that byte by byte and ``chunks`` (a
    partition of ``data``) give the same."""
    assert b"".join(chunks) == data
    whole = run([data], **limits)
    assert run([b for i in range(len(data)) for b in (data[i : i + 1], b"")], **limits) == whole
    assert run(chunks, **limits) == whole
    return whole


def frame(headers: bytes, payload: bytes = b"", *, total: int | None = None) -> bytes:
    """A message around a raw header block, with correct CRCs (``total`` may be forced)."""
    if total is None:
        total = 16 + len(headers) + len(payload)
    lengths = struct.pack("!II", total, len(headers))
    body = lengths + struct.pack("!I", zlib.crc32(lengths)) + headers + payload
    return body + struct.pack("!I", zlib.crc32(body))


# --- generated messages ------------------------------------------------------------------------

_BITS = {HeaderType.BYTE: 7, HeaderType.SHORT: 15, HeaderType.INTEGER: 31, HeaderType.LONG: 63,
         HeaderType.TIMESTAMP: 63}


def _values(kind: HeaderType) -> st.SearchStrategy[bool | int | bytes | str]:
    if kind in (HeaderType.TRUE, HeaderType.FALSE):
        return st.just(kind is HeaderType.TRUE)
    if kind in _BITS:
        return st.integers(-(1 << _BITS[kind]), (1 << _BITS[kind]) - 1)
    if kind is HeaderType.UUID:
        return st.binary(min_size=16, max_size=16)
    if kind is HeaderType.BYTE_ARRAY:
        return st.binary(max_size=40)
    return st.text(max_size=20)


@st.composite
def headers(draw: st.DrawFn) -> tuple[EventHeader, ...]:
    """Headers of every type, with distinct names of up to 255 bytes."""
    names = draw(st.lists(
        st.text(max_size=12).filter(lambda n: len(n.encode()) <= 255), unique=True, max_size=6
    ))
    found = []
    for name in names:
        kind = draw(st.sampled_from(HeaderType))
        found.append(EventHeader(name, draw(_values(kind)), kind))
    return tuple(found)


messages = st.builds(EventStreamMessage, headers(), st.binary(max_size=64))


def as_botocore(message: EventStreamMessage) -> tuple[dict[str, object], bytes]:
    """What botocore's parser gives for a message: a dict of the header values, the payload."""
    return {h.name: h.value for h in message.headers}, message.payload


def botocore_decode(data: bytes) -> list[tuple[dict[str, object], bytes]]:
    eventstream = pytest.importorskip("botocore.eventstream")
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(data)
    return [(dict(m.headers), m.payload) for m in buffer]


@given(st.lists(messages, max_size=4), st.data())
def test_generated_messages_decode_alike_in_every_chunking_and_as_botocore_reads_them(
    sent: list[EventStreamMessage], data: st.DataObject
) -> None:
    stream = b"".join(encode_message(m.headers, m.payload) for m in sent)
    assert outcome(stream, data.draw(chunked(stream))) == (sent, None)
    assert botocore_decode(stream) == [as_botocore(m) for m in sent]


def test_every_header_type_decodes_as_botocore_decodes_it() -> None:
    every = (
        EventHeader(":message-type", "event"),
        EventHeader(":event-type", "chunk"),
        EventHeader("yes", True),
        EventHeader("no", False),
        EventHeader("byte", -128, HeaderType.BYTE),
        EventHeader("short", 32767, HeaderType.SHORT),
        EventHeader("integer", -(2**31), HeaderType.INTEGER),
        EventHeader("long", 2**63 - 1),
        EventHeader("bytes", b"\x00\xff"),
        EventHeader("timestamp", 1_759_000_000_000, HeaderType.TIMESTAMP),
        EventHeader("uuid", bytes(range(16)), HeaderType.UUID),
    )
    assert {h.type for h in every} == set(HeaderType)
    message = EventStreamMessage(every, b'{"bytes":"eyJ0eXBlIjoibWVzc2FnZV9zdG9wIn0="}')
    stream = encode_message(message.headers, message.payload)
    assert outcome(stream, [stream[:7], stream[7:50], stream[50:]]) == ([message], None)
    assert botocore_decode(stream) == [as_botocore(message)]
    assert message.header(":event-type") == "chunk"
    assert message.header("absent") is None


def test_an_empty_message_and_an_empty_chunk() -> None:
    decoder = EventStreamDecoder()
    assert decoder.feed(b"") == []
    assert decoder.feed(encode_message()) == [EventStreamMessage()]
    decoder.end()


def test_a_header_type_defaults_from_its_value() -> None:
    assert [EventHeader("n", v).type for v in (True, False, 7, b"", "")] == [
        HeaderType.TRUE, HeaderType.FALSE, HeaderType.LONG, HeaderType.BYTE_ARRAY,
        HeaderType.STRING,
    ]


@pytest.mark.parametrize("header", [
    EventHeader("n", 128, HeaderType.BYTE),
    EventHeader("n", -32769, HeaderType.SHORT),
    EventHeader("n", 2**63),
    EventHeader("n", True, HeaderType.FALSE),
    EventHeader("n", 1, HeaderType.TRUE),
    EventHeader("n", "text", HeaderType.BYTE_ARRAY),
    EventHeader("n", b"short", HeaderType.UUID),
    EventHeader("n", "x" * 65536),
    EventHeader("n" * 256, "too long a name"),
    EventHeader("n", True, HeaderType.INTEGER),
])
def test_a_header_its_type_cannot_hold_is_a_value_error(header: EventHeader) -> None:
    with pytest.raises(ValueError, match="header"):
        encode_message([header])


# --- errors ------------------------------------------------------------------------------------

_FIRST = encode_message([EventHeader(":event-type", "chunk")], b'{"n":1}')
_SECOND = encode_message([EventHeader(":event-type", "chunk")], b'{"n":2}')


def _flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes((data[index] ^ 0x01,)) + data[index + 1 :]


@pytest.mark.parametrize(("index", "what"), [
    (0, "prelude CRC32"),  # a length changed: the prelude CRC no longer matches
    (9, "prelude CRC32"),  # the prelude CRC itself
    (20, "message CRC32"),  # a header byte
    (len(_SECOND) - 3, "message CRC32"),  # a payload byte
    (len(_SECOND) - 1, "message CRC32"),  # the message CRC itself
])
def test_a_bad_crc_is_malformed_after_the_messages_before_it(index: int, what: str) -> None:
    stream = _FIRST + _flip(_SECOND, index) + _FIRST
    messages, error = outcome(stream, [stream[:5], stream[5:40], stream[40:]])
    assert len(messages) == 1
    assert error is not None
    assert error[0] == "MalformedEventError"
    assert what in error[1]
    assert f"event-stream message 1 at byte {len(_FIRST)}" in error[1]


@pytest.mark.parametrize(("block", "detail"), [
    (b"\x01a\x0a", "unknown type 10"),
    (b"\x01a\xff", "unknown type 255"),
    (b"\x05ab", "header 0 runs past"),
    (b"\x01a\x04\x00\x00", "'a' runs past"),
    (b"\x01a\x07\x00", "'a' runs past"),
    (b"\x01a\x07\x00\x05abc", "'a' runs past"),
    (b"\x01a\x09" + bytes(15), "'a' runs past"),
    (b"\x02\xff\xfe\x00", "a header name is not UTF-8"),
    (b"\x01a\x07\x00\x01\x80", "the value of the header 'a' is not UTF-8"),
    (b"\x01a\x00\x01a\x01", "'a' appears twice"),
])
def test_headers_that_do_not_decode_are_malformed(block: bytes, detail: str) -> None:
    stream = _FIRST + frame(block, b"payload")
    messages, error = outcome(stream, [stream[:30], stream[30:]])
    assert len(messages) == 1
    assert error is not None
    assert error[0] == "MalformedEventError"
    assert detail in error[1]


@pytest.mark.parametrize(("total", "block"), [(15, b""), (0, b""), (17, b"\x01a\x00\x01b\x00")])
def test_lengths_no_message_can_have_are_malformed(total: int, block: bytes) -> None:
    data = frame(block, total=total)[:12] + bytes(32)
    assert outcome(data, [data[:6], data[6:]]) == ([], (
        "MalformedEventError",
        f"bedrock-test received a malformed event: event-stream message 0 at byte 0 (a total "
        f"length of {total} bytes cannot hold the prelude, {len(block)} bytes of headers and "
        "the message CRC)",
    ))


@given(st.lists(messages, min_size=1, max_size=3), st.data())
def test_a_cut_stream_is_incomplete_after_the_whole_messages(
    sent: list[EventStreamMessage], data: st.DataObject
) -> None:
    encoded = [encode_message(m.headers, m.payload) for m in sent]
    stream = b"".join(encoded)
    cut = data.draw(st.integers(0, len(stream) - 1))
    ends = [sum(len(e) for e in encoded[: i + 1]) for i in range(len(encoded))]
    whole = [m for m, end in zip(sent, ends, strict=True) if end <= cut]
    messages, error = outcome(stream[:cut], data.draw(chunked(stream[:cut])))
    assert messages == whole
    if cut in (0, *ends):
        assert error is None
    else:
        assert error is not None
        assert error[0] == "IncompleteStreamError"
        assert f"inside event-stream message {len(whole)}" in error[1]


def test_the_cut_is_a_retryable_incomplete_stream_naming_the_client() -> None:
    decoder = EventStreamDecoder("anthropic-official")
    assert decoder.feed(_FIRST + _SECOND[:20]) == run([_FIRST])[0]
    with pytest.raises(IncompleteStreamError) as caught:
        decoder.end()
    assert caught.value.client == "anthropic-official"
    assert caught.value.missing == ("usage_metadata", "finish_reason")
    assert caught.value.retryable
    assert caught.value.detail == (
        f"the stream ended inside event-stream message 1, after 20 of its {len(_SECOND)} bytes"
    )
    short = EventStreamDecoder()
    short.feed(_FIRST[:5])
    with pytest.raises(IncompleteStreamError, match="5 bytes into the prelude"):
        short.end()


@given(st.binary(max_size=200), st.data())
def test_arbitrary_bytes_raise_only_mmsp_errors(data: bytes, draw: st.DataObject) -> None:
    outcome(data, draw.draw(chunked(data)), max_message_bytes=1 << 16)


@given(st.binary(max_size=60), st.binary(max_size=20), st.data())
def test_arbitrary_headers_with_good_crcs_raise_only_mmsp_errors(
    block: bytes, payload: bytes, draw: st.DataObject
) -> None:
    stream = frame(block, payload) + _FIRST
    outcome(stream, draw.draw(chunked(stream)))


def test_a_failed_or_ended_decoder_refuses_more() -> None:
    decoder = EventStreamDecoder()
    with pytest.raises(MalformedEventError):
        decoder.feed(_flip(_FIRST, 9))
    with pytest.raises(RuntimeError, match="after end"):
        decoder.feed(_FIRST)
    ended = EventStreamDecoder()
    ended.end()
    with pytest.raises(RuntimeError):
        ended.end()


# --- bounds ------------------------------------------------------------------------------------


def test_a_message_over_the_limit_is_refused_by_its_prelude() -> None:
    big = encode_message([], bytes(100))
    decoder = EventStreamDecoder(max_message_bytes=115)
    with pytest.raises(StreamLimitError) as caught:
        decoder.feed(big[:12])  # the rest never needs to arrive
    assert (caught.value.what, caught.value.limit, caught.value.size) == (
        "event-stream message", 115, 116
    )
    assert run([big], max_message_bytes=116) == ([EventStreamMessage((), bytes(100))], None)


def test_headers_over_the_limit_are_refused_by_the_prelude() -> None:
    message = encode_message([EventHeader("h", "x" * 100)])
    stream = _FIRST + message
    assert outcome(stream, [stream[: len(_FIRST) + 12], stream[len(_FIRST) + 12 :]],
                   max_header_bytes=104) == (
        run([_FIRST])[0],
        ("StreamLimitError", "event-stream headers exceeds the limit of 104 (105 so far)"),
    )


def test_the_default_limits_take_a_16_mib_message_and_refuse_more() -> None:
    header = frame(b"", total=16 << 20)[:12]
    decoder = EventStreamDecoder()
    assert decoder.feed(header) == []
    over = EventStreamDecoder()
    with pytest.raises(StreamLimitError, match="event-stream message"):
        over.feed(frame(b"", total=(16 << 20) + 1)[:12])


def test_memory_held_stays_one_message_whatever_the_stream_length() -> None:
    message = encode_message([EventHeader(":event-type", "chunk")], bytes(1000))
    stream = message * 2000  # 2 MB, fed in chunks that cut messages anywhere
    decoder = EventStreamDecoder()
    count = 0
    tracemalloc.start()
    try:
        for start in range(0, len(stream), 4093):
            count += len(decoder.feed(stream[start : start + 4093]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    decoder.end()
    assert count == 2000
    assert peak < 64 * 1024
