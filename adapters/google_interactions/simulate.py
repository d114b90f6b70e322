"""How the Gemini Interactions API speaks, for the provider simulator (08 D63).

``POST /v1/interactions`` at the origin (spec 04 §4), the key in ``x-goog-api-key`` only
(08 D17), Google's error bodies and model list (``adapters._google.shapes``, shared with
generateContent: ``GET /v1/models`` gives ``models[].name``, 04 §5) and an ``error`` event for
an in-stream overload (08 D4).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._google.shapes import error_body, model_list_body
from .._schema_answer import answer_schema
from .._simulate import text_parts
from .._spec import SimulatorDialect, Turn

__all__ = ["DIALECT", "read_turn"]


def read_turn(body: Mapping[str, Any]) -> Turn:
    """The last user text, the tools offered, the tool results since that text and the
    schema of the answer (``response_format``) of an Interactions request.

    ``input`` is a list of steps (or a plain string): the text blocks of the last
    ``user_input`` step are the question, each ``function_result`` step's text a tool result.
    """
    question, results = "", list[str]()
    steps = body.get("input") or ()
    if isinstance(steps, str):
        steps = [{"type": "user_input", "content": [{"type": "text", "text": steps}]}]
    for step in steps:
        if not isinstance(step, Mapping):
            continue
        if step.get("type") == "user_input" and (
            texts := text_parts(step.get("content"), ("text",))
        ):
            question, results = "".join(texts), []
        elif step.get("type") == "function_result":
            results.append("".join(text_parts(step.get("result"), ("text",))))
    tools = tuple(
        (tool["name"], tool.get("parameters") or {})
        for tool in body.get("tools") or ()
        if tool.get("type") == "function" and "name" in tool
    )
    return Turn(question, tools, tuple(results), answer_schema=_answer_schema(body))


def _answer_schema(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The schema of the answer: the text entry of ``response_format`` (alone, or in a list
    beside an image entry) with ``mime_type: application/json``."""
    entries = body.get("response_format")
    for entry in entries if isinstance(entries, list) else [entries]:
        if isinstance(entry, Mapping) and entry.get("type") == "text":
            return answer_schema(entry.get("mime_type") == "application/json", entry.get("schema"))
    return None


DIALECT: Final = SimulatorDialect(
    route=("POST", r"/v1/interactions"),
    base_path="",
    key_headers=("x-goog-api-key",),
    request_id_header="x-request-id",
    error_body=error_body,
    bad_key_message="API key not valid. Please pass a valid API key.",
    stream_error=b'data: {"event_type":"error","error":{"code":503,'
    b'"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}\n\n',
    read_turn=read_turn,
    tool_call_id_prefix="call_sim_",
    content_type="text/event-stream",
    model_list=model_list_body,
)
