"""The pure core driven by ``h11`` instead of httpx: proof it is tied to no HTTP stack.

This is the recipe of the design sketch ("Embedding the core in a custom transport"): build the
request with ``adapters.build_request``, send it with your own stack (here ``h11`` over a byte
replay and over a real socket pair), feed each ``h11.Data`` event's bytes to
``pipeline.receive_data`` and take events until ``NEED_DATA``; on ``h11.EndOfMessage`` call
``receive_eof`` and take events until ``END``. The result must be exactly what
``adapters.decode`` makes of the same body, however the response bytes were cut.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterable
from pathlib import Path

import h11
from hypothesis import given
from hypothesis import strategies as st

import adapters
from mmsp_core import END, NEED_DATA, TextDone, ToolCallDone, UniEvent
from mmsp_core.request import HTTPRequest
from mmsp_core.testing import assert_stream_grammar, chunkings
from mmsp_core.testing.strategies import chunked

FIXTURE = Path(__file__).parents[1] / "fixtures" / "openai-chat" / "parallel-tool-calls.sse"
BODY = FIXTURE.read_bytes()
HOST = "gateway.test"
KEY = "sk-embed"


def clock() -> int:
    return 7


def build() -> HTTPRequest:
    messages = [{"role": "user", "content_items": [{"type": "text.done", "text": "Weather?"}]}]
    return adapters.build_request("openai-chat", "gpt-6", messages, None)


def send_request(request: HTTPRequest) -> tuple[h11.Connection, bytes]:
    """An h11 client connection that has sent ``request``, and the bytes it wrote."""
    client = h11.Connection(h11.CLIENT)
    headers = [("Host", HOST), *request.headers, *adapters.auth_headers("openai-chat", KEY),
               ("Content-Length", str(len(request.body)))]
    wire = b"".join((
        client.send(h11.Request(method=request.method, target="/v1" + request.path,
                                headers=headers)) or b"",
        client.send(h11.Data(data=request.body)) or b"",
        client.send(h11.EndOfMessage()) or b"",
    ))
    return client, wire


def answer(wire_request: Iterable[bytes], body: bytes) -> bytes:
    """What an h11 server answers: it reads the request, then streams ``body`` chunked."""
    server = h11.Connection(h11.SERVER)
    chunks = iter(wire_request)
    seen = []
    while not isinstance(event := server.next_event(), h11.EndOfMessage):
        if event is h11.NEED_DATA:
            server.receive_data(next(chunks))
        else:
            seen.append(event)
    request, data = seen[0], b"".join(bytes(e.data) for e in seen[1:])
    assert (request.method, request.target) == (b"POST", b"/v1/chat/completions")
    assert dict(request.headers)[b"authorization"] == f"Bearer {KEY}".encode()
    assert json.loads(data)["stream"] is True
    head = server.send(h11.Response(status_code=200, headers=[
        ("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked")]))
    pieces = [body[i:i + 1000] for i in range(0, len(body), 1000)]
    return b"".join([head or b"", *(server.send(h11.Data(data=p)) or b"" for p in pieces),
                     server.send(h11.EndOfMessage()) or b""])


def drive(connection: h11.Connection, wire_response: Iterable[bytes]) -> list[UniEvent]:
    """Read the response with ``connection`` and run its body through a pipeline."""
    pipeline = adapters.new_pipeline("openai-chat", clock=clock)
    events: list[UniEvent] = []
    # h11 reads b"" as the peer closing the connection, so only the end of input gives one.
    chunks = (chunk for chunk in wire_response if chunk)
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(next(chunks, b""))
        elif isinstance(event, h11.Response):
            assert event.status_code == 200
        elif isinstance(event, h11.Data):
            pipeline.receive_data(bytes(event.data))
            while (public := pipeline.next_event()) is not NEED_DATA:
                events.append(public)  # type: ignore[arg-type]
        elif isinstance(event, h11.EndOfMessage):
            pipeline.receive_eof()
            while (public := pipeline.next_event()) is not END:
                events.append(public)  # type: ignore[arg-type]
            return events


def replay(chunks: Iterable[bytes]) -> list[UniEvent]:
    connection, _ = send_request(REQUEST)
    return drive(connection, chunks)


REQUEST = build()
WIRE_RESPONSE = answer([send_request(REQUEST)[1]], BODY)
EXPECTED = list(adapters.decode("openai-chat", [BODY], clock=clock))


def test_the_expected_stream_is_the_recorded_turn() -> None:
    assert_stream_grammar(EXPECTED)
    done = [e.content_items[0] for e in EXPECTED if e.content_items
            and e.content_items[0].type.endswith(".done")]
    assert [type(item) for item in done] == [ToolCallDone, ToolCallDone]
    assert not any(isinstance(item, TextDone) for item in done)
    assert EXPECTED[-1].finish_reason == "tool_call"


def test_h11_replay_whole_and_byte_by_byte() -> None:
    for chunks in list(chunkings(WIRE_RESPONSE, max_two_piece=0)):
        assert replay(chunks) == EXPECTED


@given(st.data())
def test_h11_replay_in_random_chunkings(data: st.DataObject) -> None:
    assert replay(data.draw(chunked(WIRE_RESPONSE))) == EXPECTED


def test_over_a_socket_pair() -> None:
    client_end, server_end = socket.socketpair()

    def received(end: socket.socket) -> Iterable[bytes]:
        while chunk := end.recv(97):
            yield chunk

    def serve() -> None:
        with server_end:
            server_end.sendall(answer(received(server_end), BODY))
            server_end.shutdown(socket.SHUT_WR)

    server = threading.Thread(target=serve)
    server.start()
    with client_end:
        connection, wire_request = send_request(REQUEST)
        client_end.sendall(wire_request)
        events = drive(connection, received(client_end))
    server.join()
    assert events == EXPECTED
