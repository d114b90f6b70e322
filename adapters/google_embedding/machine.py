"""The Gemini embeddings machine: one ``batchEmbedContents`` answer in, one stop out (08 D64).

Theory of operation
-------------------
The table, the states and the classification are those of every one-body embedding protocol
(``adapters._embedding.EmbeddingMachine``: the whole answer is one event, named
``"error"`` when it holds a non-null ``error``, else ``"body"``; BODY, then the terminal
DONE). What this machine reads differs:

* the answer ``{"embeddings": [{"values": [...]}, ...], "usageMetadata"?: {...}}`` holds one
  embedding per request entry, in the order the builder sent them (one entry per message, so
  in input order; 04 §4). A missing ``values`` is an empty vector, which still stands for its
  input (06 §4). ``prompt_tokens`` is ``usageMetadata.promptTokenCount``, else null (08 D64);
* Vertex AI's ``embedContent`` answer (08 D72) holds one ``embedding``, ``{"values",
  "statistics"?: {"tokenCount"}}``: its vector, and ``prompt_tokens`` from its
  ``statistics.tokenCount`` when no ``usageMetadata`` counts them (04 §4, ``usage``);
* an ``error`` is Google's ``{"code", "message", "status"}``
  (``adapters._google.shapes.stream_error``, 08 D4).

The profile is not read: both Google client types send and read the same call (08 D64).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters._embedding import EmbeddingMachine, Vectors
from adapters._google.shapes import stream_error
from adapters._json import BadField, numbers, obj
from mmsp_core.errors import ProviderStreamError
from mmsp_core.model import UsageMetadata

from .usage import read_usage

__all__ = ["GoogleEmbeddingMachine"]


class GoogleEmbeddingMachine(EmbeddingMachine):
    """Read a ``batchEmbedContents`` answer (module docstring)."""

    __slots__ = ()

    def read_body(self, body: Mapping[str, Any]) -> tuple[Vectors, UsageMetadata]:
        """The vectors of the answer in request order, and its usage.

        Raises:
            BadField: neither ``embeddings``, an array of objects, nor Vertex's ``embedding``,
                an object; a ``values`` (if any) that is not an array of numbers.
        """
        embeddings = body.get("embeddings")
        if embeddings is None and "embedding" in body:
            embeddings = [obj(body, "embedding")]
        if type(embeddings) is not list:
            raise BadField("'embeddings' must be an array")
        found: Vectors = []
        for embedding in embeddings:
            if type(embedding) is not dict:
                raise BadField("each entry of 'embeddings' must be an object")
            found.append(() if embedding.get("values") is None else numbers(embedding, "values"))
        return found, read_usage(body)

    def read_error(self, error: Any) -> ProviderStreamError:
        """Google's error object as ``ProviderStreamError`` (08 D4), read leniently."""
        return stream_error(self.client, error, None)
