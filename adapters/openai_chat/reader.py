"""The Chat Completions front door's reader (08 D73): a caller's ``POST /v1/chat/completions``
body (parsed JSON) as ``UniMessage``s and a ``UniConfig``, the inverse of ``build_request``.

Fields (OpenAI API reference, "Create chat completion"):

* ``model`` (a string) and ``messages`` (a non-empty array) are required; ``stream`` is a
  boolean (absent: ``false``); ``stream_options`` is honoured as far as usage goes (usage is
  always sent on a Chat stream, 08 D73).
* ``system`` and ``developer`` messages are the system prompt (their texts joined by a blank
  line, wherever they stand). ``user`` content is a string or ``text`` and ``image_url``
  parts (a URL or a ``data:`` URI, the library's ``image_url.done``; ``detail`` is the
  builder's to decide). ``tool`` messages are ``tool_result.done`` items of the user message
  that follows them (or of one of their own when an assistant message or the end follows),
  as ``build_request`` writes a user message's tool results before it. ``assistant``
  messages: their thinking first (``reasoning_content`` and/or ``reasoning``, the field
  recorded as ``reasoning_field`` when only one is present, the same text in both counted
  once; ``reasoning_details`` blocks of type ``reasoning.encrypted`` as fidelity
  ``encrypted_content``/``format``/``reasoning_id``, the first on the thinking text's item,
  each other on an empty one; other blocks repeat that text and are not read), then their
  text (a string, or ``text`` and ``refusal`` parts), then ``tool_calls`` (``function`` calls,
  arguments a JSON object in a string). Empty texts are left out.
* ``max_completion_tokens``, else the older ``max_tokens``, is ``max_tokens``;
  ``temperature``, ``top_p``, ``seed`` as they are; ``stop`` (a string or a list) is
  ``stop_sequences``; ``response_format`` ``json_object`` and ``json_schema`` (``name``,
  ``schema``, ``strict``, false when absent as OpenAI takes it) are ``response_format``,
  ``text`` is none; ``tools`` (``function`` tools) and ``tool_choice`` (``"auto"``,
  ``"none"``, ``"required"``, one named function, or ``allowed_tools`` as its list of names);
  ``reasoning_effort`` is the ``thinking_level`` of the same name (``minimal`` is ``low``, 08
  D73); ``service_tier: "priority"`` is ``fast_mode`` (``auto`` and ``default`` ask for
  nothing).
* Refused with ``UnsupportedParameterError`` naming the field, since honouring it would change
  the answer and the door cannot (08 D73): ``n`` > 1, ``logprobs: true``, ``top_logprobs``,
  ``audio``, ``modalities`` with ``audio``, ``prediction``, a tool or tool choice of another
  type than ``function``.
* Any other field (``metadata``, ``user``, ``store``, ``parallel_tool_calls``, another
  ``service_tier``, ...) is ignored and named in ``FrontRequest.ignored``, in request order.

A body that is not such a request raises ``WireFormatError`` naming the field's path
(``messages[2].content``); an item that cannot become a message item (a content part of
another type, tool-call arguments that are not a JSON object) raises ``InvalidMessageError``
with its ``item_type`` and the wire message's index. Nothing else leaves, whatever JSON value
is given (08 D59). Values are checked for their JSON type here; their ranges are the
preflight's to check (08 D58), as for any caller.

``normalize_request`` says what ``read_request(build_request("openai-chat", ...))`` gives
back: the documented normalisation of the inverse property (08 D73).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

from adapters._front import FrontRequest
from adapters._json import BadField, loads, obj, opt_array, opt_integer, opt_string, string
from mmsp_core.errors import (
    InvalidMessageError,
    UnsupportedParameterError,
    WireFormatError,
    preview,
)
from mmsp_core.model import (
    DoneItem,
    ImageUrlDone,
    ResponseFormat,
    TextDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniMessage,
)

from .writer import ENCRYPTED_BLOCK, REASONING_FIELDS, encrypted_fidelity, reasoning_field

__all__ = ["normalize_request", "read_request"]

#: The client the door's errors name: the protocol's own name, as ``decode`` names a source.
_CLIENT: Final = "openai-chat"
#: The fields the door reads (mapped, honoured or refused); any other is ignored (08 D73).
_READ: Final = frozenset({
    "model", "messages", "stream", "stream_options", "max_completion_tokens", "max_tokens",
    "temperature", "top_p", "stop", "seed", "response_format", "tools", "tool_choice",
    "reasoning_effort", "n", "logprobs", "top_logprobs", "audio", "modalities", "prediction",
})
#: ``service_tier`` values honoured as asked: the default tier, and priority as ``fast_mode``.
_TIERS: Final = frozenset({"auto", "default", "priority"})
#: ``reasoning_effort`` values that name no level of their own (08 D73).
_EFFORTS: Final[Mapping[str, ThinkingLevel]] = {"minimal": ThinkingLevel.LOW}
_TOOL_CHOICES: Final = ("auto", "none", "required")
_JSON = dict[str, Any]


@contextlib.contextmanager
def _at(path: str) -> Iterator[None]:
    """Turn a field of the wrong JSON type under ``path`` into ``WireFormatError``."""
    try:
        yield
    except BadField as exc:
        raise WireFormatError(path, str(exc)) from None


def _shown(value: str) -> str:
    """A caller's string in an error's text, shortened as spec 03 §2 says."""
    return preview(repr(value))


def _honoured_tier(body: Mapping[str, Any], key: str) -> bool:
    """Whether ``key`` is a ``service_tier`` the door honours (``_TIERS``)."""
    tier = body[key]
    return key == "service_tier" and type(tier) is str and tier in _TIERS


def _refused(parameter: str, detail: str) -> UnsupportedParameterError:
    return UnsupportedParameterError(_CLIENT, parameter, detail=detail)


def read_request(body: object, /) -> FrontRequest:
    """Read a Chat Completions request body (the module docstring says how).

    Raises:
        UnsupportedParameterError: a field the door refuses (08 D73), ``parameter`` naming it.
        WireFormatError: a body that is not a Chat Completions request (``path`` names where).
        InvalidMessageError: an item no message item can hold (``item_type``,
            ``message_index``).
    """
    if type(body) is not dict:
        raise WireFormatError("body", "a request body must be a JSON object")
    with _at("body"):
        model = string(body, "model")
        stream = body.get("stream")
        if stream is not None and type(stream) is not bool:
            raise BadField("'stream' must be a boolean")
        options = body.get("stream_options")
        if options is not None and type(options) is not dict:
            raise BadField("'stream_options' must be an object")
        _refuse(body)
        config = _config(body)
        raw = opt_array(body, "messages")
    if not raw:
        raise WireFormatError("body.messages", "a non-empty array of messages is required")
    messages, system = _messages(raw)
    if system:
        config = attrs.evolve(config, system_prompt=system)
    ignored = tuple(key for key in body if key not in _READ and not _honoured_tier(body, key))
    return FrontRequest(model, tuple(messages), config, bool(stream), ignored)


# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------


def _refuse(body: Mapping[str, Any]) -> None:
    """Refuse what would change the answer and cannot be honoured (08 D73).

    Raises:
        UnsupportedParameterError: naming the field.
        BadField: ``n`` or ``modalities`` of the wrong JSON type.
    """
    n = opt_integer(body, "n")
    if n is not None and n > 1:
        raise _refused("n", "one choice is answered; n > 1 is not")
    if body.get("logprobs") not in (None, False):
        raise _refused("logprobs", "log probabilities are not streamed through the gateway")
    for field in ("top_logprobs", "audio", "prediction"):
        if body.get(field) is not None:
            raise _refused(field, f"{field} is not supported through the gateway")
    if "audio" in (opt_array(body, "modalities") or ()):
        raise _refused("modalities", "audio output is not supported through the gateway")


def _config(body: Mapping[str, Any]) -> UniConfig:
    """The UniConfig of a request's fields (the messages' system prompt is added later).

    Raises:
        BadField: a field of the wrong JSON type or value.
        UnsupportedParameterError: a tool or tool choice of another type than ``function``.
    """
    max_tokens = opt_integer(body, "max_completion_tokens")
    effort = opt_string(body, "reasoning_effort")
    return UniConfig(
        max_tokens=opt_integer(body, "max_tokens") if max_tokens is None else max_tokens,
        temperature=_number(body, "temperature"),
        top_p=_number(body, "top_p"),
        stop_sequences=_stop(body.get("stop")),
        seed=opt_integer(body, "seed"),
        response_format=_response_format(body),
        tools=_tools(body),
        tool_choice=_tool_choice(body.get("tool_choice")),
        thinking_level=None if effort is None else _level(effort),
        fast_mode=True if body.get("service_tier") == "priority" else None,
    )


def _number(body: Mapping[str, Any], key: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if type(value) not in (int, float):
        raise BadField(f"{key!r} must be a number")
    try:
        return float(value)
    except OverflowError:
        raise BadField(f"{key!r} is out of range") from None


def _stop(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if type(value) is str:
        return (value,)
    if type(value) is list and all(type(stop) is str for stop in value):
        return tuple(value) or None
    raise BadField("'stop' must be a string or an array of strings")


def _response_format(body: Mapping[str, Any]) -> ResponseFormat | None:
    raw = body.get("response_format")
    if raw is None:
        return None
    kind = string(obj(body, "response_format"), "type")
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat("json_object")
    if kind != "json_schema":
        accepted = "text, json_object or json_schema"
        raise BadField(f"'response_format.type' {_shown(kind)} is not {accepted}")
    spec = obj(raw, "json_schema")
    schema = spec.get("schema")
    if schema is not None and type(schema) is not dict:
        raise BadField("'json_schema.schema' must be an object")
    strict = spec.get("strict")
    if strict is not None and type(strict) is not bool:
        raise BadField("'json_schema.strict' must be a boolean")
    return ResponseFormat("json_schema", string(spec, "name"), schema, bool(strict))


def _tools(body: Mapping[str, Any]) -> tuple[ToolSchema, ...] | None:
    raw = opt_array(body, "tools")
    if raw is None:
        return None
    tools = []
    for tool in raw:
        if type(tool) is not dict:
            raise BadField("a tool must be an object")
        if tool.get("type") != "function":
            raise _refused("tools", "only function tools are supported through the gateway")
        function = obj(tool, "function")
        parameters = function.get("parameters")
        if parameters is not None and type(parameters) is not dict:
            raise BadField("'function.parameters' must be an object")
        description = opt_string(function, "description") or ""
        tools.append(ToolSchema(string(function, "name"), description, parameters))
    return tuple(tools)


def _tool_choice(value: Any) -> str | tuple[str, ...] | None:
    """``tool_choice``: a string as it is, one named function or ``allowed_tools`` as the
    list of their names (either mode: a list of names is what UniConfig can say, 08 D10)."""
    if value is None:
        return None
    if type(value) is str:
        if value not in _TOOL_CHOICES:
            raise BadField(f"'tool_choice' {_shown(value)} is not auto, none or required")
        return value
    if type(value) is not dict:
        raise BadField("'tool_choice' must be a string or an object")
    kind = value.get("type")
    if kind == "function":
        return (string(obj(value, "function"), "name"),)
    if kind != "allowed_tools":
        raise _refused("tool_choice", "only function tools are supported through the gateway")
    names = []
    for tool in opt_array(obj(value, "allowed_tools"), "tools") or ():
        if type(tool) is not dict or tool.get("type") != "function":
            raise _refused("tool_choice", "only function tools are supported through the gateway")
        names.append(string(obj(tool, "function"), "name"))
    return tuple(names)


def _level(effort: str) -> ThinkingLevel:
    """The thinking level of a ``reasoning_effort`` (08 D73)."""
    if effort in _EFFORTS:
        return _EFFORTS[effort]
    try:
        return ThinkingLevel(effort)
    except ValueError:
        raise BadField(f"'reasoning_effort' {_shown(effort)} is not a reasoning effort") from None


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


def _messages(raw: Sequence[Any]) -> tuple[list[UniMessage], str | None]:
    """The conversation's messages and its system prompt (``None``: none, or empty).

    Raises:
        WireFormatError: a message that is not one (``path`` ``messages[i]``...).
        InvalidMessageError: an item no message item can hold.
    """
    messages: list[UniMessage] = []
    system: list[str] = []
    results: list[DoneItem] = []  # tool results waiting for the user message that carries them
    for index, message in enumerate(raw):
        with _at(f"messages[{index}]"):
            if type(message) is not dict:
                raise BadField("a message must be an object")
            role = string(message, "role")
            if role in ("system", "developer"):
                system.extend(_texts(message.get("content"), ("text",)))
            elif role == "tool":
                text = "".join(_texts(message.get("content"), ("text",)))
                results.append(ToolResultDone(text, string(message, "tool_call_id")))
            elif role == "user":
                items = [*results, *_user_items(message, index)]
                results = []
                if items:
                    messages.append(UniMessage("user", tuple(items)))
            elif role == "assistant":
                if results:
                    messages.append(UniMessage("user", tuple(results)))
                    results = []
                items = _assistant_items(message, index)
                if items:
                    messages.append(UniMessage("assistant", tuple(items)))
            else:
                accepted = "system, developer, user, assistant or tool"
                raise BadField(f"'role' {_shown(role)} is not {accepted}")
    if results:
        messages.append(UniMessage("user", tuple(results)))
    return messages, "\n\n".join(system) or None


def _parts(content: Any) -> list[_JSON]:
    """A message's content as parts: a string is one text part; null is none."""
    if content is None:
        return []
    if type(content) is str:
        return [{"type": "text", "text": content}]
    if type(content) is not list or not all(type(part) is dict for part in content):
        raise BadField("'content' must be a string or an array of content parts")
    return content


