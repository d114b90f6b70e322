"""Remote images under ``RemoteImages`` (08 D37, ``mmsp_io.remote_images``): which hosts are
fetched, at which address, how many bytes, and what an error tells.

An image server on loopback (``image_server``, on the package's h11 core) serves the images,
redirects and failures; the model is the provider simulator's openai-chat endpoint, whose
client sends every image as bytes. Host names other than loopback addresses are resolved by a
fake ``anyio.getaddrinfo`` (``resolver``): nothing leaves the machine.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, quote

import anyio
import anyio.abc
import attrs
import pytest
import trustme
from anyio.streams.tls import TLSListener
from httpfakes import peak_memory

import mmsp_io.remote_images
from mmsp_core.model import ImageUrlDone
from mmsp_io import AutoLLMClient, InvalidMessageError, RemoteImages, Timeouts, httpserver
from mmsp_io.remote_images import IMAGE_LIMIT, TOTAL_IMAGE_LIMIT, fetchable
from mmsp_io.simulator import Simulator

pytestmark = pytest.mark.anyio

#: The first bytes of a PNG file; what follows is never decoded.
PNG_HEAD = b"\x89PNG\r\n\x1a\n"
#: What the image server's error answers hold; no error may show it.
SECRET = "SECRET-INTERNAL-TEXT"
#: The reason of every failure to get an answer (08 D37: no port-scanning oracle).
GENERIC = "could not fetch the image"


@attrs.define
class ImageServer:
    """A loopback image server: its origin and the ``(path, Host header)`` of each request."""

    origin: str
    seen: list[tuple[str, str | None]]

    def url(self, path: str) -> str:
        return self.origin + path


def redirect_to(url: str) -> str:
    """The image server's path that redirects to ``url``."""
    return "/redirect?to=" + quote(url, safe="")


async def _serve_image(request: httpserver.Request, response: httpserver.Response) -> None:
    """The image server's routes: ``/image/<bytes>`` an image of that many bytes,
    ``/redirect?to=<url>``, ``/loop`` (redirects to itself), ``/secret`` (a 500 with text),
    ``/page`` (HTML), ``/stall`` (never answers)."""
    path = request.path
    if path.startswith("/image/"):
        size = int(path.removeprefix("/image/"))
        body = PNG_HEAD + bytes(size - len(PNG_HEAD))
        await response.respond(200, [("content-type", "image/png")], body)
    elif path == "/redirect":
        target = parse_qs(request.query)["to"][0]
        await response.respond(302, [("location", target)], b"moved")
    elif path == "/loop":
        await response.respond(302, [("location", "/loop")])
    elif path == "/secret":
        await response.respond(500, [("content-type", "text/plain")], SECRET.encode())
    elif path == "/page":
        await response.respond(200, [("content-type", "text/html")], b"<html>" + SECRET.encode())
    elif path == "/stall":
        await anyio.sleep_forever()
    else:
        await response.respond(404)


@contextlib.asynccontextmanager
async def image_server() -> AsyncIterator[ImageServer]:
    """Serve ``_serve_image`` on loopback for the ``async with`` block."""
    seen: list[tuple[str, str | None]] = []

    async def handle(request: httpserver.Request, response: httpserver.Response) -> None:
        seen.append((request.path, request.header("host")))
        await _serve_image(request, response)

    async with httpserver.serve(handle, host="127.0.0.1", port=0) as server:
        yield ImageServer(server.url, seen)


@attrs.define
class Resolver:
    """What the fake ``anyio.getaddrinfo`` answers: each name's addresses (a name missing
    here does not resolve), and every name it was asked, in order."""

    addresses: dict[str, list[str]] = attrs.field(factory=dict)
    lookups: list[str] = attrs.field(factory=list)

    async def getaddrinfo(self, host: str, port: int, **_: Any) -> list[Any]:
        self.lookups.append(host)
        if host not in self.addresses:
            raise socket.gaierror(socket.EAI_NONAME, "not known")
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, port)) for a in self.addresses[host]]


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Resolver:
    """The fake resolver, in ``anyio.getaddrinfo``'s place for the test."""
    fake = Resolver()
    monkeypatch.setattr(anyio, "getaddrinfo", fake.getaddrinfo)
    return fake


def image_message(*urls: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"type": "text.done", "text": "What is it?"}]
    items += [{"type": "image_url.done", "image_url": url} for url in urls]
    return {"role": "user", "content_items": items}


