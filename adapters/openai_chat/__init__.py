"""OpenAI Chat Completions: the wire protocol of ``openai-chat``, ``openai-chat-vllm-adapter``,
``zai-official`` and ``moonshot-official`` (spec 04 §1, §4; 05; 06 §3).

``machine`` decodes a response stream, ``request`` builds requests, ``render`` writes the body
a server would send. The protocol name ``"openai-chat"`` as a decode source behaves as the
``openai-chat`` client.
"""

from __future__ import annotations

from adapters._spec import WireProtocol

from .machine import new_machine
from .render import render
from .request import build_request, check_config

__all__ = ["PROTOCOL"]

PROTOCOL = WireProtocol(
    name="openai-chat",
    new_machine=new_machine,
    build_request=build_request,
    check_config=check_config,
    render=render,
)