def _texts(content: Any, kinds: tuple[str, ...]) -> list[str]:
    """The non-empty texts of ``text`` parts (and ``refusal`` parts when asked).

    Raises:
        BadField: content that is not a string or text parts.
    """
    texts = []
    for part in _parts(content):
        kind = part.get("type")
        if kind not in kinds:
            shown = _shown(kind) if type(kind) is str else "another"
            raise BadField(f"a content part of type {shown} where only text is read")
        text = string(part, "text" if kind == "text" else "refusal")
        if text:
            texts.append(text)
    return texts


def _user_items(message: Mapping[str, Any], index: int) -> list[DoneItem]:
    items: list[DoneItem] = []
    for part in _parts(message.get("content")):
        kind = part.get("type")
        if kind == "text":
            if text := string(part, "text"):
                items.append(TextDone(text))
        elif kind == "image_url":
            items.append(ImageUrlDone(string(obj(part, "image_url"), "url")))
        else:
            raise InvalidMessageError(
                _CLIENT,
                kind if type(kind) is str else None,
                index,
                detail="only text and image_url parts are read",
            )
    return items


def _assistant_items(message: Mapping[str, Any], index: int) -> list[DoneItem]:
    items: list[DoneItem] = _thinking(message)
    items.extend(TextDone(text) for text in _texts(message.get("content"), ("text", "refusal")))
    for position, call in enumerate(opt_array(message, "tool_calls") or ()):
        items.append(_tool_call(call, index, position))
    return items


