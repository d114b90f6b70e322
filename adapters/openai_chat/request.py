"""Chat Completions requests: config mapping and message conversion (spec 04 §4, 05 §2, §4.3, §5).

Every Chat client type builds its body the same way; what differs is data of its
``ChatProfile`` (``profiles.py``): the body field names, what the endpoint refuses, and per
generation of models (rows matched on the lower-cased id, first match wins; the id is sent
exactly as given, 05 §1, 08 D9) how a thinking level is sent. ``thinking_level`` never
raises.

The config is mapped first, so its errors come first (02 §8), then the messages are walked
with ``adapters._build.walk_messages`` and this module's converters, and the converted pieces
are assembled into Chat messages: each tool result becomes its own ``tool`` message before
the message that carries it, whose content gets the result's images; thinking is not a
content part but the message's ``reasoning_content``/``reasoning`` field (05 §5).

The builder is pure and never fetches (08 D37): for clients whose row inlines remote images
the I/O layer replaces http(s) image URLs with data URIs before calling it. A URL that still
arrives here is sent as a URL, unmeasured. Every data URI is decoded (``parse_data_uri``), so a
malformed one raises ``InvalidMessageError(item_type="image_url")`` on every model, as on the
other protocols; its size is only read where the GPT-5.6 ``detail`` rule applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, final

import attrs

from adapters._build import Converters, MessageContext, WalkedMessage, walk_messages
from adapters._convert import arguments_json, check_tool_choice_list, model_key, parse_data_uri
from adapters._media import needs_high_detail
from adapters._sampling import check_sampling, top_p_to_send
from mmsp_core.errors import (
    InvalidMessageError,
    RoutingError,
    UnsupportedContentError,
    UnsupportedParameterError,
)
from mmsp_core.model import (
    ImageUrlDone,
    Item,
    ResponseFormat,
    TextDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    UniConfig,
    UniMessage,
)
from mmsp_core.request import HTTPRequest, encode_json_body

from .profiles import ChatGeneration, ChatProfile

__all__ = ["HEADERS", "PATH", "build_request", "check_config"]

PATH: Final = "/chat/completions"
HEADERS: Final = (("content-type", "application/json"), ("accept", "text/event-stream"))
PROTOCOL_LABEL: Final = "Chat Completions"

JSON = dict[str, Any]

# --------------------------------------------------------------------------------------------
# Config mapping (05 §4.3)
# --------------------------------------------------------------------------------------------


def _check(
    client: str, profile: ChatProfile, model: str, generation: ChatGeneration, config: UniConfig
) -> None:
    """Refuse what the profile says the endpoint refuses, in the order of 05 §4.3.

    Raises:
        UnsupportedParameterError: a ``temperature`` other than the only one accepted; an
            empty ``tool_choice`` list (08 D10) or a tool choice the generation refuses; a
            ``prompt_caching`` value it refuses; ``fast_mode`` without a fast mode.
    """
    only = profile.only_temperature
    if only is not None and config.temperature is not None and config.temperature != only:
        detail = profile.temperature_detail.format(client=client, temperature=only)
        raise UnsupportedParameterError(client, "temperature", detail=detail)
    check_tool_choice_list(client, config)
    accepted = generation.tool_choices
    choice = config.tool_choice
    if accepted is not None and choice is not None and choice not in accepted:
        detail = profile.tool_choice_detail.format(client=client, accepted=", ".join(accepted))
        raise UnsupportedParameterError(client, "tool_choice", detail=detail)
    caching = config.prompt_caching
    if caching is not None and caching not in generation.caching:
        detail = profile.caching_detail.format(client=client, model=model, caching=caching)
        raise UnsupportedParameterError(client, "prompt_caching", detail=detail)
    if config.fast_mode and profile.fast_mode is None:
        raise UnsupportedParameterError(client, "fast_mode", detail=f"{client} has no fast mode")
    check_sampling(client, config, profile.sampling)


def _config_fields(client: str, profile: ChatProfile, model: str, config: UniConfig) -> JSON:
    """Return the body fields after ``model`` and ``messages`` (05 §4.3, §2).

    Raises:
        UnsupportedParameterError: see ``_check``.
    """
    generation = profile.generation(model_key(model))
    _check(client, profile, model, generation, config)
    fields: JSON = {"stream": True}
    if profile.include_usage:
        fields["stream_options"] = {"include_usage": True}
    _put(fields, profile.max_tokens_field, config.max_tokens)
    if profile.only_temperature is None:
        _put(fields, "temperature", config.temperature)
    _put(fields, "top_p", top_p_to_send(config, profile.sampling))
    _put(fields, "stop", None if config.stop_sequences is None else list(config.stop_sequences))
    _put(fields, "seed", config.seed)
    _put(fields, "response_format", _response_format(config.response_format))
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
    if config.fast_mode and profile.fast_mode is not None:
        fields.update(profile.fast_mode)
    if config.thinking_level is not None and generation.thinking is not None:
        fields.update(generation.thinking[ThinkingLevel(config.thinking_level)])
    if config.prompt_caching is not None:
        fields.update(generation.caching[config.prompt_caching])
    if generation.trace_id_as_cache_key:
        _put(fields, "prompt_cache_key", config.trace_id)
    if profile.tool_stream:
        fields["tool_stream"] = True
    return fields


def _response_format(asked: ResponseFormat | None) -> JSON | None:
    """Chat's ``response_format`` (OpenAI's Chat Completions reference): ``{"type":
    "json_schema", "json_schema": {name, schema, strict}}`` or ``{"type": "json_object"}``."""
    if asked is None:
        return None
    if asked.type == "json_object":
        return {"type": "json_object"}
    return {
        "type": "json_schema",
        "json_schema": {"name": asked.name, "schema": asked.schema, "strict": asked.strict},
    }


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


# --------------------------------------------------------------------------------------------
# Message conversion (05 §5)
# --------------------------------------------------------------------------------------------

#: The two spellings of the reasoning field; a message whose thinking recorded neither, or
#: both, sends both (01 §5).
_FIELDS: Final = ("reasoning_content", "reasoning")


@final
@attrs.frozen
class _Piece:
    """What one item adds to its Chat message."""

    #: Content parts (text, image_url), in order.
    content: tuple[JSON, ...] = ()
    tool_call: JSON | None = None
    #: A ``tool`` message, sent before the message that carries the result.
    tool_message: JSON | None = None


@final
@attrs.frozen
class _Images:
    """How one request sends images: the model's generation and the GPT-5.6 rule."""

    client: str
    #: The model reads images.
    readable: bool
    #: The GPT-5.6 ``detail: "high"`` rule applies to this model (05 §5).
    measured: bool

    def part(self, url: str, item_type: str, index: int) -> JSON:
        """Build an ``image_url`` part, with ``detail: "high"`` where the rule needs it.

        Raises:
            UnsupportedContentError: the model reads no images (``item_type`` says where the
                image was: ``"image_url"`` or ``"tool_result"``).
            InvalidMessageError: a malformed data URI (``item_type="image_url"``).
        """
        if not self.readable:
            raise UnsupportedContentError(
                self.client, item_type, detail="this model reads no images"
            )
        image: JSON = {"url": url}
        parsed = parse_data_uri(self.client, url, index)
        if self.measured and parsed is not None and needs_high_detail(parsed[1]):
            image["detail"] = "high"
        return {"type": "image_url", "image_url": image}

    def image_url(self, context: MessageContext, item: Item) -> _Piece:
        assert isinstance(item, ImageUrlDone)
        return _Piece(content=(self.part(item.image_url, "image_url", context.index),))

    def tool_result(self, context: MessageContext, item: Item) -> _Piece:
        """A ``tool`` message, and the result's images for the carrying message.

        Raises:
            InvalidMessageError: the result has no ``tool_call_id`` (05 §5).
        """
        assert isinstance(item, ToolResultDone)
        if not item.tool_call_id:
            raise InvalidMessageError(
                context.client, "tool_result", context.index, detail="a tool result needs its id"
            )
        images = tuple(self.part(url, "tool_result", context.index) for url in item.images or ())
        message = {"role": "tool", "tool_call_id": item.tool_call_id, "content": item.text}
        return _Piece(content=images, tool_message=message)


