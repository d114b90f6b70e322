"""The gateway's front doors (08 D73): it speaks the protocols of the records that have one.

A protocol record with a ``front`` (``adapters.FrontDoor``) gives the gateway a route,
``POST <front.path>`` (``/v1/chat/completions``, ``/v1/responses``, ``/v1/messages``), and
everything needed to answer there in the protocol's own format: the reader of a request, the
writer of the public stream as the protocol's SSE, the whole JSON response and the HTTP error
body. Nothing here knows a protocol by name: the doors are read from ``adapters.PROTOCOLS`` at
call time (08 D63), so a protocol registered later gets its route too.

Errors before the head (08 D73): the HTTP status and head of a door's stream are sent when the
upstream has answered, that is with its first public event or its first error. An error first
is an HTTP status with the protocol's error body (``door_error``), by ``error_status``:

=================================================================  ==========================
the error                                                           the status
=================================================================  ==========================
a refused parameter, content or operation, an invalid message       400 (``param`` names a
                                                                    refused parameter)
the provider's own HTTP status (``ProviderHTTPError``), or the      that status, with
status an MMSP upstream reported (``UpstreamError``)                ``Retry-After`` when the
                                                                    provider sent one
... except 401 and 403: the row's own key was refused               502
a named timeout expired                                             504
the call was aborted (the server shutting down)                     503
anything else (no connection, a stream error, a cut stream)         502
=================================================================  ==========================

An upstream 401 or 403 is the operator's key failing, not the caller's: a caller's SDK reads
401 as "your key is wrong", and the caller's key was accepted.

After the head, every error is written in the stream as the protocol writes it
(``StreamWriter.error``): a cut upstream never ends as a well-formed stream.

The pure doors make no ids: each response, streamed or whole, gets a fresh one here
(``fresh_response_id``), in the protocol's shape (``FrontDoor.id_prefix``).
"""

from __future__ import annotations

import math
import urllib.parse
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Final, final

import adapters
from adapters import FrontDoor
from mmsp_core.errors import (
    AbortedError,
    InvalidMessageError,
    MMSPError,
    ProviderHTTPError,
    StreamTimeoutError,
    UnsupportedContentError,
    UnsupportedOperationError,
    UnsupportedParameterError,
    UpstreamError,
)
from mmsp_core.model import UniEvent

from .answers import SSE_HEADERS, Answer, json_answer, wire_error

__all__ = [
    "DoorStream",
    "door_error",
    "door_refusal",
    "error_status",
    "fresh_response_id",
    "front_doors",
    "ignored_fields_header",
    "model_list",
]

#: The errors that are the caller's request at fault (400).
_REFUSED: Final = (UnsupportedParameterError, UnsupportedContentError, UnsupportedOperationError,
                   InvalidMessageError)
#: Upstream statuses that are the row's key failing: answered 502 (module doc).
_ROW_KEY_REFUSED: Final = frozenset({401, 403})
#: The longest ``x-mmsp-ignored-fields`` value, so that no caller's client refuses the head
#: (h11 reads at most 16 KiB of it); the names that do not fit are left out, ``...`` says so.
_IGNORED_HEADER_CHARS: Final = 1024


def front_doors() -> dict[str, FrontDoor]:
    """The front doors of the registered protocols by route path, in registration order (the
    first record that claims a path keeps it)."""
    doors: dict[str, FrontDoor] = {}
    for protocol in adapters.PROTOCOLS.values():
        if protocol.front is not None:
            doors.setdefault(protocol.front.path, protocol.front)
    return doors


def fresh_response_id(door: FrontDoor) -> str:
    """A fresh id for one response of ``door``: its ``id_prefix`` and 24 random hex digits (as
    OpenAI's and Anthropic's ids look), so no two callers' responses share an id."""
    return door.id_prefix + uuid.uuid4().hex[:24]


def error_status(error: MMSPError) -> int:
    """The HTTP status of an error before a door's head (module doc's table)."""
    if isinstance(error, _REFUSED):
        return 400
    if isinstance(error, ProviderHTTPError | UpstreamError):
        status = error.status
        if status is not None and 400 <= status <= 599 and status not in _ROW_KEY_REFUSED:
            return status
        return 502
    if isinstance(error, StreamTimeoutError):
        return 504
    if isinstance(error, AbortedError):
        return 503
    return 502


