"""The Chat Completions machine: one SSE event in, one client-stream event out (spec 06 §3).

Theory of operation
-------------------
A Chat Completions body is a run of ``data: <chunk JSON>`` events ended by ``data: [DONE]``.
Each SSE event is first classified into a wire event name:

* ``"[DONE]"``  the default event (``message``) whose data is ``[DONE]``;
* ``"chunk"``   any other default event: a ``chat.completion.chunk`` object;
* ``"error"``   an ``event: error`` frame (Groq sends one mid-stream);
* ``"unknown"`` any other SSE event name (08 D36).

``ChatMachine`` is a ``TableMachine`` (``adapters._table``): ``classify`` gives that name and
the data text, which only the handler parses, and ``TRANSITIONS`` maps ``(state, wire event
name)`` to a handler and the next state. There are two states: STREAMING until ``[DONE]``,
then DONE (terminal: ``finished`` is set, and the pipeline gives the machine nothing more,
08 D56). DONE has no rows, so a caller driving the machine itself finds every later event out
of place (08 D45: skipped, or ``UnknownEventError`` in strict mode), never parsed. An
``"unknown"`` name has no row at all. A stream that ends without ``[DONE]`` is not an error
by itself: the finalizer decides from usage and finish reason.

A chunk handler reads only the choice whose ``index`` is 0 (08 D36) and turns its delta into
items, in this order (a chunk may end the thinking and start the answer):

1. thinking, counted once: ``reasoning_details`` blocks if any (a ``reasoning.encrypted``
   block carries its data in the fidelity and ends its item, as gateways send it last),
   else ``reasoning_content`` and/or ``reasoning`` (one fragment when both are present);
2. ``content``, then ``refusal``, as text (08 D36);
3. each ``tool_calls`` fragment: a new call when its ``index`` or non-empty ``id`` differs
   from the current call's, or, when the gateway sends neither, when it has a name; a
   continuing fragment's repeated name is blanked; a call without id is ``call_<n>``
   (08 D6, D42, D43); a call that would begin without a name is out of place (08 D45).

Chat gives items no ids, so the item id (``fidelity["item_id"]``) is the wire field name.
Text and continuing arguments are built as ``Fragment``s; a chunk of one of them alone (the
common chunk) is that fragment as its client event (``adapters._table.client_event``, 08 D65).
A finish reason or usage makes the event a ``stop`` event (items stay on it). Usage is read
by ``usage.read_usage`` from ``usage`` (an ``include_usage`` chunk with no choices, or GLM's
finish chunk), else from ``x_groq.usage`` (older Groq responses carry it only there; the
recorded ones carry it in both places, with equal counts). An ``error`` object in a chunk, or
an ``event: error`` frame, raises ``ProviderStreamError`` carrying the usage merged so far,
that chunk's included (08 D4, D36). Unknown chunk fields are ignored; fields are read through
the typed accessors of ``adapters._json``, so a known field of the wrong JSON type, or data
that is not a JSON object (nested too deeply included), raises ``MalformedEventError`` (08
D59). The profile is not read: one machine serves every Chat client (08 D32).
"""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from adapters._json import (
    BadField,
    loads,
    loads_object,
    opt_array,
    opt_integer,
    opt_obj,
    opt_string,
)
from adapters._table import TableMachine, Transitions, client_event, skip
from mmsp_core.errors import ProviderStreamError, UnknownEventError
from mmsp_core.items import ClientEvent
from mmsp_core.kinds import TEXT, TOOL_CALL, Fragment
from mmsp_core.model import (
    FinishReason,
    Item,
    ThinkingDelta,
    ToolCallDelta,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.sse import SSEEvent

from .usage import read_usage

__all__ = ["ENCRYPTED_BLOCK", "FINISH_REASONS", "ChatMachine"]

#: Chat finish reasons (spec 06 §3 step 4); any other non-empty value is ``unknown``.
FINISH_REASONS: Final[Mapping[str, FinishReason]] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALL,
    "content_filter": FinishReason.STOP,
}

#: ``reasoning_details`` block carrying opaque reasoning to replay (spec 06 §3 step 1).
ENCRYPTED_BLOCK: Final = "reasoning.encrypted"

#: The delta fields read as text, in order (08 D36); each is its items' id.
_TEXT_FIELDS: Final = ("content", "refusal")


class _State(enum.Enum):
    STREAMING = "streaming"
    DONE = "done"


# --------------------------------------------------------------------------------------------
# Handlers: (machine, data text) -> the client event; the table is ChatMachine.TRANSITIONS
# --------------------------------------------------------------------------------------------


