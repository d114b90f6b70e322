"""The ``chat`` command: one answer streamed from a real provider (the package docstring)."""

from __future__ import annotations

import argparse
from collections.abc import AsyncGenerator
from contextlib import aclosing

from mmsp_core.model import TextDone, UniConfig, UniEvent, UniMessage

from ..client import AutoLLMClient
from .printer import StreamPrinter


async def _print_stream(events: AsyncGenerator[UniEvent, None], printer: StreamPrinter) -> None:
    async with aclosing(events) as stream:
        async for event in stream:
            printer.event(event)


async def run(args: argparse.Namespace, printer: StreamPrinter) -> int:
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
