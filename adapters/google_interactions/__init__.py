"""The Gemini Interactions wire protocol (spec 04 §4, 05 §4.4, §5, 06 §5).

Serves the client type ``google-official`` (its profile in ``profiles``): ``machine`` decodes
the event stream, ``request`` builds the request, ``render`` writes the body the Interactions
API would send, ``usage`` maps the wire usage both ways and ``simulate`` is its dialect for
the provider simulator. The Gemini model classes and thinking levels, and Google's error
shapes, are shared with generateContent (``adapters._google.thinking``, ``.shapes``).
"""

from __future__ import annotations

from typing import Final

from .._google.shapes import ERROR_SHAPE
from .._spec import Traits, WireProtocol
from . import simulate
from .machine import InteractionsMachine
from .render import normalize, render
from .request import build_request, check_config

__all__ = [
    "PROTOCOL",
    "InteractionsMachine",
    "build_request",
    "check_config",
    "normalize",
    "render",
]

PROTOCOL: Final = WireProtocol(
    name="google-interactions",
    new_machine=InteractionsMachine,
    build_request=build_request,
    check_config=check_config,
    render=render,
    traits=Traits(
        display_name="Gemini Interactions", error_shape=ERROR_SHAPE, dialect=simulate.DIALECT
    ),
    normalize=normalize,
    compatible_client="google-official",
)
