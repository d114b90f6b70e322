"""How Gemini's embedding endpoint answers, for the provider simulator (08 D63, D64).

``POST /v1/models/{model}:batchEmbedContents`` (the base URL is the bare origin, spec 04 §4),
the key in ``x-goog-api-key``, Google's error bodies (``adapters._google.shapes``), one
JSON body as the answer, and an answer holding Google's ``error`` object as the overload
(08 D4). ``read_turn`` gives the demo script the text of each request entry, whose vectors are
the answer. Vertex AI serves it too (``VERTEX``, 08 D72): ``:embedContent`` of one content
under a project, an OAuth bearer token instead of the key, and the answer's one ``embedding``
with its ``statistics.tokenCount`` (``vertex_answer``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import attrs

from adapters._google.shapes import error_body
from adapters._google.vertex import BAD_TOKEN_MESSAGE, route_pattern
from mmsp_core.request import encode_json_body

from .._simulate import dimensions
from .._spec import SimulatorDialect, Turn

__all__ = ["DIALECT", "VERTEX", "read_turn", "vertex_answer"]


def read_turn(body: Mapping[str, Any]) -> Turn:
    """The text of each entry of a ``batchEmbedContents`` request (its ``text`` parts), in
    order, and the ``outputDimensionality`` of its first entry (the builder gives each the
    same)."""
    inputs, sizes = [], []
    for entry in body.get("requests") or ():
        content = entry.get("content") if isinstance(entry, Mapping) else None
        parts = content.get("parts") if isinstance(content, Mapping) else None
        inputs.append("".join(
            part["text"] for part in parts if isinstance(part, Mapping)
            and isinstance(part.get("text"), str)
        ) if isinstance(parts, list) else "")
        sizes.append(entry.get("outputDimensionality") if isinstance(entry, Mapping) else None)
    return Turn(inputs[-1] if inputs else "", (), (), tuple(inputs),
                dimensions(sizes[0] if sizes else None))


def read_vertex_turn(body: Mapping[str, Any]) -> Turn:
    """The text of an ``embedContent`` request's one ``content`` and its
    ``outputDimensionality``."""
    return read_turn({"requests": [body]})


def vertex_answer(body: bytes) -> bytes:
    """A ``batchEmbedContents`` answer (``render``'s) as Vertex's ``embedContent`` answer: its
    first embedding, with the prompt count as ``statistics.tokenCount`` (a JSON number with a
    fraction part, as Vertex writes it)."""
    batch = json.loads(body)
    embeddings = batch.get("embeddings") or [{}]
    embedding: dict[str, Any] = {"values": embeddings[0].get("values", [])}
    count = (batch.get("usageMetadata") or {}).get("promptTokenCount")
    if count is not None:
        embedding["statistics"] = {"tokenCount": float(count), "truncated": False}
    return encode_json_body({"embedding": embedding})


_GEMINI_API: Final = SimulatorDialect(
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

#: Vertex AI's endpoint of the protocol (08 D72).
VERTEX: Final = attrs.evolve(
    _GEMINI_API, route=("POST", route_pattern("embedContent")), key_headers=(),
    bad_key_message=BAD_TOKEN_MESSAGE, read_turn=read_vertex_turn, annotate=vertex_answer,
)
DIALECT: Final = attrs.evolve(_GEMINI_API, vertex=VERTEX)
