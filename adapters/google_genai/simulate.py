"""How the Gemini API speaks generateContent, for the provider simulator (08 D63).

``POST /v1/models/{model}:streamGenerateContent`` at the origin (the ``?alt=sse`` query is not
part of the route; spec 04 §4), the key in ``x-goog-api-key`` only (08 D17), Google's
``{"error": {"code", "message", "status"}}`` error bodies and ``GET /v1/models`` list
(``adapters._google.shapes``), and a chunk holding an ``error`` object for an in-stream
overload (08 D4). Vertex AI serves it too (``VERTEX``, 08 D72): its ``v1beta1`` path under a
project, an OAuth bearer token instead of the key (which the simulator's token endpoint
issues), and no model list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from .._google import shapes
from .._google.vertex import BAD_TOKEN_MESSAGE, route_pattern
from .._schema_answer import answer_schema, member
from .._spec import SimulatorDialect, Turn

__all__ = ["DIALECT", "VERTEX", "read_turn"]


def _texts(parts: Any) -> list[str]:
    """The texts of a content's non-thought ``parts``."""
    if not isinstance(parts, list):
        return []
    return [
        part["text"]
        for part in parts
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        and not part.get("thought")
    ]


def read_turn(body: Mapping[str, Any]) -> Turn:
    """The last user text, the tools offered, the tool results since that text and the
    schema of the answer (a JSON ``responseMimeType``) of a generateContent request."""
    question, results = "", list[str]()
    for content in body.get("contents") or ():
        if not isinstance(content, Mapping) or content.get("role") != "user":
            continue
        parts = content.get("parts")
        if texts := _texts(parts):
            question, results = "".join(texts), []
        for part in parts if isinstance(parts, list) else ():
            response = part.get("functionResponse") if isinstance(part, Mapping) else None
            if isinstance(response, Mapping):
                result = (response.get("response") or {}).get("result")
                results.append(result if isinstance(result, str) else "")
    tools = tuple(
        (declaration["name"], declaration.get("parameters") or {})
        for tool in body.get("tools") or ()
        for declaration in tool.get("functionDeclarations") or ()
        if "name" in declaration
    )
    generation = member(body, "generationConfig")
    schema = answer_schema(
        generation.get("responseMimeType") == "application/json",
        generation.get("responseJsonSchema") or generation.get("responseSchema"),
    )
    return Turn(question, tools, tuple(results), answer_schema=schema)


_GEMINI_API: Final = SimulatorDialect(
    route=("POST", r"/v1/models/[^/:]+:streamGenerateContent"),
    base_path="",
    key_headers=("x-goog-api-key",),
    request_id_header="x-request-id",
    error_body=shapes.error_body,
    bad_key_message="API key not valid. Please pass a valid API key.",
    stream_error=b'data: {"error": {"code": 503, "message": "The model is overloaded. '
    b'Please try again later.", "status": "UNAVAILABLE"}}\r\n\r\n',
    read_turn=read_turn,
    tool_call_id_prefix="call_sim_",
    content_type="text/event-stream",
    model_list=shapes.model_list_body,
    ping=b"data: {}\r\n\r\n",  # a chunk with neither candidates nor usage (06 §4)
)

#: Vertex AI's endpoint of the protocol (08 D72).
VERTEX: Final = attrs.evolve(
    _GEMINI_API, route=("POST", route_pattern("streamGenerateContent")), key_headers=(),
    bad_key_message=BAD_TOKEN_MESSAGE, model_list=None,
)
DIALECT: Final = attrs.evolve(_GEMINI_API, vertex=VERTEX)
