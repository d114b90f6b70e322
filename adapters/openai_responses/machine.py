"""The OpenAI Responses machine: provider events to client-stream events (spec 06 §2).

Theory of operation
-------------------
Every SSE event's data is one JSON object whose ``type`` names the event (the SSE ``event:``
line repeats it and is not read: Bedrock Mantle even sends it after ``data:``). ``_TABLE`` maps
``(state, type)`` to a handler and the next state. There are two states: ``STREAMING`` until
``response.completed`` / ``response.incomplete``, and ``DONE`` after it. A pair missing from the
table is an unknown event: skipped, or ``UnknownEventError`` in strict mode (08 D8). A handler
that finds its event in a situation where it makes no sense (a text delta for a function-call
item, a second ``response.completed``) returns ``None`` and the event is treated exactly like an
unknown one (08 D45).

Output items are identified by their ``output_index`` (08 D35), never by the provider's item
ids, which a proxy may rotate on every event. Items arrive one after another, so the machine
keeps only the item currently open (announced by ``response.output_item.added``, closed by
``response.output_item.done``) and the highest index seen, which keeps its state bounded. Every
delta carries ``fidelity["item_id"] = str(output_index)``, so the finalizer ends an item where
the next begins. Public fidelity holds only the keys of spec 01 §5: a message's ``phase``, and
a reasoning item's ``channel``, ``encrypted_content``, ``signature`` and ``format``, sent as an
empty thinking fragment at ``response.output_item.done``.

Function calls start at ``response.output_item.added`` with their name and ``call_id`` (or
``call_<n>``, 08 D43) and grow from ``response.function_call_arguments.delta``. A call whose
arguments never streamed (LM Studio sends only ``response.function_call_arguments.done``) takes
them whole from that event or from the done item. With ``whole_calls`` (chosen for
``minimax-official``, 02 §11, 08 D32) calls are read only from the done item: one fragment with
name, id and the whole arguments; their argument deltas are ignored.

``response.completed`` / ``response.incomplete`` become a client ``stop`` event with usage
(06 §2 arithmetic; missing detail blocks give ``None``) and the finish reason: ``tool_call``
when a completed response streamed a function call (08 D5), ``length`` for an incomplete
response cut by ``max_output_tokens``, ``unknown`` otherwise (08 D35). ``error`` and
``response.failed`` raise ``ProviderStreamError`` at their position (08 D4).

Deliberately skipped in both modes (08 D51): the lifecycle and repeat events in
``_SKIPPED_EVENTS``, the built-in tool events in ``_BUILT_IN_TOOL_EVENTS``, and output items
whose type is not ``message``, ``reasoning`` or ``function_call``, with all their deltas.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from typing import Any, Final, final

import attrs

from mmsp_core.errors import (
    MalformedEventError,
    ProviderStreamError,
    UnknownEventError,
)
from mmsp_core.model import (
    FinishReason,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.sse import SSEEvent

__all__ = ["ResponsesMachine", "new_machine"]

#: The client whose calls are read whole from the done item (02 §11, 08 D32).
WHOLE_CALLS_CLIENT: Final = "minimax-official"

#: Reasoning item fields kept as fidelity when not null (spec 01 §5).
REASONING_FIDELITY_KEYS: Final = ("encrypted_content", "signature", "format")

_Json = Mapping[str, Any]


class _State(enum.Enum):
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


def _delta(item: TextDelta | ThinkingDelta | ToolCallDelta) -> list[UniEvent]:
    return [UniEvent(event_type="delta", content_items=(item,))]


@final
class ResponsesMachine:
    """Turn one Responses SSE stream into client-stream events (spec 06 §2).

    Args:
        client: the client type (or ``"openai-responses"``), named in errors.
        strict: raise ``UnknownEventError`` for unknown or out-of-place events (08 D8, D45).
        whole_calls: read function calls only from their done items (MiniMax, 08 D32).
    """

    def __init__(self, client: str, *, strict: bool = False, whole_calls: bool = False) -> None:
        self._client = client
        self._strict = strict
        self._whole_calls = whole_calls
        self._state = _State.STREAMING
        self._item: _Item | None = None
        self._last_index = -1
        self._calls = 0

    def next_events(self, sse: SSEEvent) -> list[UniEvent]:
        """Return the client events of one SSE event.

        Raises:
            MalformedEventError: the data is not a JSON object, or a known event lacks a field
                it must have.
            UnknownEventError: strict mode only, for an unknown or out-of-place event.
            ProviderStreamError: the provider reported an error (08 D4).
        """
        if sse.data == "[DONE]":  # a sentinel some proxies append; the stream ends anyway
            return []
        try:
            data = json.loads(sse.data)
        except ValueError as exc:
            raise MalformedEventError(self._client, sse.data, detail=str(exc)) from exc
        if not isinstance(data, dict):
            raise MalformedEventError(self._client, sse.data, detail="not a JSON object")
        entry = _TABLE.get((self._state, data.get("type")))
        if entry is None:
            return self._unknown(sse.data, None)
        handler, next_state = entry
        events = handler(self, data)
        if events is None:
            return self._unknown(sse.data, f"out of place in state {self._state.value}")
        self._state = next_state
        return events

    def finish(self) -> list[UniEvent]:
        """Nothing is held back: completeness is the finalizer's to judge."""
        return []

    # -- helpers ---------------------------------------------------------------------------

    def _unknown(self, event: str, detail: str | None) -> list[UniEvent]:
        if self._strict:
            raise UnknownEventError(self._client, event, detail=detail)
        return []

    def _malformed(self, data: _Json, reason: str) -> MalformedEventError:
        event = json.dumps(data, ensure_ascii=False)
        return MalformedEventError(self._client, event, detail=reason)

    def _field(self, data: _Json, key: str, kind: type[Any]) -> Any:
        value = data.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self._malformed(data, f"{key!r} must be a {kind.__name__}")
        return value

    def _target(self, data: _Json, *kinds: _Kind) -> _Item | None:
        """Return the open item a delta belongs to, or ``None`` when the delta makes no sense.

        The item must be of one of ``kinds``, or a skipped item (whose deltas are skipped too).
        A delta without ``output_index`` belongs to the open item.
        """
        item = self._item
        index = data.get("output_index")
        if item is None or (index is not None and index != item.index):
            return None
        return item if item.kind is _Kind.SKIPPED or item.kind in kinds else None

    def _counts(self, data: _Json, usage: _Json, key: str, part: str) -> tuple[int | None, ...]:
        """Return the count ``usage[key]`` and the count ``usage[key + "_details"][part]``."""
        details = usage.get(key + "_details")
        counts = (usage.get(key), details.get(part) if isinstance(details, Mapping) else None)
        for value in counts:
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise self._malformed(data, f"usage counts must be integers, not {value!r}")
        return counts

    def _usage(self, data: _Json, response: _Json) -> UsageMetadata | None:
        """Read a response's usage (spec 06 §2); ``None`` when it has none."""
        usage = response.get("usage")
        if usage is None:
            return None
        if not isinstance(usage, Mapping):
            raise self._malformed(data, "'usage' must be an object")
        inputs, cached = self._counts(data, usage, "input_tokens", "cached_tokens")
        outputs, thoughts = self._counts(data, usage, "output_tokens", "reasoning_tokens")
        return UsageMetadata(
            cached_tokens=cached,
            prompt_tokens=None if inputs is None else inputs - (cached or 0),
            thoughts_tokens=thoughts,
            response_tokens=None if outputs is None else outputs - (thoughts or 0),
        )

    def _new_call_id(self, item: _Json) -> str:
        """Return the call's id, or ``call_<n>`` when the wire gives none (08 D43)."""
        call_id = item.get("call_id")
        number = self._calls
        self._calls += 1
        return call_id if isinstance(call_id, str) and call_id else f"call_{number}"

    def _call_name(self, data: _Json, item: _Json) -> str:
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise self._malformed(data, "a function_call item must have a name")
        return name

    # -- handlers: each returns client events, or None when the event is out of place ------

    def _skip(self, data: _Json) -> list[UniEvent] | None:
        return []

    def _item_added(self, data: _Json) -> list[UniEvent] | None:
        item = self._field(data, "item", Mapping)
        item_type = self._field(item, "type", str)
        index = data.get("output_index", self._last_index + 1)
        if not isinstance(index, int) or index <= self._last_index:
            return None
        kind = _ITEM_KINDS.get(item_type, _Kind.SKIPPED)
        if kind is _Kind.CALL and self._whole_calls:
            kind = _Kind.WHOLE_CALL
        opened = _Item(index, kind, {"item_id": str(index)})
        self._item, self._last_index = opened, index
        if kind is _Kind.MESSAGE:
            phase = item.get("phase")
            if isinstance(phase, str) and phase:
                return _delta(TextDelta("", {**opened.ident, "phase": phase}))
            return _delta(TextDelta("", opened.ident))
        if kind is _Kind.REASONING:
            return _delta(ThinkingDelta("", opened.ident))
        if kind is _Kind.CALL:
            name = self._call_name(data, item)
            return _delta(ToolCallDelta(name, self._new_call_id(item), "", opened.ident))
        return []

    def _text_delta(self, data: _Json) -> list[UniEvent] | None:
        item = self._target(data, _Kind.MESSAGE)
        if item is None or item.kind is _Kind.SKIPPED:
            return None if item is None else []
        return _delta(TextDelta(self._field(data, "delta", str), item.ident))

    def _reasoning_delta(self, data: _Json) -> list[UniEvent] | None:
        item = self._target(data, _Kind.REASONING)
        if item is None or item.kind is _Kind.SKIPPED:
            return None if item is None else []
        return _delta(ThinkingDelta(self._field(data, "delta", str), item.ident))

    def _arguments_delta(self, data: _Json) -> list[UniEvent] | None:
        item = self._target(data, _Kind.CALL, _Kind.WHOLE_CALL)
        if item is None or item.kind is not _Kind.CALL:
            return None if item is None else []
        delta = self._field(data, "delta", str)
        item.streamed = item.streamed or bool(delta)
        return _delta(ToolCallDelta("", "", delta, item.ident))

    def _unstreamed_arguments(self, item: _Item, arguments: object) -> list[UniEvent]:
        """Emit a call's whole arguments when none streamed (LM Studio); else nothing."""
        if item.streamed or not isinstance(arguments, str) or not arguments:
            return []
        item.streamed = True
        return _delta(ToolCallDelta("", "", arguments, item.ident))

    def _arguments_done(self, data: _Json) -> list[UniEvent] | None:
        item = self._target(data, _Kind.CALL, _Kind.WHOLE_CALL)
        if item is None or item.kind is not _Kind.CALL:
            return None if item is None else []
        return self._unstreamed_arguments(item, data.get("arguments"))

    def _item_done(self, data: _Json) -> list[UniEvent] | None:
        wire_item = self._field(data, "item", Mapping)
        item_type = self._field(wire_item, "type", str)
        item = self._item
        index = data.get("output_index")
        if item is None or (index is not None and index != item.index):
            return None
        kind = _ITEM_KINDS.get(item_type, _Kind.SKIPPED)
        if kind is not item.kind and not (kind is _Kind.CALL and item.kind is _Kind.WHOLE_CALL):
            return None
        self._item = None
        if item.kind is _Kind.REASONING:
            return self._reasoning_fidelity(item, wire_item)
        if item.kind is _Kind.CALL:
            return self._unstreamed_arguments(item, wire_item.get("arguments"))
        if item.kind is _Kind.WHOLE_CALL:
            arguments = wire_item.get("arguments") or ""
            if not isinstance(arguments, str):
                raise self._malformed(data, "a function_call's arguments must be a string")
            name = self._call_name(data, wire_item)
            return _delta(ToolCallDelta(name, self._new_call_id(wire_item), arguments, item.ident))
        return []

    def _reasoning_fidelity(self, item: _Item, wire_item: _Json) -> list[UniEvent]:
        """The fidelity of a finished reasoning item (spec 06 §2, 01 §5)."""
        fidelity: dict[str, Any] = dict(item.ident)
        if wire_item.get("summary"):
            fidelity["channel"] = "summary"
        elif wire_item.get("content"):
            fidelity["channel"] = "content"
        for key in REASONING_FIDELITY_KEYS:
            if wire_item.get(key) is not None:
                fidelity[key] = wire_item[key]
        if len(fidelity) == 1:
            return []
        return _delta(ThinkingDelta("", fidelity))

    def _terminal(self, data: _Json) -> list[UniEvent] | None:
        response = self._field(data, "response", Mapping)
        status = response.get("status") or data["type"].removeprefix("response.")
        if status == "completed":
            finish = FinishReason.TOOL_CALL if self._calls else FinishReason.STOP
        elif status == "incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, Mapping) else None
            finish = FinishReason.LENGTH if reason == "max_output_tokens" else FinishReason.UNKNOWN
        else:
            finish = FinishReason.UNKNOWN
        self._item = None
        usage = self._usage(data, response)
        return [UniEvent(event_type="stop", usage_metadata=usage, finish_reason=finish)]

    def _error(self, data: _Json) -> list[UniEvent] | None:
        # The API puts code and message at the top level; some servers nest an error object.
        nested = data.get("error")
        if isinstance(nested, Mapping):
            raise self._provider_error(data, nested, None)
        raise self._provider_error(data, {**data, "type": None}, None)

    def _failed(self, data: _Json) -> list[UniEvent] | None:
        response = self._field(data, "response", Mapping)
        error = response.get("error")
        usage = self._usage(data, response)
        raise self._provider_error(data, error if isinstance(error, Mapping) else {}, usage)

    def _provider_error(
        self, data: _Json, error: _Json, usage: UsageMetadata | None
    ) -> ProviderStreamError:
        """The error of an ``error`` or ``response.failed`` event (08 D4)."""
        code, error_type, message = error.get("code"), error.get("type"), error.get("message")
        return ProviderStreamError(
            self._client,
            code if isinstance(code, int | str) and not isinstance(code, bool) else None,
            error_type if isinstance(error_type, str) else None,
            message if isinstance(message, str) else None,
            usage,
            detail=f"the provider sent {data['type']}",
        )


