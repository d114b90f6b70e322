"""The loopback ``Host`` rule the gateway and the trace page share: a server listening on a
loopback address answers only requests whose ``Host`` header names a loopback host, so a web
page cannot reach it through a name that resolves to ``127.0.0.1`` (DNS rebinding).
"""

from __future__ import annotations

import functools
import ipaddress

__all__ = ["is_loopback_host", "names_loopback_host"]


@functools.lru_cache(maxsize=256)
def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is a loopback host; the answers for the
    last 256 hosts asked are kept (a server asks for every request, mostly the same few)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def names_loopback_host(value: str | None) -> bool:
    """Whether a ``Host`` header (``host``, ``host:port``, ``[v6]:port``) names a loopback host."""
    if value is None:
        return False
    bracketed = value.startswith("[")
    host = value[1:].partition("]")[0] if bracketed else value.partition(":")[0]
    return is_loopback_host(host)
