"""The live protocol and client tables, and ``register`` (08 D63).

``PROTOCOLS`` and ``CLIENTS`` are read-only views of tables that ``register`` may extend, so
every layer reads them at call time and nothing caches them at import. The built-in rows are
installed by ``adapters._protocols`` (one line per protocol package) and ``adapters._rows``
(one row per client type).
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ._spec import PENDING_TRAITS, ClientSpec, Traits, WireProtocol

__all__ = [
    "CLIENTS",
    "PROTOCOLS",
    "Registration",
    "canonical_client_type",
    "prefix_table",
    "protocol_traits",
    "register",
]

_PROTOCOLS: dict[str, WireProtocol[Any]] = {}
_CLIENTS: dict[str, ClientSpec] = {}
#: Every accepted spelling (lower-cased name or alias) -> client type.
_NAMES: dict[str, str] = {}

#: Every wire protocol built here, by name; read-only.
PROTOCOLS: Final[Mapping[str, WireProtocol[Any]]] = types.MappingProxyType(_PROTOCOLS)
#: The registry: every client type of spec 04 §1, read-only.
CLIENTS: Final[Mapping[str, ClientSpec]] = types.MappingProxyType(_CLIENTS)


class Registration:
    """What ``register`` added; ``undo()`` (or leaving the ``with`` block) removes it again."""

    def __init__(
        self, protocol: WireProtocol[Any] | None, clients: Sequence[ClientSpec]
    ) -> None:
        self._protocol = protocol
        self._clients = tuple(clients)
        self._active = True

    def undo(self) -> None:
        """Remove the protocol and client rows this registration added (idempotent)."""
        if not self._active:
            return
        self._active = False
        if self._protocol is not None:
            _PROTOCOLS.pop(self._protocol.name, None)
        for spec in self._clients:
            _CLIENTS.pop(spec.client_type, None)
            for name in (spec.client_type, *spec.aliases):
                _NAMES.pop(name.lower(), None)

    def __enter__(self) -> Registration:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.undo()


def register(
    protocol: WireProtocol[Any] | None = None, clients: Sequence[ClientSpec] = ()
) -> Registration:
    """Add a wire protocol and the client rows that speak it, for every layer at once.

    Use it as a context manager (tests) or keep the ``Registration`` and call ``undo()``.

    Raises:
        ValueError: a protocol name, client type or alias that is already taken; nothing is
            added then.
    """
    if protocol is not None and protocol.name in _PROTOCOLS:
        raise ValueError(f"the wire protocol {protocol.name!r} is already registered")
    names = [name.lower() for spec in clients for name in (spec.client_type, *spec.aliases)]
    taken = [name for name in names if name in _NAMES]
    if taken or len(set(names)) != len(names):
        raise ValueError(f"client names already registered: {', '.join(taken or names)}")
    if protocol is not None:
        _PROTOCOLS[protocol.name] = protocol
    for spec in clients:
        _CLIENTS[spec.client_type] = spec
        for name in (spec.client_type, *spec.aliases):
            _NAMES[name.lower()] = spec.client_type
    return Registration(protocol, clients)


def canonical_client_type(name: str) -> str | None:
    """Return the client type ``name`` denotes, case-insensitively and through the aliases of
    spec 04 §1 (``openai`` -> ``openai-chat``, ...), or ``None`` when it names none."""
    return _NAMES.get(name.lower())


def prefix_table() -> list[tuple[str, str]]:
    """Spec 04 §2 step 3: ``(model-id prefix, client type)`` in table order."""
    return [(prefix, spec.client_type) for spec in _CLIENTS.values()
            for prefix in spec.model_prefixes]


def protocol_traits(protocol: str) -> Traits:
    """The traits of ``protocol``: its record's, or ``PENDING_TRAITS`` for a protocol that has
    client rows but no package yet."""
    record = _PROTOCOLS.get(protocol)
    return PENDING_TRAITS if record is None else record.traits
