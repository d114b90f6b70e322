"""MMSP JSON back to values: the readers ``mmsp_core.wire`` exports (08 D3, D59, 09).

Each reader checks every field and raises ``WireFormatError(path, reason)`` naming the field
path (``content_items[0].text``), and nothing else, whatever JSON value it is given (08 D59): a
value is used as a key only once it is known to be a string, and a reason shows a wrong value
only when it is a short scalar (``_shown``), never by ``repr`` of a container that may be
nested arbitrarily deep. Bytes arrive as base64 text, lists become tuples, and errors arrive
as ``{"error": {"type", "message", **fields}}`` (spec 03 §3). The config's reader is
``_config_read``'s, built on the field readers here.
"""

from __future__ import annotations

import base64
import binascii
import enum
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import attrs

from ._construct import delta_event, text_fragment, tool_call_fragment
from .errors import ERROR_CLASSES, MMSPError, UpstreamError, WireFormatError, preview
from .model import (
    DoneItem,
    EmbeddingDelta,
    EmbeddingDone,
    FinishReason,
    ImageUrlDone,
    InlineDataDelta,
    InlineDataDone,
    InlineThinkingDelta,
    InlineThinkingDone,
    Item,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    ToolResultDone,
    UniEvent,
    UniMessage,
    UsageMetadata,
)

__all__ = [
    "error_from_wire",
    "event_from_wire",
    "item_from_wire",
    "message_from_wire",
    "usage_from_wire",
]

_USAGE_KEYS: Final = ("cached_tokens", "prompt_tokens", "thoughts_tokens", "response_tokens")
_FINISH: Final[Mapping[str, FinishReason]] = {f.value: f for f in FinishReason}
_E = TypeVar("_E")
_S = TypeVar("_S", bound=enum.StrEnum)


# -- fields -------------------------------------------------------------------------------


def _fail(path: str, reason: str) -> WireFormatError:
    return WireFormatError(path, reason)


#: Integers with more bits than this are not written out in a reason (``repr`` of a huge
#: ``int`` is slow, and past 4,300 digits raises ``ValueError``).
_SHOWN_INT_BITS: Final = 64


def _shown(value: Any) -> str:
    """A short description of a wrong value for a reason: scalars as ``repr`` (strings
    shortened as spec 03 §2 says), containers by their JSON type only."""
    if value is None or type(value) in (bool, float):
        return repr(value)
    if type(value) is str:
        return preview(repr(value))
    if type(value) is int:
        return repr(value) if value.bit_length() <= _SHOWN_INT_BITS else "a very large integer"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _obj(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"expected an object, got {type(value).__name__}")
    return value


def _str(d: Mapping[str, Any], key: str, path: str) -> str:
    value = d.get(key)
    if type(value) is not str:
        if key not in d:
            raise _fail(f"{path}.{key}", "missing")
        raise _fail(f"{path}.{key}", f"expected a string, got {type(value).__name__}")
    return value


def _opt_int(d: Mapping[str, Any], key: str, path: str) -> int | None:
    value = d.get(key)
    if value is None or type(value) is int:
        return value
    raise _fail(f"{path}.{key}", f"expected an integer or null, got {type(value).__name__}")


def _bytes(d: Mapping[str, Any], key: str, path: str) -> bytes:
    text = _str(d, key, path)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _fail(f"{path}.{key}", f"invalid base64: {exc}") from None


def _fidelity(d: Mapping[str, Any], path: str) -> Mapping[str, Any] | None:
    value = d.get("fidelity")
    if value is None or type(value) is dict:
        return value
    raise _fail(f"{path}.fidelity", f"expected an object or null, got {type(value).__name__}")


def _float(value: int | float, path: str) -> float:
    """``float(value)``; a JSON integer too large for a float is a ``WireFormatError``."""
    try:
        return float(value)
    except OverflowError:
        raise _fail(path, "number out of range") from None


def _floats(d: Mapping[str, Any], key: str, path: str) -> tuple[float, ...]:
    value = d.get(key)
    if not isinstance(value, list):
        raise _fail(f"{path}.{key}", "expected a list of numbers")
    for i, x in enumerate(value):
        if type(x) not in (int, float):
            raise _fail(f"{path}.{key}[{i}]", "expected a number")
    if all(type(x) is float for x in value):
        return tuple(value)
    return tuple(_float(x, f"{path}.{key}[{i}]") for i, x in enumerate(value))


def _arguments(d: Mapping[str, Any], path: str) -> dict[str, Any]:
    value = d.get("arguments")
    if type(value) is not dict:
        raise _fail(f"{path}.arguments", "expected an object")
    return value


def _images(d: Mapping[str, Any], path: str) -> tuple[str, ...] | None:
    value = d.get("images")
    if value is None:
        return None
    if not isinstance(value, list) or not all(type(x) is str for x in value):
        raise _fail(f"{path}.images", "expected a list of strings")
    return tuple(value)


def _list_of(value: Any, path: str, read: Callable[[Any, str], _E]) -> tuple[_E, ...]:
    if not isinstance(value, list):
        raise _fail(path, "expected a list")
    return tuple(read(v, f"{path}[{i}]") for i, v in enumerate(value))


