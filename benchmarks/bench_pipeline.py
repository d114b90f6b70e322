"""Throughput of the pure core: SSE decoder + JsonEventsMachine + finalizer (issue 2).

Builds an in-memory body of N small text deltas in MMSP client-event JSON and reports:

- public events per second at chunk sizes of 1 B, 64 B and 64 KiB;
- at 64 KiB, the pipeline's time divided by the time of ``json.loads`` alone over the same
  data lines (the floor any JSON-over-SSE consumer pays; target: at most 3x);
- at 1 B, the time for twice the input divided by the time for the input (target: at most
  2.3x; quadratic buffering would show ~4x).

Run: ``python benchmarks/bench_pipeline.py [N]`` (default 100000).
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable

from mmsp_core import END, NEED_DATA, JsonEventsMachine, StreamPipeline


def make_body(deltas: int) -> tuple[bytes, list[bytes]]:
    """Return (SSE body, the JSON data lines) for ``deltas`` text deltas and a stop."""
    lines = [
        json.dumps(
            {
                "role": "assistant",
                "event_type": "delta",
                "content_items": [
                    {"type": "text.delta", "text": f"tok{i % 97} ", "fidelity": {"item_id": "0"}}
                ],
                "usage_metadata": None,
                "finish_reason": None,
                "created_at": None,
            },
            separators=(",", ":"),
        ).encode()
        for i in range(deltas)
    ]
    lines.append(
        json.dumps(
            {
                "event_type": "stop",
                "content_items": [],
                "usage_metadata": {"prompt_tokens": 5, "response_tokens": deltas},
                "finish_reason": "stop",
            }
        ).encode()
    )
    body = b"".join(b"data: " + line + b"\n\n" for line in lines)
    return body, lines


def run_pipeline(body: bytes, chunk_size: int) -> int:
    """Feed ``body`` in chunks of ``chunk_size``; return the number of public events."""
    pipeline = StreamPipeline(JsonEventsMachine(), client="bench", clock=lambda: 0)
    count = 0
    for start in range(0, len(body), chunk_size):
        pipeline.receive_data(body[start : start + chunk_size])
        while pipeline.next_event() is not NEED_DATA:
            count += 1
    pipeline.receive_eof()
    while pipeline.next_event() is not END:
        count += 1
    return count


def best_of(repeats: int, func: Callable[[], object]) -> float:
    """The fastest of ``repeats`` wall-clock timings of ``func()``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    deltas = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    body, lines = make_body(deltas)
    print(f"body: {deltas} deltas, {len(body) / 1e6:.1f} MB")
    events = run_pipeline(body, 1 << 16)
    loads = best_of(5, lambda: [json.loads(line) for line in lines])
    for chunk in (1 << 16, 64, 1):
        seconds = best_of(1 if chunk == 1 else 3, functools.partial(run_pipeline, body, chunk))
        print(f"chunk {chunk:>6} B: {events / seconds:>12,.0f} events/s  ({seconds:.3f} s)")
        if chunk == 1 << 16:
            print(f"  vs json.loads alone ({loads:.3f} s): {seconds / loads:.2f}x (target <= 3x)")
    half_body, _ = make_body(deltas // 2)
    one = best_of(1, lambda: run_pipeline(half_body, 1))
    two = best_of(1, lambda: run_pipeline(body, 1))
    print(f"1 B chunks, twice the input: {two / one:.2f}x the time (target <= 2.3x)")


if __name__ == "__main__":
    main()
