"""The h11 server core against hostile connections, over real loopback sockets: one bad
connection ends itself only, accept failures and the connection cap, read timeouts, the
``admit`` hook (and the MMSP server's authentication on the head, on both front ends),
request smuggling. The isolation cases run against a bare ``serve``, the provider simulator
and the MMSP server."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import resource
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import attrs
import h11
import httpx
import pytest
from serverkit import RELAXED, TOKEN, config, running, stream_body
from test_httpserver import echo, raw_exchange

from mmsp_io.httpserver import Answer, Limits, Request, Response, serve
from mmsp_io.server import Gateway
from mmsp_io.simulator import RecordedRequest, Reply, Simulator, demo_script

pytestmark = pytest.mark.anyio

#: A header value no log may show.
SECRET = "Bearer sk-secret-0123456789abcdef"
#: How a streamed answer read to the close ends: the last event, then the last chunk.
STREAM_END = b"data: [DONE]\n\n\r\n0\r\n\r\n"


def address(origin: str) -> tuple[str, int]:
    host, port = origin.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


async def read_to_close(stream: anyio.abc.ByteStream) -> bytes:
    """Everything the server sends until it closes the connection (within 5 s)."""
    received = b""
    with anyio.fail_after(5):
        while True:
            try:
                received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return received


async def exchange_to_close(origin: str, data: bytes) -> bytes:
    """Send ``data`` on a new connection; what comes back until the server closes it."""
    async with await anyio.connect_tcp(*address(origin)) as stream:
        await stream.send(data)
        return await read_to_close(stream)


def head(method: str, path: str, *headers: str, body: bytes = b"") -> bytes:
    """A raw request: the head's lines, then ``body`` as sent (no length added)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: t", *headers, "", ""]
    return "\r\n".join(lines).encode() + body


# -- one bad connection ends itself only --------------------------------------------------------


@attrs.frozen
class Target:
    """A running server and a request of it whose answer is an event stream ending
    ``data: [DONE]``; ``x-fault: raise`` makes its handler raise."""

    origin: str
    path: str
    authorization: str
    body: dict[str, Any]

    def request(self, *extra: str) -> bytes:
        body = json.dumps(self.body).encode()
        return head("POST", self.path, f"Authorization: {self.authorization}",
                    "Content-Type: application/json", f"Content-Length: {len(body)}",
                    "Connection: close", *extra, body=body)


def fault_on_mark(request: Request | RecordedRequest) -> None:
    if request.header("x-fault"):
        raise RuntimeError(f"the handler fails on {request.header('authorization')}")


async def events(request: Request, response: Response) -> None:
    """A bare server's streamed answer."""
    fault_on_mark(request)
    await response.start(200, [("content-type", "text/event-stream")])
    for n in range(3):
        await response.send(f"data: {n}\n\n".encode())
    await response.send(b"data: [DONE]\n\n")


def faulty_script(request: RecordedRequest) -> Reply:
    fault_on_mark(request)
    return demo_script(request)


def openai_chat(sim: Simulator) -> dict[str, Any]:
    return {"origin": sim.url, "path": "/v1/chat/completions",
            "authorization": f"Bearer {sim.api_key}",
            "body": {"model": "sim-model", "stream": True,
                     "messages": [{"role": "user", "content": "Weather in Paris?"}]}}


@contextlib.asynccontextmanager
async def target(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Target]:
    """A bare ``serve``, the provider simulator or the MMSP server (h11 front end)."""
    if kind == "bare":
        async with serve(events) as server:
            yield Target(server.url, "/events", SECRET, {})
    elif kind == "simulator":
        async with Simulator.running(faulty_script) as sim:
            yield Target(**openai_chat(sim))
    else:
        async with Simulator.running() as sim:
            gateway = Gateway(config(sim, ["openai-chat"]), timeouts=RELAXED, max_retries=0,
                              trace_dir=tmp_path / "traces")
            decide = gateway.decide

            def faulty_decide(request: Request, **options: Any) -> Any:
                fault_on_mark(request)
                return decide(request, **options)

            monkeypatch.setattr(gateway, "decide", faulty_decide)
            async with running(gateway, "h11") as origin:
                yield Target(origin, "/v1/stream", f"Bearer {TOKEN}",
                             stream_body("openai-chat"))


