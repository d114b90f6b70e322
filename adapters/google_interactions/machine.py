"""The Gemini Interactions machine: provider events to client-stream events (spec 06 §5).

Theory of operation
-------------------
Every SSE event's data is one JSON object whose ``event_type`` names the event; the recorded
bodies carry only ``data:`` lines, the live wire may add an ``event:`` line repeating it, so
``classify`` reads the JSON field and falls back to the SSE event name only when the field is
absent. The kernel (``adapters._table``) looks ``(state, event_type)`` up in ``_TRANSITIONS``.
There are two states: ``STREAMING`` until ``interaction.completed``, and ``DONE``, the
terminal state, after it (08 D56). A pair missing from the table is an unknown event: skipped,
or ``UnknownEventError`` in strict mode (08 D8); a handler's ``None`` (an event that makes no
sense where it arrives: a delta for a step that is not open, a step opened twice, a second
signature on one step) is treated the same way (08 D45). Handlers read the wire only through
the typed accessors of ``adapters._json``, so a field of the wrong JSON type is a
``MalformedEventError`` at that event (08 D59).

The output is a sequence of *steps*, each announced by ``step.start`` (with its ``index`` and
its ``step.type``), grown by ``step.delta`` and closed by ``step.stop``. Steps arrive one after
another, so the machine keeps only the open step and the highest index seen (a step index seen
before is refused), which keeps its state bounded whatever the stream holds. Every fragment of
a step carries ``fidelity["item_id"] = str(index)``, so the finalizer ends an item where the
next step begins (02 §4); text, thought text and argument deltas are ``Fragment``s (08 D65):

- ``thought``: ``thought_summary`` deltas are thinking text (``content.type == "text"``) or a
  thought image (``"image"``: ``inline_thinking``, bytes decoded from base64, MIME
  ``image/jpeg`` when none is given); the ``thought_signature`` delta is an empty thinking
  fragment carrying ``fidelity["signature"]``. It belongs to the item the step ends with: the
  finalizer attaches a fidelity-only fragment of the same ``item_id`` to an open thought image
  too (02 §4 step 3). One signature per step: a second one is out of place.
- ``model_output``: ``text`` deltas are text, ``image`` deltas inline images (each its own
  item, by MIME), ``audio`` deltas inline audio whose MIME carries the PCM parameters,
  ``"<mime>; rate=<sample_rate>; channels=<channels>"`` (a parameter the delta lacks is left
  out), so the raw chunks of one step join into one item. A media delta with no inline
  ``data`` (a ``uri`` only) carries nothing MMSP can hold and is skipped. Annotation deltas
  (``text_annotation_delta``, search citations) are known and skipped (08 D66).
- ``function_call``: ``step.start`` carries the name, the id (the name when there is none, as
  a replayed generateContent call has) and possibly whole arguments (sent as their JSON text
  when not empty); ``arguments_delta`` deltas stream the rest.
- Server-tool steps (``SKIPPED_STEP_TYPES``: Google Search, code execution, URL context, MCP,
  file search, Maps) are known and skipped with all their deltas in both modes (08 D51, D66);
  a step type named nowhere in this module is skipped the same way, and its ``step.start`` is
  unknown (``UnknownEventError`` in strict mode).

``interaction.completed`` is a client ``stop`` event: its ``status`` gives the finish reason
(``completed`` -> ``stop``, ``requires_action`` -> ``tool_call``, ``incomplete`` ->
``length``, anything else -> ``unknown``) and its ``usage`` the counts (``usage.usage_from_wire``;
a missing usage object is all ``None``). An ``error`` event with an ``error`` object raises
``ProviderStreamError`` with its code, type (``status``) and message at its position (08 D4),
read by Google's shared ``adapters._google.shapes.stream_error``; usage arrives only with
``interaction.completed``, so none has arrived by then. An ``error``
event without an error object (an SDK's reading of a gateway heartbeat) is unknown.
``interaction.created`` and ``interaction.status_update`` are skipped.
"""

from __future__ import annotations

import base64
import binascii
import enum
from collections.abc import Callable, Mapping
from typing import Any, Final, final

import attrs

from mmsp_core.items import ClientEvent
from mmsp_core.kinds import TEXT, THINKING, TOOL_CALL, Fragment
from mmsp_core.model import (
    FinishReason,
    InlineDataDelta,
    InlineThinkingDelta,
    ThinkingDelta,
    ToolCallDelta,
    UniEvent,
    UsageMetadata,
)
from mmsp_core.sse import SSEEvent

from .._convert import arguments_json
from .._google.shapes import stream_error
from .._json import BadField, integer, loads_object, obj, opt_integer, opt_obj, opt_string, string
from .._table import EMPTY, TableMachine, Transitions, skip_rows
from .profiles import InteractionsProfile
from .usage import usage_from_wire

__all__ = [
    "DEFAULT_AUDIO_MIME",
    "DEFAULT_IMAGE_MIME",
    "FINISH_REASONS",
    "SKIPPED_STEP_TYPES",
    "InteractionsMachine",
    "audio_mime",
]

