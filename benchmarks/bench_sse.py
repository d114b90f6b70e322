"""Throughput of SSEDecoder by chunk size; catches quadratic buffering.

Run: ``python benchmarks/bench_sse.py [--mib N]``. Prints MB/s for 1 B, 64 B, 1 KiB and 64 KiB
chunks over two streams of about N MiB each (many small JSON events; one event whose data is a
single base64 line), then the ratio of the 1 B time at twice the input to the time at once the
input: about 2 when decoding is linear, far more when it is not.
"""

from __future__ import annotations

import argparse
import base64
import time

from mmsp_core.sse import SSEDecoder

CHUNK_SIZES = (1, 64, 1 << 10, 64 << 10)


def small_events(size: int) -> bytes:
    """About ``size`` bytes of ``data: {...}`` events, as a Chat Completions stream sends."""
    events = []
    total = 0
    i = 0
    while total < size:
        event = (
            b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,'
            b'"delta":{"content":"token %d"},"finish_reason":null}]}\n\n' % i
        )
        events.append(event)
        total += len(event)
        i += 1
    return b"".join(events)


def base64_line(size: int) -> bytes:
    """One event whose data is a base64 line of about ``size`` bytes (an inline image)."""
    payload = base64.b64encode(bytes(range(256)) * (size * 3 // 4 // 256 + 1))[:size]
    return b"event: image\ndata: " + payload + b"\n\n"


def seconds(stream: bytes, chunk_size: int) -> float:
    """Time to decode ``stream`` fed in ``chunk_size`` pieces (cutting excluded)."""
    chunks = [stream[i : i + chunk_size] for i in range(0, len(stream), chunk_size)]
    decoder = SSEDecoder()
    start = time.perf_counter()
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    decoder.close()
    elapsed = time.perf_counter() - start
    assert count > 0
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=4.0, help="size of each stream in MiB")
    size = int(parser.parse_args().mib * (1 << 20))
    streams = {"small events": small_events(size), "base64 line": base64_line(size)}
    for name, stream in streams.items():
        for chunk_size in CHUNK_SIZES:
            rate = len(stream) / seconds(stream, chunk_size) / 1e6
            print(f"{name:>12}  {chunk_size:>6} B chunks  {rate:8.1f} MB/s")
    for name, make in (("small events", small_events), ("base64 line", base64_line)):
        ratio = seconds(make(2 * size), 1) / seconds(make(size), 1)
        print(f"{name:>12}  1 B chunks, time at 2x input / 1x input: {ratio:.2f}")


if __name__ == "__main__":
    main()
