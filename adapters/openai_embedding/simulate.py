"""How an OpenAI embeddings endpoint answers, for the provider simulator (08 D63).

``POST /v1/embeddings`` (the base URL ends in ``/v1``, spec 04 §4), the key as a Bearer token
only, OpenAI's error bodies (``adapters._openai.error_body``: every OpenAI API
sends the same ones), one JSON body as the answer, and an answer holding an ``error`` as the
overload (08 D4: nothing else can be said in a body that is not a stream). ``read_turn`` gives
the demo script the inputs, whose vectors are the answer. Azure OpenAI serves it too
(``adapters._openai.with_azure``, 08 D72).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._openai import error_body, with_azure
from .._simulate import dimensions
from .._spec import SimulatorDialect, Turn

__all__ = ["DIALECT", "read_turn"]


def read_turn(body: Mapping[str, Any]) -> Turn:
    """The inputs of an embeddings request (``input``: a string or a list of strings) and the
    ``dimensions`` it asks for."""
    given = body.get("input")
    texts = [given] if isinstance(given, str) else given if isinstance(given, list) else []
    inputs = tuple(text if isinstance(text, str) else "" for text in texts)
    return Turn(inputs[-1] if inputs else "", (), (), inputs, dimensions(body.get("dimensions")))


DIALECT: Final = with_azure(SimulatorDialect(
    route=("POST", r"/v1/embeddings"),
    base_path="/v1",
    key_headers=("authorization",),
    request_id_header="x-request-id",
    error_body=error_body,
    bad_key_message="Invalid API key.",
    stream_error=b'{"error":{"message":"The server is overloaded.","type":"server_error",'
    b'"code":"overloaded"}}',
    read_turn=read_turn,
    tool_call_id_prefix="call_sim_",
    content_type="application/json",
))
