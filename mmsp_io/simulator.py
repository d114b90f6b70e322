"""A local provider simulator: real HTTP/1.1 on loopback, scripted answers, no network.

The simulator listens on ``127.0.0.1`` on a free port and answers the endpoints of the real
providers (spec 04 §4, §5): the generation endpoint of every registered wire protocol whose
record has a ``SimulatorDialect`` (``Traits.dialect``; ``simulated_protocols()`` lists them),
and the model list of their client types. Everything about a provider (its route and base path,
its key headers, its error bodies, its in-stream error, how its requests read) comes from that
dialect, read from ``adapters.PROTOCOLS`` at call time, so a protocol registered later with
``adapters.register`` is served too (08 D63). It runs on the server core of
``mmsp_io.httpserver`` (h11 and anyio), under asyncio and trio. The end-to-end tests, the load
test, the benchmarks and ``python -m mmsp_io demo`` use it.

How to script it
----------------
::

    async with Simulator.running(Reply(items=[TextDone("Hi")])) as sim:
        client = AutoLLMClient("sim-model", api_key=sim.api_key,
                               base_url=sim.base_url("openai-chat"), client_type="openai-chat")
        ...
        assert sim.requests[0].json["model"] == "sim-model"

Every request to a model endpoint takes the next *behaviour* from ``sim.script`` (a deque: one
test can script "500, then success" with ``sim.script.extend([Reply(status=500), ok])``); when
the script is empty, the default behaviour given to ``running`` answers. A behaviour is a
``Reply`` or a function ``(RecordedRequest) -> Reply``. The default default is
``demo_script``, which reads the request: tools offered and no tool result yet → thinking and a
call to the first tool; a tool result in the request → a text answer quoting it; no tools → a
text answer echoing the question; an embedding request → one small vector per input.

A ``Reply`` says *what* to send:

- ``items``, ``usage``, ``finish_reason``: rendered by ``adapters.render`` as the body of the
  request's wire protocol (08 D49), with the request's ``model``;
- ``body``: a recorded body sent as it is (``Reply.recorded(path)`` reads a fixture file);
  ``content_type`` defaults to the dialect's;
- ``status`` other than 200: the provider's JSON error body for that status (``message`` and
  ``retry_after`` fill it in), for example ``Reply(status=429, retry_after=0)``.

and *how* to send it: ``chunk_size`` (bytes per write; default one write per SSE event),
``delay`` (seconds before each write), ``error_after`` (keep that many events of the body, then
send the protocol's in-stream overload error), ``cut_after`` (close the connection after that
many body bytes), ``stall_at`` (stop sending after that many body bytes and hold the connection
open, sending ``: keep-alive`` comments every ``keepalive`` seconds if set: pick an offset
between two events then, as a server would) and ``stall_before_headers`` (never answer at all).

What the simulator saw: ``sim.requests`` lists every request (method, path, headers, raw and
parsed body, protocol) in arrival order; ``sim.disconnects`` lists the requests whose client
closed the connection before the response was complete (``await sim.wait_disconnects(n)``
waits for them). A request with a wrong or missing key gets the provider's 401 body and does not
consume the script. A request body over 50 MB is answered 413.

Adding a protocol is its record's ``dialect``: nothing here changes.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import hmac
import http
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeAlias, final

import anyio
import attrs

import adapters
from mmsp_core.model import (
    DoneItem,
    EmbeddingDone,
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UsageMetadata,
)

from . import httpserver

__all__ = [
    "Behaviour",
    "RecordedRequest",
    "Reply",
    "Simulator",
    "demo_script",
    "simulated_protocols",
]

#: A request body longer than this is answered 413 (the simulator's buffers are bounded).
_MAX_REQUEST_BYTES: Final = 50 * 1024 * 1024
_EVENT_STREAM: Final = "text/event-stream"
_DEFAULT_USAGE: Final = UsageMetadata(cached_tokens=0, prompt_tokens=12, response_tokens=8)


@final
@attrs.frozen
class RecordedRequest:
    """One request the simulator received, as the tests assert on it."""

    method: str
    #: The request target without its query string.
    path: str
    query: str
    #: Header names lower-cased, in arrival order.
    headers: tuple[tuple[str, str], ...]
    body: bytes
    #: The body parsed as JSON, or ``None`` when it is empty or not JSON.
    json: Any
    #: The wire protocol whose generation endpoint was asked, ``None`` for other routes.
    protocol: str | None

    def header(self, name: str) -> str | None:
        """Return the first value of header ``name`` (case-insensitive), or ``None``."""
        return httpserver.first_header(self.headers, name)


def _items(items: Iterable[DoneItem]) -> tuple[DoneItem, ...]:
    return tuple(items)


@final
@attrs.frozen(kw_only=True)
class Reply:
    """What the simulator sends for one request, and how (see the module docstring)."""

    items: tuple[DoneItem, ...] = attrs.field(default=(), converter=_items)
    usage: UsageMetadata = _DEFAULT_USAGE
    finish_reason: FinishReason = FinishReason.STOP
    fragment_size: int | None = None
    #: A recorded body sent instead of rendering ``items``.
    body: bytes | None = None
    #: ``None``: the content type of the protocol's dialect.
    content_type: str | None = None
    #: A status other than 200 sends the provider's JSON error body instead.
    status: int = 200
    message: str | None = None
    retry_after: float | None = None
    headers: tuple[tuple[str, str], ...] = ()
    #: Delivery: ``None`` means the simulator's default.
    chunk_size: int | None = None
    delay: float | None = None
    error_after: int | None = None
    cut_after: int | None = None
    stall_at: int | None = None
    stall_before_headers: bool = False
    keepalive: float | None = None

    @classmethod
    def recorded(cls, path: str | Path, **delivery: Any) -> Reply:
        """Replay the body file at ``path`` (a fixture ``.sse`` or ``.json``) as it is."""
        path = Path(path)
        content_type = (
            "application/json" if path.suffix == ".json" else f"{_EVENT_STREAM}; charset=utf-8"
        )
        return cls(body=path.read_bytes(), content_type=content_type, **delivery)


Behaviour: TypeAlias = Reply | Callable[[RecordedRequest], Reply]


# --------------------------------------------------------------------------------------------
# The protocols served, read from the records at call time (08 D63)
# --------------------------------------------------------------------------------------------


def simulated_protocols() -> tuple[str, ...]:
    """The providers' wire protocols the simulator serves now: every registered protocol whose
    record has a ``SimulatorDialect``, in registration order (the order the demo shows them).

    A gateway's protocol (``upstream_errors``: mmsp, whose every error is the gateway's own
    ``UpstreamError``) is served too, so that its client is tested without a gateway, but it is
    not a provider's and is not listed here.
    """
    return tuple(
        name
        for name, record in adapters.PROTOCOLS.items()
        if record.traits.dialect is not None and not record.traits.upstream_errors
    )


def _dialect(protocol: str) -> adapters.SimulatorDialect:
    """The dialect of ``protocol``.

    Raises:
        ValueError: the simulator does not serve ``protocol``.
    """
    record = adapters.PROTOCOLS.get(protocol)
    if record is None or record.traits.dialect is None:
        raise ValueError(f"the simulator does not serve the wire protocol {protocol!r}")
    return record.traits.dialect


def _route(method: str, path: str) -> str | None:
    """The protocol whose generation endpoint is ``method path``, if any."""
    for name, record in adapters.PROTOCOLS.items():
        dialect = record.traits.dialect
        if dialect is not None and dialect.route[0] == method and re.fullmatch(
            dialect.route[1], path
        ):
            return name
    return None


def _listing_dialects(path: str) -> list[adapters.SimulatorDialect]:
    """The dialects of every served client type that lists its models at ``path`` (spec
    04 §5), in registry order; providers share a path (``/v1/models``)."""
    dialects: list[adapters.SimulatorDialect] = []
    for spec in adapters.CLIENTS.values():
        record = adapters.PROTOCOLS.get(spec.protocol)
        dialect = record.traits.dialect if record is not None else None
        if dialect is not None and dialect not in dialects and adapters.join_url(
            dialect.base_path, spec.list_models_path
        ) == path:
            dialects.append(dialect)
    return dialects


def _model_list_key_headers(path: str) -> tuple[str, ...]:
    """The key headers of every client type that lists its models at ``path``; empty when
    none does. Providers share a path, so it takes any of their key headers."""
    headers: dict[str, None] = {}
    for dialect in _listing_dialects(path):
        headers.update(dict.fromkeys(dialect.key_headers))
    return tuple(headers)


_NEUTRAL_REQUEST_ID_HEADER: Final = "x-request-id"
_NEUTRAL_BAD_KEY_MESSAGE: Final = "Invalid API key."


def _neutral_error_body(status: int, message: str) -> dict[str, Any]:
    """The error body of an answer that belongs to no protocol (an unknown route, the model
    list): the plain ``{"error": {"message", "type"}}`` every ``ErrorShape`` reads, the type
    being the status's phrase (``not_found``)."""
    error_type = http.HTTPStatus(status).phrase.lower().replace(" ", "_")
    return {"error": {"message": message, "type": error_type}}


