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
- ``replay [--source SOURCE] FILE``: decodes a recorded provider body, or a cassette (08 D78,
  told by its content; its protocol is the source), through ``adapters.decode`` and prints
  the unified stream.
- ``serve --config FILE [--host HOST] [--port PORT]``: runs the MMSP server of
  ``mmsp_io.server`` (spec 07; default ``127.0.0.1:25752``) for the models of the configuration
  file (``--config``, else ``MMSP_SERVER_CONFIG``; without either it says so and exits 2, and
  an invalid file exits 2 naming the row at fault). It prints its banner, serves until SIGINT
  or SIGTERM, then shuts down gracefully within ``--grace`` seconds; ``SIGHUP`` reloads the
  file (``mmsp_io.server.reload``; a bad one is announced and the old one kept). Its access log
  (``mmsp_io.server.access``) goes to stderr unless the file's ``access_log`` says otherwise.
- ``traces --dir DIR [--host HOST] [--port PORT]``: serves the trace page of ``mmsp_io.traces``
  (default ``127.0.0.1:25750``, 08 D70): the traces of ``DIR``, one conversation at a time.
- ``simulate [--host HOST] [--port PORT]``: serves the provider simulator of
  ``mmsp_io.simulator`` (default ``127.0.0.1:25753``, 08 D78) with its canned agent turn: it
  prints each protocol's base URL and ``key: <key>``, and serves until SIGINT or SIGTERM.
- ``playground [--host HOST] [--port PORT] [--dir DIR]``: serves the chat page of
  ``mmsp_io.playground`` (default ``127.0.0.1:25751``, 07 §8) with an in-process simulator and
  the trace page of ``DIR`` at ``/tracer/``.

Every command prints the public stream the same way: fragments as they arrive, each ``.done``
item and the ``stop`` on a line of their own, with usage and finish reason; text that cannot be
encoded for the terminal is shown escaped. ``--backend trio`` runs ``demo`` and ``chat`` under
trio instead of asyncio.

Failures: every failure is one line on stderr, ``mmsp-sansio <command>: <ErrorType>: <message>``,
after the line of streamed text has been ended; no traceback unless ``--debug`` is given. Keys
never show (08 D61). Exit status: 0 on success, 1 when a call failed, 2 for a usage error or an
unreadable file, 130 on Ctrl-C.

