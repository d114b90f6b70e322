"""Reading, checking and building a request (spec 02 §8, 04 §4, 05; 08 D37, D57, D58), pure.

``coerce_messages`` and ``coerce_config`` read what a caller gives; ``check_config`` and
``check_read_config`` raise what building would raise for the config alone; ``build_request``
and ``build_read_request`` build the exact HTTP request with the protocol's builder, merging
``extra_body`` last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mmsp_core.errors import (
    InvalidMessageError,
    RoutingError,
    UnsupportedParameterError,
    WireFormatError,
)
from mmsp_core.model import UniConfig, UniMessage
from mmsp_core.request import HTTPRequest
from mmsp_core.wire import config_from_wire

from . import _preflight
from ._registry import CLIENTS, PROTOCOLS, canonical_client_type, protocol_traits
from ._resolve import resolve_named
from ._spec import WireProtocol

__all__ = [
    "build_read_request",
    "build_request",
    "check_config",
    "check_read_config",
    "coerce_config",
    "coerce_messages",
]


def coerce_messages(
    client: str, messages: Sequence[UniMessage | Mapping[str, Any]]
) -> list[UniMessage]:
    """Read messages given as values or wire dicts (08 D47, D58), before any request.

    Dicts are legacy-normalised, then read with ``message_from_wire``; values built directly
    are read the same way from their wire form (except on the mmsp client, which sends what
    it is given, 08 D58), so they get exactly the checks dicts get. On every client, text a
    request cannot carry (a surrogate code point, 08 D55; a set or a cycle in tool-call
    arguments) is refused. An empty list is a valid history; ``build_request`` refuses it.

    Raises:
        InvalidMessageError: ``messages`` is not a list (``messages=None``, a string: 08 D69),
            or a message that cannot be read or sent (``message_index``, and ``item_type``,
            the bare kind, when an item is at fault), chained from the ``WireFormatError``.
    """
    return _preflight.read_messages(client, messages, check_values=_checks_values(client))


def _checks_values(client: str) -> bool:
    """Whether ``client`` checks the values a caller built (all but the mmsp client, whose
    server checks them: the protocol's ``base_preflight`` trait, 08 D58)."""
    if not isinstance(client, str):
        raise RoutingError("", None, detail=f"the client type must be a string, got "
                                            f"{type(client).__name__}")
    canonical = canonical_client_type(client)
    if canonical is None:
        record = PROTOCOLS.get(client)
        return record is None or record.traits.base_preflight
    return protocol_traits(CLIENTS[canonical].protocol).base_preflight


def coerce_config(client: str, config: UniConfig | Mapping[str, Any] | None) -> UniConfig:
    """Read a config given as a value, a wire dict or ``None`` (08 D58, D68).

    A ``UniConfig`` built directly is read from its wire form like a dict (except on the
    mmsp client), so ``UniConfig(max_tokens="100")`` gets the error ``{"max_tokens": "100"}``
    gets. Unknown keys are kept in ``extra``; ``check_config`` and ``build_request`` warn
    about them.

    Raises:
        WireFormatError: ``config`` is not a ``UniConfig``, a dict or ``None``; or a
            ``thinking_level`` that is not a level (the accepted levels in the reason, 08 D68).
        UnsupportedParameterError: a known key with a value of the wrong type, out of range
            (``max_tokens`` 1 to 2**31 - 1, a finite ``temperature``) or not sendable, the key
            named in ``parameter``, chained from the ``WireFormatError``.
    """
    return _preflight.read_config(client, config, check_values=_checks_values(client))


def check_config(
    client_type: str,
    model: str,
    config: UniConfig | Mapping[str, Any] | None,
    *,
    strict: bool = False,
) -> None:
    """Raise what ``build_request`` would raise for the config alone (08 D37).

    Each config key that is not a UniConfig field gets a ``UserWarning`` naming its close
    matches, or in ``strict`` mode an error (08 D57); a gateway's client (mmsp) forwards such
    keys to the gateway, whose own client judges them.

    Raises:
        UnsupportedParameterError: a value the client cannot send for this model; an unknown
            key in strict mode; an ``extra_body`` key named like a UniConfig field whose
            value this model refuses (``parameter="extra_body"``).
        WireFormatError, UnsupportedParameterError: a config that cannot be read
            (``coerce_config``).
        RoutingError: a model id that is not a string (08 D69), an unknown client
            type.
        UnsupportedOperationError: an unbuilt client type.
    """
    model = _preflight.check_model_id(model, client_type, routing=False)
    client, profile, protocol = resolve_named(client_type, model)
    values = coerce_config(client, config)
    _check_read_config(client, profile, protocol, model, values, strict)


def check_read_config(
    client_type: str, model: str, config: UniConfig, *, strict: bool = False
) -> None:
    """``check_config`` for a config read already by ``coerce_config`` for this client type:
    what a client that reads its values once per call uses before ``build_read_request``
    (08 D58 asks for the checks once, before any request). A config that did not come from
    ``coerce_config`` may be judged on values that were never checked.

    Raises:
        MMSPError: what ``check_config`` raises for a config that reads.
    """
    model = _preflight.check_model_id(model, client_type, routing=False)
    client, profile, protocol = resolve_named(client_type, model)
    _check_read_config(client, profile, protocol, model, config, strict)


def _check_read_config(
    client: str, profile: Any, protocol: WireProtocol[Any], model: str, config: UniConfig,
    strict: bool,
) -> None:
    """The checks of ``check_config`` and ``check_read_config``; a warning points at their
    caller."""
    if protocol.traits.base_preflight:
        _preflight.warn_unknown_keys(client, config, strict=strict, stacklevel=4)
    protocol.check_config(client, profile, model, config)
    _check_extra_body(client, profile, protocol, model, config)


def _check_extra_body(
    client: str, profile: Any, protocol: WireProtocol[Any], model: str, config: UniConfig
) -> None:
    """Refuse an ``extra_body`` key whose UniConfig counterpart this model refuses (08 D57).

    The counterpart of a top-level key is the UniConfig field of the same name
    (``temperature``, ``tool_choice``, ``max_tokens``, ...): when its value reads as that
    field and the protocol refuses the field with that value, ``extra_body`` may not send it
    around the refusal.

    Raises:
        UnsupportedParameterError: ``parameter="extra_body"``, chained from the refusal.
    """
    for key, value in (config.extra_body or {}).items():
        if key not in _preflight.CONFIG_FIELDS or key == "extra_body":
            continue
        try:
            counterpart = getattr(config_from_wire({key: value}), key)
        except WireFormatError:
            continue  # not the field's form: a wire shape of the protocol's own
        try:
            asked = attrs.evolve(config, **{key: counterpart})
            protocol.check_config(client, profile, model, asked)
        except UnsupportedParameterError as exc:
            if exc.parameter != key:
                raise
            raise UnsupportedParameterError(
                client, "extra_body", detail=f"extra_body.{key}: {exc}"
            ) from exc


def build_request(
    client_type: str,
    model: str,
    messages: Sequence[UniMessage | Mapping[str, Any]],
    config: UniConfig | Mapping[str, Any] | None,
    *,
    strict: bool = False,
) -> HTTPRequest:
    """Build the exact HTTP request ``client_type`` sends for this call (spec 04 §4, 05).

    The path is relative to the base URL; the headers carry no credentials
    (``auth_headers``). Messages and config may be values or wire dicts; both are read and
    checked first (``coerce_messages``, ``coerce_config``), config keys that are not
    UniConfig fields warn (or raise in ``strict`` mode, 08 D57), and ``extra_body`` is merged
    into the built body last, objects recursively, never over what the mapping wrote.

    Raises:
        InvalidMessageError: no messages, a message with nothing sendable or one that cannot
            be read (RFC-0003 §3.3), with ``message_index``.
        UnsupportedParameterError: a config value the client cannot send (RFC-0003 §6.2),
            an unknown key in strict mode, or an ``extra_body`` that would overwrite the
            mapping or send what the model refuses (``parameter="extra_body"``); config
            errors come before message-conversion errors (spec 02 §8).
        WireFormatError: a config that is not one, or a ``thinking_level`` that is not a
            level (08 D68).
        UnsupportedContentError: an item the model cannot take.
        RoutingError: a model id that is not a string (08 D69), an unknown client
            type.
    """
    model = _preflight.check_model_id(model, client_type, routing=False)
    client, profile, protocol = resolve_named(client_type, model)
    values = coerce_messages(client, messages)
    _check_sendable(client, protocol, values)
    settings = coerce_config(client, config)
    if protocol.traits.base_preflight:
        _preflight.warn_unknown_keys(client, settings, strict=strict)
    _check_extra_body(client, profile, protocol, model, settings)
    return _build(client, profile, protocol, model, values, settings)


def build_read_request(
    client_type: str,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    """``build_request`` for values read and checked already, by ``coerce_messages``,
    ``coerce_config`` and ``check_read_config`` for the same client type and model: nothing
    is read, checked or warned about a second time (08 D58 asks for the checks once, before
    any request; ``strict`` took effect in ``check_read_config``). Values that did not come
    from those functions may be sent unchecked.

    Raises:
        InvalidMessageError: no messages, or a message with nothing sendable.
        UnsupportedParameterError, UnsupportedContentError: as ``build_request``.
        RoutingError, UnsupportedOperationError: as ``build_request``.
    """
    model = _preflight.check_model_id(model, client_type, routing=False)
    client, profile, protocol = resolve_named(client_type, model)
    _check_sendable(client, protocol, messages)
    return _build(client, profile, protocol, model, messages, config)


def _check_sendable(
    client: str, protocol: WireProtocol[Any], messages: Sequence[UniMessage]
) -> None:
    """Refuse an empty history or a message without items (RFC-0003 §3.3), except on a
    protocol without the base preflight (a gateway's client sends what it is given).

    Raises:
        InvalidMessageError: with ``message_index`` for a message without items.
    """
    if not protocol.traits.base_preflight:
        return
    if not messages:
        raise InvalidMessageError(
            client, None, None, detail="messages is empty: give at least one message"
        )
    for index, message in enumerate(messages):
        if not message.content_items:
            raise InvalidMessageError(client, None, index, detail="no content items")


def _build(
    client: str,
    profile: Any,
    protocol: WireProtocol[Any],
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    """The protocol's request for read values, with ``extra_body`` merged in last (08 D57)."""
    request = protocol.build_request(client, profile, model, list(messages), config)
    if not config.extra_body or not protocol.traits.base_preflight:
        # A gateway forwards extra_body inside the config, for its own client (08 D57).
        return request
    body = _preflight.merge_extra_body(client, request.body, config.extra_body)
    return attrs.evolve(request, body=body)
