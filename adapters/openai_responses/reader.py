"""The Responses front door's reader (08 D73): a caller's ``POST /v1/responses`` body read into
``UniMessage``s and a ``UniConfig``, the inverse of ``request.build_request`` up to
``normalize_request``.

The body (OpenAI API reference, "Create a model response"):

* ``model`` (string) and ``stream`` (boolean, default false);
* ``instructions``, and the text of ``system`` and ``developer`` messages, in order, joined by
  a blank line → ``system_prompt``;
* ``input``: a string (one user text) or a list of input items, read in order, consecutive
  items of one role forming one message: ``message`` items (``type`` may be left out) with a
  string or a list of parts (``input_text``, ``output_text``, ``text`` and ``refusal`` →
  ``TextDone``, an assistant message's ``phase`` as its texts' fidelity; ``input_image`` with
  an ``image_url``, a URL or a ``data:`` URI → ``ImageUrlDone``); ``reasoning`` items → an
  assistant ``ThinkingDone`` whose text is the summary's, else the raw content's, with the
  ``channel`` that carried it and ``encrypted_content``, ``signature`` and ``format`` as
  fidelity (as the machine records them, 06 §2); ``function_call`` → an assistant
  ``ToolCallDone`` (its ``arguments``, a JSON object's text, parsed); ``function_call_output``
  → a user ``ToolResultDone`` (a string, or parts: ``input_text`` joined, ``input_image``
  URLs as its images);
* ``max_output_tokens`` → ``max_tokens``; ``temperature``; ``top_p``; ``text.format``
  (``json_schema`` with ``name``, ``schema`` and ``strict``, false when left out as the API
  has it; ``json_object``; ``text`` is none) → ``response_format``;
* ``reasoning.effort`` → ``thinking_level`` of the same name, ``minimal`` → ``low``
  (08 D73); any ``reasoning.summary`` → ``thinking_summary``;
* ``tools`` (``function`` tools) → ``ToolSchema``s; ``tool_choice``: ``auto``, ``none``,
  ``required``; ``{"type": "function", "name"}`` → that one name;
  ``{"type": "allowed_tools", "mode": "required", "tools"}`` → the names;
  with ``mode: "auto"`` → ``auto`` over only those tools;
* ``service_tier: "priority"`` → ``fast_mode`` (08 D73).

Refused (``UnsupportedParameterError`` naming the field, 08 D73), since honouring them would
change the answer and the gateway cannot: ``background: true``, ``previous_response_id`` and
``conversation`` (the gateway keeps no state: send the history in ``input``), ``prompt`` (a
stored prompt), ``top_logprobs`` above 0, ``include`` asking for
``message.output_text.logprobs``, ``prediction``, ``n`` above 1, ``logprobs``, ``audio`` and
``modalities`` other than text; built-in tools (``web_search``, ``file_search``, ...) in
``tools`` or ``tool_choice``; a reasoning effort that is no thinking level. Input the gateway
cannot carry is refused as ``UnsupportedContentError``: ``item_reference`` items (state
again), built-in tool calls, files, audio, images by ``file_id``. Every other field
(``metadata``, ``user``, ``store``, ``include``, ``parallel_tool_calls``, ``truncation``,
``service_tier`` other than ``priority``, ``text.verbosity``, ...) is ignored and named in
``FrontRequest.ignored``.

A body that is not such a request is a ``WireFormatError`` naming the field, or an
``InvalidMessageError`` naming the input item (``message_index``: its index in ``input``);
nothing else leaves (08 D59). The reader walks the body once, without recursion, after
checking that it nests at most ``MAX_DEPTH`` deep.

``request_normalization.normalize_request`` says what a body built by ``build_request`` reads
back as.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import attrs

from mmsp_core.errors import (
    InvalidMessageError,
    UnsupportedContentError,
    UnsupportedParameterError,
    WireFormatError,
)
from mmsp_core.model import (
    DoneItem,
    ImageUrlDone,
    ResponseFormat,
    Role,
    TextDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniMessage,
)

from .._convert import parse_data_uri
from .._front import FrontRequest
from .._json import BadField, loads, nests_within, opt_array, opt_obj, opt_string, string
from .._preflight import MAX_DEPTH
from .machine import REASONING_FIDELITY_KEYS
from .writer import PROTOCOL_NAME

__all__ = ["read_effort", "read_request"]

_Json = Mapping[str, Any]

#: Fields refused when set (08 D73), each with the values that ask for nothing and pass.
_REFUSED: Final[Mapping[str, tuple[object, ...]]] = {
    "background": (None, False),
    "previous_response_id": (None,),
    "conversation": (None,),
    "prompt": (None,),
    "top_logprobs": (None, 0),
    "prediction": (None,),
    "n": (None, 1),
    "logprobs": (None, False),
    "audio": (None,),
    "modalities": (None, ["text"]),
}
_REFUSED_WHY: Final[Mapping[str, str]] = {
    "previous_response_id": "the gateway keeps no state: send the whole history in input",
    "conversation": "the gateway keeps no state: send the whole history in input",
    "prompt": "the gateway has no stored prompts: send instructions and input",
}
#: ``include`` values the gateway cannot honour.
_REFUSED_INCLUDES: Final = ("message.output_text.logprobs",)

#: Fields read into the request; every other field is ignored and named.
_READ: Final = frozenset({
    "model", "input", "instructions", "stream", "max_output_tokens", "temperature", "top_p",
    "reasoning", "text", "tools", "tool_choice", "service_tier",
})

#: The text part types of a message's content.
_TEXT_PARTS: Final = ("input_text", "output_text", "text")
#: Roles whose messages are system text.
_SYSTEM_ROLES: Final = ("system", "developer")

#: ``reasoning.effort`` -> level: each level's own name, and ``minimal`` (08 D73).
_EFFORTS: Final[Mapping[str, ThinkingLevel]] = {
    **{level.value: level for level in ThinkingLevel}, "minimal": ThinkingLevel.LOW,
}


def read_effort(effort: str) -> ThinkingLevel | None:
    """The thinking level of a ``reasoning.effort`` (08 D73); ``None``: no level has it."""
    return _EFFORTS.get(effort)


# --------------------------------------------------------------------------------------------
# The body
# --------------------------------------------------------------------------------------------


def read_request(body: object, /) -> FrontRequest:
    """Read a Responses request body (parsed JSON) as the module docstring says.

    Raises:
        UnsupportedParameterError: a refused field, ``parameter`` naming it (08 D73).
        UnsupportedContentError: an input item or part the gateway cannot carry.
        WireFormatError: a body or field of the wrong shape, ``path`` naming it.
        InvalidMessageError: an input item that cannot be read (``message_index``), a
            function call whose arguments are not a JSON object, a malformed data URI.
    """
    if type(body) is not dict:
        raise WireFormatError("body", "a Responses request is a JSON object")
    if not nests_within(body, MAX_DEPTH):
        raise WireFormatError("body", f"is nested deeper than {MAX_DEPTH} levels")
    _refuse(body)
    model = _field(body, "model", string)
    if not model:
        raise WireFormatError("model", "must name a model")
    stream = body.get("stream")
    if stream is not None and type(stream) is not bool:
        raise WireFormatError("stream", "must be a boolean")
    messages, system = _input(body)
    instructions = _field(body, "instructions", opt_string)
    system_prompt = "\n\n".join(([] if instructions is None else [instructions]) + system)
    config = _config(body)
    if instructions is not None or system:
        config = attrs.evolve(config, system_prompt=system_prompt)
    return FrontRequest(model, messages, config, stream is True, tuple(_ignored(body)))


def _field(
    body: _Json, key: str, read: Callable[[_Json, str], Any], path: str | None = None
) -> Any:
    """``read(body, key)``, a ``BadField`` becoming ``WireFormatError(path or key)``."""
    try:
        return read(body, key)
    except BadField as exc:
        raise WireFormatError(path or key, str(exc)) from None


def _ignored(body: _Json) -> Iterator[str]:
    """The fields the door ignores, in the body's order (08 D73): the unknown ones, a
    ``service_tier`` other than ``priority``, and ``text``'s fields but ``format``."""
    for key, value in body.items():
        other_tier = key == "service_tier" and value not in (None, "priority")
        if key == "text" and type(value) is dict:
            yield from (f"text.{field}" for field in value if field != "format")
        elif other_tier or (key not in _READ and key not in _REFUSED):
            yield key


