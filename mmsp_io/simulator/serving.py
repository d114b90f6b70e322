"""The running simulator: ``Simulator`` serves the endpoints of ``routing`` on the server core
of ``mmsp_io.httpserver``, records every request, and sends each one's ``Reply`` with its
delivery options (chunks, delays, in-stream errors, cuts and stalls)."""

from __future__ import annotations

import collections
import contextlib
import hmac
import json
import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Final, final

import anyio
import attrs

import adapters
from adapters.testing import split_events

from .. import httpserver
from . import faults
from .bedrock import signed
from .cassettes import Cassettes
from .routing import (
    NEUTRAL_BAD_KEY_MESSAGE,
    NEUTRAL_REQUEST_ID_HEADER,
    dialect_of,
    listing_dialects,
    model_list_key_headers,
    neutral_error_body,
    route,
)
from .script import EVENT_STREAM, Behaviour, RecordedRequest, Reply, demo_script
from .vertex import TOKEN_PATH, VertexIssuer

#: A request body longer than this is answered 413 (the simulator's buffers are bounded).
_MAX_REQUEST_BYTES: Final = 50 * 1024 * 1024
#: The port of ``python -m mmsp_io simulate`` (08 D78); ``Simulator.running`` takes a free one.
DEFAULT_PORT: Final = 25753


@final
@attrs.frozen
class _Response:
    """A reply made concrete for one request: status line, headers and the body's writes."""

    status: int
    headers: list[tuple[str, str]]
    chunks: list[bytes]
    event_stream: bool
    #: What a reply's fault makes of the body, played instead of ``chunks``.
    steps: list[faults.Step] | None = None


def _split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _parse_json(body: bytes) -> Any:
    """``body`` as JSON; ``None`` when it is empty, not JSON or nested too deeply to read."""
    try:
        return json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None


