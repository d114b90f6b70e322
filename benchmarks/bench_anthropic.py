"""Throughput of the Anthropic Messages adapter: decoder + machine + finalizer, in memory.

Two bodies are rendered by ``adapters.render`` (08 D49): a text item streamed as N
``text_delta`` events, and a tool call whose arguments stream as N ``input_json_delta``
fragments. Each is decoded in 64 KiB chunks; the script prints wire events per second and
public events per second.

Run: ``python benchmarks/bench_anthropic.py [N]`` (default 100000).
"""

from __future__ import annotations

import sys
import time

import adapters
from mmsp_core.model import FinishReason, TextDone, ToolCallDone, UsageMetadata

CHUNK = 64 * 1024
FRAGMENT = 8


def text_body(deltas: int) -> bytes:
    """A text item of ``deltas`` fragments of ``FRAGMENT`` characters."""
    text = "".join(f"w{i % 1000:03d}sum " for i in range(deltas))  # FRAGMENT characters each
    usage = UsageMetadata(0, 10, None, deltas)
    return adapters.render(
        "ant-messages", [TextDone(text)], usage, FinishReason.STOP, fragment_size=FRAGMENT
    )


def tool_body(fragments: int) -> bytes:
    """A tool call whose arguments JSON is ``fragments`` fragments long."""
    # {"data":"<payload>"} is 11 characters around the payload.
    payload = "x" * (fragments * FRAGMENT - 11)
    call = ToolCallDone("store", "toolu_bench", {"data": payload})
    usage = UsageMetadata(0, 10, None, fragments)
    return adapters.render(
        "ant-messages", [call], usage, FinishReason.TOOL_CALL, fragment_size=FRAGMENT
    )


def decode(body: bytes) -> int:
    """Decode ``body`` in chunks; return the number of public events."""
    chunks = (body[i : i + CHUNK] for i in range(0, len(body), CHUNK))
    return sum(1 for _ in adapters.decode("ant-messages", chunks))


def measure(name: str, body: bytes) -> None:
    wire_events = body.count(b"\n\n")
    start = time.perf_counter()
    public_events = decode(body)
    seconds = time.perf_counter() - start
    print(
        f"{name:>10}: {len(body) / 1e6:6.1f} MB, {wire_events:7d} wire events, "
        f"{seconds:6.2f} s, {wire_events / seconds:9.0f} wire events/s, "
        f"{public_events / seconds:9.0f} public events/s"
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    measure("text", text_body(n))
    measure("tool call", tool_body(n))


if __name__ == "__main__":
    main()
