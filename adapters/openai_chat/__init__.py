"""OpenAI Chat Completions: the wire protocol of ``openai-chat``, ``openai-chat-vllm-adapter``,
``zai-official`` and ``moonshot-official`` (spec 04 §1, §4; 05; 06 §3).

``machine`` decodes a response stream, ``request`` builds requests, ``render`` writes the body
a server would send, ``usage`` is the one usage mapping both of them use, and ``profiles``
holds each client type's per-client data (08 D63). The gateway's front door (08 D73):
``reader`` reads a caller's request, ``writer`` writes the public stream back as Chat SSE
event by event (``render`` is a fold over it) and the whole response; the error body is
OpenAI's (``adapters._openai``). The protocol name ``"openai-chat"`` as a decode source
behaves as the ``openai-chat`` client.
"""

from __future__ import annotations

from typing import Final

from adapters._front import FrontDoor
from adapters._openai import ERROR_SHAPE, error_body
from adapters._spec import Traits, WireProtocol

from . import simulate
from .machine import ChatMachine
from .reader import read_request
from .render import normalize, render
from .request import build_request, check_config
from .writer import ChatStreamWriter, response

__all__ = ["PROTOCOL"]


PROTOCOL: Final = WireProtocol(
    name="openai-chat",
    new_machine=ChatMachine,
    build_request=build_request,
    check_config=check_config,
    render=render,
    traits=Traits(display_name="OpenAI Chat Completions", error_shape=ERROR_SHAPE,
                  dialect=simulate.DIALECT),
    normalize=normalize,
    front=FrontDoor(
        path="/v1/chat/completions",
        id_prefix="chatcmpl-",
        read_request=read_request,
        new_writer=ChatStreamWriter,
        response=response,
        error_body=error_body,
    ),
)
