"""The Chat Completions machine: one SSE event in, one client-stream UniEvent out (spec 06 §3).

Theory of operation
-------------------
A Chat Completions body is a run of ``data: <chunk JSON>`` events ended by ``data: [DONE]``.
Each SSE event is first classified into a wire event name:

* ``"[DONE]"``  the default event (``message``) whose data is ``[DONE]``;
* ``"chunk"``   any other default event: a ``chat.completion.chunk`` object;
* ``"error"``   an ``event: error`` frame (Groq sends one mid-stream);
* ``"unknown"`` any other SSE event name (08 D36).

``_TABLE`` maps ``(state, wire event name)`` to a handler. There are two states: STREAMING
until ``[DONE]``, then DONE, in which every event is out of place and treated as unknown
(08 D45: skipped, or ``UnknownEventError`` in strict mode). A stream that ends without
``[DONE]`` is not an error by itself: the finalizer decides from usage and finish reason.

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
A finish reason or usage makes the event a ``stop`` event (items stay on it). Usage is read
from ``usage`` (an ``include_usage`` chunk with no choices, or GLM's finish chunk), else from
``x_groq.usage`` (older Groq responses carry it only there; the recorded ones carry it in
both places, with equal counts). An ``error`` object in a chunk, or an ``event: error``
frame, raises ``ProviderStreamError`` carrying the usage merged so far, that chunk's included
(08 D4, D36). Unknown chunk fields are ignored; a known field of the wrong JSON type, or data
that is not a JSON object, raises ``MalformedEventError``.
"""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from mmsp_core.errors import MalformedEventError, ProviderStreamError, UnknownEventError
from mmsp_core.model import (
    FinishReason,
    Item,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.sse import SSEEvent

__all__ = ["ChatMachine", "new_machine"]

#: Chat finish reasons (spec 06 §3 step 4); any other non-empty value is ``unknown``.
FINISH_REASONS: Final[Mapping[str, FinishReason]] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALL,
    "content_filter": FinishReason.STOP,
}

#: ``reasoning_details`` block carrying opaque reasoning to replay (spec 06 §3 step 1).
ENCRYPTED_BLOCK: Final = "reasoning.encrypted"

_T = TypeVar("_T")


class _State(enum.Enum):
    STREAMING = "streaming"
    DONE = "done"


