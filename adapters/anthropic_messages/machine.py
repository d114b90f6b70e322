"""Anthropic Messages stream -> client-stream UniEvents (spec 06 §1, 02 §2.1).

Theory of operation
-------------------
The body is an event stream whose SSE ``event`` field names each wire event
(``message_start``, ``content_block_delta``, ...); its ``data`` is one JSON object. The
machine reads one SSE event at a time and returns exactly one client event for it
(02 §2.1): a delta event with zero or one delta item, or a ``stop`` event carrying the
part of usage and finish reason the wire event reported.

Message states (``_State``)::

    START --message_start--> MESSAGE --message_stop--> DONE

``_TRANSITIONS`` maps ``(state, event name)`` to a handler and the next state. ``ping``,
``error`` and the names in ``SKIPPED_EVENTS`` have a row in every state. A name with no row
at all is unknown; a known name without a row for the current state makes no sense there
(a ``content_block_delta`` before ``message_start``, anything after ``message_stop``). Both
are skipped with an empty delta event, or raise ``UnknownEventError`` in strict mode
(08 D8, D45). So is a handler's ``None``: an event for a block index that is not open, a
block index opened twice, a known delta type inside the wrong kind of block.

Content blocks are tracked by ``index`` from ``content_block_start`` to
``content_block_stop``; every item fragment carries ``fidelity.item_id = str(index)``, so the
finalizer closes an item when the next block's fragments arrive (02 §4). Blocks never close
items themselves. Text, thinking, redacted thinking and client ``tool_use`` blocks produce
items. Every other block type (``SKIPPED_BLOCK_TYPES``: server tools, their results, MCP,
compaction, ...) is skipped with all its deltas, by index, in both modes (08 D34, D51); a
block type named nowhere in this module is skipped the same way, or raises
``UnknownEventError`` in strict mode. Deltas are dispatched by ``_DELTAS``, keyed by
``(block kind, delta type)``; delta types we do not know (``citations_delta``,
``compaction_delta``, anything new) are skipped in both modes (06 §1).

``message_start`` and ``message_delta`` produce ``stop`` events with the usage formula of
06 §1 (and the OpenRouter fix of 06 §7 when ``base_url`` names openrouter.ai);
``message_delta`` also maps ``stop_reason``. The machine keeps the usage merged so far only
so that an ``error`` event can report it: ``error`` raises ``ProviderStreamError`` with the
provider's error type and message (08 D4). A known event whose data is not the JSON it must
be raises ``MalformedEventError``.

Not handled here on purpose: completeness (whether usage and finish reason arrived, whether
tool arguments parse) is the finalizer's business, so ``finish()`` returns nothing; Bedrock's
binary event stream is out of scope (08 D23).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from typing import Any, Final, NoReturn, TypeAlias

from mmsp_core.errors import MalformedEventError, ProviderStreamError, UnknownEventError
from mmsp_core.model import (
    FinishReason,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.sse import SSEEvent

__all__ = [
    "FINISH_REASONS",
    "REDACTED_THINKING",
    "SKIPPED_BLOCK_TYPES",
    "SKIPPED_EVENTS",
    "AnthropicMessagesMachine",
]

#: The thinking text MMSP gives a ``redacted_thinking`` block; its ``data`` travels as
#: ``fidelity.signature`` (spec 01 §5).
REDACTED_THINKING: Final = "_REDACTED_THINKING"

#: Content block types MMSP knows and deliberately skips, with all their deltas, in both
#: modes (08 D34, D51): server tools and their results, MCP calls and results, code
#: execution, compaction summaries.
SKIPPED_BLOCK_TYPES: Final = frozenset(
    {
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "advisor_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
        "compaction",
    }
)

#: Wire events that carry nothing universal, skipped in every state: keep-alive pings, and
#: the helper names the Anthropic SDK adds to its own event stream (06 §1).
SKIPPED_EVENTS: Final = ("ping", "text", "thinking", "signature", "input_json")

#: ``stop_reason`` -> finish reason; any other non-null value is ``unknown`` (06 §1).
FINISH_REASONS: Final[Mapping[str, FinishReason]] = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALL,
}

_EMPTY: Final = UniEvent("delta")


class _State(enum.Enum):
    #: Before ``message_start``.
    START = enum.auto()
    #: Inside the message: blocks open and close, ``message_delta`` reports the end.
    MESSAGE = enum.auto()
    #: After ``message_stop``: nothing more is expected.
    DONE = enum.auto()
    #: A handler raised; the machine may not be used again.
    ERROR = enum.auto()


class _Block(enum.Enum):
    #: ``text``: ``text_delta`` fragments (``citations_delta`` skipped).
    TEXT = enum.auto()
    #: ``thinking``: ``thinking_delta`` fragments, then one ``signature_delta``.
    THINKING = enum.auto()
    #: ``redacted_thinking``: the whole payload is in ``content_block_start``.
    REDACTED_THINKING = enum.auto()
    #: a client ``tool_use``: ``input_json_delta`` fragments of the arguments.
    TOOL_USE = enum.auto()
    #: any other block: it and its deltas produce nothing.
    SKIPPED = enum.auto()


_BLOCK_KINDS: Final[Mapping[str, _Block]] = {
    "text": _Block.TEXT,
    "thinking": _Block.THINKING,
    "redacted_thinking": _Block.REDACTED_THINKING,
    "tool_use": _Block.TOOL_USE,
}


# --------------------------------------------------------------------------------------------
# Reading JSON fields: anything of the wrong shape is a MalformedEventError.
# --------------------------------------------------------------------------------------------


def _malformed(m: AnthropicMessagesMachine, sse: SSEEvent, reason: str) -> NoReturn:
    raise MalformedEventError(m.client, f"{sse.event}: {sse.data}", detail=reason)


def _data(m: AnthropicMessagesMachine, sse: SSEEvent) -> Mapping[str, Any]:
    """Parse the event's data as a JSON object."""
    try:
        data = json.loads(sse.data)
    except (ValueError, RecursionError) as exc:
        raise MalformedEventError(
            m.client, f"{sse.event}: {sse.data}", detail=f"data is not JSON: {exc}"
        ) from exc
    if not isinstance(data, dict):
        _malformed(m, sse, "data is not a JSON object")
    return data


