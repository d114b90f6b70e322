"""Front doors (08 D73): what a protocol record offers so the gateway can speak that protocol
to a caller, the other direction of its builder and machine.

A protocol with a front door reads a caller's request body in its own format into
``UniMessage``s and a ``UniConfig`` (``read_request``, the inverse of its ``build_request`` up to
the protocol's documented normalisation) and writes the public stream back in its own format,
event by event (``new_writer``), or as one JSON response built from the done items and the stop
(``response``). The gateway takes all of it from the record (08 D63): it never compares
protocol names.

Everything here is pure: bytes and JSON values in, bytes and JSON values out; only
``MMSPError`` leaves (08 D59). So a door makes no ids: the gateway gives each response its id
(``response_id``, in the shape ``FrontDoor.id_prefix`` names) and the writers echo it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, final

import attrs

from mmsp_core.errors import MMSPError
from mmsp_core.model import DoneItem, FinishReason, UniConfig, UniEvent, UniMessage, UsageMetadata

__all__ = [
    "ErrorBody",
    "FrontDoor",
    "FrontRequest",
    "NewStreamWriter",
    "ReadRequest",
    "StreamWriter",
    "WholeResponse",
]


@final
@attrs.frozen
class FrontRequest:
    """A caller's request as a front door read it."""

    #: The model id the caller asked for (the gateway's ``server_model_id``).
    model: str
    messages: tuple[UniMessage, ...]
    config: UniConfig
    #: ``stream: true`` in the request: SSE answered event by event; else one JSON response.
    stream: bool
    #: The request's fields the door ignored (08 D73), for ``x-mmsp-ignored-fields``, in the
    #: order the request wrote them.
    ignored: tuple[str, ...] = ()


class ReadRequest(Protocol):
    """Read a request body (parsed JSON) in the protocol's own format.

    Raises:
        UnsupportedParameterError: a field whose honouring would change the answer and that the
            door cannot honour (08 D73); ``parameter`` names the field (an HTTP 400 in the
            protocol's own error body).
        InvalidMessageError, WireFormatError: a body that is not a request of the protocol.
    """

    def __call__(self, body: object, /) -> FrontRequest: ...


class StreamWriter(Protocol):
    """Writes one public stream as the protocol's SSE, one event at a time, in the framing a
    real server of the protocol uses (usage as that protocol carries it)."""

    def event(self, event: UniEvent, /) -> bytes:
        """The frames for ``event`` (``b""`` when the protocol writes nothing for it yet; the
        first call also writes the protocol's opening frames)."""
        ...

    def error(self, error: MMSPError, /) -> bytes:
        """The frames that end the stream with ``error``, as the protocol writes a mid-stream
        error (never a clean end: a truncated upstream stays an error to the caller)."""
        ...


class NewStreamWriter(Protocol):
    """A new writer for one response: ``new_writer(model, response_id=...)``, ``model`` the
    model id and ``response_id`` the response's own id, which every frame that names the
    response echoes."""

    def __call__(self, model: str, /, *, response_id: str) -> StreamWriter: ...


class WholeResponse(Protocol):
    """The protocol's whole JSON response (``stream: false``), built from the done items and
    the stop only (08 D73); ``model`` and ``response_id`` are the ids it echoes."""

    def __call__(
        self,
        items: Sequence[DoneItem],
        usage: UsageMetadata,
        finish_reason: FinishReason,
        /,
        *,
        model: str,
        response_id: str,
    ) -> Mapping[str, Any]: ...


class ErrorBody(Protocol):
    """The protocol's HTTP error body for ``status`` (OpenAI's ``{"error": {"message", "type",
    "param"}}``, Anthropic's ``{"type": "error", "error": {"type", "message"}}``); the error
    type follows from the status as the protocol's servers send it."""

    def __call__(
        self, status: int, message: str, /, *, param: str | None = None
    ) -> Mapping[str, Any]: ...


@final
@attrs.frozen
class FrontDoor:
    """One protocol's front door on the gateway (08 D73)."""

    #: The route it answers: ``"/v1/chat/completions"``, ``"/v1/responses"``, ``"/v1/messages"``.
    path: str
    #: How the protocol's response ids begin (``"chatcmpl-"``, ``"resp_"``, ``"msg_"``); the
    #: gateway appends a fresh part for each response (the door makes no ids).
    id_prefix: str
    read_request: ReadRequest
    new_writer: NewStreamWriter
    response: WholeResponse
    error_body: ErrorBody