def _typed(kind: type | tuple[type, ...], name: str) -> Callable[[Any, str], Any]:
    def read(value: Any, path: str) -> Any:
        if type(value) is bool and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise _fail(path, f"expected {name}, got {_shown(value)}")
        if not isinstance(value, kind):
            raise _fail(path, f"expected {name}, got {_shown(value)}")
        return value

    return read


# -- items, events, messages --------------------------------------------------------------


def _text_delta(d: Mapping[str, Any], path: str) -> TextDelta:
    """A ``text.delta``: the fields of a good one are read at once (the hot path of the mmsp
    client's stream), a bad one by the checking readers, which name the fault."""
    text = d.get("text")
    if type(text) is str and d.get("fidelity") is None:
        return text_fragment(text)
    return TextDelta(_str(d, "text", path), _fidelity(d, path))


def _tool_call_delta(d: Mapping[str, Any], path: str) -> ToolCallDelta:
    """A ``tool_call.delta``, read as ``_text_delta`` reads its item: at once when it is a
    call's continuing fragment (empty name and id, no fidelity: 08 D29)."""
    arguments = d.get("arguments")
    if (type(arguments) is str and d.get("name") == "" and d.get("tool_call_id") == ""
            and d.get("fidelity") is None):
        return tool_call_fragment(arguments)
    return ToolCallDelta(
        _str(d, "name", path), _str(d, "tool_call_id", path), _str(d, "arguments", path),
        _fidelity(d, path),
    )


_ITEM_READERS: Final[Mapping[str, Callable[[Mapping[str, Any], str], Item]]] = {
    "text.delta": _text_delta,
    "text.done": lambda d, p: TextDone(_str(d, "text", p), _fidelity(d, p)),
    "thinking.delta": lambda d, p: ThinkingDelta(_str(d, "thinking", p), _fidelity(d, p)),
    "thinking.done": lambda d, p: ThinkingDone(_str(d, "thinking", p), _fidelity(d, p)),
    "tool_call.delta": _tool_call_delta,
    "tool_call.done": lambda d, p: ToolCallDone(
        _str(d, "name", p), _str(d, "tool_call_id", p), _arguments(d, p), _fidelity(d, p)
    ),
    "inline_data.delta": lambda d, p: InlineDataDelta(
        _bytes(d, "data", p), _str(d, "mime_type", p), _fidelity(d, p)
    ),
    "inline_data.done": lambda d, p: InlineDataDone(
        _bytes(d, "data", p), _str(d, "mime_type", p), _fidelity(d, p)
    ),
    "inline_thinking.delta": lambda d, p: InlineThinkingDelta(
        _bytes(d, "data", p), _str(d, "mime_type", p), _fidelity(d, p)
    ),
    "inline_thinking.done": lambda d, p: InlineThinkingDone(
        _bytes(d, "data", p), _str(d, "mime_type", p), _fidelity(d, p)
    ),
    "embedding.delta": lambda d, p: EmbeddingDelta(_floats(d, "embedding", p)),
    "embedding.done": lambda d, p: EmbeddingDone(_floats(d, "embedding", p)),
    "tool_result.done": lambda d, p: ToolResultDone(
        _str(d, "text", p), _str(d, "tool_call_id", p), _images(d, p)
    ),
    "image_url.done": lambda d, p: ImageUrlDone(_str(d, "image_url", p)),
}


def item_from_wire(d: Any, path: str = "item") -> Item:
    """Read one content item of either phase.

    Raises:
        WireFormatError: not an object, unknown ``type``, or a field of the wrong type.
    """
    obj = _obj(d, path)
    item_type = obj.get("type")
    reader = _ITEM_READERS.get(item_type) if isinstance(item_type, str) else None
    if reader is None:
        raise _fail(f"{path}.type", f"unknown content item type {_shown(item_type)}")
    return reader(obj, path)


def usage_from_wire(d: Any, path: str = "usage_metadata") -> UsageMetadata | None:
    """Read a usage object (``None`` stays ``None``); missing keys are ``None``.

    Raises:
        WireFormatError: not an object, or a count that is neither an integer nor null.
    """
    if d is None:
        return None
    obj = _obj(d, path)
    return UsageMetadata(*(_opt_int(obj, key, path) for key in _USAGE_KEYS))


def _finish(value: Any, path: str) -> FinishReason | None:
    if value is None:
        return None
    finish = _FINISH.get(value) if isinstance(value, str) else None
    if finish is None:
        raise _fail(path, f"expected one of {sorted(_FINISH)} or null, got {_shown(value)}")
    return finish


