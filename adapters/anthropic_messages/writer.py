"""The Anthropic Messages front door, writing side (08 D73): the public stream as the event
stream an Anthropic server sends, one public event at a time (``MessagesWriter``); the whole
``message`` object of ``stream: false`` (``response``); the HTTP error body (``error_body``).

The framing is Anthropic's (streaming docs, https://docs.claude.com/en/docs/build-with-claude/
streaming): ``message_start`` and a ``ping``; per content block ``content_block_start``, its
deltas (``text_delta``, ``thinking_delta``, ``signature_delta``, ``input_json_delta``) and
``content_block_stop``; then ``message_delta`` (``stop_reason`` and the usage) and
``message_stop``. An error after the stream began is ``event: error`` with the error body
(``{"type": "error", "error": {"type", "message"}}``) and nothing after it: never a
``message_stop``, so a cut upstream stays an error to the caller (errors docs,
https://docs.claude.com/en/api/errors: "errors can occur after returning a 200 response").

What the writer makes of a public stream (02 §3), so that this protocol's machine decodes its
output back into the same stream:

- a text or tool-call group is one block, opened by its first fragment (a tool call's block
  starts with its name and id and, as Anthropic's server does, an empty ``input_json_delta``),
  one delta per non-empty fragment, closed by the ``.done``;
- a thinking group is one block and its signature (``fidelity.signature`` of the ``.done``)
  one ``signature_delta`` before the close; a thinking item whose text is
  ``"_REDACTED_THINKING"`` and that has a signature is a ``redacted_thinking`` block carrying
  it, which the machine reads back as the same item. So the fragments of a thinking item are
  held back while they spell a beginning of that text (18 characters at most);
- a ``.done`` with no block open (an item fed whole, as ``render`` does for an empty one)
  writes its whole block;
- items this protocol cannot carry (media, embeddings) and fidelity other than a thinking
  signature are left out;
- the stop is ``message_delta`` and ``message_stop``, the finish reason as ``STOP_REASONS``
  says and the usage through the package's one mapping (``usage``). Anthropic's SDKs require
  ``input_tokens`` on ``message_start`` and ``output_tokens`` on ``message_delta``: a live
  writer reports ``input_tokens: 0`` on ``message_start`` (the real count comes with
  ``message_delta``) and a prompt or response count the stream did not have as ``0``. A
  writer given the usage up front (``render``, which writes recordings) writes every count
  exactly, a ``None`` one as an absent key, so decoding gives it back.

Pure: public events in, bytes out; only ``MMSPError`` leaves (08 D59). No randomness: the
message's id is the one the writer is given (the gateway's fresh one per request), else
``MESSAGE_ID``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, final

from adapters._convert import arguments_json
from adapters._render import sse_event
from mmsp_core.errors import (
    InvalidMessageError,
    MMSPError,
    ProviderHTTPError,
    ProviderStreamError,
    UnsupportedContentError,
    UnsupportedParameterError,
    UpstreamError,
)
from mmsp_core.kinds import repair_surrogates
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    Item,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
)

from .machine import REDACTED_THINKING
from .usage import to_message_delta, to_message_start

__all__ = [
    "MESSAGE_ID",
    "STOP_REASONS",
    "MessagesWriter",
    "error_body",
    "response",
]

#: The message id when none is given (``render``'s recordings), in Anthropic's shape (``msg_``
#: and 24 characters).
MESSAGE_ID: Final = "msg_01MMSPRENDER0000000000"

#: Finish reason -> the ``stop_reason`` the machine maps back to it (06 §1).
STOP_REASONS: Final[Mapping[FinishReason, str]] = {
    FinishReason.STOP: "end_turn",
    FinishReason.LENGTH: "max_tokens",
    FinishReason.TOOL_CALL: "tool_use",
    FinishReason.UNKNOWN: "pause_turn",
}

#: HTTP status -> the error type Anthropic's servers send with it (errors docs,
#: https://docs.claude.com/en/api/errors); any other 5xx is ``api_error``, any other 4xx
#: ``invalid_request_error``.
_ERROR_TYPES: Final[Mapping[int, str]] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
#: The same read back: a provider's in-stream error type keeps its status when it is one of
#: these.
_STATUS_OF_TYPE: Final[Mapping[str, int]] = {kind: status for status, kind in _ERROR_TYPES.items()}
#: Errors about what the caller sent: Anthropic's ``invalid_request_error``.
_CALLER_ERRORS: Final = (InvalidMessageError, UnsupportedContentError, UnsupportedParameterError)


def error_body(status: int, message: str, /, *, param: str | None = None) -> dict[str, Any]:
    """Anthropic's HTTP error body for ``status``: ``{"type": "error", "error": {"type",
    "message"}}``, the type from ``_ERROR_TYPES`` (the front door's and the simulator's).

    Anthropic's body has no ``param``: the message names the field, and ``param`` is only
    accepted for the front door's common signature.
    """
    error_type = _ERROR_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )
    return {"type": "error", "error": {"type": error_type, "message": repair_surrogates(message)}}


def _status(error: MMSPError) -> int:
    """The HTTP status an error stands for, whose type ``error_body`` writes: a provider's own
    status or known error type, 400 for what the caller sent, 529 (an overload: try again) for
    an error that may pass on a retry, else 500."""
    if isinstance(error, ProviderHTTPError | UpstreamError) and error.status is not None:
        return error.status
    if isinstance(error, ProviderStreamError):
        if isinstance(error.code, int) and 400 <= error.code <= 599:
            return error.code
        if error.error_type is not None and error.error_type in _STATUS_OF_TYPE:
            return _STATUS_OF_TYPE[error.error_type]
    if isinstance(error, _CALLER_ERRORS):
        return 400
    return 529 if error.retryable else 500


def _live_usage(usage: UsageMetadata) -> UsageMetadata:
    """``usage`` with the counts Anthropic's SDKs require (prompt, response) as ``0`` when the
    stream did not report them."""
    return UsageMetadata(
        usage.cached_tokens,
        usage.prompt_tokens or 0,
        usage.thoughts_tokens,
        usage.response_tokens or 0,
    )


def _stop_reason(finish: FinishReason | None) -> str:
    return STOP_REASONS[FinishReason(finish or FinishReason.UNKNOWN)]


class _Block(enum.Enum):
    TEXT = enum.auto()
    THINKING = enum.auto()
    TOOL_USE = enum.auto()


def _signature(item: ThinkingDone) -> str | None:
    signature = (item.fidelity or {}).get("signature")
    return signature if isinstance(signature, str) else None


@final
class MessagesWriter:
    """Writes one public stream as Anthropic's event stream (see the module docstring); a
    ``StreamWriter`` of the front door (08 D73).

    Args:
        model: the model id ``message_start`` echoes.
        response_id: the message's id, which ``message_start`` echoes.
        usage: the usage of the whole stream when known before it starts (``render``): every
            count is then written exactly as given; without it, as a live server writes them.
    """

    __slots__ = ("_ended", "_held", "_id", "_index", "_model", "_open", "_started", "_usage")

    def __init__(
        self,
        model: str,
        *,
        response_id: str = MESSAGE_ID,
        usage: UsageMetadata | None = None,
    ) -> None:
        self._model = model
        self._id = response_id
        self._usage = usage
        self._started = False
        self._ended = False
        #: The index of the block open or next to open.
        self._index = 0
        #: The block written open (its ``content_block_start`` sent), if any.
        self._open: _Block | None = None
        #: The fragments of a thinking item held back while they spell a beginning of
        #: ``REDACTED_THINKING``; ``None`` when no thinking item is held.
        self._held: list[str] | None = None

    def event(self, event: UniEvent, /) -> bytes:
        """The frames for ``event``; the first call also writes ``message_start`` and a
        ``ping``; nothing once the stream ended."""
        if self._ended:
            return b""
        out = [] if self._started else self._opening()
        self._started = True
        if event.event_type == "stop":
            out += self._close()
            out += self._stop(event)
        else:
            for item in event.content_items:
                out += self._item(item)
        return b"".join(out)

    def error(self, error: MMSPError, /) -> bytes:
        """``event: error`` with Anthropic's error body for ``error`` (its type from the
        error's status, ``_status``), which ends the stream; nothing once it ended."""
        if self._ended:
            return b""
        self._ended = True
        return sse_event("error", error_body(_status(error), str(error)))

    # -- the frames ---------------------------------------------------------------------------

    def _opening(self) -> list[bytes]:
        counts = UsageMetadata(prompt_tokens=0) if self._usage is None else self._usage
        message: dict[str, Any] = {
            "id": self._id,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": to_message_start(counts),
        }
        return [
            sse_event("message_start", {"type": "message_start", "message": message}),
            sse_event("ping", {"type": "ping"}),
        ]

    def _stop(self, event: UniEvent) -> list[bytes]:
        self._ended = True
        usage = event.usage_metadata or UsageMetadata()
        counts = to_message_delta(usage if self._usage is not None else _live_usage(usage))
        delta = {"stop_reason": _stop_reason(event.finish_reason), "stop_sequence": None}
        final = {"type": "message_delta", "delta": delta, "usage": counts}
        return [
            sse_event("message_delta", final),
            sse_event("message_stop", {"type": "message_stop"}),
        ]

    def _start(self, kind: _Block, block: Mapping[str, Any]) -> list[bytes]:
        """Close the open block, if any, and open ``block``."""
        out = self._close()
        self._open = kind
        out.append(
            sse_event(
                "content_block_start",
                {"type": "content_block_start", "index": self._index, "content_block": block},
            )
        )
        return out

    def _delta(self, delta: Mapping[str, Any]) -> bytes:
        return sse_event(
            "content_block_delta",
            {"type": "content_block_delta", "index": self._index, "delta": delta},
        )

    def _close(self) -> list[bytes]:
        """``content_block_stop`` of the open block, if any (a held thinking item is
        dropped: a public stream always closes its groups with their ``.done``)."""
        self._held = None
        if self._open is None:
            return []
        self._open = None
        index, self._index = self._index, self._index + 1
        return [sse_event("content_block_stop", {"type": "content_block_stop", "index": index})]

    # -- items --------------------------------------------------------------------------------

    def _item(self, item: Item) -> list[bytes]:
        """The frames of one public item (nothing for a kind this protocol cannot carry)."""
        if isinstance(item, TextDelta | TextDone):
            return self._text(item)
        if isinstance(item, ThinkingDelta):
            return self._thinking_fragment(item.thinking)
        if isinstance(item, ThinkingDone):
            return self._thinking_done(item)
        if isinstance(item, ToolCallDelta | ToolCallDone):
            return self._tool_call(item)
        return []

    def _text(self, item: TextDelta | TextDone) -> list[bytes]:
        if isinstance(item, TextDone):
            if self._open is _Block.TEXT:
                return self._close()
            return self._text_block(item.text) + self._close()  # fed whole
        if self._open is _Block.TEXT:
            return [self._delta({"type": "text_delta", "text": item.text})] if item.text else []
        return self._text_block(item.text)

    def _text_block(self, text: str) -> list[bytes]:
        """Open a text block with ``text`` as its first delta."""
        out = self._start(_Block.TEXT, {"type": "text", "text": ""})
        if text:
            out.append(self._delta({"type": "text_delta", "text": text}))
        return out

    def _thinking_fragment(self, text: str) -> list[bytes]:
        if self._open is _Block.THINKING:
            return [self._delta({"type": "thinking_delta", "thinking": text})] if text else []
        held = [] if self._held is None else self._held
        if REDACTED_THINKING.startswith("".join(held) + text):
            self._held = [*held, text] if text else held
            return []
        return self._thinking_block([*held, text])

    def _thinking_block(self, pieces: Sequence[str]) -> list[bytes]:
        """Open a thinking block with the non-empty ``pieces`` as its first deltas."""
        out = self._start(_Block.THINKING, {"type": "thinking", "thinking": "", "signature": ""})
        out += [
            self._delta({"type": "thinking_delta", "thinking": piece}) for piece in pieces if piece
        ]
        return out

    def _thinking_done(self, item: ThinkingDone) -> list[bytes]:
        signature = _signature(item)
        out: list[bytes] = []
        if self._open is not _Block.THINKING:  # held back, or fed whole
            if item.thinking == REDACTED_THINKING and signature is not None:
                block = {"type": "redacted_thinking", "data": signature}
                return self._start(_Block.THINKING, block) + self._close()
            out = self._thinking_block([item.thinking] if self._held is None else self._held)
        if signature is not None:
            out.append(self._delta({"type": "signature_delta", "signature": signature}))
        return out + self._close()

    def _tool_call(self, item: ToolCallDelta | ToolCallDone) -> list[bytes]:
        if isinstance(item, ToolCallDone):
            if self._open is _Block.TOOL_USE:
                return self._close()
            block = self._tool_block(item.tool_call_id, item.name, arguments_json(item.arguments))
            return block + self._close()  # fed whole
        if item.name:  # the first fragment of a call (02 §3)
            return self._tool_block(item.tool_call_id, item.name, item.arguments)
        if self._open is _Block.TOOL_USE and item.arguments:
            return [self._delta({"type": "input_json_delta", "partial_json": item.arguments})]
        return []

    def _tool_block(self, call_id: str, name: str, arguments: str) -> list[bytes]:
        """Open a ``tool_use`` block with ``arguments`` as its first fragment."""
        out = self._start(
            _Block.TOOL_USE, {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        )
        # Anthropic's server always opens the arguments with an empty fragment.
        out.append(self._delta({"type": "input_json_delta", "partial_json": ""}))
        if arguments:
            out.append(self._delta({"type": "input_json_delta", "partial_json": arguments}))
        return out


# --------------------------------------------------------------------------------------------
# The whole response (stream: false)
# --------------------------------------------------------------------------------------------


def _content(items: Sequence[DoneItem]) -> Iterator[dict[str, Any]]:
    """The content blocks of the done items this protocol carries, in order."""
    for item in items:
        if isinstance(item, TextDone):
            yield {"type": "text", "text": item.text}
        elif isinstance(item, ThinkingDone):
            signature = _signature(item)
            if item.thinking == REDACTED_THINKING and signature is not None:
                yield {"type": "redacted_thinking", "data": signature}
            else:
                yield {"type": "thinking", "thinking": item.thinking, "signature": signature or ""}
        elif isinstance(item, ToolCallDone):
            yield {
                "type": "tool_use",
                "id": item.tool_call_id,
                "name": item.name,
                "input": dict(item.arguments),
            }


def response(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    /,
    *,
    model: str,
    response_id: str = MESSAGE_ID,
) -> dict[str, Any]:
    """The ``message`` object Anthropic returns for ``stream: false`` (Messages API reference,
    https://docs.claude.com/en/api/messages): ``id``, ``type``, ``role``, ``model``, the
    content blocks of the done items (thinking with its signature, redacted thinking, text,
    tool use; other kinds left out), ``stop_reason``, ``stop_sequence`` and ``usage``
    (``input_tokens``, ``output_tokens``, ``cache_creation_input_tokens`` and
    ``cache_read_input_tokens``; counts as a live writer reports them, see the module
    docstring). ``response_id`` is the message's ``id``."""
    counts = {
        "input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cached_tokens,
        **to_message_delta(_live_usage(usage)),
    }
    return {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(_content(items)),
        "stop_reason": _stop_reason(finish_reason),
        "stop_sequence": None,
        "usage": counts,
    }
