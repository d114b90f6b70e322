"""Where the gateway keeps the counts of its keys' limits (08 D76): in the process, or in Redis
so that every worker and instance shares them.

A store knows counters, not limits: ``apply`` adds an amount to each of a few named counters
at once (an amount of 0 reads one) and answers their values; a counter added to may be
forgotten ``ttl`` seconds later. ``mmsp_io.server.limits`` names a counter by its key and its
window, so a new window is a new counter and expiry only frees the old ones.

- ``MemoryStore``: a dict, the default; each process counts alone.
- ``RedisStore``: the synchronous ``redis`` client run in a worker thread (D76: the asyncio
  client does not run under trio), at most ``_THREADS`` threads at once. The counters of one
  ``apply`` are one ``MULTI``/``EXEC`` transaction (``GET``, ``INCRBY`` or ``INCRBYFLOAT``, each
  increment followed by ``EXPIRE``), so increments from every process are atomic. Every call
  is bounded by the store timeout: the client's socket timeouts are that timeout, it retries
  nothing, and the caller stops waiting for the thread once the timeout has passed (the
  thread then ends by its own socket timeout). The ``redis`` package is imported only when a
  store is configured.

Either raises ``StoreError`` when it cannot answer; what a request then gets is the limiter's
decision (``store.on_error``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, final

import anyio
import anyio.to_thread
import attrs

from .config import ConfigError, StoreSettings

if TYPE_CHECKING:
    import redis

__all__ = ["GATEWAY_EXTRA", "Count", "MemoryStore", "RedisStore", "Store", "StoreError",
           "open_store"]

#: How to install the Redis client, named when a store is configured without it.
GATEWAY_EXTRA: Final = "pip install 'mmsp-sansio[gateway]'"
#: Worker threads one Redis store runs at once.
_THREADS: Final = 16
#: Seconds between two sweeps of a memory store's expired counters.
_SWEEP_SECONDS: Final = 60.0

_T = TypeVar("_T")


class StoreError(Exception):
    """The store did not answer: unreachable, failed or slower than its timeout."""


@final
@attrs.frozen
class Count:
    """One counter of an ``apply``: add ``amount`` to ``key`` (0 reads it), which may be
    forgotten ``ttl`` seconds after this increment. A whole ``amount`` adds a whole number."""

    key: str
    amount: int | float
    ttl: int


class Store(Protocol):
    """The counters' store (module doc)."""

    #: Whether other processes see the same counters.
    @property
    def shared(self) -> bool: ...

    async def apply(self, counts: Sequence[Count]) -> list[float]:
        """Add each amount to its counter, all at once; the counters' values after it.

        Raises:
            StoreError: the store did not answer; nothing is known to have been counted.
        """
        ...

    async def ping(self) -> None:
        """Return once the store answers.

        Raises:
            StoreError: it does not.
        """
        ...

    async def aclose(self) -> None:
        """Release the store's connections."""
        ...


@final
class MemoryStore:
    """The counters in this process (module doc); ``clock`` (monotonic seconds) times their
    expiry, swept at most once a minute, so the dict holds the counters of the windows in use
    and of those ended within the last sweep period."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        #: Counter name to ``[value, the clock reading it may be forgotten at]``.
        self._counters: dict[str, list[float]] = {}
        self._next_sweep = clock() + _SWEEP_SECONDS

    @property
    def shared(self) -> bool:
        return False

    def __len__(self) -> int:
        """How many counters are held."""
        return len(self._counters)

    async def apply(self, counts: Sequence[Count]) -> list[float]:
        """As ``Store.apply``; it never fails."""
        now = self._clock()
        if now >= self._next_sweep:
            self._counters = {name: entry for name, entry in self._counters.items()
                              if entry[1] > now}
            self._next_sweep = now + _SWEEP_SECONDS
        values = []
        for count in counts:
            entry = self._counters.get(count.key)
            if count.amount:
                if entry is None or entry[1] <= now:
                    entry = self._counters[count.key] = [0, 0.0]
                entry[0] += count.amount
                entry[1] = now + count.ttl
            values.append(entry[0] if entry is not None and entry[1] > now else 0)
        return values

    async def ping(self) -> None:
        """As ``Store.ping``: always answers."""

    async def aclose(self) -> None:
        """Nothing to release."""


@final
class RedisStore:
    """The counters in Redis at ``url`` (module doc); ``timeout`` seconds bound every call.

    Raises:
        ConfigError: the ``redis`` package is missing (the message names the extra to
            install) or the URL is not a Redis URL.
    """

    def __init__(self, url: str, timeout: float) -> None:
        try:
            import redis
            import redis.backoff
            import redis.retry
        except ImportError as exc:
            raise ConfigError(f"store.redis_url needs the Redis client: {GATEWAY_EXTRA}") from exc
        try:
            self._client: redis.Redis = redis.Redis.from_url(
                url, socket_timeout=timeout, socket_connect_timeout=timeout,
                retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0))
        except ValueError as exc:  # the message names the scheme, never the password
            raise ConfigError(f"store.redis_url is not a Redis URL: {exc}") from exc
        self._errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)
        self._timeout = timeout
        self._threads = anyio.CapacityLimiter(_THREADS)

    @property
    def shared(self) -> bool:
        return True

    async def apply(self, counts: Sequence[Count]) -> list[float]:
        """As ``Store.apply``: one transaction (module doc)."""
        return await self._call(self._apply, counts)

    async def ping(self) -> None:
        """As ``Store.ping``."""
        await self._call(self._client.ping)

    async def aclose(self) -> None:
        """Close the client's connections."""
        self._client.close()

    def _apply(self, counts: Sequence[Count]) -> list[float]:
        """``apply`` in the worker thread: the commands of each counter, then the values out
        of the replies (an ``EXPIRE``'s reply skipped)."""
        pipe = self._client.pipeline(transaction=True)
        for count in counts:
            if not count.amount:
                pipe.get(count.key)
                continue
            if isinstance(count.amount, int):
                pipe.incrby(count.key, count.amount)
            else:
                pipe.incrbyfloat(count.key, count.amount)
            pipe.expire(count.key, count.ttl)
        replies = iter(pipe.execute())
        values = []
        for count in counts:
            reply: Any = next(replies)
            if count.amount:
                next(replies)
            values.append(float(reply or 0))
        return values

    async def _call(self, function: Callable[..., _T], *args: Any) -> _T:
        """``function(*args)`` in a worker thread, given up after the timeout.

        Raises:
            StoreError: the client failed, or did not finish within the timeout.
        """
        with anyio.move_on_after(self._timeout):
            try:
                return await anyio.to_thread.run_sync(function, *args, limiter=self._threads,
                                                      abandon_on_cancel=True)
            except self._errors as exc:
                raise StoreError(f"Redis failed: {type(exc).__name__}: {exc}") from exc
        raise StoreError(f"Redis did not answer within {self._timeout:g} s")


def open_store(settings: StoreSettings | None) -> Store:
    """The store ``settings`` describe: Redis at its URL, else a ``MemoryStore``.

    Raises:
        ConfigError: as ``RedisStore``.
    """
    if settings is None:
        return MemoryStore()
    return RedisStore(settings.redis_url, settings.timeout_s)
