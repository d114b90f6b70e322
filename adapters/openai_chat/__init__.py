"""OpenAI Chat Completions: the wire protocol of ``openai-chat``, ``openai-chat-vllm-adapter``,
``zai-official`` and ``moonshot-official`` (spec 04 §1, §4; 05; 06 §3).

``machine`` decodes a response stream, ``request`` builds requests, ``render`` writes the body
a server would send. The protocol name ``"openai-chat"`` as a decode source behaves as the
``openai-chat`` client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from adapters._spec import Traits, WireProtocol
from mmsp_core.model import UniConfig, UniMessage
from mmsp_core.pipeline import Machine
from mmsp_core.request import HTTPRequest

from .machine import new_machine
from .render import normalize, render
from .request import build_request, check_config

__all__ = ["PROTOCOL"]


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
    name="openai-chat",
    new_machine=_new_machine,
    build_request=_build_request,
    check_config=_check_config,
    render=render,
    traits=Traits(display_name="OpenAI Chat Completions", dialect=simulate.DIALECT),
    normalize=normalize,
)
