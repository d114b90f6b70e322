"""The ``mmsp-sansio`` command, also ``python -m mmsp_io`` (09).

Commands:

- ``demo``: starts the provider simulator on a free loopback port and, for each wire protocol
  it speaks (each registered one with a simulator dialect), runs a short agent loop through
  ``AutoLLMClient`` as the protocol's client, with a fake key: a question,
  a streamed answer with thinking and a tool call, the local tool's result sent back, the
  final streamed answer; on an embedding protocol the question's one ``embedding.delta`` and
  ``embedding.done`` and the stop (an embedding call). Last, the same agent loop through an
  MMSP server (``mmsp_io.server``, spec 07) on another loopback port, whose one row is the
  first protocol's client: ``client_type="mmsp"`` with only the gateway's token. Needs no key
  and no network.
- ``chat --model MODEL PROMPT``: streams one answer from a real provider; the key is
  ``--api-key``, else the provider's ``<P>_API_KEY`` variable under the client's key-safety
  rule (spec 04 §3: with ``--base-url`` the key must be given as ``--api-key``).
- ``replay --source SOURCE FILE``: decodes a recorded provider body through
  ``adapters.decode`` and prints the unified stream.
- ``serve --config FILE [--host HOST] [--port PORT]``: runs the MMSP server of
  ``mmsp_io.server`` (spec 07; default ``127.0.0.1:25752``) for the models of the configuration
  file (``--config``, else ``MMSP_SERVER_CONFIG``; without either it says so and exits 2, and
  an invalid file exits 2 naming the row at fault). It prints its banner, serves until SIGINT
  or SIGTERM, then shuts down gracefully within ``--grace`` seconds.
- ``traces --dir DIR [--host HOST] [--port PORT]``: serves the trace page of ``mmsp_io.traces``
  (default ``127.0.0.1:25750``, 08 D70): the traces of ``DIR``, one conversation at a time.

Every command prints the public stream the same way: fragments as they arrive, each ``.done``
item and the ``stop`` on a line of their own, with usage and finish reason; text that cannot be
encoded for the terminal is shown escaped. ``--backend trio`` runs ``demo`` and ``chat`` under
trio instead of asyncio.

Failures: every failure is one line on stderr, ``mmsp-sansio <command>: <ErrorType>: <message>``,
after the line of streamed text has been ended; no traceback unless ``--debug`` is given. Keys
never show (08 D61). Exit status: 0 on success, 1 when a call failed, 2 for a usage error or an
unreadable file, 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import AsyncGenerator, Iterable, Sequence
from contextlib import aclosing
from functools import partial
from pathlib import Path
from typing import Any, Final, TextIO

import anyio

import adapters
from adapters.clients import client_spec
from mmsp_core.errors import ApiKeyRequiredError, MMSPError, redact
from mmsp_core.model import (
    DeltaItem,
    DoneItem,
    EmbeddingDelta,
    EmbeddingDone,
    InlineDataDone,
    InlineThinkingDone,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)

from . import server, simulator, traces
from .client import AutoLLMClient

__all__ = ["StreamPrinter", "main"]

_DEMO_QUESTION: Final = "What is the weather in Paris?"
_DEMO_KEY: Final = "sk-demo-not-a-real-key"
#: The bearer token the demo's MMSP server accepts (07 §3).
_DEMO_GATEWAY_TOKEN: Final = "mmsp-demo-token"
#: The demo's local tool: a weather lookup table.
_WEATHER: Final = {
    "Paris": "18 degrees C, light rain",
    "Tokyo": "24 degrees C, clear sky",
    "Lima": "16 degrees C, overcast",
}
_WEATHER_TOOL: Final = ToolSchema(
    name="get_weather",
    description="The current weather in a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city's name."}},
        "required": ["city"],
    },
)
#: Model turns per agent loop at most, so a model that keeps calling tools cannot loop forever.
_MAX_TURNS: Final = 4


def _get_weather(arguments: Any) -> str:
    city = arguments.get("city", "") if isinstance(arguments, dict) else ""
    return _WEATHER.get(city, f"no weather data for {city!r}")


class StreamPrinter:
    """Print a public stream as it arrives (the rendering every command shares).

    Fragments are written live after a ``kind>`` prefix; a ``.done`` item and the ``stop``
    each get a summary line.
    """

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._streaming: str | None = None

    def line(self, text: str) -> None:
        """Print ``text`` on a line of its own."""
        self._end_fragments()
        self._out.write(text + "\n")
        self._out.flush()

    def event(self, event: UniEvent) -> None:
        """Print one public event."""
        if event.event_type == "stop":
            self.line(
                f"  [stop] finish_reason={event.finish_reason} "
                f"usage: {_usage(event.usage_metadata)}"
            )
            return
        item = event.content_items[0]
        if not isinstance(item, DeltaItem):
            self.line(f"  [{item.type}] {_summary(item)}")
            return
        kind = item.type.partition(".")[0]
        if self._streaming != kind:
            self._end_fragments()
            self._out.write(f"{kind}> ")
            self._streaming = kind
        self._out.write(_fragment(item))
        self._out.flush()

    def end_line(self) -> None:
        """End a line of fragments still open, so that what comes next starts a line."""
        self._end_fragments()
        self._out.flush()

    def _end_fragments(self) -> None:
        if self._streaming is not None:
            self._out.write("\n")
            self._streaming = None


def _usage(usage: UsageMetadata | None) -> str:
    if usage is None:
        return "none"
    counts = (
        ("prompt", usage.prompt_tokens),
        ("cached", usage.cached_tokens),
        ("thoughts", usage.thoughts_tokens),
        ("response", usage.response_tokens),
    )
    return " ".join(f"{name}={'-' if n is None else n}" for name, n in counts)


def _fragment(item: DeltaItem) -> str:
    if isinstance(item, ToolCallDelta):
        header = f"{item.name}(id={item.tool_call_id}) " if item.name else ""
        return header + item.arguments
    if isinstance(item, TextDelta):
        return item.text
    if isinstance(item, ThinkingDelta):
        return item.thinking
    if isinstance(item, EmbeddingDelta):
        return f"<{len(item.embedding)} floats>"
    return f"<{len(item.data)} bytes {item.mime_type}>"


def _summary(item: DoneItem) -> str:
    if isinstance(item, ToolCallDone):
        return f"{item.name} {json.dumps(item.arguments)} (id={item.tool_call_id})"
    if isinstance(item, TextDone | ThinkingDone):
        text = item.text if isinstance(item, TextDone) else item.thinking
        fidelity = f", fidelity {sorted(item.fidelity)}" if item.fidelity else ""
        return f"{len(text)} characters{fidelity}"
    if isinstance(item, InlineDataDone | InlineThinkingDone):
        return f"{len(item.data)} bytes of {item.mime_type}"
    if isinstance(item, EmbeddingDone):
        return f"{len(item.embedding)} dimensions"
    return item.type  # tool results and image URLs: user input, never streamed


# --------------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------------


async def _agent_loop(client: AutoLLMClient, question: str, printer: StreamPrinter) -> None:
    """Ask ``question``; run every tool call locally and send the results until an answer."""
    config = UniConfig(tools=(_WEATHER_TOOL,))
    printer.line(f"user> {question}")
    message = UniMessage(role="user", content_items=(TextDone(text=question),))
    for _ in range(_MAX_TURNS):
        calls = []
        stream = client.streaming_response_stateful(message, config)
        async with aclosing(stream) as events:
            async for event in events:
                printer.event(event)
                calls += [i for i in event.content_items if isinstance(i, ToolCallDone)]
        if not calls:
            return
        results = []
        for call in calls:
            result = _get_weather(call.arguments)
            printer.line(f"tool> {call.name}({json.dumps(call.arguments)}) -> {result}")
            results.append(ToolResultDone(text=result, tool_call_id=call.tool_call_id))
        message = UniMessage(role="user", content_items=tuple(results))


async def _demo(delay: float, printer: StreamPrinter) -> int:
    async with simulator.Simulator.running(api_key=_DEMO_KEY, delay=delay) as sim:
        printer.line(f"Provider simulator listening on {sim.url} (loopback only)")
        for protocol in simulator.simulated_protocols():
            spec, record, _ = adapters.resolve(protocol)
            base_url = sim.base_url(protocol)
            model = record.traits.dialect.demo_model if record.traits.dialect else "sim-model"
            printer.line("")
            printer.line(
                f"== {record.traits.display_name}: client {spec.client_type}, {base_url}"
            )
            async with AutoLLMClient(
                model, api_key=_DEMO_KEY, base_url=base_url, client_type=spec.client_type
            ) as client:
                await _agent_loop(client, _DEMO_QUESTION, printer)
        await _demo_gateway(sim, printer)
    return 0


async def _demo_gateway(sim: simulator.Simulator, printer: StreamPrinter) -> None:
    """The same agent turn through an MMSP server (spec 07) whose one row is the first
    simulated protocol's client: the demo's caller holds only the gateway's token."""
    from .server import Gateway, serve  # the server is only the demo's last part

    protocol = simulator.simulated_protocols()[0]
    spec, record, _ = adapters.resolve(protocol)
    row = {"server_model_id": "demo-gateway-model", "model_id": "sim-model",
           "api_key": _DEMO_KEY, "base_url": sim.base_url(protocol),
           "client_type": spec.client_type}
    config = {"models": [row], "api_keys": [_DEMO_GATEWAY_TOKEN]}
    async with serve(Gateway(config), host="127.0.0.1", port=0) as server:
        printer.line("")
        printer.line(f"== MMSP server at {server.url}/v1 in front of "
                     f"{record.traits.display_name}: client mmsp")
        async with AutoLLMClient(
            "demo-gateway-model", api_key=_DEMO_GATEWAY_TOKEN, base_url=f"{server.url}/v1",
            client_type="mmsp",
        ) as client:
            await _agent_loop(client, _DEMO_QUESTION, printer)