An application beside the client library (docs/architecture.md, "Applications beside the
library"): ``import mmsp_io`` does not load it. ``main`` and the argument parser are here, the
stream printing every command shares in ``printer``, and the commands ``demo``, ``chat`` and
``replay`` in the ``run`` of the modules of those names, as are ``simulate`` and
``playground``; ``serve`` and ``traces`` run ``mmsp_io.server`` and ``mmsp_io.traces``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import sys
import traceback
from collections.abc import Sequence
from functools import partial
from typing import Any, Final, TextIO

import anyio

import adapters
from adapters.clients import client_spec
from mmsp_core.errors import ApiKeyRequiredError, MMSPError, redact

from .. import server, simulator, traces
from ..server import access
from . import chat, demo, playground, replay, simulate
from .printer import StreamPrinter

__all__ = ["StreamPrinter", "main"]


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



def _parser() -> argparse.ArgumentParser:
    """The command line: the global options, then one sub-parser per command."""
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
    _client_commands(commands, common, backend)
    _server_commands(commands, backend)
    return parser


def _client_commands(commands: Any, common: argparse.ArgumentParser,
                     backend: argparse.ArgumentParser) -> None:
    """The commands that stream as a client: ``demo``, ``chat``, ``replay``."""
    simulated = commands.add_parser(
        "demo", parents=[backend], help="an agent loop per wire protocol, against the simulator"
    )
    simulated.add_argument(
        "--delay", type=float, default=0.005, help="seconds the simulator waits before each event"
    )

    one_answer = commands.add_parser(
        "chat", parents=[backend], help="stream one answer from a provider"
    )
    one_answer.add_argument("--model", required=True, help="model id, e.g. claude-sonnet-5")
    one_answer.add_argument("--client-type", help="client type; else CLIENT_TYPE, else by model id")
    one_answer.add_argument("--base-url", help="endpoint; needs --api-key (spec 04 §3)")
    one_answer.add_argument(
        "--api-key", help="the key; else the provider's <P>_API_KEY, for its own endpoint only"
    )
    one_answer.add_argument("--system", help="system prompt")
    one_answer.add_argument("prompt")

    recorded = commands.add_parser(
        "replay", parents=[common], help="decode a recorded provider body or a cassette"
    )
    recorded.add_argument(
        "--source",
        help="client type or wire protocol, e.g. ant-messages (a cassette names its own)",
    )
    recorded.add_argument("--strict", action="store_true", help="unknown wire events are errors")
    recorded.add_argument(
        "--chunk-size", type=_positive_int, help="feed the body in pieces of N bytes (N >= 1)"
    )
    recorded.add_argument("file")


def _server_commands(commands: Any, backend: argparse.ArgumentParser) -> None:
    """The commands that serve: ``serve`` (the MMSP server), ``traces`` (the trace page) and
    ``simulate`` (the provider simulator)."""
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

    providers = commands.add_parser(
        "simulate", parents=[backend],
        help="the provider simulator: every protocol's endpoints, a fake key, no network",
    )
    providers.add_argument("--host", default="127.0.0.1", help="address to listen on")
    providers.add_argument("--port", type=int, default=simulator.DEFAULT_PORT,
                           help="port to listen on (default %(default)s; 0: a free one)")
    playground.add_parser(commands, backend)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (module docstring)."""
    args = _parser().parse_args(argv)
    out, err = _tolerant(sys.stdout), _tolerant(sys.stderr)
    printer = StreamPrinter(out)
    try:
        if args.command == "replay":
            return replay.run(args, printer)
        if args.backend == "trio" and importlib.util.find_spec("trio") is None:
            return _fail(args, err, "--backend trio needs trio: pip install trio", 2)
        if args.command == "serve":
            return _serve(args, printer, err)
        if args.command == "traces":
            page = partial(traces.run, args.dir, args.host, args.port, out)
            return anyio.run(page, backend=args.backend)
        if args.command == "playground":
            return playground.run(args, out)
        if args.command == "simulate":
            providers = partial(simulate.run, args.host, args.port, printer.line)
            return anyio.run(providers, backend=args.backend)
        run = (
            partial(demo.run, args.delay, printer) if args.command == "demo"
            else partial(chat.run, args, printer)
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
    build = partial(_gateway, path, args)
    try:
        gateway = build()
    except server.ConfigError as exc:
        return _fail(args, err, str(exc), 2)
    run = partial(server.run, gateway, host=args.host, port=args.port, grace=args.grace,
                  announce=printer.line, reload=build)
    collect_as_a_server()
    anyio.run(run, backend=args.backend)
    return 0


#: The allocations between two collections of the youngest generation in a ``serve``
#: process (Python's default is 700).
SERVER_GC_THRESHOLD: Final = 10_000


def collect_as_a_server() -> None:
    """Tune this process's garbage collector for serving, as ``serve`` does once its
    gateway is built: the objects made so far (modules, configuration, clients) are frozen
    out of every collection (``gc.freeze``), and the youngest generation is collected every
    ``SERVER_GC_THRESHOLD`` allocations instead of 700. A request allocates many short-lived
    objects; collecting them 14 times less often cut the collector's time per short stream
    relayed from about 0.12 ms to 0.05 ms (issue 25, ``benchmarks/results-*-gateway.md``).
    Only the ``serve`` command does this: an application embedding the server owns its
    process's collector."""
    gc.freeze()
    gc.set_threshold(SERVER_GC_THRESHOLD, *gc.get_threshold()[1:])


def _gateway(path: str, args: argparse.Namespace) -> server.Gateway:
    """The gateway of the configuration file at ``path``, at start and on each ``SIGHUP``;
    its access log set up (stderr unless the file's ``access_log`` says otherwise).

    Raises:
        ConfigError: the file cannot be read or is invalid (the message names the cell).
    """
    config = server.load_config(path)
    gateway = server.Gateway(config, keepalive=args.keepalive, idle_timeout=args.idle_timeout)
    access.configure(config.access_log or "stderr")
    return gateway


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
