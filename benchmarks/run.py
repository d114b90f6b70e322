"""``python -m benchmarks``: the whole benchmark in one command (issue 9).

Theory of operation:

1. ``bodies.build`` renders every body of the matrix into a temporary directory: each
   registered protocol with an event stream, text and tool-call shapes, each N.
2. ``server.running`` starts the loopback server in its own process over that directory.
3. For each body, each chunking and each consumer (``consumers.CONSUMERS``, peers only when
   their package is importable by the peer interpreter) one fresh process runs one warm-up
   and ``--runs`` timed passes and verifies each; the consumers of one body run one after
   another, so every ratio compares processes of the same run and minute. The first-event
   body's processes also time ``--first-samples`` paused passes; ``--first-rounds`` - 1 more
   rounds of processes, round-robin over the consumers, time as many each, pooled per cell.
4. Then, per body: the pure pipeline over in-memory bytes (``memory``); ``import mmsp_io`` in
   fresh interpreters; the concurrent streams under asyncio and trio.
5. ``report`` prints the markdown tables; ``--json`` saves every measurement.

Processes run one at a time (the machine's other core serves the bytes). The library measured
is whatever ``import mmsp_io`` finds in a process started with ``-P`` (the working directory
is not on its path): the installation, or a tree put first on ``PYTHONPATH``; the report
names it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from . import bodies, consumers, report, server

FULL_NS: Final = (1_000, 10_000, 100_000)
QUICK_NS: Final = (2_000,)
FULL_STREAMS: Final = 1000
QUICK_STREAMS: Final = 200
#: The package each peer needs in the peer interpreter.
PEER_MODULES: Final = {"mmsp-0.5.6": "mmsp", "openai-sdk": "openai", "anthropic-sdk": "anthropic"}
#: The extra passes of the first-event table's bodies that time only the first content: one
#: pass of a few ms is noisy to about a millisecond on a shared machine.
FIRST_SAMPLES: Final = 15
#: The processes per consumer those passes are spread over: one process's median drifts by up
#: to 0.4 ms from another's of the same code (its memory layout, its core), so the table pools
#: the passes of several, run round-robin over the consumers.
FIRST_ROUNDS: Final = 3
#: What the import table times: the package alone (its heavy names load on first use), and
#: what a program that streams starts with.
IMPORT_STATEMENTS: Final = ("import mmsp_io", "from mmsp_io import AutoLLMClient")
_TIMED_IMPORT: Final = "import time; t = time.perf_counter(); {}; print(time.perf_counter() - t)"


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (``--help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="The streaming benchmark in one command (benchmarks/README.md).",
    )
    parser.add_argument("--quick", action="store_true",
                        help="a reduced matrix that runs in under two minutes")
    parser.add_argument("--n", type=int, nargs="+", help="fragments per body "
                        f"(default {' '.join(map(str, FULL_NS))}; quick: "
                        f"{' '.join(map(str, QUICK_NS))})")
    parser.add_argument("--protocols", nargs="+", help="default: every registered protocol")
    parser.add_argument("--shapes", nargs="+", choices=bodies.SHAPES,
                        help="default: text and tool; quick: text")
    parser.add_argument("--chunkings", nargs="+", choices=bodies.CHUNKINGS,
                        help="default: event and packed; quick: event")
    parser.add_argument("--consumers", nargs="+", choices=list(consumers.CONSUMERS),
                        help="default: all (peers when installed)")
    parser.add_argument("--runs", type=int, help="timed runs per process after one warm-up "
                        "(default 5; quick: 3; at least 3 for a result worth reporting)")
    parser.add_argument("--no-peers", action="store_true", help="leave the peers out")
    parser.add_argument("--peer-python", default=sys.executable,
                        help="the interpreter of the peers (a venv with the bench extra)")
    parser.add_argument("--streams", type=int, help="concurrent streams through one client "
                        f"(default {FULL_STREAMS}; quick: {QUICK_STREAMS}; 0: skip)")
    parser.add_argument("--stream-protocols", nargs="+",
                        help="the protocols of the concurrent run (default: the first measured)")
    parser.add_argument("--stream-n", type=int, default=100,
                        help="text deltas of each concurrent stream")
    parser.add_argument("--import-samples", type=int, default=7,
                        help="fresh interpreters timing `import mmsp_io` (0: skip)")
    parser.add_argument("--first-samples", type=int, default=FIRST_SAMPLES,
                        help="more passes timing only the first content, for the first-event "
                        "table (text, smallest N, one chunk per event)")
    parser.add_argument("--first-rounds", type=int, help="processes per consumer that time "
                        f"those passes, pooled (default {FIRST_ROUNDS}; quick: 1)")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the in-memory pipeline table")
    parser.add_argument("--timeout", type=float, default=900,
                        help="seconds one process may take before it is reported as failed")
    parser.add_argument("--json", type=Path, help="save every measurement to this file")
    args = parser.parse_args(argv)
    if args.n is None:
        args.n = list(QUICK_NS if args.quick else FULL_NS)
    if args.shapes is None:
        args.shapes = ["text"] if args.quick else list(bodies.SHAPES)
    if args.streams is None:
        args.streams = QUICK_STREAMS if args.quick else FULL_STREAMS
    if args.chunkings is None:
        args.chunkings = ["event"] if args.quick else list(bodies.CHUNKINGS)
    if args.runs is None:
        args.runs = 3 if args.quick else 5
    if args.first_rounds is None:
        args.first_rounds = 1 if args.quick else FIRST_ROUNDS
    if args.quick:
        args.import_samples = min(args.import_samples, 5)
    return args


def _first_rounds(
    args: argparse.Namespace, first_rows: Sequence[tuple[dict[str, Any], bodies.Body]],
    origin: str,
) -> None:
    """Rounds 2 to ``--first-rounds`` of the first-event passes (module doc, step 3): each
    round one process per first-event row, in the rows' order, its passes added to the row's;
    a process that fails marks its row failed."""
    for _ in range(args.first_rounds - 1):
        for row, body in first_rows:
            consumer = consumers.CONSUMERS[row["consumer"]]
            python = args.peer_python if consumer.peer else sys.executable
            result = _process(python, [row["consumer"], origin, bodies.described(body),
                                       "event", "0", str(args.first_samples)], args.timeout)
            if result["error"]:
                row["error"] = result["error"]
            else:
                row["first"] = [*row["first"], *result["first"]]
            _log(f"{body.id} first event {row['consumer']}: {result['error'] or 'ok'}")


def _process(python: str, argv: Sequence[str], timeout: float) -> dict[str, Any]:
    """Run ``python -P -m benchmarks.consumers ARGV``; its JSON, or an ``error``."""
    command = [python, "-P", "-m", "benchmarks.consumers", *argv]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=server.child_env(),
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"runs": [], "error": f"took longer than {timeout:g} s", "peak_rss_kib": 0,
                "library": None}
    lines = done.stdout.strip().splitlines()
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"runs": [], "error": f"exit {done.returncode}: {tail}", "peak_rss_kib": 0,
                "library": None}
    return result


def installed_peers(python: str) -> dict[str, str]:
    """The peers whose package ``python`` can import (mmsp only at version 0.5.6), each with
    its package's version."""
    probe = (
        "import importlib.metadata as m, importlib.util as u, sys\n"
        "for name in sys.argv[1:]:\n"
        "    if u.find_spec(name) and (name != 'mmsp' or m.version('mmsp') == '0.5.6'):\n"
        "        print(name, m.version(name))\n"
    )
    done = subprocess.run([python, "-P", "-c", probe, *PEER_MODULES.values()],
                          capture_output=True, text=True, check=False)
    found = dict(line.split() for line in done.stdout.splitlines() if line.count(" ") == 1)
    return {peer: f"{module} {found[module]}" for peer, module in PEER_MODULES.items()
            if module in found}


