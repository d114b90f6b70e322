"""Anthropic Messages stream -> client-stream UniEvents (spec 06 §1, 02 §2.1).

Theory of operation
-------------------
The body is an event stream whose SSE ``event`` field names each wire event
(``message_start``, ``content_block_delta``, ...); its ``data`` is one JSON object. The
machine is a ``TableMachine`` (``adapters._table``): the kernel looks up
``(state, event name)`` in ``_TRANSITIONS`` and runs the handler with the data text, which
returns exactly one client event (02 §2.1): a delta event with zero or one delta item (a
``Fragment`` for text, thinking and argument deltas, 08 D65), or a ``stop`` event carrying
the part of usage and finish reason the wire event reported. Only the
handlers that read the data parse it (``classify`` passes the text on), so an event that is
skipped (a ``ping``, an unknown or out-of-place event) is skipped whatever its data is.

Message states (``_State``)::

    START --message_start--> MESSAGE --message_stop--> DONE (terminal)

``error`` and the names in ``SKIPPED_EVENTS`` have a row in every state. A name with no row
at all is unknown; a known name without a row for the current state makes no sense there
(a ``content_block_delta`` before ``message_start``). ``message_stop`` sets ``finished``, and
the pipeline ignores whatever follows it (08 D56); a caller driving the machine itself finds
later events out of place. The
kernel skips both with an empty delta event, or raises ``UnknownEventError`` in strict mode
(08 D8, D45). So is a handler's ``None``: an event for a block index that is not open, a
block index opened twice, a known delta type inside the wrong kind of block.

Content blocks are tracked by ``index`` from ``content_block_start`` to
``content_block_stop``, at most ``max_open_blocks`` (``MAX_OPEN_BLOCKS``) at once: one more
raises ``StreamLimitError``, so a server that opens blocks without closing them cannot make the
machine hold without bound (08 D18). Every item fragment carries
``fidelity.item_id = str(index)``, so the finalizer closes an item when the next block's
fragments arrive (02 §4). Blocks never close items themselves. Text, thinking, redacted
thinking and client ``tool_use`` blocks produce items. Every other block type
(``SKIPPED_BLOCK_TYPES``: server tools, their results, MCP, compaction, ...) is skipped with
all its deltas, by index, in both modes (08 D34, D51); a block type named nowhere in this
module is skipped the same way, and its ``content_block_start`` is unknown
(``UnknownEventError`` in strict mode). Deltas are dispatched by ``_DELTAS``, keyed by
``(block kind, delta type)``; delta types we do not know (``citations_delta``,
``compaction_delta``, anything new) are skipped in both modes (06 §1).

``message_start`` and ``message_delta`` produce ``stop`` events with the usage read by the
package's one usage mapping (``usage``: 06 §1, 08 D52), through the machine's
``InputCounts``, which remembers the input counts seen so far, so that a cache creation count
arriving only on ``message_delta`` still adds to ``message_start``'s ``input_tokens`` (08 D53);
``message_delta`` also maps ``stop_reason``. The machine
keeps the usage merged so far only so that an ``error`` event can report it: ``error`` raises
``ProviderStreamError`` with the provider's error type and message (08 D4). Handlers read
fields through ``adapters._json``, so a known event whose data is not the JSON it must be
raises ``MalformedEventError``, and the kernel lets nothing but ``MMSPError`` out (08 D59).

Not handled here on purpose: completeness (whether usage and finish reason arrived, whether
tool arguments parse) is the finalizer's business, so ``finish()`` returns nothing; Bedrock's
binary event stream is unwrapped into these events by ``bedrock`` (08 D72).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, Final, NoReturn, TypeAlias

from mypy_extensions import mypyc_attr

from adapters._json import BadField, integer, loads_object, obj, opt_obj, opt_string, string
from adapters._table import EMPTY, TableMachine, Transitions, skip, skip_rows
from mmsp_core.errors import ProviderStreamError, StreamLimitError
from mmsp_core.items import ClientEvent
from mmsp_core.kinds import TEXT, THINKING, TOOL_CALL, Fragment
from mmsp_core.model import (
    FinishReason,
    ThinkingDelta,
    ToolCallDelta,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.sse import SSEEvent

from .usage import InputCounts, from_message_delta, from_message_start

__all__ = [
    "FINISH_REASONS",
    "MAX_OPEN_BLOCKS",
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

#: Content blocks open at once past which the stream is refused: a message has a handful, so
#: this only bounds what a hostile server can make the machine hold (08 D18).
MAX_OPEN_BLOCKS: Final = 1024

#: ``stop_reason`` -> finish reason; any other non-null value is ``unknown`` (06 §1).
FINISH_REASONS: Final[Mapping[str, FinishReason]] = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALL,
}


class _State(enum.Enum):
    #: Before ``message_start``.
    START = enum.auto()
    #: Inside the message: blocks open and close, ``message_delta`` reports the end.
    MESSAGE = enum.auto()
    #: After ``message_stop``: nothing more is expected.
    DONE = enum.auto()


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

    # Members are singletons compared by identity: hashed as objects, in C, rather than by
    # ``Enum.__hash__`` (Python code), since ``_DELTAS`` is read once per delta.
    __hash__ = object.__hash__


_BLOCK_KINDS: Final[Mapping[str, _Block]] = {
    "text": _Block.TEXT,
    "thinking": _Block.THINKING,
    "redacted_thinking": _Block.REDACTED_THINKING,
    "tool_use": _Block.TOOL_USE,
}


# --------------------------------------------------------------------------------------------
# Handlers: (machine, data text) -> the client event, or None when the event makes no sense
# here. Each parses the data as one JSON object (``BadField`` otherwise).
# --------------------------------------------------------------------------------------------


def _on_message_start(m: AnthropicMessagesMachine, text: str) -> UniEvent:
    """A stop event with the input counts of ``message.usage`` (06 §1)."""
    counts = opt_obj(obj(loads_object(text), "message"), "usage")
    if counts is None:
        return UniEvent("stop")
    return UniEvent("stop", usage_metadata=m.record_usage(from_message_start(counts, m.inputs)))


def _on_message_delta(m: AnthropicMessagesMachine, text: str) -> UniEvent:
    """A stop event: finish reason from ``delta.stop_reason``, usage from ``usage`` (06 §1)."""
    data = loads_object(text)
    stop_reason = opt_string(obj(data, "delta"), "stop_reason")
    finish = None if stop_reason is None else FINISH_REASONS.get(stop_reason, FinishReason.UNKNOWN)
    counts = opt_obj(data, "usage")
    if counts is None:
        return UniEvent("stop", finish_reason=finish)
    read = from_message_delta(counts, m.inputs)
    return UniEvent("stop", usage_metadata=m.record_usage(read), finish_reason=finish)


def _on_block_start(m: AnthropicMessagesMachine, text: str) -> UniEvent | None:
    """Open block ``index``; tool calls and redacted thinking start their item here.

    A block type named nowhere in this module is skipped by index, and this event is unknown
    (``None``: ``UnknownEventError`` in strict mode, 08 D34).
    """
    data = loads_object(text)
    index = integer(data, "index")
    block = obj(data, "content_block")
    block_type = string(block, "type")
    if index in m.blocks:
        return None
    if len(m.blocks) >= m.max_open_blocks:
        raise StreamLimitError("open content blocks", m.max_open_blocks, len(m.blocks) + 1)
    kind = _BLOCK_KINDS.get(block_type, _Block.SKIPPED)
    item_id = {"item_id": str(index)}
    if kind is _Block.TOOL_USE:
        name = string(block, "name")
        call_id = string(block, "id")
        if not (name and call_id):  # the first fragment of a call carries both (08 D59)
            raise BadField("a tool_use block needs a non-empty 'name' and 'id'")
        m.blocks[index] = kind
        return UniEvent("delta", (ToolCallDelta(name, call_id, "", item_id),))
    if kind is _Block.REDACTED_THINKING:
        payload = string(block, "data")
        m.blocks[index] = kind
        thinking = ThinkingDelta(REDACTED_THINKING, {**item_id, "signature": payload})
        return UniEvent("delta", (thinking,))
    m.blocks[index] = kind  # text and thinking arrive in deltas
    if kind is _Block.SKIPPED and block_type not in SKIPPED_BLOCK_TYPES:
        return None
    return EMPTY


def _text_delta(iid: str, delta: Mapping[str, Any]) -> Fragment:
    return Fragment(TEXT, string(delta, "text"), iid)


def _thinking_delta(iid: str, delta: Mapping[str, Any]) -> Fragment:
    return Fragment(THINKING, string(delta, "thinking"), iid)


def _signature_delta(iid: str, delta: Mapping[str, Any]) -> UniEvent:
    signature = string(delta, "signature")
    return UniEvent("delta", (ThinkingDelta("", {"item_id": iid, "signature": signature}),))


def _input_json_delta(iid: str, delta: Mapping[str, Any]) -> Fragment:
    return Fragment(TOOL_CALL, string(delta, "partial_json"), iid)


def _skip_delta(iid: str, delta: Mapping[str, Any]) -> UniEvent:
    return EMPTY


_DeltaHandler: TypeAlias = Callable[[str, Mapping[str, Any]], ClientEvent]

#: block kind -> delta type -> handler of ``(item id, delta)``. A delta type named here but
#: arriving in another kind of block makes no sense (08 D45); a delta type named nowhere is
#: skipped (06 §1).
_DELTAS: Final[Mapping[_Block, Mapping[str, _DeltaHandler]]] = {
    _Block.TEXT: {"text_delta": _text_delta, "citations_delta": _skip_delta},
    _Block.THINKING: {"thinking_delta": _thinking_delta, "signature_delta": _signature_delta},
    _Block.TOOL_USE: {"input_json_delta": _input_json_delta},
    _Block.REDACTED_THINKING: {},
}
_KNOWN_DELTA_TYPES: Final = frozenset(name for handlers in _DELTAS.values() for name in handlers)


def _on_block_delta(m: AnthropicMessagesMachine, text: str) -> ClientEvent | None:
    """One fragment of the open block ``index``, dispatched by ``_DELTAS``."""
    data = loads_object(text)
    index = integer(data, "index")
    delta = obj(data, "delta")
    delta_type = string(delta, "type")
    kind = m.blocks.get(index)
    if kind is None:
        return None
    if kind is _Block.SKIPPED:
        return EMPTY
    handler = _DELTAS[kind].get(delta_type)
    if handler is None:
        return None if delta_type in _KNOWN_DELTA_TYPES else EMPTY
    return handler(str(index), delta)


def _on_block_stop(m: AnthropicMessagesMachine, text: str) -> UniEvent | None:
    """Forget block ``index``; the finalizer closes its item when the next one begins."""
    if m.blocks.pop(integer(loads_object(text), "index"), None) is None:
        return None
    return EMPTY


def _on_error(m: AnthropicMessagesMachine, text: str) -> NoReturn:
    """Raise the provider's in-stream error with the usage so far (08 D4).

    The error is reported whatever shape it has: ``error`` is an object with ``type`` and
    ``message``, or a gateway's plain message string; a field of another type is left out
    rather than turning the provider's error into ``MalformedEventError``; only data that is
    not a JSON object is.
    """
    error = loads_object(text).get("error")
    if type(error) is dict:
        error_type, message = error.get("type"), error.get("message")
    else:
        error_type, message = None, error
    raise ProviderStreamError(
        m.client,
        error_type=error_type if type(error_type) is str else None,
        provider_message=message if type(message) is str else None,
        usage_metadata=m.usage,
    )


_TRANSITIONS: Final[Transitions] = {
    (_State.START, "message_start"): (_on_message_start, _State.MESSAGE),
    (_State.MESSAGE, "content_block_start"): (_on_block_start, _State.MESSAGE),
    (_State.MESSAGE, "content_block_delta"): (_on_block_delta, _State.MESSAGE),
    (_State.MESSAGE, "content_block_stop"): (_on_block_stop, _State.MESSAGE),
    (_State.MESSAGE, "message_delta"): (_on_message_delta, _State.MESSAGE),
    (_State.MESSAGE, "message_stop"): (skip, _State.DONE),
    **{(state, "error"): (_on_error, state) for state in _State},
    **skip_rows(_State, SKIPPED_EVENTS),
}


# A compiled build (setup.py) lets Bedrock's machine (``bedrock``, not compiled) subclass it.
@mypyc_attr(allow_interpreted_subclasses=True)
class AnthropicMessagesMachine(TableMachine):
    """The Anthropic Messages machine: one client event per wire event (see module doc).

    Args:
        client: the client type (or protocol name) named in errors.
        profile: the client's ``AnthropicProfile``; the stream reads the same on every client
            (08 D32), so the machine reads nothing of it.
        strict: unknown and out-of-place events raise ``UnknownEventError`` (08 D8).
        base_url: reserved, not read: usage reads the same on every endpoint (08 D52).
        max_open_blocks: content blocks open at once; one more ``content_block_start`` raises
            ``StreamLimitError`` (08 D18). Lowered by tests.
    """

    __slots__ = ("blocks", "inputs", "max_open_blocks", "usage")

    TRANSITIONS = _TRANSITIONS
    TERMINAL = frozenset({_State.DONE})
    INITIAL = _State.START

    def __init__(
        self,
        client: str,
        profile: object,
        *,
        strict: bool,
        base_url: str | None,
        max_open_blocks: int = MAX_OPEN_BLOCKS,
    ) -> None:
        super().__init__(client, profile, strict=strict)
        self.max_open_blocks = max_open_blocks
        #: Open content blocks: index -> kind.
        self.blocks: dict[int, _Block] = {}
        #: Usage merged so far, for ``ProviderStreamError`` (08 D4, D7).
        self.usage: UsageMetadata | None = None
        #: The input counts seen so far (08 D53).
        self.inputs = InputCounts()

    def record_usage(self, counts: UsageMetadata) -> UsageMetadata:
        """Merge ``counts`` into the usage so far (08 D7) and return ``counts``."""
        self.usage = counts if self.usage is None else self.usage.merge(counts)
        return counts

    def classify(self, sse: SSEEvent) -> tuple[str, str]:
        """The event's name is its SSE ``event`` field; its data text goes to the handler
        unparsed (see the module docstring)."""
        return sse.event, sse.data