def _on_error_frame(machine: ChatMachine, text: str) -> UniEvent:
    """``event: error``: raise ``ProviderStreamError`` whatever the data (08 D4)."""
    try:
        body = loads(text)
    except BadField:
        raise ProviderStreamError(
            machine.client, provider_message=text, usage_metadata=machine._usage
        ) from None
    if type(body) is dict:
        raise machine.provider_error(body.get("error", body), body, text)
    raise machine.provider_error(body, {}, text)


def _on_chunk(machine: ChatMachine, text: str) -> ClientEvent:
    """One ``chat.completion.chunk``: its items, and a ``stop`` event for finish or usage."""
    chunk = loads_object(text)
    if chunk.get("error") is not None:
        raise machine.provider_error(chunk["error"], chunk, text)
    # Most chunks carry no usage: the key test spares them the read (the hot path).
    usage = machine.merge_usage(chunk) if "usage" in chunk or "x_groq" in chunk else None
    items: list[Item | Fragment] = []
    finish: FinishReason | None = None
    choice = _first_choice(chunk)
    if choice is not None:
        delta = opt_obj(choice, "delta")
        if delta is not None:
            # Most deltas carry no thinking: the key tests spare them the reads (the hot path).
            if "reasoning_details" in delta or "reasoning_content" in delta or "reasoning" in delta:
                _read_reasoning(machine, delta, items)
            for field in _TEXT_FIELDS:
                if field in delta:  # an absent field costs no read (the hot path)
                    content = opt_string(delta, field)
                    if content:
                        items.append(Fragment(TEXT, content, field))
            if "tool_calls" in delta:
                for fragment in opt_array(delta, "tool_calls") or ():
                    call = _tool_call(machine, fragment, text)
                    if call is not None:
                        items.append(call)
        reason = opt_string(choice, "finish_reason")
        if reason:
            finish = FINISH_REASONS.get(reason, FinishReason.UNKNOWN)
    return client_event(items, usage, finish)


