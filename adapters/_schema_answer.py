"""A JSON answer valid for a JSON Schema: what the simulator answers a request for structured
output with (08 D74). Pure.

The schemas followed are those of a small subset: objects (``properties``, ``required``,
``additionalProperties``), arrays (``items``), strings, numbers, integers, booleans, null,
``enum`` and ``const`` at any level, a list of types (the first is used), and the annotations
(``title``, ``description``, ``$schema``, ``default``, ``examples``). A schema with any other
keyword (``anyOf``, ``$ref``, ``pattern``, ``minItems``, ...) or nested deeper than
``MAX_SCHEMA_DEPTH`` is outside the subset, and its answer is a JSON object (``{}``), as it is
for a ``json_object`` format.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["MAX_SCHEMA_DEPTH", "answer_for", "answer_schema", "member", "value_for"]

#: How deeply nested a followed schema may be (an object in an object ... counts one each).
MAX_SCHEMA_DEPTH: Final = 64

_ANNOTATIONS: Final = frozenset({"title", "description", "$schema", "default", "examples"})
_KEYWORDS: Final = _ANNOTATIONS | {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
}
#: The value answered for each type.
_SCALARS: Final[Mapping[str, Any]] = {
    "string": "text", "number": 1, "integer": 1, "boolean": True, "null": None,
}


class _Outside(Exception):
    """The schema is outside the subset."""


def value_for(schema: Any) -> Any:
    """A JSON value valid for ``schema``, or ``{}`` when ``schema`` is outside the subset (a
    JSON object, so the answer to any schema is JSON an ``application/json`` caller reads).

    Never raises, whatever ``schema`` is.
    """
    try:
        return _value(schema, 0)
    except _Outside:
        return {}


def answer_for(schema: Any) -> str:
    """``value_for(schema)`` as JSON text, non-ASCII kept: the text of the answer (``schema``
    is parsed JSON, so its ``enum`` and ``const`` values are JSON too)."""
    return json.dumps(value_for(schema), ensure_ascii=False)


def member(value: Any, *path: str) -> Mapping[str, Any]:
    """The object at ``path`` inside the JSON object ``value``; ``{}`` where there is none (a
    request's fields are read leniently: any shape gives an answer)."""
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def answer_schema(json_asked: bool, schema: Any) -> Mapping[str, Any] | None:
    """What a request's answer must follow, as ``Turn.answer_schema`` holds it: ``schema``
    when JSON was asked with one, ``{}`` (any JSON object) when without, ``None`` when no JSON
    was asked."""
    if not json_asked:
        return None
    return schema if isinstance(schema, Mapping) else {}


def _value(schema: Any, depth: int) -> Any:
    """The value for one schema.

    Raises:
        _Outside: a keyword or a shape outside the subset, or nesting past the limit.
    """
    if depth > MAX_SCHEMA_DEPTH or not isinstance(schema, Mapping) or set(schema) - _KEYWORDS:
        raise _Outside
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if enum is not None:
        if not isinstance(enum, list) or not enum:
            raise _Outside
        return enum[0]
    kind = _type_of(schema)
    if kind == "object":
        return _object(schema, depth)
    if kind == "array":
        items = schema.get("items")
        return [] if items is None else [_value(items, depth + 1)]
    if kind not in _SCALARS:
        raise _Outside
    return _SCALARS[kind]


def _type_of(schema: Mapping[str, Any]) -> str:
    """The type answered: ``type`` (the first of a list), else what the keywords imply."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind is None:
        return "array" if "items" in schema else "object"
    if not isinstance(kind, str):
        raise _Outside
    return kind


def _object(schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
    """Every property of ``schema`` with its value; a required name without a schema of its
    own takes ``null`` (any value is valid for it)."""
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        raise _Outside
    out = {str(name): _value(sub, depth + 1) for name, sub in properties.items()}
    for name in required:
        if not isinstance(name, str):
            raise _Outside
        out.setdefault(name, None)
    return out
