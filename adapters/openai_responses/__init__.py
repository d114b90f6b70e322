"""The OpenAI Responses wire protocol (spec 04 §4, 05, 06 §2).

Serves the client types ``openai-official``, ``openai-responses`` (also the protocol name),
``deepseek-official`` and ``minimax-official``, each with its profile (``profiles``):
``machine`` decodes the event stream, ``request`` builds the request, ``render`` writes the
body a Responses server would send, and ``usage`` maps the wire usage both ways. The gateway's
front door ``POST /v1/responses`` (08 D73) reads a caller's request with ``reader`` (the
inverse of ``request`` up to ``request_normalization``) and writes the answer with ``writer``.
"""

from __future__ import annotations

from typing import Final

from .._front import FrontDoor
from .._openai import ERROR_SHAPE
from .._spec import Traits, WireProtocol
from .machine import ResponsesMachine
from .reader import read_request
from .render import normalize, render
from .request import build_request, check_config
from .request_normalization import normalize_request
from .writer import ResponsesWriter, error_body, response

__all__ = [
    "PROTOCOL",
    "ResponsesMachine",
    "build_request",
    "check_config",
    "normalize",
    "normalize_request",
    "read_request",
    "render",
]

from . import simulate  # noqa: I001
PROTOCOL: Final = WireProtocol(
    name="openai-responses",
    new_machine=ResponsesMachine,
    build_request=build_request,
    check_config=check_config,
    render=render,
    traits=Traits(display_name="OpenAI Responses", error_shape=ERROR_SHAPE,
                  dialect=simulate.DIALECT),
    normalize=normalize,
    front=FrontDoor(path="/v1/responses", id_prefix="resp_", read_request=read_request,
                    new_writer=ResponsesWriter, response=response, error_body=error_body),
)