def _thinking(message: Mapping[str, Any]) -> list[DoneItem]:
    """An assistant message's thinking items (module docstring)."""
    texts = {field: opt_string(message, field) or "" for field in REASONING_FIELDS}
    blocks = [_encrypted(block) for block in opt_array(message, "reasoning_details") or ()]
    encrypted = [fidelity for fidelity in blocks if fidelity is not None]
    sent = [field for field, text in texts.items() if text]
    if len(sent) == 2 and texts["reasoning_content"] != texts["reasoning"]:
        items: list[DoneItem] = [ThinkingDone(texts[f], {"reasoning_field": f}) for f in sent]
    elif sent:
        fidelity: _JSON = {"reasoning_field": sent[0]} if len(sent) == 1 else {}
        fidelity.update(encrypted.pop(0) if encrypted else {})
        items = [ThinkingDone(texts[sent[0]], fidelity or None)]
    else:
        items = []
    items.extend(ThinkingDone("", fidelity) for fidelity in encrypted)
    return items


def _encrypted(block: Any) -> _JSON | None:
    """The fidelity of a ``reasoning.encrypted`` block; ``None`` for another block."""
    if type(block) is not dict:
        raise BadField("a reasoning_details block must be an object")
    if block.get("type") != ENCRYPTED_BLOCK:
        return None
    fidelity: _JSON = {
        "encrypted_content": string(block, "data"),
        "format": string(block, "format"),
    }
    if (reasoning_id := opt_string(block, "id")) is not None:
        fidelity["reasoning_id"] = reasoning_id
    return fidelity


