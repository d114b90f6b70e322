"""``check_fixture``: one recorded provider body, checked every way the project promises.

For a ``<case>.sse`` body and its ``<case>.expected.json`` this runs the body through
``adapters.new_pipeline``:

- whole, byte by byte, and in random partitions (hypothesis), with identical outcomes;
- with every line ending turned into CRLF (same outcome);
- with a keep-alive comment and an unknown event injected between every two events: the same
  outcome when not strict, ``UnknownEventError`` when strict;

checks every finished stream with ``assert_stream_grammar``, and compares the done items, the
usage and finish reason (or the error) with the expected file. Expected file format::

    {"items": [<done items in MMSP JSON>],
     "stop": {"usage_metadata": {...}, "finish_reason": "stop"}}
or
    {"items": [...], "error": {"type": "ProviderStreamError", <fields to compare>}}
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

import adapters
from mmsp_core import UniEvent, UnknownEventError, to_wire
from mmsp_core.testing import assert_stream_grammar, outcome, run
from mmsp_core.testing.strategies import chunked

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

#: An event no machine knows: an unknown SSE event name and an unknown JSON ``type``.
UNKNOWN_EVENT = b'event: mmsp_test_unknown\ndata: {"type":"mmsp_test_unknown"}\n\n'
KEEP_ALIVE = b": keep-alive\n\n"

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def fixture_cases(folder: str) -> list[Path]:
    """Every ``.sse`` body under ``tests/fixtures/<folder>``, sorted."""
    return sorted((FIXTURES / folder).glob("*.sse"))


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
    return re.sub(rb"\r\n|\n|\r", b"\r\n", body)


def inject(body: bytes, extra: bytes) -> bytes:
    """Insert ``extra`` between every two events of ``body``."""
    return extra.join(split_events(body))


def _run(
    source: str, chunks: Iterable[bytes], *, strict: bool = False, base_url: str | None = None
) -> tuple[list[UniEvent], BaseException | None]:
    ticks = iter(range(1 << 30))
    pipeline = adapters.new_pipeline(
        source, strict=strict, clock=lambda: next(ticks), base_url=base_url
    )
    return run(pipeline, chunks)


def _comparable(source: str, chunks: Iterable[bytes], **options: Any) -> Any:
    return outcome(*_run(source, chunks, **options))


def decode_every_way(
    source: str, body: bytes, *, examples: int = 20, **options: Any
) -> tuple[list[UniEvent], BaseException | None]:
    """Decode ``body`` whole, byte by byte and in random chunkings; all must agree.

    A stream that ends without error must pass ``assert_stream_grammar``. Returns the events
    and the error of the whole run.
    """
    events, error = _run(source, [body], **options)
    whole = outcome(events, error)
    bytewise = [body[i : i + 1] for i in range(len(body))]
    assert _comparable(source, bytewise, **options) == whole, "byte by byte differs"

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(chunked(body))
    def random_chunkings(chunks: list[bytes]) -> None:
        assert _comparable(source, chunks, **options) == whole

    random_chunkings()
    if error is None:
        assert_stream_grammar(events)
    return events, error


def check_expected(
    events: list[UniEvent], error: BaseException | None, expected: dict[str, Any]
) -> None:
    """Compare a run with an expected file's content."""
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


def check_fixture(
    source: str, sse_path: Path, expected_path: Path | None = None, *, base_url: str | None = None
) -> None:
    """Run every check of the module docstring on one recorded body."""
    expected_path = expected_path or sse_path.with_suffix(".expected.json")
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    body = sse_path.read_bytes()

    events, error = decode_every_way(source, body, examples=25, base_url=base_url)
    check_expected(events, error, expected)
    whole = outcome(events, error)

    assert _comparable(source, [to_crlf(body)], base_url=base_url) == whole, "CRLF differs"
    assert _comparable(source, split_events(body), base_url=base_url) == whole

    noisy = inject(body, KEEP_ALIVE + UNKNOWN_EVENT)
    assert _comparable(source, [noisy], base_url=base_url) == whole, "unknown events changed it"
    _, strict_error = _run(source, [noisy], strict=True, base_url=base_url)
    if len(split_events(body)) > 1:
        assert isinstance(strict_error, UnknownEventError), "strict mode let an unknown event by"