def _field(
    m: AnthropicMessagesMachine, sse: SSEEvent, obj: Mapping[str, Any], key: str, kind: type
) -> Any:
    """Return ``obj[key]``, which must be present and exactly of ``kind``.

    JSON decodes to exact ``dict``/``str``/``int`` values, and the exact test keeps a bool from
    passing for an int.
    """
    value = obj.get(key)
    if type(value) is not kind:
        _malformed(m, sse, f"{key!r} must be {kind.__name__}")
    return value


def _count(
    m: AnthropicMessagesMachine, sse: SSEEvent, usage: Mapping[str, Any], key: str
) -> int | None:
    """Return a token count of a usage object, ``None`` when absent or null."""
    if usage.get(key) is None:
        return None
    count: int = _field(m, sse, usage, key, int)
    return count


def _optional_object(
    m: AnthropicMessagesMachine, sse: SSEEvent, obj: Mapping[str, Any], key: str
) -> Mapping[str, Any] | None:
    if obj.get(key) is None:
        return None
    value: Mapping[str, Any] = _field(m, sse, obj, key, dict)
    return value


def _input_usage(
    m: AnthropicMessagesMachine, sse: SSEEvent, usage: Mapping[str, Any]
) -> tuple[int | None, int | None]:
    """Return ``(cached, prompt)``: ``prompt = input + cache creation`` (06 §1)."""
    cached = _count(m, sse, usage, "cache_read_input_tokens")
    input_tokens = _count(m, sse, usage, "input_tokens")
    creation = _count(m, sse, usage, "cache_creation_input_tokens")
    prompt = None if input_tokens is None else input_tokens + (creation or 0)
    return cached, prompt


# --------------------------------------------------------------------------------------------
# Handlers: (machine, sse) -> the client event, or None when the event makes no sense here.
# --------------------------------------------------------------------------------------------

_Handler: TypeAlias = Callable[["AnthropicMessagesMachine", SSEEvent], UniEvent | None]


def _skip(m: AnthropicMessagesMachine, sse: SSEEvent) -> UniEvent:
    return _EMPTY


def _on_message_start(m: AnthropicMessagesMachine, sse: SSEEvent) -> UniEvent:
    """A stop event with the input counts of ``message.usage`` (06 §1)."""
    message = _field(m, sse, _data(m, sse), "message", dict)
    usage = _optional_object(m, sse, message, "usage")
    if usage is None:
        return UniEvent("stop")
    cached, prompt = _input_usage(m, sse, usage)
    return UniEvent("stop", usage_metadata=m.record_usage(UsageMetadata(cached, prompt)))


