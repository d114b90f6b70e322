"""The ``replay`` command: a recorded provider body decoded through ``adapters.decode`` (the
package docstring)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

import adapters

from .printer import StreamPrinter


def run(args: argparse.Namespace, printer: StreamPrinter) -> int:
    """Decode the body file ``args.file`` as ``args.source``; return the exit status, 0.

    Raises:
        OSError: the file cannot be read.
        MMSPError: the body does not decode.
    """
    data = Path(args.file).read_bytes()
    chunks: Iterable[bytes] = [data]
    if args.chunk_size is not None:
        chunks = (data[i : i + args.chunk_size] for i in range(0, len(data), args.chunk_size))
    for event in adapters.decode(args.source, chunks, strict=args.strict):
        printer.event(event)
    return 0

