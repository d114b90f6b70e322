"""The OpenAI Responses machine: provider events to client-stream events (spec 06 §2).

Theory of operation
-------------------
Every SSE event's data is one JSON object whose ``type`` names the event (the SSE ``event:``
line repeats it and is not read: Bedrock Mantle even sends it after ``data:``); ``classify``
reads it, and the kernel (``adapters._table``) looks ``(state, type)`` up in ``TRANSITIONS``.
There are two states: ``STREAMING`` until ``response.completed`` / ``response.incomplete``
(or ``response.failed``, which raises), and ``DONE``, the terminal state, after it. A pair
missing from the table is an unknown event: skipped, or ``UnknownEventError`` in strict mode
(08 D8). A handler that finds its event in a situation where it makes no sense (a text delta
for a function-call item, a second ``response.completed``) returns ``None`` and the event is
treated exactly like an unknown one (08 D45). Handlers read the wire only through the typed
accessors of ``adapters._json``, so a field of the wrong JSON type is a
``MalformedEventError`` at that event (08 D59). A ``data: [DONE]`` sentinel some proxies
append is skipped in both modes.

Output items are identified by their ``output_index`` (08 D35), never by the provider's item
ids, which a proxy may rotate on every event. Items arrive one after another, so the machine
keeps only the item currently open (announced by ``response.output_item.added``, closed by
``response.output_item.done``) and the highest index seen, which keeps its state bounded. Every
delta carries ``fidelity["item_id"] = str(output_index)``, so the finalizer ends an item where
the next begins; text, reasoning and argument deltas are ``Fragment``s (08 D65). Public
fidelity holds only the keys of spec 01 §5: a message's ``phase``, and a reasoning item's
``channel``, ``encrypted_content``, ``signature`` and ``format``, sent as an empty thinking
fragment at ``response.output_item.done``.

Function calls start at ``response.output_item.added`` with their name and ``call_id`` (or
``call_<n>``, 08 D43) and grow from ``response.function_call_arguments.delta``. A call whose
arguments never streamed (LM Studio sends only ``response.function_call_arguments.done``) takes
them whole from that event or from the done item. With the profile's ``whole_calls`` (MiniMax,
02 §11, 08 D32) calls are read only from the done item: one fragment with name, id and the
whole arguments; their argument deltas are ignored.

``response.completed`` / ``response.incomplete`` become a client ``stop`` event with usage
(``usage.usage_from_wire``) and the finish reason: ``tool_call`` when a completed response
streamed a function call (08 D5), ``length`` for an incomplete response cut by
``max_output_tokens``, ``unknown`` otherwise (08 D35). ``error`` and ``response.failed`` raise
``ProviderStreamError`` at their position (08 D4).

Deliberately skipped in both modes (08 D51): the lifecycle and repeat events in
``_SKIPPED_EVENTS``, the built-in tool events in ``_BUILT_IN_TOOL_EVENTS``, and output items
whose type is not ``message``, ``reasoning`` or ``function_call``, with all their deltas.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final, NoReturn, final

import attrs

from mmsp_core.errors import ProviderStreamError
from mmsp_core.items import ClientEvent
from mmsp_core.kinds import TEXT, THINKING, TOOL_CALL, Fragment
from mmsp_core.model import (
    FinishReason,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.sse import SSEEvent

from .._json import (
    BadField,
    loads_object,
    obj,
    opt_array,
    opt_integer,
    opt_obj,
    opt_string,
    string,
)
from .._table import EMPTY, TableMachine, Transitions, skip_rows
from .profiles import ResponsesProfile
from .usage import usage_from_wire

__all__ = ["REASONING_FIDELITY_KEYS", "ResponsesMachine"]

#: Reasoning item fields kept as fidelity when not null (spec 01 §5).
REASONING_FIDELITY_KEYS: Final = ("encrypted_content", "signature", "format")

#: The name ``classify`` gives the ``data: [DONE]`` sentinel.
_DONE_SENTINEL: Final = "[DONE]"

_Json = Mapping[str, Any]


class _State(enum.StrEnum):
    STREAMING = "STREAMING"
    DONE = "DONE"


class _Kind(enum.Enum):
    MESSAGE = "message"
    REASONING = "reasoning"
    CALL = "function_call"
    #: A function call left for its done item (``whole_calls``).
    WHOLE_CALL = "whole function_call"
    #: Any other output item type: skipped with all its deltas (08 D51).
    SKIPPED = "skipped"


_ITEM_KINDS: Final[Mapping[str, _Kind]] = {
    "message": _Kind.MESSAGE,
    "reasoning": _Kind.REASONING,
    "function_call": _Kind.CALL,
}


@final
@attrs.define(slots=True)
class _Item:
    """The output item currently open."""

    index: int
    kind: _Kind
    #: ``{"item_id": str(index)}``, shared by every delta of the item.
    ident: Mapping[str, str]
    #: Whether any argument text of this call has been emitted.
    streamed: bool = False


def _delta(item: TextDelta | ThinkingDelta | ToolCallDelta) -> UniEvent:
    return UniEvent("delta", (item,))


# -- helpers of the handlers ---------------------------------------------------------------


def _target(m: ResponsesMachine, data: _Json, *kinds: _Kind) -> _Item | None:
    """Return the open item a delta belongs to, or ``None`` when the delta makes no sense.

    The item must be of one of ``kinds``, or a skipped item (whose deltas are skipped too).
    A delta without ``output_index`` belongs to the open item.

    Raises:
        BadField: ``output_index`` is not an integer.
    """
    item = m.item
    index = opt_integer(data, "output_index")
    if item is None or (index is not None and index != item.index):
        return None
    return item if item.kind is _Kind.SKIPPED or item.kind in kinds else None


def _new_call_id(m: ResponsesMachine, wire_item: _Json) -> str:
    """Return the call's id, or ``call_<n>`` when the wire gives none (08 D43).

    Raises:
        BadField: ``call_id`` is not a string.
    """
    call_id = opt_string(wire_item, "call_id")
    number = m.calls
    m.calls += 1
    return call_id or f"call_{number}"


def _call_name(wire_item: _Json) -> str:
    """Raises ``BadField``: a function_call item without a name."""
    name = string(wire_item, "name")
    if not name:
        raise BadField("a function_call item must have a name")
    return name


def _unstreamed_arguments(item: _Item, arguments: str | None) -> UniEvent:
    """Emit a call's whole arguments when none streamed (LM Studio); else nothing."""
    if item.streamed or not arguments:
        return EMPTY
    item.streamed = True
    return _delta(ToolCallDelta("", "", arguments, item.ident))


