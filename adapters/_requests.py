"""Reading, checking and building a request (spec 02 §8, 04 §4, 05; 08 D37, D57, D58), pure.

``coerce_messages`` and ``coerce_config`` read what a caller gives; ``check_config`` raises
what building would raise for the config alone and ``build_request`` builds the exact HTTP
request: both are thin shims over ``prepare`` (``adapters._plan``, 08 D79).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mmsp_core.errors import RoutingError
from mmsp_core.model import UniConfig, UniMessage
from mmsp_core.request import HTTPRequest

from . import _preflight
from ._plan import read_call
from ._registry import CLIENTS, PROTOCOLS, canonical_client_type, protocol_traits

__all__ = [
    "build_request",
    "check_config",
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
    """Raise what ``build_request`` would raise for the config alone (08 D37): ``prepare``
    with no messages (08 D79).

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
    read_call(client_type, model, [], config, base_url=None, strict=strict, stacklevel=4,
              sendable_first=False)


def build_request(
    client_type: str,
    model: str,
    messages: Sequence[UniMessage | Mapping[str, Any]],
    config: UniConfig | Mapping[str, Any] | None,
    *,
    strict: bool = False,
) -> HTTPRequest:
    """Build the exact HTTP request ``client_type`` sends for this call (spec 04 §4, 05):
    ``prepare(...).request({})`` (08 D79), remote images sent as given.

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
    return read_call(client_type, model, messages, config, base_url=None, strict=strict,
                     stacklevel=4, sendable_first=True).request({})
