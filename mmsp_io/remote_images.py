"""Which http(s) images a client fetches for a builder that needs their bytes (08 D37).

Some client types send every image as bytes (``adapters.needs_image_bytes``): an http(s)
``image_url`` a caller gives, or one of a tool result's images, is fetched by the client before
the request is built. Whoever writes the message chooses the URL, so on a server that relays
other people's messages (the MMSP gateway) a fetch is a request from the server's network to
any address: its loopback services, its private network, a cloud's metadata service. A
``RemoteImages`` value, passed to ``AutoLLMClient(remote_images=...)``, says what is fetched:

- ``enabled``: whether remote images are fetched at all; when not, such an image is refused
  with ``InvalidMessageError(item_type="image_url")`` before any request;
- ``allow_private``: whether a host may resolve to an address that is not public. When not,
  every address the host name resolves to (``anyio.getaddrinfo``) must be a public unicast
  address (``fetchable``): loopback, private, link-local, unique-local, shared (CGNAT),
  multicast, reserved and unspecified addresses are refused, and with them the cloud metadata
  services (``169.254.169.254``, ``fd00:ec2::254``, ``100.100.100.200``); an IPv6 address
  that carries an IPv4 one (mapped, 6to4, NAT64) is judged by that IPv4 address. The
  connection then goes to an address that was checked, with the ``Host`` header and TLS server
  name of the URL's host (``checked_client``), so a name that resolves differently a moment
  later (DNS rebinding) reaches nothing unchecked; and every redirect is a new request,
  checked the same way;
- ``allow_hosts``: host names (or IP addresses, as written in URLs) fetched whatever they
  resolve to, so that an operator can allow one internal image server;
- ``max_image_bytes`` and ``max_total_bytes``: the largest image, and the most bytes of all the
  images of one call together (each URL counted once).

The library's default, ``RemoteImages()``, fetches any host (a user's own client fetching the
user's own URLs) within the byte limits. The MMSP gateway's default fetches nothing
(``mmsp_io.server.config``).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any, Final, final

import anyio
import attrs
import httpx

from ._transport import default_tls_context

__all__ = ["IMAGE_LIMIT", "TOTAL_IMAGE_LIMIT", "RemoteImages", "checked_client", "fetchable"]

#: The largest remote image fetched for a builder by default (08 D37).
IMAGE_LIMIT: Final = 20 * 1024 * 1024
#: The most bytes of remote images one call fetches by default, all its images together.
TOTAL_IMAGE_LIMIT: Final = 50 * 1024 * 1024
#: NAT64's well-known prefix (RFC 6052): the last 32 bits are an IPv4 address.
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _hosts(value: Iterable[str]) -> tuple[str, ...]:
    """``allow_hosts`` as a tuple of lower-cased names without a trailing dot.

    Raises:
        TypeError: ``value`` is a single string, or holds something else than strings.
        ValueError: an empty name.
    """
    if isinstance(value, str | bytes):
        raise TypeError("RemoteImages.allow_hosts must be a list of host names, not a string")
    hosts = []
    for host in value:
        if not isinstance(host, str):
            raise TypeError(f"RemoteImages.allow_hosts must hold strings, not "
                            f"{type(host).__name__}")
        if not host.strip("[]."):
            raise ValueError("RemoteImages.allow_hosts holds an empty host name")
        hosts.append(_host_key(host))
    return tuple(hosts)


def _host_key(host: str) -> str:
    """A host as ``allow_hosts`` compares it: lower-cased, without brackets or a final dot."""
    return host.strip("[]").rstrip(".").lower()


def _flag(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"RemoteImages.{attribute.name} must be a bool, not "
                        f"{type(value).__name__}")


def _byte_count(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"RemoteImages.{attribute.name} must be an int, not "
                        f"{type(value).__name__}")
    if value < 1:
        raise ValueError(f"RemoteImages.{attribute.name} must be at least 1")


@final
@attrs.frozen(kw_only=True)
class RemoteImages:
    """What a client fetches of the http(s) images its builder needs as bytes (module doc).

    Raises:
        TypeError: a flag that is not a bool, a limit that is not an int, ``allow_hosts`` that
            is a string or holds something else than strings.
        ValueError: a limit below 1, an empty host name.
    """

    #: Whether remote images are fetched at all.
    enabled: bool = attrs.field(default=True, validator=_flag)
    #: Whether a host may resolve to a loopback, private or otherwise non-public address.
    allow_private: bool = attrs.field(default=True, validator=_flag)
    #: Hosts fetched whatever addresses they resolve to.
    allow_hosts: tuple[str, ...] = attrs.field(default=(), converter=_hosts)
    #: The largest image fetched.
    max_image_bytes: int = attrs.field(default=IMAGE_LIMIT, validator=_byte_count)
    #: The most bytes fetched for one call, all its images together.
    max_total_bytes: int = attrs.field(default=TOTAL_IMAGE_LIMIT, validator=_byte_count)

    def allows(self, host: str) -> bool:
        """Whether ``host`` is fetched without checking its addresses."""
        return self.allow_private or _host_key(host) in self.allow_hosts


def fetchable(address: str) -> bool:
    """Whether an IP address may be fetched from when private addresses are not allowed: a
    public unicast address, an IPv6 address that carries an IPv4 one judged by that one
    (module doc).

    Raises:
        ValueError: ``address`` is not an IP address.
    """
    return _public(ipaddress.ip_address(address))


def _public(ip: _Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
        if embedded is not None:
            return _public(embedded)
    return ip.is_global and not (ip.is_multicast or ip.is_reserved)


def checked_client(policy: RemoteImages) -> httpx.AsyncClient:
    """An HTTP client for image fetches under ``policy``: each request goes to an address its
    host resolves to, every one of them checked by ``fetchable`` unless ``policy.allows`` the
    host (module doc); no proxy from the environment, no redirect followed, no connection
    kept. Close it after use.

    A refused host is an ``httpx.ConnectError``, as a host that cannot be reached is: the
    caller tells neither apart.
    """
    return httpx.AsyncClient(transport=_CheckedTransport(policy), trust_env=False,
                             follow_redirects=False, timeout=None)


@final
class _CheckedTransport(httpx.AsyncBaseTransport):
    """httpx's transport, each request sent to an address of its host resolved and checked
    once (module doc)."""

    def __init__(self, policy: RemoteImages) -> None:
        self._policy = policy
        # No connection is kept: one made for one host name never carries another's request.
        self._inner = httpx.AsyncHTTPTransport(
            verify=default_tls_context(),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` to the first address of its host that answers, with the ``Host``
        header and TLS server name of the host.

        Raises:
            httpx.ConnectError: the host resolves to none, or to an address that is refused;
                no address could be reached.
            httpx.ConnectTimeout: resolving the host took longer than the connect timeout.
            httpx.HTTPError: as httpx's own transport raises them.
        """
        url = request.url
        name = url.raw_host.decode("ascii")  # an internationalized name in its IDNA form
        addresses = await _addresses(request, name, url.port)
        if not self._policy.allows(url.host) and not all(map(fetchable, addresses)):
            raise httpx.ConnectError("the host resolves to an address that is not fetched",
                                     request=request)
        failure: httpx.ConnectError | None = None
        for address in addresses:
            pinned = httpx.Request(request.method, url.copy_with(host=address),
                                   headers=request.headers, stream=request.stream,
                                   extensions={**request.extensions, "sni_hostname": name})
            try:
                return await self._inner.handle_async_request(pinned)
            except httpx.ConnectError as exc:
                failure = exc
        raise failure or httpx.ConnectError("no address to connect to", request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _addresses(request: httpx.Request, name: str, port: int | None) -> list[str]:
    """The addresses of host ``name``: itself when it is an IP address, else what it resolves
    to (``anyio.getaddrinfo``, under the request's connect timeout), each once, in order.

    Raises:
        httpx.ConnectError: ``name`` resolves to no address.
        httpx.ConnectTimeout: resolving took longer than the request's connect timeout.
    """
    try:
        return [str(ipaddress.ip_address(name))]
    except ValueError:
        pass
    timeout = request.extensions.get("timeout", {}).get("connect")
    try:
        with anyio.fail_after(timeout):
            found = await anyio.getaddrinfo(name, port or 0, type=socket.SOCK_STREAM)
    except TimeoutError as exc:
        raise httpx.ConnectTimeout("timed out resolving the host", request=request) from exc
    except OSError as exc:
        raise httpx.ConnectError("the host does not resolve", request=request) from exc
    addresses = list(dict.fromkeys(str(entry[4][0]) for entry in found))
    if not addresses:
        raise httpx.ConnectError("the host does not resolve", request=request)
    return addresses