def import_times(samples: int) -> dict[str, list[float]]:
    """Seconds of each of ``IMPORT_STATEMENTS`` in ``samples`` fresh interpreters."""
    times: dict[str, list[float]] = {statement: [] for statement in IMPORT_STATEMENTS}
    for _ in range(samples):
        for statement, spent in times.items():
            done = subprocess.run([sys.executable, "-P", "-c", _TIMED_IMPORT.format(statement)],
                                  capture_output=True, text=True, env=server.child_env(),
                                  check=True)
            spent.append(float(done.stdout))
    return times


def machine() -> list[str]:
    """What the report says about the machine and the run."""
    model = platform.processor() or "unknown CPU"
    with_cpuinfo = Path("/proc/cpuinfo")
    if with_cpuinfo.is_file():
        for line in with_cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return [
        f"- machine: {model}, {os.cpu_count()} logical CPUs, {platform.platform()}",
        f"- Python {platform.python_version()} ({sys.executable}); load average at start {load}",
        f"- command: `{' '.join(['python -m benchmarks', *sys.argv[1:]])}`",
        f"- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
    ]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclasses.dataclass
class _Results:
    """What a run measured: the rows of each table, and the bodies it could not build."""

    rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    memory: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    concurrent: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    skipped: list[bodies.Skipped] = dataclasses.field(default_factory=list)

    def all_rows(self) -> list[dict[str, Any]]:
        """Every row of every table."""
        return self.rows + self.memory + self.concurrent


