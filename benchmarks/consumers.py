"""The consumers the benchmark times, each run in a fresh process of its own.

Theory of operation: ``python -P -m benchmarks.consumers CONSUMER ORIGIN BODY_FILE CHUNKING
RUNS [FIRST_SAMPLES]`` (``BODY_FILE``: ``bodies.described``) opens what the consumer needs once
(an ``httpx.AsyncClient``, an ``AutoLLMClient``, an SDK client), streams the body once as a
warm-up and then ``RUNS`` times, and prints one JSON line: for each timed run the process CPU
time (``time.process_time``: user and system, every thread) and wall time from before the
request to after the last event, and the time to the first content (for the floor and
``aiter_lines``: to the bytes or the line of the SSE event that carries it,
``Body.first_content_bytes``); in ``first``, the same time of ``FIRST_SAMPLES`` (default 0)
more passes, each after a pause (``FIRST_PAUSE``); the process's peak RSS; where the library
measured was imported from; and ``error``, set when a run failed or consumed the wrong thing.
After every run (outside the timed part) the consumer's count and last event are checked
(``verify``): the floor must read the body's length and its last bytes, ``aiter_lines`` its
``data:`` lines and the last of them, every other consumer exactly N non-empty content deltas
and a stop last. The process exits 1 on an error.

The library's consumers run under its default JSON backend (``mmsp_core.jsonlib``: orjson
when the ``fast`` extra is installed); their ``-json`` twins switch to the standard library's
first, so both modes are measured in the same run.

``memory`` runs no HTTP: the pure pipeline over the body in memory in 64 KiB chunks under each
available JSON backend, and ``json.loads`` over the same ``data:`` lines, timed alternately.
``concurrent-asyncio`` and ``concurrent-trio`` run ``RUNS`` streams at once (there ``RUNS``
counts streams) through one ``AutoLLMClient`` and its own pool after one warm-up stream, as
one timed pass.

The peers (``mmsp-0.5.6``, ``openai-sdk``, ``anthropic-sdk``) import only the standard library,
``anyio`` and their own package, so they run under another interpreter too (``--peer-python``).
"""

from __future__ import annotations

import contextlib
import json
import resource
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES
from typing import Any, Final

from . import bodies
from .bodies import Body, fragments

#: What a consumer posts: enough for every provider's route; the server does not read it.
REQUEST: Final = {
    "model": "bench",
    "stream": True,
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "hi"}],
}
API_KEY: Final = "sk-bench"
#: Seconds every consumer waits before each ``FIRST_SAMPLES`` pass, so the server has sat idle
#: as long before each request whatever the consumer: without it a slower consumer leaves the
#: server idle longer, and its wake-up (hundreds of µs here) counts against that consumer.
FIRST_PAUSE: Final = 0.05

#: One pass: given ``mark`` (call it at the first content), return (count, last).
Pass = Callable[[Callable[[], None]], Awaitable[tuple[int, str]]]
Opener = Callable[[str, Body], contextlib.AbstractAsyncContextManager[Pass]]


class ConsumptionError(Exception):
    """A consumer read the wrong thing: the count or the last event is not what the body
    holds."""


@dataclass(frozen=True)
class Consumer:
    """A consumer: how it is opened, under which loop, what it counts, whether it is a peer."""

    name: str
    label: str
    opener: Opener
    backend: str
    #: ``"bytes"``, ``"lines"`` or ``"deltas"``: what ``verify`` compares.
    counts: str
    peer: bool = False
    #: The protocols a peer speaks; ``None``: every protocol.
    protocols: tuple[str, ...] | None = None
    #: The library's JSON backend (``mmsp_core.jsonlib``) for this consumer; ``None``: the
    #: default (orjson when installed).
    json_backend: str | None = None

    def serves(self, protocol: str) -> bool:
        """Whether this consumer has a row for ``protocol``."""
        return self.protocols is None or protocol in self.protocols


def expected_count(counts: str, body: Body) -> int:
    """What a consumer counting ``counts`` must count in ``body``."""
    return {"bytes": body.length, "lines": body.data_lines, "deltas": body.deltas}[counts]


