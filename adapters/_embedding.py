"""The machine of every one-body embedding protocol: one JSON body in, one client stop out
(spec 02 §10, 06 §6, 08 D64), shared by ``openai-embedding`` and ``google-embedding``.

Theory of operation
-------------------
An embeddings answer is not an event stream but one JSON body (spec 02 §10): the record's
decoder is ``BodyDecoder``, which hands the whole body to the machine as the data of one event
when the body has ended. ``classify`` parses it as one JSON object and names it:

* ``"error"``: it holds a non-null ``error`` (a gateway's refusal sent with status 200, the
  provider simulator's overload): ``ProviderStreamError`` (08 D4), built by the protocol's
  ``read_error``;
* ``"body"``: anything else, the answer, read by the protocol's ``read_body``.

There are two states: BODY, then DONE (terminal: nothing follows the body, 08 D56). The
handler of ``"body"`` returns one client ``stop`` event that carries one ``embedding.delta``
per vector, in input order, the usage, and finish reason ``stop``; the pipeline hands its
items to the finalizer one by one, so the public stream is one ``embedding.delta`` and its
``embedding.done`` per input, then the stop (02 §10). An empty vector still stands for its
input (02 §4: an empty embedding fragment is still emitted).

Each protocol subclasses ``EmbeddingMachine`` and gives ``read_body`` and ``read_error``. An
embeddings answer carries only its input count (``carried``). Pure: no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, ClassVar

from adapters._json import loads_object
from adapters._table import TableMachine, Transitions
from mmsp_core.errors import ProviderStreamError
from mmsp_core.model import EmbeddingDelta, FinishReason, UniEvent, UsageMetadata
from mmsp_core.sse import SSEEvent

__all__ = ["EmbeddingMachine", "Vectors", "carried"]

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
    """Read a one-body embeddings answer (module docstring); a protocol's subclass reads its
    own answer and error in ``read_body`` and ``read_error``."""

    __slots__ = ()

    INITIAL: ClassVar = _State.BODY
    TERMINAL: ClassVar = frozenset({_State.DONE})
    TRANSITIONS: ClassVar[Transitions] = {
        (_State.BODY, "body"): (_on_body, _State.DONE),
        (_State.BODY, "error"): (_on_error, _State.DONE),
    }

    def __init__(
        self, client: str, profile: None, *, strict: bool, base_url: str | None = None
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
        """The ``ProviderStreamError`` of an answer's ``error`` value (08 D4); the protocol's
        subclass reads its error's form.

        Raises:
            NotImplementedError: on this base class, which no record names.
        """
        raise NotImplementedError

    def read_body(self, body: Mapping[str, Any]) -> tuple[Vectors, UsageMetadata]:
        """The vectors of an answer in input order, and its usage; the protocol's subclass
        reads its answer's form.

        Raises:
            BadField: in a subclass, an answer of the wrong shape.
            NotImplementedError: on this base class, which no record names.
        """
        raise NotImplementedError


def carried(usage: UsageMetadata) -> UsageMetadata:
    """What of ``usage`` an embeddings body carries: the input count alone."""
    return UsageMetadata(prompt_tokens=usage.prompt_tokens)
