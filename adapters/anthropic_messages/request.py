"""Anthropic Messages requests: UniConfig and messages -> ``POST /v1/messages`` (spec 04 §4, 05).

One builder serves every client of this protocol; what differs between them (the model
generations a client knows, the temperature rule, prompt caching, fast mode, replaying unsigned
thinking) is the client's ``AnthropicProfile`` (``profiles``): anthropic-official knows
Anthropic's model generations (05 §2.1, §4.1), ant-messages sends whatever the caller asks for
to any Messages endpoint (05 §2.8). ``message_body`` is the body both this request and
Bedrock's (``bedrock``, 08 D72) are built from. Config conversion runs first, then message
conversion, so a config error wins over a message error (02 §8). Every UniConfig key is
either sent by an explicit mapping below, ignored (``image_config``, ``tts_config``,
``embedding_config``, ``trace_id``, unknown keys in ``extra``), or rejected with
``UnsupportedParameterError`` before anything is sent (05 §4.1). ``thinking_level`` never
raises (RFC-0003 §6.3).

Messages are converted by ``adapters._build.walk_messages`` with ``_CONVERTERS``, one
converter per item class Anthropic can take (05 §5).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple, TypeAlias, cast

from adapters._build import Converters, MessageContext, walk_messages
from adapters._convert import check_tool_choice_list, model_key, parse_data_uri
from adapters._sampling import check_sampling, top_p_to_send
from mmsp_core.errors import (
    InvalidMessageError,
    UnsupportedOperationError,
    UnsupportedParameterError,
)
from mmsp_core.model import (
    ImageUrlDone,
    Item,
    PromptCaching,
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

from .machine import REDACTED_THINKING
from .profiles import AnthropicProfile, CacheControl, Generation, Thinking

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_MAX_TOKENS",
    "FAST_MODE_BETA",
    "PATH",
    "MessageBody",
    "build_request",
    "check_config",
    "message_body",
]

#: The ``anthropic-version`` header: the value the Anthropic Python SDK pinned by the
#: reference (2.14, used by mmsp 0.5.6) sends (spec 00 §9, 04 §4; the classic public value is
#: ``2023-06-01``). A caller's ``default_headers`` can override it (08 D12).
ANTHROPIC_VERSION: Final = "2026-10-21"
#: The beta that fast mode needs, sent in the ``anthropic-beta`` header (05 §4.1).
FAST_MODE_BETA: Final = "fast-mode-2026-02-01"
#: ``max_tokens`` when the config leaves it unset; the API requires one (05 §1 rule 6).
DEFAULT_MAX_TOKENS: Final = 64000
#: Relative to the base URL; no query string (04 §4).
PATH: Final = "/v1/messages"
#: What ``walk_messages`` names in the error for an item kind this protocol cannot take.
_PROTOCOL_LABEL: Final = "Anthropic Messages"

_EFFORTS: Final[Mapping[ThinkingLevel, str]] = {
    ThinkingLevel.LOW: "low",
    ThinkingLevel.MEDIUM: "medium",
    ThinkingLevel.HIGH: "high",
    ThinkingLevel.MAX: "max",
}
_TOOL_CHOICES: Final[Mapping[str, str]] = {"auto": "auto", "none": "none", "required": "any"}
#: ``prompt_caching`` -> the ``cache_control`` object, where the profile puts it (05 §4.1).
_CACHE_CONTROL: Final[Mapping[CacheControl, Mapping[PromptCaching, Mapping[str, str] | None]]] = {
    CacheControl.TOP_LEVEL: {
        PromptCaching.ENABLE: {"type": "ephemeral"},
        PromptCaching.ENHANCE: {"type": "ephemeral", "ttl": "1h"},
        PromptCaching.DISABLE: None,
    },
    CacheControl.LAST_USER_BLOCK: {
        PromptCaching.ENABLE: {"type": "ephemeral", "ttl": "5m"},
        PromptCaching.ENHANCE: {"type": "ephemeral", "ttl": "1h"},
        PromptCaching.DISABLE: None,
    },
}


def _profile(client: str, profile: object) -> AnthropicProfile:
    """Return ``profile``, which must be an Anthropic Messages client's.

    Raises:
        UnsupportedOperationError: ``client`` is not an Anthropic Messages client type.
    """
    if not isinstance(profile, AnthropicProfile):
        raise UnsupportedOperationError(
            client, "build_request", detail="not an Anthropic Messages client type"
        )
    return profile


def _generation(profile: AnthropicProfile, model: str) -> Generation:
    """Return the client's generation row for ``model``: the first whose version token is in
    the lower-cased id, else ``other_models`` (05 §2.1, 08 D9)."""
    key = model_key(model)
    return next(
        (row for row in profile.generations if row.token is not None and row.token in key),
        profile.other_models,
    )


def _thinking(generation: Generation, level: ThinkingLevel) -> Thinking:
    """Map a level through the generation's row (05 §2.1, §2.8); never raises for a level."""
    level = ThinkingLevel(level)
    if level is ThinkingLevel.NONE:
        return generation.none
    if level is ThinkingLevel.XHIGH:
        return Thinking("adaptive", generation.xhigh_effort)
    return Thinking("adaptive", _EFFORTS[level])


