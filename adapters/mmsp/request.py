"""The request of the mmsp client: ``POST {base}/stream`` to an MMSP server (07 §4, §6).

The body is ``{"model", "messages", "config"}`` as UTF-8 JSON, non-ASCII kept: the messages in
their wire form (bytes as base64 text), the config verbatim, every key included, the unknown
ones of ``UniConfig.extra`` and ``extra_body`` too (05 §4.5, 08 D57). Nothing is mapped or
checked here: the server's own client does that and reports what it refuses as an error event
(07 §4, 08 D58). The mmsp client sends what it is given, so a message built directly with
fields of the wrong type travels as it is; the caller's input has already passed the checks
every client makes (``adapters._preflight``: JSON-sendable, no lone surrogate, 08 D55).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from mmsp_core.model import ITEM_CLASSES, UniConfig, UniMessage
from mmsp_core.request import HTTPRequest
from mmsp_core.wire import to_wire

from .profiles import MMSPProfile

__all__ = ["build_request", "check_config"]

_HEADERS: Final = (("content-type", "application/json"), ("accept", "text/event-stream"))
_ITEM_TYPES: Final = frozenset(ITEM_CLASSES.values())
#: The optional fields of a message, written only when set (as ``to_wire`` does).
_OPTIONAL: Final = ("usage_metadata", "finish_reason", "created_at")


def build_request(
    client: str,
    profile: MMSPProfile,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    """Return the ``POST /stream`` request of one call (07 §6).

    Raises nothing of its own: an empty message list or a message without items is the
    server's to refuse (07 §4), and what reaches here is JSON-sendable (08 D55, D69).
    """
    body = {
        "model": model,
        "messages": [_message(message) for message in messages],
        "config": to_wire(config),
    }
    encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=_plain)
    return HTTPRequest("POST", profile.stream_path, _HEADERS, encoded.encode("utf-8"))


def check_config(client: str, profile: MMSPProfile, model: str, config: UniConfig) -> None:
    """Nothing to check: the server's client maps the config and reports what it refuses
    as an error event (07 §4, 05 §4.5)."""


def _message(message: UniMessage) -> dict[str, Any]:
    """The wire form of a message as the caller built it (08 D58): items of the MMSP classes
    by ``to_wire``, anything else as it is."""
    items: Any = message.content_items
    if isinstance(items, list | tuple):
        items = [to_wire(item) if type(item) in _ITEM_TYPES else item for item in items]
    out: dict[str, Any] = {"role": message.role, "content_items": items}
    for name in _OPTIONAL:
        value = getattr(message, name)
        if value is not None:
            out[name] = value
    return out


def _plain(value: Any) -> Any:
    """JSON for what ``json`` cannot write itself: bytes as base64 text (07 §4), attrs values
    (usage, items inside odd places) as objects of their fields, mappings as objects.

    Raises:
        TypeError: anything else (the preflight lets nothing else through).
    """
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if attrs.has(type(value)):
        return to_wire(value) if type(value) in _ITEM_TYPES else attrs.asdict(value, recurse=False)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")