def _time_body(
    args: argparse.Namespace, body: bodies.Body, names: Sequence[str], first_n: int,
    origin: str, results: _Results, first_rows: list[tuple[dict[str, Any], bodies.Body]],
) -> None:
    """Steps 3 and 4 of the module doc for one body: a process per chunking and consumer, the
    first-event rows noted in ``first_rows``, then the pure pipeline's memory unless
    ``--no-memory``."""
    for chunking in args.chunkings:
        for name in names:
            consumer = consumers.CONSUMERS[name]
            if not consumer.serves(body.protocol):
                continue
            python = args.peer_python if consumer.peer else sys.executable
            first = args.first_samples if (body.shape, body.n, chunking) == (
                "text", first_n, "event") else 0
            began = time.perf_counter()
            result = _process(python, [name, origin, bodies.described(body), chunking,
                                       str(args.runs), str(first)], args.timeout)
            results.rows.append({"protocol": body.protocol, "shape": body.shape, "n": body.n,
                                 "chunking": chunking, "consumer": name,
                                 "process_seconds": time.perf_counter() - began, **result})
            if first and not result["error"]:
                first_rows.append((results.rows[-1], body))
            status = result["error"] or f"{report.per_delta_us(results.rows[-1]):.1f} µs/delta"
            _log(f"{body.id} {chunking} {name}: {status}")
    if not args.no_memory:
        result = _process(sys.executable, ["memory", origin, bodies.described(body), "packed",
                                           str(args.runs)], args.timeout)
        results.memory.append({"protocol": body.protocol, "shape": body.shape, "n": body.n,
                               "consumer": "memory", **result})


def _time_streams(
    args: argparse.Namespace, stream_bodies: Sequence[bodies.Body], origin: str,
    results: _Results,
) -> None:
    """Step 4's concurrent streams: ``--streams`` of each body at once, under asyncio and
    trio."""
    for body in stream_bodies:
        for loop in ("asyncio", "trio"):
            name = f"concurrent-{loop}"
            argv = [name, origin, bodies.described(body), "event", str(args.streams)]
            result = _process(sys.executable, argv, args.timeout)
            results.concurrent.append({"protocol": body.protocol, "n": body.n, "consumer": name,
                                       "streams": args.streams, "rss_before_kib": 0, **result})
            _log(f"{body.id} {name} x{args.streams}: {result['error'] or 'ok'}")