#: The MIME type of an image delta or thought image that names none (06 §5).
DEFAULT_IMAGE_MIME: Final = "image/jpeg"
#: The MIME type of an audio delta that names none: Gemini's speech is 16-bit PCM.
DEFAULT_AUDIO_MIME: Final = "audio/L16"

#: ``interaction.status`` -> finish reason; any other status is ``unknown`` (06 §5).
FINISH_REASONS: Final[Mapping[str, FinishReason]] = {
    "completed": FinishReason.STOP,
    "requires_action": FinishReason.TOOL_CALL,
    "incomplete": FinishReason.LENGTH,
}

#: Step types of Gemini's server-side tools, known and skipped with their deltas (08 D66).
SKIPPED_STEP_TYPES: Final = frozenset(
    {
        "google_search_call",
        "google_search_result",
        "code_execution_call",
        "code_execution_result",
        "url_context_call",
        "url_context_result",
        "mcp_server_tool_call",
        "mcp_server_tool_result",
        "file_search_call",
        "file_search_result",
        "google_maps_call",
        "google_maps_result",
    }
)

#: Delta types of a model output step that carry nothing MMSP keeps (08 D66).
_SKIPPED_OUTPUT_DELTAS: Final = frozenset({"text_annotation_delta", "text_annotation"})

_Json = Mapping[str, Any]


class _State(enum.StrEnum):
    STREAMING = "STREAMING"
    DONE = "DONE"


class _Kind(enum.Enum):
    THOUGHT = "thought"
    OUTPUT = "model_output"
    CALL = "function_call"
    #: A server-tool step, or a step type named nowhere here: skipped with its deltas.
    SKIPPED = "skipped"


_STEP_KINDS: Final[Mapping[str, _Kind]] = {
    "thought": _Kind.THOUGHT,
    "model_output": _Kind.OUTPUT,
    "function_call": _Kind.CALL,
}


@final
@attrs.define(slots=True)
class _Step:
    """The step currently open."""

    index: int
    kind: _Kind
    #: ``{"item_id": str(index)}``, shared by every fragment of the step.
    ident: Mapping[str, str]
    #: A thought step's signature has arrived (one per step).
    signature_seen: bool = False


def audio_mime(mime: str, rate: int | None, channels: int | None) -> str:
    """The MIME type of an audio item: ``"<mime>; rate=<rate>; channels=<channels>"``, each
    parameter only when known (06 §5)."""
    if rate is not None:
        mime += f"; rate={rate}"
    if channels is not None:
        mime += f"; channels={channels}"
    return mime


def _delta(item: Any) -> UniEvent:
    return UniEvent("delta", (item,))


def _bytes(delta: _Json) -> bytes | None:
    """The decoded ``data`` of a media delta; ``None`` when it has none (a ``uri`` only).

    Raises:
        BadField: ``data`` is not a string of standard base64.
    """
    data = opt_string(delta, "data")
    if data is None:
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise BadField("'data' must be base64") from None


# -- delta handlers: (machine, open step, delta) -> the client event, or None when out of place


def _thought_summary(m: InteractionsMachine, step: _Step, delta: _Json) -> ClientEvent | None:
    content = opt_obj(delta, "content")
    if content is None:
        return EMPTY
    content_type = string(content, "type")
    if content_type == "text":
        return Fragment(THINKING, string(content, "text"), step.ident["item_id"])
    if content_type == "image":
        data = _bytes(content)
        if data is None:
            return EMPTY
        mime = opt_string(content, "mime_type") or DEFAULT_IMAGE_MIME
        return _delta(InlineThinkingDelta(data, mime, step.ident))
    return None


def _thought_signature(m: InteractionsMachine, step: _Step, delta: _Json) -> UniEvent | None:
    signature = opt_string(delta, "signature")
    if not signature:
        return EMPTY
    if step.signature_seen:
        return None
    step.signature_seen = True
    return _delta(ThinkingDelta("", {**step.ident, "signature": signature}))


def _text(m: InteractionsMachine, step: _Step, delta: _Json) -> Fragment:
    return Fragment(TEXT, opt_string(delta, "text") or "", step.ident["item_id"])


def _image(m: InteractionsMachine, step: _Step, delta: _Json) -> UniEvent:
    data = _bytes(delta)
    if data is None:
        return EMPTY
    mime = opt_string(delta, "mime_type") or DEFAULT_IMAGE_MIME
    return _delta(InlineDataDelta(data, mime, step.ident))


def _audio(m: InteractionsMachine, step: _Step, delta: _Json) -> UniEvent:
    data = _bytes(delta)
    if data is None:
        return EMPTY
    mime = audio_mime(
        opt_string(delta, "mime_type") or DEFAULT_AUDIO_MIME,
        opt_integer(delta, "sample_rate"),
        opt_integer(delta, "channels"),
    )
    return _delta(InlineDataDelta(data, mime, step.ident))


def _arguments(m: InteractionsMachine, step: _Step, delta: _Json) -> Fragment:
    return Fragment(TOOL_CALL, opt_string(delta, "arguments") or "", step.ident["item_id"])


_DeltaHandler = Callable[["InteractionsMachine", _Step, _Json], ClientEvent | None]

