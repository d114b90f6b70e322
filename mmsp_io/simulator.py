"""A local provider simulator: real HTTP/1.1 on loopback, scripted answers, no network.

The simulator listens on ``127.0.0.1`` on a free port and answers the endpoints of the real
providers (spec 04 §4, §5): ``POST /v1/messages`` (Anthropic Messages), ``POST
/v1/chat/completions`` (OpenAI Chat), ``POST /v1/responses`` (OpenAI Responses) and ``GET
/v1/models``. It is built on ``h11`` (one ``h11.Connection`` per socket) and ``anyio``, so it runs
under asyncio and trio. The end-to-end tests, the load test, the benchmarks and ``python -m
mmsp_io demo`` use it.

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
text answer echoing the question.

A ``Reply`` says *what* to send:

- ``items``, ``usage``, ``finish_reason``: rendered by ``adapters.render`` as the body of the
  request's wire protocol (08 D49), with the request's ``model``;
- ``body``: a recorded body sent as it is (``Reply.recorded(path)`` reads a fixture file);
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
consume the script.

Adding a protocol (Gemini's endpoints later) is one ``_Dialect`` row and one route pattern.
"""

from __future__ import annotations

import collections
import contextlib
import hmac
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeAlias, final

import anyio
import anyio.abc
import attrs
import h11

import adapters
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UsageMetadata,
)

__all__ = ["PROTOCOLS", "Behaviour", "RecordedRequest", "Reply", "Simulator", "demo_script"]

#: A request body longer than this closes the connection (the simulator's buffers are bounded).
_MAX_REQUEST_BYTES: Final = 50 * 1024 * 1024
_RECEIVE_SIZE: Final = 65536
_EVENT_STREAM: Final = "text/event-stream; charset=utf-8"
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
    #: The wire protocol of the route (``"ant-messages"``, ...), ``None`` for other routes.
    protocol: str | None

    def header(self, name: str) -> str | None:
        """Return the first value of header ``name`` (case-insensitive), or ``None``."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)


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
    content_type: str = _EVENT_STREAM
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
        content_type = "application/json" if path.suffix == ".json" else _EVENT_STREAM
        return cls(body=path.read_bytes(), content_type=content_type, **delivery)


Behaviour: TypeAlias = Reply | Callable[[RecordedRequest], Reply]


# --------------------------------------------------------------------------------------------
# Provider dialects: paths, credentials, error bodies, in-stream errors, what a request asks
# --------------------------------------------------------------------------------------------


@final
@attrs.frozen
class _Turn:
    """What ``demo_script`` reads from a request."""

    question: str
    #: ``(name, JSON schema of the parameters)`` of each tool offered, in order.
    tools: tuple[tuple[str, Mapping[str, Any]], ...]
    #: The text of every tool result the request carries, in order.
    tool_results: tuple[str, ...]


@final
@attrs.frozen
class _Dialect:
    """How one wire protocol's provider speaks, as far as the simulator needs it."""

    #: What a client's base URL adds to the simulator's origin (spec 04 §4).
    base_path: str
    #: Header names that may carry the key; ``authorization`` means ``Bearer <key>``.
    key_headers: tuple[str, ...]
    request_id_header: str
    error_body: Callable[[int, str], dict[str, Any]]
    #: The in-stream error frame ``Reply.error_after`` appends (an overload, 08 D4).
    stream_error: bytes
    read_turn: Callable[[Mapping[str, Any]], _Turn]
    tool_call_id_prefix: str


_ANTHROPIC_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS: Final = {  # status -> (type, code)
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def _anthropic_error(status: int, message: str) -> dict[str, Any]:
    error_type = _ANTHROPIC_ERROR_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )
    return {"type": "error", "error": {"type": error_type, "message": message}}


