"""The Chat Completions front door's writers (08 D73): the public stream as the SSE a Chat
Completions server sends, event by event, and the whole ``chat.completion`` object of a
``stream: false`` request (the HTTP error body is OpenAI's, ``adapters._openai.error_body``).

The stream (OpenAI API reference, "The chat completion chunk object"; "Streaming responses"):
``data: {chat.completion.chunk}`` lines, each with ``id``, ``object``, ``created``, ``model``
and one choice ``{"index": 0, "delta", "finish_reason"}``. The first chunk's delta is
``{"role": "assistant", "content": ""}``. Then, per public fragment:

* text: ``{"content": <text>}``;
* thinking: ``reasoning_content`` or ``reasoning``, the field the item's fidelity records
  (``reasoning_field``) when its first fragment carries that fidelity without encrypted data;
  otherwise both spellings with the same text as a ``reasoning_details`` block ``{"type":
  "reasoning.text", "text", "index": 0}``, as gateways stream it, so that a gateway-encrypted
  block ending the item (``reasoning.encrypted``, written at its ``thinking.done`` from the
  fidelity's ``encrypted_content``/``format``/``reasoning_id``) stays with its text, wherever
  in the item the fidelity arrived;
* tool calls: ``{"tool_calls": [{"index", "id", "type": "function", "function": {"name",
  "arguments"}}]}`` on a call's first fragment, ``{"tool_calls": [{"index", "function":
  {"arguments"}}]}`` after it; calls are indexed from 0 in stream order.

Items Chat cannot carry (inline data, thought images, embeddings) and fidelity other than the
above write nothing (``render.normalize`` says what a decoder gets back). The stop writes a
chunk with ``delta: {}`` and the finish reason (``unknown`` has no Chat value: ``stop``), then
the usage in a final chunk with ``choices: []`` (the ``stream_options.include_usage`` chunk,
always sent: 08 D73) and ``data: [DONE]``. A mid-stream error is written as OpenAI writes one:
``data: {"error": {"message", "type", "param", "code"}}`` and no ``[DONE]``, so the stream
never ends cleanly (the Chat machine raises it as ``ProviderStreamError``).

Pure: no clock (``created`` is the first event's ``created_at`` in seconds, else 0), no
randomness (the completion id is the one the writer is given, the gateway's fresh one per
request, else ``COMPLETION_ID``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, final

from adapters._convert import arguments_json
from adapters._render import sse_event
from mmsp_core.errors import MMSPError, ProviderStreamError
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
)

from .usage import usage_json

__all__ = [
    "COMPLETION_ID",
    "ChatStreamWriter",
    "encrypted_fidelity",
    "reasoning_field",
    "response",
]

#: The completion id when none is given (``render``'s recordings).
COMPLETION_ID: Final = "chatcmpl-mmsp-render"
#: The two spellings of the thinking field (spec 01 §5).
REASONING_FIELDS: Final = ("reasoning_content", "reasoning")
#: The ``reasoning_details`` block that carries gateway-encrypted reasoning (06 §3 step 1).
ENCRYPTED_BLOCK: Final = "reasoning.encrypted"

_FINISH: Final[Mapping[FinishReason, str]] = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALL: "tool_calls",
    FinishReason.UNKNOWN: "stop",  # Chat has no such value
}
_DONE: Final = b"data: [DONE]\n\n"
_JSON = dict[str, Any]


def reasoning_field(fidelity: Mapping[str, Any] | None) -> str | None:
    """The thinking field a thinking item's fidelity records, if it is one of the two."""
    field = (fidelity or {}).get("reasoning_field")
    return field if field in REASONING_FIELDS else None


def encrypted_fidelity(fidelity: Mapping[str, Any] | None) -> _JSON | None:
    """The gateway-encrypted keys Chat carries (``encrypted_content`` and ``format``, both
    strings, and a string ``reasoning_id``), if the fidelity has them (05 §5)."""
    fidelity = fidelity or {}
    data, fmt, rid = (fidelity.get(k) for k in ("encrypted_content", "format", "reasoning_id"))
    if not (isinstance(data, str) and isinstance(fmt, str)):
        return None
    kept: _JSON = {"encrypted_content": data, "format": fmt}
    if isinstance(rid, str):
        kept["reasoning_id"] = rid
    return kept


def _encrypted_block(encrypted: Mapping[str, Any]) -> _JSON:
    block: _JSON = {
        "type": ENCRYPTED_BLOCK,
        "data": encrypted["encrypted_content"],
        "format": encrypted["format"],
        "index": 0,
    }
    if "reasoning_id" in encrypted:
        block["id"] = encrypted["reasoning_id"]
    return block


