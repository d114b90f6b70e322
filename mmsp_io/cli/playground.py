"""The ``playground`` command: the chat page of ``mmsp_io.playground`` (07 §8, 08 D78) on
``127.0.0.1:25751`` by default, with an in-process simulator, until Ctrl-C."""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any, TextIO

import anyio

from .. import playground, tracer


def add_parser(commands: Any, backend: argparse.ArgumentParser) -> None:
    """Add the command and its options to the sub-parsers ``commands``."""
    page = commands.add_parser(
        "playground", parents=[backend],
        help="a chat page to try models: the simulator's, the catalog's, a gateway's",
    )
    page.add_argument("--host", default=playground.DEFAULT_HOST, help="address to listen on")
    page.add_argument("--port", type=int, default=playground.DEFAULT_PORT,
                      help="port to listen on (default %(default)s; 0: a free one)")
    page.add_argument("--dir", help="the trace directory; else MMSP_TRACE_DIR, MMSP_CACHE_DIR "
                      "or ./cache")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Serve the playground until Ctrl-C; return the exit status, 0.

    Raises:
        OSError: a port cannot be bound.
    """
    serve = partial(playground.run, tracer.trace_dir(args.dir), args.host, args.port, out)
    return anyio.run(serve, backend=args.backend)
