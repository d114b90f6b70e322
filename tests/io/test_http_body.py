"""BodyReader (``mmsp_io._http_body``): the sans-IO HTTP/1.1 response body decoder.

What this proves:

- Chunked bodies agree with h11 (the decoder's stated reference): on valid bodies (random
  chunks, chunk extensions, upper/lower-case hex, leading zeros, whitespace before CRLF,
  trailer lines) and corrupted ones (bad hex, more than 20 hex digits, a missing or wrong CRLF
  after chunk data, LF for CRLF, random byte flips, insertions, deletions and truncations), both
  accept or both refuse, hand out the same bytes, see the same bytes after the body, and after
  every piece received have handed out as much as each other: data leaves the decoder as it
  arrives, and a refusal comes at the same read as h11's. A whole valid body comes out as one
  slice per chunk. Malformed trailer fields are refused as h11 refuses them.
- ``Content-Length`` bodies: exactly ``length`` bytes, handed out as they arrive; EOF before
  them is an error; bytes after them make the connection not reusable; length 0 ends at once.
- Until-close bodies: every byte until EOF; never reusable.
- ``reusable`` of chunked bodies: only after ``END`` with nothing after it and no EOF.
- Bounds: an incomplete chunk-size line or trailer section that can no longer end within
  ``MAX_LINE_BYTES`` (its CRLF or blank line included) is an error before EOF, not an
  ever-growing buffer, and one that still can waits; a line is refused exactly when it is
  longer than the limit, however it is cut; a 1 MiB chunk streams out in the pieces it arrives
  in, and the decoder's memory does not grow with it.
- ``framing_of`` picks the framing of RFC 9112 §6.3 for h11-built responses.

Every parser case runs whole, byte by byte and in random chunkings, also with its first piece
given to the constructor, and must give the same outcome in all of them. One exception: the
1 MiB body skips byte by byte (a million calls; the differential streams byte by byte); the
bodies of about ``MAX_LINE_BYTES`` are cut by ``long_chunkings``, byte by byte among them.
"""

from __future__ import annotations

import itertools
import string
import tracemalloc
from collections.abc import Iterable, Iterator, Sequence
from typing import Final, NamedTuple

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmsp_core.testing import chunkings
from mmsp_core.testing.strategies import chunked
from mmsp_io._http_body import (
    CHUNKED,
    END,
    LENGTH,
    MAX_LINE_BYTES,
    NEED_DATA,
    UNTIL_CLOSE,
    BodyError,
    BodyReader,
    framing_of,
)

#: How a run ended: ``repr(END)``, ``repr(NEED_DATA)``, or this (``BodyError`` / h11's
#: ``RemoteProtocolError``).
REFUSED: Final = "refused"
ENDED: Final = repr(END)
WAITING: Final = repr(NEED_DATA)

#: A response head announcing a chunked body, for h11.
CHUNKED_HEAD: Final = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

class Outcome(NamedTuple):
    """What a run of the decoder came to; the same in every chunking."""

    data: bytes  #: all the body handed out, joined
    end: str  #: ``ENDED``, ``WAITING`` or ``REFUSED``
    trailing: bool
    reusable: bool


class Run(NamedTuple):
    outcome: Outcome
    pieces: list[bytes]  #: what each ``next_chunk`` handed out
    progress: list[int]  #: bytes handed out in all after each chunk fed (until an error)
    before_eof: str  #: how the run stood after the last chunk, before EOF


