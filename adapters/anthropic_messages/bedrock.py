"""Anthropic Messages on Amazon Bedrock: the same protocol in another framing (08 D72).

anthropic-official reaches Claude on Bedrock through the base URL ``bedrock://<region>``
(``adapters._aws`` says where the requests go and how they are signed). What differs from
Anthropic's own API is only the envelope; the events inside are Anthropic's (06 §1), read by
the same machine:

- the request (``build_request``) is ``POST /model/<model id>/invoke-with-response-stream``,
  the id percent-encoded in the path; its body is the Messages body less ``model`` and
  ``stream``, with ``anthropic_version: "bedrock-2023-05-31"`` (every Claude model on Bedrock
  requires it) and the betas as the list ``anthropic_beta`` instead of a header. The profile
  (``profiles.BEDROCK``) puts prompt caching on the last block of the last user message and
  refuses fast mode (05 §4.1);
- the answer is an AWS event stream (``mmsp_core.eventstream``), not SSE. ``BedrockDecoder``
  turns each message into one ``SSEEvent`` named ``<:message-type>:<type>``: ``event:chunk``
  for an event message, whose payload is ``{"bytes": "<base64 of one Anthropic event's
  JSON>"}``; ``exception:<:exception-type>`` for an exception message, whose payload is
  ``{"message": ...}``; ``error:<:error-code>`` for an error message, its
  ``:error-message`` header as the message. ``BedrockMachine`` unwraps a chunk into the
  Anthropic event it carries (named by its ``type``) and runs the Anthropic table; an
  exception or error is ``ProviderStreamError`` with the exception type as its ``code``
  (08 D72: ``throttlingException``, ``serviceUnavailableException`` and
  ``modelNotReadyException`` are retryable before the first event);
- ``render`` wraps each event of the Anthropic rendering in a chunk message, and ``FRAMING``
  tells ``adapters.testing`` how to cut, read and rewrite such a body.

A stream cut inside a message loses that message, as an SSE stream cut inside an event does
(08 D44): the finalizer then says what is missing (``IncompleteStreamError``, 08 D19). A
message whose CRC does not match is ``MalformedEventError``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import urllib.parse
from collections.abc import Sequence
from typing import Any, ClassVar, Final, NoReturn, final

from adapters._json import BadField, loads_object, string
from adapters._table import Transitions
from mmsp_core.errors import IncompleteStreamError, ProviderStreamError
from mmsp_core.eventstream import (
    EventHeader,
    EventStreamDecoder,
    EventStreamMessage,
    encode_message,
)
from mmsp_core.model import DoneItem, FinishReason, UniConfig, UniMessage, UsageMetadata
from mmsp_core.request import HTTPRequest, encode_json_body
from mmsp_core.sse import SSEDecoder, SSEEvent

from .machine import AnthropicMessagesMachine
from .profiles import AnthropicProfile
from .render import render as render_sse
from .request import message_body

__all__ = [
    "BEDROCK_VERSION",
    "CONTENT_TYPE",
    "FRAMING",
    "PROTOCOL_NAME",
    "BedrockDecoder",
    "BedrockMachine",
    "build_request",
    "chunk_message",
    "exception_message",
    "render",
]

#: The protocol name of this framing (a ``decode`` source; the route's protocol).
PROTOCOL_NAME: Final = "ant-messages-bedrock"
#: The body's ``anthropic_version`` on Bedrock (08 D72: required on every Claude model).
BEDROCK_VERSION: Final = "bedrock-2023-05-31"
#: The content type of Bedrock's streamed answer.
CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
#: The name of the machine's row for an exception or error message.
_EXCEPTION: Final = "exception"


def _path(model: str) -> str:
    """``/model/<id>/invoke-with-response-stream``, the id percent-encoded (``:`` is
    ``%3A``) as botocore sends it."""
    return f"/model/{urllib.parse.quote(model, safe='')}/invoke-with-response-stream"


def build_request(
    client: str,
    profile: AnthropicProfile,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    """Build Bedrock's ``invoke-with-response-stream`` request (module docstring, 08 D72).

    Headers carry no credentials: the I/O layer signs the request, or adds the Bedrock API
    key, for each attempt.

    Raises:
        UnsupportedParameterError, InvalidMessageError, UnsupportedOperationError: as
            ``request.message_body``.
    """
    built = message_body(client, profile, model, messages, config)
    body: dict[str, Any] = {"anthropic_version": BEDROCK_VERSION}
    if built.betas:
        body["anthropic_beta"] = list(built.betas)
    body.update((key, value) for key, value in built.body.items()
                if key not in ("model", "stream"))
    headers = (("content-type", "application/json"), ("accept", CONTENT_TYPE))
    return HTTPRequest("POST", _path(model), headers, encode_json_body(body))


# --------------------------------------------------------------------------------------------
# The answer: event-stream messages -> Anthropic events
# --------------------------------------------------------------------------------------------


@final
class BedrockDecoder:
    """An AWS event stream to one ``SSEEvent`` per message (module docstring), with the
    decoders' ``feed`` / ``close`` interface.

    Raises (``feed``, ``close``): what ``EventStreamDecoder.feed`` raises (``MalformedEventError``
    for a bad CRC or bad lengths, ``StreamLimitError`` past its bounds), and ``RuntimeError``
    after ``close`` or after an error.
    """

    __slots__ = ("_stream",)

    def __init__(self) -> None:
        self._stream = EventStreamDecoder(PROTOCOL_NAME)

    def feed(self, data: bytes) -> list[SSEEvent]:
        return [_event(message) for message in self._stream.feed(data)]

    def close(self) -> list[SSEEvent]:
        """End the input. A message the stream was cut inside is dropped, as an SSE event a
        cut left unterminated is (08 D44): the finalizer decides what the cut cost (08 D19)."""
        with contextlib.suppress(IncompleteStreamError):
            self._stream.end()
        return []


def _event(message: EventStreamMessage) -> SSEEvent:
    """The ``SSEEvent`` of one message: named ``<message type>:<event, exception or error
    type>``, its payload (or an error message's ``:error-message``) as its data."""
    kind = _text(message.header(":message-type"))
    if kind == "error":
        document = {"message": _text(message.header(":error-message"))}
        return SSEEvent(f"error:{_text(message.header(':error-code'))}",
                        encode_json_body(document).decode())
    name = _text(message.header(":exception-type" if kind == _EXCEPTION else ":event-type"))
    return SSEEvent(f"{kind}:{name}", message.payload.decode("utf-8", "replace"))


def _text(value: object) -> str:
    """A header's value as text: a string as it is, anything else (or none) as ``""``."""
    return value if isinstance(value, str) else ""


def _on_exception(m: BedrockMachine, data: tuple[str, str]) -> NoReturn:
    """Raise an exception or error message as ``ProviderStreamError`` with its type as the
    code, its payload's ``message``, and the usage so far (08 D4, D72)."""
    code, text = data
    message = loads_object(text).get("message")
    raise ProviderStreamError(
        m.client,
        code=code or None,
        provider_message=message if type(message) is str else None,
        usage_metadata=m.usage,
    )


class BedrockMachine(AnthropicMessagesMachine):
    """The Anthropic Messages machine reading the events ``BedrockDecoder`` unwraps from
    Bedrock's messages (module docstring); its other events are unknown."""

    __slots__ = ()

    TRANSITIONS: ClassVar[Transitions] = {
        **AnthropicMessagesMachine.TRANSITIONS,
        **{(state, _EXCEPTION): (_on_exception, state)
           for state in {state for state, _name in AnthropicMessagesMachine.TRANSITIONS}},
    }

    def classify(self, sse: SSEEvent) -> tuple[str, Any]:
        """A chunk's Anthropic event, named by its ``type``, as its JSON text; an exception or
        error message as ``("exception", (its type, its payload))``; any other message by
        its own name (unknown).

        Raises:
            BadField: a chunk whose payload is not ``{"bytes": <base64 of a JSON object with a
                string "type">}``.
        """
        kind, _, name = sse.event.partition(":")
        if kind == "event" and name == "chunk":
            text = _unwrap(string(loads_object(sse.data), "bytes"))
            return string(loads_object(text), "type"), text
        if kind in (_EXCEPTION, "error"):
            return _EXCEPTION, (name, sse.data)
        return sse.event, sse.data


def _unwrap(encoded: str) -> str:
    """The UTF-8 text a chunk's base64 ``bytes`` carries.

    Raises:
        BadField: not base64, or not UTF-8.
    """
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError) as exc:
        raise BadField(f"a chunk's 'bytes' is not base64 of UTF-8 text: {exc}") from None


