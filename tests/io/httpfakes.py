"""Fake HTTP bodies for the I/O tests, served through ``httpx.MockTransport``, and the
tests' shared helpers (``peak_memory``).

A ``Body`` is a script: bytes are sent, a number is a pause of that many seconds, an exception
is raised where it stands (a connection cut mid-body). It records whether httpx closed it, so
tests can check that a response was closed at once.
"""

from __future__ import annotations

import json
import os
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import pytest

from mmsp_core import JsonEventsMachine, StreamPipeline

Step = bytes | float | BaseException


class Body(httpx.AsyncByteStream):
    """A response body played from a script of bytes, pauses and exceptions."""

    def __init__(self, *steps: Step) -> None:
        self.steps: Sequence[Step] = steps
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for step in self.steps:
            if isinstance(step, BaseException):
                raise step
            if isinstance(step, bytes):
                yield step
            else:
                await anyio.sleep(step)

    async def aclose(self) -> None:
        self.closed = True


Handler = Callable[[httpx.Request], httpx.Response | Awaitable[httpx.Response]]


def mock_client(handler: Handler, **options: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose requests go to ``handler``."""
    return httpx.AsyncClient(transport=httpx.MockTransport(handler), **options)


def sse(*payloads: Mapping[str, Any] | str) -> bytes:
    """An event stream with one ``data:`` event per payload (JSON-encoded unless a string)."""
    return b"".join(
        b"data: " + (p if isinstance(p, str) else json.dumps(p)).encode() + b"\n\n"
        for p in payloads
    )


def delta(text: str) -> dict[str, Any]:
    """A client-stream delta event carrying one text fragment (wire JSON)."""
    return {"event_type": "delta", "content_items": [{"type": "text.delta", "text": text}]}


def stop(prompt: int = 3, response: int = 2, finish: str = "stop") -> dict[str, Any]:
    """A client-stream stop event carrying usage and a finish reason (wire JSON)."""
    return {
        "event_type": "stop",
        "content_items": [],
        "usage_metadata": {"cached_tokens": None, "prompt_tokens": prompt,
                           "thoughts_tokens": None, "response_tokens": response},
        "finish_reason": finish,
    }


def json_pipeline(clock: Callable[[], int]) -> StreamPipeline:
    """A pipeline whose SSE events are client events in wire JSON (``JsonEventsMachine``)."""
    return StreamPipeline(JsonEventsMachine("test"), client="test", clock=clock)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see no client-related environment variable unless they set one.

    Nor any cloud credential (08 D72): the Azure, AWS and Google variables are removed, the
    AWS instance-metadata probe is disabled and the clouds' credential files point nowhere.

    Import it into a test module to apply it there (it is ``autouse``).
    """
    for name in list(os.environ):
        if name in ("CLIENT_TYPE", "MMSP_DEBUG", "MMSP_CACHE_DIR", "MMSP_TRACE_DIR",
                    "MMSP_RECORD_DIR") or name.startswith(
            ("AZURE_OPENAI_", "AWS_", "GOOGLE_APPLICATION_", "GOOGLE_CLOUD_")
        ) or name.endswith(("_API_KEY", "_BASE_URL")):
            monkeypatch.delenv(name)
    nowhere = os.path.join(os.sep, "nonexistent", "mmsp-test")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", nowhere)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", nowhere)
    monkeypatch.setenv("CLOUDSDK_CONFIG", nowhere)


@contextmanager
def peak_memory() -> Iterator[list[int]]:
    """Trace allocations inside the block; the list then holds the peak of traced memory, in
    bytes (a bound on memory measured this way, never the process's lifetime peak, D80)."""
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