def chat_client(sim: Simulator, policy: RemoteImages | None = None,
                timeouts: Timeouts | None = None) -> AutoLLMClient:
    return AutoLLMClient("sim-model", client_type="openai-chat", api_key=sim.api_key,
                         base_url=sim.base_url("openai-chat"), max_retries=0,
                         remote_images=policy, timeouts=timeouts)


async def call(client: AutoLLMClient, *urls: str) -> list[Any]:
    async with client:
        return [event async for event in client.streaming_response([image_message(*urls)])]


async def refused(client: AutoLLMClient, *urls: str) -> InvalidMessageError:
    with pytest.raises(InvalidMessageError) as caught:
        await call(client, *urls)
    assert (caught.value.item_type, caught.value.message_index) == ("image_url", 0)
    return caught.value


def sent_images(sim: Simulator) -> list[str]:
    """The image URLs of the provider request (data URIs once fetched)."""
    parts = sim.requests[-1].json["messages"][0]["content"]
    return [part["image_url"]["url"] for part in parts if part["type"] == "image_url"]


# -- the policy value ---------------------------------------------------------------------------


def test_the_librarys_default_fetches_any_host_within_byte_limits() -> None:
    policy = RemoteImages()
    assert (policy.enabled, policy.allow_private, policy.allow_hosts) == (True, True, ())
    assert (policy.max_image_bytes, policy.max_total_bytes) == (IMAGE_LIMIT, TOTAL_IMAGE_LIMIT)
    assert RemoteImages(allow_hosts=["Images.Example.", "[::1]"]).allow_hosts == (
        "images.example", "::1")


@pytest.mark.parametrize(("options", "error"), [
    ({"enabled": 1}, TypeError),
    ({"allow_private": "no"}, TypeError),
    ({"allow_hosts": "images.example"}, TypeError),
    ({"allow_hosts": [3]}, TypeError),
    ({"allow_hosts": [""]}, ValueError),
    ({"max_image_bytes": True}, TypeError),
    ({"max_image_bytes": 1.5}, TypeError),
    ({"max_total_bytes": 0}, ValueError),
])
def test_a_policy_of_the_wrong_shape_is_refused(options: dict[str, Any],
                                                error: type[Exception]) -> None:
    with pytest.raises(error, match="RemoteImages"):
        RemoteImages(**options)


def test_the_client_takes_only_a_policy() -> None:
    with pytest.raises(TypeError, match=r"remote_images must be a mmsp_io\.RemoteImages"):
        AutoLLMClient("gpt-6", api_key="k",
                      remote_images={"enabled": False})  # type: ignore[arg-type]


@pytest.mark.parametrize("address", [
    "127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
    "fd00:ec2::254", "100.100.100.200", "fe80::1", "0.0.0.0", "::", "224.0.0.1", "ff02::1",
    "240.0.0.1", "255.255.255.255", "192.0.2.1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
    "2002:7f00:1::", "64:ff9b::a9fe:a9fe", "fc00::1",
])
def test_non_public_addresses_are_not_fetchable(address: str) -> None:
    assert not fetchable(address)


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700:4700::1111",
                                     "::ffff:93.184.215.14", "2002:5db8:d70e::"])
def test_public_addresses_are_fetchable(address: str) -> None:
    assert fetchable(address)


# -- which hosts are fetched ---------------------------------------------------------------------


async def test_the_default_still_fetches_a_loopback_image() -> None:
    async with Simulator.running() as sim, image_server() as images:
        events = await call(chat_client(sim), images.url("/image/100"))
    assert events[-1].event_type == "stop"
    assert sent_images(sim)[0].startswith("data:image/png;base64,")
    assert [path for path, _ in images.seen] == ["/image/100"]


async def test_a_client_that_fetches_nothing_refuses_a_remote_image_naming_the_setting() -> None:
    async with Simulator.running() as sim, image_server() as images:
        error = await refused(chat_client(sim, RemoteImages(enabled=False)),
                              images.url("/image/100"))
    assert error.detail is not None
    assert "RemoteImages(enabled=True)" in error.detail
    assert "remote_images.enabled" in error.detail
    assert images.seen == [] and sim.requests == []


async def test_a_data_uri_needs_no_fetch_when_fetching_is_off() -> None:
    data_uri = "data:image/png;base64,iVBORw0KGgo="
    async with Simulator.running() as sim:
        events = await call(chat_client(sim, RemoteImages(enabled=False)), data_uri)
    assert events[-1].event_type == "stop"
    assert sent_images(sim) == [data_uri]