# --------------------------------------------------------------------------------------------
# Writing it: the renderer, the simulator's messages and the conformance checks' framing
# --------------------------------------------------------------------------------------------

_CHUNK_HEADERS: Final = (
    EventHeader(":event-type", "chunk"),
    EventHeader(":content-type", "application/json"),
    EventHeader(":message-type", "event"),
)


def chunk_message(event: bytes) -> bytes:
    """The event message carrying one Anthropic event's JSON ``event``, as Bedrock sends it."""
    payload = encode_json_body({"bytes": base64.b64encode(event).decode("ascii")})
    return encode_message(_CHUNK_HEADERS, payload)


def exception_message(exception_type: str, message: str) -> bytes:
    """The exception message Bedrock sends for ``exception_type`` (``throttlingException``,
    ...) with ``message``."""
    headers = (
        EventHeader(":exception-type", exception_type),
        EventHeader(":content-type", "application/json"),
        EventHeader(":message-type", _EXCEPTION),
    )
    return encode_message(headers, encode_json_body({"message": message}))


def render(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    *,
    model: str,
    fragment_size: int | None,
) -> bytes:
    """The event stream Bedrock sends for these done items: each event of the Anthropic
    rendering (``render.render``, whose module says what cannot be carried) in a chunk.

    Raises:
        ValueError: ``fragment_size`` is less than 1.
    """
    sse = render_sse(items, usage, finish_reason, model=model, fragment_size=fragment_size)
    decoder = SSEDecoder()
    events = [*decoder.feed(sse), *decoder.close()]
    return b"".join(chunk_message(event.data.encode()) for event in events)