# --------------------------------------------------------------------------------------------
# chat and replay
# --------------------------------------------------------------------------------------------


async def _print_stream(events: AsyncGenerator[UniEvent, None], printer: StreamPrinter) -> None:
    async with aclosing(events) as stream:
        async for event in stream:
            printer.event(event)


async def _chat(args: argparse.Namespace, printer: StreamPrinter) -> int:
    async with AutoLLMClient(
        args.model, client_type=args.client_type, base_url=args.base_url, api_key=args.api_key
    ) as client:
        message = UniMessage(role="user", content_items=(TextDone(text=args.prompt),))
        config = UniConfig(system_prompt=args.system)
        await _print_stream(client.streaming_response([message], config), printer)
    return 0


def _positive_int(text: str) -> int:
    """``--chunk-size``'s value: an integer of at least 1.

    Raises:
        argparse.ArgumentTypeError: anything else; argparse names the option and exits 2.
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _replay(args: argparse.Namespace, printer: StreamPrinter) -> int:
    data = Path(args.file).read_bytes()
    chunks: Iterable[bytes] = [data]
    if args.chunk_size is not None:
        chunks = (data[i : i + args.chunk_size] for i in range(0, len(data), args.chunk_size))
    for event in adapters.decode(args.source, chunks, strict=args.strict):
        printer.event(event)
    return 0


# --------------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mmsp-sansio",
        description="One message format and one streaming grammar over many LLM providers.",
    )
    debug_help = "show the traceback of a failure"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # ``--debug`` after the command too; SUPPRESS keeps a subcommand from resetting it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help=debug_help)
    backend = argparse.ArgumentParser(add_help=False, parents=[common])
    backend.add_argument(
        "--backend", choices=("asyncio", "trio"), default="asyncio", help="event loop to run on"
    )

    demo = commands.add_parser(
        "demo", parents=[backend], help="an agent loop per wire protocol, against the simulator"
    )
    demo.add_argument(
        "--delay", type=float, default=0.005, help="seconds the simulator waits before each event"
    )

    chat = commands.add_parser("chat", parents=[backend], help="stream one answer from a provider")
    chat.add_argument("--model", required=True, help="model id, e.g. claude-sonnet-5")
    chat.add_argument("--client-type", help="client type; else CLIENT_TYPE, else by model id")
    chat.add_argument("--base-url", help="endpoint; needs --api-key (spec 04 §3)")
    chat.add_argument(
        "--api-key", help="the key; else the provider's <P>_API_KEY, for its own endpoint only"
    )
    chat.add_argument("--system", help="system prompt")
    chat.add_argument("prompt")

    replay = commands.add_parser(
        "replay", parents=[common], help="decode a recorded provider body"
    )
    replay.add_argument(
        "--source", required=True, help="client type or wire protocol, e.g. ant-messages"
    )
    replay.add_argument("--strict", action="store_true", help="unknown wire events are errors")
    replay.add_argument(
        "--chunk-size", type=_positive_int, help="feed the body in pieces of N bytes (N >= 1)"
    )
    replay.add_argument("file")

    gateway = commands.add_parser(
        "serve", parents=[backend], help="the MMSP server: one gateway to the configured models"
    )
    gateway.add_argument(
        "--config", help="the server configuration (JSON, spec 07 §2); else MMSP_SERVER_CONFIG"
    )
    gateway.add_argument("--host", default=server.DEFAULT_HOST, help="address to listen on")
    gateway.add_argument("--port", type=int, default=server.DEFAULT_PORT,
                         help="port to listen on (0: a free one)")
    gateway.add_argument("--grace", type=float, default=server.DEFAULT_GRACE,
                         help="seconds streams in flight get to finish at shutdown")
    gateway.add_argument("--keepalive", type=float, default=server.DEFAULT_KEEPALIVE,
                         help="seconds between keep-alive comments while no event is ready")
    gateway.add_argument("--idle-timeout", type=float, default=server.DEFAULT_IDLE_TIMEOUT,
                         help="seconds a caller may read nothing before its stream is cut")

    trace_page = commands.add_parser(
        "traces", parents=[backend], help="a web page showing the traces of a directory"
    )
    trace_page.add_argument("--dir", required=True, help="the trace directory")
    trace_page.add_argument("--host", default=traces.DEFAULT_HOST, help="address to listen on")
    trace_page.add_argument("--port", type=int, default=traces.DEFAULT_PORT,
                            help="port to listen on (0: a free one)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (module docstring)."""
    args = _parser().parse_args(argv)
    out, err = _tolerant(sys.stdout), _tolerant(sys.stderr)
    printer = StreamPrinter(out)
    try:
        if args.command == "replay":
            return _replay(args, printer)
        if args.backend == "trio" and importlib.util.find_spec("trio") is None:
            return _fail(args, err, "--backend trio needs trio: pip install trio", 2)
        if args.command == "serve":
            return _serve(args, printer, err)
        if args.command == "traces":
            page = partial(traces.run, args.dir, args.host, args.port, out)
            return anyio.run(page, backend=args.backend)
        run = (
            partial(_demo, args.delay, printer) if args.command == "demo"
            else partial(_chat, args, printer)
        )
        return anyio.run(run, backend=args.backend)
    except KeyboardInterrupt:
        printer.end_line()
        return 130
    except BaseExceptionGroup as group:
        # Ctrl-C while several tasks run (a server still answering a request) reaches here
        # grouped with what the cancelled tasks raised: it is still a Ctrl-C.
        if group.subgroup(KeyboardInterrupt) is None:
            raise
        printer.end_line()
        return 130
    except Exception as exc:  # every failure is one line (module docstring)
        printer.end_line()
        if getattr(args, "debug", False):
            traceback.print_exception(exc, file=err)
        status = 2 if isinstance(exc, OSError) and not isinstance(exc, MMSPError) else 1
        hint = " Pass --api-key." if isinstance(exc, ApiKeyRequiredError) else ""
        return _fail(args, err, f"{type(exc).__name__}: {exc}{hint}", status)


