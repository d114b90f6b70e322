"""The ASGI front end's ``Output`` (``mmsp_io.server.asgi._Output``, issue 25 item 8): the head
goes out at once, the body sent meanwhile is queued and handed to the ASGI ``send`` all in one
message, no task hand-over per ``send``; ``end`` and ``respond`` end the body, a cut does not.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mmsp_io.server.asgi import _OUTBOX_BYTES, _Output

pytestmark = pytest.mark.anyio


class ASGISend:
    """An ASGI ``send`` that records the messages."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: Any) -> None:
        self.messages.append(dict(message))
        await anyio.lowlevel.checkpoint()


def bodies(messages: list[dict[str, Any]]) -> list[tuple[bytes, bool]]:
    return [(m["body"], m["more_body"]) for m in messages if m["type"] == "http.response.body"]


async def test_the_body_queued_goes_out_in_one_message_with_the_end() -> None:
    send = ASGISend()
    out = _Output(send)
    await out.start(200, [("content-type", "text/event-stream")])
    assert [m["type"] for m in send.messages] == ["http.response.start"]  # at once
    for index in range(50):
        await out.send(b"data: %d\n\n" % index)
    await out.end()
    await out.pump()
    assert bodies(send.messages) == [
        (b"".join(b"data: %d\n\n" % index for index in range(50)), False)]


async def test_a_send_waits_for_room_and_the_pump_sends_as_it_comes() -> None:
    send = ASGISend()
    out = _Output(send)
    await out.start(200)
    chunk = b"x" * (_OUTBOX_BYTES // 2)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(out.pump)
        for _ in range(8):
            await out.send(chunk)
        await out.end()
    sent = bodies(send.messages)
    assert b"".join(body for body, _ in sent) == chunk * 8
    assert all(len(body) <= _OUTBOX_BYTES for body, _ in sent)
    assert [more for _, more in sent] == [True] * (len(sent) - 1) + [False]


async def test_respond_is_one_head_and_one_last_body_and_a_cut_ends_nothing() -> None:
    send = ASGISend()
    out = _Output(send)
    await out.respond(404, [("content-type", "application/json")], b"{}")
    await out.pump()
    assert send.messages[0]["headers"][-1] == (b"content-length", b"2")
    assert bodies(send.messages) == [(b"{}", False)]

    send = ASGISend()
    out = _Output(send)
    await out.start(200)
    await out.send(b"data: 1\n\n")
    await out.cut()
    await out.pump()
    assert bodies(send.messages) == [(b"data: 1\n\n", True)]  # never more_body: false
    with pytest.raises(anyio.ClosedResourceError):
        await out.send(b"data: 2\n\n")