def _refuse(body: _Json) -> None:
    """Raise for the first refused field that asks for something (08 D73).

    Raises:
        UnsupportedParameterError: naming the field.
    """
    for key, harmless in _REFUSED.items():
        value = body.get(key)
        if not any(type(value) is type(passing) and value == passing for passing in harmless):
            detail = _REFUSED_WHY.get(key, "the gateway cannot honour it")
            raise UnsupportedParameterError(PROTOCOL_NAME, key, detail=detail)
    include = body.get("include")
    if type(include) is list and any(value in _REFUSED_INCLUDES for value in include):
        raise UnsupportedParameterError(PROTOCOL_NAME, "include", detail="no log probabilities")


# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------


def _config(body: _Json) -> UniConfig:
    """The config keys of the body but the system prompt (module docstring).

    Raises:
        WireFormatError, UnsupportedParameterError: see ``read_request``.
    """
    max_tokens = body.get("max_output_tokens")
    if max_tokens is not None and type(max_tokens) is not int:
        raise WireFormatError("max_output_tokens", "must be an integer")
    effort, summary = _reasoning(body)
    tools, tool_choice = _tools(body)
    return UniConfig(
        max_tokens=max_tokens,
        temperature=_number(body, "temperature"),
        top_p=_number(body, "top_p"),
        response_format=_format(body),
        tools=tools,
        tool_choice=tool_choice,
        thinking_level=effort,
        thinking_summary=summary,
        fast_mode=True if body.get("service_tier") == "priority" else None,
    )


