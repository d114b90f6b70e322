"""What the MMSP server's tests share: the two front ends over one gateway, rows pointing at
the provider simulator, and a raw reader of the server's event stream.

``running(gateway, front)`` serves a gateway for an ``async with`` block and gives its origin:
``"h11"`` is the package's own front end (``mmsp_io.server.serve``), ``"asgi"`` the ASGI app
under hypercorn, on the event loop the test runs on (hypercorn serves asyncio and trio).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from collections.abc import AsyncIterator, Mapping, Sequence
from functools import partial
from typing import Any

import anyio
import attrs
import httpx
import sniffio

import adapters
from mmsp_core.model import TextDone
from mmsp_io import Timeouts
from mmsp_io.server import ASGIApp, Gateway, serve
from mmsp_io.simulator import Reply, Simulator

FRONTS = ["h11", "asgi"]
#: Long enough never to trip in a test unless the test means it to.
RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=None)
TOKEN = "tok-server-0123456789"
AUTH = {"authorization": f"Bearer {TOKEN}"}


def client_type_of(protocol: str) -> str:
    """The client type a protocol's own row uses."""
    return adapters.resolve(protocol)[0].client_type


def row(
    sim: Simulator, protocol: str, *, client_type: str | None = None, model: str = "sim-model"
) -> dict[str, str]:
    """A configuration row serving ``model`` of the simulator's ``protocol`` endpoint, named
    like the protocol."""
    return {
        "server_model_id": protocol,
        "model_id": model,
        "api_key": sim.api_key,
        "base_url": sim.base_url(protocol),
        "client_type": client_type or client_type_of(protocol),
    }


def config(sim: Simulator, protocols: Sequence[str], *, keys: bool = True) -> dict[str, Any]:
    return {"models": [row(sim, p) for p in protocols], "api_keys": [TOKEN] if keys else []}


def _bound_socket() -> tuple[int, int]:
    """A loopback socket bound to a free port: ``(file descriptor, port)``. Hypercorn is handed
    the descriptor itself (``fd://``), so no other process can take the port in between."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    return sock.detach(), port


@contextlib.asynccontextmanager
async def _hypercorn(app: ASGIApp) -> AsyncIterator[str]:
    import hypercorn.asyncio
    import hypercorn.config
    import hypercorn.trio

    fd, port = _bound_socket()
    settings = hypercorn.config.Config()
    settings.bind = [f"fd://{fd}"]
    settings.graceful_timeout = 2.0
    settings.accesslog = None
    settings.errorlog = logging.getLogger("hypercorn.test")
    trio = sniffio.current_async_library() == "trio"
    run = hypercorn.trio.serve if trio else hypercorn.asyncio.serve
    stop = anyio.Event()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(partial(run, app, settings, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
        with anyio.fail_after(10):
            while True:
                try:
                    probe = await anyio.connect_tcp("127.0.0.1", port)
                except OSError:
                    await anyio.sleep(0.02)
                    continue
                await probe.aclose()
                break
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            stop.set()


@contextlib.asynccontextmanager
async def running(gateway: Gateway, front: str, *, grace: float = 2.0) -> AsyncIterator[str]:
    """Serve ``gateway`` through ``front`` (module docstring); yield its origin."""
    if front == "h11":
        async with serve(gateway, grace=grace) as server:
            yield server.url
    else:
        try:
            async with _hypercorn(ASGIApp(gateway)) as url:
                yield url
        finally:
            await gateway.aclose()


def stream_body(model: str, text: str = "Weather in Paris?", **extra: Any) -> dict[str, Any]:
    message = {"role": "user", "content_items": [{"type": "text.done", "text": text}]}
    return {"model": model, "messages": [message], **extra}


def parse_sse(raw: bytes) -> list[Any]:
    """The ``data`` of each event of an SSE body: JSON objects, and ``"[DONE]"`` as text;
    comments (``: keep-alive``) become ``":"``."""
    out: list[Any] = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        if block.startswith(":"):
            out.append(":")
            continue
        assert block.startswith("data: "), block
        data = block.removeprefix("data: ")
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


async def post_stream(
    http: httpx.AsyncClient,
    origin: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str] = AUTH,
) -> tuple[httpx.Response, list[Any]]:
    """POST ``body`` to ``/v1/stream``; the response and its parsed events."""
    response = await http.post(origin + "/v1/stream", json=body, headers=headers)
    events = parse_sse(response.content) if response.status_code == 200 else []
    return response, events


def without_stamps(document: Any) -> Any:
    """``document`` without its ``created_at`` (each client stamps its own clock)."""
    if isinstance(document, dict):
        return {k: without_stamps(v) for k, v in document.items() if k != "created_at"}
    if isinstance(document, list):
        return [without_stamps(v) for v in document]
    return document


def _tool_call_with_bad_arguments() -> bytes:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Par"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}},
    ]
    events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return events + b"data: [DONE]\n\n"


@attrs.frozen(kw_only=True)
class ErrorCase:
    """A request that ends with ``error_type``: what the simulator answers (``None``: the
    request is refused before it is sent), and the row and body that provoke it."""

    error_type: str
    reply: Reply | None = None
    messages: list[Any] | None = None
    config: dict[str, Any] | None = None
    protocol: str = "openai-chat"
    client_type: str | None = None
    model: str = "sim-model"

    def row(self, sim: Simulator) -> dict[str, str]:
        return row(sim, self.protocol, client_type=self.client_type, model=self.model)

    def body(self) -> dict[str, Any]:
        body = stream_body(self.protocol, config=self.config)
        if self.messages is not None:
            body["messages"] = self.messages
        return body


_HEAD = (TextDone(text="Some text first, then trouble."),)
#: Each error class a request can end with (issue 11's list).
ERROR_CASES: dict[str, ErrorCase] = {
    "message": ErrorCase(error_type="InvalidMessageError",
                         messages=[{"role": "user", "content_items": []}]),
    # A value only the row's client refuses (07 §4's example): the caller's client sends it.
    "config": ErrorCase(error_type="UnsupportedParameterError", config={"temperature": 0.5},
                        protocol="openai-responses", client_type="openai-official",
                        model="gpt-6"),
    "content": ErrorCase(error_type="UnsupportedContentError", protocol="openai-embedding",
                         messages=[{"role": "user", "content_items": [
                             {"type": "image_url.done",
                              "image_url": "data:image/png;base64,iVBORw0KGgo="}]}]),
    "http": ErrorCase(error_type="ProviderHTTPError",
                      reply=Reply(status=400, message="bad request, simulated")),
    "stream": ErrorCase(error_type="ProviderStreamError",
                        reply=Reply(items=_HEAD, fragment_size=4, error_after=5)),
    "truncation": ErrorCase(error_type="IncompleteStreamError",
                            reply=Reply(items=_HEAD, fragment_size=4, cut_after=200)),
    "empty response": ErrorCase(error_type="EmptyResponseError", reply=Reply(items=[])),
    "tool arguments": ErrorCase(error_type="ToolCallArgumentParseError",
                                reply=Reply(body=_tool_call_with_bad_arguments())),
    "timeout": ErrorCase(error_type="StreamTimeoutError",
                         reply=Reply(stall_before_headers=True)),
    "malformed event": ErrorCase(error_type="MalformedEventError",
                                 reply=Reply(body=b"data: {\"choices\": 7}\n\n")),
}
#: The row clients' timeouts in the timeout case.
SHORT_FIRST_EVENT = Timeouts(connect=5, first_event=0.3, idle=5)