def _tool_call(call: Any, index: int, position: int) -> ToolCallDone:
    """One ``tool_calls`` entry.

    Raises:
        BadField: an entry of the wrong shape.
        InvalidMessageError: a call of another type, or arguments that are not a JSON object.
    """
    if type(call) is not dict:
        raise BadField("a tool call must be an object")
    if call.get("type", "function") != "function":
        raise InvalidMessageError(
            _CLIENT, "tool_call", index, detail="only function calls are read"
        )
    function = obj(call, "function")
    text = opt_string(function, "arguments") or "{}"
    try:
        arguments = loads(text)
    except BadField:
        arguments = None
    if type(arguments) is not dict:
        raise InvalidMessageError(
            _CLIENT, "tool_call", index,
            detail=f"tool_calls[{position}] arguments are not a JSON object",
        )
    return ToolCallDone(string(function, "name"), string(call, "id"), arguments)


# --------------------------------------------------------------------------------------------
# The inverse property's normalisation (08 D73)
# --------------------------------------------------------------------------------------------


def normalize_request(
    messages: Sequence[UniMessage], config: UniConfig
) -> tuple[list[UniMessage], UniConfig]:
    """What ``read_request`` gives back for the body the ``openai-chat`` client builds from
    ``messages`` and ``config``: user messages of text, image URLs and tool results,
    assistant messages of text, thinking and tool calls (what a Chat conversation holds).

    What Chat cannot carry, or the builder does not send:

    * a user message's tool results come first, without images: the builder writes them as
      ``tool`` messages before it and their images into its content, where they are read as
      ``image_url.done`` items in their place; tool results with no user content after them
      join the next user message (or stand alone before an assistant message or the end);
    * an assistant message is its thinking, its text, then its tool calls; its thinking texts
      are joined into one item recording the ``reasoning_field`` all of them share (none when
      they differ or none is recorded), carrying the first gateway-encrypted fidelity
      (``encrypted_content`` and ``format``, and ``reasoning_id``), each other encrypted
      fidelity on an empty thinking item of its own; no other fidelity travels;
    * empty texts and messages left with nothing are dropped;
    * config: ``thinking_level`` is not sent by ``openai-chat`` (05 §2.8), nor are
      ``thinking_summary``, ``prompt_caching`` (only ``enable``, the default), ``trace_id``,
      the image, speech and embedding options or unknown keys; an empty ``system_prompt`` is
      none; ``fast_mode: false`` is the default; a ``json_object`` response format has no
      ``strict`` on the wire (it reads back as the default).
    """
    out: list[UniMessage] = []
    pending: list[DoneItem] = []
    for message in messages:
        if message.role == "user":
            pending += [
                ToolResultDone(item.text, item.tool_call_id)
                for item in message.content_items
                if isinstance(item, ToolResultDone)
            ]
            content = [
                image
                for item in message.content_items
                for image in _user_content(item)
            ]
            if any(not isinstance(item, ToolResultDone) or item.images
                   for item in message.content_items):
                kept = [item for item in content if not isinstance(item, TextDone) or item.text]
                if pending or kept:
                    out.append(UniMessage("user", (*pending, *kept)))
                pending = []
            continue
        if pending:
            out.append(UniMessage("user", tuple(pending)))
            pending = []
        items = _normal_assistant(message.content_items)
        if items:
            out.append(UniMessage("assistant", tuple(items)))
    if pending:
        out.append(UniMessage("user", tuple(pending)))
    return out, _normal_config(config)


