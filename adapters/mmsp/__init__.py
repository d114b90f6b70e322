"""MMSP: the wire protocol of the ``mmsp`` client, which streams from an MMSP server (07 §4,
§6; 06 §8; 03 §5).

``request`` builds ``POST /stream`` (messages and config forwarded as they are), ``machine``
reads the server's public stream and ``PassThrough`` (``mmsp_core.grammar``) checks it and hands
it on unchanged, ``render`` writes the body a server would send, ``simulate`` lets the provider
simulator play a server, and ``profiles`` holds the client's profile (08 D63). The server checks
messages and maps the config with its own client, so the base preflight does not apply, and
everything the server reports, its refusals included, is the client's ``UpstreamError``
(08 D13); the caller's key wins over a ``default_headers`` ``Authorization`` (04 §3). A
refusal's body is the server's ``{"error": {"type", "message", ...}}`` (the wire form of an
error, 03 §3; 07 §3, §4), read at those places (``ERROR_SHAPE``).
"""

from __future__ import annotations

from typing import Final

from adapters._spec import ErrorShape, Traits, WireProtocol
from mmsp_core.grammar import PassThrough

from . import simulate
from .machine import MMSPMachine
from .render import normalize, render
from .request import build_request, check_config

__all__ = ["ERROR_SHAPE", "PROTOCOL"]

#: The server's error body, the wire form of an error (03 §3): ``{"error": {"type",
#: "message", ...}}``, with the ``request_id`` of a relayed ``ProviderHTTPError`` (09).
ERROR_SHAPE: Final = ErrorShape(
    error_type=(("error", "type"),),
    message=(("error", "message"),),
    request_id=(("error", "request_id"),),
)


PROTOCOL: Final = WireProtocol(
    name="mmsp",
    new_machine=MMSPMachine,
    build_request=build_request,
    check_config=check_config,
    render=render,
    traits=Traits(
        display_name="MMSP server",
        base_preflight=False,
        upstream_errors=True,
        key_wins_over_default_headers=True,
        error_shape=ERROR_SHAPE,
        dialect=simulate.DIALECT,
    ),
    normalize=normalize,
    new_finalizer=PassThrough,
)
