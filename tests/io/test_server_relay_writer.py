"""The gateway relay's hand-over of frames (``mmsp_io.server.relay``, issue 25 item 8): the
producer queues frames without waiting for the writer, the writer sends every frame queued in
one write of at most ``_STEP`` bytes, the buffer holds the producer back when full, and the
keep-alive and idle times are deadlines of the stream. A fake ``Output`` records each write;
nothing here measures a time (08 D80): the short deadlines only make the tests quick.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio
import anyio.lowlevel
import pytest

from mmsp_io.abort import AbortSignal
from mmsp_io.server.calls import Flight
from mmsp_io.server.config import ModelRow
from mmsp_io.server.metrics import Metrics
from mmsp_io.server.relay import _KEEPALIVE, _PIECE, _STEP, Frames, _write

pytestmark = pytest.mark.anyio

#: Long enough never to come due in a test that does not wait for it.
NEVER = 60.0


class RecordingOutput:
    """An ``Output`` that records each ``send``; with ``stuck``, a send never completes (a
    caller that reads nothing)."""

    def __init__(self, *, stuck: bool = False) -> None:
        self.sent: list[bytes] = []
        self.stuck = stuck
        self.was_cut = False
        #: Whether the body was ended, with the last bytes sent.
        self.ended = False

    @property
    def client_gone(self) -> bool:
        return False

    async def start(self, status: int, headers: Sequence[tuple[str, str]] = (), *,
                    hold: bool = False) -> None:
        raise AssertionError("the writer sends no head")

    async def send(self, data: bytes) -> None:
        if self.stuck:
            await anyio.sleep_forever()
        self.sent.append(data)
        await anyio.lowlevel.checkpoint()

    async def end(self, data: bytes = b"") -> None:
        await self.send(data)
        self.ended = True

    async def respond(
        self, status: int, headers: Sequence[tuple[str, str]] = (), body: bytes = b""
    ) -> None:
        raise AssertionError("the writer sends no whole answer")

    async def cut(self) -> None:
        self.was_cut = True


def flight() -> Flight:
    row = ModelRow(server_model_id="m", model_id="m", api_key="k")
    metrics = Metrics(["m"], wall=time.time, monotonic=time.monotonic)
    return Flight(AbortSignal(), metrics.begin("m"), row)


def frame(index: int, size: int = 20) -> bytes:
    text = f"data: {index}-".encode()
    return text + b"x" * (size - len(text) - 2) + b"\n\n"


async def test_every_frame_queued_goes_out_in_one_write() -> None:
    frames = Frames(1024 * 1024)
    queued = [frame(i) for i in range(100)]
    for one in queued:
        await frames.put(one)
    frames.close()
    out = RecordingOutput()
    assert await _write(frames, out, flight(), NEVER, NEVER)
    assert out.sent == [b"".join(queued)]
    assert out.ended  # the last frames and the body's end went out together


async def test_one_write_holds_at_most_a_step_and_a_large_frame_goes_in_pieces() -> None:
    frames = Frames(8 * _STEP)
    small = [frame(i, 1000) for i in range(3 * _STEP // 1000)]
    large = frame(-1, 2 * _PIECE + 10)
    for one in [*small, large, *small]:
        await frames.put(one)
    frames.close()
    out = RecordingOutput()
    assert await _write(frames, out, flight(), NEVER, NEVER)
    assert b"".join(out.sent) == b"".join([*small, large, *small])
    assert all(len(write) <= _STEP for write in out.sent)
    assert [len(write) for write in out.sent].count(_PIECE) == 2  # the large frame's pieces
    assert len(out.sent) < 2 * len(small) // 10  # many frames a write


async def test_the_producer_waits_for_room_and_an_empty_frame_is_not_queued() -> None:
    frames = Frames(30)
    await frames.put(frame(0))
    await frames.put(b"")
    assert frames.take(_STEP) == frame(0)
    assert frames.take(_STEP) == b""  # nothing queued: the empty frame was dropped
    await frames.put(frame(1))
    done: list[int] = []

    async def put_second() -> None:
        await frames.put(frame(2))
        done.append(2)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(put_second)
        await anyio.wait_all_tasks_blocked()
        assert done == []  # 40 bytes do not fit in 30: the producer waits
        assert frames.take(_STEP) == frame(1)
    assert done == [2]
    assert frames.take(_STEP) == frame(2)
    frames.close()
    assert frames.take(_STEP) is None


async def test_keep_alives_go_out_between_frames_while_none_is_ready() -> None:
    frames = Frames(1024 * 1024)
    out = RecordingOutput()
    seen = flight()

    async def produce() -> None:
        for index in range(3):
            while out.sent.count(_KEEPALIVE) <= index:  # a keep-alive before each frame
                await anyio.sleep(0.01)
            await frames.put(frame(index, 5 * _PIECE // 2))
        frames.close()

    with anyio.fail_after(10):  # a guard against a hang, not a measurement
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(produce)
            assert await _write(frames, out, seen, 0.02, NEVER)
    body = b"".join(out.sent)
    blocks = [block for block in body.split(b"\n\n") if block]
    assert [block for block in blocks if block.startswith(b"data: ")] == [
        frame(index, 5 * _PIECE // 2).removesuffix(b"\n\n") for index in range(3)]
    assert all(block in (b": keep-alive",) or block.startswith(b"data: ") for block in blocks)
    assert seen.tally.error is None


async def test_a_caller_that_reads_nothing_is_cut_and_the_call_aborted() -> None:
    frames = Frames(1024 * 1024)
    await frames.put(frame(0))
    out = RecordingOutput(stuck=True)
    seen = flight()
    with anyio.fail_after(10):  # a guard against a hang, not a measurement
        assert not await _write(frames, out, seen, NEVER, 0.05)
    assert out.was_cut
    assert seen.signal.aborted
    assert seen.signal.reason == "the caller read nothing for 0.05 s"
    assert seen.tally.error == seen.signal.reason
    assert seen.error_type == "AbortedError"
