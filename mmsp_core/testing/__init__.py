"""Public test helpers (09): the grammar checker, chunkings, and a pipeline runner.

``assert_stream_grammar`` checks every rule of the public grammar (seed "流式", spec 02 §12),
including that every ``.done`` equals the join of its fragments. ``chunkings`` yields ways to
cut a byte string; ``run`` drives a pipeline and returns its outcome as a value, so tests can
compare outcomes with one ``==``. Hypothesis strategies live in ``mmsp_core.testing.strategies``
(importable only with hypothesis installed).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..errors import MMSPError
from ..grammar import StreamGrammar
from ..model import UniEvent
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


def _violation(index: int, rule: str) -> AssertionError:
    return AssertionError(f"event {index}: {rule}")


def assert_stream_grammar(events: Sequence[UniEvent]) -> None:
    """Check a finished public stream against every rule of the grammar (spec 02 §12).

    ``stream := delta_event* stop_event``; ``group := K.delta+ K.done``; one item per delta
    event; no ``item_id`` in fidelity; at most one fragment per group with fidelity, equal to
    the ``.done``'s; name and id on the first ``tool_call.delta`` only; every ``.done`` equal
    to the join of its fragments (arguments parsed); no group left open. The rules are
    ``mmsp_core.grammar.StreamGrammar``'s, the same the mmsp pass-through applies.

    Raises:
        AssertionError: naming the first rule broken and the event index.
    """
    grammar = StreamGrammar(_violation)
    for event in events:
        grammar.check(event)
    if not grammar.finished:
        if not events:
            raise AssertionError("empty stream: a stream ends with a stop event")
        raise _violation(len(events) - 1, "the last event must be the stop event")
