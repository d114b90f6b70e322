"""The OpenAI embeddings machine: one JSON body in, one client stop event out (spec 06 §6).

Theory of operation
-------------------
An embeddings answer is not an event stream but one JSON body (spec 02 §10): the record's
decoder is ``BodyDecoder``, which hands the whole body to the machine as the data of one event
when the body has ended. ``classify`` parses it as one JSON object and names it:

* ``"error"``: it holds a non-null ``error`` (a gateway's refusal sent with status 200, the
  provider simulator's overload): ``ProviderStreamError`` (08 D4);
* ``"body"``: anything else, the answer.

There are two states: BODY, then DONE (terminal: nothing follows the body, 08 D56). The
handler of ``"body"`` returns one client ``stop`` event that carries one ``embedding.delta``
per vector, in input order, the usage, and finish reason ``stop``; the pipeline hands its
items to the finalizer one by one, so the public stream is one ``embedding.delta`` and its
``embedding.done`` per input, then the stop (02 §10). An empty vector still stands for its
input (02 §4: an empty embedding fragment is still emitted).

OpenAI pairs vectors with inputs by ``index`` (06 §6): the entries of ``data`` are taken in
the order of their indexes, which must be exactly ``0 .. n-1`` (a repeated or missing index
would pair a vector with the wrong input, so it is a ``MalformedEventError``). Each
``embedding`` is base64 of little-endian float32 (what the builder asks for, 08 D28) or an
array of numbers. ``usage.prompt_tokens`` is the stop's input count, the other counts null.
The profile is not read.

``EmbeddingMachine`` is the table of every one-body embedding protocol: one of the same shape
(``google-embedding``) subclasses it and reads its own answer and error in ``read_body`` and
``read_error``. Fields are
read through ``adapters._json``, so a field of the wrong JSON type is a
``MalformedEventError`` (08 D59).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, ClassVar

from adapters._json import BadField, integer, loads_object, numbers
from adapters._table import TableMachine, Transitions
from mmsp_core.errors import ProviderStreamError
from mmsp_core.model import EmbeddingDelta, FinishReason, UniEvent, UsageMetadata
from mmsp_core.sse import SSEEvent

from . import vectors
from .usage import read_usage

__all__ = ["EmbeddingMachine"]

Vectors = list[tuple[float, ...]]


class _State(enum.Enum):
    BODY = enum.auto()
    DONE = enum.auto()


def _on_body(machine: EmbeddingMachine, body: dict[str, Any]) -> UniEvent:
    """The answer: its vectors in input order, its usage, finish ``stop``."""
    found, usage = machine.read_body(body)
    return UniEvent("stop", tuple(map(EmbeddingDelta, found)), usage, FinishReason.STOP)


def _on_error(machine: EmbeddingMachine, body: dict[str, Any]) -> UniEvent:
    """An answer that holds an ``error``: raise ``ProviderStreamError`` (08 D4)."""
    raise machine.read_error(body["error"])


class EmbeddingMachine(TableMachine):
    """Read an OpenAI embeddings answer (module docstring); subclasses read other answers of
    the same shape by overriding ``read_body`` and ``read_error``."""

    __slots__ = ()

    INITIAL: ClassVar = _State.BODY
    TERMINAL: ClassVar = frozenset({_State.DONE})
    TRANSITIONS: ClassVar[Transitions] = {
        (_State.BODY, "body"): (_on_body, _State.DONE),
        (_State.BODY, "error"): (_on_error, _State.DONE),
    }

    def __init__(
        self, client: str, profile: Any, *, strict: bool, base_url: str | None = None
    ) -> None:
        """The kernel's arguments; ``base_url`` is taken and unused, as ``NewMachine`` says."""
        super().__init__(client, profile, strict=strict)

    def classify(self, sse: SSEEvent) -> tuple[str, Any]:
        """Name the answer ``"error"`` when it holds a non-null ``error``, else ``"body"``.

        Raises:
            BadField: the answer is not one JSON object.
        """
        body = loads_object(sse.data)
        return ("body" if body.get("error") is None else "error"), body

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
