"""The ``simulate`` command: the provider simulator (``mmsp_io.simulator``) on a fixed port,
serving the canned agent turn until SIGINT or SIGTERM (the package docstring, 08 D78)."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator

import anyio

import adapters

from .. import simulator


def banner(sim: simulator.Simulator) -> Iterator[str]:
    """The lines that say where ``sim`` listens: its origin, each protocol's base URL (the
    ``base_url`` a client of that protocol is given) and the key every request must carry."""
    yield f"Provider simulator at {sim.url} (Ctrl-C to stop)"
    for protocol in simulator.simulated_protocols():
        name = adapters.PROTOCOLS[protocol].traits.display_name
        yield f"  {protocol:<20} {sim.base_url(protocol):<32} {name}"
    yield f"key: {sim.api_key}"


async def run(host: str, port: int, announce: Callable[[str], None]) -> int:
    """Serve the simulator on ``host:port`` until SIGINT or SIGTERM, each banner line given to
    ``announce`` first; return the exit status, 0. Call it from the main thread.

    Raises:
        OSError: the port cannot be bound.
    """
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with simulator.Simulator.running(host=host, port=port) as sim:
            for line in banner(sim):
                announce(line)
            async for _ in signals:
                announce("Shutting down")
                break
    return 0
