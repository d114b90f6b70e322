"""Reloading the h11 server's configuration (issue 25 item 7): ``python -m mmsp_io serve``
reloads its file on ``SIGHUP`` (``app.run``).

``Gateways`` stands between the h11 core and the gateways: each request is handled by the
gateway current when it arrived, from its head to the end of its response. ``replace`` makes
a new gateway, built from the reloaded file, the one new requests go to; the requests the old
one is handling (streams in flight) keep it, with its row clients, until they end, and it is
closed after the last one. A file that cannot be loaded changes nothing (``app.run`` logs it).

What a reload does not change: the address and ``connections`` (the listening socket's, read
at start). The counts of ``GET /v1/metrics`` and ``GET /metrics`` and the in-process counts of
the keys' limits are the new gateway's, begun at the reload (limits shared through Redis, 08
D76, carry on). Under an ASGI server, its own reload applies (for hypercorn, ``SIGHUP`` or
``--reload`` restarts its workers, each building its gateway from the file).
"""

from __future__ import annotations

from typing import final

import anyio

from ..httpserver import Request
from .handler import Gateway, Output

__all__ = ["Gateways"]


@final
class Gateways:
    """The gateway new requests go to (``current``) and the replaced ones still answering
    theirs (module docstring)."""

    def __init__(self, gateway: Gateway) -> None:
        self.current = gateway
        #: The requests each gateway is handling; a replaced one leaves at its last.
        self._active: dict[Gateway, int] = {gateway: 0}

    async def handle(self, request: Request, out: Output, *, local_host: str | None) -> None:
        """Answer ``request`` with the current gateway (``Gateway.handle``); close that
        gateway after it if it was replaced meanwhile and this was its last request.

        Raises:
            anyio.BrokenResourceError, anyio.ClosedResourceError: as ``Gateway.handle``.
        """
        gateway = self.current
        self._active[gateway] += 1
        try:
            await gateway.handle(request, out, local_host=local_host)
        finally:
            self._active[gateway] -= 1
            if gateway is not self.current and not self._active[gateway]:
                await self._close(gateway)

    async def replace(self, gateway: Gateway) -> None:
        """Send new requests to ``gateway``; close the one it replaces now if it is idle,
        else after its last request."""
        replaced, self.current = self.current, gateway
        self._active[gateway] = 0
        if not self._active[replaced]:
            await self._close(replaced)

    async def _close(self, gateway: Gateway) -> None:
        del self._active[gateway]
        with anyio.CancelScope(shield=True):
            await gateway.aclose()

    def drain(self) -> None:
        """The server begins to shut down: every gateway's ``GET /readyz`` answers 503."""
        for gateway in self._active:
            gateway.draining = True

    def abort_streams(self, reason: str) -> None:
        """Abort the upstream call of every stream in flight, on every gateway."""
        for gateway in tuple(self._active):
            gateway.abort_streams(reason)

    async def aclose(self) -> None:
        """Close every gateway left."""
        for gateway in tuple(self._active):
            await self._close(gateway)
