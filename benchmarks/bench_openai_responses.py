"""Throughput of the OpenAI Responses adapter: decoder + machine + finalizer, in memory.

``adapters.render`` (08 D49) writes two bodies: a text answer of N
``response.output_text.delta`` events, and a function call whose arguments arrive as N
``response.function_call_arguments.delta`` fragments. Each body is decoded from memory in
64 KiB chunks, best of three runs; the script prints wire events and public events per second.

Run: ``python benchmarks/bench_openai_responses.py [N]`` (default 100000).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import adapters
from mmsp_core.model import DoneItem, FinishReason, TextDone, ToolCallDone, UsageMetadata

SOURCE = "openai-responses"
CHUNK_SIZE = 64 * 1024
FRAGMENT = 6
REPEATS = 3


def body_of(item: DoneItem, finish: FinishReason, fragments: int) -> bytes:
    usage = UsageMetadata(
        cached_tokens=0, prompt_tokens=20, thoughts_tokens=0, response_tokens=fragments
    )
    return adapters.render(SOURCE, [item], usage, finish, model="bench", fragment_size=FRAGMENT)


def text_body(deltas: int) -> bytes:
    """A text item cut into ``deltas`` fragments of ``FRAGMENT`` characters."""
    return body_of(TextDone("token " * deltas), FinishReason.STOP, deltas)


def tool_body(fragments: int) -> bytes:
    """A function call whose arguments are ``fragments`` fragments long."""
    payload = "y" * (fragments * FRAGMENT - len('{"blob":""}'))
    return body_of(
        ToolCallDone("save", "call_bench", {"blob": payload}), FinishReason.TOOL_CALL, fragments
    )


def chunks_of(body: bytes) -> Iterator[bytes]:
    return (body[i : i + CHUNK_SIZE] for i in range(0, len(body), CHUNK_SIZE))


def measure(name: str, body: bytes) -> None:
    wire_events = body.count(b"\n\n")
    seconds = float("inf")
    public_events = 0
    for _ in range(REPEATS):
        start = time.perf_counter()
        public_events = sum(1 for _ in adapters.decode(SOURCE, chunks_of(body)))
        seconds = min(seconds, time.perf_counter() - start)
    print(
        f"{name:>10}: {len(body) / 1e6:6.1f} MB, {wire_events:7d} wire events, "
        f"{seconds:6.2f} s, {wire_events / seconds:9.0f} wire events/s, "
        f"{public_events / seconds:9.0f} public events/s"
    )


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    measure("text", text_body(count))
    measure("tool call", tool_body(count))


if __name__ == "__main__":
    main()