def verify(counts: str, body: Body, count: int, last: str) -> None:
    """Check one run's result against the body (module docstring).

    Raises:
        ConsumptionError: the count or the last event is wrong.
    """
    expected = expected_count(counts, body)
    if count != expected:
        raise ConsumptionError(f"counted {count} {counts}, the body has {expected}")
    if last != "stop":
        raise ConsumptionError(f"the last event is {last!r}, not the stop")


def body_url(origin: str, body: Body, chunking: str) -> str:
    """The base URL that makes the server send ``body`` cut by ``chunking``."""
    return f"{origin}/{body.id}/{chunking}"


# --------------------------------------------------------------------------------------------
# Consumers of the raw bytes and of the library
# --------------------------------------------------------------------------------------------


async def _count_bytes(chunks: AsyncIterator[bytes], body: Body,
                       mark: Callable[[], None]) -> tuple[int, str]:
    """Read ``chunks`` and do nothing with them but count them (a floor): (bytes, whether the
    body's last bytes came last); ``mark`` at the bytes of the first content."""
    first_content = body.first_content_bytes
    total = 0
    previous = last = b""
    async for chunk in chunks:
        if total < first_content <= total + len(chunk):
            mark()
        total += len(chunk)
        previous, last = last, chunk
    tail = (previous + last)[-bodies.TAIL:].hex()
    return total, "stop" if tail == body.tail else "a cut body"


@contextlib.asynccontextmanager
async def _floor(url: str, body: Body) -> AsyncIterator[Pass]:
    import httpx

    async with httpx.AsyncClient(timeout=None) as http:

        async def one(mark: Callable[[], None]) -> tuple[int, str]:
            async with http.stream("POST", url + "/raw", json=REQUEST) as response:
                return await _count_bytes(response.aiter_bytes(), body, mark)

        yield one


@contextlib.asynccontextmanager
async def _transport(url: str, body: Body) -> AsyncIterator[Pass]:
    """The floor of the library's own transport: the body read as the driver reads it (the
    transport's iterator, ``BODY_EXTENSION``), nothing done with it."""
    from mmsp_io import fast_http_client
    from mmsp_io._transport import BODY_EXTENSION

    async with fast_http_client() as http:

        async def one(mark: Callable[[], None]) -> tuple[int, str]:
            async with http.stream("POST", url + "/raw", json=REQUEST) as response:
                return await _count_bytes(response.extensions[BODY_EXTENSION], body, mark)

        yield one


@contextlib.asynccontextmanager
async def _lines(url: str, body: Body) -> AsyncIterator[Pass]:
    import httpx

    first_content = body.first_content_line
    async with httpx.AsyncClient(timeout=None) as http:

        async def one(mark: Callable[[], None]) -> tuple[int, str]:
            count = 0
            payload = ""
            async with http.stream("POST", url + "/raw", json=REQUEST) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        payload = line[5:].lstrip(" ")
                        count += 1
                        if count == first_content:
                            mark()
                        try:  # noqa: SIM105 (``suppress`` would add a context manager per line)
                            json.loads(payload)
                        except ValueError:  # Chat's ``[DONE]``
                            pass
            return count, "stop" if payload == body.last_data else "not the last line"

        yield one


@contextlib.asynccontextmanager
async def _pipeline(url: str, body: Body) -> AsyncIterator[Pass]:
    import httpx

    import adapters
    from mmsp_core.pipeline import END, NEED_DATA

    async with httpx.AsyncClient(timeout=None) as http:

        async def one(mark: Callable[[], None]) -> tuple[int, str]:
            pipeline = adapters.new_pipeline(body.protocol, clock=None)
            count = 0
            last: Any = None
            async with http.stream("POST", url + "/raw", json=REQUEST) as response:
                async for chunk in response.aiter_bytes():
                    pipeline.receive_data(chunk)
                    while (event := pipeline.next_event()) is not NEED_DATA:
                        last = event
                        if (found := fragments(event)) and not count:
                            mark()
                        count += found
            pipeline.receive_eof()
            while (event := pipeline.next_event()) is not END:
                last = event
                count += fragments(event)
            return count, str(getattr(last, "event_type", "none"))

        yield one


def _nothing() -> None:
    return None


def _question() -> list[Any]:
    from mmsp_core.model import TextDone, UniMessage

    return [UniMessage(role="user", content_items=(TextDone(text="hi"),))]


