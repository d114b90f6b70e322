"""What ``AutoLLMClient`` checks and reads at construction, before any request: the Python
types of its arguments and the form of its base URL (08 D69), and the environment's
``CLIENT_TYPE`` and ``MMSP_DEBUG`` (spec 02 §2.1, 04 §2)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final

import httpx

from mmsp_core.errors import UnsupportedParameterError, preview, redact

from .driver import Timeouts
from .remote_images import RemoteImages

__all__ = ["check_argument_types", "check_base_url", "debug_from_environment", "env"]

#: Values of ``MMSP_DEBUG`` that leave strict mode off (spec 02 §2.1).
_FALSE_WORDS: Final = frozenset({"", "0", "false", "no", "off"})
#: A host name or IPv4 address: letters, digits, ``-``, ``_`` and dots.
_HOST: Final = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?")


def env(name: str) -> str | None:
    """An environment variable; an empty one counts as unset."""
    return os.environ.get(name) or None


def debug_from_environment() -> bool:
    """``MMSP_DEBUG`` is on unless unset or one of ``""``, 0, false, no, off (02 §2.1)."""
    return os.environ.get("MMSP_DEBUG", "").strip().lower() not in _FALSE_WORDS


def check_argument_types(
    http_client: object,
    timeouts: object,
    max_retries: object,
    default_headers: object,
    remote_images: object,
) -> None:
    """Refuse constructor arguments of the wrong Python type with a clear message (08 D69).

    Raises:
        TypeError: the argument named in the message has the wrong type.
        ValueError: a negative ``max_retries``.
    """
    def wrong(name: str, expected: str, value: object) -> TypeError:
        return TypeError(f"{name} must be {expected}, not {type(value).__name__}")

    if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
        raise wrong("http_client", "an httpx.AsyncClient (or None)", http_client)
    if timeouts is not None and not isinstance(timeouts, Timeouts):
        raise wrong("timeouts", "a mmsp_io.Timeouts (or None)", timeouts)
    if not isinstance(max_retries, int) or isinstance(max_retries, bool):
        raise wrong("max_retries", "an int", max_retries)
    if max_retries < 0:
        raise ValueError("max_retries must be 0 or more")
    if default_headers is not None:
        if not isinstance(default_headers, Mapping):
            raise wrong("default_headers", "a mapping of header names to values", default_headers)
        for name, value in default_headers.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise TypeError(f"default_headers must map strings to strings, not "
                                f"{type(name).__name__} to {type(value).__name__}")
    if remote_images is not None and not isinstance(remote_images, RemoteImages):
        raise wrong("remote_images", "a mmsp_io.RemoteImages (or None)", remote_images)


def check_base_url(client_type: str, base_url: str, api_key: str | None) -> None:
    """Refuse a base URL no request can go to, before any request (08 D69).

    It must be ``http`` or ``https`` with a host (a name, an IPv4 address or a bracketed IPv6
    address) and, if it names one, a port from 1 to 65535.

    Raises:
        UnsupportedParameterError: ``parameter="base_url"``, the reason in ``detail`` (the URL
            shortened, and the key redacted should the URL hold it).
    """
    def refuse(reason: str) -> UnsupportedParameterError:
        shown = redact(preview(base_url), api_key or "")
        return UnsupportedParameterError(client_type, "base_url",
                                         detail=f"{reason}: {shown!r}")

    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as exc:
        raise refuse(f"not a URL ({exc})") from None
    if url.scheme not in ("http", "https"):
        raise refuse("the base URL must start with http:// or https://")
    host = url.host
    if not host:
        raise refuse("the base URL has no host")
    if ":" not in host and not _HOST.fullmatch(host):  # an IPv6 address was parsed by httpx
        raise refuse("the host is not a host name or an IP address")
    if url.port is not None and not 1 <= url.port <= 65535:
        raise refuse(f"the port {url.port} is outside 1-65535")
