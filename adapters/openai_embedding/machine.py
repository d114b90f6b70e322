"""The OpenAI embeddings machine: one JSON body in, one client stop event out (spec 06 §6).

Theory of operation
-------------------
The table, the states and the classification are those of every one-body embedding protocol
(``adapters._embedding.EmbeddingMachine``: the whole answer is one event, named ``"error"``
when it holds a non-null ``error``, else ``"body"``; BODY, then the terminal DONE). This
machine reads OpenAI's answer and error.

OpenAI pairs vectors with inputs by ``index`` (06 §6): the entries of ``data`` are taken in
the order of their indexes, which must be exactly ``0 .. n-1`` (a repeated or missing index
would pair a vector with the wrong input, so it is a ``MalformedEventError``). Each
``embedding`` is base64 of little-endian float32 (what the builder asks for, 08 D28) or an
array of numbers. ``usage.prompt_tokens`` is the stop's input count, the other counts null.
The profile is not read. Fields are read through ``adapters._json``, so a field of the wrong
JSON type is a ``MalformedEventError`` (08 D59).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters._embedding import EmbeddingMachine, Vectors
from adapters._json import BadField, integer, numbers
from mmsp_core.errors import ProviderStreamError
from mmsp_core.model import UsageMetadata

from . import vectors
from .usage import read_usage

__all__ = ["OpenAIEmbeddingMachine"]


class OpenAIEmbeddingMachine(EmbeddingMachine):
    """Read an OpenAI embeddings answer (module docstring)."""

    __slots__ = ()

    def read_error(self, error: Any) -> ProviderStreamError:
        """The ``ProviderStreamError`` of an answer's ``error`` value (08 D4).

        OpenAI's error object has ``code``, ``type`` and ``message``. The provider said the
        call failed, so odd field types never turn this into a ``MalformedEventError``: a
        field of another type is left out, and an error that is a string is the message.
        """
        if type(error) is not dict:
            message = error if type(error) is str else None
            return ProviderStreamError(self.client, provider_message=message)
        code = error.get("code")
        error_type = error.get("type")
        message = error.get("message")
        return ProviderStreamError(
            self.client,
            code if type(code) in (int, str) else None,
            error_type if type(error_type) is str else None,
            message if type(message) is str else None,
        )

    def read_body(self, body: Mapping[str, Any]) -> tuple[Vectors, UsageMetadata]:
        """The vectors of an OpenAI answer in the order of their indexes, and its usage.

        Raises:
            BadField: ``data`` is not an array of objects with an integer ``index`` and an
                ``embedding`` (base64 text or an array of numbers), or its indexes are not
                exactly ``0 .. n-1``.
        """
        data = body.get("data")
        if type(data) is not list:
            raise BadField("'data' must be an array")
        by_index: dict[int, tuple[float, ...]] = {}
        for entry in data:
            if type(entry) is not dict:
                raise BadField("each entry of 'data' must be an object")
            by_index[integer(entry, "index")] = _vector(entry)
        if sorted(by_index) != list(range(len(data))):
            raise BadField("the indexes of 'data' must be 0 to n-1, each once")
        return [by_index[index] for index in range(len(data))], read_usage(body)


def _vector(entry: Mapping[str, Any]) -> tuple[float, ...]:
    """One entry's ``embedding``: base64 float32 text, or an array of numbers (08 D28)."""
    value = entry.get("embedding")
    if type(value) is str:
        return vectors.decode(value)
    return numbers(entry, "embedding")