def _measure(args: argparse.Namespace, names: Sequence[str], ns: Sequence[int]) -> _Results:
    """Steps 1 to 4 of the module doc, but the import times: build the bodies, serve them,
    time every consumer on each."""
    results = _Results()
    first_rows: list[tuple[dict[str, Any], bodies.Body]] = []
    with tempfile.TemporaryDirectory(prefix="mmsp-bench-") as tmp:
        built, skipped = bodies.build(Path(tmp), ns, args.shapes, args.protocols)
        results.skipped = skipped
        stream_bodies: list[bodies.Body] = []
        if args.streams and built:
            chosen = args.stream_protocols or [built[0].protocol]
            stream_bodies, _ = bodies.build(Path(tmp), [args.stream_n], ["text"], chosen)
        _log(f"{len(built)} bodies built; {len(skipped)} skipped")
        with server.running(Path(tmp)) as origin:
            for body in built:
                _time_body(args, body, names, ns[0], origin, results, first_rows)
            _first_rounds(args, first_rows, origin)
            _time_streams(args, stream_bodies, origin, results)
    return results


def _summary(
    args: argparse.Namespace, results: _Results, names: Sequence[str], ns: Sequence[int],
    peers: dict[str, str], missing: Sequence[str], imports: dict[str, list[float]],
    elapsed: float,
) -> list[str]:
    """Step 5 of the module doc: the report's markdown lines."""
    rows = results.rows
    protocols = list(dict.fromkeys(row["protocol"] for row in rows))
    libraries = sorted({r["library"] for r in results.all_rows() if r.get("library")})
    lines = ["# MMSP streaming benchmark", "", *machine(),
             f"- library measured: {', '.join(libraries) or 'not imported'}",
             f"- {args.runs} timed runs after one warm-up per process, medians; "
             f"{elapsed:.0f} s in all"]
    if peers:
        lines.append(f"- peers: {', '.join(sorted(set(peers.values())))} ({args.peer_python})")
    if missing:
        lines.append(f"- peers not installed (the bench extra), left out: {', '.join(missing)}")
    lines += [f"- skipped: {s.protocol} {s.shape}: {s.reason}" for s in results.skipped]
    matrix = [(shape, n, chunking) for chunking in args.chunkings for shape in args.shapes
              for n in ns]
    lines += report.per_event_tables(rows, protocols, names, matrix)
    lines += report.first_event_table(rows, protocols, names, "text", ns[0])
    if len(ns) > 1:
        lines += report.rss_table(rows, protocols, names, args.shapes, ns[0], ns[-1])
    lines += report.memory_table(results.memory, ns[-1])
    lines += report.import_line(imports)
    lines += report.concurrent_table(results.concurrent)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (module docstring); exit 1 when any consumer failed."""
    args = parse(argv)
    names = list(args.consumers or consumers.CONSUMERS)
    peers = {} if args.no_peers else installed_peers(args.peer_python)
    missing = [n for n in names if consumers.CONSUMERS[n].peer and n not in peers]
    names = [n for n in names if n not in missing]
    started = time.perf_counter()
    ns = sorted(set(args.n))
    results = _measure(args, names, ns)
    imports = import_times(args.import_samples)
    elapsed = time.perf_counter() - started
    print("\n".join(_summary(args, results, names, ns, peers, missing, imports, elapsed)))
    if args.json:
        document = {"rows": results.rows, "memory": results.memory,
                    "concurrent": results.concurrent, "import_seconds": imports,
                    "skipped": [vars(s) for s in results.skipped],
                    "argv": list(sys.argv[1:]), "machine": machine()}
        args.json.write_text(json.dumps(document, indent=1))
    failed = [r for r in results.all_rows() if r["error"]]
    return 1 if failed else 0