#: ``(step kind, delta type)`` -> handler (06 §5).
_DELTAS: Final[Mapping[tuple[_Kind, str], _DeltaHandler]] = {
    (_Kind.THOUGHT, "thought_summary"): _thought_summary,
    (_Kind.THOUGHT, "thought_signature"): _thought_signature,
    (_Kind.OUTPUT, "text"): _text,
    (_Kind.OUTPUT, "image"): _image,
    (_Kind.OUTPUT, "audio"): _audio,
    (_Kind.CALL, "arguments_delta"): _arguments,
}


# -- event handlers: (machine, data) -> the client event, or None when out of place ---------


def _open_step(m: InteractionsMachine, data: _Json) -> _Step | None:
    """The open step an event belongs to (one without ``index`` belongs to the open step);
    ``None`` when it is not open.

    Raises:
        BadField: ``index`` is not an integer.
    """
    step = m.step
    index = opt_integer(data, "index")
    if step is None or (index is not None and index != step.index):
        return None
    return step


def _step_start(m: InteractionsMachine, data: _Json) -> UniEvent | None:
    index = integer(data, "index")
    wire_step = obj(data, "step")
    step_type = string(wire_step, "type")
    if index <= m.last_index:
        return None
    kind = _STEP_KINDS.get(step_type, _Kind.SKIPPED)
    step = _Step(index, kind, {"item_id": str(index)})
    m.step, m.last_index = step, index
    if kind is _Kind.CALL:
        name = string(wire_step, "name")
        if not name:
            raise BadField("a function_call step must have a name")
        call_id = opt_string(wire_step, "id") or name
        arguments = opt_obj(wire_step, "arguments")
        text = arguments_json(arguments) if arguments else ""
        return _delta(ToolCallDelta(name, call_id, text, step.ident))
    if kind is _Kind.SKIPPED and step_type not in SKIPPED_STEP_TYPES:
        return None
    return EMPTY


def _step_delta(m: InteractionsMachine, data: _Json) -> ClientEvent | None:
    step = _open_step(m, data)
    if step is None:
        return None
    delta = obj(data, "delta")
    delta_type = string(delta, "type")
    if step.kind is _Kind.SKIPPED:
        return EMPTY
    handler = _DELTAS.get((step.kind, delta_type))
    if handler is None:
        skipped = step.kind is _Kind.OUTPUT and delta_type in _SKIPPED_OUTPUT_DELTAS
        return EMPTY if skipped else None
    return handler(m, step, delta)


def _step_stop(m: InteractionsMachine, data: _Json) -> UniEvent | None:
    if _open_step(m, data) is None:
        return None
    m.step = None
    return EMPTY


def _completed(m: InteractionsMachine, data: _Json) -> UniEvent:
    interaction = obj(data, "interaction")
    status = opt_string(interaction, "status")
    finish = FINISH_REASONS.get(status or "", FinishReason.UNKNOWN)
    usage = opt_obj(interaction, "usage")
    counts = UsageMetadata() if usage is None else usage_from_wire(usage)
    m.step = None
    return UniEvent("stop", usage_metadata=counts, finish_reason=finish)


def _error(m: InteractionsMachine, data: _Json) -> UniEvent | None:
    error = data.get("error")
    if type(error) is not dict:
        return None
    raise stream_error(m.client, error, None)


_STREAMING, _DONE = _State.STREAMING, _State.DONE

_TRANSITIONS: Final[Transitions] = {
    (_STREAMING, "step.start"): (_step_start, _STREAMING),
    (_STREAMING, "step.delta"): (_step_delta, _STREAMING),
    (_STREAMING, "step.stop"): (_step_stop, _STREAMING),
    (_STREAMING, "interaction.completed"): (_completed, _DONE),
    **{(state, "error"): (_error, state) for state in _State},
    **skip_rows(_State, ("interaction.created", "interaction.status_update")),
}


@final
class InteractionsMachine(TableMachine):
    """Turn one Interactions SSE stream into client-stream events (spec 06 §5).

    Args:
        client: the client type (or ``"google-interactions"``), named in errors.
        profile: the client's profile (nothing in it changes how streams read).
        strict: raise ``UnknownEventError`` for unknown or out-of-place events (08 D8, D45).
        base_url: not used by this protocol.
    """

    __slots__ = ("last_index", "step")

    TRANSITIONS = _TRANSITIONS
    TERMINAL = frozenset({_DONE})
    INITIAL = _STREAMING

    def __init__(
        self, client: str, profile: InteractionsProfile, *, strict: bool, base_url: str | None
    ) -> None:
        super().__init__(client, profile, strict=strict)
        #: The step currently open, and the highest step ``index`` seen.
        self.step: _Step | None = None
        self.last_index = -1

    def classify(self, sse: SSEEvent) -> tuple[str, Any]:
        """Name the event by its JSON ``event_type``, else by the SSE event name.

        Raises:
            BadField: the data is not a JSON object, or its ``event_type`` is not a string.
        """
        data = loads_object(sse.data)
        return opt_string(data, "event_type") or sse.event, data
