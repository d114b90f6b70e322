"""How an OpenAI Responses provider speaks, for the provider simulator (08 D63).

``POST /v1/responses`` (the base URL ends in ``/v1``, spec 04 §4), the key as a Bearer token
only, OpenAI's error bodies (``adapters._openai.error_body``) and an ``event: error`` for an
in-stream failure (08 D4). Azure OpenAI serves it too (``adapters._openai.with_azure``,
08 D72).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._openai import error_body, with_azure
from .._schema_answer import answer_schema, member
from .._simulate import text_parts
from .._spec import SimulatorDialect, Turn

__all__ = ["DIALECT", "read_turn"]


def read_turn(body: Mapping[str, Any]) -> Turn:
    """The last user text, the tools offered, the tool results since that text and the
    schema of the answer (``text.format``) of a Responses request."""
    question, results = "", list[str]()
    entries = body.get("input") or ()
    for entry in [{"role": "user", "content": entries}] if isinstance(entries, str) else entries:
        if entry.get("role") == "user" and (
            texts := text_parts(entry.get("content"), ("input_text",))
        ):
            question, results = "".join(texts), []
        elif entry.get("type") == "function_call_output":
            results.append("".join(text_parts(entry.get("output"), ("input_text",))))
    tools = tuple(
        (tool["name"], tool.get("parameters") or {})
        for tool in body.get("tools") or ()
        if tool.get("type") == "function" and "name" in tool
    )
    answer_format = member(body, "text", "format")
    schema = answer_schema(
        answer_format.get("type") in ("json_schema", "json_object"), answer_format.get("schema")
    )
    return Turn(question, tools, tuple(results), answer_schema=schema)


DIALECT: Final = with_azure(SimulatorDialect(
    route=("POST", r"/v1/responses"),
    base_path="/v1",
    key_headers=("authorization",),
    request_id_header="x-request-id",
    error_body=error_body,
    bad_key_message="Invalid API key.",
    stream_error=b'event: error\ndata: {"type":"error","code":"server_error",'
    b'"message":"The server had an error while processing your request.","param":null}\n\n',
    read_turn=read_turn,
    tool_call_id_prefix="call_sim_",
    content_type="text/event-stream; charset=utf-8",
    ping=b'event: keepalive\ndata: {"type":"keepalive","sequence_number":0}\n\n',
))