async def test_a_loopback_address_is_refused_unless_allowed() -> None:
    async with Simulator.running() as sim, image_server() as images:
        url = images.url("/image/100")
        error = await refused(chat_client(sim, RemoteImages(allow_private=False)), url)
        assert images.seen == [] and sim.requests == []
        assert error.detail == f"{GENERIC} {url}"
        allowed = RemoteImages(allow_private=False, allow_hosts=["127.0.0.1"])
        events = await call(chat_client(sim, allowed), url)
    assert events[-1].event_type == "stop"
    assert [path for path, _ in images.seen] == ["/image/100"]


async def test_a_name_is_refused_when_any_of_its_addresses_is_private(
    resolver: Resolver,
) -> None:
    resolver.addresses["internal.test"] = ["127.0.0.1"]
    resolver.addresses["mixed.test"] = ["93.184.215.14", "127.0.0.1"]
    resolver.addresses["metadata.test"] = ["169.254.169.254"]
    async with Simulator.running() as sim, image_server() as images:
        port = images.origin.rpartition(":")[2]
        for name in ("internal.test", "mixed.test", "metadata.test"):
            url = f"http://{name}:{port}/image/100"
            error = await refused(chat_client(sim, RemoteImages(allow_private=False)), url)
            assert error.detail == f"{GENERIC} {url}"
    assert images.seen == [] and sim.requests == []
    assert resolver.lookups == ["internal.test", "mixed.test", "metadata.test"]


async def test_an_allowed_name_is_fetched_at_its_resolved_address_with_its_own_host_header(
    resolver: Resolver,
) -> None:
    """The connection goes to the address that was looked up (and checked): ``images.test``
    is known to nothing but the fake resolver, which answers once per request."""
    resolver.addresses["images.test"] = ["127.0.0.1"]
    policy = RemoteImages(allow_private=False, allow_hosts=["IMAGES.test"])
    async with Simulator.running() as sim, image_server() as images:
        port = images.origin.rpartition(":")[2]
        events = await call(chat_client(sim, policy), f"http://images.test:{port}/image/100")
    assert events[-1].event_type == "stop"
    assert images.seen == [("/image/100", f"images.test:{port}")]
    assert resolver.lookups == ["images.test"]


