"""Chat Completions requests: config mapping and message conversion (spec 04 §4, 05 §2, §4.3, §5).

Four client types speak Chat Completions; they differ only in how the config is mapped and in
three message-conversion switches, so each is one ``_Dialect`` row of ``DIALECTS``:

* ``openai-chat`` (also the protocol name as a source) sends no thinking level (05 §2.8);
* ``openai-chat-vllm-adapter`` adds the chat-template thinking switch of its profile table;
* ``zai-official`` (GLM) and ``moonshot-official`` (Kimi) map levels through their own tables
  (05 §2.4, §2.5) and reject what their endpoints reject (05 §4.3).

Generation rows match explicit version tokens on the lower-cased model id, first match wins;
the id is sent exactly as given (05 §1, 08 D9). ``thinking_level`` never raises.

The builder is pure and never fetches (08 D37): for openai-chat and moonshot the I/O layer
replaces http(s) image URLs with data URIs before calling it. A URL that still arrives here is
sent as a URL, unmeasured. Data URIs are only decoded where their size matters (the GPT-5.6
``detail`` rule); a malformed one raises ``InvalidMessageError(item_type="image_url")`` there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar, final

import attrs

from adapters._convert import arguments_json, check_tool_choice_list, model_key, parse_data_uri
from adapters._media import needs_high_detail
from mmsp_core.errors import (
    InvalidMessageError,
    RoutingError,
    UnsupportedContentError,
    UnsupportedParameterError,
)
from mmsp_core.model import (
    ImageUrlDone,
    PromptCaching,
    TextDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    UniConfig,
    UniMessage,
)
from mmsp_core.request import HTTPRequest, encode_json_body

__all__ = ["DIALECTS", "HEADERS", "PATH", "build_request", "check_config"]

PATH: Final = "/chat/completions"
HEADERS: Final = (("content-type", "application/json"), ("accept", "text/event-stream"))

OPENAI_CHAT: Final = "openai-chat"
VLLM: Final = "openai-chat-vllm-adapter"
ZAI: Final = "zai-official"
MOONSHOT: Final = "moonshot-official"

_L = ThinkingLevel
_T = TypeVar("_T")
_LEVELS: Final = tuple(ThinkingLevel)
JSON = dict[str, Any]

# --------------------------------------------------------------------------------------------
# Thinking-level tables (05 §2), one row per generation, every level spelled out.
# --------------------------------------------------------------------------------------------

_GLM_ON: Final[JSON] = {"type": "enabled", "clear_thinking": False}
_GLM_OFF: Final[JSON] = {"type": "disabled"}

#: zai-official (05 §2.4): level -> (extra ``thinking``, ``reasoning_effort`` or None).
_ZAI_GLM_5_3: Final[Mapping[ThinkingLevel, tuple[JSON, str | None]]] = {
    _L.NONE: (_GLM_ON, "low"),  # GLM-5.3 always thinks: none runs at the lowest effort
    _L.LOW: (_GLM_ON, "low"),
    _L.MEDIUM: (_GLM_ON, "high"),
    _L.HIGH: (_GLM_ON, "high"),
    _L.XHIGH: (_GLM_ON, "max"),
    _L.MAX: (_GLM_ON, "max"),
}
_ZAI_EARLIER: Final[Mapping[ThinkingLevel, tuple[JSON, str | None]]] = {
    _L.NONE: (_GLM_OFF, None),
    _L.LOW: (_GLM_ON, "low"),
    _L.MEDIUM: (_GLM_ON, "medium"),
    _L.HIGH: (_GLM_ON, "high"),
    _L.XHIGH: (_GLM_ON, "xhigh"),
    _L.MAX: (_GLM_ON, "max"),
}
_ZAI_ROWS: Final = (("glm-5.3", _ZAI_GLM_5_3),)

#: moonshot-official (05 §2.5). K3 series: ``reasoning_effort``; K2 (``k2.``): extra ``thinking``.
_KIMI_K3_EFFORT: Final[Mapping[ThinkingLevel, str]] = {
    _L.NONE: "none",
    _L.LOW: "low",
    _L.MEDIUM: "high",
    _L.HIGH: "high",
    _L.XHIGH: "max",
    _L.MAX: "max",
}
_KIMI_K2_ON: Final[JSON] = {"type": "enabled", "keep": "all"}
_KIMI_K2_THINKING: Final[Mapping[ThinkingLevel, JSON]] = {
    _L.NONE: {"type": "disabled"},
    _L.LOW: _KIMI_K2_ON,
    _L.MEDIUM: _KIMI_K2_ON,
    _L.HIGH: _KIMI_K2_ON,
    _L.XHIGH: _KIMI_K2_ON,
    _L.MAX: _KIMI_K2_ON,
}
_KIMI_K2_TOKEN: Final = "k2."

#: openai-chat-vllm-adapter (05 §2.8): ``chat_template_kwargs`` per profile; None = absent.
_P0_QWEN3: Final[Mapping[ThinkingLevel, JSON | None]] = {
    _L.NONE: {"enable_thinking": False},
    **{level: {"enable_thinking": True} for level in _LEVELS[1:]},
}
_P1_QWEN3_8: Final[Mapping[ThinkingLevel, JSON | None]] = {
    _L.NONE: {"enable_thinking": False},
    _L.LOW: {"reasoning_effort": "low"},
    _L.MEDIUM: {"reasoning_effort": "medium"},
    _L.HIGH: {"reasoning_effort": "xhigh"},
    _L.XHIGH: {"reasoning_effort": "xhigh"},
    _L.MAX: {"reasoning_effort": "xhigh"},
}
_P2_DEEPSEEK_V4: Final[Mapping[ThinkingLevel, JSON | None]] = {
    _L.NONE: None,
    _L.LOW: {"thinking": True, "reasoning_effort": "high"},
    _L.MEDIUM: {"thinking": True, "reasoning_effort": "high"},
    _L.HIGH: {"thinking": True, "reasoning_effort": "high"},
    _L.XHIGH: {"thinking": True, "reasoning_effort": "high"},
    _L.MAX: {"thinking": True, "reasoning_effort": "max"},
}
_P3_DEEPSEEK_V4_VISION: Final[Mapping[ThinkingLevel, JSON | None]] = {
    _L.NONE: None,
    _L.LOW: {"thinking": True, "reasoning_effort": "low"},
    _L.MEDIUM: {"thinking": True, "reasoning_effort": "high"},
    _L.HIGH: {"thinking": True, "reasoning_effort": "high"},
    _L.XHIGH: {"thinking": True, "reasoning_effort": "high"},
    _L.MAX: {"thinking": True, "reasoning_effort": "max"},
}
#: First lower-cased substring match wins; no match -> the Qwen3 switch (P0).
_VLLM_PROFILES: Final = (
    ("qwen3.8-flash-next", _P1_QWEN3_8),
    ("qwen3.8-27b", _P1_QWEN3_8),
    ("qwen3.6-35b-a3b", _P0_QWEN3),
    ("qwen3.5-0.8b", _P0_QWEN3),
    ("qwen3.5-9b", _P0_QWEN3),
    ("deepseek-v4-flash-vision-exp", _P3_DEEPSEEK_V4_VISION),
    ("deepseek-v4-pro", _P2_DEEPSEEK_V4),
    ("deepseek-v4-flash", _P2_DEEPSEEK_V4),
)

#: The only GLM that reads images (05 §5).
_GLM_IMAGES: Final = "glm-5.3-flash"
#: Ids that get ``detail: "high"`` on oversized images (05 §1, §5).
_GPT_5_6: Final = "gpt-5.6"


def _first_row(key: str, rows: Sequence[tuple[str, _T]], default: _T) -> _T:
    """Return the table of the first row whose token ``key`` contains, else ``default``."""
    return next((table for token, table in rows if token in key), default)


# --------------------------------------------------------------------------------------------
# Config mapping (05 §4.3): each function returns the body fields after model and messages.
# --------------------------------------------------------------------------------------------


def _openai_chat_config(client: str, model: str, config: UniConfig) -> JSON:
    """openai-chat and the vLLM adapter (05 §4.3, §2.8).

    Raises:
        UnsupportedParameterError: ``prompt_caching`` other than ``enable``; an empty
            ``tool_choice`` list (08 D10).
    """
    check_tool_choice_list(client, config)
    _only_default_caching(client, config)
    fields = _stream_fields(include_usage=True)
    _put(fields, "max_completion_tokens", config.max_tokens)
    _put(fields, "temperature", config.temperature)
    _put_tools(fields, config)
    if isinstance(config.tool_choice, tuple):
        fields["tool_choice"] = {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "auto",
                "tools": [
                    {"type": "function", "function": {"name": n}} for n in config.tool_choice
                ],
            },
        }
    else:
        _put(fields, "tool_choice", config.tool_choice)
    if config.fast_mode:
        fields["service_tier"] = "priority"
    if client == VLLM and config.thinking_level is not None:
        profile = _first_row(model_key(model), _VLLM_PROFILES, _P0_QWEN3)
        _put(fields, "chat_template_kwargs", profile[ThinkingLevel(config.thinking_level)])
    return fields


def _zai_config(client: str, model: str, config: UniConfig) -> JSON:
    """zai-official (05 §4.3, §2.4).

    Raises:
        UnsupportedParameterError: ``tool_choice`` other than ``"auto"``, ``prompt_caching``
            other than ``enable``, ``fast_mode``.
    """
    check_tool_choice_list(client, config)
    if config.tool_choice is not None and config.tool_choice != "auto":
        raise UnsupportedParameterError(client, "tool_choice", detail="GLM accepts only 'auto'")
    _only_default_caching(client, config)
    _no_fast_mode(client, config)
    fields = _stream_fields(include_usage=False)  # GLM sends usage unasked (08 D36)
    _put(fields, "max_tokens", config.max_tokens)
    _put(fields, "temperature", config.temperature)
    _put_tools(fields, config)
    _put(fields, "tool_choice", config.tool_choice)
    if config.thinking_level is not None:
        table = _first_row(model_key(model), _ZAI_ROWS, _ZAI_EARLIER)
        thinking, effort = table[ThinkingLevel(config.thinking_level)]
        _put(fields, "reasoning_effort", effort)
        fields["thinking"] = thinking
    fields["tool_stream"] = True
    return fields


def _moonshot_config(client: str, model: str, config: UniConfig) -> JSON:
    """moonshot-official (05 §4.3, §2.5): K2 (``k2.``) or the K3 series.

    Raises:
        UnsupportedParameterError: ``temperature`` other than 1.0; ``tool_choice`` lists, or
            ``"required"`` on K2; ``prompt_caching`` ``disable`` (and ``enhance`` on K2);
            ``fast_mode``.
    """
    k2 = _KIMI_K2_TOKEN in model_key(model)
    if config.temperature is not None and config.temperature != 1.0:
        raise UnsupportedParameterError(client, "temperature", detail="Kimi accepts only 1.0")
    check_tool_choice_list(client, config)
    accepted = ("auto", "none") if k2 else ("auto", "none", "required")
    if config.tool_choice is not None and config.tool_choice not in accepted:
        raise UnsupportedParameterError(
            client, "tool_choice", detail=f"this Kimi model accepts only {', '.join(accepted)}"
        )
    caching = config.prompt_caching
    if caching == PromptCaching.DISABLE or (k2 and caching == PromptCaching.ENHANCE):
        raise UnsupportedParameterError(client, "prompt_caching", detail=f"{caching} on {model}")
    _no_fast_mode(client, config)
    fields = _stream_fields(include_usage=True)
    _put(fields, "max_completion_tokens", config.max_tokens)
    _put_tools(fields, config)
    _put(fields, "tool_choice", config.tool_choice)
    level = None if config.thinking_level is None else ThinkingLevel(config.thinking_level)
    if level is not None and not k2:
        fields["reasoning_effort"] = _KIMI_K3_EFFORT[level]
    if level is not None and k2:
        fields["thinking"] = _KIMI_K2_THINKING[level]
    if caching == PromptCaching.ENHANCE:
        fields["prompt_cache_options"] = {"mode": "implicit", "ttl": "1h"}
    if k2:
        _put(fields, "prompt_cache_key", config.trace_id)
    return fields


def _stream_fields(*, include_usage: bool) -> JSON:
    fields: JSON = {"stream": True}
    if include_usage:
        fields["stream_options"] = {"include_usage": True}
    return fields


def _put(fields: JSON, key: str, value: Any) -> None:
    if value is not None:
        fields[key] = value


def _put_tools(fields: JSON, config: UniConfig) -> None:
    if config.tools is None:
        return
    tools = []
    for tool in config.tools:
        function: JSON = {"name": tool.name, "description": tool.description}
        _put(function, "parameters", tool.parameters)
        tools.append({"type": "function", "function": function})
    fields["tools"] = tools


def _only_default_caching(client: str, config: UniConfig) -> None:
    if config.prompt_caching not in (None, PromptCaching.ENABLE):
        raise UnsupportedParameterError(
            client, "prompt_caching", detail=f"{client} accepts only 'enable'"
        )


def _no_fast_mode(client: str, config: UniConfig) -> None:
    if config.fast_mode:
        raise UnsupportedParameterError(client, "fast_mode", detail=f"{client} has no fast mode")


# --------------------------------------------------------------------------------------------
# Message conversion (05 §5)
# --------------------------------------------------------------------------------------------

#: The two spellings of the reasoning field; a message whose thinking recorded neither, or
#: both, sends both (01 §5).
_FIELDS: Final = ("reasoning_content", "reasoning")


@final
@attrs.frozen
class _Dialect:
    """What one client type does differently (see the module docstring)."""

    config: Callable[[str, str, UniConfig], JSON]
    #: Whether the model (lower-cased id) reads images.
    images: Callable[[str], bool]
    #: The GPT-5.6 ``detail: "high"`` rule (openai-chat and the vLLM adapter).
    image_detail: bool
    #: openai-chat extras: empty reasoning fields on later tool-call turns, and gateway
    #: encrypted ``reasoning_details`` replayed.
    gateway_replay: bool


def _always(key: str) -> bool:
    return True


def _glm_reads_images(key: str) -> bool:
    return _GLM_IMAGES in key


DIALECTS: Final[Mapping[str, _Dialect]] = {
    OPENAI_CHAT: _Dialect(_openai_chat_config, _always, image_detail=True, gateway_replay=True),
    VLLM: _Dialect(_openai_chat_config, _always, image_detail=True, gateway_replay=True),
    ZAI: _Dialect(_zai_config, _glm_reads_images, image_detail=False, gateway_replay=False),
    MOONSHOT: _Dialect(_moonshot_config, _always, image_detail=False, gateway_replay=False),
}


@attrs.define
class _Converter:
    """Converts one request's messages; ``replay_fields`` spans the whole conversation."""

    client: str
    dialect: _Dialect
    key: str
    replay_fields: set[str | None] = attrs.field(factory=set)

    def message(self, index: int, message: UniMessage, out: list[JSON]) -> None:
        """Append the Chat messages of one UniMessage: its tool messages, then itself.

        Raises:
            InvalidMessageError: see ``build_request``.
            UnsupportedContentError: from ``image``.
        """
        parts: list[JSON] = []
        calls: list[JSON] = []
        thinking: list[str] = []
        fields: set[str | None] = set()
        details: list[Any] = []
        tool_messages = 0
        for item in message.content_items:
            if isinstance(item, TextDone):
                parts.append({"type": "text", "text": item.text})
            elif isinstance(item, ImageUrlDone):
                parts.append(self.image(item.image_url, "image_url", index))
            elif isinstance(item, ThinkingDone):
                field = _reasoning_field(item)
                thinking.append(item.thinking)
                fields.add(field)
                if item.thinking:
                    self.replay_fields.add(field)
                if self.dialect.gateway_replay:
                    details.extend(_encrypted_details(item))
            elif isinstance(item, ToolCallDone):
                calls.append(_tool_call(item))
            elif isinstance(item, ToolResultDone):
                if not item.tool_call_id:
                    raise InvalidMessageError(
                        self.client, "tool_result", index, detail="a tool result needs its id"
                    )
                out.append(
                    {"role": "tool", "tool_call_id": item.tool_call_id, "content": item.text}
                )
                tool_messages += 1
                parts.extend(self.image(url, "tool_result", index) for url in item.images or ())
            else:
                raise InvalidMessageError(
                    self.client, item.type.partition(".")[0], index, detail="not sendable on Chat"
                )
        if not parts and not calls:
            if tool_messages:
                return
            raise InvalidMessageError(
                self.client, None, index, detail=f"message {index} has nothing Chat can send"
            )
        chat: JSON = {"role": message.role}
        if parts:
            chat["content"] = parts
        if calls:
            chat["tool_calls"] = calls
        text = "".join(thinking)
        if text:
            names = _field_names(fields)
        elif calls and self.dialect.gateway_replay and self.replay_fields:
            names = _field_names(self.replay_fields)  # DeepSeek-style servers demand it
        else:
            names = ()
        for name in names:
            chat[name] = text
        if details:
            chat["reasoning_details"] = details
        out.append(chat)

    def image(self, url: str, item_type: str, index: int) -> JSON:
        """Build an ``image_url`` part, with ``detail: "high"`` where GPT-5.6 needs it (05 §5).

        Raises:
            UnsupportedContentError: the model reads no images (``item_type`` says where the
                image was: ``"image_url"`` or ``"tool_result"``).
            InvalidMessageError: a malformed data URI that had to be measured.
        """
        if not self.dialect.images(self.key):
            raise UnsupportedContentError(
                self.client, item_type, detail="this model reads no images"
            )
        image: JSON = {"url": url}
        if self.dialect.image_detail and _GPT_5_6 in self.key:
            parsed = parse_data_uri(self.client, url, index)
            if parsed is not None and needs_high_detail(parsed[1]):
                image["detail"] = "high"
        return {"type": "image_url", "image_url": image}


