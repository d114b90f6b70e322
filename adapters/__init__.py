"""adapters: the pure wire protocols of MMSP: stream machines, request builders, renderers.

Each wire protocol is one module with a machine (provider bytes to client events), a request
builder and a renderer (the mirror of the machine), registered in ``adapters._protocols``.
The client registry (``CLIENTS``, ``route``) says which protocol each client type speaks.
No I/O, no clock, no environment: ``mmsp_io`` does those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from mmsp_core.errors import (
    InvalidMessageError,
    RoutingError,
    UnsupportedOperationError,
    UnsupportedParameterError,
    WireFormatError,
)
from mmsp_core.messages import normalize_legacy_messages
from mmsp_core.model import DoneItem, FinishReason, UniConfig, UniEvent, UniMessage, UsageMetadata
from mmsp_core.pipeline import END, NEED_DATA, StreamPipeline
from mmsp_core.request import HTTPRequest
from mmsp_core.wire import config_from_wire, message_from_wire

from . import _protocols  # noqa: F401  (installs the built-in protocols)
from ._errors import read_error_body
from ._registry import PROTOCOLS, Registration, protocol_traits, register
from ._spec import ClientSpec, ModelClass, Traits, WireProtocol
from .clients import (
    CLIENTS,
    ModelPricing,
    SupportedModel,
    auth_headers,
    canonical_client_type,
    check_endpoint,
    client_spec,
    environment_key_allowed,
    join_url,
    list_models_headers,
    list_models_path,
    list_supported_models,
    needs_image_bytes,
    parse_model_page,
    route,
)

__all__ = [
    "CLIENTS",
    "PROTOCOLS",
    "ClientSpec",
    "ModelClass",
    "ModelPricing",
    "Registration",
    "SupportedModel",
    "Traits",
    "WireProtocol",
    "auth_headers",
    "build_request",
    "check_config",
    "check_endpoint",
    "client_spec",
    "coerce_config",
    "coerce_messages",
    "decode",
    "environment_key_allowed",
    "join_url",
    "list_models_headers",
    "list_models_path",
    "list_supported_models",
    "needs_image_bytes",
    "new_pipeline",
    "parse_model_page",
    "protocol_traits",
    "read_error_body",
    "register",
    "render",
    "resolve",
    "route",
]


def resolve(
    source: str, model: str | None = None
) -> tuple[ClientSpec, WireProtocol, Any]:
    """Return the client row, the protocol record and the profile of a client type or protocol
    name.

    A protocol name stands for its compatible client (09). A client type speaks the protocol
    its row gives for ``model``'s class (``ClientSpec.speaks``, 08 D64).

    Raises:
        RoutingError: ``source`` is neither a client type nor a protocol name.
        UnsupportedOperationError: the client type's protocol is not implemented here yet.
    """
    record = PROTOCOLS.get(source)
    if record is not None:
        client = canonical_client_type(record.compatible_client or record.name)
        if client is None:
            raise RoutingError("", source, detail="the protocol has no compatible client row")
        spec = CLIENTS[client]
        return spec, record, spec.profile
    client = canonical_client_type(source)
    if client is None:
        raise RoutingError("", source, detail="not a client type or wire protocol name")
    spec = CLIENTS[client]
    protocol, profile = spec.speaks(model)
    record = PROTOCOLS.get(protocol)
    if record is None:
        raise UnsupportedOperationError(
            client, "streaming", detail=f"the {protocol} protocol is not built yet"
        )
    return spec, record, profile


def _resolve(source: str, model: str | None = None) -> tuple[str, Any, WireProtocol]:
    """The name errors use (the protocol name when decoding by protocol), the profile and the
    record of ``source`` for ``model``."""
    spec, record, profile = resolve(source, model)
    return (source if source in PROTOCOLS else spec.client_type), profile, record


def new_pipeline(
    source: str,
    *,
    strict: bool = False,
    clock: Callable[[], int] | None,
    base_url: str | None = None,
    model: str | None = None,
) -> StreamPipeline:
    """Return a fresh pipeline for one response of ``source`` (a client type or protocol).

    ``model`` selects the protocol of a client type that speaks several (08 D64).

    ``clock=None`` stamps ``created_at=0`` (09); ``base_url`` only feeds the OpenRouter usage
    fix (spec 06 §7); ``strict`` makes unknown events raise ``UnknownEventError`` (08 D8).

    Raises:
        RoutingError, UnsupportedOperationError: as ``_resolve``.
    """
    client, profile, protocol = _resolve(source, model)
    machine = protocol.new_machine(client, profile, strict=strict, base_url=base_url)
    return StreamPipeline(
        machine,
        client=client,
        clock=clock if clock is not None else _zero,
        decoder=protocol.new_decoder(),
        finalizer=protocol.new_finalizer,
    )


def _zero() -> int:
    return 0


def decode(
    source: str,
    chunks: Iterable[bytes],
    *,
    strict: bool = False,
    clock: Callable[[], int] | None = None,
    base_url: str | None = None,
) -> Iterator[UniEvent]:
    """Decode a response body given as byte chunks into the public stream.

    Errors are raised at their position in the stream, after every event before them.

    Raises:
        MMSPError: whatever the stream raises (``IncompleteStreamError``, ...).
    """
    pipeline = new_pipeline(source, strict=strict, clock=clock, base_url=base_url)
    for chunk in chunks:
        pipeline.receive_data(chunk)
        while (event := pipeline.next_event()) is not NEED_DATA:
            yield event  # type: ignore[misc]
    pipeline.receive_eof()
    while (event := pipeline.next_event()) is not END:
        yield event  # type: ignore[misc]


def coerce_messages(
    client: str, messages: Sequence[UniMessage | Mapping[str, Any]]
) -> list[UniMessage]:
    """Read messages given as values or wire dicts (08 D47).

    Dicts are legacy-normalised, then read with ``message_from_wire``.

    Raises:
        InvalidMessageError: a message that cannot be read (``message_index``, ``item_type``),
            chained from the ``WireFormatError``.
    """
    out: list[UniMessage] = []
    for index, message in enumerate(normalize_legacy_messages(list(messages))):
        if isinstance(message, UniMessage):
            out.append(message)
            continue
        try:
            out.append(message_from_wire(message))
        except WireFormatError as exc:
            raise InvalidMessageError(
                client, _item_type_at(message, exc.path), index, detail=str(exc)
            ) from exc
    return out


def _item_type_at(message: Any, path: str) -> str | None:
    """The ``type`` of the item a wire path points into, when there is one."""
    prefix = "message.content_items["
    if not path.startswith(prefix):
        return None
    try:
        item = message["content_items"][int(path[len(prefix) :].split("]", 1)[0])]
        return str(item.get("type")) if isinstance(item, Mapping) else None
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def coerce_config(client: str, config: UniConfig | Mapping[str, Any] | None) -> UniConfig:
    """Read a config given as a value, a wire dict or ``None``.

    Raises:
        UnsupportedParameterError: a known key with a value of the wrong type or unknown enum
            value (the key named in ``parameter``).
    """
    if config is None:
        return UniConfig()
    if isinstance(config, UniConfig):
        return config
    try:
        return config_from_wire(config)
    except WireFormatError as exc:
        parameter = exc.path.split(".")[1] if "." in exc.path else exc.path
        raise UnsupportedParameterError(client, parameter.split("[")[0], detail=str(exc)) from exc


def check_config(
    client_type: str, model: str, config: UniConfig | Mapping[str, Any] | None
) -> None:
    """Raise what ``build_request`` would raise for the config alone (08 D37).

    Raises:
        UnsupportedParameterError: a value the client cannot send for this model.
        RoutingError, UnsupportedOperationError: an unknown or unbuilt client type.
    """
    client, profile, protocol = _resolve(client_type, model)
    protocol.check_config(client, profile, model, coerce_config(client, config))


def build_request(
    client_type: str,
    model: str,
    messages: Sequence[UniMessage | Mapping[str, Any]],
    config: UniConfig | Mapping[str, Any] | None,
) -> HTTPRequest:
    """Build the exact HTTP request ``client_type`` sends for this call (spec 04 §4, 05).

    The path is relative to the base URL; the headers carry no credentials
    (``auth_headers``). Messages and config may be values or wire dicts.

    Raises:
        InvalidMessageError: a message with nothing sendable or one that cannot be read
            (RFC-0003 §3.3), with ``message_index``.
        UnsupportedParameterError: a config value the client cannot send (RFC-0003 §6.2);
            config errors come before message-conversion errors (spec 02 §8).
        UnsupportedContentError: an item the model cannot take.
    """
    client, profile, protocol = _resolve(client_type, model)
    values = coerce_messages(client, messages)
    if protocol.traits.base_preflight:
        for index, message in enumerate(values):
            if not message.content_items:
                raise InvalidMessageError(client, None, index, detail="no content items")
    return protocol.build_request(client, profile, model, values, coerce_config(client, config))


def render(
    protocol: str,
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason | str,
    *,
    model: str = "model",
    fragment_size: int | None = None,
) -> bytes:
    """Write the body a real server of ``protocol`` would send for these done items (D49).

    Each item is split into fragments of ``fragment_size`` (characters of text, thinking and
    arguments; bytes of inline data); ``None`` picks a small provider-like size. What a
    protocol cannot carry is documented in its module.

    Raises:
        RoutingError, UnsupportedOperationError: an unknown or unbuilt protocol.
    """
    _, _, wire = _resolve(protocol)
    return wire.render(
        items, usage, FinishReason(finish_reason), model=model, fragment_size=fragment_size
    )
