"""The Anthropic Messages front door, reading side (08 D73): a caller's ``POST /v1/messages``
body -> ``FrontRequest`` (``read_request``), the inverse of ``request.build_request`` up to
``request_normalization.normalize_request``.

Wire facts from Anthropic's Messages API reference (https://docs.claude.com/en/api/messages),
"Extended thinking", "Effort", "Structured outputs" and "Prompt caching". What is read:

- ``model`` (a non-empty string); ``stream`` (a boolean, ``false`` when absent);
- ``max_tokens`` (the protocol's one spelling), ``temperature``, ``top_p``,
  ``stop_sequences`` (an empty list is none) -> the UniConfig keys of the same names;
- ``system``, a string or text blocks (joined with a blank line) -> ``system_prompt``;
- ``messages``: role ``user`` or ``assistant``, ``content`` a string (one text item) or
  blocks: ``text`` -> ``TextDone``; ``image`` (a ``base64`` source as a ``data:`` URI, a
  ``url`` source as its URL) -> ``ImageUrlDone``; ``thinking`` -> ``ThinkingDone`` with its
  ``signature`` as fidelity (none when empty); ``redacted_thinking`` -> the thinking item
  ``"_REDACTED_THINKING"`` with its ``data`` as the signature (spec 01 §5), so both are
  replayed on the next turn as they came; ``tool_use`` -> ``ToolCallDone``; ``tool_result``
  -> ``ToolResultDone`` (its text blocks joined with a blank line, its images as URLs);
- ``tools`` (custom tools: ``name``, ``description``, ``input_schema``) and ``tool_choice``
  (``auto``, ``any`` -> ``required``, ``none``, ``tool`` -> a one-name list);
- ``thinking`` and ``output_config.effort`` -> ``thinking_level`` (08 D73): ``enabled`` by
  ``budget_tokens`` (< 2,048 low, < 8,192 medium, < 24,576 high, else xhigh), ``disabled``
  and ``between_tools`` (Sonnet 5.5's least thinking, 05 §2.1) -> ``none``, ``adaptive`` ->
  the effort's level or ``medium``; an effort without a thinking block -> its level
  (``minimal`` -> ``low``); ``thinking.display`` -> ``thinking_summary``;
- ``output_config.format`` (or the older top-level ``output_format``) ``{"type":
  "json_schema", "schema"}`` -> ``response_format``, named ``FORMAT_NAME`` (Anthropic's
  format has no name, UniConfig's needs one; Anthropic always enforces the schema);
- ``cache_control``, at the top level or on any block or tool -> ``prompt_caching``
  (``enhance`` when a ``ttl`` is ``"1h"``, else ``enable``; 08 D73); none -> unset;
- ``speed: "fast"`` or ``service_tier: "priority"`` -> ``fast_mode`` (08 D73).

Refused with ``UnsupportedParameterError`` naming the field (an HTTP 400 in Anthropic's error
body): what would change the answer and cannot be honoured: ``container``, ``mcp_servers``
(``REFUSED``), a server tool in ``tools`` (a ``type`` other than ``custom``) and
``tool_choice.disable_parallel_tool_use: true``. A content block of another type (documents,
search results, server-tool blocks, file images) is ``InvalidMessageError`` naming its type.
Every other field is ignored and named in ``FrontRequest.ignored`` (``metadata``, ``top_k``,
``context_management``, ``service_tier`` other than priority, ...), a field of a block, tool or
object as ``<where>.<field>`` (``tool_result.is_error``, ``text.citations``); a ``null`` field
counts as absent. A body that is not such a request is ``WireFormatError`` with the path of
the bad value. Pure: only ``MMSPError`` leaves (08 D59).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from typing import Any, Final

from adapters._front import FrontRequest
from adapters._json import (
    BadField,
    integer,
    obj,
    opt_array,
    opt_integer,
    opt_obj,
    opt_string,
    string,
)
from mmsp_core.errors import (
    InvalidMessageError,
    UnsupportedParameterError,
    WireFormatError,
    preview,
)
from mmsp_core.model import (
    DoneItem,
    ImageUrlDone,
    PromptCaching,
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

from .machine import REDACTED_THINKING

__all__ = ["FORMAT_NAME", "REFUSED", "SOURCE", "read_request"]

#: The name errors give the door (the protocol's name).
SOURCE: Final = "ant-messages"
#: The ``response_format`` name of a structured-output request (Anthropic's has none).
FORMAT_NAME: Final = "response"
#: Request fields refused whatever their value (08 D73), with the reason.
REFUSED: Final[Mapping[str, str]] = {
    "container": "the gateway cannot run Anthropic's code-execution containers",
    "mcp_servers": "the gateway does not connect the model to MCP servers",
}
#: The request fields read; every other one is ignored and named.
_READ: Final = frozenset(
    {
        "model", "messages", "max_tokens", "system", "stream", "temperature", "top_p",
        "stop_sequences", "tools", "tool_choice", "thinking", "output_config", "output_format",
        "cache_control", "speed", "service_tier",
    }
)
#: What joins the text blocks of ``system`` and of a tool result.
_JOIN: Final = "\n\n"
#: ``thinking.budget_tokens`` below each bound -> the level (08 D73); at or past the last, xhigh.
_BUDGETS: Final = (
    (2_048, ThinkingLevel.LOW),
    (8_192, ThinkingLevel.MEDIUM),
    (24_576, ThinkingLevel.HIGH),
)
#: ``output_config.effort`` -> the level of the same name (08 D73: ``minimal`` is ``low``).
_EFFORTS: Final[Mapping[str, ThinkingLevel]] = {
    **{level.value: level for level in ThinkingLevel},
    "minimal": ThinkingLevel.LOW,
}
_ROLES: Final[Mapping[str, str]] = {"user": "user", "assistant": "assistant"}
_TOOL_CHOICES: Final[Mapping[str, str]] = {"auto": "auto", "any": "required", "none": "none"}
_SUMMARIES: Final[Mapping[str, bool]] = {"summarized": True, "omitted": False}
_SPEEDS: Final[Mapping[str, bool]] = {"fast": True, "standard": False}
#: The keys read of each object that may hold more (the others are named as ignored).
_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "text": frozenset({"type", "text", "cache_control"}),
    "image": frozenset({"type", "source", "cache_control"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "cache_control"}),
    "tools": frozenset({"type", "name", "description", "input_schema", "cache_control"}),
    "tool_choice": frozenset({"type", "name", "disable_parallel_tool_use"}),
    "thinking_config": frozenset({"type", "budget_tokens", "display"}),
    "output_config": frozenset({"effort", "format"}),
    "format": frozenset({"type", "schema"}),
    "message": frozenset({"role", "content"}),
}


@contextlib.contextmanager
def _at(path: str) -> Iterator[None]:
    """Report a ``BadField`` raised inside as ``WireFormatError`` at ``path``."""
    try:
        yield
    except BadField as exc:
        raise WireFormatError(path, str(exc)) from None


def _object(value: Any, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise BadField(f"{what} must be an object")
    return value


def _number(container: Mapping[str, Any], key: str) -> float | None:
    """``container[key]`` as a finite float, ``None`` when absent or null.

    Raises:
        BadField: not a number (a boolean is not one), or not finite as a float.
    """
    value = container.get(key)
    if value is None:
        return None
    if type(value) is not int and type(value) is not float:
        raise BadField(f"{key!r} must be a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise BadField(f"{key!r} must be a finite number")
    return number


def _choice(mapping: Mapping[str, Any], value: str, key: str) -> Any:
    """``mapping[value]``; ``BadField`` naming the accepted values otherwise."""
    if value not in mapping:
        accepted = ", ".join(repr(name) for name in mapping)
        raise BadField(f"{key!r} must be one of {accepted}, not {preview(value)!r}")
    return mapping[value]


def _budget_level(budget: int) -> ThinkingLevel:
    """The level of a thinking budget (08 D73)."""
    return next((level for bound, level in _BUDGETS if budget < bound), ThinkingLevel.XHIGH)


def _thinking_level(
    kind: str, effort: ThinkingLevel | None, block: Mapping[str, Any]
) -> ThinkingLevel:
    """The level of a ``thinking`` block of type ``kind`` (08 D73). Raises ``BadField``."""
    if kind == "enabled":
        return _budget_level(integer(block, "budget_tokens"))
    if kind == "adaptive":
        return effort or ThinkingLevel.MEDIUM
    if kind in ("disabled", "between_tools"):
        return ThinkingLevel.NONE
    raise BadField(
        f"'type' must be 'enabled', 'adaptive', 'disabled' or 'between_tools', "
        f"not {preview(kind)!r}"
    )


def _image_url(source: Mapping[str, Any], message_index: int) -> str:
    """The URL of an image ``source``: a ``base64`` source as a ``data:`` URI, a ``url``
    source as its URL.

    Raises:
        BadField: a field of the wrong type.
        InvalidMessageError: another source type (a file id): ``item_type="image"``.
    """
    kind = string(source, "type")
    if kind == "base64":
        return f"data:{string(source, 'media_type')};base64,{string(source, 'data')}"
    if kind == "url":
        return string(source, "url")
    raise InvalidMessageError(
        SOURCE, "image", message_index, detail=f"an image source of type {preview(kind)!r} "
        "cannot be carried: send the image as base64 data or a URL"
    )


class _Reading:
    """One request being read: what it asked of prompt caching and the fields it ignored."""

    def __init__(self, body: Mapping[str, Any]) -> None:
        self.caching: PromptCaching | None = None
        #: The position of each request field in the body.
        self.order = {key: position for position, key in enumerate(body)}
        #: Ignored field name -> the position of the request field it is in, once each.
        self.ignored: dict[str, int] = {}

    def unread(
        self,
        where: str | None,
        container: Mapping[str, Any],
        read: frozenset[str],
        field: str | None = None,
    ) -> None:
        """Name every non-null field of ``container`` outside ``read`` as ignored:
        ``<where>.<key>``, in the request field ``field``; a request field itself when
        ``where`` is ``None``."""
        for key, value in container.items():
            if key not in read and value is not None:
                name = preview(key) if where is None else f"{where}.{preview(key)}"
                self.ignored.setdefault(name, self.order.get(field or key, 0))

    def ignored_names(self) -> tuple[str, ...]:
        """The ignored names in the order the request wrote them (08 D73)."""
        return tuple(sorted(self.ignored, key=self.ignored.__getitem__))

    def cache(self, container: Mapping[str, Any]) -> None:
        """Note ``container``'s ``cache_control``, if any (08 D73). Raises ``BadField``."""
        control = opt_obj(container, "cache_control")
        if control is None:
            return
        if opt_string(control, "ttl") == "1h":
            self.caching = PromptCaching.ENHANCE
        elif self.caching is None:
            self.caching = PromptCaching.ENABLE

    # -- messages ---------------------------------------------------------------------------

    def message(self, index: int, raw: Any) -> UniMessage:
        path = f"messages[{index}]"
        with _at(path):
            message = _object(raw, "a message")
            role = _choice(_ROLES, string(message, "role"), "role")
            content = message.get("content")
            self.unread("message", message, _KEYS["message"], "messages")
            if type(content) is str:
                return UniMessage(role, (TextDone(content),))
            if type(content) is not list:
                raise BadField("'content' must be a string or an array of content blocks")
        items = [self.block(index, f"{path}.content[{j}]", raw) for j, raw in enumerate(content)]
        return UniMessage(role, tuple(items))

    def block(self, index: int, path: str, raw: Any) -> DoneItem:
        """One content block of message ``index`` as an item.

        Raises:
            WireFormatError: a field of the wrong type (``path``).
            InvalidMessageError: a block type this door cannot carry (``item_type``).
        """
        with _at(path):
            block = _object(raw, "a content block")
            kind = string(block, "type")
            if kind not in _BLOCKS:
                raise InvalidMessageError(
                    SOURCE, preview(kind), index,
                    detail="the gateway carries text, image, thinking, redacted_thinking, "
                    "tool_use and tool_result blocks",
                )
            self.cache(block)
            self.unread(kind, block, _KEYS[kind], "messages")
            return _BLOCKS[kind](self, index, path, block)

    def tool_result(self, index: int, path: str, block: Mapping[str, Any]) -> DoneItem:
        call_id = string(block, "tool_use_id")
        content = block.get("content")
        if content is None or type(content) is str:
            return ToolResultDone(content or "", call_id)
        if type(content) is not list:
            raise BadField("'content' must be a string or an array of content blocks")
        texts: list[str] = []
        images: list[str] = []
        for j, raw in enumerate(content):
            inner = f"{path}.content[{j}]"
            with _at(inner):
                if string(_object(raw, "a content block"), "type") not in ("text", "image"):
                    raise InvalidMessageError(
                        SOURCE, "tool_result", index,
                        detail="a tool result holds text and image blocks only",
                    )
            part = self.block(index, inner, raw)
            if isinstance(part, TextDone):
                texts.append(part.text)
            elif isinstance(part, ImageUrlDone):
                images.append(part.image_url)
        return ToolResultDone(_JOIN.join(texts), call_id, tuple(images) or None)

    # -- config -----------------------------------------------------------------------------

    def tool(self, index: int, raw: Any) -> ToolSchema:
        with _at(f"tools[{index}]"):
            tool = _object(raw, "a tool")
            kind = opt_string(tool, "type")
            if kind not in (None, "custom"):
                raise UnsupportedParameterError(
                    SOURCE, "tools", detail=f"the server tool {preview(kind)!r} cannot be run "
                    "through the gateway; only custom tools can",
                )
            self.cache(tool)
            self.unread("tools", tool, _KEYS["tools"], "tools")
            description = opt_string(tool, "description") or ""
            return ToolSchema(string(tool, "name"), description, opt_obj(tool, "input_schema"))

    def tool_choice(self, raw: Any) -> str | tuple[str, ...]:
        with _at("tool_choice"):
            choice = _object(raw, "'tool_choice'")
            parallel = choice.get("disable_parallel_tool_use")
            if parallel is not None and type(parallel) is not bool:
                raise BadField("'disable_parallel_tool_use' must be a boolean")
            if parallel:
                raise UnsupportedParameterError(
                    SOURCE, "tool_choice", detail="disable_parallel_tool_use cannot be "
                    "honoured on every model the gateway serves",
                )
            self.unread("tool_choice", choice, _KEYS["tool_choice"], "tool_choice")
            kind = string(choice, "type")
            if kind == "tool":
                return (string(choice, "name"),)
            return str(_choice(_TOOL_CHOICES, kind, "type"))

    def thinking(
        self, body: Mapping[str, Any], output: Mapping[str, Any]
    ) -> tuple[ThinkingLevel | None, bool | None]:
        """``thinking_level`` and ``thinking_summary`` of ``thinking`` and
        ``output_config.effort`` (08 D73). Raises ``WireFormatError``."""
        with _at("output_config"):
            effort_name = opt_string(output, "effort")
            effort = None if effort_name is None else _choice(_EFFORTS, effort_name, "effort")
        with _at("body"):
            block = opt_obj(body, "thinking")
        if block is None:
            return effort, None
        with _at("thinking"):
            self.unread("thinking", block, _KEYS["thinking_config"], "thinking")
            display = opt_string(block, "display")
            summary = None if display is None else _choice(_SUMMARIES, display, "display")
            return _thinking_level(string(block, "type"), effort, block), summary

    def response_format(self, path: str, raw: Any) -> ResponseFormat:
        with _at(path):
            asked = _object(raw, "a format")
            self.unread(path, asked, _KEYS["format"], path.split(".")[0])
            _choice({"json_schema": None}, string(asked, "type"), "type")
            return ResponseFormat("json_schema", FORMAT_NAME, obj(asked, "schema"))

    def config(self, body: Mapping[str, Any]) -> UniConfig:
        """The UniConfig of a request body (see the module docstring).

        Raises:
            WireFormatError, UnsupportedParameterError: as ``read_request``.
        """
        with _at("body"):
            output = opt_obj(body, "output_config") or {}
            system = _system(self, body.get("system"))
            tools = opt_array(body, "tools")
            max_tokens = opt_integer(body, "max_tokens")
            temperature = _number(body, "temperature")
            top_p = _number(body, "top_p")
            stops = _stop_sequences(body)
            speed = opt_string(body, "speed")
            fast = None if speed is None else _choice(_SPEEDS, speed, "speed")
            self.cache(body)
        if body.get("service_tier") == "priority":
            fast = True
        elif body.get("service_tier") is not None:
            self.ignored["service_tier"] = self.order["service_tier"]
        self.unread("output_config", output, _KEYS["output_config"], "output_config")
        level, summary = self.thinking(body, output)
        asked, path = output.get("format"), "output_config.format"
        if asked is None:
            asked, path = body.get("output_format"), "output_format"
        choice = body.get("tool_choice")
        # Read before the caching is taken: a tool may carry a cache_control.
        schemas = None if tools is None else tuple(self.tool(i, t) for i, t in enumerate(tools))
        return UniConfig(
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            stop_sequences=stops,
            response_format=None if asked is None else self.response_format(path, asked),
            tools=schemas,
            tool_choice=None if choice is None else self.tool_choice(choice),
            thinking_level=level,
            thinking_summary=summary,
            system_prompt=system,
            prompt_caching=self.caching,
            fast_mode=fast,
        )


