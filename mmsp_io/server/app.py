"""The MMSP server on the package's h11 core: one ``h11.Connection`` per socket, anyio, no
web framework (spec 07 §1-§5). It runs under asyncio and trio.

``serve(gateway)`` is the server for the length of an ``async with`` block (tests, embedding);
``run(config, ...)`` is ``python -m mmsp_io serve``: it announces itself (07 §2's banner),
serves until SIGINT or SIGTERM, then shuts down gracefully; SIGHUP reloads the configuration
(``reload``: new requests go to the new gateway, streams in flight finish on the old).

Graceful shutdown: the core stops accepting at once and closes idle connections; streams in
flight get ``grace`` seconds to finish, then their upstream calls are aborted, so each writes
``data: [DONE]`` (07 §4's cancellation) within ``_FLUSH_SECONDS`` more, after which whatever is
left is closed.

The ``Host`` rule of an open server and authentication (07 §3) are checked on the request
head, before the body is read (``head_refusal``, the core's ``admit`` hook): an upload either
refuses is answered 403 or 401 and never read.

The core's own refusals (413 for a body over 50 MiB, 431, 408 for a request too slow to
arrive, 400 for bad HTTP, 503 at the connection cap) are answered in the server's JSON error
form (07 §4): ``{"error": {"type": "InvalidRequestError", ...}}``, ``ServiceUnavailableError``
for the 503.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any, Final

import anyio

from .. import httpserver
from .config import ConfigError
from .handler import MAX_BODY_BYTES, Answer, Gateway, refusal
from .reload import Gateways

__all__ = ["DEFAULT_GRACE", "DEFAULT_HOST", "DEFAULT_PORT", "banner", "head_refusal", "run",
           "serve"]

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 25752
DEFAULT_GRACE: Final = 10.0
#: After the grace period, how long aborted streams have to write their ``[DONE]``.
_FLUSH_SECONDS: Final = 1.0
#: The core's refusal reasons, in 07 §4's wording where it has one.
_REASONS: Final = {413: "Request body is too large."}
#: The signal that reloads the configuration (``run``), where the system has it.
_RELOAD: Final = (signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()
#: The error types of the core's refusals that are no invalid request.
_TYPES: Final = {503: "ServiceUnavailableError"}


def core_refusal(status: int, reason: str) -> tuple[str, bytes]:
    """The body of a refusal the h11 core answers itself, in the server's error form."""
    answer = refusal(status, _TYPES.get(status, "InvalidRequestError"),
                     _REASONS.get(status, reason))
    return answer.headers[0][1], answer.body


async def head_refusal(
    gateway: Gateway, head: httpserver.Request, *, local_host: str | None = None
) -> Answer | None:
    """The refusal of a request turned away on its head alone, before any byte of its body is
    read: the ``Host`` rule of an open server and authentication, which come first (07 §3,
    §4), so an upload refused by either is never buffered. ``local_host`` is the address the
    front end listens at (``Gateway.host_allowed``). ``None`` lets the request in. Both front
    ends ask it."""
    if gateway.host_allowed(head, local_host) and gateway.authorised(head):
        return None
    decision = gateway.decide(head, local_host=local_host)  # the 403 or 401, counted
    if not isinstance(decision, Answer):
        return None
    gateway.access.answered(head, None, decision.status, time.monotonic())  # its log line
    return decision


@contextlib.asynccontextmanager
async def serve(
    gateway: Gateway | Gateways,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    grace: float = DEFAULT_GRACE,
) -> AsyncIterator[httpserver.HTTPServer]:
    """Serve ``gateway`` on ``host:port`` (``0``: a free port) for the ``async with`` block;
    leaving it shuts down gracefully (module docstring). The gateway's clients are closed.
    ``Gateways`` lets the caller replace the gateway meanwhile (``reload``).

    Raises:
        OSError: the port cannot be bound.
    """
    gateways = gateway if isinstance(gateway, Gateways) else Gateways(gateway)
    settings: dict[str, Any] = dict(gateways.current.config.connections)
    limits = httpserver.Limits(max_body_bytes=MAX_BODY_BYTES, **settings)

    async def admit(head: httpserver.Request) -> Answer | None:
        return await head_refusal(gateways.current, head, local_host=host)

    try:
        async with anyio.create_task_group() as tasks:
            handle = partial(gateways.handle, local_host=host)  # the Host rule (handler)
            async with httpserver.serve(handle, host=host, port=port, limits=limits,
                                        grace=grace + _FLUSH_SECONDS, refusal=core_refusal,
                                        admit=admit) as server:
                try:
                    yield server
                finally:
                    gateways.drain()  # GET /readyz: 503 (health)
                    tasks.start_soon(_abort_after, gateways, grace)
            tasks.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The task group wraps what the ``async with`` body raised; hand it back as it was.
        if len(group.exceptions) != 1:
            raise
        error = group.exceptions[0]
        raise error from error.__cause__
    finally:
        with anyio.CancelScope(shield=True):
            await gateways.aclose()


async def _abort_after(gateways: Gateways, grace: float) -> None:
    await anyio.sleep(grace)
    gateways.abort_streams("the server is shutting down")


def banner(gateway: Gateway, url: str) -> list[str]:
    """The start announcement of 07 §2: the address, the models, an open server said so, and
    where the keys' limits are counted when a key has one (08 D76)."""
    lines = [f"Starting MMSP server at {url}/v1",
             f"Serving models: {', '.join(gateway.models)}"]
    if gateway.config.open:
        lines.append("Open server: api_keys is empty, every request is accepted")
    if any(key.limited for key in gateway.config.keys):
        lines.append("Key limits: shared through Redis" if gateway.limits.shared else
                     "Key limits: counted by this process alone (no store configured)")
    return lines


async def run(
    gateway: Gateway,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    grace: float = DEFAULT_GRACE,
    announce: Callable[[str], None] = print,
    reload: Callable[[], Gateway] | None = None,
) -> None:
    """Serve ``gateway`` until SIGINT or SIGTERM, then shut down gracefully (module doc);
    each line of the banner goes to ``announce``. On SIGHUP, ``reload`` builds the gateway of
    the reloaded configuration, which takes the new requests (``reload`` module); when it
    raises ``ConfigError``, that is announced and the gateway in use stays. Call it from the
    main thread.

    Raises:
        OSError: the port cannot be bound.
    """
    gateways = Gateways(gateway)
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, *_RELOAD) as signals:
        async with serve(gateways, host=host, port=port, grace=grace) as server:
            for line in banner(gateway, server.url):
                announce(line)
            async for received in signals:
                if received in _RELOAD:
                    await _reload(gateways, reload, announce)
                    continue
                announce("Shutting down: streams in flight have "
                         f"{grace:g} s to finish")
                break


async def _reload(
    gateways: Gateways, reload: Callable[[], Gateway] | None, announce: Callable[[str], None]
) -> None:
    """Replace the current gateway by what ``reload`` builds (``run``), announcing the
    outcome; a ``ConfigError`` (the message names the file and the cell) keeps the old."""
    if reload is None:
        announce("SIGHUP: this server has no configuration file to reload")
        return
    try:
        gateway = reload()
    except ConfigError as exc:
        announce(f"Reload failed, the configuration in use stays: {exc}")
        return
    await gateways.replace(gateway)
    announce(f"Reloaded: serving models: {', '.join(gateway.models)}")