@final
class _Framing:
    """Bedrock's event stream as ``adapters.testing`` cuts, reads and rewrites it."""

    unknown_frame: Final = encode_message(
        (EventHeader(":event-type", "mmspTestUnknown"), EventHeader(":message-type", "event")),
        b"{}",
    )

    def frames(self, body: bytes) -> list[bytes]:
        pieces = []
        start = 0
        while len(body) - start >= 4:
            end = start + max(int.from_bytes(body[start : start + 4], "big"), 1)
            pieces.append(body[start:end])
            start = end
        return [*pieces, body[start:]] if start < len(body) else pieces

    def document(self, frame: bytes) -> bytes | None:
        message = _only_message(frame)
        if message is None:
            return None
        kind = message.header(":message-type")
        if kind == _EXCEPTION:
            return message.payload
        if kind != "event" or message.header(":event-type") != "chunk":
            return None
        try:
            return _unwrap(string(loads_object(message.payload.decode()), "bytes")).encode()
        except (BadField, UnicodeDecodeError):
            return None

    def reframe(self, frame: bytes, document: bytes) -> bytes:
        message = _only_message(frame)
        assert message is not None, "only a frame with a document is reframed"
        if message.header(":message-type") == _EXCEPTION:
            return encode_message(message.headers, document)
        return chunk_message(document)


def _only_message(frame: bytes) -> EventStreamMessage | None:
    """The one message ``frame`` holds, or ``None`` when it holds no whole one."""
    try:
        messages = EventStreamDecoder(PROTOCOL_NAME).feed(frame)
    except Exception:  # a broken frame holds no message: it stays as it is
        return None
    return messages[0] if len(messages) == 1 else None


#: The framing of Bedrock's answers, for the conformance checks (``Traits.framing``).
FRAMING: Final = _Framing()