def _on_message_delta(m: AnthropicMessagesMachine, sse: SSEEvent) -> UniEvent:
    """A stop event: finish reason from ``delta.stop_reason``, usage from ``usage`` (06 §1)."""
    data = _data(m, sse)
    delta = _field(m, sse, data, "delta", dict)
    finish = None
    if delta.get("stop_reason") is not None:
        stop_reason: str = _field(m, sse, delta, "stop_reason", str)
        finish = FINISH_REASONS.get(stop_reason, FinishReason.UNKNOWN)
    usage = _optional_object(m, sse, data, "usage")
    if usage is None:
        return UniEvent("stop", finish_reason=finish)
    cached, prompt = _input_usage(m, sse, usage)
    details = _optional_object(m, sse, usage, "output_tokens_details")
    thoughts = None if details is None else _count(m, sse, details, "thinking_tokens")
    output = _count(m, sse, usage, "output_tokens")
    response = None if output is None else output - (thoughts or 0)
    if m.openrouter and response is not None and response < 0:
        # OpenRouter sometimes leaves reasoning out of output_tokens (06 §7).
        response += thoughts or 0
    counts = UsageMetadata(cached, prompt, thoughts, response)
    return UniEvent("stop", usage_metadata=m.record_usage(counts), finish_reason=finish)


def _on_block_start(m: AnthropicMessagesMachine, sse: SSEEvent) -> UniEvent | None:
    """Open block ``index``; tool calls and redacted thinking start their item here."""
    data = _data(m, sse)
    index: int = _field(m, sse, data, "index", int)
    block = _field(m, sse, data, "content_block", dict)
    block_type: str = _field(m, sse, block, "type", str)
    if index in m.blocks:
        return None
    kind = _BLOCK_KINDS.get(block_type, _Block.SKIPPED)
    if kind is _Block.SKIPPED and block_type not in SKIPPED_BLOCK_TYPES and m.strict:
        raise UnknownEventError(
            m.client, f"{sse.event}: {sse.data}", detail=f"unknown block type {block_type!r}"
        )
    item_id = {"item_id": str(index)}
    if kind is _Block.TOOL_USE:
        name: str = _field(m, sse, block, "name", str)
        call_id: str = _field(m, sse, block, "id", str)
        m.blocks[index] = kind
        return UniEvent("delta", (ToolCallDelta(name, call_id, "", item_id),))
    if kind is _Block.REDACTED_THINKING:
        payload: str = _field(m, sse, block, "data", str)
        m.blocks[index] = kind
        thinking = ThinkingDelta(REDACTED_THINKING, {**item_id, "signature": payload})
        return UniEvent("delta", (thinking,))
    m.blocks[index] = kind  # text and thinking arrive in deltas
    return _EMPTY


def _text_delta(m: AnthropicMessagesMachine, sse: SSEEvent, iid: str, delta: Any) -> UniEvent:
    text: str = _field(m, sse, delta, "text", str)
    return UniEvent("delta", (TextDelta(text, {"item_id": iid}),))


def _thinking_delta(m: AnthropicMessagesMachine, sse: SSEEvent, iid: str, delta: Any) -> UniEvent:
    thinking: str = _field(m, sse, delta, "thinking", str)
    return UniEvent("delta", (ThinkingDelta(thinking, {"item_id": iid}),))


def _signature_delta(m: AnthropicMessagesMachine, sse: SSEEvent, iid: str, delta: Any) -> UniEvent:
    signature: str = _field(m, sse, delta, "signature", str)
    return UniEvent("delta", (ThinkingDelta("", {"item_id": iid, "signature": signature}),))


def _input_json_delta(m: AnthropicMessagesMachine, sse: SSEEvent, iid: str, delta: Any) -> UniEvent:
    fragment: str = _field(m, sse, delta, "partial_json", str)
    return UniEvent("delta", (ToolCallDelta("", "", fragment, {"item_id": iid}),))


def _skip_delta(m: AnthropicMessagesMachine, sse: SSEEvent, iid: str, delta: Any) -> UniEvent:
    return _EMPTY


_DeltaHandler: TypeAlias = Callable[
    ["AnthropicMessagesMachine", SSEEvent, str, Mapping[str, Any]], UniEvent
]

#: ``(block kind, delta type)`` -> handler. A delta type named here but arriving in another
#: kind of block makes no sense (08 D45); a delta type named nowhere is skipped (06 §1).
_DELTAS: Final[Mapping[tuple[_Block, str], _DeltaHandler]] = {
    (_Block.TEXT, "text_delta"): _text_delta,
    (_Block.TEXT, "citations_delta"): _skip_delta,
    (_Block.THINKING, "thinking_delta"): _thinking_delta,
    (_Block.THINKING, "signature_delta"): _signature_delta,
    (_Block.TOOL_USE, "input_json_delta"): _input_json_delta,
}
_KNOWN_DELTA_TYPES: Final = frozenset(delta_type for _, delta_type in _DELTAS)


def _on_block_delta(m: AnthropicMessagesMachine, sse: SSEEvent) -> UniEvent | None:
    """One fragment of the open block ``index``, dispatched by ``_DELTAS``."""
    data = _data(m, sse)
    index: int = _field(m, sse, data, "index", int)
    delta = _field(m, sse, data, "delta", dict)
    delta_type: str = _field(m, sse, delta, "type", str)
    kind = m.blocks.get(index)
    if kind is None:
        return None
    if kind is _Block.SKIPPED:
        return _EMPTY
    handler = _DELTAS.get((kind, delta_type))
    if handler is None:
        return None if delta_type in _KNOWN_DELTA_TYPES else _EMPTY
    return handler(m, sse, str(index), delta)