def _openai_error(status: int, message: str) -> dict[str, Any]:
    error_type, code = _OPENAI_ERRORS.get(
        status, ("server_error", None) if status >= 500 else ("invalid_request_error", None)
    )
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _texts(content: Any, text_types: tuple[str, ...]) -> list[str]:
    """The texts of a message's ``content``: a string, or a list of typed parts."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        part["text"]
        for part in content
        if isinstance(part, Mapping) and part.get("type") in text_types and "text" in part
    ]


def _read_anthropic(body: Mapping[str, Any]) -> _Turn:
    question, results = "", []
    for message in body.get("messages") or ():
        content = message.get("content")
        if message.get("role") != "user":
            continue
        if texts := _texts(content, ("text",)):
            question = "".join(texts)
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_result":
                results.append("".join(_texts(block.get("content"), ("text",))))
    tools = tuple(
        (tool["name"], tool.get("input_schema") or {})
        for tool in body.get("tools") or ()
        if "name" in tool
    )
    return _Turn(question, tools, tuple(results))


def _read_openai_chat(body: Mapping[str, Any]) -> _Turn:
    question, results = "", []
    for message in body.get("messages") or ():
        role, content = message.get("role"), message.get("content")
        if role == "user" and (texts := _texts(content, ("text",))):
            question = "".join(texts)
        elif role == "tool":
            results.append("".join(_texts(content, ("text",))))
    tools = tuple(
        (tool["function"]["name"], tool["function"].get("parameters") or {})
        for tool in body.get("tools") or ()
        if "name" in tool.get("function", {})
    )
    return _Turn(question, tools, tuple(results))


def _read_openai_responses(body: Mapping[str, Any]) -> _Turn:
    question, results = "", []
    entries = body.get("input") or ()
    for entry in [{"role": "user", "content": entries}] if isinstance(entries, str) else entries:
        if entry.get("role") == "user" and (texts := _texts(entry.get("content"), ("input_text",))):
            question = "".join(texts)
        elif entry.get("type") == "function_call_output":
            results.append("".join(_texts(entry.get("output"), ("input_text",))))
    tools = tuple(
        (tool["name"], tool.get("parameters") or {})
        for tool in body.get("tools") or ()
        if tool.get("type") == "function" and "name" in tool
    )
    return _Turn(question, tools, tuple(results))


_DIALECTS: Final[Mapping[str, _Dialect]] = {
    "ant-messages": _Dialect(
        base_path="",
        key_headers=("x-api-key", "authorization"),
        request_id_header="request-id",
        error_body=_anthropic_error,
        stream_error=b'event: error\ndata: {"type":"error","error":'
        b'{"type":"overloaded_error","message":"Overloaded"}}\n\n',
        read_turn=_read_anthropic,
        tool_call_id_prefix="toolu_sim_",
    ),
    "openai-chat": _Dialect(
        base_path="/v1",
        key_headers=("authorization",),
        request_id_header="x-request-id",
        error_body=_openai_error,
        stream_error=b'data: {"error":{"message":"The server is overloaded.",'
        b'"type":"server_error","code":"overloaded"}}\n\n',
        read_turn=_read_openai_chat,
        tool_call_id_prefix="call_sim_",
    ),
    "openai-responses": _Dialect(
        base_path="/v1",
        key_headers=("authorization",),
        request_id_header="x-request-id",
        error_body=_openai_error,
        stream_error=b'event: error\ndata: {"type":"error","code":"server_error",'
        b'"message":"The server had an error while processing your request.","param":null}\n\n',
        read_turn=_read_openai_responses,
        tool_call_id_prefix="call_sim_",
    ),
}

#: The wire protocols the simulator speaks, in the order the demo shows them.
PROTOCOLS: Final = tuple(_DIALECTS)

#: ``(method, path pattern) -> wire protocol`` of the model endpoints; paths without the query.
_ROUTES: Final[tuple[tuple[str, re.Pattern[str], str], ...]] = (
    ("POST", re.compile(r"/v1/messages"), "ant-messages"),
    ("POST", re.compile(r"/v1/chat/completions"), "openai-chat"),
    ("POST", re.compile(r"/v1/responses"), "openai-responses"),
)
_MODELS_PATH: Final = "/v1/models"
#: Every provider lists models at the same path, so that route takes any provider's key header.
_ANY_KEY_HEADER: Final = tuple(dict.fromkeys(h for d in _DIALECTS.values() for h in d.key_headers))
#: Dialect of answers that belong to no protocol (unknown routes, the model list).
_NEUTRAL: Final = "openai-chat"


def _route(method: str, path: str) -> str | None:
    return next(
        (protocol for m, pattern, protocol in _ROUTES if m == method and pattern.fullmatch(path)),
        None,
    )


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


def demo_script(request: RecordedRequest) -> Reply:
    """Answer like a small tool-using model (see the module docstring).

    Tools offered and no tool result yet: thinking, then a call to the first tool whose first
    string parameter holds the question's last word (``"... in Paris?"`` → ``"Paris"``),
    finish ``tool_call``. A tool result in the request: a text answer quoting the last result.
    No tools: thinking and a text answer repeating the question.
    """
    dialect = _DIALECTS[request.protocol or _NEUTRAL]
    turn = dialect.read_turn(request.json)
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
# The server
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
        port: int,
    ) -> None:
        self.default = default
        self.api_key = api_key
        self.chunk_size = chunk_size
        self.delay = delay
        self.models = tuple(models)
        self.url = f"http://127.0.0.1:{port}"
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
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        sim = cls(
            default, api_key=api_key, chunk_size=chunk_size, delay=delay, models=models, port=port
        )
        try:
            async with listener, anyio.create_task_group() as tasks:
                tasks.start_soon(listener.serve, sim._serve_connection)
                try:
                    yield sim
                finally:
                    tasks.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # The task group wraps what the ``async with`` body raised; hand it back as it was.
            if len(group.exceptions) != 1:
                raise
            error = group.exceptions[0]
            raise error from error.__cause__

    def base_url(self, protocol: str) -> str:
        """The base URL a client of ``protocol`` is given: ``/v1`` for OpenAI, the origin else."""
        return self.url + _DIALECTS[protocol].base_path

    async def wait_disconnects(self, count: int = 1) -> None:
        """Wait until at least ``count`` clients closed their connection mid-response."""
        while len(self.disconnects) < count:
            await anyio.sleep(0.005)

    # -- one connection ----------------------------------------------------------------------

    async def _serve_connection(self, stream: anyio.abc.ByteStream) -> None:
        conn = h11.Connection(h11.SERVER)
        async with stream:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                while (request := await self._read_request(stream, conn)) is not None:
                    response, reply = self._answer(request)
                    if not await self._send(stream, conn, request, response, reply):
                        return
                    if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                        return
                    conn.start_next_cycle()

    async def _read_request(
        self, stream: anyio.abc.ByteStream, conn: h11.Connection
    ) -> RecordedRequest | None:
        """Read one whole request; ``None`` when the client closed or sent no valid HTTP."""
        head: h11.Request | None = None
        body = bytearray()
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    try:
                        conn.receive_data(await stream.receive(_RECEIVE_SIZE))
                    except anyio.EndOfStream:
                        conn.receive_data(b"")
                elif isinstance(event, h11.Request):
                    head = event
                elif isinstance(event, h11.Data):
                    body += event.data
                    if len(body) > _MAX_REQUEST_BYTES:
                        return None
                elif isinstance(event, h11.EndOfMessage) and head is not None:
                    break
                else:  # ConnectionClosed, or a state h11 says we cannot be in
                    return None
        except h11.RemoteProtocolError:
            return None
        path, _, query = head.target.decode("ascii", "replace").partition("?")
        method = head.method.decode("ascii")
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = RecordedRequest(
            method=method,
            path=path,
            query=query,
            headers=tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in head.headers),
            body=bytes(body),
            json=parsed,
            protocol=_route(method, path),
        )
        self.requests.append(request)
        return request

    def _answer(self, request: RecordedRequest) -> tuple[_Response, Reply]:
        """Decide the response to ``request``: routing, credentials, then the script."""
        protocol = request.protocol
        dialect = _DIALECTS[protocol or _NEUTRAL]
        is_models = request.method == "GET" and request.path == _MODELS_PATH
        if protocol is None and not is_models:
            message = f"No route for {request.method} {request.path}."
            return self._error(dialect, Reply(status=404, message=message)), Reply()
        key_headers = _ANY_KEY_HEADER if is_models else dialect.key_headers
        if not self._authorised(request, key_headers):
            message = "invalid x-api-key" if protocol == "ant-messages" else "Invalid API key."
            return self._error(dialect, Reply(status=401, message=message)), Reply()
        if protocol is None:
            return self._models(), Reply()
        if not isinstance(request.json, Mapping):
            reply = Reply(status=400, message="The request body is not a JSON object.")
            return self._error(dialect, reply), reply
        behaviour = self.script.popleft() if self.script else self.default
        reply = behaviour if isinstance(behaviour, Reply) else behaviour(request)
        if reply.status != 200:
            return self._error(dialect, reply), reply
        return self._stream(protocol, request, reply), reply

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

    def _error(self, dialect: _Dialect, reply: Reply) -> _Response:
        message = reply.message or f"Simulated error {reply.status}."
        body = json.dumps(dialect.error_body(reply.status, message)).encode()
        headers = [
            ("content-type", "application/json"),
            (dialect.request_id_header, f"req_sim_{len(self.requests)}"),
            *reply.headers,
        ]
        if reply.retry_after is not None:
            headers.append(("retry-after", f"{reply.retry_after:g}"))
        return _Response(reply.status, headers, [body], event_stream=False)

    def _models(self) -> _Response:
        # One body both list parsers read: OpenAI's ``data[].id`` and Anthropic's paging keys.
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
        return _Response(
            200, [("content-type", "application/json")], [json.dumps(body).encode()], False
        )

    def _stream(self, protocol: str, request: RecordedRequest, reply: Reply) -> _Response:
        dialect = _DIALECTS[protocol]
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
        event_stream = reply.content_type.startswith("text/event-stream")
        if reply.error_after is not None:
            body = b"".join(_sse_events(body)[: reply.error_after]) + dialect.stream_error
        chunk_size = reply.chunk_size or self.chunk_size
        if chunk_size:
            chunks = _split(body, chunk_size)
        else:
            chunks = _sse_events(body) if event_stream else [body]
        headers = [
            ("content-type", reply.content_type),
            ("cache-control", "no-cache"),
            (dialect.request_id_header, f"req_sim_{len(self.requests)}"),
            *reply.headers,
        ]
        return _Response(200, headers, chunks, event_stream)

    async def _send(
        self,
        stream: anyio.abc.ByteStream,
        conn: h11.Connection,
        request: RecordedRequest,
        response: _Response,
        reply: Reply,
    ) -> bool:
        """Send ``response`` shaped by ``reply``; ``False`` when the connection is finished.

        A watcher reads the socket meanwhile: the client closing it before the response is
        complete (an abort, a timeout, an early ``aclose()``) cancels the sending and records
        the request in ``disconnects``.
        """
        complete = whole = left = False

        def client_left() -> None:
            nonlocal left
            if not complete and not left:
                left = True
                self.disconnects.append(request)
                tasks.cancel_scope.cancel()

        async def watch_client() -> None:
            try:
                while True:  # a pipelined next request is kept for the next cycle
                    conn.receive_data(await stream.receive(_RECEIVE_SIZE))
            except anyio.EndOfStream:
                conn.receive_data(b"")
                client_left()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                client_left()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch_client)
            try:
                whole = await self._deliver(stream, conn, response, reply)
                # Complete before the last write: the client may close as soon as it has it.
                complete = True
                if whole:
                    await stream.send(conn.send(h11.EndOfMessage()))
                else:
                    await stream.aclose()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                client_left()
            tasks.cancel_scope.cancel()
        return complete and whole

    async def _deliver(
        self,
        stream: anyio.abc.ByteStream,
        conn: h11.Connection,
        response: _Response,
        reply: Reply,
    ) -> bool:
        """Write the head and body; ``False`` when ``cut_after`` cut the body short.

        Stalls (``stall_before_headers``, ``stall_at``) never return: the client ends them.
        """
        if reply.stall_before_headers:
            await anyio.sleep_forever()
        headers = list(response.headers)
        if not response.event_stream:
            headers.append(("content-length", str(sum(map(len, response.chunks)))))
        await stream.send(conn.send(h11.Response(status_code=response.status, headers=headers)))
        delay = reply.delay if reply.delay is not None else self.delay
        sent = 0
        for chunk in self._budget(response.chunks, reply):
            if delay:
                await anyio.sleep(delay)
            await stream.send(conn.send(h11.Data(data=chunk)))
            sent += len(chunk)
        if reply.cut_after is not None and sent >= reply.cut_after:
            return False
        if reply.stall_at is not None and sent >= reply.stall_at:
            while True:
                if reply.keepalive is None:
                    await anyio.sleep_forever()
                else:
                    await anyio.sleep(reply.keepalive)
                    await stream.send(conn.send(h11.Data(data=b": keep-alive\n\n")))
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