async def test_https_goes_to_the_resolved_address_verified_for_the_name(
    resolver: Resolver, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The connection is made to the address, the TLS handshake names the host (SNI) and the
    certificate is checked against the name: one issued for ``images.test`` alone passes."""
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("images.test").configure_cert(server_context)
    server_names: list[str | None] = []
    server_context.sni_callback = lambda _sock, name, _context: server_names.append(name)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    monkeypatch.setattr(mmsp_io.remote_images, "default_tls_context", lambda: client_context)
    heads: list[bytes] = []

    async def answer(stream: anyio.abc.ByteStream) -> None:
        async with stream:
            head = b""
            while b"\r\n\r\n" not in head:
                head += await stream.receive()
            heads.append(head)
            await stream.send(b"HTTP/1.1 200 OK\r\ncontent-type: image/png\r\n"
                              b"content-length: 8\r\nconnection: close\r\n\r\n" + PNG_HEAD)

    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = tcp.extra(anyio.abc.SocketAttribute.local_port)
    resolver.addresses["images.test"] = ["127.0.0.1"]
    policy = RemoteImages(allow_private=False, allow_hosts=["images.test"])
    async with (Simulator.running() as sim,
                TLSListener(tcp, server_context, standard_compatible=False) as listener,
                anyio.create_task_group() as tasks):
        tasks.start_soon(listener.serve, answer)
        events = await call(chat_client(sim, policy), f"https://images.test:{port}/cat.png")
        tasks.cancel_scope.cancel()
    assert events[-1].event_type == "stop"
    assert server_names == ["images.test"]
    assert f"host: images.test:{port}\r\n".encode() in heads[0].lower()
    assert sent_images(sim) == ["data:image/png;base64,iVBORw0KGgo="]


async def test_every_redirect_is_checked_as_the_first_request(
    resolver: Resolver,
) -> None:
    resolver.addresses["images.test"] = ["127.0.0.1"]
    policy = RemoteImages(allow_private=False, allow_hosts=["images.test"])
    async with Simulator.running() as sim, image_server() as images:
        port = images.origin.rpartition(":")[2]
        allowed = f"http://images.test:{port}"
        # Within the allowed host: followed.
        await call(chat_client(sim, policy), allowed + redirect_to(allowed + "/image/100"))
        assert [path for path, _ in images.seen] == ["/redirect", "/image/100"]
        # To a loopback address nobody allowed: refused before it is reached.
        images.seen.clear()
        url = allowed + redirect_to(images.url("/image/100"))
        error = await refused(chat_client(sim, policy), url)
    assert [path for path, _ in images.seen] == ["/redirect"]
    assert error.detail == f"{GENERIC} {url}"


async def test_redirects_are_bounded_and_only_to_http() -> None:
    async with Simulator.running() as sim, image_server() as images:
        error = await refused(chat_client(sim), images.url("/loop"))
        assert error.detail is not None and error.detail.endswith("too many redirects")
        assert [path for path, _ in images.seen] == ["/loop"] * 6
        ftp = images.url(redirect_to("ftp://127.0.0.1/cat.png"))
        error = await refused(chat_client(sim), ftp)
    assert error.detail == f"{GENERIC} {ftp}"


# -- what an error tells -------------------------------------------------------------------------


async def test_a_refused_an_unreachable_and_a_silent_host_read_alike(
    refusing_port: int,
) -> None:
    """No port-scanning oracle (08 D37): whatever kept the image away, the caller reads the
    same words, never whether a port is closed, open or slow."""
    async with Simulator.running() as sim, image_server() as images:
        short = Timeouts(connect=2, first_event=0.3, idle=0.3)
        cases = {
            images.url("/image/100"): RemoteImages(allow_private=False),
            f"http://127.0.0.1:{refusing_port}/cat.png": RemoteImages(),
            images.url("/stall"): RemoteImages(),
        }
        details = []
        for url, policy in cases.items():
            error = await refused(chat_client(sim, policy, short), url)
            details.append(error.detail)
    assert details == [f"{GENERIC} {url}" for url in cases]


async def test_an_error_tells_the_status_never_the_body() -> None:
    async with Simulator.running() as sim, image_server() as images:
        status = await refused(chat_client(sim), images.url("/secret"))
        page = await refused(chat_client(sim), images.url("/page"))
    assert status.detail == f"{GENERIC} {images.url('/secret')}: HTTP 500"
    assert page.detail == f"{GENERIC} {images.url('/page')}: the answer is not an image"
    assert SECRET not in repr(status) + repr(page)


# -- how many bytes ------------------------------------------------------------------------------


async def test_an_image_over_its_limit_is_refused() -> None:
    async with Simulator.running() as sim, image_server() as images:
        policy = RemoteImages(max_image_bytes=1000)
        events = await call(chat_client(sim, policy), images.url("/image/1000"))
        assert events[-1].event_type == "stop"
        error = await refused(chat_client(sim, policy), images.url("/image/1001"))
    assert error.detail == f"{GENERIC} {images.url('/image/1001')}: it is larger than 1,000 bytes"


async def test_the_images_of_one_call_share_one_limit() -> None:
    async with Simulator.running() as sim, image_server() as images:
        policy = RemoteImages(max_image_bytes=1000, max_total_bytes=2500)
        urls = [images.url(f"/image/1000?n={n}") for n in range(3)]
        # One URL twice is fetched once and counted once.
        events = await call(chat_client(sim, policy), urls[0], urls[1], urls[0])
        assert events[-1].event_type == "stop"
        error = await refused(chat_client(sim, policy), *urls)
    assert error.detail == (f"{GENERIC} {urls[2]}: the images of this request are larger than "
                            "2,500 bytes together")




async def test_a_call_naming_many_images_holds_no_more_than_its_total() -> None:
    """Twelve 1 MB images: the call stops at its 2 MiB total instead of holding all twelve,
    their data URIs and the request built of them (item 2 of the gateway's memory report)."""
    size = 1_000_000
    policy = RemoteImages(max_image_bytes=size, max_total_bytes=2 * 1024 * 1024)
    async with Simulator.running() as sim, image_server() as images:
        urls = [images.url(f"/image/{size}?n={n}") for n in range(12)]
        with peak_memory() as peak:
            await refused(chat_client(sim, policy), *urls)
    assert len(images.seen) == 3
    assert peak[0] < 12 * size


async def test_the_inlined_copy_is_sent_and_the_callers_message_is_kept() -> None:
    async with Simulator.running() as sim, image_server() as images:
        client = chat_client(sim)
        url = images.url("/image/100")
        async with client:
            events = [e async for e in client.streaming_response_stateful(image_message(url))]
        assert events[-1].event_type == "stop"
        assert client.get_history()[0].content_items[1] == ImageUrlDone(url)
    body = json.dumps(sim.requests[-1].json)
    assert url not in body and "data:image/png;base64," in body