def _tool_choice(client: str, generation: Generation, choice: str | tuple[str, ...]) -> Any:
    """``tool_choice`` per 05 §4.1 and 08 D10.

    Raises:
        UnsupportedParameterError: an empty list or more than one name, an unknown string, or
            a forced choice on a generation that refuses one.
    """
    forced = choice == "required" or isinstance(choice, tuple)
    if forced and not generation.forced_tool_choice:
        raise UnsupportedParameterError(
            client, "tool_choice", detail="this model cannot be forced to call a tool"
        )
    if isinstance(choice, tuple):
        if len(choice) != 1:
            raise UnsupportedParameterError(
                client, "tool_choice", detail="Anthropic accepts one tool name, not a list"
            )
        return {"type": "tool", "name": choice[0]}
    if choice not in _TOOL_CHOICES:
        raise UnsupportedParameterError(client, "tool_choice", detail=f"unknown value {choice!r}")
    return {"type": _TOOL_CHOICES[choice]}


def _thinking_block(generation: Generation, config: UniConfig) -> Thinking | None:
    """``thinking_level`` (05 §2.1, §2.8), then ``thinking_summary`` (05 §3, 08 D11)."""
    if config.thinking_level is not None:
        return _thinking(generation, config.thinking_level)
    if config.thinking_summary is not None:
        # A summary asked for on its own selects adaptive thinking at the model's default.
        return Thinking("adaptive", None)
    return None


def _thinking_json(block: Thinking, summary: bool | None) -> dict[str, str]:
    """The ``thinking`` object; a disabled or between_tools block takes no display (08 D11)."""
    thinking = {"type": block.type}
    if summary is not None and block.type == "adaptive":
        thinking["display"] = "summarized" if summary else "omitted"
    return thinking


def _cache_control(
    client: str, profile: AnthropicProfile, caching: PromptCaching | None
) -> Mapping[str, str] | None:
    """``prompt_caching`` (05 §4.1): the ``cache_control`` object, which goes where the
    profile's ``cache_control`` says; ``None`` when nothing is sent.

    Raises:
        UnsupportedParameterError: anything but the default on a client that sends none
            (ant-messages).
    """
    caching = PromptCaching(caching or PromptCaching.ENABLE)
    if profile.cache_control is not CacheControl.DEFAULT_ONLY:
        return _CACHE_CONTROL[profile.cache_control][caching]
    if caching is not PromptCaching.ENABLE:
        raise UnsupportedParameterError(
            client, "prompt_caching", detail="a compatible endpoint only takes the default"
        )
    return None


def _temperature(client: str, profile: AnthropicProfile, temperature: float | None) -> float | None:
    """``temperature`` (05 §4.1): sent as given, unless the profile fixes it at 1.0
    (anthropic-official), which is then accepted and not sent.

    Raises:
        UnsupportedParameterError: any other value where the temperature is fixed.
    """
    if not profile.temperature_fixed or temperature is None:
        return temperature
    if temperature != 1.0:
        raise UnsupportedParameterError(
            client, "temperature", detail="Claude models only run at temperature 1.0"
        )
    return None


def _output_config(
    block: Thinking | None, asked: ResponseFormat | None
) -> dict[str, Any] | None:
    """``output_config``: the thinking level's ``effort`` and the ``format`` of structured
    output (``{"type": "json_schema", "schema"}``, Anthropic's "Structured outputs"); ``None``
    when neither is sent."""
    output: dict[str, Any] = {}
    if block is not None and block.effort is not None:
        output["effort"] = block.effort
    if asked is not None:
        output["format"] = {"type": "json_schema", "schema": asked.schema}
    return output or None


class _ConfigPart(NamedTuple):
    fields: dict[str, Any]
    betas: tuple[str, ...]
    #: The ``cache_control`` of the last user message's last block (Bedrock), if any.
    block_cache_control: Mapping[str, str] | None


