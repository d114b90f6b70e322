"""What running the pipeline between an HTTP parser's steps costs, in memory (issue 9).

Over httpx the pure pipeline costs far more per event than the same pipeline over the same
chunks in memory. This script shows where that comes from without any I/O or ``async``: h11
(the HTTP/1.1 parser under httpx) parses a pre-built chunked response of one HTTP chunk per
SSE event, and the pipeline decodes those chunks, in four arrangements:

- **h11 alone**: every chunk parsed, nothing done with it;
- **pipeline alone**: the same chunks, prepared beforehand, through ``adapters.new_pipeline``;
- **interleaved**: each chunk into the pipeline as soon as h11 hands it over, as the driver
  does (one chunk, then its events, then the next chunk);
- **batched by K**: the chunks h11 hands over fed to the pipeline K at a time.

Printed: µs per content delta (median of the runs, and the fastest), and the interleaved cost
minus the sum of the two alone. Both arrangements run exactly the same Python code (Valgrind's
cachegrind counts the same instructions for interleaved as for the two alone together), so the
difference is what the processor loses switching between two large code paths once per event.

Run: ``python -m benchmarks.bench_interleave [--n N] [--runs R] [--protocol P]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import h11

import adapters
from mmsp_core.pipeline import NEED_DATA, StreamPipeline

from .bodies import frames, render_body
from .server import chunked

#: The socket read size of httpcore: h11 is given the response this many bytes at a time.
READ_SIZE = 64 * 1024


def parse(response: bytes, consume: Callable[[bytes], None]) -> None:
    """Run ``response`` through an h11 client connection, handing each body chunk over."""
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="POST", target="/", headers=[("Host", "bench")]))
    connection.send(h11.EndOfMessage())
    position = 0
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(response[position:position + READ_SIZE])
            position += READ_SIZE
        elif type(event) is h11.Data:
            consume(bytes(event.data))
        elif type(event) is h11.EndOfMessage:
            return


def drain(pipeline: StreamPipeline, chunk: bytes) -> None:
    """Feed one chunk and take every event it completes."""
    pipeline.receive_data(chunk)
    while pipeline.next_event() is not NEED_DATA:
        pass


def arrangements(protocol: str, chunks: list[bytes]) -> dict[str, Callable[[], None]]:
    """The measured arrangements (module docstring), each a function of no argument."""
    response = chunked(chunks)

    def h11_alone() -> None:
        parse(response, lambda chunk: None)

    def pipeline_alone() -> None:
        pipeline = adapters.new_pipeline(protocol, clock=None)
        for chunk in chunks:
            drain(pipeline, chunk)

    def interleaved() -> None:
        pipeline = adapters.new_pipeline(protocol, clock=None)
        parse(response, lambda chunk: drain(pipeline, chunk))

    def batched(size: int) -> Callable[[], None]:
        def run() -> None:
            pipeline = adapters.new_pipeline(protocol, clock=None)
            held: list[bytes] = []

            def consume(chunk: bytes) -> None:
                held.append(chunk)
                if len(held) == size:
                    for each in held:
                        drain(pipeline, each)
                    held.clear()

            parse(response, consume)
            for each in held:
                drain(pipeline, each)

        return run

    return {"h11 alone": h11_alone, "pipeline alone": pipeline_alone,
            "interleaved": interleaved, "batched by 10": batched(10),
            "batched by 100": batched(100)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="text deltas (default 20000)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each (default 7)")
    parser.add_argument("--protocol", default="ant-messages")
    args = parser.parse_args()
    measured = arrangements(args.protocol,
                            frames(render_body(args.protocol, "text", args.n), "event"))
    spent: dict[str, list[float]] = {name: [] for name in measured}
    for index in range(args.runs + 1):  # the first pass warms up
        for name, run in measured.items():  # interleaved passes: the same noise for each
            started = time.process_time()
            run()
            if index:
                spent[name].append((time.process_time() - started) / args.n * 1e6)
    print(f"{args.protocol}, N = {args.n:,}, one HTTP chunk per SSE event, {args.runs} runs")
    for name, values in spent.items():
        print(f"{name:>16}: {statistics.median(values):6.2f} µs per delta "
              f"(fastest {min(values):6.2f})")
    alone = statistics.median(spent["h11 alone"]) + statistics.median(spent["pipeline alone"])
    extra = statistics.median(spent["interleaved"]) - alone
    print(f"interleaved minus the two alone: {extra:+.2f} µs per delta")


if __name__ == "__main__":
    main()
