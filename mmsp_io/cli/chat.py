"""The ``chat`` command (one answer streamed from a real provider) and the ``replay`` command
(a recorded provider body decoded through ``adapters.decode``), described in the package
docstring."""

from __future__ import annotations

import argparse
from collections.abc import AsyncGenerator, Iterable
from contextlib import aclosing
from pathlib import Path

import adapters
from mmsp_core.model import TextDone, UniConfig, UniEvent, UniMessage

from ..client import AutoLLMClient
from .printer import StreamPrinter


async def _print_stream(events: AsyncGenerator[UniEvent, None], printer: StreamPrinter) -> None:
    async with aclosing(events) as stream:
        async for event in stream:
            printer.event(event)


async def chat(args: argparse.Namespace, printer: StreamPrinter) -> int:
    """Stream the answer to ``args.prompt`` from ``args.model``; return the exit status, 0.

    Raises:
        MMSPError: the call failed (the command line reports it, the key redacted).
    """
    async with AutoLLMClient(
        args.model, client_type=args.client_type, base_url=args.base_url, api_key=args.api_key
    ) as client:
        message = UniMessage(role="user", content_items=(TextDone(text=args.prompt),))
        config = UniConfig(system_prompt=args.system)
        await _print_stream(client.streaming_response([message], config), printer)
    return 0



def replay(args: argparse.Namespace, printer: StreamPrinter) -> int:
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

