"""Anthropic Messages requests: UniConfig and messages -> ``POST /v1/messages`` (spec 04 §4, 05).

Two client types speak this protocol: ``anthropic-official`` knows Anthropic's model
generations (05 §2.1, §4.1) and ``ant-messages`` sends whatever the caller asks for to any
Messages endpoint (05 §2.8). Config conversion runs first, then message conversion, so a
config error wins over a message error (02 §8). Every UniConfig key is either sent by an
explicit mapping below, ignored (``image_config``, ``tts_config``, ``embedding_config``,
``trace_id``, unknown keys in ``extra``), or rejected with ``UnsupportedParameterError``
before anything is sent (05 §4.1). ``thinking_level`` never raises (RFC-0003 §6.3).

Generations are told apart by explicit version tokens on the lower-cased model id, one named
row each, first match wins; family names ("claude") decide nothing (RFC-0003 §6.1, 08 D9).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from adapters._convert import check_tool_choice_list, model_key, parse_data_uri
from mmsp_core.errors import (
    InvalidMessageError,
    UnsupportedOperationError,
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

from .machine import REDACTED_THINKING

__all__ = [
    "ANTHROPIC_VERSION",
    "CLIENT_TYPES",
    "DEFAULT_MAX_TOKENS",
    "FAST_MODE_BETA",
    "GENERATIONS",
    "PATH",
    "build_request",
    "check_config",
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
#: The client types this module builds requests for.
CLIENT_TYPES: Final = ("anthropic-official", "ant-messages")

_OFFICIAL: Final = "anthropic-official"


class Thinking(NamedTuple):
    """What one thinking level sends: the ``thinking.type`` and the ``output_config.effort``."""

    type: str
    effort: str | None


_DISABLED: Final = Thinking("disabled", None)
_BETWEEN_TOOLS: Final = Thinking("between_tools", None)
_LOW: Final = Thinking("adaptive", "low")


class Generation(NamedTuple):
    """One row of 05 §2.1 and §4.1: a model generation and what it accepts."""

    #: Which models the row is for.
    name: str
    #: The version token matched on the lower-cased id (``None``: the row every other id uses).
    token: str | None
    #: What ``thinking_level: none`` sends: the off switch, or the least thinking allowed.
    none: Thinking
    #: The effort ``xhigh`` runs at.
    xhigh_effort: str
    #: Whether ``tool_choice`` ``"required"`` and lists of names are accepted.
    forced_tool_choice: bool
    #: Whether ``fast_mode`` is accepted.
    fast_mode: bool


#: anthropic-official generations, first match wins (05 §1, §2.1, §4.1). ``fable-5-1`` comes
#: before ``fable-5`` because its tool-choice and fast-mode rules differ.
GENERATIONS: Final = (
    Generation("Claude 4.6", "4-6", _DISABLED, "high", forced_tool_choice=True, fast_mode=False),
    Generation("Opus 5.5", "opus-5-5", _LOW, "xhigh", forced_tool_choice=False, fast_mode=True),
    Generation("Fable 5.1", "fable-5-1", _LOW, "xhigh", forced_tool_choice=False, fast_mode=False),
    Generation("Fable 5", "fable-5", _LOW, "xhigh", forced_tool_choice=True, fast_mode=True),
    Generation("Haiku 5.5", "haiku-5-5", _LOW, "xhigh", forced_tool_choice=False, fast_mode=False),
    Generation(
        "Sonnet 5.5",
        "sonnet-5-5",
        _BETWEEN_TOOLS,
        "xhigh",
        forced_tool_choice=False,
        fast_mode=False,
    ),
)
#: Every other anthropic-official id: Claude 4.7 and later without a token of their own
#: (Opus 4.8, Opus 5, Sonnet 5), whose off switch is ``disabled``.
_LATER: Final = Generation(
    "Claude 4.7 and later", None, _DISABLED, "xhigh", forced_tool_choice=True, fast_mode=True
)
#: ant-messages, whatever the model: the endpoint decides how a level runs (05 §2.8).
_COMPATIBLE: Final = Generation(
    "any model (ant-messages)", None, _DISABLED, "xhigh", forced_tool_choice=True, fast_mode=True
)

_EFFORTS: Final[Mapping[ThinkingLevel, str]] = {
    ThinkingLevel.LOW: "low",
    ThinkingLevel.MEDIUM: "medium",
    ThinkingLevel.HIGH: "high",
    ThinkingLevel.MAX: "max",
}
_TOOL_CHOICES: Final[Mapping[str, str]] = {"auto": "auto", "none": "none", "required": "any"}
_CACHE_CONTROL: Final[Mapping[PromptCaching, Mapping[str, str] | None]] = {
    PromptCaching.ENABLE: {"type": "ephemeral"},
    PromptCaching.ENHANCE: {"type": "ephemeral", "ttl": "1h"},
    PromptCaching.DISABLE: None,
}


def _generation(client: str, model: str) -> Generation:
    """Return the row for ``model`` on ``client``.

    Raises:
        UnsupportedOperationError: ``client`` is not an Anthropic Messages client type.
    """
    if client not in CLIENT_TYPES:
        raise UnsupportedOperationError(
            client, "build_request", detail="not an Anthropic Messages client type"
        )
    if client != _OFFICIAL:
        return _COMPATIBLE
    key = model_key(model)
    return next((row for row in GENERATIONS if row.token and row.token in key), _LATER)


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


def _cache_control(client: str, caching: PromptCaching | None) -> Mapping[str, str] | None:
    """``prompt_caching`` (05 §4.1): a top-level ``cache_control`` on anthropic-official.

    Raises:
        UnsupportedParameterError: anything but the default on ant-messages.
    """
    caching = PromptCaching(caching or PromptCaching.ENABLE)
    if client == _OFFICIAL:
        return _CACHE_CONTROL[caching]
    if caching is not PromptCaching.ENABLE:
        raise UnsupportedParameterError(
            client, "prompt_caching", detail="a compatible endpoint only takes the default"
        )
    return None


def _temperature(client: str, temperature: float | None) -> float | None:
    """``temperature`` (05 §4.1): sent by ant-messages; anthropic-official only accepts 1.0.

    Raises:
        UnsupportedParameterError: any other value on anthropic-official.
    """
    if client != _OFFICIAL or temperature is None:
        return temperature
    if temperature != 1.0:
        raise UnsupportedParameterError(
            client, "temperature", detail="Claude models only run at temperature 1.0"
        )
    return None


class _ConfigPart(NamedTuple):
    fields: dict[str, Any]
    betas: tuple[str, ...]


def _convert_config(client: str, model: str, config: UniConfig) -> _ConfigPart:
    """Return the body fields after ``model`` and ``messages``, and the betas (05 §4.1).

    Raises:
        UnsupportedParameterError: see ``check_config``.
        UnsupportedOperationError: ``client`` is not an Anthropic Messages client type.
    """
    generation = _generation(client, model)
    check_tool_choice_list(client, config)
    temperature = _temperature(client, config.temperature)
    tool_choice = None
    if config.tool_choice is not None:
        tool_choice = _tool_choice(client, generation, config.tool_choice)
    if config.fast_mode and not generation.fast_mode:
        raise UnsupportedParameterError(
            client, "fast_mode", detail="this model does not support fast mode"
        )
    cache_control = _cache_control(client, config.prompt_caching)
    block = _thinking_block(generation, config)
    tools = None
    if config.tools is not None:
        tools = [
            {"name": tool.name, "description": tool.description}
            | ({} if tool.parameters is None else {"input_schema": tool.parameters})
            for tool in config.tools
        ]
    # Key order as in 04 §4, so the same request always has the same bytes.
    optional: dict[str, Any] = {
        "system": config.system_prompt,
        "thinking": None if block is None else _thinking_json(block, config.thinking_summary),
        "output_config": None
        if block is None or block.effort is None
        else {"effort": block.effort},
        "tools": tools,
        "tool_choice": tool_choice,
        "speed": "fast" if config.fast_mode else None,
        "cache_control": cache_control,
        "temperature": temperature,
    }
    fields: dict[str, Any] = {
        "max_tokens": DEFAULT_MAX_TOKENS if config.max_tokens is None else config.max_tokens,
        "stream": True,
    }
    fields.update((key, value) for key, value in optional.items() if value is not None)
    return _ConfigPart(fields, (FAST_MODE_BETA,) if config.fast_mode else ())


def check_config(client: str, model: str, config: UniConfig) -> None:
    """Raise what ``build_request`` would raise for ``config`` alone (08 D37).

    Raises:
        UnsupportedParameterError: a config value ``client`` cannot send for ``model``.
        UnsupportedOperationError: ``client`` is not an Anthropic Messages client type.
    """
    _convert_config(client, model, config)


def _image(client: str, url: str, message_index: int) -> dict[str, Any]:
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


def _thinking_replay(client: str, item: ThinkingDone) -> dict[str, Any] | None:
    """The block a thinking item is replayed as, or ``None`` when it is left out (05 §5, 08 D30).

    A redacted block needs its data (kept as the signature) on both clients; anthropic-official
    also leaves out unsigned thinking, which ant-messages sends without a ``signature`` key.
    """
    signature = (item.fidelity or {}).get("signature")
    signed = isinstance(signature, str) and signature != ""
    if item.thinking == REDACTED_THINKING:
        return {"type": "redacted_thinking", "data": signature} if signed else None
    if signed:
        return {"type": "thinking", "thinking": item.thinking, "signature": signature}
    if client == _OFFICIAL:
        return None
    return {"type": "thinking", "thinking": item.thinking}


def _content(client: str, message: UniMessage, index: int) -> list[dict[str, Any]]:
    """The ``content`` blocks of one message, in item order (05 §5).

    Raises:
        InvalidMessageError: an item kind Anthropic cannot take (``item_type``), a tool result
            without ``tool_call_id``, a bad image, or nothing sendable (``message_index``).
    """
    blocks: list[dict[str, Any]] = []
    for item in message.content_items:
        if isinstance(item, TextDone):
            blocks.append({"type": "text", "text": item.text})
        elif isinstance(item, ImageUrlDone):
            blocks.append(_image(client, item.image_url, index))
        elif isinstance(item, ThinkingDone):
            replay = _thinking_replay(client, item)
            if replay is not None:
                blocks.append(replay)
        elif isinstance(item, ToolCallDone):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": item.tool_call_id,
                    "name": item.name,
                    "input": dict(item.arguments),
                }
            )
        elif isinstance(item, ToolResultDone):
            if not item.tool_call_id:
                raise InvalidMessageError(
                    client, "tool_result", index, detail="a tool result needs its tool_call_id"
                )
            images = [_image(client, url, index) for url in item.images or ()]
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": item.tool_call_id,
                    "content": [{"type": "text", "text": item.text}, *images],
                }
            )
        else:
            # The item kind, as spec 03 names it: "inline_data", not "inline_data.done".
            kind = str(getattr(item, "type", type(item).__name__)).partition(".")[0]
            raise InvalidMessageError(
                client, kind, index, detail="Anthropic Messages cannot take this item"
            )
    if not blocks:
        raise InvalidMessageError(client, None, index, detail="nothing sendable is left")
    return blocks


def build_request(
    client: str, model: str, messages: Sequence[UniMessage], config: UniConfig
) -> HTTPRequest:
    """Build ``POST /v1/messages`` for ``client`` (04 §4, 05 §4.1, §5).

    The model id is sent exactly as given (08 D9). Headers carry no credentials
    (``adapters.auth_headers`` adds them).

    Raises:
        UnsupportedParameterError: see ``check_config``; raised before any message error.
        InvalidMessageError: a message that cannot be sent (see ``_content``).
        UnsupportedOperationError: ``client`` is not an Anthropic Messages client type.
    """
    config_part = _convert_config(client, model, config)
    wire_messages = [
        {"role": message.role, "content": _content(client, message, index)}
        for index, message in enumerate(messages)
    ]
    body = {"model": model, "messages": wire_messages, **config_part.fields}
    headers = [
        ("content-type", "application/json"),
        ("accept", "text/event-stream"),
        ("anthropic-version", ANTHROPIC_VERSION),
    ]
    if config_part.betas:
        headers.append(("anthropic-beta", ",".join(config_part.betas)))
    return HTTPRequest("POST", PATH, tuple(headers), encode_json_body(body))