def run(framing: str, chunks: Sequence[bytes], *, length: int = 0, eof: bool = True,
        via_constructor: bool = False) -> Run:
    """Feed ``chunks`` (the first through the constructor with ``via_constructor``), taking
    pieces until ``NEED_DATA`` or ``END`` after each, then EOF if ``eof``; stop at a
    ``BodyError``."""
    pieces: list[bytes] = []
    progress: list[int] = []
    rest = list(chunks)
    first = rest.pop(0) if via_constructor and rest else None
    reader = BodyReader(framing, length) if first is None else BodyReader(framing, length, first)

    def drain() -> str:
        while True:
            piece = reader.next_chunk()
            if piece is END or piece is NEED_DATA:
                return repr(piece)
            assert isinstance(piece, bytes)
            assert piece, "an empty piece of body"
            pieces.append(piece)

    before_eof = REFUSED
    try:
        end = drain()
        if first is not None:
            progress.append(sum(map(len, pieces)))
        for chunk in rest:
            reader.receive_data(chunk)
            end = drain()
            progress.append(sum(map(len, pieces)))
        before_eof = end
        if eof:
            reader.receive_eof()
            end = drain()
            assert end == ENDED, "NEED_DATA after EOF"
    except BodyError:
        end = REFUSED
    outcome = Outcome(b"".join(pieces), end, reader.trailing, reader.reusable)
    return Run(outcome, pieces, progress, before_eof)


def check_progress(framing: str, length: int, chunks: Sequence[bytes], progress: list[int]) -> None:
    """A ``Content-Length`` or until-close body hands out every byte of it received so far
    after each chunk (these framings can only fail at EOF, after the last chunk)."""
    fed = list(itertools.accumulate(len(chunk) for chunk in chunks))
    assert progress == [min(n, length) if framing == LENGTH else n for n in fed]


def agreeing(framing: str, body: bytes, partitions: Iterable[list[bytes]], *, length: int = 0,
             eof: bool = True) -> Outcome:
    """The outcome of ``body`` cut as each of ``partitions``, which must all agree, through
    ``receive_data`` only and with the first piece given to the constructor."""
    first: Outcome | None = None
    for chunks in partitions:
        assert b"".join(chunks) == body
        for via_constructor in (False, True):
            result = run(framing, chunks, length=length, eof=eof, via_constructor=via_constructor)
            if framing != CHUNKED:
                check_progress(framing, length, chunks, result.progress)
            first = first or result.outcome
            assert result.outcome == first
    assert first is not None
    return first


def decode(framing: str, body: bytes, *, length: int = 0, eof: bool = True,
           cuts: Iterable[list[bytes]] | None = None) -> Outcome:
    """The outcome of a fixed ``body``, checked equal in ``cuts`` (by default ``chunkings``:
    whole, byte by byte, every two-piece split) and random chunkings."""
    whole = agreeing(framing, body, chunkings(body) if cuts is None else cuts, length=length,
                     eof=eof)

    @given(chunked(body))
    def randomly(chunks: list[bytes]) -> None:
        assert agreeing(framing, body, [chunks], length=length, eof=eof) == whole

    randomly()
    return whole


def long_chunkings(body: bytes, near: int) -> Iterator[list[bytes]]:
    """Cuts of a body of about ``MAX_LINE_BYTES``, for ``decode``: whole, in 4 KiB reads, one
    byte at a time (linear work: ``test_a_line_that_trickles_in_costs_linear_work``), and in two
    at every point within 8 bytes of ``near`` (where a line reaches the limit)."""
    yield [body]
    yield [body[i : i + 4096] for i in range(0, len(body), 4096)]
    yield [body[i : i + 1] for i in range(len(body))]
    for cut in range(max(near - 8, 0), min(near + 8, len(body)) + 1):
        yield [body[:cut], body[cut:]]


def decode_drawn(data: st.DataObject, framing: str, body: bytes, *, length: int = 0,
                 eof: bool = True) -> Outcome:
    """``decode`` inside a hypothesis test: whole, byte by byte and one drawn chunking."""
    bytewise = [body[i : i + 1] for i in range(len(body))]
    partitions = [[body], bytewise, data.draw(chunked(body))]
    return agreeing(framing, body, partitions, length=length, eof=eof)


# --- h11, the reference for chunked bodies ----------------------------------------------------