# --------------------------------------------------------------------------------------------
# The demo script
# --------------------------------------------------------------------------------------------


def _tool_arguments(schema: Mapping[str, Any], question: str) -> dict[str, Any]:
    """Fill the first string parameter of ``schema`` with the question's last word."""
    words = re.findall(r"[^\W\d_]+", question)
    for name, spec in (schema.get("properties") or {}).items():
        if isinstance(spec, Mapping) and spec.get("type") == "string":
            return {name: words[-1] if words else ""}
    return {}


def _demo_vector(text: str) -> tuple[float, ...]:
    """Eight values in [-1, 1) drawn from ``text``'s SHA-256: the same text, the same vector
    (each exact in float32, so every embedding wire carries it unchanged)."""
    return tuple((byte - 128) / 128 for byte in hashlib.sha256(text.encode()).digest()[:8])


def demo_script(request: RecordedRequest) -> Reply:
    """Answer like a small tool-using model (see the module docstring).

    Tools offered and no tool result yet: thinking, then a call to the first tool whose first
    string parameter holds the question's last word (``"... in Paris?"`` → ``"Paris"``),
    finish ``tool_call``. A tool result in the request: a text answer quoting the last result.
    No tools: thinking and a text answer repeating the question. An embedding request (its
    turn has ``inputs``): one eight-value vector per input, the same for the same text. The
    request is read by its protocol's dialect (``read_turn``).

    Raises:
        ValueError: the request is not one to a model endpoint the simulator serves.
    """
    if request.protocol is None:
        raise ValueError("demo_script answers requests to model endpoints only")
    dialect = _dialect(request.protocol)
    turn = dialect.read_turn(request.json)
    if turn.inputs:
        vectors: list[DoneItem] = [EmbeddingDone(_demo_vector(text)) for text in turn.inputs]
        return Reply(items=vectors, usage=UsageMetadata(prompt_tokens=len(request.body) // 4))
    if turn.tool_results:
        items: list[DoneItem] = [TextDone(text=f"Here is what I found: {turn.tool_results[-1]}")]
        finish = FinishReason.STOP
    elif turn.tools:
        name, schema = turn.tools[0]
        call_id = f"{dialect.tool_call_id_prefix}1"
        items = [
            ThinkingDone(thinking=f"The user asks: {turn.question!r}. I will call {name}."),
            ToolCallDone(
                name=name, tool_call_id=call_id, arguments=_tool_arguments(schema, turn.question)
            ),
        ]
        finish = FinishReason.TOOL_CALL
    else:
        items = [
            ThinkingDone(thinking="No tools here; I will answer directly."),
            TextDone(text=f"You asked: {turn.question}"),
        ]
        finish = FinishReason.STOP
    # Rough counts, like a tokenizer would give: four bytes of request per prompt token.
    usage = UsageMetadata(
        cached_tokens=0, prompt_tokens=len(request.body) // 4, response_tokens=8 * len(items)
    )
    return Reply(items=items, usage=usage, finish_reason=finish)


# --------------------------------------------------------------------------------------------
# The simulator
# --------------------------------------------------------------------------------------------


@final
@attrs.frozen
class _Response:
    """A reply made concrete for one request: status line, headers and the body's writes."""

    status: int
    headers: list[tuple[str, str]]
    chunks: list[bytes]
    event_stream: bool


def _sse_events(body: bytes) -> list[bytes]:
    """Split an event-stream body after each blank line (an unterminated tail stays whole)."""
    return re.findall(rb".*?(?:\r\n\r\n|\n\n|\r\r)|.+\Z", body, re.DOTALL)


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
    """A running provider simulator; build it with ``Simulator.running(...)``."""

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
    ) -> AsyncIterator[Simulator]:
        """Serve on a free loopback port for the duration of the ``async with`` block.

        ``chunk_size`` and ``delay`` are the defaults of every reply (see ``Reply``).
        Leaving the block closes the listener and every open connection.
        """
        sim = cls(default, api_key=api_key, chunk_size=chunk_size, delay=delay, models=models)
        limits = httpserver.Limits(max_body_bytes=_MAX_REQUEST_BYTES)
        async with httpserver.serve(sim._handle, limits=limits) as server:
            sim.url = server.url
            yield sim

    def base_url(self, protocol: str) -> str:
        """The base URL a client of ``protocol`` is given: the origin and the dialect's base
        path (spec 04 §4: ``/v1`` on some providers, none on others).

        Raises:
            ValueError: the simulator does not serve ``protocol``.
        """
        return self.url + _dialect(protocol).base_path

    async def wait_disconnects(self, count: int = 1) -> None:
        """Wait until at least ``count`` clients closed their connection mid-response."""
        while len(self.disconnects) < count:
            await anyio.sleep(0.005)

    # -- one request ---------------------------------------------------------------------------

    async def _handle(self, request: httpserver.Request, out: httpserver.Response) -> None:
        """Record ``request``, answer it, and note a client that left before the end."""
        recorded = RecordedRequest(
            method=request.method,
            path=request.path,
            query=request.query,
            headers=request.headers,
            body=request.body,
            json=_parse_json(request.body),
            protocol=_route(request.method, request.path),
        )
        self.requests.append(recorded)
        delivered = False
        try:
            response, reply = self._answer(recorded)
            delivered = await self._deliver(out, response, reply)
        finally:
            # A client may close as soon as it has the last event (08 D56), before the end of
            # the body is written: that is no disconnect.
            if out.client_gone and not delivered:
                self.disconnects.append(recorded)

    def _answer(self, request: RecordedRequest) -> tuple[_Response, Reply]:
        """Decide the response to ``request``: routing, credentials, then the script."""
        protocol = request.protocol
        if protocol is None:
            key_headers = _model_list_key_headers(request.path) if request.method == "GET" else ()
            if not key_headers:
                message = f"No route for {request.method} {request.path}."
                return self._error(None, Reply(status=404, message=message)), Reply()
            if not self._authorised(request, key_headers):
                reply = Reply(status=401, message=_NEUTRAL_BAD_KEY_MESSAGE)
                return self._error(None, reply), Reply()
            return self._models(request.path), Reply()
        dialect = _dialect(protocol)
        if not self._authorised(request, dialect.key_headers):
            return self._error(dialect, Reply(status=401, message=dialect.bad_key_message)), Reply()
        if not isinstance(request.json, Mapping):
            reply = Reply(status=400, message="The request body is not a JSON object.")
            return self._error(dialect, reply), reply
        behaviour = self.script.popleft() if self.script else self.default
        reply = behaviour if isinstance(behaviour, Reply) else behaviour(request)
        if reply.status != 200:
            return self._error(dialect, reply), reply
        return self._stream(protocol, dialect, request, reply), reply

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
        """The JSON error response of ``reply.status``: the dialect's, or the neutral one."""
        message = reply.message or f"Simulated error {reply.status}."
        if dialect is None:
            document = _neutral_error_body(reply.status, message)
            request_id_header = _NEUTRAL_REQUEST_ID_HEADER
        else:
            document = dialect.error_body(reply.status, message)
            request_id_header = dialect.request_id_header
        headers = [
            ("content-type", "application/json"),
            (request_id_header, f"req_sim_{len(self.requests)}"),
            *reply.headers,
        ]
        if reply.retry_after is not None:
            headers.append(("retry-after", f"{reply.retry_after:g}"))
        return _Response(reply.status, headers, [json.dumps(document).encode()], False)

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
        for dialect in _listing_dialects(path):
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
        content_type = reply.content_type or dialect.content_type
        event_stream = content_type.startswith(_EVENT_STREAM)
        if reply.error_after is not None:
            body = b"".join(_sse_events(body)[: reply.error_after]) + dialect.stream_error
        chunk_size = reply.chunk_size or self.chunk_size
        if chunk_size:
            chunks = _split(body, chunk_size)
        else:
            chunks = _sse_events(body) if event_stream else [body]
        headers = [
            ("content-type", content_type),
            ("cache-control", "no-cache"),
            (dialect.request_id_header, f"req_sim_{len(self.requests)}"),
            *reply.headers,
        ]
        return _Response(200, headers, chunks, event_stream)

    async def _deliver(self, out: httpserver.Response, response: _Response, reply: Reply) -> bool:
        """Write ``response`` shaped by ``reply``'s delivery options (module docstring); say
        whether every chunk of it was sent (the server core then ends it, after the handler).

        ``cut_after`` closes the connection; stalls (``stall_before_headers``, ``stall_at``)
        never return: the client ends them by leaving, which the server core sees.
        """
        if reply.stall_before_headers:
            await anyio.sleep_forever()
        headers = list(response.headers)
        if not response.event_stream:
            headers.append(("content-length", str(sum(map(len, response.chunks)))))
        await out.start(response.status, headers)
        delay = reply.delay if reply.delay is not None else self.delay
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