def _text(context: MessageContext, item: Item) -> _Piece:
    assert isinstance(item, TextDone)
    return _Piece(content=({"type": "text", "text": item.text},))


def _tool_call(context: MessageContext, item: Item) -> _Piece:
    assert isinstance(item, ToolCallDone)
    return _Piece(
        tool_call={
            "id": item.tool_call_id,
            "type": "function",
            "function": {"name": item.name, "arguments": arguments_json(item.arguments)},
        }
    )


def _reasoning_field_item(context: MessageContext, item: Item) -> None:
    """Thinking is no content part: ``_Assembler`` writes it into the message's fields."""
    return None


def _converters(images: _Images) -> Converters[_Piece]:
    return {
        TextDone: _text,
        ImageUrlDone: images.image_url,
        ThinkingDone: _reasoning_field_item,
        ToolCallDone: _tool_call,
        ToolResultDone: images.tool_result,
    }


@attrs.define
class _Assembler:
    """Turns walked messages into Chat messages; ``replay_fields`` spans the conversation."""

    profile: ChatProfile
    replay_fields: set[str | None] = attrs.field(factory=set)

    def message(self, walked: WalkedMessage[_Piece], out: list[JSON]) -> None:
        """Append the Chat messages of one walked message: its tool messages, then itself
        (none when it carried only tool results)."""
        content: list[JSON] = []
        calls: list[JSON] = []
        for piece in walked.parts:
            if piece.tool_message is not None:
                out.append(piece.tool_message)
            content.extend(piece.content)
            if piece.tool_call is not None:
                calls.append(piece.tool_call)
        thinking: list[str] = []
        fields: set[str | None] = set()
        details: list[Any] = []
        for item in walked.message.content_items:
            if isinstance(item, ThinkingDone):
                field = _reasoning_field(item)
                thinking.append(item.thinking)
                fields.add(field)
                if item.thinking:
                    self.replay_fields.add(field)
                if self.profile.replays_reasoning_details:
                    details.extend(_encrypted_details(item))
        if not content and not calls:
            return
        chat: JSON = {"role": walked.message.role}
        if content:
            chat["content"] = content
        if calls:
            chat["tool_calls"] = calls
        text = "".join(thinking)
        if text:
            names = _field_names(fields)
        elif calls and self.profile.empty_reasoning_on_tool_turns and self.replay_fields:
            names = _field_names(self.replay_fields)  # DeepSeek-style servers demand it
        else:
            names = ()
        for name in names:
            chat[name] = text
        if details:
            chat["reasoning_details"] = details
        out.append(chat)


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


