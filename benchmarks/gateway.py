"""``python -m benchmarks.gateway``: what the MMSP server costs to relay a stream (issue 25,
item 8), beside a direct ``AutoLLMClient`` stream and LiteLLM's proxy.

Theory of operation:

1. ``bodies.build`` renders two Chat Completions text bodies, the burst (``--burst-n`` deltas,
   default 2,000) and a short answer (``--short-n``, default 20); ``server.running`` serves them
   from its own process, every relay's cheap upstream (pre-built responses; CPU not counted).
2. The gateway (``python -m mmsp_io serve``) runs in a process of its own with one row per body
   (``client_type`` ``openai-chat``, ``base_url`` that body's URL); LiteLLM's proxy, when its
   ``litellm`` command is found and starts within ``--litellm-start-timeout``, over the same
   bodies as openai-compatible models (``LITELLM_LOCAL_MODEL_COST_MAP=True``: it has no
   network). A relay that does not start is a row saying why, and the run goes on.
3. Each relay is measured by one load process (``python -P -m benchmarks.gateway --load
   SPEC``) that streams through ``AutoLLMClient`` and reads the relay's CPU from
   ``/proc/<pid>/stat`` (user + system, the process and its children alive at the reading):
   one warm-up stream per body, then ``--burst-rounds`` burst streams one after another (the
   relay's CPU per delta), then for each ``--concurrency`` C, a first wave of C short streams
   whose clients open the connections the cell needs (its first-event p50 is the column "p50,
   first wave"), then waves of C on the connections kept (100 idle, the library's default)
   until ``--samples`` streams ran: deltas per second of wall time, the relay's and the load's
   CPU per stream, and each stream's time from its request to its first content, pooled. Every
   stream is checked (every delta, a stop last); a failed one is counted, never timed. The
   direct row is the load streaming straight from the upstream: its own CPU per delta is the
   1.0x of the ratio item 8 targets (at most 3x).
4. The relay is pinned to the last CPU and everything else (this process, the upstream, the
   load) to the others, when the machine has two or more, so a relay's CPU is its own core's.
5. The markdown tables go to standard output and to ``--out`` (default
   ``benchmarks/results-<UTC date>-gateway.md``); progress goes to standard error.

Every process started is stopped on the way out, also on Ctrl-C, SIGTERM or an error: each
runs in a session of its own and its whole process group is terminated, then killed. Linux
only (``/proc``). No figure here is a test's assertion (08 D80).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from . import bodies, consumers, report, run, server

PROTOCOL: Final = "openai-chat"
API_KEY: Final = consumers.API_KEY
#: LiteLLM's proxy refuses to start without a master key, or with a short one.
LITELLM_KEY: Final = "sk-" + "bench" * 8
CONCURRENCY: Final = (1, 10, 100, 500)
#: Streams timed per concurrency cell (at least one wave of C).
SAMPLES: Final = 200
QUICK_SAMPLES: Final = 40
BURST_ROUNDS: Final = 5
QUICK_BURST_ROUNDS: Final = 2
#: The most concurrent streams LiteLLM's proxy gets under ``--quick``.
QUICK_LITELLM_STREAMS: Final = 100
#: Seconds a relay may take to answer before its row says it did not start.
START_TIMEOUT: Final = 30.0
LITELLM_START_TIMEOUT: Final = 120.0
#: Seconds one wave of streams, and one load process, may take.
WAVE_TIMEOUT: Final = 300.0
LOAD_TIMEOUT: Final = 1200.0
_BANNER: Final = "Starting MMSP server at "
_CLK_TCK: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Relay:
    """One thing the load streams through: its row name, the base URL a client of
    ``client_type`` is given for each body (``burst``, ``short``), the process whose CPU is
    read (``None``: the load's own), the model of each body and the key a caller carries."""

    name: str
    urls: dict[str, str]
    client_type: str
    pid: int | None
    models: dict[str, str]
    key: str = API_KEY


# --------------------------------------------------------------------------------------------
# The load process
# --------------------------------------------------------------------------------------------


def process_cpu(pid: int) -> float:
    """Seconds of CPU (user + system) of ``pid`` and of its descendants alive now.

    Raises:
        OSError: ``pid`` is gone.
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    total = (int(fields[11]) + int(fields[12])) / _CLK_TCK
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    total += process_cpu(int(child))
    return total


class _Load:
    """The streams of one load process (module doc, step 3)."""

    def __init__(self, spec: dict[str, Any], short: bodies.Body) -> None:
        from mmsp_io import AutoLLMClient

        self.spec = spec
        self.short = short
        self.messages = consumers._question()
        self.clients = {
            kind: AutoLLMClient(model, api_key=spec["key"], base_url=spec["urls"][kind],
                                client_type=spec["client_type"], max_retries=0)
            for kind, model in spec["models"].items()
        }

    def relay_cpu(self) -> float:
        """The relay's CPU seconds so far (this process's own for the direct row)."""
        pid = self.spec["pid"]
        return time.process_time() if pid is None else process_cpu(pid)

    async def stream(self, kind: str, body: bodies.Body, firsts: list[float]) -> None:
        """One checked stream of ``kind``; its first-content delay appended to ``firsts``.

        Raises:
            consumers.ConsumptionError: the stream is not the body.
        """
        started = time.perf_counter()
        seen: list[float] = []
        count, last = await consumers._client_stream(
            self.clients[kind], self.messages,
            lambda: seen.append(time.perf_counter() - started))
        consumers.verify("deltas", body, count, last)
        firsts += seen

    async def burst(self, body: bodies.Body, rounds: int) -> dict[str, Any]:
        """``rounds`` burst streams one after another: the relay's CPU, the load's, the wall."""
        relay, own, wall = self.relay_cpu(), time.process_time(), time.perf_counter()
        for _ in range(rounds):
            await self.stream("burst", body, [])
        return {"relay_cpu": self.relay_cpu() - relay, "load_cpu": time.process_time() - own,
                "wall": time.perf_counter() - wall, "deltas": rounds * body.n}

    async def _wave(self, streams: int, firsts: list[float], failures: list[str]) -> None:
        """``streams`` short streams at once: delays to ``firsts``, failures to ``failures``."""
        import anyio

        async def one() -> None:
            try:
                await self.stream("short", self.short, firsts)
            except Exception as exc:  # a failed stream is counted, the others go on
                failures.append(f"{type(exc).__name__}: {exc}")

        with anyio.fail_after(WAVE_TIMEOUT):
            async with anyio.create_task_group() as tasks:
                for _ in range(streams):
                    tasks.start_soon(one)

    async def cell(self, streams: int, samples: int) -> dict[str, Any]:
        """A first wave of ``streams``, timed on its own, then waves on the connections kept
        until ``samples`` ran (module doc, step 3)."""
        opening: list[float] = []
        firsts: list[float] = []
        failures: list[str] = []
        await self._wave(streams, opening, failures)
        first_failed = len(failures)
        waves = max(1, math.ceil(samples / streams))
        relay, own, wall = self.relay_cpu(), time.process_time(), time.perf_counter()
        for _ in range(waves):
            await self._wave(streams, firsts, failures)
        done = waves * streams - (len(failures) - first_failed)
        return {"streams": streams, "waves": waves, "wall": time.perf_counter() - wall,
                "relay_cpu": self.relay_cpu() - relay, "load_cpu": time.process_time() - own,
                "deltas": done * self.short.n, "completed": done, "failed": len(failures),
                "first": firsts, "first_wave": opening,
                "error": failures[0] if failures else None}

    async def run(self) -> dict[str, Any]:
        """Warm up, then the burst and every cell the spec names."""
        spec = self.spec
        burst = bodies.load(spec["burst"])
        async with contextlib.AsyncExitStack() as stack:
            for client in self.clients.values():
                await stack.enter_async_context(client)
            if "short" in self.clients:
                await self.stream("short", self.short, [])
            await self.stream("burst", burst, [])
            measured = await self.burst(burst, spec["rounds"])
            cells = [await self.cell(streams, spec["samples"]) for streams in spec["concurrency"]]
        return {"burst": measured, "cells": cells}


def load_main(spec_text: str) -> None:
    """``python -P -m benchmarks.gateway --load SPEC``: run the load of ``SPEC`` (JSON: the
    relay's ``urls``, ``client_type``, ``pid``, ``models``, ``key``, and the ``burst`` and ``short``
    bodies, ``rounds``, ``concurrency``, ``samples``) under asyncio; print its JSON, or an
    ``error``."""
    import anyio

    spec = json.loads(spec_text)
    server.raise_open_files(max([1, *spec["concurrency"]]) * 2 + 512)
    try:
        result = anyio.run(_Load(spec, bodies.load(spec["short"])).run)
    except Exception as exc:  # the harness reports the relay failed, with why
        result = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result))


# --------------------------------------------------------------------------------------------
# The relays' processes
# --------------------------------------------------------------------------------------------


_STARTED: Final = time.monotonic()


def _log(message: str) -> None:
    print(f"[{time.monotonic() - _STARTED:6.1f} s] {message}", file=sys.stderr, flush=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _pin(pid: int, relay: bool) -> None:
    """Pin ``pid`` to the last CPU (the relay) or to the others (module doc, step 4)."""
    cpus = sorted(os.sched_getaffinity(0) | os.sched_getaffinity(pid))
    if len(cpus) >= 2:
        os.sched_setaffinity(pid, cpus[-1:] if relay else cpus[:-1])


def _stop(process: subprocess.Popen[Any]) -> None:
    """Terminate ``process``'s group, then kill it if it outlives 10 s."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=wait)
            return


