"""The protocols the simulator serves and the routes of their endpoints, read from the
protocol records' ``SimulatorDialect`` at call time (08 D63), so a protocol registered later
is served too. A protocol Azure OpenAI serves too (the dialect's ``azure``, 08 D72) is served a
second time, as Azure's endpoint: at its own path (``/azure/openai/v1/...``), with Azure's key
header, error bodies and annotations."""

from __future__ import annotations

import http
import re
from collections.abc import Iterator
from typing import Any, Final

import adapters


def simulated_protocols() -> tuple[str, ...]:
    """The providers' wire protocols the simulator serves now: every registered protocol whose
    record has a ``SimulatorDialect``, in registration order (the order the demo shows them).

    A gateway's protocol (``upstream_errors``: mmsp, whose every error is the gateway's own
    ``UpstreamError``) is served too, so that its client is tested without a gateway, but it is
    not a provider's and is not listed here; nor is a cloud route reached through an endpoint
    variable rather than ``Simulator.base_url`` (``endpoint_variable``: Bedrock, 08 D72).
    """
    return tuple(
        name
        for name, record in adapters.PROTOCOLS.items()
        if record.traits.dialect is not None and not record.traits.upstream_errors
        and record.traits.dialect.endpoint_variable is None
    )


def dialect_of(protocol: str, *, azure: bool = False) -> adapters.SimulatorDialect:
    """The dialect of ``protocol``, or with ``azure`` the dialect of its Azure endpoint.

    Raises:
        ValueError: the simulator does not serve ``protocol`` (on Azure, with ``azure``).
    """
    record = adapters.PROTOCOLS.get(protocol)
    dialect = record.traits.dialect if record is not None else None
    if azure and dialect is not None:
        dialect = dialect.azure
    if dialect is None:
        where = " on Azure" if azure else ""
        raise ValueError(f"the simulator does not serve the wire protocol {protocol!r}{where}")
    return dialect


def _served(dialect: adapters.SimulatorDialect | None) -> Iterator[adapters.SimulatorDialect]:
    """``dialect`` and its Azure and Vertex AI endpoints', those that are there."""
    if dialect is not None:
        yield dialect
        if dialect.azure is not None:
            yield dialect.azure
        if dialect.vertex is not None:
            yield dialect.vertex


def route(method: str, path: str) -> tuple[str, adapters.SimulatorDialect] | None:
    """The protocol whose generation endpoint is ``method path``, if any, with the dialect
    that serves it there (its own, or its Azure endpoint's)."""
    for name, record in adapters.PROTOCOLS.items():
        for dialect in _served(record.traits.dialect):
            if dialect.route[0] == method and re.fullmatch(dialect.route[1], path):
                return name, dialect
    return None


def listing_dialects(path: str) -> list[adapters.SimulatorDialect]:
    """The dialects of every served client type that lists its models at ``path`` (spec
    04 §5), its Azure endpoint's included, in registry order; providers share a path
    (``/v1/models``)."""
    dialects: list[adapters.SimulatorDialect] = []
    for spec in adapters.CLIENTS.values():
        record = adapters.PROTOCOLS.get(spec.protocol)
        for dialect in _served(record.traits.dialect if record is not None else None):
            if dialect not in dialects and adapters.join_url(
                dialect.base_path, spec.list_models_path
            ) == path:
                dialects.append(dialect)
    return dialects


def model_list_key_headers(path: str) -> tuple[str, ...]:
    """The key headers of every client type that lists its models at ``path``; empty when
    none does. Providers share a path, so it takes any of their key headers."""
    headers: dict[str, None] = {}
    for dialect in listing_dialects(path):
        headers.update(dict.fromkeys(dialect.key_headers))
    return tuple(headers)


#: The request-id header and the bad-key message of an answer that belongs to no protocol.
NEUTRAL_REQUEST_ID_HEADER: Final = "x-request-id"
NEUTRAL_BAD_KEY_MESSAGE: Final = "Invalid API key."


def neutral_error_body(status: int, message: str) -> dict[str, Any]:
    """The error body of an answer that belongs to no protocol (an unknown route, the model
    list): the plain ``{"error": {"message", "type"}}`` every ``ErrorShape`` reads, the type
    being the status's phrase (``not_found``)."""
    error_type = http.HTTPStatus(status).phrase.lower().replace(" ", "_")
    return {"error": {"message": message, "type": error_type}}
