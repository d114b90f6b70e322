"""The OpenAI Responses wire protocol (spec 04 §4, 05, 06 §2).

Serves the client types ``openai-official``, ``openai-responses`` (also the protocol name),
``deepseek-official`` and ``minimax-official``: ``machine`` decodes the event stream,
``request`` builds the request, ``render`` writes the body a Responses server would send.
"""

from __future__ import annotations

from .._spec import WireProtocol
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

PROTOCOL = WireProtocol(
    name="openai-responses",
    new_machine=new_machine,
    build_request=build_request,
    check_config=check_config,
    render=render,
)