# --------------------------------------------------------------------------------------------
# Entry points (adapters._spec.BuildRequest, CheckConfig)
# --------------------------------------------------------------------------------------------


def _chat_profile(client: str, profile: object, model: str) -> ChatProfile:
    """The client row's profile.

    Raises:
        RoutingError: the row has no ``ChatProfile``, so it is no Chat Completions client.
    """
    if not isinstance(profile, ChatProfile):
        raise RoutingError(model, client, detail="not a Chat Completions client type")
    return profile


def check_config(client: str, profile: ChatProfile, model: str, config: UniConfig) -> None:
    """Raise what ``build_request`` would raise for ``config`` alone (08 D37).

    Raises:
        UnsupportedParameterError: a value the client cannot send for this model (05 §4.3).
        RoutingError: the client row has no ``ChatProfile``.
    """
    _config_fields(client, _chat_profile(client, profile, model), model, config)


def build_request(
    client: str,
    profile: ChatProfile,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    """Build the ``POST /chat/completions`` request (spec 04 §4); headers carry no key.

    The config is mapped first, then the messages (02 §8).

    Raises:
        UnsupportedParameterError: see ``check_config``.
        RoutingError: the client row has no ``ChatProfile``.
        InvalidMessageError: an item Chat cannot carry (``item_type``), a tool result without
            its id, a malformed data URI measured for the GPT-5.6 rule, or a message with
            nothing sendable (``message_index``, only thinking: 08 D67) (05 §5).
        UnsupportedContentError: an image for a model that reads none (its generation says
            so), ``item_type`` ``"image_url"`` or ``"tool_result"``.
    """
    chat_profile = _chat_profile(client, profile, model)
    fields = _config_fields(client, chat_profile, model, config)
    key = model_key(model)
    token = chat_profile.high_detail_token
    images = _Images(
        client,
        readable=chat_profile.generation(key).images,
        measured=token is not None and token in key,
    )
    walked = walk_messages(client, messages, _converters(images), protocol_label=PROTOCOL_LABEL)
    chat: list[JSON] = []
    if config.system_prompt:
        chat.append({"role": "system", "content": config.system_prompt})
    assembler = _Assembler(chat_profile)
    for message in walked:
        assembler.message(message, chat)
    body = {"model": model, "messages": chat, **fields}
    return HTTPRequest("POST", PATH, HEADERS, encode_json_body(body))
