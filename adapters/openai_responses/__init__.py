"""The OpenAI Responses wire protocol (spec 04 §4, 05, 06 §2).

Serves the client types ``openai-official``, ``openai-responses`` (also the protocol name),
``deepseek-official`` and ``minimax-official``: ``machine`` decodes the event stream,
``request`` builds the request, ``render`` writes the body a Responses server would send.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from mmsp_core.model import UniConfig, UniMessage
from mmsp_core.pipeline import Machine
from mmsp_core.request import HTTPRequest

from .._spec import Traits, WireProtocol
from .machine import ResponsesMachine, new_machine
from .render import normalize, render
from .request import CLIENT_TYPES, build_request, check_config

__all__ = [
    "CLIENT_TYPES",
    "PROTOCOL",
    "ResponsesMachine",
    "build_request",
    "check_config",
    "new_machine",
    "normalize",
    "render",
]


def _new_machine(client: str, profile: Any, *, strict: bool, base_url: str | None) -> Machine:
    return new_machine(client, strict=strict, base_url=base_url)


def _build_request(
    client: str, profile: Any, model: str, messages: Sequence[UniMessage], config: UniConfig
) -> HTTPRequest:
    return build_request(client, model, messages, config)


def _check_config(client: str, profile: Any, model: str, config: UniConfig) -> None:
    check_config(client, model, config)


from . import simulate  # noqa: E402, I001
PROTOCOL: Final = WireProtocol(
    name="openai-responses",
    new_machine=_new_machine,
    build_request=_build_request,
    check_config=_check_config,
    render=render,
    traits=Traits(display_name="OpenAI Responses", dialect=simulate.DIALECT),
    normalize=normalize,
)