class H11Run(NamedTuple):
    data: bytes
    end: str  #: ``ENDED`` or ``REFUSED``
    trailing: bool  #: bytes were left after the body's EndOfMessage
    message: str  #: the ``RemoteProtocolError``'s, if refused
    progress: list[int]  #: bytes of ``Data`` in all after each chunk fed (until an error)
    before_eof: str  #: how the read stood after the last chunk, before EOF


def h11_run(chunks: Sequence[bytes]) -> H11Run:
    """h11's reading of a chunked response body cut as ``chunks``, then EOF."""
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    connection.send(h11.EndOfMessage())
    connection.receive_data(CHUNKED_HEAD)
    assert isinstance(connection.next_event(), h11.Response)
    pieces: list[bytes] = []
    progress: list[int] = []

    def pull() -> bool:
        """Take events until NEED_DATA (False) or EndOfMessage (True)."""
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                return False
            if isinstance(event, h11.EndOfMessage):
                return True
            assert isinstance(event, h11.Data)
            pieces.append(bytes(event.data))

    ended = False
    before_eof = REFUSED
    try:
        for chunk in chunks:
            if chunk:  # b"" is EOF to h11
                connection.receive_data(chunk)
            ended = ended or pull()
            progress.append(sum(map(len, pieces)))
        before_eof = ENDED if ended else WAITING
        connection.receive_data(b"")
        ended = ended or pull()
    except h11.RemoteProtocolError as exc:
        return H11Run(b"".join(pieces), REFUSED, False, str(exc), progress, before_eof)
    assert ended
    trailing = bool(connection.trailing_data[0])
    return H11Run(b"".join(pieces), ENDED, trailing, "", progress, before_eof)


def assert_agrees_with_h11(ours: Run, theirs: H11Run) -> None:
    """Same verdict, before EOF and after, same body, same bytes after it, and the same bytes
    handed out after each chunk, failing at the same chunk."""
    assert ours.progress == theirs.progress
    assert (ours.before_eof, ours.outcome.end, ours.outcome.data, ours.outcome.trailing) == (
        theirs.before_eof, theirs.end, theirs.data, theirs.trailing)


# --- chunked bodies, valid and corrupted --------------------------------------------------------

_TCHAR: Final = string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~"
_VCHAR: Final = "".join(map(chr, range(0x21, 0x7F)))
_tokens = st.text(_TCHAR, min_size=1, max_size=5).map(str.encode)
_quoted = st.text(_VCHAR.replace('"', "").replace("\\", "") + " ", max_size=5).map(
    lambda text: b'"' + text.encode() + b'"')
#: ``;name``, ``;name=token``, ``;name="quoted"`` or anything but LF (h11 takes ``;.*``).
_extensions = (
    st.tuples(_tokens, st.none() | _tokens | _quoted).map(
        lambda ext: b";" + ext[0] + (b"" if ext[1] is None else b"=" + ext[1]))
    | st.binary(max_size=6).map(lambda raw: b";" + raw.replace(b"\n", b""))
)
_ows = st.text(" \t", max_size=2).map(str.encode)
#: A trailer line: a header field (names of 5 characters at most are never Content-Length or
#: Transfer-Encoding), ended by CRLF or LF as h11 reads them.
_trailer_lines = st.builds(
    lambda name, ows, value, end: name + b":" + ows + value + end,
    _tokens, _ows, st.text(_VCHAR + " \t", max_size=8).map(str.encode),
    st.sampled_from([b"\r\n", b"\n"]),
)
_FAULTS: Final = ("bad-hex", "long-hex", "footer", "lf", "bytes")