def _convert_config(
    client: str, profile: AnthropicProfile, model: str, config: UniConfig
) -> _ConfigPart:
    """Return the body fields after ``model`` and ``messages``, and the betas (05 §4.1).

    Raises:
        UnsupportedParameterError: see ``check_config``.
    """
    generation = _generation(profile, model)
    check_tool_choice_list(client, config)
    temperature = _temperature(client, profile, config.temperature)
    tool_choice = None
    if config.tool_choice is not None:
        tool_choice = _tool_choice(client, generation, config.tool_choice)
    if config.fast_mode and not (profile.fast_mode and generation.fast_mode):
        detail = "this model" if profile.fast_mode else "this endpoint"
        raise UnsupportedParameterError(
            client, "fast_mode", detail=f"{detail} does not support fast mode"
        )
    cache_control = _cache_control(client, profile, config.prompt_caching)
    top_level = profile.cache_control is CacheControl.TOP_LEVEL
    block = _thinking_block(generation, config)
    tools = None
    if config.tools is not None:
        tools = [
            {"name": tool.name, "description": tool.description}
            | ({} if tool.parameters is None else {"input_schema": tool.parameters})
            for tool in config.tools
        ]
    check_sampling(client, config, profile.sampling)
    # Key order as in 04 §4, so the same request always has the same bytes.
    optional: dict[str, Any] = {
        "system": config.system_prompt,
        "thinking": None if block is None else _thinking_json(block, config.thinking_summary),
        "output_config": _output_config(block, config.response_format),
        "tools": tools,
        "tool_choice": tool_choice,
        "speed": "fast" if config.fast_mode else None,
        "cache_control": cache_control if top_level else None,
        "temperature": temperature,
        "top_p": top_p_to_send(config, profile.sampling),
        "stop_sequences": None if config.stop_sequences is None else list(config.stop_sequences),
    }
    fields: dict[str, Any] = {
        "max_tokens": DEFAULT_MAX_TOKENS if config.max_tokens is None else config.max_tokens,
        "stream": True,
    }
    fields.update((key, value) for key, value in optional.items() if value is not None)
    betas = (FAST_MODE_BETA,) if config.fast_mode else ()
    return _ConfigPart(fields, betas, None if top_level else cache_control)


def check_config(
    client: str, profile: AnthropicProfile, model: str, config: UniConfig
) -> None:
    """Raise what ``build_request`` would raise for ``config`` alone (08 D37).

    Raises:
        UnsupportedParameterError: a config value ``client`` cannot send for ``model``.
        UnsupportedOperationError: ``profile`` is not an Anthropic Messages client's.
    """
    _convert_config(client, _profile(client, profile), model, config)


# --------------------------------------------------------------------------------------------
# Message conversion (05 §5): one converter per item class, run by ``walk_messages``.
# --------------------------------------------------------------------------------------------

#: One block of a message's ``content``.
_Block: TypeAlias = dict[str, Any]


def _image(client: str, url: str, message_index: int) -> _Block:
    """An ``image`` block: a data URI as a base64 source, an http(s) URL as a url source (05 §5).

    Raises:
        InvalidMessageError: a malformed data URI, or a URL that is neither
            (``item_type="image_url"``, spec 03 §2).
    """
    parsed = parse_data_uri(client, url, message_index)
    if parsed is not None:
        mime, data = parsed
        source = {"type": "base64", "media_type": mime, "data": base64.b64encode(data).decode()}
        return {"type": "image", "source": source}
    if not url.startswith(("http://", "https://")):
        raise InvalidMessageError(
            client, "image_url", message_index, detail="an image must be an http(s) URL or data URI"
        )
    return {"type": "image", "source": {"type": "url", "url": url}}


# ``walk_messages`` picks a converter by the item's exact class, so each ``cast`` below only
# names the class its table key guarantees.


def _text(context: MessageContext, item: Item) -> _Block:
    return {"type": "text", "text": cast(TextDone, item).text}


def _image_url(context: MessageContext, item: Item) -> _Block:
    """Raises ``InvalidMessageError`` for a bad image (see ``_image``)."""
    return _image(context.client, cast(ImageUrlDone, item).image_url, context.index)


def _thinking_replay(item: ThinkingDone, *, unsigned_too: bool) -> _Block | None:
    """The block a thinking item is replayed as, or ``None`` when it is left out (05 §5, 08 D30).

    A redacted block needs its data (kept as the signature) on every client; thinking without
    a signature is sent without a ``signature`` key when ``unsigned_too``, else left out.
    """
    signature = (item.fidelity or {}).get("signature")
    signed = isinstance(signature, str) and signature != ""
    if item.thinking == REDACTED_THINKING:
        return {"type": "redacted_thinking", "data": signature} if signed else None
    if signed:
        return {"type": "thinking", "thinking": item.thinking, "signature": signature}
    if not unsigned_too:
        return None
    return {"type": "thinking", "thinking": item.thinking}