def _serve(args: argparse.Namespace, printer: StreamPrinter, err: TextIO) -> int:
    """The ``serve`` command (module docstring); 2 without a usable configuration."""
    path = args.config or os.environ.get("MMSP_SERVER_CONFIG")
    if not path:
        return _fail(args, err, "no server configuration: pass --config FILE or set "
                     "MMSP_SERVER_CONFIG", 2)
    try:
        gateway = server.Gateway(server.load_config(path), keepalive=args.keepalive,
                                 idle_timeout=args.idle_timeout)
    except server.ConfigError as exc:
        return _fail(args, err, str(exc), 2)
    run = partial(server.run, gateway, host=args.host, port=args.port, grace=args.grace,
                  announce=printer.line)
    anyio.run(run, backend=args.backend)
    return 0


def _tolerant(stream: TextIO) -> TextIO:
    """``stream``, showing what it cannot encode as escapes instead of failing on it."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    return stream


def _fail(args: argparse.Namespace, err: TextIO, message: str, status: int) -> int:
    """Write ``message`` as the one line of a failure, the key redacted; return ``status``."""
    for key in _keys(args):
        message = redact(message, key)
    err.write(f"mmsp-sansio {args.command}: {' '.join(message.split())}\n")
    err.flush()
    return status


def _keys(args: argparse.Namespace) -> list[str]:
    """The keys this run may hold: ``--api-key`` and the chosen client's key variable."""
    keys = [args.api_key] if getattr(args, "api_key", None) else []
    if args.command == "chat":
        try:
            # The client type as the client resolves it (spec 04 §2 step 1).
            spec = client_spec(adapters.route(args.model, args.client_type
                                              or os.environ.get("CLIENT_TYPE")))
        except MMSPError:
            return keys
        keys += [os.environ[spec.api_key_env]] if os.environ.get(spec.api_key_env) else []
    return keys
