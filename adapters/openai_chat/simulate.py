"""How an OpenAI Chat Completions provider speaks, for the provider simulator (08 D63).

``POST /v1/chat/completions`` (the base URL ends in ``/v1``, spec 04 §4), the key as a Bearer
token only, ``{"error": {"message", "type", "param", "code"}}`` error bodies with an
``x-request-id`` header (``adapters._openai.error_body``, shared with the other OpenAI APIs),
and a ``data:`` chunk holding an ``error`` for an in-stream overload (08 D4). Azure OpenAI
serves it too (``adapters._openai.with_azure``, 08 D72), with Azure's content-filter
annotations on its chunks (``azure_annotations``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from .._json import loads_object
from .._openai import error_body, with_azure
from .._schema_answer import answer_schema, member
from .._simulate import text_parts
from .._spec import SimulatorDialect, Turn

__all__ = ["DIALECT", "azure_annotations", "read_turn"]

#: Azure's verdict on a prompt or a completion its content filters let through.
_PASSED: Final = {
    name: {"filtered": False, "severity": "safe"}
    for name in ("hate", "self_harm", "sexual", "violence")
}
#: Azure's first chunk: the prompt's verdict, with no choices and empty ids.
_PROMPT_FILTER_CHUNK: Final = json.dumps({
    "choices": [], "created": 0, "id": "", "model": "", "object": "",
    "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": _PASSED}],
}).encode()


def read_turn(body: Mapping[str, Any]) -> Turn:
    """The last user text, the tools offered, the tool results since that text and the
    schema of the answer (``response_format``) of a Chat request."""
    question, results = "", list[str]()
    for message in body.get("messages") or ():
        role, content = message.get("role"), message.get("content")
        if role == "user" and (texts := text_parts(content, ("text",))):
            question, results = "".join(texts), []
        elif role == "tool":
            results.append("".join(text_parts(content, ("text",))))
    tools = tuple(
        (tool["function"]["name"], tool["function"].get("parameters") or {})
        for tool in body.get("tools") or ()
        if "name" in tool.get("function", {})
    )
    answer_format = member(body, "response_format")
    schema = answer_schema(
        answer_format.get("type") in ("json_schema", "json_object"),
        member(answer_format, "json_schema").get("schema"),
    )
    return Turn(question, tools, tuple(results), answer_schema=schema)


def azure_annotations(body: bytes) -> bytes:
    """A Chat stream as Azure OpenAI sends it: first a chunk of ``prompt_filter_results``
    and no choices, then each chunk with ``content_filter_results`` on every choice: fields
    the Chat machine ignores, as it ignores every chunk field it does not read."""
    def annotate(match: re.Match[bytes]) -> bytes:
        chunk = loads_object(match.group(1).decode())
        for choice in chunk.get("choices") or ():
            choice["content_filter_results"] = _PASSED
        return b"data: " + json.dumps(chunk).encode()

    return b"data: " + _PROMPT_FILTER_CHUNK + b"\n\n" + re.sub(
        rb"^data: (\{.*\})$", annotate, body, flags=re.MULTILINE
    )


_OPENAI: Final = SimulatorDialect(
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
DIALECT: Final = with_azure(_OPENAI, annotate=azure_annotations)
