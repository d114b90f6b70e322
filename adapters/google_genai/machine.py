"""The generateContent machine: one SSE event in, one client-stream event out (spec 06 §4).

Theory of operation
-------------------
``streamGenerateContent?alt=sse`` answers with ``data: <GenerateContentResponse>`` events and
no terminal event: the stream ends with the body (08 D56). ``GenAIMachine`` is a
``TableMachine`` (``adapters._table``) with one state, STREAMING, and one row: the default
SSE event (``message``), whose data the kernel's ``classify`` parses as one JSON object. Any
other SSE event name has no row: skipped, or ``UnknownEventError`` in strict mode (08 D8).

A chunk handler reads, in order:

1. an ``error`` object: ``ProviderStreamError`` with the usage so far (08 D4);
2. ``usageMetadata`` (``usage.read_usage``): cumulative, so the stop merge replaces it
   (08 D7); Vertex's object without counts is nothing;
3. only ``candidates[0]``: each part of ``content.parts`` becomes at most one fragment
   (list below), then its ``finishReason``: ``STOP`` -> ``stop``, ``MAX_TOKENS`` ->
   ``length``, anything else (``SAFETY``, ``RECITATION``, ``MALFORMED_FUNCTION_CALL``, ...)
   -> ``unknown``; ``stop`` becomes ``tool_call`` once any function call was seen, in this
   chunk or an earlier one (Gemini says ``STOP`` for tool turns);
4. without candidates, ``promptFeedback.blockReason``: the prompt was blocked, a stop with
   finish ``unknown`` (and the chunk's usage); with no content before it the finalizer then
   raises ``EmptyResponseError``.

A chunk with finish or usage is a ``stop`` event (its items stay on it); any other chunk a
``delta`` event, empty for a gateway heartbeat; a chunk of one plain text part alone (the
common chunk) is a ``Fragment`` (``adapters._table.client_event``, 08 D65).

Parts, and the fragment each becomes (item id in brackets):

* ``functionCall``: a whole ``tool_call`` in one fragment: the name, the ``id`` or else the
  name, the ``args`` as JSON text (``"function_call"``); or, when Vertex streams the
  arguments (``willContinue``, ``partialArgs``; 08 D72), one fragment per part of the call:
  the first with the name and id, each the JSON text its partial arguments add
  (``partial_args``), the part without ``willContinue`` closing it. While such a call is
  open any other part is malformed;
* ``thought: true`` with ``inlineData``: ``inline_thinking`` (``"thought"``);
* ``inlineData``: ``inline_data`` (``"inline_data"`` for images, else
  ``"inline_data:<mime>"``);
* ``thought: true`` with ``text``: ``thinking`` (``"thought"``);
* ``text``: ``text`` (``"text"``);
* ``executableCode``, ``codeExecutionResult``, ``toolCall``, ``toolResponse``: nothing;
  server-tool parts are known and skipped in both modes, their signature dropped (08 D51,
  D66);
* anything else: nothing, or ``UnknownEventError`` in strict mode.

An empty text or inline part without a signature is nothing (responses end with an empty
text part, which may carry the signature). A function call without a name is malformed
(08 D59).

Signatures (``thoughtSignature``, base64 text) are fidelity: ``{"signature": ...}`` on the
fragment of their part, one per item. Item ids are the part's kind, so consecutive parts of
one kind join into one item and a signature on a later part (the empty trailing text part)
lands on the item it follows. Thought text and thought images share the id ``"thought"``, so
an empty signed thought part after a thought image signs that image (02 §4 step 3). Where a
signature would be the second one of the current item, the part starts a new item (its id
gets a serial number), so no item ever holds two. The machine follows the current item as
the finalizer will (its kind, id and whether it is signed); that is all the state it keeps
besides the usage so far, the function-call flag and the arguments of a streamed call.

Fields are read through the typed accessors of ``adapters._json``: a known field of the wrong
JSON type is ``MalformedEventError`` (08 D59). The profile is not read: one machine serves
every generateContent client (08 D32).
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from adapters._google.shapes import stream_error
from adapters._json import BadField, obj, opt_array, opt_obj, opt_string
from adapters._table import TableMachine, Transitions, client_event
from mmsp_core.errors import UnknownEventError
from mmsp_core.items import ClientEvent
from mmsp_core.kinds import TEXT, Fragment
from mmsp_core.model import (
    FinishReason,
    InlineDataDelta,
    InlineThinkingDelta,
    Item,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageMetadata,
)

from .partial_args import StreamedArguments
from .usage import read_usage

__all__ = ["FINISH_REASONS", "SERVER_TOOL_PARTS", "GenAIMachine"]

#: generateContent finish reasons (06 §4); any other non-empty value is ``unknown``.
FINISH_REASONS: Final[Mapping[str, FinishReason]] = {
    "STOP": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
}

#: Parts of Gemini's own tools, known and skipped in both modes (08 D51, D66).
SERVER_TOOL_PARTS: Final = frozenset(
    {"executableCode", "codeExecutionResult", "toolCall", "toolResponse"}
)

#: Default MIME type of inline data without one (06 §4).
_OCTET_STREAM: Final = "application/octet-stream"

#: Item ids, by part kind (06 §4); thought text and images share one (module docstring).
_TEXT, _THOUGHT, _INLINE, _CALL = "text", "thought", "inline_data", "function_call"


class _State(enum.Enum):
    STREAMING = "streaming"


# --------------------------------------------------------------------------------------------
# Handlers: (machine, chunk) -> the client event; the table is GenAIMachine.TRANSITIONS
# --------------------------------------------------------------------------------------------


def _on_chunk(machine: GenAIMachine, chunk: dict[str, Any]) -> ClientEvent:
    """One ``GenerateContentResponse``: its items, and a ``stop`` event for finish or usage."""
    if chunk.get("error") is not None:
        raise stream_error(machine.client, chunk["error"], machine._usage)
    usage = read_usage(chunk) if "usageMetadata" in chunk else None
    if usage is not None:
        machine._usage = usage if machine._usage is None else machine._usage.merge(usage)
    items: list[Item | Fragment] = []
    finish: FinishReason | None = None
    candidates = opt_array(chunk, "candidates")
    if candidates:
        candidate = candidates[0]
        if type(candidate) is not dict:
            raise BadField("a candidate is not a JSON object")
        content = opt_obj(candidate, "content")
        for part in (content and opt_array(content, "parts")) or ():
            if type(part) is not dict:
                raise BadField("a part is not a JSON object")
            fragment = _part(machine, part)
            if fragment is not None:
                items.append(fragment)
        reason = opt_string(candidate, "finishReason")
        if reason:
            finish = FINISH_REASONS.get(reason, FinishReason.UNKNOWN)
            if finish is FinishReason.STOP and machine._saw_call:
                finish = FinishReason.TOOL_CALL
    else:
        feedback = opt_obj(chunk, "promptFeedback")
        if feedback is not None and opt_string(feedback, "blockReason"):
            finish = FinishReason.UNKNOWN
    return client_event(items, usage, finish)


def _part(machine: GenAIMachine, part: Mapping[str, Any]) -> Item | Fragment | None:
    """The fragment of one part (module docstring list), or ``None`` for nothing.

    Raises:
        BadField: a field of the wrong JSON type, bytes that are not base64, or a function
            call without a name.
        UnknownEventError: a part of an unknown kind, in strict mode.
    """
    if len(part) == 1 and type(part.get("text")) is str and machine._arguments is None:
        # The common part, plain text: the same as the general path below, minus its reads.
        text = part["text"]
        return Fragment(TEXT, text, machine.place("text", _TEXT, None)) if text else None
    signature = opt_string(part, "thoughtSignature")
    thought = _flag(part, "thought")
    if "functionCall" in part:
        return _function_call(machine, obj(part, "functionCall"), signature)
    if machine._arguments is not None:
        raise BadField("a part other than a functionCall inside a streamed function call")
    inline = opt_obj(part, "inlineData")
    if inline is not None:
        data = _bytes(opt_string(inline, "data") or "")
        if not data and signature is None:
            return None
        mime = opt_string(inline, "mimeType") or _OCTET_STREAM
        if thought:
            item_id = machine.place(
                "inline_thinking", _THOUGHT, signature, whole=True, empty=not data
            )
            return InlineThinkingDelta(data, mime, _fidelity(item_id, signature))
        # Images are items of their own; other data (audio chunks) joins while its MIME type
        # stays the same.
        image = mime.startswith("image/")
        family = _INLINE if image else f"{_INLINE}:{mime}"
        item_id = machine.place("inline_data", family, signature, whole=image, empty=not data)
        fidelity = _fidelity(item_id, signature)
        return InlineDataDelta(data, mime, fidelity)
    text = opt_string(part, "text")
    if text is None and not SERVER_TOOL_PARTS.isdisjoint(part):
        return None
    if text is None and signature is None:
        if machine.strict:
            keys = ", ".join(list(part)[:8])
            raise UnknownEventError(machine.client, f"part {{{keys}}}", detail="an unknown part")
        return None
    if not text and signature is None:
        return None
    text = text or ""
    if thought:
        item_id = machine.place("thinking", _THOUGHT, signature, empty=not text)
        return ThinkingDelta(text, _fidelity(item_id, signature))
    return TextDelta(text, _fidelity(machine.place("text", _TEXT, signature, empty=not text),
                                     signature))


def _function_call(
    machine: GenAIMachine, call: Mapping[str, Any], signature: str | None
) -> ToolCallDelta:
    """The fragment of a ``functionCall`` part: a whole call, or a piece of a call whose
    arguments Vertex streams (``partial_args``, 08 D72): the first piece carries the name
    and the id (``id``, else the name), each piece the JSON text its partial arguments add,
    the last one (without ``willContinue``) what closes the arguments.

    Raises:
        BadField: a call that begins without a name, a name inside a streamed call, a second
            signature on one call, or malformed partial arguments.
    """
    name = opt_string(call, "name")
    streamed = machine._arguments
    partials = opt_array(call, "partialArgs")
    continues = _flag(call, "willContinue")
    first = streamed is None
    if streamed is None:
        if not name:
            raise BadField("a functionCall without a name")
        machine._saw_call = True
        if not continues and partials is None:
            # Python's default separators, non-ASCII kept (06 §4); parsed, the same object.
            arguments = json.dumps(opt_obj(call, "args") or {}, ensure_ascii=False)
            item_id = machine.place("tool_call", _CALL, signature, whole=True)
            return ToolCallDelta(name, opt_string(call, "id") or name, arguments,
                                 _fidelity(item_id, signature))
        streamed = StreamedArguments()
    elif name:
        raise BadField("a functionCall with a name inside a streamed function call")
    elif signature is not None and machine._has_signature:
        raise BadField("a second signature on one function call")
    pieces = []
    for partial in partials or ():
        if type(partial) is not dict:
            raise BadField("a partial argument is not a JSON object")
        pieces.append(streamed.push(partial))
    if not continues:
        pieces.append(streamed.close())
    machine._arguments = streamed if continues else None
    item_id = machine.place("tool_call", _CALL, signature, whole=first)
    if first:
        return ToolCallDelta(name or "", opt_string(call, "id") or name or "", "".join(pieces),
                             _fidelity(item_id, signature))
    return ToolCallDelta("", "", "".join(pieces), _fidelity(item_id, signature))


def _fidelity(item_id: str, signature: str | None) -> dict[str, str]:
    """The client fidelity of a fragment: its item id, and its signature when it has one."""
    if signature is None:
        return {"item_id": item_id}
    return {"item_id": item_id, "signature": signature}


def _flag(part: Mapping[str, Any], key: str) -> bool:
    """``part[key]`` as a boolean, ``False`` when absent or null. Raises ``BadField``."""
    value = part.get(key)
    if value is None:
        return False
    if type(value) is not bool:
        raise BadField(f"{key!r} must be a boolean")
    return value


def _bytes(text: str) -> bytes:
    """Decode base64 inline data. Raises ``BadField`` when it is not base64."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadField("inline data is not base64") from None


