"""The benchmark's loopback server: pre-built chunked HTTP/1.1 responses, as cheap as it gets.

Theory of operation: the server is its own process (``python -P -m benchmarks.server DIR``),
so none of its CPU is counted; it prints its port on the first line of its output and serves
until its input closes or it is terminated. It is plain ``asyncio`` streams, no HTTP library:
for each request on a connection (keep-alive, as a pooled client reuses it) it reads the
request head up to the blank line, skips ``Content-Length`` bytes of body, and writes one
pre-built response. The path names the response: ``/<body id>/<chunking>/...`` (anything
after the second segment, the provider's own route, is ignored, so every client and SDK is
served whatever path it appends to its base URL). The response is built once per body and
chunking (``bodies.frames``: one HTTP chunk per SSE event, or 64 KiB chunks) and kept in a
small cache; an unknown path is a 404. Keys, headers and request bodies are not looked at.

Only the standard library and ``benchmarks.bodies`` are imported, never the library measured.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from . import bodies

_HEAD: Final = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
    b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
)
_NOT_FOUND: Final = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
#: Responses kept built: the matrix runs one body at a time, the concurrent run one body.
_CACHED: Final = 4
#: The longest request head read (the clients send well under 2 KiB).
_HEAD_LIMIT: Final = 64 * 1024


def chunked(frames: list[bytes]) -> bytes:
    """The whole chunked response carrying ``frames`` as its HTTP chunks."""
    parts = [_HEAD]
    for frame in frames:
        parts += (b"%x\r\n" % len(frame), frame, b"\r\n")
    parts.append(b"0\r\n\r\n")
    return b"".join(parts)


class Responses:
    """The pre-built responses of the bodies in one directory, built on first use."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._built: collections.OrderedDict[bytes, bytes] = collections.OrderedDict()

    def get(self, target: bytes) -> bytes:
        """The response to a request for ``target`` (see the module docstring)."""
        key = b"/".join(target.split(b"/", 3)[1:3])
        if key in self._built:
            self._built.move_to_end(key)
            return self._built[key]
        ident, _, chunking = key.decode("ascii", "replace").partition("/")
        path = self.directory / f"{ident}.body"
        if "/" in ident or ident.startswith(".") or chunking not in bodies.CHUNKINGS:
            return _NOT_FOUND
        if not path.is_file():
            return _NOT_FOUND
        response = chunked(bodies.frames(path.read_bytes(), chunking))
        self._built[key] = response
        if len(self._built) > _CACHED:
            self._built.popitem(last=False)
        return response


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip() or b"0")
    return 0


async def _connection(
    responses: Responses, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Answer every request of one connection until the client closes it."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = _content_length(head)
            if length:
                await reader.readexactly(length)
            writer.write(responses.get(head.split(b" ", 2)[1]))
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError,
            IndexError, ValueError):
        pass
    finally:
        writer.close()


async def serve(directory: Path) -> None:
    """Serve the bodies in ``directory`` on a free loopback port; print the port; stop when
    standard input closes."""
    responses = Responses(directory)
    server = await asyncio.start_server(
        lambda r, w: _connection(responses, r, w), "127.0.0.1", 0, limit=_HEAD_LIMIT,
        backlog=4096,
    )
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    async with server:
        await loop.run_in_executor(None, sys.stdin.buffer.read)


def raise_open_files(needed: int) -> None:
    """Raise the soft limit on open files to ``needed`` (at most the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def child_env() -> dict[str, str]:
    """The environment of a benchmark process: this one's, with the directory holding the
    ``benchmarks`` package added at the END of ``PYTHONPATH``, so the package is found while
    the library measured stays whatever ``PYTHONPATH`` and the installation give (processes
    run with ``-P``: the working directory is never on the path)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), root) if p)
    return env


#: The signals that stop a benchmark, held back while a child starts (``signals_held``).
_STOPPING: Final = {signal.SIGTERM, signal.SIGINT}


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGTERM and SIGINT held back meanwhile, delivered on the way out. Start every child
    under it with ``spawn``, assigning the ``Popen`` inside and stopping it in a ``finally``
    around: a handler that raises inside ``subprocess.Popen`` (Ctrl-C, the gateway
    benchmark's SIGTERM) would leave a started child that no one holds."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _unblock_stopping() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)


def spawn(command: Sequence[str], **options: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(command, **options)`` under ``signals_held``: the child starts with
    the stopping signals unblocked (a signal mask is inherited across ``exec``)."""
    if hasattr(signal, "pthread_sigmask"):
        options["preexec_fn"] = _unblock_stopping
    return subprocess.Popen(command, **options)


@contextlib.contextmanager
def running(directory: Path, python: str = sys.executable) -> Iterator[str]:
    """Run the server over ``directory`` in its own process; yield its origin URL."""
    process: subprocess.Popen[bytes] | None = None
    try:
        with signals_held():
            process = spawn([python, "-P", "-m", "benchmarks.server", str(directory)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env())
        assert process.stdout is not None
        port = process.stdout.readline().strip()
        if not port:
            raise RuntimeError("the benchmark server did not start")
        yield f"http://127.0.0.1:{int(port)}"
    finally:
        if process is not None:
            _end(process)


def _end(process: subprocess.Popen[bytes]) -> None:
    """Close the server's standard input (its signal to stop), then wait for it; kill it if
    it outlives 10 s."""
    assert process.stdin is not None
    process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main() -> None:
    """``python -P -m benchmarks.server DIR``."""
    raise_open_files(1 << 16)
    asyncio.run(serve(Path(sys.argv[1])))


if __name__ == "__main__":
    main()
