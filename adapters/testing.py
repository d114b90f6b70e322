"""``check_protocol``: the conformance suite every wire protocol passes (08 D59, D63).

On the model of trio's ``check_one_way_stream``: a protocol's tests call
``check_protocol(name, fixtures)`` with its recorded bodies and get every check the project
promises, from nothing but the protocol's record (``adapters.PROTOCOLS[name]``: its decoder,
machine, finalizer, renderer and ``normalize``). So a new protocol gets all of them by passing
its fixtures. For each recorded body (``check_recording``):

- it is decoded whole, byte by byte and in hypothesis chunkings, with identical outcomes, and
  every stream that ends without error passes ``assert_stream_grammar`` (``decode_every_way``);
- the done items and the stop's usage and finish reason (or the error) are those of its
  expected file;
- with every line ending turned into CRLF: the same outcome;
- for an event-stream protocol (``record.new_decoder()`` is an ``SSEDecoder``) also cut after
  every event, and with a keep-alive comment and an unknown event between every two events: the
  same outcome when not strict, ``UnknownEventError`` when strict;
- "only ``MMSPError``" (``check_only_mmsp_errors``): hypothesis puts arbitrary JSON values
  (``[]``, ``{}``, ``null``, booleans, huge numbers, strings, nesting up to 100,000 deep) at
  any path of the body's JSON documents; the outcome is events and either no error (the stream
  then passes the grammar) or an ``MMSPError`` other than ``StreamProtocolError``, which only
  ever signals a defect of this library (D59). Never any other exception.

And once per protocol, ``check_render_round_trip``: hypothesis done items, usage and finish
reason through ``adapters.render`` and back through ``decode`` give the record's
``normalize(items, finish_reason)``, its ``normalize_usage(usage)`` (the usage itself on every
protocol whose wire carries all four counts), and ``EmptyResponseError`` when nothing but
thinking survives.

A one-body protocol (embeddings: ``record.new_decoder()`` is not an ``SSEDecoder``) gets every
check but the event-stream ones: its body is one JSON document, decoded whole, byte by byte and
in chunkings, with CRLF line endings and with whitespace around it (JSON's own whitespace, so
the same outcome), and with hostile values at any path of that document.

A protocol in a binary framing (``record.traits.framing``: Bedrock's AWS event stream, 08 D72)
gets the checks of its frames instead of the SSE ones, and no line-ending one (its bytes are
not text): decoded whole, byte by byte, in chunkings and cut after every frame; with a frame
carrying an unknown event between every two frames (the same outcome when not strict,
``UnknownEventError`` when strict); and with hostile values at any path of the JSON document
each frame carries (its event's data, inside the frame's own encoding).

Fixtures: ``fixtures`` is a directory or an iterable of body paths. In a directory the bodies
are the files named ``<case>.sse``, ``<case>.json`` or ``<case>.eventstream`` (an AWS event
stream; ``<case>`` without a dot); a file with
more suffixes (``<case>.expected.json``) is not a body. Every
body needs ``<case>.expected.json`` beside it::

    {"items": [<done items in MMSP JSON>],
     "stop": {"usage_metadata": {...}, "finish_reason": "stop"}}
or
    {"items": [...], "error": {"type": "ProviderStreamError", <fields to compare>}}

Needs hypothesis, imported only when a check runs: importing this module loads nothing but
``adapters`` and ``mmsp_core`` (hypothesis itself loads trio, which the pure packages must not,
see ``tests/core/test_purity.py``). It needs no pytest: a failed check raises
``AssertionError`` (hypothesis adds the falsifying example to it); any other exception is a
defect the check found. It reads the fixture files it is given and nothing else.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from mmsp_core.errors import (
    EmptyResponseError,
    MMSPError,
    StreamProtocolError,
    UnknownEventError,
)
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    InlineThinkingDone,
    ThinkingDone,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.sse import SSEDecoder
from mmsp_core.testing import assert_stream_grammar, outcome, run
from mmsp_core.wire import to_wire

from . import new_pipeline, render, resolve
from ._registry import PROTOCOLS
from ._spec import Framing

if TYPE_CHECKING:
    from hypothesis import HealthCheck, settings
    from hypothesis.strategies import DataObject

__all__ = [
    "KEEP_ALIVE",
    "UNKNOWN_EVENT",
    "ProtocolCheck",
    "check_expected",
    "check_only_mmsp_errors",
    "check_protocol",
    "check_recording",
    "check_render_round_trip",
    "decode_every_way",
    "fixture_bodies",
    "inject",
    "protocol_checks",
    "split_events",
    "to_crlf",
]

#: An event no machine knows: an unknown SSE event name and an unknown JSON ``type``.
UNKNOWN_EVENT: Final = b'event: mmsp_test_unknown\ndata: {"type":"mmsp_test_unknown"}\n\n'
KEEP_ALIVE: Final = b": keep-alive\n\n"

_EVENT_END: Final = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LINE_END: Final = re.compile(rb"\r\n|\n|\r")
_BODY_SUFFIXES: Final = (".sse", ".json", ".eventstream")

Run = tuple[list[UniEvent], BaseException | None]


# --------------------------------------------------------------------------------------------
# The suite
# --------------------------------------------------------------------------------------------


@attrs.frozen
class ProtocolCheck:
    """One check of ``check_protocol``: ``id`` names it (``"<case>"``, ``"<case>: only
    MMSPError"``, ``"render round trip"``), ``run()`` runs it."""

    id: str
    run: Callable[[], None]


def protocol_checks(
    name: str, fixtures: Path | str | Iterable[Path | str], *, examples: int | None = None
) -> list[ProtocolCheck]:
    """Every check ``check_protocol`` runs, one by one (to report each as its own test).

    ``examples`` is the number of hypothesis examples of each property: chunkings, hostile
    values per body (four times as many) and render round trips (eight times as many);
    ``None`` gives each property the loaded hypothesis profile's ``max_examples``.

    Raises:
        KeyError: ``name`` is not a registered protocol.
        AssertionError: no bodies, or a body without its expected file.
    """
    if name not in PROTOCOLS:
        raise KeyError(f"no registered protocol {name!r}")
    checks: list[ProtocolCheck] = []
    for body in fixture_bodies(fixtures):
        case = body.name.split(".")[0]
        checks.append(ProtocolCheck(case, functools.partial(
            check_recording, name, body, examples=examples)))
        checks.append(ProtocolCheck(f"{case}: only MMSPError", functools.partial(
            check_only_mmsp_errors, name, body.read_bytes(), examples=_times(4, examples))))
    checks.append(ProtocolCheck("render round trip", functools.partial(
        check_render_round_trip, name, examples=_times(8, examples))))
    return checks


def check_protocol(
    name: str, fixtures: Path | str | Iterable[Path | str], *, examples: int | None = None
) -> None:
    """Run every check of the module docstring for protocol ``name`` on ``fixtures``.

    Raises:
        AssertionError: the first check that fails, with a note naming it.
        KeyError: ``name`` is not a registered protocol.
    """
    for check in protocol_checks(name, fixtures, examples=examples):
        try:
            check.run()
        except BaseException as exc:
            exc.add_note(f"check_protocol({name!r}): {check.id}")
            raise


def fixture_bodies(fixtures: Path | str | Iterable[Path | str]) -> list[Path]:
    """The recorded bodies of ``fixtures``: a directory's, sorted, or the paths given.

    Raises:
        AssertionError: no bodies, or a body without its ``<case>.expected.json``.
    """
    if isinstance(fixtures, str | Path):
        folder = Path(fixtures)
        bodies = sorted(
            p for p in folder.iterdir() if p.suffix in _BODY_SUFFIXES and p.name.count(".") == 1
        )
    else:
        bodies = [Path(p) for p in fixtures]
    assert bodies, f"no recorded bodies in {fixtures}"
    for body in bodies:
        assert _expected_path(body).is_file(), f"{body.name} has no expected file beside it"
    return bodies


def _expected_path(body: Path) -> Path:
    return body.with_name(body.name.split(".")[0] + ".expected.json")


def _event_stream(source: str) -> bool:
    """Whether ``source``'s protocol reads an event stream (its decoder is an SSE decoder)."""
    return isinstance(resolve(source)[1].new_decoder(), SSEDecoder)


def _framing(source: str) -> Framing | None:
    """The binary framing of ``source``'s protocol, if it has one."""
    return resolve(source)[1].traits.framing


# --------------------------------------------------------------------------------------------
# One recorded body
# --------------------------------------------------------------------------------------------


def split_events(body: bytes) -> list[bytes]:
    """Cut a body after every blank line (the end of each SSE event block)."""
    pieces: list[bytes] = []
    start = 0
    for match in _EVENT_END.finditer(body):
        pieces.append(body[start : match.end()])
        start = match.end()
    if start < len(body):
        pieces.append(body[start:])
    return pieces


def to_crlf(body: bytes) -> bytes:
    """Turn every line ending (CRLF, LF or lone CR) into CRLF."""
    return _LINE_END.sub(b"\r\n", body)


def inject(body: bytes, extra: bytes) -> bytes:
    """Insert ``extra`` between every two events of ``body``."""
    return extra.join(split_events(body))


def _run(
    source: str, chunks: Iterable[bytes], *, strict: bool = False, base_url: str | None = None
) -> Run:
    ticks = iter(range(1 << 30))
    pipeline = new_pipeline(source, strict=strict, clock=lambda: next(ticks), base_url=base_url)
    return run(pipeline, chunks)


def _comparable(source: str, chunks: Iterable[bytes], **options: Any) -> Any:
    return outcome(*_run(source, chunks, **options))


def _times(factor: int, examples: int | None) -> int | None:
    """``factor`` times ``examples``; ``None`` (the profile's count) stays ``None``."""
    return None if examples is None else factor * examples


def _settings(examples: int | None, *also_suppressed: HealthCheck) -> settings:
    """The hypothesis settings of one property: ``examples`` examples, or the loaded profile's
    ``max_examples`` when ``None``; no deadline (a decode may be slow on a busy machine)."""
    from hypothesis import HealthCheck, settings

    chosen = settings(deadline=None,
                      suppress_health_check=[HealthCheck.too_slow, *also_suppressed])
    return chosen if examples is None else settings(chosen, max_examples=examples)


def decode_every_way(
    source: str,
    body: bytes,
    *,
    examples: int | None = None,
    strict: bool = False,
    base_url: str | None = None,
) -> Run:
    """Decode ``body`` whole, byte by byte and in ``examples`` random chunkings (``None``: the
    loaded hypothesis profile's ``max_examples``); all must agree.

    A stream that ends without error must pass ``assert_stream_grammar``. Returns the events
    and the error of the whole run.

    Raises:
        AssertionError: two ways disagree, or the grammar is broken.
    """
    from hypothesis import HealthCheck, given

    from mmsp_core.testing.strategies import chunked

    options: dict[str, Any] = {"strict": strict, "base_url": base_url}
    events, error = _run(source, [body], **options)
    whole = outcome(events, error)
    bytewise = [body[i : i + 1] for i in range(len(body))]
    assert _comparable(source, bytewise, **options) == whole, "byte by byte differs"

    @_settings(examples, HealthCheck.data_too_large)
    @given(chunked(body))
    def random_chunkings(chunks: list[bytes]) -> None:
        assert _comparable(source, chunks, **options) == whole, "a chunking differs"

    random_chunkings()
    if error is None:
        assert_stream_grammar(events)
    return events, error


def check_expected(events: list[UniEvent], error: BaseException | None, expected: Any) -> None:
    """Compare a run with an expected file's content (format in the module docstring).

    Raises:
        AssertionError: naming what differs.
    """
    done = [
        to_wire(e.content_items[0])
        for e in events
        if e.event_type == "delta" and e.content_items[0].type.endswith(".done")
    ]
    assert done == expected["items"], "done items differ from the expected file"
    if "error" in expected:
        assert error is not None, f"expected {expected['error']['type']}, the stream ended fine"
        wire = to_wire(error)["error"]
        for key, value in expected["error"].items():
            assert wire.get(key) == value, f"error field {key}: {wire.get(key)!r} != {value!r}"
        return
    assert error is None, f"unexpected error {error!r}"
    stop = to_wire(events[-1])
    assert stop["usage_metadata"] == expected["stop"]["usage_metadata"]
    assert stop["finish_reason"] == expected["stop"]["finish_reason"]


def check_recording(
    source: str,
    body_path: Path,
    expected_path: Path | None = None,
    *,
    base_url: str | None = None,
    examples: int | None = None,
) -> None:
    """Run the checks of one recorded body (module docstring) with ``source`` (a protocol or
    client type name); ``expected_path`` defaults to ``<case>.expected.json`` beside it.

    Raises:
        AssertionError: naming the check that failed.
    """
    expected_path = expected_path or _expected_path(body_path)
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    body = body_path.read_bytes()

    events, error = decode_every_way(source, body, examples=examples, base_url=base_url)
    check_expected(events, error, expected)
    whole = outcome(events, error)
    framing = _framing(source)
    if framing is not None:
        _check_frames(source, body, framing, whole, base_url=base_url)
        return
    assert _comparable(source, [to_crlf(body)], base_url=base_url) == whole, "CRLF differs"
    if not _event_stream(source):
        padded = b" \r\n\t" + body + b"\n\n "
        assert _comparable(source, [padded], base_url=base_url) == whole, "whitespace differs"
        return
    assert _comparable(source, split_events(body), base_url=base_url) == whole
    noisy = inject(body, KEEP_ALIVE + UNKNOWN_EVENT)
    assert _comparable(source, [noisy], base_url=base_url) == whole, "unknown events changed it"
    _, strict_error = _run(source, [noisy], strict=True, base_url=base_url)
    if len(split_events(body)) > 1:
        assert isinstance(strict_error, UnknownEventError), "strict mode let an unknown event by"


def _check_frames(
    source: str, body: bytes, framing: Framing, whole: Any, *, base_url: str | None
) -> None:
    """The checks of a body in a binary framing (module docstring): cut after every frame,
    and an unknown event between every two frames.

    Raises:
        AssertionError: naming the check that failed.
    """
    frames = framing.frames(body)
    assert _comparable(source, frames, base_url=base_url) == whole, "a cut between frames differs"
    noisy = framing.unknown_frame.join(frames)
    assert _comparable(source, [noisy], base_url=base_url) == whole, "unknown events changed it"
    _, strict_error = _run(source, [noisy], strict=True, base_url=base_url)
    if len(frames) > 1:
        assert isinstance(strict_error, UnknownEventError), "strict mode let an unknown event by"


# --------------------------------------------------------------------------------------------
# Only MMSPError (08 D59)
# --------------------------------------------------------------------------------------------


@attrs.frozen
class _Document:
    """One JSON document of a body: an SSE event's data (``lines`` are its other lines, in
    order), the document a binary ``frame`` carries, or, for a one-body protocol, the whole
    body (``lines`` and ``frame`` are ``None``)."""

    lines: tuple[bytes, ...] | None
    value: Any
    frame: bytes | None = None


def _documents(
    body: bytes, event_stream: bool, framing: Framing | None
) -> list[bytes | _Document]:
    """``body`` cut into raw pieces and the JSON documents hostile values go into."""
    if framing is not None:
        return [_framed_document(framing, frame) for frame in framing.frames(body)]
    if not event_stream:
        try:
            return [_Document(None, json.loads(body))]
        except ValueError:
            return [body]
    pieces: list[bytes | _Document] = []
    for block in split_events(body):
        lines = [line for line in _LINE_END.split(block) if line]
        data = [line for line in lines if _is_data(line)]
        other = tuple(line for line in lines if not _is_data(line))
        try:
            value = json.loads(b"\n".join(line.partition(b":")[2].lstrip(b" ") for line in data))
        except ValueError:
            pieces.append(block)
            continue
        pieces.append(_Document(other, value) if data else block)
    return pieces


def _framed_document(framing: Framing, frame: bytes) -> bytes | _Document:
    """The JSON document ``frame`` carries, or ``frame`` itself when it carries none."""
    document = framing.document(frame)
    try:
        return frame if document is None else _Document(None, json.loads(document), frame)
    except ValueError:
        return frame


def _is_data(line: bytes) -> bool:
    return line == b"data" or line.startswith(b"data:")


def _write(pieces: Sequence[bytes | _Document], framing: Framing | None) -> bytes:
    from mmsp_core.testing.strategies import dumps

    out: list[bytes] = []
    for piece in pieces:
        if isinstance(piece, bytes):
            out.append(piece)
        elif piece.frame is not None:
            assert framing is not None
            out.append(framing.reframe(piece.frame, dumps(piece.value).encode()))
        elif piece.lines is None:
            out.append(dumps(piece.value).encode())
        else:
            out.append(b"\n".join([*piece.lines, b"data: " + dumps(piece.value).encode()]))
            out.append(b"\n\n")
    return b"".join(out)


def check_only_mmsp_errors(source: str, body: bytes, *, examples: int | None = None) -> None:
    """Put hostile JSON values at arbitrary paths of ``body``'s JSON documents (module
    docstring); decoding must give events and no error or an ``MMSPError`` (08 D59).

    Raises:
        AssertionError: a ``StreamProtocolError`` (a defect of the library), or a stream that
            ended without error but breaks the grammar.
        Exception: whatever else the pipeline let out: that is the defect found.
    """
    from hypothesis import HealthCheck, given
    from hypothesis import strategies as st

    from mmsp_core.testing.strategies import apply_edits, edits

    framing = _framing(source)
    pieces = _documents(body, _event_stream(source), framing)
    positions = [i for i, piece in enumerate(pieces) if isinstance(piece, _Document)]
    assert positions, "the body holds no JSON document to put values into"

    @_settings(examples, HealthCheck.data_too_large)
    @given(data=st.data(), strict=st.booleans())
    def hostile_values(data: DataObject, strict: bool) -> None:
        hostile = list(pieces)
        for _ in range(data.draw(st.integers(1, 2), label="documents edited")):
            position = data.draw(st.sampled_from(positions), label="document")
            document = hostile[position]
            assert isinstance(document, _Document)
            changes = data.draw(edits(document.value), label="edits")
            hostile[position] = attrs.evolve(document, value=apply_edits(document.value, changes))
        events, error = _run(source, [_write(hostile, framing)], strict=strict)
        assert not isinstance(error, StreamProtocolError), f"a library defect: {error!r}"
        if error is None:
            assert_stream_grammar(events)

    hostile_values()


# --------------------------------------------------------------------------------------------
# Render round trip (08 D49)
# --------------------------------------------------------------------------------------------


def _only_thinking(items: Sequence[DoneItem]) -> bool:
    return all(isinstance(item, ThinkingDone | InlineThinkingDone) for item in items)


def _check_render_refuses(
    name: str,
    items: list[DoneItem],
    counts: UsageMetadata,
    finish: FinishReason,
    fragment_size: int | None,
    refusal: MMSPError,
) -> None:
    """``render`` of what the protocol's ``normalize`` refused with ``refusal`` must refuse it
    with an error of the same class.

    Raises:
        AssertionError: ``render`` accepts it, or refuses with another class.
    """
    try:
        render(name, items, counts, finish, fragment_size=fragment_size)
    except MMSPError as exc:
        assert type(exc) is type(refusal), f"render refuses with {exc!r}, not {refusal!r}"
        return
    raise AssertionError(f"normalize refuses ({refusal!r}), render does not")


def check_render_round_trip(name: str, *, examples: int | None = None) -> None:
    """Hypothesis done items, usage and finish reason -> ``adapters.render(name, ...)`` ->
    decode in random chunkings -> the record's ``normalize``, its ``normalize_usage`` of that
    usage, that finish reason;
    ``EmptyResponseError`` when nothing but thinking survives (RFC-0003 §5). An item the
    protocol cannot carry makes ``normalize`` raise an ``MMSPError``; ``render`` must then
    raise one of the same class.

    Raises:
        AssertionError: naming what differs, with the falsifying example.
    """
    from hypothesis import given
    from hypothesis import strategies as st

    from mmsp_core.testing.strategies import chunked, done_items, finish_reasons, usage

    normalize = PROTOCOLS[name].normalize
    normalize_usage = PROTOCOLS[name].normalize_usage

    @_settings(examples)
    @given(
        items=st.lists(done_items(), max_size=6),
        counts=usage(),
        finish=finish_reasons(),
        fragment_size=st.none() | st.integers(1, 12),
        data=st.data(),
    )
    def round_trip(
        items: list[DoneItem],
        counts: UsageMetadata,
        finish: FinishReason,
        fragment_size: int | None,
        data: DataObject,
    ) -> None:
        try:
            expected_items, expected_finish = normalize(items, finish)
        except MMSPError as refusal:
            _check_render_refuses(name, items, counts, finish, fragment_size, refusal)
            return
        body = render(name, items, counts, finish, fragment_size=fragment_size)
        events, error = _run(name, data.draw(chunked(body), label="chunks"))
        done = [
            to_wire(e.content_items[0])
            for e in events
            if e.event_type == "delta" and e.content_items[0].type.endswith(".done")
        ]
        assert done == [to_wire(item) for item in expected_items], "done items differ"
        if _only_thinking(expected_items):
            assert isinstance(error, EmptyResponseError), f"expected EmptyResponseError: {error!r}"
            return
        assert error is None, f"unexpected error {error!r}"
        assert_stream_grammar(events)
        stop = events[-1]
        assert stop.usage_metadata == normalize_usage(counts), "usage differs"
        assert stop.finish_reason == expected_finish, "finish reason differs"

    round_trip()
