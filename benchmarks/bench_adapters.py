"""Throughput of each wire protocol: decoder + machine + finalizer, in memory (issue 3).

For every protocol, ``adapters.render`` (08 D49) writes two bodies: a text answer of N
deltas, and a tool call whose arguments arrive as N fragments. Each body is decoded from
memory in 64 KiB chunks, best of three runs; the script prints wire events and public events
per second.

Run: ``python benchmarks/bench_adapters.py [N] [PROTOCOL ...]`` (default 100000, every
protocol).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import adapters
from mmsp_core.errors import MMSPError
from mmsp_core.model import DoneItem, FinishReason, TextDone, ToolCallDone, UsageMetadata

CHUNK_SIZE = 64 * 1024
FRAGMENT = 6
REPEATS = 3


def body_of(protocol: str, item: DoneItem, finish: FinishReason, fragments: int) -> bytes:
    """The body ``protocol`` sends for one item cut into ``fragments`` fragments."""
    usage = UsageMetadata(
        cached_tokens=0, prompt_tokens=20, thoughts_tokens=0, response_tokens=fragments
    )
    return adapters.render(protocol, [item], usage, finish, model="bench", fragment_size=FRAGMENT)


def text_item(deltas: int) -> DoneItem:
    """A text item that renders as ``deltas`` fragments of ``FRAGMENT`` characters."""
    return TextDone("token " * deltas)


def tool_item(fragments: int) -> DoneItem:
    """A tool call whose arguments render as ``fragments`` fragments."""
    payload = "y" * (fragments * FRAGMENT - len('{"blob":""}'))
    return ToolCallDone("save", "call_bench", {"blob": payload})


def chunks_of(body: bytes) -> Iterator[bytes]:
    return (body[i : i + CHUNK_SIZE] for i in range(0, len(body), CHUNK_SIZE))


def measure(protocol: str, name: str, body: bytes) -> None:
    """Decode ``body`` ``REPEATS`` times; print the best rate."""
    wire_events = body.count(b"\n\n")
    seconds = float("inf")
    public_events = 0
    for _ in range(REPEATS):
        start = time.perf_counter()
        public_events = sum(1 for _ in adapters.decode(protocol, chunks_of(body)))
        seconds = min(seconds, time.perf_counter() - start)
    print(
        f"{protocol:>16} {name:>9}: {len(body) / 1e6:5.1f} MB in {seconds:.2f} s: "
        f"{wire_events / seconds:>9,.0f} wire events/s, "
        f"{public_events / seconds:>9,.0f} public events/s"
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    protocols = sys.argv[2:] or sorted(adapters.PROTOCOLS)
    for protocol in protocols:
        for name, item, finish in (("text", text_item(n), FinishReason.STOP),
                                   ("tool call", tool_item(n), FinishReason.TOOL_CALL)):
            try:
                measure(protocol, name, body_of(protocol, item, finish, n))
            except MMSPError as exc:  # an embedding protocol carries no text or tool call
                print(f"{protocol:>16} {name:>9}: skipped ({type(exc).__name__}: {exc})")


if __name__ == "__main__":
    main()
