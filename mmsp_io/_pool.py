"""The connection pool of a client the library builds itself, spread over several pools.

Theory of operation: httpcore's connection pool walks every connection and every queued
request each time a request starts or a response ends, so one pool of a thousand streams
costs a thousand steps per event and a thousand concurrent streams never get going (issue 9
measured one pool of 1,000 connections past a 120 s first-event timeout). ``SpreadTransport``
holds pools of at most ``per_pool`` connections each: a request goes to the first pool with a
free connection slot, a further pool is opened (lazily, sharing one TLS context) when every
open one is full, and past ``max_pools`` to the least busy. A request counts as busy from the
moment it is sent until its response is closed. Below ``per_pool`` concurrent requests there
is exactly one pool, the client's own, as without the spread.

Only a client the library built itself gets this (08 D62): a caller's ``http_client`` is used
as given.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from typing import Final, final

import httpx

__all__ = ["SpreadTransport", "spread_pool"]

#: Connections per pool: the pool walk per event stays this short.
PER_POOL: Final = 100
#: Pools at most; past ``PER_POOL * MAX_POOLS`` concurrent requests they queue.
MAX_POOLS: Final = 16


@final
class _Counted(httpx.AsyncByteStream):
    """A response body that gives its pool slot back when it is closed (once)."""

    __slots__ = ("_index", "_stream", "_transport")

    def __init__(self, stream: httpx.AsyncByteStream, transport: SpreadTransport,
                 index: int) -> None:
        self._stream = stream
        self._transport = transport
        self._index = index

    def __aiter__(self) -> AsyncIterator[bytes]:
        # The inner iterator itself: no extra step per chunk.
        return self._stream.__aiter__()

    async def aclose(self) -> None:
        if self._index >= 0:
            self._transport._release(self._index)
            self._index = -1
        await self._stream.aclose()


@final
class SpreadTransport(httpx.AsyncBaseTransport):
    """One transport over several ``httpx.AsyncHTTPTransport`` pools (module doc).

    Args:
        first: the first pool (the client's own transport).
        limits: the limits of each further pool.
        per_pool: requests in flight per pool before a further one is used.
        max_pools: the most pools opened.
    """

    def __init__(self, first: httpx.AsyncHTTPTransport, *, limits: httpx.Limits,
                 per_pool: int = PER_POOL, max_pools: int = MAX_POOLS) -> None:
        self._pools = [first]
        self._busy = [0]
        self._limits = limits
        self._per_pool = per_pool
        self._max_pools = max_pools
        self._tls: ssl.SSLContext | None = None

    @property
    def pools(self) -> int:
        """How many pools are open."""
        return len(self._pools)

    def _choose(self) -> int:
        busy = self._busy
        for index, count in enumerate(busy):
            if count < self._per_pool:
                return index
        if len(busy) < self._max_pools:
            if self._tls is None:
                self._tls = httpx.create_ssl_context()
            self._pools.append(httpx.AsyncHTTPTransport(verify=self._tls, limits=self._limits))
            busy.append(0)
            return len(busy) - 1
        return min(range(len(busy)), key=busy.__getitem__)

    def _release(self, index: int) -> None:
        self._busy[index] -= 1

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the chosen pool; its slot is held until the body closes."""
        index = self._choose()
        self._busy[index] += 1
        try:
            response = await self._pools[index].handle_async_request(request)
        except BaseException:
            self._release(index)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Counted(response.stream, self, index)
        return response

    async def aclose(self) -> None:
        """Close every pool."""
        for pool in self._pools:
            await pool.aclose()


def spread_pool(client: httpx.AsyncClient, limits: httpx.Limits) -> httpx.AsyncClient:
    """Spread ``client``'s default transport (built by httpx with ``limits``) over several
    pools; mounted transports (the environment's proxies) stay as they are. Returns
    ``client``."""
    transport = client._transport
    if type(transport) is httpx.AsyncHTTPTransport:
        per_pool = limits.max_connections or PER_POOL
        client._transport = SpreadTransport(transport, limits=limits, per_pool=per_pool)
    return client
