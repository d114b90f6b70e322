"""The playground's server (``mmsp_io.playground``, package doc): its routes, the chat call
streamed as server-sent events, and the simulator and trace page it runs beside."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Final, final
from urllib.parse import quote

import anyio
import anyio.to_thread
import httpx

from adapters import BadField, loads_object
from mmsp_core.errors import AbortedError, MMSPError, redact
from mmsp_core.model import TextDone, ToolCallDone, ToolResultDone, UniMessage
from mmsp_core.wire import to_wire

from .. import httpserver, tracer
from .._transport import fast_http_client
from ..abort import AbortSignal
from ..client import AutoLLMClient
from ..simulator import Simulator
from ..traces import SECURITY_HEADERS, TracePage
from ._models import BadChoice, catalog_models, client_for, gateway_client, simulator_models
from ._sessions import COOKIE, Busy, Session, Sessions

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "MAX_TOOL_ROUNDS", "TRACES_PREFIX", "Playground"]

#: Where ``python -m mmsp_io playground`` listens by default (07 §1, 08 D78).
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 25751
#: Where the trace page is mounted.
TRACES_PREFIX: Final = "/tracer"

_STATIC: Final = {
    "page.css": "text/css; charset=utf-8",
    "page.js": "text/javascript; charset=utf-8",
}
_JSON: Final = "application/json; charset=utf-8"
#: A request body (a message, its config and tools) is at most this many bytes.
_MAX_BODY: Final = 1024 * 1024
#: Model calls one chat turn may make: the first, and one after each round of tool results.
MAX_TOOL_ROUNDS: Final = 4
#: What a tool without a ``result`` in the tools JSON answers.
_NO_RESULT: Final = "(the playground has no result for this tool: give it a \"result\")"


@final
class _Refusal(Exception):
    """An answer other than 200: ``{"error": message}`` under ``status`` (07 §8)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@final
