"""SSEDecoder and BodyDecoder: WHATWG HTML §9.2.6 rules, limits, lifecycle.

Every parser case goes through ``decode``, which runs the input whole, byte by byte (with empty
chunks between the bytes) and in random chunkings, and checks that all give the same outcome.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmsp_core.errors import StreamLimitError
from mmsp_core.sse import BodyDecoder, SSEDecoder, SSEEvent

_BOM = b"\xef\xbb\xbf"

# (events in order, then the limit error as (what, limit, size) or None)
Outcome = tuple[list[SSEEvent], tuple[str, int, int] | None]


def run(chunks: list[bytes], **limits: int) -> Outcome:
    """Feed ``chunks`` then close; collect the events until a ``StreamLimitError``."""
    decoder = SSEDecoder(**limits)
    events: list[SSEEvent] = []
    try:
        for chunk in chunks:
            events += decoder.feed(chunk)
        events += decoder.close()
    except StreamLimitError as exc:
        return events, (exc.what, exc.limit, exc.size)
    return events, None


@st.composite
def partitions(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """Cut ``data`` at sorted random points; repeated points give empty chunks."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=max(8, len(data) // 2))))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def decode(data: bytes, **limits: int) -> Outcome:
    """Return the outcome of ``data`` fed whole, after checking every other chunking agrees."""
    whole = run([data], **limits)
    bytewise = [b for i in range(len(data)) for b in (data[i : i + 1], b"")]
    assert run(bytewise, **limits) == whole

    @given(partitions(data))
    def chunked(chunks: list[bytes]) -> None:
        assert b"".join(chunks) == data
        assert run(chunks, **limits) == whole

    chunked()
    return whole


def events_of(data: bytes, **limits: int) -> list[SSEEvent]:
    """The events of ``data`` in every chunking, which must end without a limit error."""
    events, error = decode(data, **limits)
    assert error is None
    return events


def msg(data: str, **fields: Any) -> SSEEvent:
    return SSEEvent(data=data, **fields)


# --- the examples of WHATWG HTML §9.2.6 ------------------------------------------------------


def test_spec_stock_example() -> None:
    assert events_of(b"data: YHOO\ndata: +2\ndata: 10\n\n") == [msg("YHOO\n+2\n10")]


def test_spec_first_second_third_example() -> None:
    stream = (
        b": test stream\n\n"
        b"data: first event\nid: 1\n\n"
        b"data:second event\nid\n\n"
        b"data:  third event\n\n"
    )
    assert events_of(stream) == [
        msg("first event", id="1"),
        msg("second event", id=""),  # "id" alone resets the last event ID to ""
        msg(" third event", id=""),  # only one leading space is stripped
    ]


def test_spec_empty_data_example() -> None:
    # "data" alone dispatches "", two of them "\n"; the last block has no blank line.
    assert events_of(b"data\n\ndata\ndata\n\ndata:") == [msg(""), msg("\n")]


def test_spec_two_identical_events_example() -> None:
    assert events_of(b"data:test\n\ndata: test\n\n") == [msg("test"), msg("test")]


# --- line endings ---------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_each_line_ending(eol: bytes) -> None:
    stream = b"event: a" + eol + b"data: 1" + eol + b"data: 2" + eol + eol + b"data: 3" + eol * 2
    assert events_of(stream) == [msg("1\n2", event="a"), msg("3")]


def test_mixed_line_endings() -> None:
    stream = b"data: 1\rdata: 2\r\ndata: 3\n\r\ndata: 4\r\r\n\n"
    # "\r\r\n\n" is CR, CRLF, LF: the second and third are blank lines.
    assert events_of(stream) == [msg("1\n2\n3"), msg("4")]


def test_cr_at_chunk_end_then_lf_is_one_line_ending() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    # The LF completes the CRLF: if it were a line ending of its own, it would dispatch "a".
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\r") == [msg("a")]
    assert decoder.feed(b"\ndata: b\r\n\r\n") == [msg("b")]


def test_lone_cr_at_end_of_input_is_a_line_ending() -> None:
    assert events_of(b"data: a\n\r") == [msg("a")]


# --- decoding -------------------------------------------------------------------------------


def test_leading_bom_dropped() -> None:
    assert events_of(b"\xef\xbb\xbfdata: a\n\n") == [msg("a")]