async def _client_stream(
    client: Any, messages: list[Any], mark: Callable[[], None]
) -> tuple[int, str]:
    """Stream one response of an ``AutoLLMClient``; return (content deltas, last type)."""
    from contextlib import aclosing

    count = 0
    last = "none"
    async with aclosing(client.streaming_response(messages)) as events:
        async for event in events:
            last = event.event_type
            if (found := fragments(event)) and not count:
                mark()
            count += found
    return count, str(last)


def _new_client(url: str, body: Body) -> Any:
    """An ``AutoLLMClient`` of the client type the body's protocol name stands for (09)."""
    import adapters
    from mmsp_io import AutoLLMClient

    client_type = adapters.resolve(body.protocol)[0].client_type
    return AutoLLMClient(
        "bench", api_key=API_KEY, base_url=url, client_type=client_type, max_retries=0
    )


@contextlib.asynccontextmanager
async def _client(url: str, body: Body) -> AsyncIterator[Pass]:
    messages = _question()
    async with _new_client(url, body) as client:

        async def one(mark: Callable[[], None]) -> tuple[int, str]:
            return await _client_stream(client, messages, mark)

        yield one


async def concurrent(url: str, body: Body, streams: int) -> dict[str, Any]:
    """``streams`` streams at once through one ``AutoLLMClient`` and its own pool, after
    one warm-up stream; each verified.

    Raises:
        ConsumptionError: a stream consumed the wrong thing.
    """
    import anyio

    from .server import raise_open_files

    raise_open_files(streams + 512)
    messages = _question()
    outcomes: dict[int, tuple[int, str]] = {}
    async with _new_client(url, body) as client:

        async def one(index: int) -> None:
            outcomes[index] = await _client_stream(client, messages, _nothing)

        await one(-1)
        rss_before = peak_rss_kib()
        cpu, started = time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as tasks:
            for index in range(streams):
                tasks.start_soon(one, index)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - started
    for index in range(-1, streams):
        if index not in outcomes:
            raise ConsumptionError(f"stream {index} never ended")
        verify("deltas", body, *outcomes[index])
    return {"runs": [{"cpu": cpu, "wall": wall}], "streams": streams,
            "rss_before_kib": rss_before}


# --------------------------------------------------------------------------------------------
# Peers (the ``bench`` extra)
# --------------------------------------------------------------------------------------------

_PEER_PROTOCOLS: Final = ("ant-messages", "openai-chat", "openai-responses")


@contextlib.asynccontextmanager
async def _mmsp_056(url: str, body: Body) -> AsyncIterator[Pass]:
    from mmsp import AutoLLMClient

    client = AutoLLMClient(model="bench", client_type=body.protocol, base_url=url,
                           api_key=API_KEY)
    messages = [{"role": "user", "content_items": [{"type": "text.done", "text": "hi"}]}]

    async def one(mark: Callable[[], None]) -> tuple[int, str]:
        count = 0
        last = "none"
        async for event in client.streaming_response(messages=messages, config={}):
            last = event["event_type"]
            for item in event["content_items"]:
                if item["type"].endswith(".delta") and (
                    item.get("text") or item.get("arguments")
                ):
                    if not count:
                        mark()
                    count += 1
        return count, str(last)

    yield one


@contextlib.asynccontextmanager
async def _openai_sdk(url: str, body: Body) -> AsyncIterator[Pass]:
    from openai import AsyncOpenAI

    async with AsyncOpenAI(api_key=API_KEY, base_url=url, max_retries=0) as client:
        chat = body.protocol == "openai-chat"

        async def one(mark: Callable[[], None]) -> tuple[int, str]:
            count = 0
            last = "none"
            if chat:
                stream: Any = await client.chat.completions.create(
                    model="bench", messages=[{"role": "user", "content": "hi"}], stream=True
                )
                async for chunk in stream:
                    if last == "none":
                        last = "delta"
                    before = count
                    for choice in chunk.choices:
                        delta = choice.delta
                        if delta.content:
                            count += 1
                        for call in delta.tool_calls or ():
                            if call.function and call.function.arguments:
                                count += 1
                        if choice.finish_reason:
                            last = "stop"
                    if count and not before:
                        mark()
                return count, last
            stream = await client.responses.create(model="bench", input="hi", stream=True)
            async for event in stream:
                kind = event.type
                last = "stop" if kind == "response.completed" else kind
                if kind in ("response.output_text.delta",
                            "response.function_call_arguments.delta") and event.delta:
                    if not count:
                        mark()
                    count += 1
            return count, last

        yield one