_Handler = Callable[[ResponsesMachine, _Json], "list[UniEvent] | None"]

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

_TABLE: Final[Mapping[tuple[_State, object], tuple[_Handler, _State]]] = {
    (_STREAMING, "response.output_item.added"): (ResponsesMachine._item_added, _STREAMING),
    (_STREAMING, "response.output_text.delta"): (ResponsesMachine._text_delta, _STREAMING),
    # A refusal is answer text, as on Chat Completions (08 D36).
    (_STREAMING, "response.refusal.delta"): (ResponsesMachine._text_delta, _STREAMING),
    (_STREAMING, "response.reasoning_summary_text.delta"): (
        ResponsesMachine._reasoning_delta, _STREAMING),
    (_STREAMING, "response.reasoning_text.delta"): (ResponsesMachine._reasoning_delta, _STREAMING),
    (_STREAMING, "response.function_call_arguments.delta"): (
        ResponsesMachine._arguments_delta, _STREAMING),
    (_STREAMING, "response.function_call_arguments.done"): (
        ResponsesMachine._arguments_done, _STREAMING),
    (_STREAMING, "response.output_item.done"): (ResponsesMachine._item_done, _STREAMING),
    (_STREAMING, "response.completed"): (ResponsesMachine._terminal, _DONE),
    (_STREAMING, "response.incomplete"): (ResponsesMachine._terminal, _DONE),
    **{(state, "error"): (ResponsesMachine._error, state) for state in _State},
    **{(state, "response.failed"): (ResponsesMachine._failed, state) for state in _State},
    **{
        (state, name): (ResponsesMachine._skip, state)
        for state in _State
        for name in _SKIPPED_EVENTS + _BUILT_IN_TOOL_EVENTS
    },
}


def new_machine(client: str, *, strict: bool, base_url: str | None) -> ResponsesMachine:
    """Build the machine for one response of ``client`` (``base_url`` is not used here)."""
    return ResponsesMachine(client, strict=strict, whole_calls=client == WHOLE_CALLS_CLIENT)
