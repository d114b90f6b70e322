"""OpenAI embeddings: the wire protocol of ``openai-embedding``, to which ``openai-official``
sends its ``text-embedding-*`` ids (spec 02 §10, 04 §1, §2, §4; 05 §4.5; 06 §6).

Not an event stream: the answer is one JSON body (the record's decoder is ``BodyDecoder``),
read by ``machine`` into the same public grammar as every stream: one
``embedding.delta``/``embedding.done`` per input message, in input order, then a stop with
``prompt_tokens``. ``request`` builds requests, ``render`` writes the body a server would
send, ``usage`` is the one usage mapping both use, ``vectors`` the base64 float32 form of a
vector (08 D28), ``simulate`` the simulator's dialect. No client differs from another on this
protocol, so it has no profile. The protocol name ``"openai-embedding"`` as a decode source
behaves as the ``openai-embedding`` client.
"""

from __future__ import annotations

from typing import Final

from adapters._openai import ERROR_SHAPE
from adapters._spec import Traits, WireProtocol
from mmsp_core.sse import BodyDecoder

from . import simulate
from .machine import OpenAIEmbeddingMachine
from .render import normalize, normalize_usage, render
from .request import build_request, check_config

__all__ = ["PROTOCOL"]


PROTOCOL: Final = WireProtocol(
    name="openai-embedding",
    new_machine=OpenAIEmbeddingMachine,
    build_request=build_request,
    check_config=check_config,
    render=render,
    traits=Traits(display_name="OpenAI embeddings", error_shape=ERROR_SHAPE,
                  dialect=simulate.DIALECT, telemetry_operation="embeddings"),
    normalize=normalize,
    normalize_usage=normalize_usage,
    new_decoder=BodyDecoder,
)