@contextlib.asynccontextmanager
async def _anthropic_sdk(url: str, body: Body) -> AsyncIterator[Pass]:
    from anthropic import AsyncAnthropic

    async with AsyncAnthropic(api_key=API_KEY, base_url=url, max_retries=0) as client:

        async def one(mark: Callable[[], None]) -> tuple[int, str]:
            count = 0
            last = "none"
            stream: Any = await client.messages.create(
                model="bench", max_tokens=1024, messages=[{"role": "user", "content": "hi"}],
                stream=True,
            )
            async for event in stream:
                last = "stop" if event.type == "message_stop" else event.type
                if event.type == "content_block_delta":
                    delta = event.delta
                    if getattr(delta, "text", "") or getattr(delta, "partial_json", ""):
                        if not count:
                            mark()
                        count += 1
            return count, last

        yield one


CONSUMERS: Final = {
    c.name: c
    for c in (
        Consumer("floor", "floor: httpx `stream` + `aiter_bytes`", _floor, "asyncio", "bytes"),
        Consumer("transport", "the library's transport: its body iterator (builds nothing)",
                 _transport, "asyncio", "bytes"),
        Consumer("lines", "`aiter_lines` + `json.loads` (builds nothing)", _lines, "asyncio",
                 "lines"),
        Consumer("pipeline", "this library, pure pipeline over `aiter_bytes`, orjson", _pipeline,
                 "asyncio", "deltas"),
        Consumer("client-asyncio", "this library, `AutoLLMClient` (asyncio), orjson", _client,
                 "asyncio", "deltas"),
        Consumer("client-trio", "this library, `AutoLLMClient` (trio), orjson", _client, "trio",
                 "deltas"),
        Consumer("pipeline-json", "this library, pure pipeline, stdlib `json`", _pipeline,
                 "asyncio", "deltas", json_backend="json"),
        Consumer("client-asyncio-json", "this library, `AutoLLMClient` (asyncio), stdlib `json`",
                 _client, "asyncio", "deltas", json_backend="json"),
        Consumer("client-trio-json", "this library, `AutoLLMClient` (trio), stdlib `json`",
                 _client, "trio", "deltas", json_backend="json"),
        Consumer("mmsp-0.5.6", "mmsp 0.5.6 `AutoLLMClient` (PyPI)", _mmsp_056, "asyncio",
                 "deltas", peer=True, protocols=_PEER_PROTOCOLS),
        Consumer("openai-sdk", "openai SDK raw stream", _openai_sdk, "asyncio", "deltas",
                 peer=True, protocols=("openai-chat", "openai-responses")),
        Consumer("anthropic-sdk", "anthropic SDK raw stream", _anthropic_sdk, "asyncio",
                 "deltas", peer=True, protocols=("ant-messages",)),
    )
}


# --------------------------------------------------------------------------------------------
# Running one process
# --------------------------------------------------------------------------------------------


