"""The Responses front door's writers (08 D73): the public stream as the SSE a Responses server
sends, event by event; the whole ``response`` object of a ``stream: false`` request; the HTTP
error body.

The stream (OpenAI API reference, "Streaming events" of the Responses API): every event is
``event: <type>`` plus ``data: {"type", "sequence_number", ...}``, numbered from 0. The first
public event writes ``response.created`` and ``response.in_progress`` (the response object,
``status: "in_progress"``, no output yet). Each public group (02 §3) is one output item at its
own ``output_index``, announced by ``response.output_item.added`` when its first fragment
arrives and ended by ``response.output_item.done`` at its ``.done``:

* text: a ``message`` item (with the ``phase`` its first fragment's fidelity records), its
  ``output_text`` part (``response.content_part.added``), ``response.output_text.delta`` per
  fragment, then ``response.output_text.done``, ``response.content_part.done``;
* thinking: a ``reasoning`` item; its text streams as a summary
  (``response.reasoning_summary_part.added``, ``response.reasoning_summary_text.delta``, ...)
  or, when the fidelity seen before the first text says ``channel: "content"``, as raw
  reasoning text (``response.content_part.added`` with a ``reasoning_text`` part,
  ``response.reasoning_text.delta``, ...). The done item puts the text where the ``.done``'s
  fidelity says (``summary``, or ``content`` for ``channel: "content"``) with its
  ``encrypted_content``, ``signature`` and ``format``: a reader replaying it gets the channel
  the upstream recorded, even when that fidelity arrived after the text had streamed;
* tool calls: a ``function_call`` item with ``call_id`` and ``name``,
  ``response.function_call_arguments.delta`` per fragment, then
  ``response.function_call_arguments.done`` with the arguments as compact JSON.

The stop writes ``response.completed`` (finish ``stop`` or ``tool_call``) or
``response.incomplete`` (``length``: ``max_output_tokens``; ``unknown``: ``content_filter``,
08 D35) with the whole output and the usage (``usage.usage_to_wire``: ``input_tokens`` with
``input_tokens_details.cached_tokens``, ``output_tokens`` with
``output_tokens_details.reasoning_tokens``, ``total_tokens``). A mid-stream error writes
``response.failed``, whose response carries ``status: "failed"`` and ``error: {"code",
"message"}``: never a clean end, so a cut upstream stays an error to the caller (the
Responses machine raises it as ``ProviderStreamError``).

Other item kinds (inline data, thought images, embeddings) have no Responses output item:
``UnsupportedContentError``. The writer keeps the output items written so far, which the
terminal event repeats as a Responses server does: what it holds is the response itself.

Pure: no clock (``created_at`` is the first event's ``created_at`` in seconds, else 0), no
randomness: every response object carries the id the writer is given (the gateway's fresh one
per request), else ``RESPONSE_ID``; the output items' ids are ``<kind>_<output_index>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, final

import attrs

from mmsp_core.errors import (
    MMSPError,
    ProviderStreamError,
    StreamProtocolError,
    UnsupportedContentError,
)
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

from .._convert import arguments_json
from .._openai import error_body
from .._render import sse_event
from .machine import REASONING_FIDELITY_KEYS
from .usage import usage_to_wire

__all__ = ["PROTOCOL_NAME", "RESPONSE_ID", "ResponsesWriter", "error_body", "response"]

PROTOCOL_NAME: Final = "openai-responses"
#: The response id when none is given (``render``'s recordings).
RESPONSE_ID: Final = "resp_mmsp"

_MESSAGE: Final = "message"
_REASONING: Final = "reasoning"
_CALL: Final = "function_call"
#: The id prefix of each output item type, as the OpenAI API spells them.
_ID_PREFIX: Final[Mapping[str, str]] = {_MESSAGE: "msg", _REASONING: "rs", _CALL: "fc"}
#: The output item type of each public item class.
_ITEM_TYPES: Final[Mapping[type, str]] = {
    TextDelta: _MESSAGE,
    TextDone: _MESSAGE,
    ThinkingDelta: _REASONING,
    ThinkingDone: _REASONING,
    ToolCallDelta: _CALL,
    ToolCallDone: _CALL,
}
#: The summary and raw-content shapes of a reasoning item's text: the array of the done item,
#: the part type, and the event names of its part and text.
_SUMMARY: Final = ("summary", "summary_text", "response.reasoning_summary_part",
                   "response.reasoning_summary_text")
_CONTENT: Final = ("content", "reasoning_text", "response.content_part", "response.reasoning_text")


def _phase(item: Item) -> str | None:
    """A message's phase: the text fidelity's ``phase`` when a non-empty string."""
    phase = (item.fidelity or {}).get("phase")
    return phase if isinstance(phase, str) and phase else None


def _text_shape(fidelity: Mapping[str, Any] | None) -> tuple[str, str, str, str]:
    """Where a reasoning item's text goes: raw content for ``channel: "content"``, else the
    summary (spec 01 §5)."""
    return _CONTENT if (fidelity or {}).get("channel") == "content" else _SUMMARY


def _message_done(ident: str, item: TextDone) -> dict[str, Any]:
    """The done ``message`` output item of a text item."""
    wire: dict[str, Any] = {"id": ident, "type": _MESSAGE, "role": "assistant"}
    if (phase := _phase(item)) is not None:
        wire["phase"] = phase
    part = {"type": "output_text", "annotations": [], "text": item.text}
    return {**wire, "status": "completed", "content": [part]}


def _reasoning_done(ident: str, item: ThinkingDone) -> dict[str, Any]:
    """The done ``reasoning`` output item of a thinking item, its fidelity keys included."""
    done: dict[str, Any] = {"id": ident, "type": _REASONING, "summary": []}
    if item.thinking:
        array, part_type, _part, _text = _text_shape(item.fidelity)
        done[array] = [{"type": part_type, "text": item.thinking}]
    fidelity = item.fidelity or {}
    done.update({key: fidelity[key] for key in REASONING_FIDELITY_KEYS
                 if fidelity.get(key) is not None})
    return done


def _call_done(ident: str, item: ToolCallDone) -> dict[str, Any]:
    """The done ``function_call`` output item of a tool call."""
    return {
        "id": ident, "type": _CALL, "call_id": item.tool_call_id, "name": item.name,
        "arguments": arguments_json(item.arguments), "status": "completed",
    }


def _output_item(index: int, item: DoneItem) -> dict[str, Any]:
    """The done output item of ``item`` at ``index``.

    Raises:
        UnsupportedContentError: an item kind a Responses output cannot carry.
    """
    if isinstance(item, TextDone):
        return _message_done(f"msg_{index}", item)
    if isinstance(item, ThinkingDone):
        return _reasoning_done(f"rs_{index}", item)
    if isinstance(item, ToolCallDone):
        return _call_done(f"fc_{index}", item)
    raise _unsupported(item)


def _unsupported(item: Item) -> UnsupportedContentError:
    return UnsupportedContentError(
        PROTOCOL_NAME, item.type, detail="a Responses output carries no such item"
    )


@final
@attrs.frozen
class _Head:
    """What every response object of one response repeats: its id, model and creation time
    (unix seconds)."""

    response_id: str
    model: str
    created_at: int


def _response_object(
    head: _Head, status: str, output: Sequence[Mapping[str, Any]], **fields: Any
) -> dict[str, Any]:
    """A Responses ``response`` object (OpenAI API reference, "The response object")."""
    return {
        "id": head.response_id, "object": "response", "created_at": head.created_at,
        "status": status, "model": head.model, "output": list(output), "error": None,
        "incomplete_details": None, "usage": None, **fields,
    }


def _terminal(
    head: _Head, output: Sequence[Mapping[str, Any]], usage: UsageMetadata,
    finish_reason: FinishReason,
) -> tuple[str, dict[str, Any]]:
    """The terminal event type and its response: ``completed`` for ``stop`` and
    ``tool_call``, else ``incomplete`` with its reason (08 D5, D35)."""
    wire_usage = usage_to_wire(usage)
    if finish_reason in (FinishReason.STOP, FinishReason.TOOL_CALL):
        completed = _response_object(head, "completed", output, usage=wire_usage)
        return "response.completed", completed
    reason = "max_output_tokens" if finish_reason == FinishReason.LENGTH else "content_filter"
    incomplete = _response_object(head, "incomplete", output, usage=wire_usage,
                                  incomplete_details={"reason": reason})
    return "response.incomplete", incomplete


def response(
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason,
    /,
    *,
    model: str,
    response_id: str = RESPONSE_ID,
) -> dict[str, Any]:
    """The whole ``response`` object a Responses server returns for ``stream: false``: its
    ``id`` ``response_id``, the output items the stream's ``response.output_item.done`` events
    carry, in order, the status (``completed``, or ``incomplete`` with its reason) and the
    usage (08 D73).

    Raises:
        UnsupportedContentError: an item kind a Responses output cannot carry.
    """
    output = [_output_item(index, item) for index, item in enumerate(items)]
    return _terminal(_Head(response_id, model, 0), output, usage, finish_reason)[1]


@final
@attrs.define(slots=True)
class _Open:
    """The output item being written."""

    item_type: str
    index: int
    ident: str
    #: A reasoning item's text shape, once its first text has streamed.
    shape: tuple[str, str, str, str] | None = None
    #: A reasoning item's fidelity seen so far (its ``channel`` picks the shape).
    fidelity: Mapping[str, Any] | None = None


@final
class ResponsesWriter:
    """Writes one public stream as Responses SSE, one event at a time (module docstring).

    Args:
        model: the model id the response objects echo (the gateway's ``server_model_id``).
        response_id: the id every response object of the stream carries.
    """

    __slots__ = ("_ended", "_frames", "_head", "_id", "_model", "_open", "_output", "_sequence")

    def __init__(self, model: str, *, response_id: str = RESPONSE_ID) -> None:
        self._model = model
        self._id = response_id
        #: The response objects' head, once the opening frames are written.
        self._head: _Head | None = None
        self._sequence = 0
        self._frames: list[bytes] = []
        self._open: _Open | None = None
        self._output: list[dict[str, Any]] = []
        self._ended = False

    def event(self, event: UniEvent, /) -> bytes:
        """The frames for one public event (the first also writes the opening frames).

        Raises:
            UnsupportedContentError: an item kind a Responses output cannot carry.
            StreamProtocolError: events that break the public grammar (an item of another
                kind inside an open group, an event after the stop): a defect upstream.
        """
        if self._ended:
            raise StreamProtocolError(PROTOCOL_NAME, detail="an event after the end of stream")
        head = self._start(event.created_at)
        if event.event_type == "stop":
            event_type, done = _terminal(
                head, self._output, event.usage_metadata or UsageMetadata(),
                event.finish_reason or FinishReason.UNKNOWN,
            )
            self._frame(event_type, response=done)
            self._ended = True
        else:
            for item in event.content_items:
                self._item(item)
        return self._take()

    def error(self, error: MMSPError, /) -> bytes:
        """``response.failed`` with ``error: {"code", "message"}`` (and the usage the error
        carries): the stream ends as failed, never cleanly. After the terminal event the
        stream has ended and nothing is written."""
        if self._ended:
            return b""
        failed = _response_object(
            self._start(None), "failed", self._output,
            error=_error_object(error), usage=_error_usage(error),
        )
        self._frame("response.failed", response=failed)
        self._ended = True
        return self._take()

    # -- frames ----------------------------------------------------------------------------

    def _frame(self, event_type: str, **fields: Any) -> None:
        data = {"type": event_type, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        self._frames.append(sse_event(event_type, data))

    def _take(self) -> bytes:
        written = b"".join(self._frames)
        self._frames.clear()
        return written

    def _start(self, created_at: int | None) -> _Head:
        """``response.created`` and ``response.in_progress``, once, before anything else; the
        head every response object of the stream repeats."""
        if self._head is None:
            self._head = _Head(self._id, self._model, (created_at or 0) // 1000)
            opening = _response_object(self._head, "in_progress", [])
            self._frame("response.created", response=opening)
            self._frame("response.in_progress", response=opening)
        return self._head

    # -- items -----------------------------------------------------------------------------

    def _item(self, item: Item) -> None:
        """Write one public item: a fragment of the open output item, or its end."""
        opened = self._opened(item)
        where = {"item_id": opened.ident, "output_index": opened.index}
        if isinstance(item, TextDelta):
            if item.text:
                self._frame("response.output_text.delta", **where, content_index=0,
                            delta=item.text)
        elif isinstance(item, ThinkingDelta):
            opened.fidelity = opened.fidelity or item.fidelity
            if item.thinking:
                self._reasoning_text(opened, item.thinking)
        elif isinstance(item, ToolCallDelta):
            if item.arguments:
                self._frame("response.function_call_arguments.delta", **where,
                            delta=item.arguments)
        elif isinstance(item, TextDone):
            where["content_index"] = 0
            self._frame("response.output_text.done", **where, text=item.text)
            done = _message_done(opened.ident, item)
            self._frame("response.content_part.done", **where, part=done["content"][0])
            self._close(opened, done)
        elif isinstance(item, ThinkingDone):
            self._close_reasoning_text(opened, item.thinking)
            self._close(opened, _reasoning_done(opened.ident, item))
        elif isinstance(item, ToolCallDone):
            done = _call_done(opened.ident, item)
            self._frame("response.function_call_arguments.done", **where,
                        arguments=done["arguments"])
            self._close(opened, done)

    def _opened(self, item: Item) -> _Open:
        """The output item ``item`` belongs to: the open one, or a new one it announces.

        Raises:
            UnsupportedContentError: no output item type carries ``item``.
            StreamProtocolError: an item of another kind while an output item is open.
        """
        item_type = _ITEM_TYPES.get(type(item))
        if item_type is None:
            raise _unsupported(item)
        opened = self._open
        if opened is not None:
            if opened.item_type != item_type:
                raise StreamProtocolError(
                    PROTOCOL_NAME, detail=f"a {item.type} inside an open {opened.item_type}"
                )
            return opened
        index = len(self._output)
        opened = _Open(item_type, index, f"{_ID_PREFIX[item_type]}_{index}")
        self._open = opened
        added: dict[str, Any] = {"id": opened.ident, "type": item_type}
        if item_type == _MESSAGE:
            added["role"] = "assistant"
            if (phase := _phase(item)) is not None:
                added["phase"] = phase
            added.update(status="in_progress", content=[])
        elif item_type == _REASONING:
            added["summary"] = []
        else:
            assert isinstance(item, ToolCallDelta | ToolCallDone)
            added.update(call_id=item.tool_call_id, name=item.name, arguments="",
                         status="in_progress")
        self._frame("response.output_item.added", output_index=index, item=added)
        if item_type == _MESSAGE:
            part = {"type": "output_text", "annotations": [], "text": ""}
            self._frame("response.content_part.added", item_id=opened.ident, output_index=index,
                        content_index=0, part=part)
        return opened

    def _reasoning_text(self, opened: _Open, text: str) -> None:
        """A fragment of reasoning text; the first opens its summary or content part."""
        where = {"item_id": opened.ident, "output_index": opened.index}
        if opened.shape is None:
            opened.shape = _text_shape(opened.fidelity)
            _array, part_type, part_events, _text = opened.shape
            index_key = _index_key(opened.shape)
            self._frame(f"{part_events}.added", **where, **{index_key: 0},
                        part={"type": part_type, "text": ""})
        _array, _part_type, _part_events, text_events = opened.shape
        self._frame(f"{text_events}.delta", **where, **{_index_key(opened.shape): 0}, delta=text)

    def _close_reasoning_text(self, opened: _Open, text: str) -> None:
        """The ``.done`` events of the reasoning part that streamed, if one did."""
        if opened.shape is None:
            return
        _array, part_type, part_events, text_events = opened.shape
        where = {"item_id": opened.ident, "output_index": opened.index,
                 _index_key(opened.shape): 0}
        self._frame(f"{text_events}.done", **where, text=text)
        self._frame(f"{part_events}.done", **where, part={"type": part_type, "text": text})

    def _close(self, opened: _Open, done: dict[str, Any]) -> None:
        self._frame("response.output_item.done", output_index=opened.index, item=done)
        self._output.append(done)
        self._open = None


def _index_key(shape: tuple[str, str, str, str]) -> str:
    """A summary part is numbered by ``summary_index``, a content part by ``content_index``."""
    return "summary_index" if shape is _SUMMARY else "content_index"


def _error_object(error: MMSPError) -> dict[str, str]:
    """The response's ``error``: a provider's own code and message when it sent one, else
    ``server_error`` and the error's text."""
    code: object = None
    message: str | None = None
    if isinstance(error, ProviderStreamError):
        code, message = error.code, error.provider_message
    return {"code": "server_error" if code is None else str(code), "message": message or str(error)}


def _error_usage(error: MMSPError) -> dict[str, Any] | None:
    """The usage an error carries (a cut stream's partial counts), as the response's usage."""
    usage = getattr(error, "usage_metadata", None)
    return usage_to_wire(usage) if isinstance(usage, UsageMetadata) else None
