"""The Anthropic Messages wire protocol, for ``anthropic-official`` and ``ant-messages``.

- ``machine``: the event stream -> client-stream UniEvents (spec 06 §1);
- ``request``: UniConfig and messages -> ``POST /v1/messages`` (spec 04 §4, 05);
- ``render``: done items -> the event stream a server would send, and what this protocol
  cannot carry (08 D49).

The protocol name ``ant-messages``, used as a ``decode`` source, behaves as the ant-messages
client (09). Model listing lives with the client registry (``adapters.clients``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from adapters._spec import Traits, WireProtocol
from mmsp_core.model import UniConfig, UniMessage
from mmsp_core.pipeline import Machine
from mmsp_core.request import HTTPRequest

from .machine import AnthropicMessagesMachine
from .render import render
from .request import build_request, check_config

__all__ = ["PROTOCOL", "AnthropicMessagesMachine", "build_request", "check_config", "render"]


def _new_machine(client: str, profile: Any, *, strict: bool, base_url: str | None) -> Machine:
    return AnthropicMessagesMachine(client, strict=strict, base_url=base_url)


def _build_request(
    client: str, profile: Any, model: str, messages: Sequence[UniMessage], config: UniConfig
) -> HTTPRequest:
    return build_request(client, model, messages, config)


def _check_config(client: str, profile: Any, model: str, config: UniConfig) -> None:
    check_config(client, model, config)


from . import simulate  # noqa: E402, I001
PROTOCOL: Final = WireProtocol(
    name="ant-messages",
    new_machine=_new_machine,
    build_request=_build_request,
    check_config=_check_config,
    render=render,
    traits=Traits(display_name="Anthropic Messages", dialect=simulate.DIALECT),
)