def _system(reading: _Reading, system: Any) -> str | None:
    """``system``: a string, or text blocks joined with a blank line. Raises ``BadField``."""
    if system is None or type(system) is str:
        return system
    if type(system) is not list:
        raise BadField("'system' must be a string or an array of text blocks")
    texts = []
    for raw in system:
        block = _object(raw, "a system block")
        _choice({"text": None}, string(block, "type"), "type")
        reading.cache(block)
        reading.unread("system", block, _KEYS["text"], "system")
        texts.append(string(block, "text"))
    return _JOIN.join(texts)


def _stop_sequences(body: Mapping[str, Any]) -> tuple[str, ...] | None:
    """``stop_sequences`` as a tuple; an empty list is none. Raises ``BadField``."""
    stops = opt_array(body, "stop_sequences")
    if not stops:
        return None
    if any(type(stop) is not str for stop in stops):
        raise BadField("'stop_sequences' must be an array of strings")
    return tuple(stops)


def _text(reading: _Reading, index: int, path: str, block: Mapping[str, Any]) -> DoneItem:
    return TextDone(string(block, "text"))


def _image(reading: _Reading, index: int, path: str, block: Mapping[str, Any]) -> DoneItem:
    return ImageUrlDone(_image_url(obj(block, "source"), index))