@final
class Simulator:
    """A running provider simulator (the package docstring).

    Start one with ``async with Simulator.running(...) as sim:`` (asyncio or trio); it serves
    until the block ends. ``sim.base_url(protocol)`` is the base URL a client of ``protocol``
    is given and ``sim.api_key`` the key every request must carry; ``sim.script`` is the queue
    of behaviours (``Reply`` values, or functions of the ``RecordedRequest``) the next requests
    take before ``default``; ``sim.requests`` lists what it received and ``sim.disconnects``
    the requests whose client left mid-answer.
    """

    def __init__(
        self,
        default: Behaviour,
        *,
        api_key: str,
        chunk_size: int | None,
        delay: float | None,
        models: Sequence[str],
    ) -> None:
        self.default = default
        self.api_key = api_key
        self.chunk_size = chunk_size
        self.delay = delay
        self.models = tuple(models)
        #: The origin, ``http://127.0.0.1:<port>``; set once the simulator listens.
        self.url = ""
        #: Behaviours for the next requests, taken in order before ``default``.
        self.script: collections.deque[Behaviour] = collections.deque()
        self.requests: list[RecordedRequest] = []
        self.disconnects: list[RecordedRequest] = []
        #: Vertex AI's token endpoint and the tokens its endpoints take (08 D72).
        self.vertex = VertexIssuer()
        #: The recorded exchanges that answer instead of the script (``cassettes``, 08 D78).
        self.cassettes: Cassettes | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def running(
        cls,
        default: Behaviour = demo_script,
        *,
        api_key: str = "sk-sim",
        chunk_size: int | None = None,
        delay: float | None = None,
        models: Sequence[str] = ("sim-model",),
        host: str = "127.0.0.1",
        port: int = 0,
        cassettes: Cassettes | str | os.PathLike[str] | None = None,
    ) -> AsyncIterator[Simulator]:
        """Serve on ``host:port`` (by default a free loopback port) for the duration of the
        ``async with`` block.

        ``default`` answers every request the script has no behaviour for; ``api_key`` is the
        key every request must carry; ``chunk_size`` and ``delay`` are the defaults of every
        reply (see ``Reply``); ``models`` is what the model lists list; ``cassettes``, a
        directory or ``Cassettes``, answers every request to a model endpoint from recorded
        exchanges instead of the script (``mmsp_io.simulator.cassettes``). Leaving the block
        closes the listener and every open connection.

        Raises:
            OSError: the port cannot be bound.
            CassetteError: a file of ``cassettes`` is no readable cassette.
        """
        sim = cls(default, api_key=api_key, chunk_size=chunk_size, delay=delay, models=models)
        sim.cassettes = None if cassettes is None else Cassettes.of(cassettes)
        limits = httpserver.Limits(max_body_bytes=_MAX_REQUEST_BYTES)
        async with httpserver.serve(sim._handle, host=host, port=port, limits=limits) as server:
            sim.url = server.url
            yield sim

    def base_url(self, protocol: str, *, azure: bool = False) -> str:
        """The base URL a client of ``protocol`` is given: the origin and the dialect's base
        path (spec 04 §4: ``/v1`` on some providers, none on others); with ``azure``, that of
        the protocol's Azure OpenAI endpoint (``/azure/openai/v1``, 08 D72), to which a client
        adds an ``api-version`` query to be an Azure one on a loopback host.

        Raises:
            ValueError: the simulator does not serve ``protocol`` (on Azure, with ``azure``).
        """
        return self.url + dialect_of(protocol, azure=azure).base_path

    async def wait_disconnects(self, count: int = 1) -> None:
        """Wait until at least ``count`` clients closed their connection mid-response."""
        while len(self.disconnects) < count:
            await anyio.sleep(0.005)

    # -- one request ---------------------------------------------------------------------------

    async def _handle(self, request: httpserver.Request, out: httpserver.Response) -> None:
        """Record ``request``, answer it, and note a client that left before the end."""
        routed = route(request.method, request.path)
        protocol, dialect = routed if routed is not None else (None, None)
        recorded = RecordedRequest(
            method=request.method,
            path=request.path,
            query=request.query,
            headers=request.headers,
            body=request.body,
            json=_parse_json(request.body),
            protocol=protocol,
        )
        self.requests.append(recorded)
        delivered = False
        try:
            response, reply = self._answer(recorded, dialect)
            delivered = await self._deliver(out, response, reply)
        finally:
            # A client may close as soon as it has the last event (08 D56), before the end of
            # the body is written: that is no disconnect.
            if out.client_gone and not delivered:
                self.disconnects.append(recorded)

    def _answer(
        self, request: RecordedRequest, dialect: adapters.SimulatorDialect | None
    ) -> tuple[_Response, Reply]:
        """Decide the response to ``request``, routed to ``dialect`` (``None``: to no model
        endpoint): routing, credentials, then the script."""
        protocol = request.protocol
        if protocol is None and (request.method, request.path) == ("POST", TOKEN_PATH):
            status, document = self.vertex.token(request, self.url)
            return _Response(status, [("content-type", "application/json")],
                             [json.dumps(document).encode()], False), Reply()
        if protocol is None or dialect is None:
            key_headers = model_list_key_headers(request.path) if request.method == "GET" else ()
            if not key_headers:
                message = f"No route for {request.method} {request.path}."
                return self._error(None, Reply(status=404, message=message)), Reply()
            if not self._authorised(request, key_headers):
                reply = Reply(status=401, message=NEUTRAL_BAD_KEY_MESSAGE)
                return self._error(None, reply), Reply()
            return self._models(request.path), Reply()
        if not (self._authorised(request, dialect.key_headers) or signed(request, dialect)
                or self.vertex.issued(request, dialect)):
            reply = Reply(status=dialect.bad_key_status, message=dialect.bad_key_message)
            return self._error(dialect, reply), Reply()
        if not isinstance(request.json, Mapping):
            reply = Reply(status=400, message="The request body is not a JSON object.")
            return self._error(dialect, reply), reply
        if self.cassettes is not None:
            played = self.cassettes.answer(request, dialect.error_body)
            return _Response(played.status, played.headers, [], played.event_stream,
                             played.steps), Reply()
        behaviour = self.script.popleft() if self.script else self.default
        reply = behaviour if isinstance(behaviour, Reply) else behaviour(request)
        if reply.status != 200:
            return self._error(dialect, reply), reply
        try:
            return self._stream(protocol, dialect, request, reply), reply
        except faults.FaultMisfit as exc:
            failed = Reply(status=500, message=f"The reply's fault cannot apply: {exc}")
            return self._error(dialect, failed), failed

    def _authorised(self, request: RecordedRequest, key_headers: tuple[str, ...]) -> bool:
        expected = self.api_key.encode()
        for name in key_headers:
            value = request.header(name)
            if value is None:
                continue
            if name == "authorization":
                scheme, _, value = value.partition(" ")
                if scheme.lower() != "bearer":
                    continue
            if hmac.compare_digest(value.encode(), expected):
                return True
        return False

    def _error(self, dialect: adapters.SimulatorDialect | None, reply: Reply) -> _Response:
        """The error response of ``reply.status``: ``reply.body`` as given, else the JSON
        body of the dialect, or the neutral one."""
        message = reply.message or f"Simulated error {reply.status}."
        if dialect is None:
            document = neutral_error_body(reply.status, message)
            request_id_header = NEUTRAL_REQUEST_ID_HEADER
        else:
            document = dialect.error_body(reply.status, message)
            request_id_header = dialect.request_id_header
        headers = [
            ("content-type", reply.content_type or "application/json"),
            (request_id_header, f"req_sim_{len(self.requests)}"),
            *reply.headers,
        ]
        if reply.retry_after is not None:
            headers.append(("retry-after", f"{reply.retry_after:g}"))
        body = reply.body if reply.body is not None else json.dumps(document).encode()
        return _Response(reply.status, headers, [body], False)

    def _models(self, path: str) -> _Response:
        # One body every listing form at ``path`` reads: the ids in ``data[].id``, the paging
        # keys (``has_more``, ``last_id``) of the paged form, and what the dialects listing
        # there add (Google's ``models[].name``; spec 04 §5).
        data = [
            {"id": m, "object": "model", "type": "model", "created": 0, "owned_by": "simulator"}
            for m in self.models
        ]
        body = {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": self.models[0] if self.models else None,
            "last_id": self.models[-1] if self.models else None,
        }
        for dialect in listing_dialects(path):
            if dialect.model_list is not None:
                body.update(dialect.model_list(self.models))
        return _Response(
            200, [("content-type", "application/json")], [json.dumps(body).encode()], False
        )

    def _stream(
        self,
        protocol: str,
        dialect: adapters.SimulatorDialect,
        request: RecordedRequest,
        reply: Reply,
    ) -> _Response:
        if reply.body is not None:
            body = reply.body
        else:
            body = adapters.render(
                protocol,
                reply.items,
                reply.usage,
                reply.finish_reason,
                model=str(request.json.get("model", "sim-model")),
                fragment_size=reply.fragment_size,
            )
            if dialect.annotate is not None:
                body = dialect.annotate(body)
        content_type = reply.content_type or dialect.content_type
        # A binary framing (Bedrock's event stream) is written as an SSE stream is: by event.
        framing = adapters.PROTOCOLS[protocol].traits.framing
        event_stream = content_type.startswith(EVENT_STREAM) or framing is not None
        events = framing.frames if framing is not None else split_events
        if reply.error_after is not None:
            body = b"".join(events(body)[: reply.error_after]) + dialect.stream_error
        chunk_size = reply.chunk_size or self.chunk_size
        if chunk_size:
            chunks = _split(body, chunk_size)
        else:
            chunks = events(body) if event_stream else [body]
        headers = [
            ("content-type", content_type),
            ("cache-control", "no-cache"),
            (dialect.request_id_header, f"req_sim_{len(self.requests)}"),
            *reply.headers,
        ]
        if reply.fault is None:
            return _Response(200, headers, chunks, event_stream)
        answer = faults.Answer(
            tuple(events(body) if event_stream else [body]),
            sse=event_stream and framing is None, one_body=not event_stream, dialect=dialect,
            protocol=protocol,
        )
        return _Response(200, headers, [], event_stream, reply.fault.steps(answer))

    async def _deliver(self, out: httpserver.Response, response: _Response, reply: Reply) -> bool:
        """Write ``response`` shaped by ``reply``'s delivery options (package docstring); say
        whether every chunk of it was sent (the server core then ends it, after the handler).

        ``cut_after`` closes the connection; stalls (``stall_before_headers``, ``stall_at``)
        never return: the client ends them by leaving, which the server core sees.
        """
        if reply.stall_before_headers:
            await anyio.sleep_forever()
        delay = reply.delay if reply.delay is not None else self.delay
        if response.steps is not None:
            return await self._play(out, response, delay)
        headers = list(response.headers)
        if not response.event_stream:
            headers.append(("content-length", str(sum(map(len, response.chunks)))))
        await out.start(response.status, headers)
        sent = 0
        for chunk in self._budget(response.chunks, reply):
            if delay:
                await anyio.sleep(delay)
            await out.send(chunk)
            sent += len(chunk)
        if reply.cut_after is not None and sent >= reply.cut_after:
            await out.cut()
            return False
        if reply.stall_at is not None and sent >= reply.stall_at:
            while True:
                if reply.keepalive is None:
                    await anyio.sleep_forever()
                else:
                    await anyio.sleep(reply.keepalive)
                    await out.send(b": keep-alive\n\n")
        return True  # the server core ends the response

    @staticmethod
    async def _play(out: httpserver.Response, response: _Response, delay: float | None) -> bool:
        """Play a fault's steps (``faults``) after the head; say whether the body was sent
        whole (a hang-up or a hold never is)."""
        assert response.steps is not None
        headers = list(response.headers)
        length = None if response.event_stream else faults.declared_length(response.steps)
        if length is not None:
            headers.append(("content-length", str(length)))
        await out.start(response.status, headers)
        for step in response.steps:
            if isinstance(step, bytes):
                if delay:
                    await anyio.sleep(delay)
                await out.send(step)
            elif isinstance(step, faults.Pause):
                await anyio.sleep(step.seconds)
            elif isinstance(step, faults.Hangup):
                await out.cut(reset=step.reset)
                return False
            else:
                await anyio.sleep_forever()
        return True

    @staticmethod
    def _budget(chunks: list[bytes], reply: Reply) -> Iterator[bytes]:
        """Yield ``chunks``, stopping after ``cut_after`` or ``stall_at`` bytes."""
        limits = [n for n in (reply.cut_after, reply.stall_at) if n is not None]
        budget = min(limits) if limits else None
        for chunk in chunks:
            if budget is not None:
                if budget <= 0:
                    return
                chunk = chunk[:budget]
                budget -= len(chunk)
            yield chunk