def raise_in_h11(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make h11 raise ``ValueError``, quoting the bytes, on bytes holding ``x-h11-fault``."""
    receive_data = h11.Connection.receive_data

    def faulty(self: h11.Connection, data: bytes) -> None:
        if b"x-h11-fault" in data.lower():
            raise ValueError(f"cannot parse {data!r}")
        receive_data(self, data)

    monkeypatch.setattr(h11.Connection, "receive_data", faulty)


#: The hostile first connection: what it sends, given the target, and how it is answered.
HOSTILE: dict[str, tuple[Callable[[Target], bytes], bytes]] = {
    "5,000-digit content-length": (
        lambda t: head("POST", t.path, f"Authorization: {SECRET}",
                       "Content-Length: " + "9" * 5000),
        b"HTTP/1.1 400 "),
    "malformed head": (
        lambda t: head("GET", t.path, f"Authorization: {SECRET}", "no colon in this line"),
        b"HTTP/1.1 400 "),
    "handler raises": (lambda t: t.request("X-Fault: raise"), b"HTTP/1.1 500 "),
    "h11 raises ValueError": (lambda t: t.request("X-H11-Fault: yes"), b""),
}


@pytest.mark.parametrize("case", HOSTILE)
@pytest.mark.parametrize("kind", ["bare", "simulator", "gateway"])
async def test_a_failing_connection_ends_alone_and_the_next_is_served(
    kind: str,
    case: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    send, answer = HOSTILE[case]
    raise_in_h11(monkeypatch)
    caplog.set_level(logging.ERROR, logger="mmsp_io")
    async with target(kind, tmp_path, monkeypatch) as server:
        hostile = await exchange_to_close(server.origin, send(server))
        normal = await exchange_to_close(server.origin, server.request())
    assert hostile.startswith(answer)
    if not answer:
        assert hostile == b""
        assert "a connection failed and was closed: ValueError" in caplog.text
    assert normal.startswith(b"HTTP/1.1 200 ")
    assert normal.endswith(STREAM_END)
    assert "sk-secret" not in caplog.text
    assert TOKEN not in caplog.text


async def test_an_error_of_the_watcher_ends_its_connection_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fault while a response streams (the pipelined bytes make h11 raise) is isolated too."""
    release = anyio.Event()

    async def slow(request: Request, response: Response) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        if request.path == "/hold":
            await release.wait()
        await response.send(b"data: [DONE]\n\n")

    raise_in_h11(monkeypatch)
    async with serve(slow) as server:
        async with await anyio.connect_tcp(*address(server.url)) as stream:
            await stream.send(head("GET", "/hold"))
            with anyio.fail_after(5):
                assert (await stream.receive()).startswith(b"HTTP/1.1 200 ")
            await stream.send(head("GET", "/next", "X-H11-Fault: yes"))
            await read_to_close(stream)
        release.set()
        normal = await exchange_to_close(server.url, head("GET", "/", "Connection: close"))
    assert normal.endswith(STREAM_END)


# -- accepting --------------------------------------------------------------------------------


def accept_failures(monkeypatch: pytest.MonkeyPatch, failures: list[Exception]) -> None:
    """Make the listeners ``serve`` creates raise ``failures`` from their first accepts."""
    create = anyio.create_tcp_listener

    async def failing_listener(**options: Any) -> Any:
        listener = await create(**options)
        for one in listener.listeners:
            accept = one.accept  # type: ignore[attr-defined]

            async def flaky(accept: Any = accept) -> Any:
                if failures:
                    raise failures.pop(0)
                return await accept()

            one.accept = flaky  # type: ignore[attr-defined]
        return listener

    monkeypatch.setattr(anyio, "create_tcp_listener", failing_listener)


def os_error(number: int) -> OSError:
    return OSError(number, "injected")


async def test_accept_failures_are_retried_and_never_end_the_server(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    wrapped = anyio.BrokenResourceError()  # how anyio's trio backend reports an OSError
    wrapped.__cause__ = os_error(errno.EMFILE)
    failures: list[Exception] = [
        os_error(errno.EMFILE), os_error(errno.ENFILE), os_error(errno.ENOBUFS),
        os_error(errno.ENOMEM), ConnectionAbortedError(errno.ECONNABORTED, "injected"), wrapped,
    ]
    accept_failures(monkeypatch, failures)
    caplog.set_level(logging.WARNING, logger="mmsp_io")
    async with serve(echo) as server, httpx.AsyncClient() as http:
        answer = await http.get(server.url + "/after")
    assert answer.content == b"GET /after  "
    assert failures == []
    assert caplog.text.count("accepting a connection failed") == 6


async def test_over_the_connection_cap_a_connection_is_refused_until_one_closes() -> None:
    request = head("GET", "/", "Connection: keep-alive")
    async with (
        serve(echo, limits=Limits(max_connections=2)) as server,
        contextlib.AsyncExitStack() as stack,
    ):
        idle = [await stack.enter_async_context(await anyio.connect_tcp(*address(server.url)))
                for _ in range(2)]
        for stream in idle:  # each answered once, then idle: both connections are open
            await stream.send(request)
            with anyio.fail_after(5):
                assert (await stream.receive()).startswith(b"HTTP/1.1 200 ")
        refused = await exchange_to_close(server.url, request)
        await idle[0].aclose()
        with anyio.fail_after(5):
            while True:  # until the server has seen the closed one go
                served = await exchange_to_close(server.url, head("GET", "/", "Connection: close"))
                if served.startswith(b"HTTP/1.1 200 "):
                    break
                await anyio.sleep(0.01)
    assert refused.startswith(b"HTTP/1.1 503 ")
    assert b"\r\nconnection: close\r\n" in refused
    assert refused.endswith(b"The server is at its connection limit.\n")


@pytest.mark.parametrize(("soft", "cap"), [(128, 48), (1 << 20, 1000),
                                           (resource.RLIM_INFINITY, 1000)])
async def test_the_default_cap_leaves_descriptors_to_spare(
    soft: int, cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (soft, resource.RLIM_INFINITY))
    async with serve(echo) as server:
        assert server.max_connections == cap
    async with serve(echo, limits=Limits(max_connections=5)) as server:
        assert server.max_connections == 5


@pytest.mark.parametrize("options", [{"head_timeout": 0}, {"body_timeout": -1.0},
                                     {"max_connections": 0}])
def test_limits_refuse_values_that_are_not_positive(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        Limits(**options)


#: A server in its own process with 128 descriptors: argv is the event loop, the cap.
_FEW_DESCRIPTORS = """
import logging, resource, sys
import anyio, anyio.to_thread
from mmsp_io.httpserver import Limits, serve

async def hello(request, response):
    await response.respond(200, body=b"hello")

async def main():
    async with serve(hello, limits=Limits(max_connections=int(sys.argv[2]))) as server:
        print(server.port, flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)

resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
logging.basicConfig(level=logging.WARNING, format="%(message)s")
anyio.run(main, backend=sys.argv[1])
"""


async def test_running_out_of_descriptors_does_not_end_the_server(anyio_backend: str) -> None:
    """160 idle connections against 128 descriptors: accepting fails (EMFILE) until some
    close; the server then serves. The cap is set above the descriptors to reach EMFILE."""
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-c", _FEW_DESCRIPTORS, anyio_backend, "1000"]
    async with await anyio.open_process(command, cwd=root) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdin is not None
        with anyio.fail_after(10):
            port = int(await process.stdout.receive())
            idle = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(160)]
            log = b""
            while b"accepting a connection failed" not in log:
                log += await process.stderr.receive()
            for stream in idle:
                await stream.aclose()
            while True:  # until the server has closed enough of them to accept again
                served = await exchange_to_close(
                    f"http://127.0.0.1:{port}", head("GET", "/", "Connection: close"))
                if served.startswith(b"HTTP/1.1 200 "):
                    break
                await anyio.sleep(0.05)
            await process.stdin.aclose()
            assert await process.wait() == 0
    assert b"Too many open files" in log


# -- read timeouts ----------------------------------------------------------------------------

TIGHT = Limits(head_timeout=0.2, body_timeout=0.2)


async def test_an_idle_connection_is_closed_without_an_answer() -> None:
    async with (
        serve(echo, limits=TIGHT) as server,
        await anyio.connect_tcp(*address(server.url)) as stream,
    ):
        assert await read_to_close(stream) == b""


async def test_an_idle_keep_alive_connection_is_closed_after_its_answer() -> None:
    async with serve(echo, limits=TIGHT) as server:
        received = await exchange_to_close(server.url, head("GET", "/first"))
    assert received.startswith(b"HTTP/1.1 200 ")
    assert received.endswith(b"GET /first  ")


@pytest.mark.parametrize(("sent", "reason"), [
    (b"GET / HTTP/1.1\r\nHost: t\r\n", b"The request head took too long.\n"),
    (head("POST", "/", "Content-Length: 10", body=b"abc"), b"The request body took too long.\n"),
], ids=["head", "body"])
async def test_a_request_that_stops_arriving_is_answered_408_and_closed(
    sent: bytes, reason: bytes
) -> None:
    seen: list[Request] = []

    async def record(request: Request, response: Response) -> None:
        seen.append(request)
        await echo(request, response)

    async with serve(record, limits=TIGHT) as server:
        received = await exchange_to_close(server.url, sent)
    assert received.startswith(b"HTTP/1.1 408 ")
    assert b"\r\nconnection: close\r\n" in received
    assert received.endswith(reason)
    assert seen == []


async def test_a_trickling_head_is_cut_though_each_byte_comes_in_time() -> None:
    """One byte every 50 ms, under a head timeout of 0.3 s: the whole head is timed."""
    sent = head("GET", "/", "X-Filler: " + "y" * 500)
    async with (
        serve(echo, limits=Limits(head_timeout=0.3)) as server,
        await anyio.connect_tcp(*address(server.url)) as stream,
        anyio.create_task_group() as tasks,
    ):

        async def trickle() -> None:
            with contextlib.suppress(anyio.BrokenResourceError):
                for n in range(len(sent)):
                    await stream.send(sent[n : n + 1])
                    await anyio.sleep(0.05)

        tasks.start_soon(trickle)
        received = await read_to_close(stream)
        tasks.cancel_scope.cancel()
    assert received.startswith(b"HTTP/1.1 408 ")


async def test_a_response_streams_longer_than_the_read_timeouts() -> None:
    async def slow(request: Request, response: Response) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        for n in range(5):
            await response.send(f"data: {n}\n\n".encode())
            await anyio.sleep(0.1)
        await response.send(b"data: [DONE]\n\n")

    async with serve(slow, limits=TIGHT) as server:
        received = await exchange_to_close(server.url, head("GET", "/", "Connection: close"))
    assert b"data: 4\n\n" in received
    assert received.endswith(STREAM_END)


# -- the admit hook ---------------------------------------------------------------------------


@attrs.frozen
class Denied:
    status: int = 401
    headers: tuple[tuple[str, str], ...] = (("content-type", "text/plain"),
                                            ("www-authenticate", "Bearer"))
    body: bytes = b"who are you?"


async def test_admit_refuses_on_the_head_before_any_body_byte_is_read() -> None:
    heads: list[Request] = []
    handled: list[Request] = []

    async def admit(request: Request) -> Answer | None:
        heads.append(request)
        return None if request.header("authorization") == "yes" else Denied()

    async def record(request: Request, response: Response) -> None:
        handled.append(request)
        await echo(request, response)

    upload = "Content-Length: " + str(40 * 1024 * 1024)
    async with serve(record, admit=admit, limits=Limits(linger_seconds=0.2)) as server:
        refused = await exchange_to_close(server.url, head("POST", "/up", upload, body=b"x" * 10))
        expecting = await exchange_to_close(
            server.url, head("POST", "/up", upload, "Expect: 100-continue"))
        admitted = await exchange_to_close(server.url, head(
            "POST", "/up?q=1", "Authorization: yes", "Content-Length: 5", "Connection: close",
            body=b"hello"))
    for answer in (refused, expecting):
        assert answer.startswith(b"HTTP/1.1 401 ")
        assert b"\r\nwww-authenticate: Bearer\r\n" in answer
        assert b"\r\nconnection: close\r\n" in answer
        assert answer.endswith(b"\r\n\r\nwho are you?")
    assert admitted.endswith(b"POST /up q=1 hello")
    assert [(r.path, r.body) for r in heads] == [("/up", b"")] * 3
    assert heads[2].query == "q=1"
    assert [r.body for r in handled] == [b"hello"]


@pytest.mark.parametrize("front", ["h11", "asgi"])
async def test_the_mmsp_server_refuses_an_unauthenticated_upload_before_its_body(
    front: str, tmp_path: Path
) -> None:
    """40 MiB declared, 1 KiB sent: the 401 comes without the rest, which is never sent."""
    async with Simulator.running() as sim:
        gateway = Gateway(config(sim, ["openai-chat"]), timeouts=RELAXED, max_retries=0,
                          trace_dir=tmp_path / "traces")
        async with running(gateway, front) as origin:
            sent = head("POST", "/v1/stream", "Authorization: Bearer wrong",
                        "Content-Type: application/json",
                        f"Content-Length: {40 * 1024 * 1024}", body=b" " * 1024)
            received = await raw_exchange(origin, sent, until=b'API key."}}')
            served = await exchange_to_close(origin, Target(
                origin, "/v1/stream", f"Bearer {TOKEN}", stream_body("openai-chat")).request())
    assert received.startswith(b"HTTP/1.1 401 ")
    _, _, body = received.partition(b"\r\n\r\n")
    assert json.loads(body) == {"error": {"type": "AuthenticationError",
                                          "message": "Invalid or missing API key."}}
    assert served.endswith(STREAM_END)
    assert len(sim.requests) == 1


# -- request smuggling (RFC 9112 §6.3) --------------------------------------------------------


@pytest.mark.parametrize("framing", [
    ("Content-Length: 40", "Transfer-Encoding: chunked"),
    ("transfer-encoding: chunked", "content-length: 5"),
])
async def test_content_length_with_transfer_encoding_is_400_and_closes(
    framing: tuple[str, str]
) -> None:
    seen: list[str] = []

    async def record(request: Request, response: Response) -> None:
        seen.append(request.path)
        await echo(request, response)

    smuggled = b"0\r\n\r\n" + head("GET", "/smuggled")
    async with serve(record) as server:
        received = await exchange_to_close(server.url, head("POST", "/", *framing,
                                                            body=smuggled))
    assert received.startswith(b"HTTP/1.1 400 ")
    assert received.count(b"HTTP/1.1 ") == 1
    assert received.endswith(b"A request may not have both Content-Length and "
                             b"Transfer-Encoding.\n")
    assert seen == []
