"""A non-2xx answer's error (08 D16, D19): a bounded preview of its body, and the exception
built from the status, the headers and that preview.

Any status outside 2xx (3xx included: the driver follows no redirect of an authenticated
request, 08 D16) reads at most ``ERROR_PREVIEW_BYTES`` of the body (08 D18: every buffer is
bounded) and raises what ``error_for_status(status, headers, preview)`` builds: by default
``provider_http_error``, the ``ProviderHTTPError`` read from the provider's JSON error body
(OpenAI, Anthropic and Google shapes) by the pure ``adapters.provider_http_error``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Final

import httpx

import adapters
from mmsp_core.errors import ProviderHTTPError, StreamTimeoutError

from ._deadlines import Deadlines
from ._decoding import BODY_CUT

__all__ = ["ERROR_PREVIEW_BYTES", "ErrorForStatus", "provider_http_error", "raise_for_status"]

#: How much of a non-2xx body is read for the error (08 D18: every buffer is bounded).
ERROR_PREVIEW_BYTES: Final = 64 * 1024

#: Builds the exception of a non-2xx answer from its status, headers and body preview (09).
#: ``headers`` is case-insensitive (an ``httpx.Headers``).
ErrorForStatus = Callable[[int, Mapping[str, str], bytes], BaseException]


def provider_http_error(
    client: str, status: int, headers: Mapping[str, str], body: bytes
) -> ProviderHTTPError:
    """Build the ``ProviderHTTPError`` of a non-2xx answer (08 D19): the pure
    ``adapters.provider_http_error`` at the current time.

    It reads the provider's JSON error body at the places its protocol's ``ErrorShape`` names
    (OpenAI, Anthropic and Google shapes, the plain ones of gateways); a body that is not
    JSON, however deeply nested, becomes a short preview of its text. The request id comes
    from the ``x-request-id`` / ``request-id`` / ``x-goog-request-id`` header or the body;
    ``retry_after`` from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date).
    """
    return adapters.provider_http_error(client, status, headers, body, now=time.time())


async def raise_for_status(
    response: httpx.Response,
    chunks: AsyncIterator[bytes],
    deadlines: Deadlines,
    error_for_status: ErrorForStatus | None,
) -> None:
    """Raise the error of a non-2xx ``response`` (module doc), its preview read from its body's
    ``chunks`` under ``deadlines``; return at once on a 2xx one.

    Raises:
        BaseException: what ``error_for_status`` builds, by default ``ProviderHTTPError``.
    """
    if 200 <= response.status_code < 300:
        return
    body = await _read_bounded(chunks, deadlines, ERROR_PREVIEW_BYTES)
    build = error_for_status or functools.partial(provider_http_error, deadlines.client)
    raise build(response.status_code, response.headers, body)


async def _read_bounded(chunks: AsyncIterator[bytes], deadlines: Deadlines, limit: int) -> bytes:
    """Read at most ``limit`` bytes of the body; stop early, without error, on a cut or when a
    named timeout expires (the error of the status is raised all the same)."""
    body = bytearray()
    while len(body) < limit:
        try:
            chunk = await deadlines.guarded(chunks.__anext__(), idle=True)
        except (StopAsyncIteration, StreamTimeoutError, *BODY_CUT):
            break
        body += chunk
    return bytes(body[:limit])