def _reasoning_field(item: ThinkingDone) -> str | None:
    field = (item.fidelity or {}).get("reasoning_field")
    return field if field in _FIELDS else None


def _field_names(fields: set[str | None]) -> tuple[str, ...]:
    if len(fields) == 1 and (field := next(iter(fields))) is not None:
        return (field,)
    return _FIELDS


def _encrypted_details(item: ThinkingDone) -> list[Any]:
    """Rebuild gateway ``reasoning_details`` from a thinking item's fidelity (05 §5)."""
    fidelity = item.fidelity or {}
    blocks: list[Any] = []
    if "encrypted_content" in fidelity and "format" in fidelity:
        block: JSON = {
            "type": "reasoning.encrypted",
            "data": fidelity["encrypted_content"],
            "format": fidelity["format"],
        }
        _put(block, "id", fidelity.get("reasoning_id"))
        blocks.append(block)
    legacy = fidelity.get("reasoning_details")
    if isinstance(legacy, list | tuple):
        blocks.extend(legacy)  # 0.5.5 histories kept the wire list itself
    return blocks


def _tool_call(item: ToolCallDone) -> JSON:
    return {
        "id": item.tool_call_id,
        "type": "function",
        "function": {"name": item.name, "arguments": arguments_json(item.arguments)},
    }


