"""Reading a provider's JSON error body (08 D19), by the shape its protocol's record gives.

A non-2xx answer's body says what went wrong: a type, a message and sometimes a request id, at
places that differ per protocol (``Traits.error_shape``). ``read_error_body`` reads them and
never raises (08 D59): a body that is not JSON, is nested too deeply for the parser, or holds
none of the fields gives ``None`` fields, or a short preview of its text as the message.
"""

from __future__ import annotations

from typing import Any

from mmsp_core.errors import preview

from ._json import BadField, loads
from ._registry import CLIENTS, canonical_client_type, protocol_traits
from ._spec import ErrorShape, JsonPath

__all__ = ["read_error_body"]

_DEFAULT_SHAPE = ErrorShape()


def read_error_body(client_type: str, body: bytes) -> tuple[str | None, str | None, str | None]:
    """Return ``(error_type, message, request_id)`` of an error body of ``client_type``.

    The fields are read at the paths of the client's protocol's ``ErrorShape``; a client type
    the registry does not know reads with the default shape. A document that is a one-element
    list (Google) is read as its element. A body that is not a JSON object becomes
    ``(None, preview of its text, None)`` (``None`` message when it is empty).

    Raises nothing: any bytes give a result (08 D59).
    """
    text = body.decode("utf-8", "replace").strip()
    try:
        document = loads(text)
    except BadField:
        return None, (preview(text) if text else None), None
    if isinstance(document, list) and document:
        document = document[0]
    if not isinstance(document, dict):
        return None, preview(text), None
    shape = _shape(client_type)
    return (
        _first(document, shape.error_type),
        _first(document, shape.message),
        _first(document, shape.request_id),
    )


def _shape(client_type: str) -> ErrorShape:
    canonical = canonical_client_type(client_type)
    if canonical is None:
        return _DEFAULT_SHAPE
    return protocol_traits(CLIENTS[canonical].protocol).error_shape


def _first(document: dict[str, Any], paths: tuple[JsonPath, ...]) -> str | None:
    """The first of ``paths`` that leads to a non-empty scalar, as text."""
    for path in paths:
        value: Any = document
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if text := _text(value):
            return text
    return None


def _text(value: Any) -> str | None:
    """A JSON scalar as text; ``None`` for null, booleans, empty strings and containers."""
    if value is None or isinstance(value, bool | dict | list):
        return None
    return str(value) or None