def _items(value: Any, path: str) -> tuple[Item, ...]:
    """Read a list of items. Each reader is given the path ``""``: the item's own path is
    written only into the error of a bad item, never for a good one (the hot path)."""
    if not isinstance(value, list):
        raise _fail(path, "expected a list")
    readers = _ITEM_READERS
    out: list[Item] = []
    for d in value:
        item_type = d.get("type") if type(d) is dict else None
        reader = readers.get(item_type) if isinstance(item_type, str) else None
        if reader is None:  # not an item: item_from_wire names the fault
            out.append(item_from_wire(d, f"{path}[{len(out)}]"))
            continue
        try:
            out.append(reader(d, ""))
        except WireFormatError as exc:
            raise _fail(f"{path}[{len(out)}]{exc.path}", exc.reason) from None
    return tuple(out)


def event_from_wire(d: Any) -> UniEvent:
    """Read a ``UniEvent`` of the client stream or the public stream (09).

    Raises:
        WireFormatError: any field missing or of the wrong type, with its path.
    """
    obj = _obj(d, "event")
    role = obj.get("role", "assistant")
    if role != "assistant":
        raise _fail("event.role", f"expected 'assistant', got {_shown(role)}")
    event_type = obj.get("event_type")
    if event_type != "delta" and event_type != "stop":
        raise _fail("event.event_type", f"expected 'delta' or 'stop', got {_shown(event_type)}")
    created_at = obj.get("created_at")
    if created_at is not None and type(created_at) is not int:
        raise _fail("event.created_at", "expected an integer or null")
    usage = obj.get("usage_metadata")
    finish = obj.get("finish_reason")
    items = _items(obj.get("content_items"), "event.content_items")
    if usage is None and finish is None and event_type == "delta" and len(items) == 1:
        return delta_event(items[0], created_at)  # a delta event as the grammar has it
    return UniEvent(
        event_type,
        items,
        None if usage is None else usage_from_wire(usage, "event.usage_metadata"),
        None if finish is None else _finish(finish, "event.finish_reason"),
        created_at,
    )


def message_from_wire(d: Any) -> UniMessage:
    """Read a ``UniMessage``; its items must be done items (spec 01 §2).

    Raises:
        WireFormatError: any field missing or of the wrong type, or a delta item.
    """
    obj = _obj(d, "message")
    role = obj.get("role")
    if role not in ("user", "assistant"):
        hint = "; system text goes in the config's system_prompt" if role == "system" else ""
        raise _fail("message.role", f"expected 'user' or 'assistant', got {_shown(role)}{hint}")
    items = _items(obj.get("content_items"), "message.content_items")
    for i, item in enumerate(items):
        if not item.type.endswith(".done"):
            raise _fail(f"message.content_items[{i}].type", "a message holds only done items")
    created_at = obj.get("created_at")
    if created_at is not None and type(created_at) is not int:
        raise _fail("message.created_at", "expected an integer or null")
    done_items: tuple[DoneItem, ...] = items  # type: ignore[assignment]
    return UniMessage(
        role,
        done_items,
        usage_from_wire(obj.get("usage_metadata"), "message.usage_metadata"),
        _finish(obj.get("finish_reason"), "message.finish_reason"),
        created_at,
    )


# -- errors -------------------------------------------------------------------------------


def _nullable(read: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    return lambda v, p: None if v is None else read(v, p)


_number = _typed((int, float), "a number")

#: Readers of error fields, by the field's declared type in ``mmsp_core.errors``.
_ERROR_FIELD_READERS: Final[Mapping[str, Callable[[Any, str], Any]]] = {
    "str": _typed(str, "a string"),
    "str | None": _nullable(_typed(str, "a string")),
    "int": _typed(int, "an integer"),
    "int | None": _nullable(_typed(int, "an integer")),
    "float": lambda v, p: _float(_number(v, p), p),
    "float | None": _nullable(lambda v, p: _float(_number(v, p), p)),
    "int | str | None": _nullable(_typed((int, str), "an integer or a string")),
    "tuple[str, ...]": lambda v, p: _list_of(v, p, _typed(str, "a string")),
    "UsageMetadata | None": usage_from_wire,
    "Mapping[str, Any]": lambda v, p: dict(_obj(v, p)),
}


def error_from_wire(d: Any) -> MMSPError:
    """Rebuild an error from ``{"error": {"type", "message", **fields}}`` (spec 03 §3).

    A ``type`` that is not an MMSP class (a server-side refusal such as
    ``AuthenticationError``, or an SDK error relayed by a server) comes back as an
    ``UpstreamError`` holding the whole object, as the mmsp client reports it (08 D13).

    Raises:
        WireFormatError: not of that shape, or a field of the wrong type.
    """
    outer = _obj(d, "error_body")
    inner = _obj(outer.get("error"), "error")
    name = _str(inner, "type", "error")
    cls = ERROR_CLASSES.get(name)
    if cls is None:
        status = inner.get("status")
        client = inner.get("client")
        return UpstreamError(
            client if type(client) is str and client else "unknown",
            status if type(status) is int else None,
            name,
            dict(inner),
        )
    kwargs = {
        field.name: _ERROR_FIELD_READERS[str(field.type)](
            inner[field.name], f"error.{field.name}"
        )
        for field in attrs.fields(cls)
        if field.name in inner
    }
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise _fail(f"error.{name}", f"fields do not fit: {exc}") from None