def test_only_first_bom_dropped() -> None:
    # The second BOM is part of the field name "\ufeffdata", an unknown field.
    assert events_of(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n") == [msg("b")]


def test_bom_prefix_that_is_not_a_bom() -> None:
    assert events_of(b"\xef\xbb\ndata: a\n\n") == [msg("a")]


def test_bom_split_across_chunks() -> None:
    assert run([b"\xef", b"", b"\xbb", b"\xbfda", b"ta: a\n\n"]) == ([msg("a")], None)


@pytest.mark.parametrize("cut", [1, 2])
def test_bom_completed_by_a_chunk_with_line_endings(cut: int) -> None:
    # The chunk that completes the BOM is searched for line endings from its start.
    assert run([_BOM[:cut], _BOM[cut:] + b"\r"], max_line_bytes=0) == ([], None)
    assert run([_BOM[:cut], _BOM[cut:] + b"\n\r", b"\n"], max_line_bytes=0) == ([], None)


def test_unicode_line_separators_are_not_line_endings() -> None:
    value = '{"text": "a\u2028b\u0085c\u2029d"}'
    assert events_of(b"data: " + value.encode() + b"\n\n") == [msg(value)]


def test_four_byte_character_split_across_chunks() -> None:
    emoji = "\U0001f600".encode()
    assert run([b"data: x", emoji[:1], emoji[1:3], emoji[3:] + b"y\n\n"]) == (
        [msg("x\U0001f600y")],
        None,
    )
    assert events_of(b"data: " + emoji + b"\n\n") == [msg("\U0001f600")]


def test_invalid_utf8_replaced() -> None:
    # A truncated 3-byte sequence at the end of each data line, a stray continuation byte.
    stream = b"data: a\xe2\x82\ndata: \x80b\nevent: \xff\nid: \xc3\n\n"
    assert events_of(stream) == [msg("a\ufffd\n\ufffdb", event="\ufffd", id="\ufffd")]


# --- fields ---------------------------------------------------------------------------------


def test_comments_ignored() -> None:
    stream = b": keep-alive\n\n:\ndata: a\n: inside\ndata: b\n\n: ping\n\n"
    assert events_of(stream) == [msg("a\nb")]


def test_data_without_space_and_extra_spaces() -> None:
    assert events_of(b"data:a\ndata: b\ndata:  c\ndata:\n\n") == [msg("a\nb\n c\n")]


def test_field_without_colon_has_empty_value() -> None:
    assert events_of(b"data\ndata\n\n") == [msg("\n")]


def test_field_name_is_split_at_first_colon() -> None:
    assert events_of(b'data: {"a": "b:c"}\nevent: x:y\n\n') == [msg('{"a": "b:c"}', event="x:y")]


def test_event_type() -> None:
    stream = b"event: delta\ndata: 1\n\nevent:\ndata: 2\n\nevent: lost\n\ndata: 3\n\n"
    # An empty type means "message"; a type without data is reset by the blank line.
    assert events_of(stream) == [msg("1", event="delta"), msg("2"), msg("3")]


def test_id_persists_and_nul_ignored() -> None:
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid: 2\x003\ndata: c\n\nid: 4\n\ndata: d\n\n"
    assert events_of(stream) == [
        msg("a", id="1"),
        msg("b", id="1"),
        msg("c", id="1"),  # an id containing NUL is ignored
        msg("d", id="4"),  # an id set in a block without data still counts
    ]


def test_last_event_id_property() -> None:
    decoder = SSEDecoder()
    assert decoder.last_event_id is None
    decoder.feed(b"id: 7\n")
    assert decoder.last_event_id == "7"
    decoder.feed(b"id: 8\x00\nid\n")
    assert decoder.last_event_id == ""


@pytest.mark.parametrize(
    ("value", "retry"),
    [
        (b"3000", 3000),
        (b"007", 7),
        (b"", None),
        (b"-1", None),
        (b"1.5", None),
        (b" 10", None),  # after the one stripped space, " 10" is not all digits
        (b"1_000", None),
        ("١٢".encode(), None),  # Arabic-Indic digits are not ASCII digits
    ],
)
def test_retry(value: bytes, retry: int | None) -> None:
    assert events_of(b"retry: " + value + b"\ndata: a\n\ndata: b\n\n") == [
        msg("a", retry=retry),
        msg("b"),  # retry belongs to the event it was seen in
    ]


def test_retry_invalid_after_valid_keeps_valid() -> None:
    assert events_of(b"retry: 5\nretry: x\ndata: a\n\n") == [msg("a", retry=5)]


def test_retry_with_too_many_digits_ignored() -> None:
    assert events_of(b"retry: " + b"9" * 5000 + b"\ndata: a\n\n") == [msg("a")]


def test_unknown_fields_ignored() -> None:
    assert events_of(b"foo: bar\nData: x\ndata : y\ndata: a\n\n") == [msg("a")]


def test_blank_lines_without_data_dispatch_nothing() -> None:
    assert events_of(b"\n\n\nretry: 1\n\n\r\n\rdata: a\n\n\n") == [msg("a")]


# --- end of input ---------------------------------------------------------------------------


def test_unterminated_final_event_discarded() -> None:
    assert events_of(b"data: a\n\ndata: b\n") == [msg("a")]
    assert events_of(b"data: a\n\ndata: b") == [msg("a")]


def test_close_returns_nothing_and_feed_after_close_raises() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: b\n") == [msg("a")]
    assert decoder.close() == []
    with pytest.raises(RuntimeError):
        decoder.feed(b"\n")
    with pytest.raises(RuntimeError):
        decoder.close()


def test_empty_feed_is_not_end_of_input() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"") == []
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\n") == [msg("a")]