def _number(body: _Json, key: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if type(value) is not float and type(value) is not int:
        raise WireFormatError(key, "must be a number")
    try:
        return float(value)
    except OverflowError:
        raise WireFormatError(key, "is too large") from None


def _reasoning(body: _Json) -> tuple[ThinkingLevel | None, bool | None]:
    """``reasoning.effort`` as a level (08 D73), and whether a summary is asked for.

    Raises:
        WireFormatError: ``reasoning`` is not an object or its effort not a string.
        UnsupportedParameterError: an effort that is no thinking level.
    """
    reasoning = _field(body, "reasoning", opt_obj) or {}
    effort = _field(reasoning, "effort", opt_string, "reasoning.effort")
    level = None if effort is None else read_effort(effort)
    if effort is not None and level is None:
        raise UnsupportedParameterError(
            PROTOCOL_NAME, "reasoning.effort",
            detail=f"{effort!r} is no effort: {', '.join(_EFFORTS)}",
        )
    return level, True if reasoning.get("summary") is not None else None


def _format(body: _Json) -> ResponseFormat | None:
    """``text.format`` as a ``ResponseFormat`` (08 D74).

    Raises:
        WireFormatError: a format of the wrong shape or type.
    """
    text = _field(body, "text", opt_obj) or {}
    wire = _field(text, "format", opt_obj, "text.format")
    if wire is None:
        return None
    try:
        kind = string(wire, "type")
        if kind == "text":
            return None
        if kind == "json_object":
            return ResponseFormat("json_object")
        if kind == "json_schema":
            strict = wire.get("strict")
            if strict is not None and type(strict) is not bool:
                raise BadField("'strict' must be a boolean")
            return ResponseFormat("json_schema", string(wire, "name"), opt_obj(wire, "schema"),
                                  strict=bool(strict))
    except BadField as exc:
        raise WireFormatError("text.format", str(exc)) from None
    raise WireFormatError("text.format", f"{kind!r} is no format: text, json_schema, json_object")


def _tools(body: _Json) -> tuple[tuple[ToolSchema, ...] | None, str | tuple[str, ...] | None]:
    """``tools`` and ``tool_choice`` (module docstring).

    Raises:
        WireFormatError: a tool or choice of the wrong shape.
        UnsupportedParameterError: a built-in tool, or a choice of one.
    """
    wire_tools = _field(body, "tools", opt_array)
    tools = None if wire_tools is None else tuple(_tool(i, t) for i, t in enumerate(wire_tools))
    choice = body.get("tool_choice")
    if choice is None or type(choice) is str:
        if choice not in (None, "auto", "none", "required"):
            raise UnsupportedParameterError(PROTOCOL_NAME, "tool_choice",
                                            detail=f"{choice!r} is not auto, none or required")
        return tools, choice
    if type(choice) is not dict:
        raise WireFormatError("tool_choice", "must be a string or an object")
    try:
        kind = string(choice, "type")
        if kind == "function":
            return tools, (string(choice, "name"),)
        if kind == "allowed_tools":
            names = tuple(_function_name(t) for t in opt_array(choice, "tools") or ())
            mode = string(choice, "mode")
            if mode == "required":
                return tools, names
            if mode == "auto":
                return tuple(t for t in tools or () if t.name in names), "auto"
            raise BadField(f"'mode' must be auto or required, not {mode!r}")
    except BadField as exc:
        raise WireFormatError("tool_choice", str(exc)) from None
    raise UnsupportedParameterError(PROTOCOL_NAME, "tool_choice",
                                    detail=f"the gateway has no built-in tool {kind!r}")


def _function_name(tool: object) -> str:
    """The name of an ``allowed_tools`` entry, which must be a function.

    Raises:
        BadField: not an object with a name.
        UnsupportedParameterError: a built-in tool.
    """
    if type(tool) is not dict:
        raise BadField("an allowed tool must be an object")
    if tool.get("type") != "function":
        raise UnsupportedParameterError(PROTOCOL_NAME, "tool_choice",
                                        detail="only function tools can be allowed")
    return string(tool, "name")


def _tool(index: int, tool: object) -> ToolSchema:
    """One ``tools`` entry: a function tool.

    Raises:
        WireFormatError: not a function tool of the documented shape.
        UnsupportedParameterError: a built-in tool (``web_search``, ``file_search``, ...).
    """
    path = f"tools[{index}]"
    if type(tool) is not dict:
        raise WireFormatError(path, "must be an object")
    try:
        kind = string(tool, "type")
        if kind != "function":
            raise UnsupportedParameterError(
                PROTOCOL_NAME, "tools", detail=f"the gateway has no built-in tool {kind!r}"
            )
        return ToolSchema(string(tool, "name"), opt_string(tool, "description") or "",
                          opt_obj(tool, "parameters"))
    except BadField as exc:
        raise WireFormatError(path, str(exc)) from None


# --------------------------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------------------------


def _input(body: _Json) -> tuple[tuple[UniMessage, ...], list[str]]:
    """The messages of ``input``, and the system texts of its system and developer messages.

    Raises:
        WireFormatError, InvalidMessageError, UnsupportedContentError: see ``read_request``.
    """
    wire = body.get("input")
    if type(wire) is str:
        return (UniMessage.user(wire),), []
    if type(wire) is not list:
        raise WireFormatError("input", "must be a string or a list of input items")
    system: list[str] = []
    runs: list[tuple[Role, list[DoneItem]]] = []
    for index, entry in enumerate(wire):
        if type(entry) is not dict:
            raise WireFormatError(f"input[{index}]", "must be an object")
        try:
            for role, item in _entry(index, entry, system):
                if not runs or runs[-1][0] != role:
                    runs.append((role, []))
                runs[-1][1].append(item)
        except BadField as exc:
            raise InvalidMessageError(
                PROTOCOL_NAME, entry.get("type") if type(entry.get("type")) is str else None,
                index, detail=str(exc),
            ) from None
    return tuple(UniMessage(role, tuple(items)) for role, items in runs), system


def _entry(index: int, entry: _Json, system: list[str]) -> Iterator[tuple[Role, DoneItem]]:
    """The items of one input item with the role of the message each joins; a system or
    developer message's text goes to ``system``.

    Raises:
        BadField: a field of the wrong type.
        InvalidMessageError, UnsupportedContentError: see ``read_request``.
    """
    kind = opt_string(entry, "type") or "message"
    if kind == "message":
        role = string(entry, "role")
        if role in _SYSTEM_ROLES:
            system.append("".join(_system_text(index, entry)))
            return
        if role not in ("user", "assistant"):
            raise BadField(f"'role' must be user, assistant, system or developer, not {role!r}")
        phase = opt_string(entry, "phase") if role == "assistant" else None
        for item in _content(index, entry, phase or None):
            yield ("user" if role == "user" else "assistant"), item
    elif kind == "reasoning":
        yield "assistant", _reasoning_item(entry)
    elif kind == "function_call":
        yield "assistant", _call(index, entry)
    elif kind == "function_call_output":
        yield "user", _result(index, entry)
    else:
        raise UnsupportedContentError(
            PROTOCOL_NAME, kind, detail="the gateway carries messages, reasoning, function "
            "calls and their outputs only (no stored items, no built-in tools)",
        )


def _parts(entry: _Json, key: str) -> list[_Json]:
    """``entry[key]`` as a list of parts: a string is one text part.

    Raises:
        BadField: neither a string nor a list of objects.
    """
    value = entry.get(key)
    if type(value) is str:
        return [{"type": "input_text", "text": value}]
    if type(value) is not list:
        raise BadField(f"{key!r} must be a string or a list of parts")
    if any(type(part) is not dict for part in value):
        raise BadField(f"every part of {key!r} must be an object")
    return value


def _system_text(index: int, entry: _Json) -> Iterator[str]:
    """The text parts of a system or developer message.

    Raises:
        BadField: a part of the wrong type.
        UnsupportedContentError: a part that is not text.
    """
    for part in _parts(entry, "content"):
        item = _part(index, part, None)
        if not isinstance(item, TextDone):
            raise UnsupportedContentError(PROTOCOL_NAME, "image_url",
                                          detail="system text takes no images")
        yield item.text


def _content(index: int, entry: _Json, phase: str | None) -> Iterator[DoneItem]:
    """The items of a user or assistant message's content, texts with its ``phase``."""
    for part in _parts(entry, "content"):
        yield _part(index, part, phase)


def _part(index: int, part: _Json, phase: str | None) -> TextDone | ImageUrlDone:
    """One content part: text, or an image by URL or ``data:`` URI.

    Raises:
        BadField: a field of the wrong type.
        InvalidMessageError: a malformed data URI.
        UnsupportedContentError: a file, audio, or an image by ``file_id``.
    """
    kind = string(part, "type")
    fidelity = None if phase is None else {"phase": phase}
    if kind in _TEXT_PARTS:
        return TextDone(string(part, "text"), fidelity)
    if kind == "refusal":
        return TextDone(string(part, "refusal"), fidelity)
    if kind == "input_image" and part.get("image_url") is not None:
        return _image(index, string(part, "image_url"))
    raise UnsupportedContentError(
        PROTOCOL_NAME, kind, detail="the gateway takes text and images by image_url only"
    )


def _image(index: int, url: str) -> ImageUrlDone:
    """An image by URL or ``data:`` URI (a malformed one is an ``InvalidMessageError``)."""
    parse_data_uri(PROTOCOL_NAME, url, index)
    return ImageUrlDone(url)


def _texts(parts: list[Any] | None, key: str) -> str | None:
    """The joined ``text`` of a reasoning item's ``summary`` or ``content``; ``None`` when the
    array is absent or empty. Raises ``BadField``."""
    if not parts:
        return None
    if any(type(part) is not dict for part in parts):
        raise BadField(f"every part of {key!r} must be an object")
    return "".join(string(part, "text") for part in parts)


def _reasoning_item(entry: _Json) -> ThinkingDone:
    """A reasoning item as the machine records it (06 §2): the summary's text, else the raw
    content's, the ``channel`` that carried it, and the fidelity keys that are not null.

    Raises:
        BadField: a field of the wrong type.
    """
    fidelity: dict[str, Any] = {}
    text = _texts(opt_array(entry, "summary"), "summary")
    if text is not None:
        fidelity["channel"] = "summary"
    else:
        text = _texts(opt_array(entry, "content"), "content")
        if text is not None:
            fidelity["channel"] = "content"
    fidelity.update({key: entry[key] for key in REASONING_FIDELITY_KEYS
                     if entry.get(key) is not None})
    return ThinkingDone(text or "", fidelity or None)


def _call(index: int, entry: _Json) -> ToolCallDone:
    """A ``function_call``: its arguments must be a JSON object's text.

    Raises:
        BadField: a field of the wrong type.
        InvalidMessageError: arguments that are not a JSON object.
    """
    name, call_id = string(entry, "name"), string(entry, "call_id")
    try:
        arguments = loads(string(entry, "arguments"))
    except BadField:
        arguments = None
    if type(arguments) is not dict:
        raise InvalidMessageError(PROTOCOL_NAME, "tool_call", index,
                                  detail="a function call's arguments must be a JSON object")
    return ToolCallDone(name, call_id, arguments)


def _result(index: int, entry: _Json) -> ToolResultDone:
    """A ``function_call_output``: its text, and the images of a list of parts.

    Raises:
        BadField: a field of the wrong type.
        InvalidMessageError: a malformed data URI.
        UnsupportedContentError: a file or audio part.
    """
    call_id = string(entry, "call_id")
    if type(entry.get("output")) is str:
        return ToolResultDone(entry["output"], call_id)
    texts, images = [], []
    for part in _parts(entry, "output"):
        item = _part(index, part, None)
        if isinstance(item, TextDone):
            texts.append(item.text)
        else:
            images.append(item.image_url)
    return ToolResultDone("".join(texts), call_id, tuple(images) or None)