class GenAIMachine(TableMachine):
    """Decode one ``streamGenerateContent`` response (see the module docstring).

    Built as ``adapters._spec.NewMachine``; ``base_url`` is reserved and not read (08 D52).
    """

    __slots__ = ("_arguments", "_family", "_has_signature", "_item", "_kind", "_saw_call",
                 "_serial", "_usage")

    INITIAL = _State.STREAMING
    #: (state, wire event name) -> (handler, next state): the default SSE event is a chunk.
    TRANSITIONS: ClassVar[Transitions] = {
        (_State.STREAMING, "message"): (_on_chunk, _State.STREAMING),
    }

    def __init__(
        self, client: str, profile: object, *, strict: bool, base_url: str | None
    ) -> None:
        super().__init__(client, profile, strict=strict)
        self._usage: UsageMetadata | None = None
        #: A function call was seen: ``STOP`` means ``tool_call`` (06 §4).
        self._saw_call = False
        #: The arguments of a call Vertex is still streaming (``partial_args``, 08 D72).
        self._arguments: StreamedArguments | None = None
        # The current item as the finalizer sees it: its kind, the id family of its parts, its
        # id (the family, or family/serial after a split) and whether it holds a signature.
        self._kind: str | None = None
        self._family: str | None = None
        self._item: str | None = None
        self._has_signature = False
        self._serial = 0

    def place(
        self,
        kind: str,
        family: str,
        signature: str | None,
        *,
        whole: bool = False,
        empty: bool = False,
    ) -> str:
        """Return the item id of a fragment of ``kind``, and follow the item it lands on
        (module docstring); ``_fidelity`` adds the signature.

        ``whole``: the fragment begins an item by itself (a call, an image, a thought image);
        ``empty``: it carries only its signature, so after an item of another kind with the
        same id it continues that item (02 §4 step 3).
        """
        current = self._item if family == self._family else None
        item_id = family if current is None else current
        continues = item_id == self._item and (
            (kind == self._kind and not whole)
            or (kind != self._kind and empty and signature is not None)
        )
        if continues and signature is not None and self._has_signature:
            self._serial += 1
            item_id = f"{family}/{self._serial}"
            continues = False
        if continues:
            self._has_signature = self._has_signature or signature is not None
        else:
            self._kind, self._family, self._item = kind, family, item_id
            self._has_signature = signature is not None
        return item_id