def _signed_thinking(context: MessageContext, item: Item) -> _Block | None:
    return _thinking_replay(cast(ThinkingDone, item), unsigned_too=False)


def _any_thinking(context: MessageContext, item: Item) -> _Block | None:
    return _thinking_replay(cast(ThinkingDone, item), unsigned_too=True)


def _tool_use(context: MessageContext, item: Item) -> _Block:
    call = cast(ToolCallDone, item)
    return {
        "type": "tool_use",
        "id": call.tool_call_id,
        "name": call.name,
        "input": dict(call.arguments),
    }


def _tool_result(context: MessageContext, item: Item) -> _Block:
    """Raises ``InvalidMessageError``: no ``tool_call_id``, or a bad image (see ``_image``)."""
    result = cast(ToolResultDone, item)
    if not result.tool_call_id:
        raise InvalidMessageError(
            context.client,
            "tool_result",
            context.index,
            detail="a tool result needs its tool_call_id",
        )
    images = [_image(context.client, url, context.index) for url in result.images or ()]
    return {
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": [{"type": "text", "text": result.text}, *images],
    }


#: Item class -> content block, for a client that leaves unsigned thinking out
#: (``replays_unsigned_thinking`` false). Every other item kind (``inline_data``,
#: ``inline_thinking``, ``embedding``) is ``InvalidMessageError`` (05 §5).
_CONVERTERS: Final[Converters[_Block]] = {
    TextDone: _text,
    ImageUrlDone: _image_url,
    ThinkingDone: _signed_thinking,
    ToolCallDone: _tool_use,
    ToolResultDone: _tool_result,
}
#: The same for a client that replays unsigned thinking without a ``signature`` key.
_CONVERTERS_REPLAYING_UNSIGNED: Final[Converters[_Block]] = {
    **_CONVERTERS,
    ThinkingDone: _any_thinking,
}


class MessageBody(NamedTuple):
    """A Messages request body (in the key order of 04 §4) and the betas it needs."""

    body: dict[str, Any]
    betas: tuple[str, ...]


def message_body(
    client: str,
    profile: AnthropicProfile,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> MessageBody:
    """Build the Messages body of ``client`` and its betas (04 §4, 05 §4.1, §5); a
    ``cache_control`` the profile puts on a block goes on the last block of the last user
    message (05 §4.1: Bedrock).

    Raises:
        UnsupportedParameterError: see ``check_config``; raised before any message error.
        InvalidMessageError: an item kind Anthropic cannot take (``item_type``), a tool result
            without ``tool_call_id``, a bad image, or a message with nothing to send but
            thinking, signed or not (``message_index``, 08 D67).
        UnsupportedOperationError: ``profile`` is not an Anthropic Messages client's.
    """
    anthropic = _profile(client, profile)
    config_part = _convert_config(client, anthropic, model, config)
    converters = (
        _CONVERTERS_REPLAYING_UNSIGNED if anthropic.replays_unsigned_thinking else _CONVERTERS
    )
    walked = walk_messages(client, messages, converters, protocol_label=_PROTOCOL_LABEL)
    wire_messages = [{"role": each.message.role, "content": each.parts} for each in walked]
    if config_part.block_cache_control is not None:
        _mark_last_user_block(wire_messages, config_part.block_cache_control)
    body = {"model": model, "messages": wire_messages, **config_part.fields}
    return MessageBody(body, config_part.betas)


def _mark_last_user_block(
    wire_messages: list[dict[str, Any]], cache_control: Mapping[str, str]
) -> None:
    """Put ``cache_control`` on the last content block of the last user message, if any."""
    for message in reversed(wire_messages):
        if message["role"] == "user" and message["content"]:
            last = message["content"][-1]
            message["content"][-1] = {**last, "cache_control": dict(cache_control)}
            return


def build_request(
    client: str,
    profile: AnthropicProfile,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    """Build ``POST /v1/messages`` for ``client`` (04 §4, 05 §4.1, §5).

    The model id is sent exactly as given (08 D9). Headers carry no credentials
    (``adapters.auth_headers`` adds them).

    Raises:
        UnsupportedParameterError, InvalidMessageError, UnsupportedOperationError: as
            ``message_body``.
    """
    built = message_body(client, profile, model, messages, config)
    headers = [
        ("content-type", "application/json"),
        ("accept", "text/event-stream"),
        ("anthropic-version", ANTHROPIC_VERSION),
    ]
    if built.betas:
        headers.append(("anthropic-beta", ",".join(built.betas)))
    return HTTPRequest("POST", PATH, tuple(headers), encode_json_body(built.body))