class ChatMachine:
    """Decode one Chat Completions response (see the module docstring)."""

    def __init__(self, client: str, *, strict: bool, base_url: str | None) -> None:
        self._client = client
        self._strict = strict
        # Spec 06 §7: OpenRouter sometimes leaves reasoning out of completion_tokens.
        self._openrouter = base_url is not None and "openrouter.ai" in base_url
        self._state = _State.STREAMING
        self._usage: UsageMetadata | None = None
        # The open tool call: its wire index and wire id; ``_calls`` counts calls so far.
        self._call_open = False
        self._call_index: int | None = None
        self._call_wire_id: str | None = None
        self._calls = 0
        # An encrypted reasoning_details block ends its reasoning item: counting them gives
        # the blocks after one a new item id.
        self._encrypted_blocks = 0

    # -- Machine protocol ----------------------------------------------------------------

    def next_events(self, sse: SSEEvent) -> list[UniEvent]:
        """Return the client event for one SSE event.

        Raises:
            ProviderStreamError: an error chunk or ``event: error`` frame (08 D4).
            MalformedEventError: chunk data that is not the JSON a chunk must be.
            UnknownEventError: strict mode only, an unknown or out-of-place event (08 D36, D45).
        """
        try:
            return [_TABLE[self._state, _wire_name(sse)](self, sse)]
        except _BadField as exc:
            raise MalformedEventError(self._client, sse.data, detail=str(exc)) from None

    def finish(self) -> list[UniEvent]:
        """Nothing is buffered: the end of input adds no event."""
        return []

    # -- handlers ------------------------------------------------------------------------

    def _on_done(self, sse: SSEEvent) -> UniEvent:
        self._state = _State.DONE
        return _EMPTY

    def _on_unknown(self, sse: SSEEvent) -> UniEvent:
        if self._strict:
            label = sse.data if self._state is _State.STREAMING else f"after [DONE]: {sse.data}"
            raise UnknownEventError(self._client, f"{sse.event}: {label}")
        return _EMPTY

    def _on_error_frame(self, sse: SSEEvent) -> UniEvent:
        try:
            body = json.loads(sse.data)
        except ValueError:
            raise ProviderStreamError(
                self._client, provider_message=sse.data, usage_metadata=self._usage
            ) from None
        if isinstance(body, dict):
            raise self._provider_error(body.get("error", body), body)
        raise self._provider_error(body, {})

    def _on_chunk(self, sse: SSEEvent) -> UniEvent:
        try:
            chunk = json.loads(sse.data)
        except ValueError:
            raise _BadField("the data is not JSON") from None
        if not isinstance(chunk, dict):
            raise _BadField("the data is not a JSON object")
        if chunk.get("error") is not None:
            raise self._provider_error(chunk["error"], chunk)
        usage = self._read_usage(chunk)
        items: list[Item] = []
        finish: FinishReason | None = None
        choice = self._first_choice(chunk)
        if choice is not None:
            delta = _get(choice, "delta", dict) or {}
            self._read_reasoning(delta, items)
            for field in ("content", "refusal"):
                text = _get(delta, field, str)
                if text:
                    items.append(TextDelta(text, {"item_id": field}))
            for fragment in _get(delta, "tool_calls", list) or ():
                call = self._tool_call(fragment, sse)
                if call is not None:
                    items.append(call)
            reason = _get(choice, "finish_reason", str)
            if reason:
                finish = FINISH_REASONS.get(reason, FinishReason.UNKNOWN)
        if finish is None and usage is None:
            return UniEvent("delta", tuple(items))
        return UniEvent("stop", tuple(items), usage, finish)

    # -- chunk parts ---------------------------------------------------------------------

    def _first_choice(self, chunk: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """Return the choice with index 0 (missing index counts as 0), or ``None`` (08 D36)."""
        for choice in _get(chunk, "choices", list) or ():
            if not isinstance(choice, dict):
                raise _BadField("a choice is not a JSON object")
            if _get(choice, "index", int) in (0, None):
                return choice
        return None

    def _read_reasoning(self, delta: Mapping[str, Any], items: list[Item]) -> None:
        """Append the thinking of one delta, counted once (spec 06 §3 step 1)."""
        blocks = _get(delta, "reasoning_details", list)
        if blocks:
            for block in blocks:
                if not isinstance(block, dict):
                    raise _BadField("a reasoning_details block is not a JSON object")
                items.append(self._details_block(block))
            return
        content = _get(delta, "reasoning_content", str)
        reasoning = _get(delta, "reasoning", str)
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

    def _details_block(self, block: Mapping[str, Any]) -> ThinkingDelta:
        n = self._encrypted_blocks
        fidelity: dict[str, Any] = {
            "item_id": f"reasoning_details/{n}" if n else "reasoning_details"
        }
        text = _get(block, "summary", str) or _get(block, "text", str) or ""
        if _get(block, "type", str) == ENCRYPTED_BLOCK:
            fidelity["encrypted_content"] = _get(block, "data", str) or ""
            for wire_key, key in (("format", "format"), ("id", "reasoning_id")):
                value = _get(block, wire_key, str)
                if value is not None:
                    fidelity[key] = value
            self._encrypted_blocks += 1
        return ThinkingDelta(text, fidelity)

    def _tool_call(self, fragment: Any, sse: SSEEvent) -> ToolCallDelta | None:
        """Turn one ``tool_calls`` entry into a fragment, starting calls per 08 D6.

        A fragment that would begin a call but names no function is out of place (08 D45):
        skipped (``None``), or ``UnknownEventError`` in strict mode.
        """
        if not isinstance(fragment, dict):
            raise _BadField("a tool call is not a JSON object")
        function = _get(fragment, "function", dict) or {}
        name = _get(function, "name", str) or ""
        arguments = _get(function, "arguments", str) or ""
        index = _get(fragment, "index", int)
        wire_id = _get(fragment, "id", str) or None
        if index is None and wire_id is None:
            begins = bool(name) or not self._call_open
        else:
            begins = (
                not self._call_open
                or (None not in (index, self._call_index) and index != self._call_index)
                or (wire_id is not None and wire_id != self._call_wire_id)
            )
        if not begins:
            return ToolCallDelta("", "", arguments, {"item_id": "tool_calls"})
        if not name:
            if self._strict:
                raise UnknownEventError(self._client, sse.data, detail="a tool call without a name")
            return None
        self._call_open = True
        self._call_index = index
        self._call_wire_id = wire_id
        call_id = wire_id or f"call_{self._calls}"
        self._calls += 1
        return ToolCallDelta(name, call_id, arguments, {"item_id": "tool_calls"})

    def _read_usage(self, chunk: Mapping[str, Any]) -> UsageMetadata | None:
        """Read a chunk's usage (spec 06 §3) and merge it into the running total."""
        raw = _get(chunk, "usage", dict)
        if raw is None:
            groq = chunk.get("x_groq")
            raw = _get(groq, "usage", dict) if isinstance(groq, dict) else None
        if raw is None:
            return None
        prompt = _get(raw, "prompt_tokens", int)
        completion = _get(raw, "completion_tokens", int)
        cached = _get(_get(raw, "prompt_tokens_details", dict) or {}, "cached_tokens", int)
        thoughts = _get(_get(raw, "completion_tokens_details", dict) or {}, "reasoning_tokens", int)
        if prompt is not None and cached is not None:
            prompt -= cached
        if completion is not None and thoughts is not None:
            completion -= thoughts
            if self._openrouter and completion < 0:
                completion += thoughts
        usage = UsageMetadata(cached, prompt, thoughts, completion)
        self._usage = usage if self._usage is None else self._usage.merge(usage)
        return usage

    def _provider_error(self, error: Any, body: Mapping[str, Any]) -> ProviderStreamError:
        """Build the error for an in-stream error (08 D4, D36).

        The usage of the body that carries it is merged first, so the error carries the usage
        so far. The provider said the stream failed, so odd field types never turn this into
        a ``MalformedEventError``: unreadable parts are left out or passed on as JSON text.
        """
        with contextlib.suppress(_BadField):  # the error matters more than a bad count
            self._read_usage(body)
        if not isinstance(error, dict):
            return ProviderStreamError(
                self._client, provider_message=_text(error), usage_metadata=self._usage
            )
        code = error.get("code")
        error_type = error.get("type")
        return ProviderStreamError(
            self._client,
            code if isinstance(code, int | str) and not isinstance(code, bool) else None,
            error_type if isinstance(error_type, str) else None,
            None if error.get("message") is None else _text(error["message"]),
            usage_metadata=self._usage,
        )


_EMPTY: Final = UniEvent("delta")

_Handler = Callable[[ChatMachine, SSEEvent], UniEvent]

#: The transition table: (state, wire event name) -> handler. See the module docstring.
_TABLE: Final[Mapping[tuple[_State, str], _Handler]] = {
    (_State.STREAMING, "chunk"): ChatMachine._on_chunk,
    (_State.STREAMING, "[DONE]"): ChatMachine._on_done,
    (_State.STREAMING, "error"): ChatMachine._on_error_frame,
    (_State.STREAMING, "unknown"): ChatMachine._on_unknown,
    (_State.DONE, "chunk"): ChatMachine._on_unknown,
    (_State.DONE, "[DONE]"): ChatMachine._on_unknown,
    (_State.DONE, "error"): ChatMachine._on_unknown,
    (_State.DONE, "unknown"): ChatMachine._on_unknown,
}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _wire_name(sse: SSEEvent) -> str:
    if sse.event == "message":
        return "[DONE]" if sse.data.strip() == "[DONE]" else "chunk"
    return "error" if sse.event == "error" else "unknown"


class _BadField(Exception):
    """A known chunk field has the wrong JSON type; ``next_events`` reports it."""


_JSON_NAMES: Final[Mapping[type, str]] = {
    str: "string",
    int: "integer",
    dict: "object",
    list: "array",
}


def _get(obj: Mapping[str, Any], key: str, kind: type[_T]) -> _T | None:
    """Return ``obj[key]`` when it is a ``kind``; ``None`` when absent or null.

    Raises:
        _BadField: the value has another JSON type (a bool is not an integer).
    """
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    raise _BadField(f"{key!r} is not a JSON {_JSON_NAMES[kind]}")


def new_machine(client: str, *, strict: bool, base_url: str | None) -> ChatMachine:
    """Build the machine for one Chat Completions response (``adapters._spec.NewMachine``)."""
    return ChatMachine(client, strict=strict, base_url=base_url)