@contextlib.contextmanager
def started(command: Sequence[str], log: Path, env: dict[str, str]) -> Iterator[
        subprocess.Popen[bytes]]:
    """Run ``command`` in a session of its own, its output to ``log``, pinned as a relay;
    stopped with its whole process group on the way out (started with the stopping signals
    held, ``server.signals_held``)."""
    process: subprocess.Popen[bytes] | None = None
    try:
        with log.open("wb") as out, server.signals_held():
            process = server.spawn(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        _pin(process.pid, relay=True)
        yield process
    finally:
        if process is not None:
            _stop(process)


def wait_ready(process: subprocess.Popen[bytes], ready: Callable[[], str | None],
               timeout: float, log: Path) -> str:
    """Poll ``ready`` (an URL once the relay answers, else ``None``) until ``timeout``.

    Raises:
        RuntimeError: the process ended or the time ran out, with its last line of output.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (url := ready()) is not None:
            return url
        if process.poll() is not None:
            break
        time.sleep(0.25)
    lines = log.read_text(errors="replace").strip().splitlines() or ["no output"]
    state = f"exited with {process.returncode}" if process.poll() is not None else (
        f"did not answer within {timeout:g} s")
    raise RuntimeError(f"{state}: {lines[-1][:200]}")


def _gateway(work: Path, upstream: dict[str, str], backend: str,
             timeout: float) -> contextlib.AbstractContextManager[tuple[str, int]]:
    """The MMSP server over one row per upstream body; yields (origin, pid)."""
    config = {"models": [{"server_model_id": kind, "model_id": "bench", "api_key": API_KEY,
                          "client_type": PROTOCOL, "base_url": url}
                         for kind, url in upstream.items()],
              "connections": {"max": 4096}}
    (work / "gateway.json").write_text(json.dumps(config))
    log = work / "gateway.log"
    command = [sys.executable, "-u", "-P", "-m", "mmsp_io", "serve", "--backend", backend,
               "--config", str(work / "gateway.json"), "--host", "127.0.0.1", "--port", "0"]

    def banner() -> str | None:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(_BANNER):
                return line.removeprefix(_BANNER).strip().removesuffix("/v1")
        return None

    @contextlib.contextmanager
    def running() -> Iterator[tuple[str, int]]:
        with started(command, log, server.child_env()) as process:
            yield wait_ready(process, banner, timeout, log), process.pid

    return running()


def find_litellm(given: str | None) -> str | None:
    """The ``litellm`` command: ``given``, else beside this interpreter, else on ``PATH``."""
    if given:
        return given
    return shutil.which("litellm", path=str(Path(sys.executable).parent)) or shutil.which(
        "litellm")


def _litellm(work: Path, command: str, upstream: dict[str, str],
             timeout: float) -> contextlib.AbstractContextManager[tuple[str, int]]:
    """LiteLLM's proxy over the same upstream bodies as openai-compatible models; yields
    (origin, pid)."""
    import httpx

    lines = ["model_list:"]
    for kind, url in upstream.items():
        lines += [f"  - model_name: {kind}", "    litellm_params:", "      model: openai/bench",
                  f"      api_base: {url}", f"      api_key: {API_KEY}"]
    lines += ["general_settings:", f"  master_key: {LITELLM_KEY}"]
    (work / "litellm.yaml").write_text("\n".join(lines) + "\n")
    port = _free_port()
    origin = f"http://127.0.0.1:{port}"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
           "NO_PROXY": "*", "no_proxy": "*"}
    log = work / "litellm.log"

    def health() -> str | None:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{origin}/health/liveliness", timeout=2).status_code == 200:
                return origin
        return None

    @contextlib.contextmanager
    def running() -> Iterator[tuple[str, int]]:
        argv = [command, "--config", str(work / "litellm.yaml"), "--host", "127.0.0.1",
                "--port", str(port), "--num_workers", "1"]
        with started(argv, log, env) as process:
            yield wait_ready(process, health, timeout, log), process.pid

    return running()


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (``--help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.gateway",
        description="The gateway's relay cost and throughput (benchmarks/README.md).")
    parser.add_argument("--quick", action="store_true", help="fewer rounds and samples")
    parser.add_argument("--burst-n", type=int, default=2000, help="deltas of the burst")
    parser.add_argument("--short-n", type=int, default=20, help="deltas of a short answer")
    parser.add_argument("--burst-rounds", type=int, help=f"timed bursts per relay (default "
                        f"{BURST_ROUNDS}; quick: {QUICK_BURST_ROUNDS})")
    parser.add_argument("--concurrency", type=int, nargs="*", default=list(CONCURRENCY),
                        help="concurrent short streams of each cell")
    parser.add_argument("--samples", type=int, help="short streams timed per cell (default "
                        f"{SAMPLES}; quick: {QUICK_SAMPLES})")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio",
                        help="the gateway's event loop")
    parser.add_argument("--no-doors", action="store_true",
                        help="leave out the gateway's Chat Completions door")
    parser.add_argument("--no-litellm", action="store_true", help="leave LiteLLM's proxy out")
    parser.add_argument("--litellm", help="the `litellm` command (default: beside this "
                        "interpreter, else on PATH)")
    parser.add_argument("--litellm-start-timeout", type=float, default=LITELLM_START_TIMEOUT)
    parser.add_argument("--out", type=Path, help="the results file (default "
                        "benchmarks/results-<UTC date>-gateway.md)")
    args = parser.parse_args(argv)
    if args.burst_rounds is None:
        args.burst_rounds = QUICK_BURST_ROUNDS if args.quick else BURST_ROUNDS
    if args.samples is None:
        args.samples = QUICK_SAMPLES if args.quick else SAMPLES
    if args.out is None:
        day = time.strftime("%Y-%m-%d", time.gmtime())
        args.out = Path(__file__).resolve().parent / f"results-{day}-gateway.md"
    return args


def _load(args: argparse.Namespace, relay: Relay, paths: dict[str, str],
          concurrency: Sequence[int]) -> dict[str, Any]:
    """One load process over ``relay`` (module doc, step 3); its JSON, or an ``error``."""
    spec = {"urls": relay.urls, "client_type": relay.client_type, "pid": relay.pid,
            "models": relay.models, "key": relay.key, "burst": paths["burst"],
            "short": paths["short"], "rounds": args.burst_rounds, "concurrency": list(concurrency),
            "samples": args.samples}
    command = [sys.executable, "-P", "-m", "benchmarks.gateway", "--load", json.dumps(spec)]
    _log(f"{relay.name}: streaming")
    process: subprocess.Popen[str] | None = None
    try:
        with server.signals_held():  # its own session: stopped with its group, as a relay is
            process = server.spawn(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL, text=True,
                                   env=server.child_env(), start_new_session=True)
        stdout, stderr = process.communicate(timeout=LOAD_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"the load took longer than {LOAD_TIMEOUT:g} s"}
    finally:
        if process is not None and process.poll() is None:
            _stop(process)
    lines = stdout.strip().splitlines()
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = stderr.strip().splitlines() or ["no output"]
        return {"error": f"the load process exited with {process.returncode}: {tail[-1][:200]}"}
    return result


def _relays(args: argparse.Namespace, stack: contextlib.ExitStack, work: Path,
            upstream: dict[str, str]) -> Iterator[tuple[str, Relay | str]]:
    """Each relay as it starts, or its name and why it did not (module doc, step 2)."""
    try:
        origin, pid = stack.enter_context(_gateway(work, upstream, args.backend, START_TIMEOUT))
    except RuntimeError as exc:
        yield "MMSP gateway", f"did not start: {exc}"
        return
    models = {kind: kind for kind in upstream}
    urls = dict.fromkeys(upstream, f"{origin}/v1")
    yield "mmsp", Relay(f"MMSP gateway ({args.backend}), `POST /v1/stream`", urls, "mmsp",
                        pid, models)
    if not args.no_doors:
        yield "door", Relay(f"MMSP gateway ({args.backend}), Chat Completions door", urls,
                            PROTOCOL, pid, models)
    if args.no_litellm:
        return
    name = "LiteLLM proxy"
    command = find_litellm(args.litellm)
    if command is None:
        yield name, ("not installed: no `litellm` command (`pip install -e '.[bench]'`, or "
                     "--litellm PATH)")
        return
    _log("starting LiteLLM's proxy")
    try:
        origin, pid = stack.enter_context(
            _litellm(work, command, upstream, args.litellm_start_timeout))
    except (OSError, RuntimeError) as exc:
        yield name, f"did not start: {exc}"
        return
    yield name, Relay(name, dict.fromkeys(upstream, f"{origin}/v1"), PROTOCOL, pid, models,
                      LITELLM_KEY)


def _cells(args: argparse.Namespace, relay: Relay) -> list[int]:
    """The concurrency cells ``relay`` runs: all, but LiteLLM's under ``--quick`` only up to
    ``QUICK_LITELLM_STREAMS`` (its wave of 500 alone takes about 100 s here)."""
    if args.quick and relay.key == LITELLM_KEY:
        return [c for c in args.concurrency if c <= QUICK_LITELLM_STREAMS]
    return list(args.concurrency)


def measure(args: argparse.Namespace, work: Path) -> list[tuple[str, dict[str, Any]]]:
    """Build the bodies, start the upstream and the relays, stream through each; every
    process is stopped on the way out. Rows of (name, load JSON or ``error``)."""
    made, _ = bodies.build(work, sorted({args.burst_n, args.short_n}), shapes=["text"],
                           protocols=[PROTOCOL])
    by_n = {body.n: bodies.described(body) for body in made}
    paths = {"burst": by_n[args.burst_n], "short": by_n[args.short_n]}
    rows: list[tuple[str, dict[str, Any]]] = []
    with contextlib.ExitStack() as stack:
        origin = stack.enter_context(server.running(work))
        upstream = {kind: consumers.body_url(origin, bodies.load(path), "event")
                    for kind, path in paths.items()}
        direct = Relay(f"direct `AutoLLMClient` ({PROTOCOL})", upstream, PROTOCOL, None,
                       dict.fromkeys(upstream, "bench"))
        rows.append((direct.name, _load(args, direct, paths, args.concurrency)))
        for name, relay in _relays(args, stack, work, upstream):
            if isinstance(relay, str):
                rows.append((name, {"error": relay}))
            else:
                rows.append((relay.name, _load(args, relay, paths, _cells(args, relay))))
    return rows


def _percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def _quantiles(delays: Sequence[float], fractions: Sequence[float]) -> list[str]:
    """Each quantile of ``delays`` (seconds) in milliseconds, ``—`` for each when none."""
    return [f"{_percentile(delays, q) * 1e3:.1f} ms" if delays else "—" for q in fractions]


def _burst_rows(rows: Sequence[tuple[str, dict[str, Any]]],
                args: argparse.Namespace) -> list[list[str]]:
    """The burst table's rows: the relay's CPU per delta (the direct row's: the load's own)
    and its ratio to the direct row's."""
    base = rows[0][1].get("burst")
    direct = base["load_cpu"] / base["deltas"] if base else math.nan
    lines = []
    for name, result in rows:
        if "error" in result:
            lines.append([name, f"not measured: {result['error']}", "", "", ""])
            continue
        b = result["burst"]
        cpu = (b["load_cpu"] if result is rows[0][1] else b["relay_cpu"]) / b["deltas"]
        lines.append([name, f"{cpu * 1e6:.1f} µs", f"{cpu / direct:.1f}x",
                      f"{b['load_cpu'] / b['deltas'] * 1e6:.1f} µs",
                      f"{b['wall'] / args.burst_rounds * 1e3:.0f} ms"])
    return lines


def _cell_rows(rows: Sequence[tuple[str, dict[str, Any]]],
               args: argparse.Namespace) -> list[list[str]]:
    """The concurrency table's rows, a cell a relay left out (``_cells``) said so; the direct
    row (the first) has no relay, its streams cost only the load's CPU."""
    lines = []
    for name, result in rows:
        if "error" in result:
            continue
        by_streams = {c["streams"]: c for c in result["cells"]}
        for streams in args.concurrency:
            if (c := by_streams.get(streams)) is None:
                lines.append([name, str(streams), "left out under --quick", *[""] * 6])
                continue
            p50, p99 = _quantiles(c["first"], (0.5, 0.99))
            (opening,) = _quantiles(c["first_wave"], (0.5,))
            done = c["completed"] or math.nan
            relay_cpu = ("—" if result is rows[0][1]
                         else f"{c['relay_cpu'] / done * 1e3:.2f} ms")
            failed = f"{c['failed']} ({c['error'][:80]})" if c["failed"] else "0"
            lines.append([name, str(streams), f"{c['deltas'] / c['wall']:,.0f}", p50, p99,
                          opening, relay_cpu, f"{c['load_cpu'] / done * 1e3:.2f} ms", failed])
    return lines


def tables(rows: Sequence[tuple[str, dict[str, Any]]], args: argparse.Namespace) -> list[str]:
    """The markdown of the burst table and the concurrency table."""
    return [
        f"### Burst: one stream of {args.burst_n:,} deltas, {args.burst_rounds} in a row",
        "", *report._table(["relay", "relay CPU per delta", "vs direct",
                            "load CPU per delta", "wall per burst"], _burst_rows(rows, args)),
        "", f"### Concurrent short answers ({args.short_n} deltas each; {args.samples} streams "
        "per cell at least)", "",
        *report._table(["relay", "streams at once", "deltas/s", "first event p50",
                        "first event p99", "p50, first wave", "relay CPU per stream",
                        "load CPU per stream", "failed"],
                       _cell_rows(rows, args)), ""]


def _raise_on_term(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.gateway``: measure, print the tables, write ``--out``; 1 when
    a relay's row failed or a stream failed, 130 when stopped by Ctrl-C or SIGTERM."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["--load"]:
        load_main(arguments[1])
        return 0
    args = parse(arguments)
    signal.signal(signal.SIGTERM, _raise_on_term)
    server.raise_open_files(1 << 16)
    _pin(os.getpid(), relay=False)
    header = [line for line in run.machine() if not line.startswith("- command")]
    try:
        with tempfile.TemporaryDirectory(prefix="mmsp-gateway-bench-") as work:
            rows = measure(args, Path(work))
    except KeyboardInterrupt:
        _log("stopped: every process it started is stopped")
        return 130
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    text = "\n".join([
        "## The gateway's relay (python -m benchmarks.gateway)", "", *header,
        f"- command: `python -m benchmarks.gateway {' '.join(arguments)}`",
        f"- load average at the end {load}", "", *tables(rows, args)])
    print(text)
    args.out.write_text(text)
    _log(f"written to {args.out}")
    failed = any("error" in r or any(c["failed"] for c in r.get("cells", [])) for _, r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