# --------------------------------------------------------------------------------------------
# Entry points (adapters._spec.BuildRequest, CheckConfig)
# --------------------------------------------------------------------------------------------


def _dialect(client: str, model: str) -> _Dialect:
    try:
        return DIALECTS[client]
    except KeyError:
        raise RoutingError(model, client, detail="not a Chat Completions client type") from None


def check_config(client: str, model: str, config: UniConfig) -> None:
    """Raise what ``build_request`` would raise for ``config`` alone (08 D37).

    Raises:
        UnsupportedParameterError: a value the client cannot send for this model (05 §4.3).
        RoutingError: ``client`` is not a Chat Completions client type.
    """
    _dialect(client, model).config(client, model, config)


def build_request(
    client: str, model: str, messages: Sequence[UniMessage], config: UniConfig
) -> HTTPRequest:
    """Build the ``POST /chat/completions`` request (spec 04 §4); headers carry no key.

    The config is mapped first, then the messages (02 §8).

    Raises:
        UnsupportedParameterError: see ``check_config``.
        InvalidMessageError: an item Chat cannot carry, a tool result without its id, a
            malformed data URI measured for the GPT-5.6 rule, or a message with nothing
            sendable (``message_index``) (05 §5).
        UnsupportedContentError: an image for a model that reads none (zai except
            glm-5.3-flash), ``item_type`` ``"image_url"`` or ``"tool_result"``.
    """
    dialect = _dialect(client, model)
    fields = dialect.config(client, model, config)
    chat: list[JSON] = []
    if config.system_prompt:
        chat.append({"role": "system", "content": config.system_prompt})
    converter = _Converter(client, dialect, model_key(model))
    for index, message in enumerate(messages):
        converter.message(index, message, chat)
    body = {"model": model, "messages": chat, **fields}
    return HTTPRequest("POST", PATH, HEADERS, encode_json_body(body))