def _on_block_stop(m: AnthropicMessagesMachine, sse: SSEEvent) -> UniEvent | None:
    """Forget block ``index``; the finalizer closes its item when the next one begins."""
    index: int = _field(m, sse, _data(m, sse), "index", int)
    if m.blocks.pop(index, None) is None:
        return None
    return _EMPTY


def _on_error(m: AnthropicMessagesMachine, sse: SSEEvent) -> NoReturn:
    """Raise the provider's in-stream error with the usage so far (08 D4)."""
    error = _data(m, sse).get("error")
    if isinstance(error, dict):
        error_type, message = error.get("type"), error.get("message")
    else:
        error_type, message = None, error
    raise ProviderStreamError(
        m.client,
        error_type=error_type if isinstance(error_type, str) else None,
        provider_message=message if isinstance(message, str) else None,
        usage_metadata=m.usage,
    )


_TRANSITIONS: Final[Mapping[tuple[_State, str], tuple[_Handler, _State]]] = {
    (_State.START, "message_start"): (_on_message_start, _State.MESSAGE),
    (_State.MESSAGE, "content_block_start"): (_on_block_start, _State.MESSAGE),
    (_State.MESSAGE, "content_block_delta"): (_on_block_delta, _State.MESSAGE),
    (_State.MESSAGE, "content_block_stop"): (_on_block_stop, _State.MESSAGE),
    (_State.MESSAGE, "message_delta"): (_on_message_delta, _State.MESSAGE),
    (_State.MESSAGE, "message_stop"): (_skip, _State.DONE),
    **{(state, "error"): (_on_error, state) for state in _State if state is not _State.ERROR},
    **{
        (state, name): (_skip, state)
        for state in _State
        if state is not _State.ERROR
        for name in SKIPPED_EVENTS
    },
}
_KNOWN_EVENTS: Final = frozenset(name for _, name in _TRANSITIONS)


class AnthropicMessagesMachine:
    """The Anthropic Messages machine: one client event per wire event (see module doc).

    ``client`` names the source in errors; ``strict`` turns skipped unknown events into
    ``UnknownEventError`` (08 D8); a ``base_url`` containing ``openrouter.ai`` turns on the
    OpenRouter usage fix (06 §7, 08 D32).
    """

    __slots__ = ("blocks", "client", "openrouter", "state", "strict", "usage")

    def __init__(self, client: str, *, strict: bool, base_url: str | None) -> None:
        self.client = client
        self.strict = strict
        self.openrouter = base_url is not None and "openrouter.ai" in base_url
        self.state = _State.START
        #: Open content blocks: index -> kind.
        self.blocks: dict[int, _Block] = {}
        #: Usage merged so far, for ``ProviderStreamError`` (08 D4, D7).
        self.usage: UsageMetadata | None = None

    def record_usage(self, counts: UsageMetadata) -> UsageMetadata:
        """Merge ``counts`` into the usage so far (08 D7) and return ``counts``."""
        self.usage = counts if self.usage is None else self.usage.merge(counts)
        return counts

    def next_events(self, sse: SSEEvent) -> list[UniEvent]:
        """Return the client event for one wire event.

        Raises:
            ProviderStreamError: an ``error`` event (08 D4).
            MalformedEventError: a known event whose data is not the JSON it must be.
            UnknownEventError: strict mode only, an unknown event or block type, or a known
                event where it makes no sense (08 D8, D45, D51).
            RuntimeError: the machine already raised.
        """
        if self.state is _State.ERROR:
            raise RuntimeError("the machine already failed; build a new one")
        handler, next_state = _TRANSITIONS.get((self.state, sse.event), (None, self.state))
        try:
            event = None if handler is None else handler(self, sse)
            if event is None:
                return [self._unexpected(sse)]
        except BaseException:
            self.state = _State.ERROR
            raise
        self.state = next_state
        return [event]

    def finish(self) -> list[UniEvent]:
        """Nothing is held back: completeness is the finalizer's decision."""
        return []

    def _unexpected(self, sse: SSEEvent) -> UniEvent:
        """Skip an unknown or out-of-place event, or raise in strict mode (08 D8, D45)."""
        if not self.strict:
            return _EMPTY
        why = "unknown event" if sse.event not in _KNOWN_EVENTS else f"unexpected in {self.state}"
        raise UnknownEventError(self.client, f"{sse.event}: {sse.data}", detail=why)