@final
class ChatStreamWriter:
    """Writes one public stream as Chat Completions SSE (the module docstring says how);
    ``adapters._front.StreamWriter``.

    Args:
        model: the model id every chunk echoes.
        response_id: the completion id every chunk carries.
    """

    __slots__ = ("_calls", "_created", "_details", "_fields", "_id", "_model", "_opened")

    def __init__(self, model: str, *, response_id: str = COMPLETION_ID) -> None:
        self._model = model
        self._id = response_id
        self._created = 0
        self._opened = False
        #: Tool calls begun so far; the open one's index is one less.
        self._calls = 0
        #: The fields the open thinking item is written in; ``()``: no thinking item open.
        self._fields: tuple[str, ...] = ()
        #: The open thinking item also goes as ``reasoning_details`` text blocks.
        self._details = False

    def event(self, event: UniEvent) -> bytes:
        """The chunks for one public event (the first call writes the role chunk first)."""
        out: list[bytes] = []
        if not self._opened:
            self._opened = True
            self._created = (event.created_at or 0) // 1000
            out.append(self._chunk({"role": "assistant", "content": ""}))
        if event.event_type == "stop":
            finish = _FINISH[FinishReason(event.finish_reason or FinishReason.STOP)]
            out.append(self._chunk({}, finish))
            usage = usage_json(event.usage_metadata or UsageMetadata())
            out.append(sse_event(None, {**self._head(), "choices": [], "usage": usage}))
            out.append(_DONE)
        else:
            for item in event.content_items:
                out.extend(self._chunk(delta) for delta in self._deltas(item))
        return b"".join(out)

    def error(self, error: MMSPError) -> bytes:
        """The error object OpenAI writes in a stream that fails (no ``[DONE]`` after it): a
        provider's own type, code and message when ``error`` is its in-stream error, else
        ``server_error`` with the error's class as the code."""
        if isinstance(error, ProviderStreamError):
            body = {
                "message": error.provider_message or str(error),
                "type": error.error_type or "server_error",
                "param": None,
                "code": error.code,
            }
        else:
            body = {
                "message": str(error),
                "type": "server_error",
                "param": None,
                "code": type(error).__name__,
            }
        return sse_event(None, {"error": body})

    def _head(self) -> _JSON:
        return {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
        }

    def _chunk(self, delta: _JSON, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse_event(None, {**self._head(), "choices": [choice]})

    def _deltas(self, item: object) -> list[_JSON]:
        """The deltas of one public item (none for what Chat does not carry)."""
        if isinstance(item, TextDelta):
            return [{"content": item.text}] if item.text else []
        if isinstance(item, ThinkingDelta):
            return self._thinking_delta(item)
        if isinstance(item, ThinkingDone):
            self._fields = ()
            encrypted = encrypted_fidelity(item.fidelity)
            if encrypted is None:
                return []
            return [{"reasoning_details": [_encrypted_block(encrypted)]}]
        if isinstance(item, ToolCallDelta):
            return [self._tool_call_delta(item)] if item.name or item.arguments else []
        return []

    def _thinking_delta(self, item: ThinkingDelta) -> list[_JSON]:
        if not self._fields:  # the item's first fragment decides its fields
            field = reasoning_field(item.fidelity)
            self._details = field is None or encrypted_fidelity(item.fidelity) is not None
            self._fields = REASONING_FIELDS if self._details or field is None else (field,)
        if not item.thinking:
            return []
        delta: _JSON = dict.fromkeys(self._fields, item.thinking)
        if self._details:
            block = {"type": "reasoning.text", "text": item.thinking, "index": 0}
            delta["reasoning_details"] = [block]
        return [delta]

    def _tool_call_delta(self, item: ToolCallDelta) -> _JSON:
        if item.name:  # a call's first fragment
            self._calls += 1
            call: _JSON = {
                "index": self._calls - 1,
                "id": item.tool_call_id,
                "type": "function",
                "function": {"name": item.name, "arguments": item.arguments},
            }
        else:
            call = {"index": self._calls - 1, "function": {"arguments": item.arguments}}
        return {"tool_calls": [call]}


def response(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    /,
    *,
    model: str,
    response_id: str = COMPLETION_ID,
) -> dict[str, Any]:
    """The ``chat.completion`` object a Chat Completions server answers ``stream: false``
    with (OpenAI API reference, "The chat completion object"), from the done items and the
    stop only (08 D73; ``adapters._front.WholeResponse``); its ``id`` is ``response_id``.

    ``choices[0].message``: ``role``; ``content``, the text items joined (``null`` when there
    are none); ``refusal`` ``null``; ``tool_calls`` when there are calls (arguments as JSON
    text); the thinking joined in the recorded field, or both spellings (as the stream writes
    it), and the gateway-encrypted blocks as ``reasoning_details``. ``usage`` as the stream
    writes it, unknown counts as 0 and both detail objects always present, as OpenAI sends
    them. Items Chat cannot carry are left out, as in the stream.
    """
    texts = [item.text for item in items if isinstance(item, TextDone)]
    message: _JSON = {"role": "assistant", "content": "".join(texts) if texts else None}
    message["refusal"] = None
    calls = [
        {
            "id": item.tool_call_id,
            "type": "function",
            "function": {"name": item.name, "arguments": arguments_json(item.arguments)},
        }
        for item in items
        if isinstance(item, ToolCallDone)
    ]
    if calls:
        message["tool_calls"] = calls
    message.update(_thinking_fields([item for item in items if isinstance(item, ThinkingDone)]))
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": _FINISH[FinishReason(finish_reason)],
    }
    counts = usage_json(
        UsageMetadata(*(count or 0 for count in (
            usage.cached_tokens, usage.prompt_tokens, usage.thoughts_tokens, usage.response_tokens
        )))
    )
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": counts,
    }


def _thinking_fields(thinking: Sequence[ThinkingDone]) -> _JSON:
    """The message fields of a whole response's thinking: the text joined in its recorded
    field, or both spellings, and the gateway-encrypted blocks as ``reasoning_details``."""
    fields: _JSON = {}
    text = "".join(item.thinking for item in thinking)
    if text:
        recorded = {reasoning_field(item.fidelity) for item in thinking if item.thinking}
        field = next(iter(recorded)) if len(recorded) == 1 else None
        fields.update(dict.fromkeys(REASONING_FIELDS if field is None else (field,), text))
    details = [
        _encrypted_block(encrypted)
        for item in thinking
        if (encrypted := encrypted_fidelity(item.fidelity)) is not None
    ]
    if details:
        fields["reasoning_details"] = details
    return fields
