"""A caller that never reads holds at most the gateway's bounded buffer (issue 25 item 7).

The gateway runs as ``python -m mmsp_io serve`` in its own process; its upstream, in a thread
here, answers every request with an endless Chat Completions stream of 64 KiB deltas, made as
they are sent and counted; the caller is a raw socket that sends its request and reads nothing.
The upstream goes on until it has sent 200 MB or its sends have made no progress for a while
(the gateway stopped reading from it); then the server's resident memory, read from
``/proc/<pid>/status``, is compared with its reading before the request. Only memory is
asserted, never a time (08 D80); a deadline only keeps the test from running on.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_server_cli import ROOT, environment

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(),
                                reason="reads the server's memory from /proc")

TARGET = 200 * 1024 * 1024
#: The most the server's resident memory may grow while its caller reads nothing.
MAX_GROWTH = 150 * 1024 * 1024
#: Consecutive sends of ``_SEND_TIMEOUT`` seconds that moved nothing: the gateway stopped
#: reading from its upstream.
_STALLED_AFTER = 6
_SEND_TIMEOUT = 0.5
#: Only a bound on the wait for either (600 polls of 0.2 s); nothing is asserted about it.
_POLLS = 600
_POLL_SECONDS = 0.2


class EndlessUpstream:
    """A loopback HTTP/1.1 server answering each request with an endless SSE stream of Chat
    Completions chunks; ``sent`` counts the bytes of body sent, ``stalled`` is set when sends
    stop moving."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.sent = 0
        self.stalled = threading.Event()
        self.stop = threading.Event()
        delta = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                 "choices": [{"index": 0, "delta": {"content": "x" * 65536},
                              "finish_reason": None}]}
        self.chunk = f"data: {json.dumps(delta)}\n\n".encode()

    def serve(self) -> None:
        self.listener.settimeout(_SEND_TIMEOUT)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(_SEND_TIMEOUT)
        head = b""
        while b"\r\n\r\n" not in head and not self.stop.is_set():
            try:
                head += conn.recv(65536)
            except TimeoutError:
                continue
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"connection: close\r\n\r\n")
        idle, pending = 0, self.chunk
        while not self.stop.is_set() and self.sent < TARGET:
            try:
                written = conn.send(pending)
            except TimeoutError:
                idle += 1
                if idle >= _STALLED_AFTER:
                    self.stalled.set()
                continue
            except OSError:
                return
            idle = 0
            self.sent += written
            pending = pending[written:] or self.chunk


def _rss(pid: int) -> int:
    """The resident memory of process ``pid``, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


@contextmanager
def _gateway(config: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "mmsp_io", "serve", "--config", str(config), "--port", "0",
         "--idle-timeout", "600", "--grace", "1"],
        cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("Starting MMSP server at http://127.0.0.1:"), first
        yield process, int(first.rsplit(":", 1)[1].split("/", 1)[0])
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)


def test_a_caller_that_never_reads_holds_the_server_to_a_bounded_memory(tmp_path: Path) -> None:
    upstream = EndlessUpstream()
    thread = threading.Thread(target=upstream.serve, daemon=True)
    thread.start()
    config = tmp_path / "server.json"
    config.write_text(json.dumps({"models": [{
        "server_model_id": "endless", "model_id": "gpt-4o", "api_key": "sk-endless-0123456789",
        "client_type": "openai-chat", "base_url": f"http://127.0.0.1:{upstream.port}/v1"}]}))
    body = json.dumps({"model": "endless", "messages": [
        {"role": "user", "content_items": [{"type": "text.done", "text": "go"}]}]}).encode()
    try:
        with _gateway(config) as (process, port):
            before = _rss(process.pid)
            caller = socket.create_connection(("127.0.0.1", port))
            caller.sendall(b"POST /v1/stream HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                           b"content-type: application/json\r\n"
                           + f"content-length: {len(body)}\r\n\r\n".encode() + body)
            with caller:
                for _ in range(_POLLS):  # a bound on the wait, never asserted
                    if upstream.sent >= TARGET or upstream.stalled.is_set():
                        break
                    assert process.poll() is None, "the server died"
                    time.sleep(_POLL_SECONDS)
                else:
                    pytest.fail("the upstream neither sent 200 MB nor stalled")
                growth = _rss(process.pid) - before
    finally:
        upstream.stop.set()
        thread.join(timeout=10)
        upstream.listener.close()
    assert upstream.sent > 0
    assert growth < MAX_GROWTH, f"the server grew by {growth / 2**20:.0f} MiB"
    print(f"upstream sent {upstream.sent / 2**20:.0f} MiB; server grew {growth / 2**20:.1f} MiB")