class Playground:
    """The playground (package doc) writing its traces to ``trace_root``.

    ``simulator``: whether ``running`` starts an in-process provider simulator to offer its
    models (then ``self.simulator`` is it while running), which waits ``simulator_delay``
    seconds before each write (``None``: none), so that its answers are seen streaming in;
    ``max_sessions`` and ``max_turns`` bound the sessions held and the user messages each
    answers.
    """

    def __init__(
        self,
        trace_root: str | os.PathLike[str],
        *,
        simulator: bool = True,
        simulator_delay: float | None = None,
        max_sessions: int = 32,
        max_turns: int = 100,
    ) -> None:
        self.trace_root = Path(trace_root).absolute()
        self.with_simulator = simulator
        self.simulator_delay = simulator_delay
        self.max_turns = max_turns
        self.sessions = Sessions(max_sessions)
        #: The simulator while ``running`` (with ``simulator``), else ``None``.
        self.simulator: Simulator | None = None
        self.traces = TracePage(self.trace_root, prefix=TRACES_PREFIX)
        self._static = {name: resources.files(__package__).joinpath(name).read_bytes()
                        for name in ("page.html", *_STATIC)}
        self._http: httpx.AsyncClient | None = None

    @contextlib.asynccontextmanager
    async def running(
        self, *, host: str = DEFAULT_HOST, port: int = 0, grace: float = 0.0
    ) -> AsyncIterator[httpserver.HTTPServer]:
        """Serve the playground on ``host:port`` (``0``: a free port) for the ``async with``
        block, with the simulator on a free loopback port (when asked for). A server on a
        loopback address answers only requests whose ``Host`` names a loopback host.

        Raises:
            OSError: a port cannot be bound.
        """
        loopback = httpserver.is_loopback_host(host)

        async def handle(request: httpserver.Request, response: httpserver.Response) -> None:
            if loopback and not httpserver.names_loopback_host(request.header("host")):
                await _refuse(response, _Refusal(403, "The Host header names no loopback host."))
                return
            await self.handle(request, response)

        limits = httpserver.Limits(max_body_bytes=_MAX_BODY)
        async with contextlib.AsyncExitStack() as stack:
            self._http = await stack.enter_async_context(fast_http_client())
            stack.callback(setattr, self, "_http", None)
            if self.with_simulator:
                self.simulator = await stack.enter_async_context(
                    Simulator.running(delay=self.simulator_delay))
                stack.callback(setattr, self, "simulator", None)
            server = await stack.enter_async_context(
                httpserver.serve(handle, host=host, port=port, limits=limits, grace=grace))
            yield server

    @property
    def http(self) -> httpx.AsyncClient:
        """The HTTP client every call of the playground shares.

        Raises:
            RuntimeError: the playground is not ``running``.
        """
        if self._http is None:
            raise RuntimeError("the playground is not running")
        return self._http

    async def handle(self, request: httpserver.Request, response: httpserver.Response) -> None:
        """Answer one request (the routes of the package doc); never raises a refusal."""
        try:
            path = request.path
            if path.startswith(TRACES_PREFIX + "/"):
                await self.traces.handle(request, response)
            elif path.startswith("/api/"):
                await self._api(path.removeprefix("/api/"), request, response)
            elif request.method != "GET":
                raise _Refusal(405, f"{path} answers only GET, not {request.method}.")
            elif path == "/":
                await response.respond(200, [("content-type", "text/html; charset=utf-8"),
                                             *SECURITY_HEADERS], self._static["page.html"])
            elif path.removeprefix("/") in _STATIC:
                name = path.removeprefix("/")
                await response.respond(200, [("content-type", _STATIC[name]),
                                             *SECURITY_HEADERS], self._static[name])
            else:
                raise _Refusal(404, f"No page at {path}.")
        except _Refusal as refusal:
            if not response.started:
                await _refuse(response, refusal)

    async def _api(self, route: str, request: httpserver.Request,
                   response: httpserver.Response) -> None:
        """The ``POST /api/<route>`` routes (package doc).

        Raises:
            _Refusal: 405 for another method, 403 for a request from another origin, 415 for
                a body that is not declared JSON, 400 for one that is no JSON object, 404 for
                no such route; the refusals of the route.
        """
        if route not in ("chat", "abort", "clear", "models", "history"):
            raise _Refusal(404, f"No route /api/{route}.")
        if request.method != "POST":
            raise _Refusal(405, f"/api/{route} answers only POST, not {request.method}.")
        origin = request.header("origin")
        if origin is not None and origin != f"http://{request.header('host')}":
            raise _Refusal(403, "The request comes from another origin.")
        content_type = (request.header("content-type") or "").partition(";")[0].strip()
        if content_type.lower() != "application/json":
            raise _Refusal(415, "The body must be JSON (content-type: application/json).")
        try:
            body = loads_object(request.body.decode("utf-8"))
        except (UnicodeDecodeError, BadField):
            raise _Refusal(400, "The body is no JSON object.") from None
        session_id = _cookie(request.header("cookie"))
        if route == "models":
            await _respond(response, {"models": await self._models(body)})
        elif route == "chat":
            await self._chat(body, session_id, response)
        elif route == "history":
            session = self.sessions.get(session_id)
            history = session.history if session is not None else []
            await _respond(response, {"messages": [to_wire(message) for message in history]})
        else:
            session = self.sessions.get(session_id)
            signal = session.signal if session is not None else None
            if signal is not None:
                signal.abort("stopped in the playground")
            if route == "clear" and session is not None:
                session.history, session.turns = [], 0
            status = "cleared" if route == "clear" else "aborted" if signal else "idle"
            await _respond(response, {"status": status})

    async def _models(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The models of the source ``body`` names (``POST /api/models``).

        Raises:
            _Refusal: 400 for an unknown source, or a gateway that cannot be listed (why).
        """
        source = body.get("source", "simulator")
        if source == "simulator":
            return simulator_models(self.simulator)
        if source == "catalog":
            return catalog_models(os.environ)
        if source != "gateway":
            raise _Refusal(400, f"No model source {source!r}.")
        base_url, key = body.get("base_url"), body.get("api_key")
        if not isinstance(base_url, str) or not (key is None or isinstance(key, str)):
            raise _Refusal(400, "A gateway needs its URL and, if it has keys, a token.")
        try:
            ids = await gateway_client(base_url, key, self.http).list_models()
        except (BadChoice, MMSPError) as exc:
            raise _Refusal(400, _shown(exc, key)) from None
        return [{"source": "gateway", "id": model, "client_type": "mmsp", "base_url": base_url,
                 "label": f"{model} · gateway {base_url}"} for model in ids]

    async def _chat(self, body: Mapping[str, Any], session_id: str | None,
                    response: httpserver.Response) -> None:
        """``POST /api/chat``: answer ``body["message"]`` in the session, streamed as
        server-sent events (package doc, "The chat stream").

        Raises:
            _Refusal: 400 for a malformed body or a model that cannot be called, 409 for a
                session with a call in flight or no turn left, 503 when no session can be
                made; all before the stream starts.
        """
        message, choice, config = body.get("message"), body.get("model"), body.get("config", {})
        if not isinstance(message, str) or not message.strip():
            raise _Refusal(400, "The message must be a non-empty string.")
        if not isinstance(choice, Mapping) or not isinstance(config, Mapping):
            raise _Refusal(400, "model and config must be JSON objects.")
        config, results = _tool_results(config)
        try:
            client = client_for(choice, self.simulator, self.http, trace_dir=self.trace_root)
        except (BadChoice, MMSPError) as exc:
            raise _Refusal(400, _shown(exc, choice.get("api_key"))) from None
        session = self.sessions.get(session_id)
        headers = [("content-type", "text/event-stream; charset=utf-8"), *SECURITY_HEADERS]
        if session is None:
            try:
                session_id, session = self.sessions.new()
            except Busy:
                raise _Refusal(503, "Every playground session is busy; try again.") from None
            headers.append(("set-cookie", f"{COOKIE}={session_id}; Path=/; HttpOnly; "
                                          "SameSite=Strict"))
        if session.signal is not None:
            raise _Refusal(409, "This session is answering already; stop it first.")
        if session.turns >= self.max_turns:
            raise _Refusal(409, f"This session holds {self.max_turns} turns, the most the "
                                "playground keeps: clear it to go on.")
        signal = session.signal = AbortSignal()
        session.used = anyio.current_time()
        try:
            await response.start(200, headers)
            await self._turn(session, client, UniMessage("user", (TextDone(message),)), config,
                             results, signal, response)
            await response.end()
        finally:
            session.signal = None

    async def _turn(self, session: Session, client: AutoLLMClient, message: UniMessage,
                    config: Mapping[str, Any], results: Mapping[str, str], signal: AbortSignal,
                    response: httpserver.Response) -> None:
        """Stream one turn into ``response``: the call, and while the model calls tools, their
        results (``results``) sent back, up to ``MAX_TOOL_ROUNDS`` calls; the session's
        history grows with each call that reaches its stop."""
        trace = None
        for _ in range(MAX_TOOL_ROUNDS):
            trace_id = f"playground/{tracer.new_trace_id(client.model)}"
            client.set_history(session.history)
            calls: list[ToolCallDone] = []
            try:
                async with contextlib.aclosing(client.streaming_response_stateful(
                        message, {**config, "trace_id": trace_id}, signal)) as events:
                    async for event in events:
                        await _send(response, to_wire(event))
                        calls += [i for i in event.content_items if isinstance(i, ToolCallDone)]
            except MMSPError as exc:
                written = not isinstance(exc, AbortedError) and await anyio.to_thread.run_sync(
                    (self.trace_root / f"{trace_id}.json").is_file)
                await _send(response, {"error": str(exc), "type": type(exc).__name__,
                                       "trace": self._trace_link(trace_id) if written else None})
                return
            session.history = client.get_history()
            trace = self._trace_link(trace_id)
            if not calls:
                break
            answers = tuple(ToolResultDone(results.get(call.name, _NO_RESULT), call.tool_call_id)
                            for call in calls)
            for answer in answers:
                await _send(response, {"tool_result": to_wire(answer)})
            message = UniMessage("user", answers)
        session.turns += 1
        await _send(response, {"done": {"trace": trace}})

    @staticmethod
    def _trace_link(trace_id: str) -> str:
        """The trace page's address of ``trace_id`` on this server."""
        return f"{TRACES_PREFIX}/trace/{quote(trace_id, safe='/')}"


def _tool_results(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``config`` without the ``result`` of each of its ``tools``, and those results by tool
    name (a result that is no string as its JSON).

    Raises:
        _Refusal: 400 for ``tools`` that are not a list of objects.
    """
    tools = config.get("tools")
    if tools is None:
        return dict(config), {}
    if not isinstance(tools, list) or not all(isinstance(tool, Mapping) for tool in tools):
        raise _Refusal(400, "tools must be a JSON list of objects.")
    results = {}
    for tool in tools:
        if "result" in tool and isinstance(tool.get("name"), str):
            result = tool["result"]
            results[tool["name"]] = result if isinstance(result, str) else json.dumps(result)
    schemas = [{key: value for key, value in tool.items() if key != "result"} for tool in tools]
    return {**config, "tools": schemas}, results


def _shown(exc: Exception, key: Any) -> str:
    """The text of ``exc`` for the user, ``key`` (a gateway token they gave) redacted."""
    text = str(exc)
    return redact(text, key) if isinstance(key, str) and key else text


def _cookie(header: str | None) -> str | None:
    """The session id of a ``Cookie`` header, or ``None``."""
    for pair in (header or "").split(";"):
        name, _, value = pair.strip().partition("=")
        if name == COOKIE:
            return value
    return None


async def _send(response: httpserver.Response, document: Mapping[str, Any]) -> None:
    """Send ``document`` as one server-sent event (``data: <json>``)."""
    try:
        data = json.dumps(document, ensure_ascii=False, allow_nan=False)
    except ValueError:  # a number JSON cannot carry: said instead
        data = json.dumps({"error": "The event holds a number JSON cannot carry.",
                           "type": "ValueError", "trace": None})
    await response.send(f"data: {data}\n\n".encode())


async def _respond(response: httpserver.Response, document: Mapping[str, Any],
                   status: int = 200) -> None:
    """Answer ``document`` as JSON under ``status``."""
    await response.respond(status, [("content-type", _JSON), *SECURITY_HEADERS],
                           json.dumps(document).encode())


async def _refuse(response: httpserver.Response, refusal: _Refusal) -> None:
    """Answer ``refusal`` as ``{"error": message}`` (07 §8)."""
    await _respond(response, {"error": refusal.message}, refusal.status)
