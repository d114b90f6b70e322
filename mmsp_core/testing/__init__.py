"""Public test helpers (09): the grammar checker, chunkings, and a pipeline runner.

``assert_stream_grammar`` checks every rule of the public grammar (seed "流式", spec 02 §12),
including that every ``.done`` equals the join of its fragments. ``chunkings`` yields ways to
cut a byte string; ``run`` drives a pipeline and returns its outcome as a value, so tests can
compare outcomes with one ``==``. Hypothesis strategies live in ``mmsp_core.testing.strategies``
(importable only with hypothesis installed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..errors import MMSPError
from ..kinds import KINDS
from ..model import FinishReason, UniEvent, UsageMetadata
from ..pipeline import END, NEED_DATA, StreamPipeline
from ..wire import to_wire

__all__ = ["assert_stream_grammar", "chunkings", "outcome", "run"]


def chunkings(data: bytes, *, max_two_piece: int = 4096) -> Iterator[list[bytes]]:
    """Yield partitions of ``data``: whole, one byte at a time, then every two-piece split.

    The two-piece splits (all ``len(data) + 1`` cut points) are only yielded when ``data``
    is at most ``max_two_piece`` bytes long.
    """
    yield [data]
    yield [data[i : i + 1] for i in range(len(data))]
    if len(data) <= max_two_piece:
        for cut in range(len(data) + 1):
            yield [data[:cut], data[cut:]]


def run(
    pipeline: StreamPipeline, chunks: Iterable[bytes]
) -> tuple[list[UniEvent], BaseException | None]:
    """Feed ``chunks`` then EOF, drain; return (public events, the error raised or None)."""
    events: list[UniEvent] = []
    try:
        for chunk in chunks:
            pipeline.receive_data(chunk)
            while (event := pipeline.next_event()) is not NEED_DATA:
                assert event is not END, "END before end of input"
                events.append(event)
        pipeline.receive_eof()
        while (event := pipeline.next_event()) is not END:
            assert event is not NEED_DATA, "NEED_DATA after end of input"
            events.append(event)
    except MMSPError as exc:
        return events, exc
    return events, None


def outcome(
    events: Sequence[UniEvent], error: BaseException | None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Return a comparable form of a run: the events' wire JSON and the error's wire JSON."""
    wire_error: dict[str, Any] | None = None
    if isinstance(error, MMSPError):
        wire_error = to_wire(error)
    elif error is not None:
        wire_error = {"error": {"type": type(error).__name__, "message": str(error)}}
    return [to_wire(e) for e in events], wire_error


def _fail(index: int, message: str) -> AssertionError:
    return AssertionError(f"event {index}: {message}")


def _joined(kind_name: str, values: list[Any]) -> Any:
    if kind_name in ("inline_data", "inline_thinking"):
        return b"".join(values)
    if kind_name == "embedding":
        return tuple(x for v in values for x in v)
    return "".join(values)


def assert_stream_grammar(events: Sequence[UniEvent]) -> None:
    """Check a finished public stream against every rule of the grammar.

    ``stream := delta_event* stop_event``; ``group := K.delta+ K.done``; one item per delta
    event; no ``item_id`` in fidelity; at most one fragment per group with fidelity, equal to
    the ``.done``'s; name and id on the first ``tool_call.delta`` only; every ``.done`` equal
    to the join of its fragments (arguments parsed); no group left open (spec 02 §12).

    Raises:
        AssertionError: naming the first rule broken and the event index.
    """
    if not events:
        raise AssertionError("empty stream: a stream ends with a stop event")
    *deltas, stop = events
    last = len(events) - 1
    if stop.event_type != "stop":
        raise _fail(last, "the last event must be the stop event")
    if stop.content_items:
        raise _fail(last, "the stop event carries no content items")
    if not isinstance(stop.usage_metadata, UsageMetadata):
        raise _fail(last, "the stop event must carry usage_metadata")
    if stop.finish_reason not in set(FinishReason):
        raise _fail(last, f"bad finish_reason {stop.finish_reason!r}")
    if stop.created_at is None:
        raise _fail(last, "created_at missing")

    group_kind: str | None = None
    fragments: list[Any] = []
    for index, event in enumerate(deltas):
        if event.event_type != "delta":
            raise _fail(index, "only the last event may be a stop event")
        if event.usage_metadata is not None or event.finish_reason is not None:
            raise _fail(index, "a delta event carries no usage_metadata or finish_reason")
        if event.created_at is None:
            raise _fail(index, "created_at missing")
        if len(event.content_items) != 1:
            raise _fail(index, "a delta event holds exactly one item")
        item = event.content_items[0]
        kind_name, _, phase = item.type.partition(".")
        if f"{kind_name}.delta" not in KINDS or phase not in ("delta", "done"):
            raise _fail(index, f"item type {item.type!r} does not stream")
        fidelity = item.fidelity
        if fidelity is not None and "item_id" in fidelity:
            raise _fail(index, "item_id must not reach the public stream")
        if group_kind is not None and kind_name != group_kind:
            raise _fail(index, f"{item.type} inside an open {group_kind} group")
        if phase == "delta":
            if group_kind is None:
                group_kind = kind_name
                if kind_name == "tool_call" and not (item.name and item.tool_call_id):  # type: ignore[union-attr]
                    raise _fail(index, "the first tool_call.delta carries name and tool_call_id")
            elif kind_name == "tool_call" and (item.name or item.tool_call_id):  # type: ignore[union-attr]
                raise _fail(index, "a later tool_call.delta carries empty name and tool_call_id")
            fragments.append(item)
            continue
        if group_kind is None:
            raise _fail(index, f"{item.type} closes no group")
        _check_done(index, kind_name, fragments, item)
        group_kind = None
        fragments = []
    if group_kind is not None:
        raise _fail(last, f"the {group_kind} group was never closed")


def _check_done(index: int, kind_name: str, fragments: list[Any], done: Any) -> None:
    with_fidelity = [f.fidelity for f in fragments if f.fidelity]
    if len(with_fidelity) > 1:
        raise _fail(index, "more than one fragment of the group carries fidelity")
    expected_fidelity = with_fidelity[0] if with_fidelity else None
    if (done.fidelity or None) != expected_fidelity:
        raise _fail(index, "the .done's fidelity differs from its fragment's")
    growing = KINDS[f"{kind_name}.delta"].growing
    joined = _joined(kind_name, [growing(f) for f in fragments])
    first = fragments[0]
    if kind_name == "tool_call":
        if (done.name, done.tool_call_id) != (first.name, first.tool_call_id):
            raise _fail(index, "tool_call.done's name and id differ from the first fragment's")
        try:
            parsed = json.loads(joined or "{}")
        except ValueError:
            raise _fail(index, "a tool_call.done whose fragments do not parse") from None
        if done.arguments != parsed:
            raise _fail(index, "tool_call.done's arguments differ from the parsed fragments")
        return
    value = done.embedding if kind_name == "embedding" else growing(done)
    if value != joined:
        raise _fail(index, f"{done.type} differs from the join of its fragments")
    if kind_name in ("inline_data", "inline_thinking") and done.mime_type != first.mime_type:
        raise _fail(index, f"{done.type}'s mime_type differs from the first fragment's")