# --- limits ---------------------------------------------------------------------------------


def test_line_limit_whole_and_in_pieces() -> None:
    stream = b"data: a\n\ndata: b\n\n" + b"data: " + b"x" * 20 + b"\n\ndata: c\n\n"
    events, error = decode(stream, max_line_bytes=16)
    assert events == [msg("a"), msg("b")]
    assert error == ("SSE line", 16, 17)


def test_line_at_the_limit_is_accepted() -> None:
    assert events_of(b"data: " + b"x" * 10 + b"\r\n\r\n", max_line_bytes=16) == [msg("x" * 10)]


def test_long_line_refused_before_its_end_arrives() -> None:
    decoder = SSEDecoder(max_line_bytes=100)
    assert decoder.feed(b"data: a\n\ndata: ") == [msg("a")]
    for _ in range(9):
        assert decoder.feed(b"x" * 10) == []
    # 104 bytes buffered: the feed that finds it returns normally, the next call raises.
    assert decoder.feed(b"x" * 10) == []
    with pytest.raises(StreamLimitError) as info:
        decoder.feed(b"x")
    assert (info.value.what, info.value.limit, info.value.size) == ("SSE line", 100, 101)
    with pytest.raises(RuntimeError):
        decoder.feed(b"\n\n")
    with pytest.raises(RuntimeError):
        decoder.close()


def test_event_limit_by_many_data_lines() -> None:
    stream = b"data: 0123456789\n\n" + b"data: 0123456789\n" * 5 + b"\n"
    events, error = decode(stream, max_event_bytes=40)
    # The event would be 10 + 11 + 11 + 11 = 43 bytes after its fourth line.
    assert events == [msg("0123456789")]
    assert error == ("SSE event", 40, 43)


def test_event_at_the_limit_is_accepted() -> None:
    stream = b"data: 0123456789\n" * 4 + b"\n"
    assert events_of(stream, max_event_bytes=43) == [msg("\n".join(["0123456789"] * 4))]


def test_first_limit_error_wins() -> None:
    stream = b"data: 123456\n" + b"x" * 20 + b"\n\n"
    assert decode(stream, max_line_bytes=15, max_event_bytes=5) == ([], ("SSE event", 5, 6))
    stream = b"data: 1\n" + b"x" * 20 + b"\ndata: 123456\n\n"
    assert decode(stream, max_line_bytes=15, max_event_bytes=5) == ([], ("SSE line", 15, 16))


def test_limit_error_comes_on_the_next_call() -> None:
    decoder = SSEDecoder(max_event_bytes=5)
    assert decoder.feed(b"data: a\n\ndata: 123456\n\ndata: b\n\n") == [msg("a")]
    with pytest.raises(StreamLimitError) as info:
        decoder.close()
    assert info.value.what == "SSE event"
    with pytest.raises(RuntimeError):
        decoder.feed(b"")


# --- round trip -----------------------------------------------------------------------------


def _text(exclude: str, max_size: int) -> st.SearchStrategy[str]:
    """Text without surrogates (which UTF-8 cannot encode) nor the characters in ``exclude``."""
    alphabet = st.characters(exclude_categories=["Cs"], exclude_characters=exclude)
    return st.text(alphabet, max_size=max_size)


_line_text = _text("\r\n", 12)
_event = st.fixed_dictionaries(
    {
        "event": _line_text,
        "data": _text("\r", 30),
        "id": st.none() | _line_text.filter(lambda s: "\0" not in s),
        "retry": st.none() | st.integers(0, 10**12),
    }
)


@given(
    st.lists(_event, max_size=6),
    st.lists(st.sampled_from(["\n", "\r", "\r\n"]), min_size=1),
    st.booleans(),
    st.data(),
)
def test_round_trip(
    specs: list[dict[str, Any]], endings: list[str], bom: bool, data: st.DataObject
) -> None:
    lines: list[str] = []
    expected: list[SSEEvent] = []
    last_id: str | None = None
    for spec in specs:
        if spec["event"]:
            lines.append("event: " + spec["event"])
        if spec["id"] is not None:
            lines.append("id: " + spec["id"])
            last_id = spec["id"]
        if spec["retry"] is not None:
            lines.append(f"retry: {spec['retry']}")
        lines.append(": comment")
        lines += ["data: " + part for part in spec["data"].split("\n")]
        lines.append("")
        expected.append(SSEEvent(spec["event"] or "message", spec["data"], last_id, spec["retry"]))
    text = ""
    for i, line in enumerate(lines):
        ending = endings[i % len(endings)]
        if not line and text.endswith("\r") and ending == "\n":
            ending = "\r\n"  # CR then LF would be one CRLF, not an empty line
        text += line + ending
    stream = (_BOM if bom else b"") + text.encode()
    assert run(data.draw(partitions(stream))) == (expected, None)