def peak_rss_kib() -> int:
    """This process's peak resident memory in KiB.

    On Linux it is ``VmHWM`` of ``/proc/self/status``: ``ru_maxrss`` there keeps the high-water
    mark of the process that spawned this one across ``exec``, so every consumer would report
    at least the harness's own peak. Elsewhere it is ``ru_maxrss`` (bytes on macOS).
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


def _library() -> str | None:
    """Where ``mmsp_io`` of this process comes from, if it was imported, and whether its core
    is the compiled build (``setup.py``; the SSE decoder is then an extension module)."""
    module = sys.modules.get("mmsp_io")
    where = getattr(module, "__file__", None) if module is not None else None
    if where is None:
        return None
    decoder = str(getattr(sys.modules.get("mmsp_core.sse"), "__file__", ""))
    build = "compiled" if decoder.endswith(tuple(EXTENSION_SUFFIXES)) else "pure Python"
    return f"{where} ({build})"


async def _timed(
    consumer: Consumer, url: str, body: Body, runs: int, first_samples: int
) -> dict[str, list[Any]]:
    """One warm-up, ``runs`` timed passes of ``consumer`` and ``first_samples`` more that only
    time the first content (``first``), each after ``FIRST_PAUSE``; every pass verified."""
    import anyio

    results = []
    firsts = []
    async with consumer.opener(url, body) as one:
        for index in range(runs + 1 + first_samples):
            first = [0.0]

            def mark(first: list[float] = first) -> None:
                first[0] = time.perf_counter()

            if index > runs:
                await anyio.sleep(FIRST_PAUSE)
            cpu, started = time.process_time(), time.perf_counter()
            count, last = await one(mark)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - started
            verify(consumer.counts, body, count, last)
            if index > runs:
                firsts.append(first[0] - started)
            elif index:
                results.append({"cpu": cpu, "wall": wall, "first": first[0] - started})
    return {"runs": results, "first": firsts}


def _memory(body: Body, runs: int) -> dict[str, Any]:
    """The pure pipeline over the body in memory under each available JSON backend (stdlib
    ``json`` in ``runs``, orjson in ``runs_orjson``) and ``json.loads`` over its lines."""
    import adapters
    from mmsp_core import jsonlib

    data = open(body.path, "rb").read()  # noqa: SIM115
    chunks = bodies.frames(data, "packed")
    lines = [line for line in bodies.data_lines(data) if line.startswith((b"{", b"[{"))]
    loads = json.loads
    pipeline_cpu: dict[str, list[float]] = {name: [] for name in jsonlib.available()}
    loads_cpu = []
    for index in range(runs + 1):
        for name, spent_by_pipeline in pipeline_cpu.items():
            jsonlib.use_backend(name)
            cpu = time.process_time()
            count, last = bodies.content_deltas(adapters.decode(body.protocol, chunks))
            cpu = time.process_time() - cpu
            verify("deltas", body, count, last)
            if index:
                spent_by_pipeline.append(cpu)
        started = time.process_time()
        for line in lines:
            loads(line)
        spent = time.process_time() - started
        if index:
            loads_cpu.append(spent)
    return {"runs": [{"cpu": c} for c in pipeline_cpu["json"]],
            "runs_orjson": [{"cpu": c} for c in pipeline_cpu.get("orjson", [])],
            "loads": [{"cpu": c} for c in loads_cpu]}


def run(
    consumer: str, url: str, body: Body, chunking: str, runs: int, first_samples: int = 0
) -> dict[str, Any]:
    """Run ``consumer`` in this process (module docstring); return what ``main`` prints.

    Raises:
        KeyError: an unknown consumer.
        ConsumptionError, Exception: whatever the consumer met.
    """
    import anyio

    if consumer == "memory":
        return _memory(body, runs)
    base = body_url(url, body, chunking)
    if consumer.startswith("concurrent-"):
        backend = consumer.removeprefix("concurrent-")
        return anyio.run(concurrent, base, body, runs, backend=backend)
    chosen = CONSUMERS[consumer]
    if chosen.json_backend is not None:
        from mmsp_core import jsonlib

        jsonlib.use_backend(chosen.json_backend)
    return anyio.run(_timed, chosen, base, body, runs, first_samples, backend=chosen.backend)


def main(argv: list[str] | None = None) -> int:
    """``python -P -m benchmarks.consumers CONSUMER ORIGIN BODY_FILE CHUNKING RUNS
    [FIRST_SAMPLES]``: print one JSON line (module docstring); exit 1 when the consumer
    failed."""
    consumer, origin, body_file, chunking, runs, *first = argv if argv is not None else sys.argv[1:]
    body = bodies.load(body_file)
    try:
        result = run(consumer, origin, body, chunking, int(runs), int(first[0]) if first else 0)
        result["error"] = None
    except Exception as exc:  # reported to the harness, which marks the cell failed
        result = {"runs": [], "error": f"{type(exc).__name__}: {exc}"}
    result["peak_rss_kib"] = peak_rss_kib()
    result["library"] = _library()
    print(json.dumps(result), flush=True)
    return 1 if result["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
