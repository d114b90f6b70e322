"""Fetching the http(s) images of a call for a builder that needs their bytes (08 D37).

``fetch_images`` fetches each URL of ``CallPlan.image_urls`` once, as a ``data:`` URI, as the
client's ``RemoteImages`` allows (``mmsp_io.remote_images``): an image within
``max_image_bytes``, all of them within ``max_total_bytes``, a host that must be checked
through ``checked_client``. No credentials are sent; at most ``_IMAGE_REDIRECTS`` redirects
are followed, each one a new request checked as the first. No text of an answer shows in an
error, and every failure to get one (a refused host, no connection, a timeout) reads alike,
so that a caller learns nothing of what it cannot fetch.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Final

import attrs
import httpx

from mmsp_core.errors import (
    InvalidMessageError,
    ProviderConnectionError,
    StreamLimitError,
    StreamTimeoutError,
    preview,
)

from .abort import AbortSignal, abortable
from .driver import Timeouts, fetch_body
from .remote_images import RemoteImages, checked_client

__all__ = ["fetch_images"]

#: Redirects followed by one image fetch (each hop checked as the first, 08 D37).
_IMAGE_REDIRECTS: Final = 5
#: An image is read as sent: its length is what the limits count.
_IMAGE_HEADERS: Final = (("accept-encoding", "identity"),)
#: Why a remote image is refused when the client fetches none (``RemoteImages.enabled``).
_IMAGES_OFF: Final = (
    "remote images are not fetched here: send the image as a data: URI, or enable fetching "
    "(RemoteImages(enabled=True); on an MMSP server, remote_images.enabled in its configuration)"
)


@attrs.frozen
class _Fetch:
    """What every image fetch of one call shares."""

    client: str
    policy: RemoteImages
    signal: AbortSignal | None
    timeouts: Timeouts
    #: When the call started (``anyio.current_time()``): its ``total`` counts from there.
    started: float


async def fetch_images(
    http: httpx.AsyncClient,
    policy: RemoteImages,
    urls: Mapping[str, int],
    *,
    client: str,
    signal: AbortSignal | None,
    timeouts: Timeouts,
    started: float,
) -> dict[str, str]:
    """Fetch each image of ``urls`` (``CallPlan.image_urls``: a URL with the index of the
    first message carrying it) as a ``data:`` URI, by URL, as ``policy`` allows (module doc),
    through ``http`` when ``policy`` allows private hosts, else through a ``checked_client``.

    Raises:
        InvalidMessageError: remote images are not fetched (``enabled`` is off), or one
            cannot be fetched (``item_type="image_url"``, the reason in ``detail``).
        AbortedError: ``signal`` fired while fetching.
    """
    fetched: dict[str, str] = {}
    if not urls:
        return fetched
    if not policy.enabled:
        raise InvalidMessageError(client, "image_url", next(iter(urls.values())),
                                  detail=_IMAGES_OFF)
    fetch = _Fetch(client, policy, signal, timeouts, started)
    left = policy.max_total_bytes
    async with AsyncExitStack() as stack:
        if not policy.allow_private:
            http = await stack.enter_async_context(checked_client(policy))
        for url, index in urls.items():
            fetched[url], size = await _fetch_image(http, fetch, url, index, left)
            left -= size
    return fetched


async def _fetch_image(
    http: httpx.AsyncClient, fetch: _Fetch, url: str, index: int, left: int
) -> tuple[str, int]:
    """Fetch one image as a ``data:`` URI; return it and the image's size. At most
    ``max_image_bytes`` are read, and no more than ``left`` of the call's total.

    Raises:
        InvalidMessageError: ``item_type="image_url"``: the image cannot be fetched, is
            larger than allowed or is not an image.
        AbortedError: the call's signal fired while fetching.
    """
    largest = fetch.policy.max_image_bytes

    def failed(reason: str = "") -> InvalidMessageError:
        text = f"could not fetch the image {preview(url)}"
        return InvalidMessageError(fetch.client, "image_url", index,
                                   detail=f"{text}: {reason}" if reason else text)

    try:
        body, headers = await _follow(http, fetch, url, min(largest, left))
    except _Redirect:
        raise failed("too many redirects") from None
    except StreamLimitError as exc:
        if left < largest:
            together = _size(fetch.policy.max_total_bytes)
            raise failed(f"the images of this request are larger than {together} "
                         "together") from exc
        raise failed(f"it is larger than {_size(largest)}") from exc
    except _Refused as exc:
        raise failed("" if exc.status is None else f"HTTP {exc.status}") from None
    except (ProviderConnectionError, StreamTimeoutError) as exc:
        raise failed() from exc
    except httpx.InvalidURL as exc:
        raise failed("the URL is not valid") from exc
    mime = headers.get("content-type", "").split(";")[0].strip().lower()
    if not mime.startswith("image/"):
        raise failed("the answer is not an image")
    return f"data:{mime};base64,{base64.b64encode(body).decode('ascii')}", len(body)


async def _follow(
    http: httpx.AsyncClient, fetch: _Fetch, url: str, limit: int
) -> tuple[bytes, httpx.Headers]:
    """The body and headers of ``url``'s answer, at most ``limit`` bytes, after at most
    ``_IMAGE_REDIRECTS`` redirects.

    Raises:
        _Redirect: still a redirect after the last one followed.
        _Refused: another non-2xx answer, or a redirect to something else than http(s).
        StreamLimitError, ProviderConnectionError, StreamTimeoutError, httpx.InvalidURL: as
            ``fetch_body`` raises them.
        AbortedError: the call's signal fired.
    """
    target = url
    for _ in range(_IMAGE_REDIRECTS):
        try:
            return await _get(http, fetch, target, limit)
        except _Redirect as redirect:
            target = str(httpx.URL(target).join(redirect.location))
        if not target.lower().startswith(("http://", "https://")):
            raise _Refused(None)
    return await _get(http, fetch, target, limit)


async def _get(
    http: httpx.AsyncClient, fetch: _Fetch, url: str, limit: int
) -> tuple[bytes, httpx.Headers]:
    """One request of an image fetch, under the call's signal and timeouts."""
    with abortable(fetch.signal, fetch.client):
        return await fetch_body(
            http, url, client=fetch.client, timeouts=fetch.timeouts, limit=limit,
            headers=_IMAGE_HEADERS, error_for_status=_image_answer, started=fetch.started,
        )


class _Redirect(Exception):
    """A redirect answered to an image fetch: the next hop (``_image_answer``)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


class _Refused(Exception):
    """Another non-2xx answer to an image fetch, whose status alone is told (08 D37); no status
    for a redirect to something else than http(s)."""

    def __init__(self, status: int | None) -> None:
        super().__init__(status)
        self.status = status


def _image_answer(status: int, headers: Mapping[str, str], body: bytes) -> Exception:
    """The exception of a non-2xx answer to an image fetch (``fetch_body``'s
    ``error_for_status``): a redirect to follow, else the status alone; the body is never
    shown."""
    location = headers.get("location")
    if 300 <= status < 400 and location:
        return _Redirect(location)
    return _Refused(status)


def _size(count: int) -> str:
    """A byte count as people read it: whole MiB, else bytes."""
    mib = 1024 * 1024
    return f"{count // mib} MiB" if count % mib == 0 else f"{count:,} bytes"
