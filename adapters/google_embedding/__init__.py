"""Gemini embeddings: the ``google-embedding`` protocol of both Google client types (08 D64).

Not a client type's own protocol: ``google-official`` and ``google-genai`` send a model whose
lower-cased id contains ``embedding`` here (the ``ModelClass`` on their client rows, 04 §2,
``ClientSpec.speaks``), with one ``:batchEmbedContents`` call holding every message. The
answer is one JSON body (``BodyDecoder``), read into the same public grammar as every stream:
one ``embedding.delta``/``embedding.done`` per message, in order, then a stop with
``prompt_tokens`` (02 §10). The table is the one-body embedding kernel of
``adapters._embedding``; ``request`` builds requests, ``render`` writes the body
a server would send, ``usage`` is the usage mapping, ``simulate`` the simulator's dialect, and
Google's error shapes are ``adapters._google.shapes``'. Both client types read the same
call, so there is no profile. As a decode source the protocol name behaves as google-genai.
"""

from __future__ import annotations

from typing import Final

from adapters._google.shapes import ERROR_SHAPE
from adapters._spec import Traits, WireProtocol
from mmsp_core.sse import BodyDecoder

from . import simulate
from .machine import GoogleEmbeddingMachine
from .render import normalize, normalize_usage, render
from .request import build_request, check_config

__all__ = ["PROTOCOL"]


PROTOCOL: Final = WireProtocol(
    name="google-embedding",
    new_machine=GoogleEmbeddingMachine,
    build_request=build_request,
    check_config=check_config,
    render=render,
    traits=Traits(
        display_name="Gemini embeddings", error_shape=ERROR_SHAPE, dialect=simulate.DIALECT,
        telemetry_operation="embeddings",
    ),
    normalize=normalize,
    normalize_usage=normalize_usage,
    new_decoder=BodyDecoder,
    compatible_client="google-genai",
)