@st.composite
def size_lines(draw: st.DrawFn, size: int) -> bytes:
    """A valid chunk-size line for ``size``: mixed-case hex, up to 20 digits with leading
    zeros, extensions, whitespace before CRLF."""
    digits = f"{size:x}"
    zeros = draw(st.integers(0, 2) | st.integers(0, 20 - len(digits)))
    digits = "0" * zeros + digits
    upper = draw(st.lists(st.booleans(), min_size=len(digits), max_size=len(digits)))
    digits = "".join(d.upper() if up else d for d, up in zip(digits, upper, strict=True))
    extensions = b"".join(draw(st.lists(_extensions, max_size=2)))
    return digits.encode() + extensions + draw(_ows) + b"\r\n"


@st.composite
def chunked_bodies(draw: st.DrawFn) -> tuple[bytes, list[bytes] | None]:
    """A chunked body, maybe followed by bytes of the next response, and its chunks; mostly
    valid, else corrupted (chunks ``None``)."""
    chunks = draw(st.lists(st.binary(min_size=1, max_size=48), max_size=5))
    # (kind, bytes): "size" lines, "data", "crlf" after data, "trailer" lines, the "blank" one.
    segments: list[tuple[str, bytes]] = []
    for chunk in chunks:
        segments += [("size", draw(size_lines(len(chunk)))), ("data", chunk), ("crlf", b"\r\n")]
    segments.append(("size", draw(size_lines(0))))
    segments += [("trailer", line) for line in draw(st.lists(_trailer_lines, max_size=3))]
    segments.append(("blank", draw(st.sampled_from([b"\r\n", b"\n"]))))
    after = draw(st.sampled_from([b"", b"", b"HTTP/1.1 200 OK\r\n"]) | st.binary(max_size=4))

    fault = draw(st.sampled_from(("none", "none", *_FAULTS)))
    if fault == "none":
        return b"".join(part for _, part in segments) + after, chunks
    sizes = [i for i, (kind, _) in enumerate(segments) if kind == "size"]
    crlfs = [i for i, (kind, _) in enumerate(segments) if kind == "crlf"]
    if fault in ("bad-hex", "long-hex", "lf"):
        i = draw(st.sampled_from(sizes))
        line = segments[i][1]
        ndigits = len(line) - len(line.lstrip(b"0123456789abcdefABCDEF"))
        if fault == "bad-hex":
            at = draw(st.integers(0, ndigits - 1))
            bad = draw(st.sampled_from(b"gGxz -+;\t\x00\xff"))
            line = line[:at] + bytes([bad]) + line[at + 1 :]
        elif fault == "long-hex":
            line = b"0" * (draw(st.integers(21, 21) | st.integers(21, 24)) - ndigits) + line
        else:
            line = line[:-2] + b"\n"
        segments[i] = ("size", line)
    elif fault == "footer" and crlfs:
        footer = draw(st.sampled_from([b"", b"\n", b"\r", b"\n\r", b"xy", b"\r\r\n", b" \r\n"]))
        segments[draw(st.sampled_from(crlfs))] = ("crlf", footer)
    body = bytearray(b"".join(part for _, part in segments) + after)
    if fault == "bytes" or (fault == "footer" and not crlfs):
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(body)))
            edit = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
            if edit == "insert":
                body[at:at] = bytes([draw(st.integers(0, 255))])
            elif edit == "truncate":
                del body[at:]
            elif at < len(body):
                if edit == "flip":
                    body[at] = draw(st.integers(0, 255))
                else:
                    del body[at]
    return bytes(body), None


@given(case=chunked_bodies(), data=st.data())
def test_chunked_agrees_with_h11(case: tuple[bytes, list[bytes] | None],
                                 data: st.DataObject) -> None:
    body, chunks = case
    whole_h11 = h11_run([body])
    if chunks is not None:  # the generator's valid bodies are valid to h11
        assert (whole_h11.end, whole_h11.data) == (ENDED, b"".join(chunks))
    bytewise = [body[i : i + 1] for i in range(len(body))]
    first: Outcome | None = None
    for partition in ([body], bytewise, data.draw(chunked(body))):
        theirs = whole_h11 if partition == [body] else h11_run(partition)
        for via_constructor in (False, True):
            ours = run(CHUNKED, partition, via_constructor=via_constructor)
            assert_agrees_with_h11(ours, theirs)
            first = first or ours.outcome
            assert ours.outcome == first
            if chunks is not None and partition == [body]:
                assert ours.pieces == chunks  # one slice per chunk of a whole body