def _reasoning_fidelity(item: _Item, wire_item: _Json) -> UniEvent:
    """The fidelity of a finished reasoning item (spec 06 §2, 01 §5).

    The fidelity values are kept whatever JSON they hold.

    Raises:
        BadField: ``summary`` or ``content`` is not an array.
    """
    fidelity: dict[str, Any] = dict(item.ident)
    if opt_array(wire_item, "summary"):
        fidelity["channel"] = "summary"
    elif opt_array(wire_item, "content"):
        fidelity["channel"] = "content"
    for key in REASONING_FIDELITY_KEYS:
        value = wire_item.get(key)
        if value is not None:
            fidelity[key] = value
    if len(fidelity) == 1:
        return EMPTY
    return _delta(ThinkingDelta("", fidelity))


def _response_usage(response: _Json) -> UsageMetadata | None:
    """A response's usage (06 §2); ``None`` when it has none. Raises ``BadField``."""
    usage = opt_obj(response, "usage")
    return None if usage is None else usage_from_wire(usage)


def _provider_error(
    m: ResponsesMachine, name: str, error: _Json, usage: UsageMetadata | None
) -> ProviderStreamError:
    """The error of an ``error`` or ``response.failed`` event (08 D4).

    The provider said the stream failed, so odd field types never turn this into a
    ``MalformedEventError``: a field that is not what it should be is left out.
    """
    code, error_type, message = error.get("code"), error.get("type"), error.get("message")
    return ProviderStreamError(
        m.client,
        code if type(code) in (int, str) else None,
        error_type if type(error_type) is str else None,
        message if type(message) is str else None,
        usage,
        detail=f"the provider sent {name}",
    )


# -- handlers: each returns the client event, or None when the event is out of place -------


