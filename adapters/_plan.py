"""``prepare``: the one pure entry of a request (08 D79, D37, D57, D58; spec 02 §8, 04 §4, 05).

``prepare`` resolves the client once, reads and checks the messages and the config once and
returns a ``CallPlan`` that says what I/O the call needs, the way h11 tells its caller what
to send: the remote images to fetch (``image_urls``), then the exact request once they are
fetched (``request``), and a fresh pipeline for each response (``new_pipeline``).
``build_request`` and ``check_config`` are thin shims over it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mmsp_core.errors import InvalidMessageError, UnsupportedParameterError, WireFormatError
from mmsp_core.model import ImageUrlDone, ToolResultDone, UniConfig, UniMessage
from mmsp_core.pipeline import StreamPipeline
from mmsp_core.request import HTTPRequest
from mmsp_core.wire import config_from_wire

from . import _preflight
from ._registry import canonical_client_type
from ._resolve import resolve_named
from ._rows import needs_image_bytes
from ._spec import WireProtocol
from ._streams import pipeline_for

__all__ = ["CallPlan", "prepare"]


@attrs.frozen
class CallPlan:
    """One call, read and checked: what it sends and what it needs first (08 D79).

    Attributes:
        client: the name errors use (the client type, or the protocol name given).
        model: the model id.
        protocol: the wire protocol record the call speaks (08 D64).
        profile: the protocol's profile for this client type and model.
        messages: the messages, read and checked (08 D47, D58), each without a
            ``created_at`` stamped with ``prepare``'s.
        config: the config, read and checked (``UniConfig``; unknown keys in ``extra``).
        image_urls: each http(s) image the call must fetch before ``request`` (08 D37: only
            for a client that sends image bytes, ``needs_image_bytes``), in order of first
            appearance, with the index of the first message that carries it.
        strict: unknown stream events raise (08 D8).
        base_url: reserved for the machine (08 D52).
    """

    client: str
    model: str
    protocol: WireProtocol[Any]
    profile: Any
    messages: tuple[UniMessage, ...]
    config: UniConfig
    image_urls: Mapping[str, int]
    strict: bool = False
    base_url: str | None = None

    @property
    def trace_id(self) -> str | None:
        """The config's ``trace_id``, or ``None`` on a gateway's client, which forwards it
        to the gateway (08 D24, D58)."""
        return self.config.trace_id if self.protocol.traits.base_preflight else None

    def request(self, images: Mapping[str, str]) -> HTTPRequest:
        """Build the exact HTTP request (spec 04 §4, 05) with each fetched image of
        ``images`` (a ``data:`` URI by URL) in place of its URL; a URL not in ``images`` is
        sent as given. The path is relative to the base URL; the headers carry no
        credentials. ``extra_body`` is merged into the body last (08 D57).

        Raises:
            InvalidMessageError: no messages (RFC-0003 §3.3).
            UnsupportedContentError, UnsupportedParameterError: what the model cannot take.
        """
        messages = [_with_images(message, images) for message in self.messages]
        _check_not_empty(self.client, self.protocol, messages)
        request = self.protocol.build_request(self.client, self.profile, self.model, messages,
                                              self.config)
        if not self.config.extra_body or not self.protocol.traits.base_preflight:
            # A gateway forwards extra_body inside the config, for its own client (08 D57).
            return request
        body = _preflight.merge_extra_body(self.client, request.body, self.config.extra_body)
        return attrs.evolve(request, body=body)

    def new_pipeline(self, clock: Callable[[], int] | None) -> StreamPipeline:
        """A fresh pipeline for one response of this call (``adapters.new_pipeline``)."""
        return pipeline_for(self.client, self.profile, self.protocol, strict=self.strict,
                            clock=clock, base_url=self.base_url)


def prepare(
    client_type: str,
    model: str,
    messages: Sequence[UniMessage | Mapping[str, Any]],
    config: UniConfig | Mapping[str, Any] | None,
    *,
    base_url: str | None = None,
    strict: bool = False,
    created_at: int | None = None,
) -> CallPlan:
    """Resolve ``client_type`` once, read and check ``messages`` and ``config`` once, and
    return the call's ``CallPlan`` (08 D79).

    Messages and config may be values or wire dicts (``coerce_messages``,
    ``coerce_config``); config keys that are not UniConfig fields warn, or raise in
    ``strict`` mode (08 D57). The read messages lacking a ``created_at`` get ``created_at``
    when it is given (Unix milliseconds of the caller's clock: this module reads none, spec
    02 §8 step 1). A message without items is refused as the messages are read, before the
    config (step 3); an empty history is refused by ``CallPlan.request``, after every config
    error (spec 02 §8).

    Raises:
        RoutingError: a model id that is not a string (08 D69), an unknown client type.
        UnsupportedOperationError: an unbuilt client type or protocol.
        InvalidMessageError: a message that cannot be read, or one without items (except on
            a gateway's client, which sends what it is given), with ``message_index``.
        WireFormatError, UnsupportedParameterError: a config that cannot be read or sent,
            an unknown key in strict mode, or an ``extra_body`` key whose UniConfig
            counterpart this model refuses (``parameter="extra_body"``).
    """
    return read_call(client_type, model, messages, config, base_url=base_url, strict=strict,
                     stacklevel=4, sendable_first=False, created_at=created_at)


def read_call(
    client_type: str,
    model: str,
    messages: Sequence[UniMessage | Mapping[str, Any]],
    config: UniConfig | Mapping[str, Any] | None,
    *,
    base_url: str | None,
    strict: bool,
    stacklevel: int,
    sendable_first: bool,
    created_at: int | None = None,
) -> CallPlan:
    """``prepare``, with a warning about an unknown key pointed ``stacklevel`` frames up from
    the warning's own function (the caller of ``prepare`` or of its shims); with
    ``sendable_first``, an empty history is refused before the config is read, as
    ``build_request`` always has (docs/decisions.md)."""
    model = _preflight.check_model_id(model, client_type, routing=False)
    client, profile, protocol = resolve_named(client_type, model, base_url)
    checks = protocol.traits.base_preflight
    values = _preflight.read_messages(client, messages, check_values=checks)
    if created_at is not None:
        values = [message if message.created_at is not None
                  else attrs.evolve(message, created_at=created_at) for message in values]
    _check_items(client, protocol, values)
    if sendable_first:
        _check_not_empty(client, protocol, values)
    settings = _preflight.read_config(client, config, check_values=checks)
    if checks:
        _preflight.warn_unknown_keys(client, settings, strict=strict, stacklevel=stacklevel)
    protocol.check_config(client, profile, model, settings)
    _check_extra_body(client, profile, protocol, model, settings)
    fetches = canonical_client_type(client) is not None and needs_image_bytes(client, model,
                                                                              base_url)
    return CallPlan(client, model, protocol, profile, tuple(values), settings,
                    _remote_images(values) if fetches else {}, strict, base_url)


def _remote_images(messages: Sequence[UniMessage]) -> dict[str, int]:
    """Each http(s) image URL of ``messages``, with the index of its first message."""
    found: dict[str, int] = {}
    for index, message in enumerate(messages):
        for item in message.content_items:
            if isinstance(item, ImageUrlDone):
                urls: Sequence[str] = (item.image_url,)
            elif isinstance(item, ToolResultDone) and item.images:
                urls = item.images
            else:
                continue
            for url in urls:
                if url.lower().startswith(("http://", "https://")):
                    found.setdefault(url, index)
    return found


def _with_images(message: UniMessage, images: Mapping[str, str]) -> UniMessage:
    """``message`` with each image URL found in ``images`` replaced by its value there."""
    if not images:
        return message
    items = []
    for item in message.content_items:
        if isinstance(item, ImageUrlDone):
            item = ImageUrlDone(images.get(item.image_url, item.image_url))
        elif isinstance(item, ToolResultDone) and item.images:
            item = attrs.evolve(item, images=tuple(images.get(url, url) for url in item.images))
        items.append(item)
    return attrs.evolve(message, content_items=tuple(items))


def _check_items(
    client: str, protocol: WireProtocol[Any], messages: Sequence[UniMessage]
) -> None:
    """Refuse a message without items (RFC-0003 §3.3, spec 02 §8 step 3), except on a
    protocol without the base preflight (a gateway's client sends what it is given).

    Raises:
        InvalidMessageError: with the ``message_index`` of the first such message.
    """
    if not protocol.traits.base_preflight:
        return
    for index, message in enumerate(messages):
        if not message.content_items:
            raise InvalidMessageError(client, None, index, detail="no content items")


def _check_not_empty(
    client: str, protocol: WireProtocol[Any], messages: Sequence[UniMessage]
) -> None:
    """Refuse an empty history (RFC-0003 §3.3), except on a protocol without the base
    preflight.

    Raises:
        InvalidMessageError: ``messages`` is empty.
    """
    if protocol.traits.base_preflight and not messages:
        raise InvalidMessageError(
            client, None, None, detail="messages is empty: give at least one message"
        )


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