@pytest.mark.parametrize("trailer", [
    b"x\r\n", b" folded: value\r\n", b"Content-Length: x\r\n",
    b"Transfer-Encoding: gzip\r\n", b"Content-Length: 1\r\nContent-Length: 2\r\n",
])
def test_malformed_trailer_fields_are_refused_like_h11(trailer: bytes) -> None:
    body = b"0\r\n" + trailer + b"\r\n"
    assert h11_run([body]).end == REFUSED
    assert decode(CHUNKED, body).end == REFUSED


# --- reusable and trailing, chunked ---------------------------------------------------------------

BODY: Final = b"5;name=value\r\nhello\r\n0007 \r\n, world\r\n0\r\nExpires: never\r\n\r\n"
BODY_DATA: Final = b"hello, world"


def test_chunked_reusable_after_end_with_nothing_after() -> None:
    assert decode(CHUNKED, BODY, eof=False) == Outcome(BODY_DATA, ENDED, False, True)


def test_chunked_not_reusable_with_bytes_after_end() -> None:
    after = b"HTTP/1.1 200 OK\r\n"
    assert decode(CHUNKED, BODY + after, eof=False) == Outcome(BODY_DATA, ENDED, True, False)


def test_chunked_not_reusable_once_the_connection_closed() -> None:
    assert decode(CHUNKED, BODY) == Outcome(BODY_DATA, ENDED, False, False)


@given(data=st.data())
def test_chunked_prefix_waits_or_fails_at_eof(data: st.DataObject) -> None:
    """Before ``END`` the connection is not reusable, and EOF there is an error; the data
    handed out is never more than the whole body's."""
    prefix = BODY[: data.draw(st.integers(0, len(BODY) - 1))]
    waiting = decode_drawn(data, CHUNKED, prefix, eof=False)
    assert (waiting.end, waiting.trailing, waiting.reusable) == (WAITING, False, False)
    assert BODY_DATA.startswith(waiting.data)
    closed = decode_drawn(data, CHUNKED, prefix)
    assert closed == waiting._replace(end=REFUSED)


# --- Content-Length and until close -------------------------------------------------------------


@given(sent=st.binary(max_size=64), length=st.integers(0, 80), data=st.data())
def test_content_length(sent: bytes, length: int, data: st.DataObject) -> None:
    """Exactly ``length`` bytes, handed out as they arrive (``check_progress``); EOF before
    them is an error; bytes after them are ``trailing`` and make the connection not
    reusable."""
    short = len(sent) < length
    open_ = decode_drawn(data, LENGTH, sent, length=length, eof=False)
    assert open_.data == sent[:length]
    assert open_.end == (WAITING if short else ENDED)
    assert open_.trailing == (len(sent) > length)
    assert open_.reusable == (len(sent) == length)
    closed = decode_drawn(data, LENGTH, sent, length=length)
    assert closed == open_._replace(end=REFUSED if short else ENDED, reusable=False)


def test_content_length_zero_ends_at_once() -> None:
    reader = BodyReader(LENGTH, 0)
    assert reader.next_chunk() is END
    assert reader.reusable
    assert not reader.trailing


@given(sent=st.binary(max_size=64), data=st.data())
def test_until_close(sent: bytes, data: st.DataObject) -> None:
    """Every byte, handed out as it arrives, until EOF ends the body; never reusable."""
    assert decode_drawn(data, UNTIL_CLOSE, sent, eof=False) == Outcome(sent, WAITING, False, False)
    assert decode_drawn(data, UNTIL_CLOSE, sent) == Outcome(sent, ENDED, False, False)