def _user_content(item: DoneItem) -> list[DoneItem]:
    if isinstance(item, ToolResultDone):
        return [ImageUrlDone(url) for url in item.images or ()]
    if isinstance(item, TextDone):
        return [TextDone(item.text)]
    return [item]


def _normal_assistant(items: Sequence[DoneItem]) -> list[DoneItem]:
    thinking = [item for item in items if isinstance(item, ThinkingDone)]
    text = "".join(item.thinking for item in thinking)
    fields = {reasoning_field(item.fidelity) for item in thinking}
    encrypted = [e for item in thinking if (e := encrypted_fidelity(item.fidelity)) is not None]
    out: list[DoneItem] = []
    if text:
        field = next(iter(fields)) if len(fields) == 1 else None
        fidelity: _JSON = {} if field is None else {"reasoning_field": field}
        fidelity.update(encrypted.pop(0) if encrypted else {})
        out.append(ThinkingDone(text, fidelity or None))
    out += [ThinkingDone("", fidelity) for fidelity in encrypted]
    out += [TextDone(item.text) for item in items if isinstance(item, TextDone) and item.text]
    out += [
        ToolCallDone(item.name, item.tool_call_id, item.arguments)
        for item in items
        if isinstance(item, ToolCallDone)
    ]
    return out


def _normal_config(config: UniConfig) -> UniConfig:
    return UniConfig(
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        stop_sequences=config.stop_sequences,
        seed=config.seed,
        response_format=(
            ResponseFormat("json_object")
            if config.response_format is not None and config.response_format.type == "json_object"
            else config.response_format
        ),
        tools=config.tools,
        tool_choice=config.tool_choice,
        system_prompt=config.system_prompt or None,
        fast_mode=config.fast_mode or None,
    )