def _first_choice(chunk: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Return the choice with index 0 (missing index counts as 0), or ``None`` (08 D36)."""
    choices = chunk.get("choices")
    if type(choices) is list and choices and type(choices[0]) is dict:
        index = choices[0].get("index")
        if index is None or (type(index) is int and index == 0):
            return choices[0]  # the lone choice of nearly every chunk (the hot path)
    for choice in opt_array(chunk, "choices") or ():
        if type(choice) is not dict:
            raise BadField("a choice is not a JSON object")
        if opt_integer(choice, "index") in (0, None):
            return choice
    return None


def _read_reasoning(
    machine: ChatMachine, delta: Mapping[str, Any], items: list[Item | Fragment]
) -> None:
    """Append the thinking of one delta, counted once (spec 06 §3 step 1)."""
    blocks = opt_array(delta, "reasoning_details")
    if blocks:
        for block in blocks:
            if type(block) is not dict:
                raise BadField("a reasoning_details block is not a JSON object")
            items.append(_details_block(machine, block))
        return
    content = opt_string(delta, "reasoning_content")
    reasoning = opt_string(delta, "reasoning")
    if content and reasoning:
        # Both spellings: which one the server wants back is unknown (no reasoning_field).
        fidelity: dict[str, str] = {"item_id": "reasoning_content"}
    elif content:
        fidelity = {"item_id": "reasoning_content", "reasoning_field": "reasoning_content"}
    elif reasoning:
        fidelity = {"item_id": "reasoning", "reasoning_field": "reasoning"}
    else:
        return
    items.append(ThinkingDelta(content or reasoning or "", fidelity))


def _details_block(machine: ChatMachine, block: Mapping[str, Any]) -> ThinkingDelta:
    n = machine._encrypted_blocks
    fidelity: dict[str, Any] = {
        "item_id": f"reasoning_details/{n}" if n else "reasoning_details"
    }
    text = opt_string(block, "summary") or opt_string(block, "text") or ""
    if opt_string(block, "type") == ENCRYPTED_BLOCK:
        fidelity["encrypted_content"] = opt_string(block, "data") or ""
        for wire_key, key in (("format", "format"), ("id", "reasoning_id")):
            value = opt_string(block, wire_key)
            if value is not None:
                fidelity[key] = value
        machine._encrypted_blocks += 1
    return ThinkingDelta(text, fidelity)


def _tool_call(
    machine: ChatMachine, fragment: Any, text: str
) -> ToolCallDelta | Fragment | None:
    """Turn one ``tool_calls`` entry into a fragment, starting calls per 08 D6.

    A fragment that would begin a call but names no function is out of place (08 D45):
    skipped (``None``), or ``UnknownEventError`` in strict mode; the chunk's other items
    stay.
    """
    if type(fragment) is not dict:
        raise BadField("a tool call is not a JSON object")
    function = fragment.get("function")
    index = fragment.get("index")
    if (
        type(function) is dict and "name" not in function and "id" not in fragment
        and type(index) is int and index == machine._call_index and machine._calls
    ):
        # The open call's next arguments (the hot path): nothing else to read.
        arguments = function.get("arguments")
        if type(arguments) is str:
            return Fragment(TOOL_CALL, arguments, "tool_calls")
    function = opt_obj(fragment, "function")
    name = (function and opt_string(function, "name")) or ""
    arguments = (function and opt_string(function, "arguments")) or ""
    index = opt_integer(fragment, "index")
    wire_id = opt_string(fragment, "id") or None
    if index is None and wire_id is None:
        begins = bool(name) or not machine._calls
    else:
        begins = (
            not machine._calls
            or (None not in (index, machine._call_index) and index != machine._call_index)
            or (wire_id is not None and wire_id != machine._call_wire_id)
        )
    if not begins:
        return Fragment(TOOL_CALL, arguments, "tool_calls")
    if not name:
        if machine.strict:
            raise UnknownEventError(machine.client, text, detail="a tool call without a name")
        return None
    machine._call_index = index
    machine._call_wire_id = wire_id
    call_id = wire_id or f"call_{machine._calls}"
    machine._calls += 1
    return ToolCallDelta(name, call_id, arguments, {"item_id": "tool_calls"})


def _message(value: Any, text: str) -> str:
    """A provider's error message as text: a string as it is, anything else as JSON."""
    if type(value) is str:
        return value
    try:
        return json.dumps(value)
    except RecursionError:  # parsed just under the limit, too deep to write again (08 D59)
        return text


class ChatMachine(TableMachine):
    """Decode one Chat Completions response (see the module docstring).

    Built as ``adapters._spec.NewMachine``; ``base_url`` is reserved and not read: usage reads
    the same on every endpoint (08 D52).
    """

    __slots__ = (
        "_call_index",
        "_call_wire_id",
        "_calls",
        "_encrypted_blocks",
        "_usage",
    )

    INITIAL = _State.STREAMING
    TERMINAL = frozenset({_State.DONE})
    #: (state, wire event name) -> (handler, next state). DONE has no rows: the pipeline
    #: ignores everything after ``[DONE]`` (08 D56), and to the machine itself it is out of
    #: place (08 D45).
    TRANSITIONS: ClassVar[Transitions] = {
        (_State.STREAMING, "chunk"): (_on_chunk, _State.STREAMING),
        (_State.STREAMING, "[DONE]"): (skip, _State.DONE),
        (_State.STREAMING, "error"): (_on_error_frame, _State.STREAMING),
    }

    def __init__(
        self, client: str, profile: object, *, strict: bool, base_url: str | None
    ) -> None:
        super().__init__(client, profile, strict=strict)
        self._usage: UsageMetadata | None = None
        # The open tool call (the last begun, when ``_calls`` is not 0): its wire index and
        # wire id; ``_calls`` counts calls so far.
        self._call_index: int | None = None
        self._call_wire_id: str | None = None
        self._calls = 0
        # An encrypted reasoning_details block ends its reasoning item: counting them gives
        # the blocks after one a new item id.
        self._encrypted_blocks = 0

    def classify(self, sse: SSEEvent) -> tuple[str, str]:
        """Return the wire event's name (see the module docstring) and its data text."""
        if sse.event == "message":
            return ("[DONE]" if sse.data.strip() == "[DONE]" else "chunk"), sse.data
        return ("error" if sse.event == "error" else "unknown"), sse.data

    def merge_usage(self, chunk: Mapping[str, Any]) -> UsageMetadata | None:
        """Read a chunk's usage (spec 06 §3) and merge it into the running total.

        Raises:
            BadField: a usage field of the wrong JSON type.
        """
        usage = read_usage(chunk)
        if usage is not None:
            self._usage = usage if self._usage is None else self._usage.merge(usage)
        return usage

    def provider_error(self, error: Any, body: Mapping[str, Any], text: str) -> ProviderStreamError:
        """Build the error for an in-stream error (08 D4, D36).

        The usage of ``body``, the object that carries the error, is merged first, so the
        error carries the usage so far. The provider said the stream failed, so odd field
        types never turn this into a ``MalformedEventError``: a ``code`` or ``type`` of
        another type is left out, a message that is not a string is passed on as JSON text
        (``text``, the event's data, when it is nested too deeply to write again).
        """
        with contextlib.suppress(BadField):  # the error matters more than a bad count
            self.merge_usage(body)
        if type(error) is not dict:
            return ProviderStreamError(
                self.client, provider_message=_message(error, text), usage_metadata=self._usage
            )
        code = error.get("code")
        error_type = error.get("type")
        message = error.get("message")
        return ProviderStreamError(
            self.client,
            code if type(code) in (int, str) else None,
            error_type if type(error_type) is str else None,
            None if message is None else _message(message, text),
            usage_metadata=self._usage,
        )
