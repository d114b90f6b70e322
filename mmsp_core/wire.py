"""MMSP JSON: values to and from the exact wire shape of the seeds (08 D3, 09).

``to_wire`` turns any value (event, message, item, usage, config, error) into a JSON-ready
``dict``; the ``*_from_wire`` functions, defined in ``mmsp_core._wire_read`` and exported here,
read them back. Bytes travel as base64 text, tuples as lists, an absent ``fidelity`` (or
``images``) as an absent key. Readers check every field and raise
``WireFormatError(path, reason)`` naming the field path, and nothing else, whatever JSON value
they are given (08 D59).

Errors travel as ``{"error": {"type", "message", **fields}}`` (spec 03 §3).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import attrs

from ._config_read import MAX_STOP_SEQUENCES, MAX_TOKENS_LIMIT, SEED_RANGE, config_from_wire
from ._wire_read import (
    error_from_wire,
    event_from_wire,
    item_from_wire,
    message_from_wire,
    usage_from_wire,
)
from .errors import MMSPError, fields_of
from .model import ITEM_CLASSES, Item, UniConfig, UniEvent, UniMessage, UsageMetadata

__all__ = [
    "MAX_STOP_SEQUENCES",
    "MAX_TOKENS_LIMIT",
    "SEED_RANGE",
    "config_from_wire",
    "error_from_wire",
    "event_from_wire",
    "item_from_wire",
    "message_from_wire",
    "to_wire",
    "usage_from_wire",
]


def to_wire(value: Any) -> dict[str, Any]:
    """Return the MMSP JSON object of an event, message, item, usage, config or error.

    Raises:
        TypeError: ``value`` is not an MMSP value or error.
    """
    if isinstance(value, UniEvent):
        return {
            "role": value.role,
            "event_type": value.event_type,
            "content_items": [_item_to_wire(i) for i in value.content_items],
            "usage_metadata": _usage_to_wire(value.usage_metadata),
            "finish_reason": None if value.finish_reason is None else str(value.finish_reason),
            "created_at": value.created_at,
        }
    if isinstance(value, UniMessage):
        out: dict[str, Any] = {
            "role": value.role,
            "content_items": [_item_to_wire(i) for i in value.content_items],
        }
        if value.usage_metadata is not None:
            out["usage_metadata"] = _usage_to_wire(value.usage_metadata)
        if value.finish_reason is not None:
            out["finish_reason"] = str(value.finish_reason)
        if value.created_at is not None:
            out["created_at"] = value.created_at
        return out
    if isinstance(value, UsageMetadata):
        return _usage_dict(value)
    if isinstance(value, UniConfig):
        return _config_to_wire(value)
    if isinstance(value, MMSPError):
        return {"error": _error_to_wire(value)}
    if ITEM_CLASSES.get(getattr(value, "type", None)) is type(value):  # type: ignore[arg-type]
        return _item_to_wire(value)
    raise TypeError(f"to_wire cannot encode {type(value).__name__}")


def _usage_to_wire(usage: UsageMetadata | None) -> dict[str, Any] | None:
    return None if usage is None else _usage_dict(usage)


def _usage_dict(usage: UsageMetadata) -> dict[str, Any]:
    return {
        "cached_tokens": usage.cached_tokens,
        "prompt_tokens": usage.prompt_tokens,
        "thoughts_tokens": usage.thoughts_tokens,
        "response_tokens": usage.response_tokens,
    }


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _item_to_wire(item: Item) -> dict[str, Any]:
    out: dict[str, Any] = {"type": item.type}
    for field in attrs.fields(type(item)):
        name = field.name
        value = getattr(item, name)
        if name in ("fidelity", "images") and value is None:
            continue
        if isinstance(value, bytes):
            value = _b64(value)
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        out[name] = value
    return out


def _config_to_wire(config: UniConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in attrs.fields(UniConfig):
        value = getattr(config, field.name)
        if field.name == "extra" or value is None:
            continue
        out[field.name] = _plain(value)
    out.update(config.extra)
    return out


def _plain(value: Any) -> Any:
    """Attrs values, enums and tuples as plain JSON values."""
    if isinstance(value, str):
        return str(value)
    if attrs.has(type(value)):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in attrs.fields(type(value))
            if getattr(value, f.name) is not None
        }
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _error_to_wire(exc: MMSPError) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    for name, value in fields_of(exc).items():
        if isinstance(value, UsageMetadata):
            out[name] = _usage_to_wire(value)
        else:
            out[name] = _plain(value)
    return out
