"""How Gemini's embedding endpoint answers, for the provider simulator (08 D63, D64).

``POST /v1/models/{model}:batchEmbedContents`` (the base URL is the bare origin, spec 04 §4),
the key in ``x-goog-api-key``, Google's error bodies (``adapters._google.shapes``), one
JSON body as the answer, and an answer holding Google's ``error`` object as the overload
(08 D4). ``read_turn`` gives the demo script the text of each request entry, whose vectors are
the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from adapters._google.shapes import error_body

from .._spec import SimulatorDialect, Turn

__all__ = ["DIALECT", "read_turn"]


def read_turn(body: Mapping[str, Any]) -> Turn:
    """The text of each entry of a ``batchEmbedContents`` request (its ``text`` parts), in
    order."""
    inputs = []
    for entry in body.get("requests") or ():
        content = entry.get("content") if isinstance(entry, Mapping) else None
        parts = content.get("parts") if isinstance(content, Mapping) else None
        inputs.append("".join(
            part["text"] for part in parts if isinstance(part, Mapping)
            and isinstance(part.get("text"), str)
        ) if isinstance(parts, list) else "")
    return Turn(inputs[-1] if inputs else "", (), (), tuple(inputs))


DIALECT: Final = SimulatorDialect(
    route=("POST", r"/v1/models/[^/]+:batchEmbedContents"),
    base_path="",
    key_headers=("x-goog-api-key",),
    request_id_header="x-request-id",
    error_body=error_body,
    bad_key_message="API key not valid. Please pass a valid API key.",
    stream_error=b'{"error":{"code":503,"message":"The model is overloaded. Please try again '
    b'later.","status":"UNAVAILABLE"}}',
    read_turn=read_turn,
    tool_call_id_prefix="sim_call_",
    content_type="application/json; charset=UTF-8",
    demo_model="sim-embedding",
)
