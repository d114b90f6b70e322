"""How an OpenAI Chat Completions provider speaks, for the provider simulator (08 D63).

``POST /v1/chat/completions`` (the base URL ends in ``/v1``, spec 04 §4), the key as a Bearer
token only, ``{"error": {"message", "type", "param", "code"}}`` error bodies with an
``x-request-id`` header (``adapters._openai.error_body``, shared with the other OpenAI APIs),
and a ``data:`` chunk holding an ``error`` for an in-stream overload (08 D4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._openai import error_body
from .._simulate import text_parts
from .._spec import SimulatorDialect, Turn

__all__ = ["DIALECT", "read_turn"]


def read_turn(body: Mapping[str, Any]) -> Turn:
    """The last user text, the tools offered and the tool results of a Chat request."""
    question, results = "", []
    for message in body.get("messages") or ():
        role, content = message.get("role"), message.get("content")
        if role == "user" and (texts := text_parts(content, ("text",))):
            question = "".join(texts)
        elif role == "tool":
            results.append("".join(text_parts(content, ("text",))))
    tools = tuple(
        (tool["function"]["name"], tool["function"].get("parameters") or {})
        for tool in body.get("tools") or ()
        if "name" in tool.get("function", {})
    )
    return Turn(question, tools, tuple(results))


DIALECT: Final = SimulatorDialect(
    route=("POST", r"/v1/chat/completions"),
    base_path="/v1",
    key_headers=("authorization",),
    request_id_header="x-request-id",
    error_body=error_body,
    bad_key_message="Invalid API key.",
    stream_error=b'data: {"error":{"message":"The server is overloaded.",'
    b'"type":"server_error","code":"overloaded"}}\n\n',
    read_turn=read_turn,
    tool_call_id_prefix="call_sim_",
    content_type="text/event-stream; charset=utf-8",
)
