"""Typed accessors for the JSON a machine reads from the wire (08 D59).

A provider may send any JSON value in any field. Handlers never index a wire object directly:
they read each field through these accessors, which return the value when it has the JSON type
the handler needs and raise ``BadField`` when it does not. The machine kernel
(``adapters._table``) turns ``BadField`` into ``MalformedEventError`` at that event, so a
handler needs no ``try`` of its own.

"Exactly of the type" is meant literally: JSON decodes to exact ``dict``, ``list``, ``str``,
``int``, ``float`` and ``bool`` values, and the exact test keeps a ``bool`` from passing for an
``int``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NoReturn, TypeVar

from mmsp_core import jsonlib

__all__ = [
    "BadField",
    "integer",
    "loads",
    "loads_object",
    "nests_within",
    "numbers",
    "obj",
    "opt_array",
    "opt_integer",
    "opt_obj",
    "opt_string",
    "string",
]

_T = TypeVar("_T")

_JSON_NAMES: Final[Mapping[type, str]] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
}


class BadField(Exception):
    """A wire field is missing or has the wrong JSON type; the kernel reports it as
    ``MalformedEventError`` with this text as ``detail``."""


def loads(text: str) -> Any:
    """Parse ``text`` as JSON.

    Raises:
        BadField: it is not JSON, or is nested too deeply for the parser.
    """
    try:
        return jsonlib.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _not_json(exc) from None


def loads_object(text: str) -> dict[str, Any]:
    """Parse ``text`` as one JSON object.

    Raises:
        BadField: it is not JSON, or not an object.
    """
    try:  # ``loads`` without the call through it: once per event (the hot path)
        value = jsonlib.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _not_json(exc) from None
    if type(value) is not dict:
        raise BadField("data is not a JSON object")
    return value


def _not_json(exc: Exception) -> BadField:
    """The error of a text the parser refused (``exc``: ``ValueError`` or ``RecursionError``)."""
    return BadField(f"data is not JSON: {type(exc).__name__}")


def _typed(key: str, kind: type[_T], value: Any) -> _T:
    if type(value) is kind:
        return value
    return _bad(key, kind)


def _bad(key: str, kind: type) -> NoReturn:
    raise BadField(f"{key!r} must be {_JSON_NAMES[kind]}")


def obj(container: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``container[key]``, which must be a JSON object. Raises ``BadField``."""
    value = container.get(key)
    return value if type(value) is dict else _bad(key, dict)


def opt_obj(container: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """``container[key]`` as an object, ``None`` when absent or null. Raises ``BadField``."""
    value = container.get(key)
    return value if value is None or type(value) is dict else _bad(key, dict)


def opt_array(container: Mapping[str, Any], key: str) -> list[Any] | None:
    """``container[key]`` as an array, ``None`` when absent or null. Raises ``BadField``."""
    value = container.get(key)
    return value if value is None or type(value) is list else _bad(key, list)


def string(container: Mapping[str, Any], key: str) -> str:
    """``container[key]``, which must be a JSON string. Raises ``BadField``."""
    value = container.get(key)
    return value if type(value) is str else _bad(key, str)


def opt_string(container: Mapping[str, Any], key: str) -> str | None:
    """``container[key]`` as a string, ``None`` when absent or null. Raises ``BadField``."""
    value = container.get(key)
    return value if value is None or type(value) is str else _bad(key, str)


def integer(container: Mapping[str, Any], key: str) -> int:
    """``container[key]``, which must be a JSON integer (not a bool). Raises ``BadField``."""
    value = container.get(key)
    return value if type(value) is int else _bad(key, int)


def opt_integer(container: Mapping[str, Any], key: str) -> int | None:
    """``container[key]`` as an integer, ``None`` when absent or null. Raises ``BadField``."""
    value = container.get(key)
    return value if value is None or type(value) is int else _bad(key, int)


def numbers(container: Mapping[str, Any], key: str) -> tuple[float, ...]:
    """``container[key]``, which must be a JSON array of numbers, as floats (an embedding
    vector). Raises ``BadField`` for anything else, or an integer too large for a float."""
    values = _typed(key, list, container.get(key))
    if all(type(value) is float for value in values):
        return tuple(values)
    try:
        return tuple(_number(key, value) for value in values)
    except OverflowError:
        raise BadField(f"{key!r} holds an integer too large for a float") from None


def _number(key: str, value: Any) -> float:
    if type(value) is float or type(value) is int:
        return float(value)
    raise BadField(f"{key!r} must be an array of numbers")


def nests_within(value: Any, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests at most ``limit`` objects and arrays deep.

    The walk keeps its own stack, so no nesting exhausts Python's: a value the parser took may
    still be too deep for the recursive code that reads it later (``redact_error``, ``repr``).
    """
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if type(node) is dict:
            children: Any = node.values()
        elif type(node) is list:
            children = node
        else:
            continue
        if depth == limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True