def _item_added(m: ResponsesMachine, data: _Json) -> UniEvent | None:
    wire_item = obj(data, "item")
    item_type = string(wire_item, "type")
    index = opt_integer(data, "output_index")
    if index is None:
        index = m.last_index + 1
    elif index <= m.last_index:
        return None
    kind = _ITEM_KINDS.get(item_type, _Kind.SKIPPED)
    if kind is _Kind.CALL and m.whole_calls:
        kind = _Kind.WHOLE_CALL
    opened = _Item(index, kind, {"item_id": str(index)})
    m.item, m.last_index = opened, index
    if kind is _Kind.MESSAGE:
        phase = opt_string(wire_item, "phase")
        if phase:
            return _delta(TextDelta("", {**opened.ident, "phase": phase}))
        return _delta(TextDelta("", opened.ident))
    if kind is _Kind.REASONING:
        return _delta(ThinkingDelta("", opened.ident))
    if kind is _Kind.CALL:
        name = _call_name(wire_item)
        return _delta(ToolCallDelta(name, _new_call_id(m, wire_item), "", opened.ident))
    return EMPTY


def _text_delta(m: ResponsesMachine, data: _Json) -> ClientEvent | None:
    item = _target(m, data, _Kind.MESSAGE)
    if item is None or item.kind is _Kind.SKIPPED:
        return None if item is None else EMPTY
    return Fragment(TEXT, string(data, "delta"), item.ident["item_id"])


def _reasoning_delta(m: ResponsesMachine, data: _Json) -> ClientEvent | None:
    item = _target(m, data, _Kind.REASONING)
    if item is None or item.kind is _Kind.SKIPPED:
        return None if item is None else EMPTY
    return Fragment(THINKING, string(data, "delta"), item.ident["item_id"])


def _arguments_delta(m: ResponsesMachine, data: _Json) -> ClientEvent | None:
    item = _target(m, data, _Kind.CALL, _Kind.WHOLE_CALL)
    if item is None or item.kind is not _Kind.CALL:
        return None if item is None else EMPTY
    delta = string(data, "delta")
    item.streamed = item.streamed or bool(delta)
    return Fragment(TOOL_CALL, delta, item.ident["item_id"])


def _arguments_done(m: ResponsesMachine, data: _Json) -> UniEvent | None:
    item = _target(m, data, _Kind.CALL, _Kind.WHOLE_CALL)
    if item is None or item.kind is not _Kind.CALL:
        return None if item is None else EMPTY
    return _unstreamed_arguments(item, opt_string(data, "arguments"))


def _item_done(m: ResponsesMachine, data: _Json) -> UniEvent | None:
    wire_item = obj(data, "item")
    item_type = string(wire_item, "type")
    item = m.item
    index = opt_integer(data, "output_index")
    if item is None or (index is not None and index != item.index):
        return None
    kind = _ITEM_KINDS.get(item_type, _Kind.SKIPPED)
    if kind is not item.kind and not (kind is _Kind.CALL and item.kind is _Kind.WHOLE_CALL):
        return None
    m.item = None
    if item.kind is _Kind.REASONING:
        return _reasoning_fidelity(item, wire_item)
    if item.kind is _Kind.CALL:
        return _unstreamed_arguments(item, opt_string(wire_item, "arguments"))
    if item.kind is _Kind.WHOLE_CALL:
        arguments = opt_string(wire_item, "arguments") or ""
        name = _call_name(wire_item)
        return _delta(ToolCallDelta(name, _new_call_id(m, wire_item), arguments, item.ident))
    return EMPTY


def _terminal(m: ResponsesMachine, data: _Json) -> UniEvent:
    response = obj(data, "response")
    status = opt_string(response, "status") or string(data, "type").removeprefix("response.")
    if status == "completed":
        finish = FinishReason.TOOL_CALL if m.calls else FinishReason.STOP
    elif status == "incomplete":
        details = opt_obj(response, "incomplete_details")
        reason = None if details is None else opt_string(details, "reason")
        finish = FinishReason.LENGTH if reason == "max_output_tokens" else FinishReason.UNKNOWN
    else:
        finish = FinishReason.UNKNOWN
    m.item = None
    return UniEvent("stop", usage_metadata=_response_usage(response), finish_reason=finish)


def _error(m: ResponsesMachine, data: _Json) -> NoReturn:
    # The API puts code and message at the top level; some servers nest an error object.
    nested = data.get("error")
    error = nested if type(nested) is dict else {**data, "type": None}
    raise _provider_error(m, "error", error, None)


def _failed(m: ResponsesMachine, data: _Json) -> NoReturn:
    response = obj(data, "response")
    error = response.get("error")
    usage = _response_usage(response)
    raise _provider_error(m, "response.failed", error if type(error) is dict else {}, usage)