def _thinking(reading: _Reading, index: int, path: str, block: Mapping[str, Any]) -> DoneItem:
    signature = opt_string(block, "signature")
    return ThinkingDone(string(block, "thinking"), {"signature": signature} if signature else None)


def _redacted(reading: _Reading, index: int, path: str, block: Mapping[str, Any]) -> DoneItem:
    return ThinkingDone(REDACTED_THINKING, {"signature": string(block, "data")})


def _tool_use(reading: _Reading, index: int, path: str, block: Mapping[str, Any]) -> DoneItem:
    return ToolCallDone(string(block, "name"), string(block, "id"), obj(block, "input"))


def _tool_result(reading: _Reading, index: int, path: str, block: Mapping[str, Any]) -> DoneItem:
    return reading.tool_result(index, path, block)


#: Content block type -> its reader ``(reading, message index, path, block) -> item``.
_BLOCKS: Final = {
    "text": _text,
    "image": _image,
    "thinking": _thinking,
    "redacted_thinking": _redacted,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
}


def read_request(body: object, /) -> FrontRequest:
    """Read a ``POST /v1/messages`` body (parsed JSON) as the door's ``FrontRequest`` (see the
    module docstring; a ``ReadRequest`` of 08 D73).

    Raises:
        UnsupportedParameterError: a field in ``REFUSED``, a server tool, or
            ``tool_choice.disable_parallel_tool_use`` (``parameter`` names the field).
        WireFormatError: a body that is not a Messages request (``path`` names the value).
        InvalidMessageError: a content block this door cannot carry (``item_type``,
            ``message_index``).
    """
    if type(body) is not dict:
        raise WireFormatError("body", "a Messages request is a JSON object")
    reading = _Reading(body)
    for key, value in body.items():
        if key in REFUSED and value is not None:
            raise UnsupportedParameterError(SOURCE, key, detail=REFUSED[key])
    reading.unread(None, body, _READ)
    with _at("body"):
        model = string(body, "model")
        if not model:
            raise BadField("'model' must be a non-empty string")
        stream = body.get("stream")
        if stream is not None and type(stream) is not bool:
            raise BadField("'stream' must be a boolean")
        raw_messages = body.get("messages")
        if type(raw_messages) is not list:
            raise BadField("'messages' must be an array of messages")
    # Messages first: their blocks' cache_control is part of the config.
    messages = tuple(reading.message(i, raw) for i, raw in enumerate(raw_messages))
    config = reading.config(body)
    return FrontRequest(model, messages, config, bool(stream), reading.ignored_names())
