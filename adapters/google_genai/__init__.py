"""Gemini generateContent: the wire protocol of ``google-genai`` (spec 04 §1, §4; 05; 06 §4).

``machine`` decodes a ``streamGenerateContent?alt=sse`` response, ``request`` builds requests,
``render`` writes the body a server would send, ``usage`` is the one usage mapping both of them
use, ``profiles`` holds the client type's per-client data (08 D63) and ``simulate`` the
simulator's dialect. What it shares with the Interactions protocol of ``google-official`` is
in ``adapters._google``: ``thinking`` (Gemini model modes and thinking levels, 05 §2.3),
``shapes`` (Google's error bodies and model list) and ``script`` (two-speaker scripts). The
protocol name ``"google-genai"`` as a decode source behaves as the ``google-genai`` client.
"""

from __future__ import annotations

from typing import Final

from adapters._google import shapes
from adapters._spec import Traits, WireProtocol

from . import simulate
from .machine import GenAIMachine
from .render import normalize, render
from .request import build_request, check_config

__all__ = ["PROTOCOL"]


PROTOCOL: Final = WireProtocol(
    name="google-genai",
    new_machine=GenAIMachine,
    build_request=build_request,
    check_config=check_config,
    render=render,
    traits=Traits(
        display_name="Gemini generateContent",
        error_shape=shapes.ERROR_SHAPE,
        dialect=simulate.DIALECT,
    ),
    normalize=normalize,
)
