"""The playground: a chat page on loopback to try any model (07 §8, adapted; 08 D78).

``python -m mmsp_io playground`` serves, by default on ``127.0.0.1:25751``, a page where one
picks a model, sets the thinking level and other config, optionally offers tools (JSON), and
chats: the answer streams in with its thinking, tool calls and their results, usage and finish
reason; *Stop* aborts the call; each finished turn links to its trace. It needs no key: an
in-process provider simulator (``mmsp_io.simulator``) is started with it and its models are
offered first. Like the trace page, it runs on the server core of ``mmsp_io.httpserver`` under
asyncio or trio, and it is an application beside the client library (docs/architecture.md):
the library never imports it.

Models
------
``POST /api/models`` with ``{"source": ...}`` lists, as ``{"models": [{"source", "id",
"client_type", "label", ...}]}``:

- ``"simulator"``: one model per wire protocol the simulator speaks (its ``protocol``);
- ``"catalog"``: the catalog's text models (spec 04 §7) whose client's key is set in the
  environment and may go to the model's endpoint (spec 04 §3); the key stays on the server;
- ``"gateway"`` with ``"base_url"`` (an MMSP gateway's ``/v1``) and ``"api_key"`` (its token,
  if it has keys): the gateway's models, asked from it (spec 07 §5); 400 ``{"error"}`` says
  why it could not be listed.

The chat stream
---------------
``POST /api/chat`` with ``{"message": text, "model": <an entry of the list; a gateway's with
its "api_key">, "config": <UniConfig as JSON>}`` answers ``text/event-stream``, one
``data: <json>`` event each: every public event of the call in its wire form (spec 01), then
``{"done": {"trace": <link>}}``; or, when the call fails, ``{"error": text, "type": <error
class>, "trace": <link or null>}`` and nothing after. Each call is traced in the trace
directory under ``playground/<made id>`` (``mmsp_io.tracer``; an aborted call writes nothing,
08 D20), and the links lead to the trace page, mounted at ``/tracer/`` on the same server
(``mmsp_io.traces``). ``config["tools"]`` are tool schemas; one may carry a ``"result"`` (not
sent to the model): when the model calls tools, each call is answered with its tool's result
(or a note saying there is none), sent as ``{"tool_result": <tool_result.done item>}``, and the
model is called again, at most ``MAX_TOOL_ROUNDS`` calls a turn. Malformed requests, a model
that cannot be called and a busy session are refused before the stream as ``{"error": text}``
(400, 409, 503).

``POST /api/abort`` aborts the session's call in flight (an ``AbortSignal`` per call):
``{"status": "aborted" | "idle"}``. ``POST /api/clear`` aborts it too and empties the
session's history: ``{"status": "cleared"}``. ``POST /api/history`` gives the session's
history, ``{"messages": [<message in wire form>, ...]}`` (none without a session), which the
page shows again when it is reloaded.

Sessions
--------
A browser's session is named by the cookie ``mmsp_playground_session`` (``HttpOnly``,
``SameSite=Strict``), set by its first chat. A session holds its history, which survives
changes of model and config (it is given to each call's client), and at most one call in
flight. At most ``max_sessions`` are held (a new one evicts the idle session used least
recently; when all are in a call, 503) and each answers at most ``max_turns`` messages (then
409 until cleared). A request body is at most 1 MiB.

Protections
-----------
Every answer carries the trace page's content security policy (``traces.SECURITY_HEADERS``:
scripts, styles and connections only to the page's own origin); a server bound to a loopback
address answers only a ``Host`` naming a loopback host (DNS rebinding); the ``/api/`` routes
take only ``POST`` with a JSON content type (which a page of another origin cannot send
without a CORS preflight the playground never grants) and refuse a request whose ``Origin``
is not the playground's own. Text of a model or a trace reaches the page only as DOM text
nodes (the markdown subset is rendered by ``traces/markdown.js`` into elements, never markup).

Modules: ``_app`` (``Playground``: the routes and the chat stream), ``_models`` (the model
sources and each choice's client), ``_sessions`` (the bounded sessions).
"""

from __future__ import annotations

import os
from typing import Final, TextIO

import anyio

from ._app import DEFAULT_HOST, DEFAULT_PORT, MAX_TOOL_ROUNDS, TRACES_PREFIX, Playground

#: Seconds the command's simulator waits before each write: a pace at which a reader sees the
#: answer stream in.
SIMULATOR_DELAY: Final = 0.02

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "MAX_TOOL_ROUNDS", "SIMULATOR_DELAY", "TRACES_PREFIX",
           "Playground", "run"]


async def run(trace_root: str | os.PathLike[str], host: str, port: int, out: TextIO) -> int:
    """Serve the playground until cancelled (Ctrl-C); write its address to ``out`` first;
    return the exit status, 0.

    Raises:
        OSError: a port cannot be bound.
    """
    playground = Playground(trace_root, simulator_delay=SIMULATOR_DELAY)
    async with playground.running(host=host, port=port, grace=1.0) as server:
        out.write(f"Playground at {server.url}/ (traces of {playground.trace_root} at "
                  f"{server.url}{TRACES_PREFIX}/; Ctrl-C to stop)\n")
        out.flush()
        await anyio.sleep_forever()
    return 0