# --- random bytes against a direct reading of the standard -----------------------------------


def reference(stream: bytes) -> list[SSEEvent]:
    """WHATWG HTML §9.2.6 read literally: decode the whole stream, then split it into lines."""
    text = stream.decode("utf-8", "replace").removeprefix("\ufeff")
    *lines, _unterminated = re.split("\r\n|\r|\n", text)
    events: list[SSEEvent] = []
    data, event_type, last_id, retry = "", "", None, None
    for line in lines:
        if not line:
            if data:
                events.append(SSEEvent(event_type or "message", data[:-1], last_id, retry))
            data, event_type, retry = "", "", None
        elif not line.startswith(":"):
            name, colon, value = line.partition(":")
            if colon and value.startswith(" "):
                value = value[1:]
            if name == "data":
                data += value + "\n"
            elif name == "event":
                event_type = value
            elif name == "id" and "\0" not in value:
                last_id = value
            elif name == "retry" and value and all(c in "0123456789" for c in value):
                retry = int(value)
    return events


_PIECES = [
    b"data", b"data:", b"data: ", b"event: ", b"id:", b"retry:", b"retry: 12", b":", b" ",
    b"\n", b"\r", b"\r\n", b"\n\n", b"x", b"7", b"\0", b"\xef\xbb\xbf", b"\xef",
    b"\xe2\x80\xa8", b"\xc2\x85", b"\xf0\x9f\x98\x80", b"\xf0\x9f", b"\x80", b"\xff",
]
_soup = st.lists(st.sampled_from(_PIECES), max_size=60).map(b"".join)


@given(_soup, st.data())
def test_random_bytes_match_reference(stream: bytes, data: st.DataObject) -> None:
    assert run([stream]) == (reference(stream), None)
    assert run(data.draw(partitions(stream))) == (reference(stream), None)


def reference_limits(stream: bytes, max_line: int, max_event: int) -> Outcome:
    """Where the limits stop ``stream``, read from its bytes: the events before, and the error."""
    if len(stream) < len(_BOM) and _BOM.startswith(stream):
        return reference(stream), None  # not yet known to be a BOM or the start of a line
    *lines, unterminated = re.split(b"\r\n|\r|\n", stream.removeprefix(_BOM))
    line_error = ("SSE line", max_line, max_line + 1)
    dispatched = 0
    data_lengths: list[int] = []  # of the data lines of the current event
    for line in lines:
        if len(line) > max_line:
            return reference(stream)[:dispatched], line_error
        if not line:
            dispatched += bool(data_lengths)
            data_lengths = []
            continue
        name, _, value = line.partition(b":")
        if name == b"data":
            data_lengths.append(len(value.removeprefix(b" ")))
            size = sum(data_lengths) + len(data_lengths) - 1  # the lines joined with LF
            if size > max_event:
                return reference(stream)[:dispatched], ("SSE event", max_event, size)
    if len(unterminated) > max_line:
        return reference(stream)[:dispatched], line_error
    return reference(stream), None


@given(_soup, st.integers(0, 12), st.integers(0, 16), st.data())
def test_random_bytes_with_limits(
    stream: bytes, max_line: int, max_event: int, data: st.DataObject
) -> None:
    limits = {"max_line_bytes": max_line, "max_event_bytes": max_event}
    expected = reference_limits(stream, max_line, max_event)
    assert run([stream], **limits) == expected
    assert run([stream[i : i + 1] for i in range(len(stream))], **limits) == expected
    assert run(data.draw(partitions(stream)), **limits) == expected


# --- BodyDecoder ----------------------------------------------------------------------------


def test_body_decoder_returns_whole_body_at_close() -> None:
    decoder = BodyDecoder()
    assert decoder.feed(b'{"a": "\xc3') == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b'\xa9\xff"}') == []
    assert decoder.close() == [SSEEvent(data='{"a": "é\ufffd"}')]
    with pytest.raises(RuntimeError):
        decoder.feed(b"x")


def test_body_decoder_empty_body() -> None:
    assert BodyDecoder().close() == []


def test_body_decoder_limit() -> None:
    decoder = BodyDecoder(max_body_bytes=10)
    assert decoder.feed(b"0123456789") == []
    with pytest.raises(StreamLimitError) as info:
        decoder.feed(b"x")
    assert (info.value.what, info.value.limit, info.value.size) == ("response body", 10, 11)
    with pytest.raises(RuntimeError):
        decoder.close()