# --- bounds -------------------------------------------------------------------------------------


#: A chunked body up to its trailer section: one chunk, ``abc``, and the last-chunk line.
_BEFORE_TRAILER: Final = b"3\r\nabc\r\n0\r\n"


@pytest.mark.parametrize(("body", "data"), [
    pytest.param(b"1" * (MAX_LINE_BYTES + 10), b"", id="chunk-size-line"),
    pytest.param(b"3;" + b"e" * (MAX_LINE_BYTES + 10), b"", id="chunk-extension"),
    pytest.param(_BEFORE_TRAILER + b"Name: value\r\n" * (MAX_LINE_BYTES // 13 + 1), b"abc",
                 id="trailer-section"),
])
def test_overlong_incomplete_line_is_refused_before_eof(body: bytes, data: bytes) -> None:
    near = MAX_LINE_BYTES + (len(_BEFORE_TRAILER) if data else 0)
    outcome = decode(CHUNKED, body, eof=False, cuts=long_chunkings(body, near))
    assert outcome == Outcome(data, REFUSED, False, False)


def test_incomplete_line_up_to_the_limit_waits() -> None:
    """The bound is ``MAX_LINE_BYTES``, not less: a line that can still end within it (one
    byte short, with a CR to come before its LF) waits."""
    line = b"1;" + b"e" * (MAX_LINE_BYTES - 3)
    outcome = decode(CHUNKED, line, eof=False, cuts=long_chunkings(line, len(line)))
    assert outcome == Outcome(b"", WAITING, False, False)


@pytest.mark.parametrize("extra", [
    pytest.param(0, id="line-with-CRLF-of-MAX_LINE_BYTES"),
    pytest.param(1, id="line-with-CRLF-of-MAX_LINE_BYTES+1"),
])
def test_line_limit_is_the_same_in_every_chunking(extra: int) -> None:
    """A chunk-size line of up to ``MAX_LINE_BYTES`` with its CRLF is read, a longer one is an
    error (module doc of ``_http_body``), however it arrives."""
    line = b"1;" + b"e" * (MAX_LINE_BYTES - 4 + extra)
    body = line + b"\r\nX\r\n0\r\n\r\n"
    outcome = decode(CHUNKED, body, eof=False, cuts=long_chunkings(body, len(line)))
    assert outcome.end == (ENDED if len(line) + 2 <= MAX_LINE_BYTES else REFUSED)


def trickled(body: bytes) -> tuple[Outcome, int]:
    """``body`` fed to a chunked reader one byte per read: its outcome (no EOF), and the work
    the reader did on what it holds, in bytes: before each ``next_chunk`` what its search for
    a line end may look at (from where it resumes, ``_scan``, to the end of the bytes held),
    and each time the bytes held became a new object, all of them (a copy)."""
    reader = BodyReader(CHUNKED)

    def held() -> bytes | bytearray:
        return reader._buffer if reader._line is None else reader._line

    work = 0
    last = held()

    def copied() -> int:
        nonlocal last
        now = held()
        if now is last:
            return 0
        last = now
        return len(now)

    data = bytearray()
    end = WAITING
    try:
        for index in range(len(body)):
            reader.receive_data(body[index : index + 1])
            work += copied()
            while end == WAITING:
                work += len(held()) - reader._scan
                piece = reader.next_chunk()
                work += copied()
                if piece is NEED_DATA:
                    break
                if piece is END:
                    end = ENDED
                else:
                    data += piece  # type: ignore[operator]
    except BodyError:
        end = REFUSED
    return Outcome(bytes(data), end, reader.trailing, reader.reusable), work


@pytest.mark.parametrize(("body", "outcome"), [
    pytest.param(b"1;" + b"e" * (MAX_LINE_BYTES - 4) + b"\r\nX\r\n0\r\n"
                 + b"Name: value\r\n" * (MAX_LINE_BYTES // 13 - 1) + b"\r\n",
                 Outcome(b"X", ENDED, False, True), id="longest-lines"),
    pytest.param(b"1;" + b"e" * MAX_LINE_BYTES, Outcome(b"", REFUSED, False, False),
                 id="line-too-long"),
    pytest.param(_BEFORE_TRAILER + b"Name: value\r\n" * (MAX_LINE_BYTES // 13 + 1),
                 Outcome(b"abc", REFUSED, False, False), id="trailer-too-long"),
])
def test_a_line_that_trickles_in_costs_linear_work(body: bytes, outcome: Outcome) -> None:
    """A chunk-size line or trailer section of about ``MAX_LINE_BYTES`` arriving one byte per
    read costs work linear in its length (module doc of ``_http_body``): its search resumes
    where the previous one stopped, and the bytes held are appended to, not copied per read
    (about ``len(body) ** 2 / 2`` bytes copied if they were)."""
    result, work = trickled(body)
    assert result == outcome
    assert work < 4 * len(body)


def test_large_chunk_is_handed_out_as_it_arrives() -> None:
    """A 1 MiB chunk fed in 64 KiB reads comes out one read at a time, each as soon as it is
    received, and the decoder holds no more than a read or two meanwhile."""
    size, read = 1 << 20, 64 << 10
    payload = bytes(range(256)) * (size // 256)
    header = f"{size:x}\r\n".encode()
    reader = BodyReader(CHUNKED)
    reader.receive_data(header)
    assert reader.next_chunk() is NEED_DATA
    tracemalloc.start()
    try:
        for start in range(0, size, read):
            reader.receive_data(payload[start : start + read])
            piece = reader.next_chunk()
            assert piece == payload[start : start + read]
            assert reader.next_chunk() is NEED_DATA
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * read
    reader.receive_data(b"\r\n0\r\n\r\n")
    assert reader.next_chunk() is END
    assert reader.reusable


@given(data=st.data())
def test_large_chunk_in_any_chunking(data: st.DataObject) -> None:
    """The same body in other chunkings: all of it, and after each read every byte of the
    chunk received so far."""
    size = 1 << 20
    payload = bytes(range(256)) * (size // 256)
    header = f"{size:x}\r\n".encode()
    body = header + payload + b"\r\n0\r\n\r\n"
    in_reads = [body[i : i + (64 << 10)] for i in range(0, len(body), 64 << 10)]
    for chunks in ([body], in_reads, data.draw(chunked(body))):
        result = run(CHUNKED, chunks, eof=False)
        assert result.outcome == Outcome(payload, ENDED, False, True)
        fed = itertools.accumulate(len(chunk) for chunk in chunks)
        assert result.progress == [min(max(n - len(header), 0), size) for n in fed]


# --- framing_of -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "status", "headers", "framing"), [
    (b"HEAD", 200, [("Content-Length", "42")], (LENGTH, 0)),
    (b"HEAD", 200, [("Transfer-Encoding", "chunked")], (LENGTH, 0)),
    (b"GET", 204, [], (LENGTH, 0)),
    (b"GET", 304, [("Content-Length", "42")], (LENGTH, 0)),
    (b"GET", 200, [("Transfer-Encoding", "chunked")], (CHUNKED, 0)),
    (b"POST", 200, [("Content-Length", "42"), ("Transfer-Encoding", "chunked")], (CHUNKED, 0)),
    (b"GET", 200, [("Content-Length", "42")], (LENGTH, 42)),
    (b"GET", 200, [("Content-Length", "0")], (LENGTH, 0)),
    (b"GET", 200, [("Content-Type", "text/event-stream")], (UNTIL_CLOSE, 0)),
])
def test_framing_of(method: bytes, status: int, headers: list[tuple[str, str]],
                    framing: tuple[str, int]) -> None:
    assert framing_of(method, h11.Response(status_code=status, headers=headers)) == framing
