"""Which client row, protocol record and profile a source names (09, 08 D64), pure.

A source is a client type (any spelling ``canonical_client_type`` takes) or a protocol name;
every entry point (``decode``, ``new_pipeline``, ``build_request``, ``check_config``,
``render``) resolves it here, at call time, through the live registry.
"""

from __future__ import annotations

from typing import Any

from mmsp_core.errors import RoutingError, UnsupportedOperationError

from . import _preflight
from ._registry import CLIENTS, PROTOCOLS, canonical_client_type
from ._spec import ClientSpec, WireProtocol

__all__ = ["resolve", "resolve_named"]


def resolve(
    source: str, model: str | None = None, base_url: str | None = None
) -> tuple[ClientSpec, WireProtocol[Any], object]:
    """Return the client row, the protocol record and the profile of a client type or protocol
    name.

    A protocol name stands for its compatible client (09). A client type speaks the protocol
    its row gives for ``base_url``'s route (``bedrock://``, 08 D72) or ``model``'s class
    (``ClientSpec.speaks``, 08 D64); so does a protocol name that is also a client type when a
    ``model`` or a route's ``base_url`` is given (``google-genai`` with an embedding id speaks
    ``google-embedding``).

    Raises:
        RoutingError: ``source`` is neither a client type nor a protocol name.
        UnsupportedOperationError: the client type's protocol is not implemented here yet.
    """
    record = PROTOCOLS.get(source) if isinstance(source, str) else None
    if record is not None and (
        (model is None and base_url is None) or canonical_client_type(source) is None
    ):
        client = canonical_client_type(record.compatible_client or record.name)
        if client is None:
            raise RoutingError("", source, detail="the protocol has no compatible client row")
        spec = CLIENTS[client]
        return spec, record, spec.profile
    client = canonical_client_type(source) if isinstance(source, str) else None
    if client is None:
        raise RoutingError("", source if isinstance(source, str) else None,
                           detail=_unknown_source(source))
    spec = CLIENTS[client]
    if model is not None:
        _preflight.check_model_id(model, source, routing=False)
    protocol, profile = spec.speaks(model, base_url)
    record = PROTOCOLS.get(protocol)
    if record is None:
        raise UnsupportedOperationError(
            client, "streaming", detail=f"the {protocol} protocol is not built yet"
        )
    return spec, record, profile


def _unknown_source(source: object) -> str:
    """Say that ``source`` names nothing, its close matches, and every accepted name."""
    import difflib  # only an error needs it: not loaded with the package (import cost)

    names = [*CLIENTS, *PROTOCOLS]
    matches = difflib.get_close_matches(source, names) if isinstance(source, str) else []
    guess = f"; did you mean {' or '.join(map(repr, matches))}?" if matches else ""
    return (
        f"{source!r} is not a client type or wire protocol name{guess} "
        f"(client types: {', '.join(CLIENTS)}; wire protocols: {', '.join(PROTOCOLS)})"
    )


def resolve_named(
    source: str, model: str | None = None, base_url: str | None = None
) -> tuple[str, object, WireProtocol[Any]]:
    """The name errors use (the protocol name when decoding by protocol), the profile and the
    record of ``source`` for ``model`` at ``base_url``.

    Raises:
        RoutingError, UnsupportedOperationError: as ``resolve``.
    """
    spec, record, profile = resolve(source, model, base_url)
    return (source if source in PROTOCOLS else spec.client_type), profile, record