#: Lifecycle events and repeats of what the deltas already carried (spec 06 §2, 08 D51).
_SKIPPED_EVENTS: Final = (
    "response.created",
    "response.queued",
    "response.in_progress",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.refusal.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.done",
    "keepalive",
)

#: Events of the built-in tools' output items, which MMSP does not carry (08 D51).
_BUILT_IN_TOOL_EVENTS: Final = (
    "response.web_search_call.in_progress",
    "response.web_search_call.searching",
    "response.web_search_call.completed",
    "response.file_search_call.in_progress",
    "response.file_search_call.searching",
    "response.file_search_call.completed",
    "response.code_interpreter_call.in_progress",
    "response.code_interpreter_call.interpreting",
    "response.code_interpreter_call.completed",
    "response.code_interpreter_call_code.delta",
    "response.code_interpreter_call_code.done",
    "response.image_generation_call.in_progress",
    "response.image_generation_call.generating",
    "response.image_generation_call.partial_image",
    "response.image_generation_call.completed",
    "response.mcp_call.in_progress",
    "response.mcp_call.completed",
    "response.mcp_call.failed",
    "response.mcp_call_arguments.delta",
    "response.mcp_call_arguments.done",
    "response.mcp_list_tools.in_progress",
    "response.mcp_list_tools.completed",
    "response.mcp_list_tools.failed",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
)

_STREAMING, _DONE = _State.STREAMING, _State.DONE

_TRANSITIONS: Final[Transitions] = {
    (_STREAMING, "response.output_item.added"): (_item_added, _STREAMING),
    (_STREAMING, "response.output_text.delta"): (_text_delta, _STREAMING),
    # A refusal is answer text, as on Chat Completions (08 D36).
    (_STREAMING, "response.refusal.delta"): (_text_delta, _STREAMING),
    (_STREAMING, "response.reasoning_summary_text.delta"): (_reasoning_delta, _STREAMING),
    (_STREAMING, "response.reasoning_text.delta"): (_reasoning_delta, _STREAMING),
    (_STREAMING, "response.function_call_arguments.delta"): (_arguments_delta, _STREAMING),
    (_STREAMING, "response.function_call_arguments.done"): (_arguments_done, _STREAMING),
    (_STREAMING, "response.output_item.done"): (_item_done, _STREAMING),
    (_STREAMING, "response.completed"): (_terminal, _DONE),
    (_STREAMING, "response.incomplete"): (_terminal, _DONE),
    **{(state, "response.failed"): (_failed, _DONE) for state in _State},
    **{(state, "error"): (_error, state) for state in _State},
    **skip_rows(_State, (*_SKIPPED_EVENTS, *_BUILT_IN_TOOL_EVENTS, _DONE_SENTINEL)),
}


@final
class ResponsesMachine(TableMachine):
    """Turn one Responses SSE stream into client-stream events (spec 06 §2).

    Args:
        client: the client type (or ``"openai-responses"``), named in errors.
        profile: the client's profile; its ``whole_calls`` reads function calls only from
            their done items (MiniMax, 08 D32).
        strict: raise ``UnknownEventError`` for unknown or out-of-place events (08 D8, D45).
        base_url: not used by this protocol.
    """

    __slots__ = ("calls", "item", "last_index", "whole_calls")

    TRANSITIONS = _TRANSITIONS
    TERMINAL = frozenset({_DONE})
    INITIAL = _STREAMING

    def __init__(
        self, client: str, profile: ResponsesProfile, *, strict: bool, base_url: str | None
    ) -> None:
        super().__init__(client, profile, strict=strict)
        self.whole_calls = profile.whole_calls
        #: The output item currently open, and the highest ``output_index`` seen.
        self.item: _Item | None = None
        self.last_index = -1
        #: Function calls seen, which numbers the calls without an id (08 D43).
        self.calls = 0

    def classify(self, sse: SSEEvent) -> tuple[str, Any]:
        """Name the event by its JSON ``type`` (``""`` when it has none).

        Raises:
            BadField: the data is not a JSON object, or its ``type`` is not a string.
        """
        if sse.data == _DONE_SENTINEL:
            return _DONE_SENTINEL, None
        data = loads_object(sse.data)
        return opt_string(data, "type") or "", data