def door_refusal(door: FrontDoor, status: int, message: str, *, param: str | None = None,
                 headers: tuple[tuple[str, str], ...] = ()) -> Answer:
    """``status`` with the door's own error body (``param`` names a refused field)."""
    return json_answer(status, door.error_body(status, message, param=param), headers)


def door_error(door: FrontDoor, error: MMSPError) -> Answer:
    """``error`` before the head as an HTTP status and the door's error body (module doc),
    ``Retry-After`` in whole seconds when the provider asked for a wait."""
    param = error.parameter if isinstance(error, UnsupportedParameterError) else None
    retry_after = error.retry_after if isinstance(error, ProviderHTTPError) else None
    headers = (() if retry_after is None
               else (("retry-after", str(max(0, math.ceil(retry_after)))),))
    return door_refusal(door, error_status(error), str(error), param=param, headers=headers)


def ignored_fields_header(names: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The ``x-mmsp-ignored-fields`` header naming the request fields a door ignored (08 D73),
    none when it ignored none. Each name is percent-encoded (a caller's field name may hold a
    comma, a line break or any character) and the value is bounded (``_IGNORED_HEADER_CHARS``).
    """
    if not names:
        return ()
    value = ""
    for name in names:
        encoded = urllib.parse.quote(name, safe="")
        joined = f"{value}, {encoded}" if value else encoded
        if len(joined) > _IGNORED_HEADER_CHARS:
            value = f"{value}, ..." if value else "..."
            break
        value = joined
    return (("x-mmsp-ignored-fields", value),)


def as_mmsp_error(exc: Exception, client: str, secret: str) -> MMSPError:
    """``exc`` as an MMSP error a door can write: itself, or for any other exception (a bug)
    an ``UpstreamError`` with status 500 holding its wire form, ``secret`` redacted."""
    if isinstance(exc, MMSPError):
        return exc
    error = wire_error(exc, secret)["error"]
    return UpstreamError(client, status=500, error_type=error["type"], error=error)


@final
class DoorStream:
    """How a front door's stream reaches its caller (the gateway's stream encoding, 08 D73):
    the head waits for the upstream's answer; each public event goes out as the protocol's
    frames; an error before the first event becomes ``refusal`` (an HTTP error, module doc),
    after it the protocol's in-stream error. An abort is an error too: never a clean end.

    Args:
        door: the protocol's front door.
        model: the id the response echoes (the row's ``server_model_id``).
        ignored: the request fields the door ignored (``x-mmsp-ignored-fields``).
        client: the row's client type, named by an error that is no MMSP error.
        secret: the row's key, redacted from such an error.
    """

    #: The head waits for the first frame (or for ``refusal``).
    deferred: Final = True

    def __init__(
        self, door: FrontDoor, model: str, ignored: Sequence[str], *, client: str, secret: str
    ) -> None:
        self._door = door
        self._writer = door.new_writer(model, response_id=fresh_response_id(door))
        self._client = client
        self._secret = secret
        self._opened = False
        self.headers = (*SSE_HEADERS, *ignored_fields_header(ignored))
        #: The answer sent instead of the stream when it failed before its first event.
        self.refusal: Answer | None = None

    def event(self, event: UniEvent) -> bytes:
        self._opened = True
        return self._writer.event(event)

    def failure(self, exc: Exception) -> bytes:
        error = as_mmsp_error(exc, self._client, self._secret)
        if self._opened:
            return self._writer.error(error)
        self.refusal = door_error(self._door, error)
        return b""

    def aborted(self, exc: AbortedError) -> bytes:
        return self.failure(exc)

    def end(self) -> bytes:
        return b""


def model_list(
    models: Iterable[str], started_at: float, *, anthropic: bool
) -> dict[str, Any]:
    """``GET /v1/models``: Anthropic's list shape when ``anthropic`` (the request carried an
    ``anthropic-version`` header), else OpenAI's (07 §5, 08 D73); ``started_at`` (unix
    seconds) is every model's creation time. Both carry ``data[].id``, which the mmsp client
    reads."""
    ids = list(models)
    if not anthropic:
        created = int(started_at)
        return {"object": "list", "data": [
            {"id": model, "object": "model", "created": created, "owned_by": "mmsp"}
            for model in ids]}
    created_at = datetime.fromtimestamp(int(started_at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "data": [{"type": "model", "id": model, "display_name": model, "created_at": created_at}
                 for model in ids],
        "has_more": False,
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
    }
