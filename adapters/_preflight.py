"""The checks of a caller's input that run before any request, on every client (spec 02 §8).

What a caller gives (messages and config, as values or as wire dicts) is read here and refused
with an ``MMSPError`` that says what was wrong and what is accepted (08 D69):

- messages must be a list of ``UniMessage`` values or dicts; a dict is read by
  ``message_from_wire`` (08 D47), and a value built directly is read by the same reader, from
  its wire form, so it gets exactly the checks the same data gets as a dict (08 D58);
- nothing a request would carry may hold a surrogate code point (it cannot be sent as UTF-8,
  08 D55), a non-finite number, a value JSON has no form for (a set, an object), a cycle, or
  nesting deeper than ``MAX_DEPTH`` (``json_problem``);
- config keys that are not UniConfig fields are named in a warning with their close matches,
  or refused in strict mode (08 D57); ``extra_body`` is merged into the built body after the
  mapping and may not overwrite it (08 D57).

Only the preflight pays for this: the events the library builds itself are never checked here.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from mmsp_core.errors import (
    InvalidMessageError,
    RoutingError,
    UnsupportedParameterError,
    WireFormatError,
    preview,
)
from mmsp_core.kinds import SURROGATE
from mmsp_core.messages import normalize_legacy_messages
from mmsp_core.model import ITEM_CLASSES, UniConfig, UniMessage, UsageMetadata
from mmsp_core.request import encode_json_body
from mmsp_core.wire import config_from_wire, message_from_wire, to_wire

from ._build import item_kind

__all__ = [
    "CONFIG_FIELDS",
    "MAX_DEPTH",
    "check_model_id",
    "json_problem",
    "merge_extra_body",
    "read_config",
    "read_messages",
    "warn_unknown_keys",
]

#: How deeply a caller's JSON (tool parameters, tool-call arguments, fidelity, ``extra_body``)
#: may nest: far beyond any real schema, and well within what the JSON encoder can recurse.
MAX_DEPTH: Final = 256
#: The UniConfig keys a caller may set (``extra`` holds the others).
CONFIG_FIELDS: Final = tuple(f.name for f in attrs.fields(UniConfig) if f.name != "extra")

_ITEM_TYPES: Final = frozenset(ITEM_CLASSES.values())
_JSON_TYPES: Final = "objects with string keys, lists, strings, finite numbers, booleans, null"


# -- any JSON a request would carry -----------------------------------------------------------


def json_problem(value: Any, path: str) -> tuple[str, str] | None:
    """Return ``(path, reason)`` for the first place ``value`` cannot be sent as JSON, else
    ``None``.

    Sendable are ``None``, booleans, integers, finite floats, strings without a surrogate code
    point (08 D55: those cannot be encoded as UTF-8), and lists, tuples and dicts with string
    keys of those, nested at most ``MAX_DEPTH`` deep and without cycles. Outside any dict,
    attrs values (an item, a ``ToolSchema``) count as objects of their fields and bytes as
    the base64 text they travel as; inside a dict only plain JSON is accepted. The walk uses
    its own stack, so no nesting can exhaust Python's.
    """
    # An int on the stack marks the end of the container with that id (leaving it).
    stack: list[tuple[Any, str, bool] | int] = [(value, path, True)]
    ancestors: set[int] = set()
    depth = 0
    while stack:
        entry = stack.pop()
        if isinstance(entry, int):
            ancestors.discard(entry)
            depth -= 1
            continue
        node, where, values = entry
        if node is None or isinstance(node, int):
            continue
        if isinstance(node, float):
            if not math.isfinite(node):
                return where, f"{node!r} is not a finite number"
            continue
        if isinstance(node, str):
            if not node.isascii() and SURROGATE.search(node):
                return where, "holds a surrogate code point, which cannot be sent as UTF-8"
            continue
        children: Iterable[tuple[str, Any]]
        if values and isinstance(node, bytes):
            continue
        if values and attrs.has(type(node)):
            children = [(step, getattr(node, name)) for step, name in _field_steps(type(node))]
        elif isinstance(node, dict) or (values and isinstance(node, Mapping)):
            problem = _key_problem(node)
            if problem is not None:
                return where, problem
            children = [(f".{preview(key)}", child) for key, child in node.items()]
            values = False
        elif isinstance(node, list | tuple):
            children = [(f"[{i}]", child) for i, child in enumerate(node)]
        else:
            return where, f"a {type(node).__name__} is not a JSON value (accepted: {_JSON_TYPES})"
        if id(node) in ancestors:
            return where, "contains itself (a cycle), which JSON cannot carry"
        if depth >= MAX_DEPTH:
            return where, f"is nested deeper than {MAX_DEPTH} levels"
        ancestors.add(id(node))
        depth += 1
        stack.append(id(node))
        for step, child in reversed(children):
            # What is plainly sendable is judged here, never pushed (the common leaves).
            if child is None or type(child) is int or (type(child) is str and child.isascii()):
                continue
            stack.append((child, where + step, values))
    return None


def _key_problem(obj: Mapping[Any, Any]) -> str | None:
    """Why a key of ``obj`` cannot be sent as a JSON object key (not a string, or a string
    with a surrogate code point, 08 D55), or ``None`` when every key can."""
    for key in obj:
        if not isinstance(key, str):
            return f"object keys must be strings, got {type(key).__name__}"
        if not key.isascii() and SURROGATE.search(key):
            return "a key holds a surrogate code point, which UTF-8 cannot carry"
    return None


_FIELD_STEPS: Final[dict[type, tuple[tuple[str, str], ...]]] = {}


def _field_steps(cls: type) -> tuple[tuple[str, str], ...]:
    """The path step (``".text"``) and name of each field of the attrs class ``cls``, worked
    out once per class."""
    steps = _FIELD_STEPS.get(cls)
    if steps is None:
        steps = _FIELD_STEPS[cls] = tuple((f".{f.name}", f.name) for f in attrs.fields(cls))
    return steps


# -- messages ---------------------------------------------------------------------------------


def read_messages(client: str, messages: Any, *, check_values: bool) -> list[UniMessage]:
    """Read messages given as values or wire dicts into values (08 D47, D58, D69).

    Dicts are legacy-normalised, then read by ``message_from_wire``; with ``check_values``
    (every client but the mmsp client, which sends what it is given: 08 D58) a value is read
    the same way from its wire form, so what comes back has the declared types (a list of
    items becomes a tuple, base64 text bytes). Every message is then checked for what no
    client can send (``json_problem``; on every client, 08 D55).

    Raises:
        InvalidMessageError: ``messages`` is not a list (no ``message_index``); a message that
            is neither a value nor a dict, or that cannot be read or sent (``message_index``,
            and ``item_type``, the bare kind, when an item is at fault), chained from the
            ``WireFormatError`` saying what is wrong.
    """
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes | bytearray):
        raise InvalidMessageError(
            client,
            None,
            None,
            detail="messages must be a list of messages (UniMessage or dicts), "
            f"got {type(messages).__name__}",
        )
    out: list[UniMessage] = []
    for index, message in enumerate(normalize_legacy_messages(list(messages))):
        if isinstance(message, UniMessage):
            value = _reread(client, index, message) if check_values else message
        elif isinstance(message, Mapping):
            value = _read(client, index, message)
        else:
            raise InvalidMessageError(
                client,
                None,
                index,
                detail=f"message {index} must be a UniMessage or a dict, "
                f"got {type(message).__name__}",
            )
        _check_sendable(client, index, value)
        out.append(value)
    return out


def _reread(client: str, index: int, message: UniMessage) -> UniMessage:
    """Read a value built directly from its wire form, whatever its fields hold: what is not
    one of our values is left as it is, for the reader to judge (08 D58).

    Media bytes that already are ``bytes`` skip the base64 round trip (an image of a few MB in
    every turn's history would otherwise cost a full encode and validating decode per call):
    the reader sees empty base64 text and the bytes are put back afterwards.
    """
    items: Any = message.content_items
    usage = message.usage_metadata
    kept: dict[int, bytes] = {}
    if isinstance(items, list | tuple):
        items = [_item_wire(position, item, kept) for position, item in enumerate(items)]
    read = _read(client, index, {
        "role": message.role,
        "content_items": items,
        "usage_metadata": to_wire(usage) if isinstance(usage, UsageMetadata) else usage,
        "finish_reason": message.finish_reason,
        "created_at": message.created_at,
    })
    if not kept:
        return read
    read_items: list[Any] = list(read.content_items)
    for position, data in kept.items():
        read_items[position] = attrs.evolve(read_items[position], data=data)
    restored: Any = tuple(read_items)
    return attrs.evolve(read, content_items=restored)


def _item_wire(position: int, item: Any, kept: dict[int, bytes]) -> Any:
    """The wire form of one item of a value (``item`` itself when it is none of ours), its
    media bytes set aside in ``kept``."""
    if type(item) not in _ITEM_TYPES:
        return item
    data = getattr(item, "data", None)
    if type(data) is not bytes:
        return to_wire(item)
    kept[position] = data
    return to_wire(attrs.evolve(item, data=b""))


def _read(client: str, index: int, wire: Any) -> UniMessage:
    try:
        return message_from_wire(wire)
    except WireFormatError as exc:
        raise InvalidMessageError(
            client, _item_type_at(wire, exc.path), index, detail=str(exc)
        ) from exc


def _item_type_at(message: Any, path: str) -> str | None:
    """The bare kind (spec 03 §2: ``"text"``) of the item a wire path points into, if any."""
    prefix = "message.content_items["
    if not path.startswith(prefix):
        return None
    try:
        item = message["content_items"][int(path[len(prefix) :].split("]", 1)[0])]
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    item_type = item.get("type") if isinstance(item, Mapping) else None
    return item_type.partition(".")[0] if isinstance(item_type, str) else None


def _check_sendable(client: str, index: int, message: UniMessage) -> None:
    """Raises ``InvalidMessageError`` for an item no request can carry (``json_problem``)."""
    items = message.content_items
    if not isinstance(items, list | tuple):
        return  # the mmsp client's own business (08 D58)
    for position, item in enumerate(items):
        problem = json_problem(item, f"message.content_items[{position}]")
        if problem is not None:
            cause = WireFormatError(*problem)
            raise InvalidMessageError(client, item_kind(item), index, detail=str(cause)) from cause


# -- config -----------------------------------------------------------------------------------


def read_config(client: str, config: Any, *, check_values: bool) -> UniConfig:
    """Read a config given as a ``UniConfig``, a wire dict or ``None`` (08 D58, D68).

    A dict is read by ``config_from_wire``; with ``check_values`` a ``UniConfig`` is read the
    same way from its wire form. Either way every value is first checked for what no request
    can carry (``json_problem``).

    Raises:
        WireFormatError: ``config`` is none of the three (``path="config"``), or its
            ``thinking_level`` is not a level (``path="config.thinking_level"``, the accepted
            levels in the reason: never ``UnsupportedParameterError``, RFC-0003 §6.3, 08 D68).
        UnsupportedParameterError: any other key with a value of the wrong type, out of range
            or not sendable (``parameter`` = the key), chained from the ``WireFormatError``
            that says what is wrong and what is accepted.
    """
    if config is None:
        return UniConfig()
    if isinstance(config, UniConfig):
        fields = [(name, getattr(config, name)) for name in CONFIG_FIELDS]
        entries = [*fields, *config.extra.items()]
    elif isinstance(config, Mapping):
        entries = list(config.items())
    else:
        raise WireFormatError(
            "config", f"expected a UniConfig, a dict or None, got {type(config).__name__}"
        )
    for key, value in entries:
        if not isinstance(key, str):
            raise WireFormatError("config", f"keys must be strings, got {type(key).__name__}")
        problem = json_problem(value, f"config.{preview(key)}")
        if problem is not None:
            raise _config_error(client, key, WireFormatError(*problem))
    if isinstance(config, UniConfig) and not check_values:
        return config
    wire = to_wire(config) if isinstance(config, UniConfig) else dict(config)
    try:
        return config_from_wire(wire)
    except WireFormatError as exc:
        key = exc.path.removeprefix("config.").split(".", 1)[0].split("[", 1)[0]
        raise _config_error(client, key, exc) from exc


def _config_error(
    client: str, key: str, cause: WireFormatError
) -> WireFormatError | UnsupportedParameterError:
    """The error for a bad value of ``key``: D68's ``WireFormatError`` for ``thinking_level``,
    else ``UnsupportedParameterError`` naming the key, chained from ``cause``."""
    if key == "thinking_level":
        return cause
    error = UnsupportedParameterError(client, key, detail=str(cause))
    error.__cause__ = cause
    return error


def warn_unknown_keys(
    client: str, config: UniConfig, *, strict: bool, stacklevel: int = 3
) -> None:
    """Name each config key that is not a UniConfig field, with its close matches (08 D57).

    Provider clients ignore such keys (RFC-0003 §6.2), so a typo would silently change what
    is asked: each one gets a ``UserWarning`` ("did you mean 'max_tokens'?"), pointed at the
    caller of ``build_request`` or ``check_config`` (``stacklevel`` frames up from here), so
    Python's filter shows it once per call site.

    Raises:
        UnsupportedParameterError: in strict mode, for the first unknown key (``parameter`` =
            the key).
    """
    for key in config.extra:
        import difflib  # only an unknown key needs it: not loaded with the package (import cost)

        matches = difflib.get_close_matches(str(key), CONFIG_FIELDS)
        guess = f"; did you mean {' or '.join(map(repr, matches))}?" if matches else ""
        if strict:
            raise UnsupportedParameterError(
                client, str(key), detail=f"not a UniConfig field{guess} (strict mode)"
            )
        warnings.warn(
            f"{client} ignores the config key {key!r}: it is not a UniConfig field{guess} "
            "(fields the mapping does not know go in extra_body)",
            UserWarning,
            stacklevel=stacklevel,
        )


def merge_extra_body(client: str, body: bytes, extra_body: Mapping[str, Any]) -> bytes:
    """Return ``body`` (a JSON object) with ``extra_body`` merged in, objects recursively
    (08 D57): a key the body lacks is added, an object in both is merged, and anything else
    would overwrite what this request's mapping wrote.

    Raises:
        UnsupportedParameterError: ``parameter="extra_body"``: a leaf the mapping wrote (the
            detail names its path), or a body that is not a JSON object.
    """
    built = json.loads(body) if body else None
    if not isinstance(built, dict):
        raise UnsupportedParameterError(
            client, "extra_body", detail="this request's body is not a JSON object"
        )
    _merge(client, built, extra_body, "extra_body")
    return encode_json_body(built)


def _merge(client: str, target: dict[str, Any], extra: Mapping[str, Any], path: str) -> None:
    for key, value in extra.items():
        if key not in target:
            target[key] = value
        elif isinstance(target[key], dict) and isinstance(value, Mapping):
            _merge(client, target[key], value, f"{path}.{key}")
        else:
            raise UnsupportedParameterError(
                client,
                "extra_body",
                detail=f"{path}.{key}: the request already sets it from the config; "
                "extra_body may only add to what the mapping writes",
            )


# -- model ids --------------------------------------------------------------------------------


def check_model_id(model: Any, client_type: Any, *, routing: bool = True) -> str:
    """Return ``model``, which must be a string, and non-empty when ``routing`` (08 D69).

    Routing needs a model id; the pure builders, given a client type, send whatever id they
    are given (08 D9), so they only need a string.

    Raises:
        RoutingError: ``model`` is ``None`` or not a string, or empty when ``routing``; or
            ``client_type`` is neither ``None`` nor a string.
    """
    named = client_type if isinstance(client_type, str) else None
    if not isinstance(model, str) or (routing and not model):
        shown = repr(model) if isinstance(model, str) else type(model).__name__
        raise RoutingError(
            model if isinstance(model, str) else "",
            named,
            detail=f"the model id must be a {'non-empty ' if routing else ''}string, got {shown}",
        )
    if client_type is not None and not isinstance(client_type, str):
        raise RoutingError(
            model, None,
            detail=f"the client type must be a string, got {type(client_type).__name__}",
        )
    return model
