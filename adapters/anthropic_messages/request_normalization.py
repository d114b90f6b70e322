"""What ``reader.read_request`` gives back of the body a client's builder sent: the
normalisation under which the Messages front door's reader is the inverse of
``request.build_request`` (``read(build(x)) == normalize_request(x)``, 08 D73)."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from adapters._convert import parse_data_uri
from adapters._sampling import top_p_to_send
from mmsp_core.model import (
    DoneItem,
    ImageUrlDone,
    PromptCaching,
    ResponseFormat,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniMessage,
)

from .machine import REDACTED_THINKING
from .profiles import AnthropicProfile, CacheControl
from .reader import _EFFORTS, FORMAT_NAME, SOURCE, _thinking_level
from .request import DEFAULT_MAX_TOKENS, _generation, _thinking_block

__all__ = ["normalize_request"]


def _json_copy(value: Any) -> Any:
    """``value`` as it comes back from JSON (tuples become lists)."""
    return json.loads(json.dumps(value))


def _canonical_url(url: str) -> str:
    """An image URL as the builder sends it and the reader reads it back: a ``data:`` URI
    with its payload base64-encoded anew, any other URL as it is."""
    parsed = parse_data_uri(SOURCE, url, 0)
    if parsed is None:
        return url
    mime, data = parsed
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def _carried(profile: AnthropicProfile, item: DoneItem) -> DoneItem | None:
    """What comes back of ``item`` sent by a client of ``profile`` (05 §5), ``None`` when it
    is left out."""
    if isinstance(item, TextDone):
        return TextDone(item.text)
    if isinstance(item, ImageUrlDone):
        return ImageUrlDone(_canonical_url(item.image_url))
    if isinstance(item, ToolCallDone):
        return ToolCallDone(item.name, item.tool_call_id, _json_copy(item.arguments))
    if isinstance(item, ToolResultDone):
        images = tuple(_canonical_url(url) for url in item.images or ())
        return ToolResultDone(item.text, item.tool_call_id, images or None)
    if isinstance(item, ThinkingDone):
        signature = (item.fidelity or {}).get("signature")
        if isinstance(signature, str) and signature:
            return ThinkingDone(item.thinking, {"signature": signature})
        if profile.replays_unsigned_thinking and item.thinking != REDACTED_THINKING:
            return ThinkingDone(item.thinking)
    return None


def normalize_request(
    profile: AnthropicProfile,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> tuple[tuple[UniMessage, ...], UniConfig]:
    """The messages and config ``read_request`` gives back of the body a client of
    ``profile`` builds for them (``read(build(x)) == normalize_request(x)``, 08 D73), for a
    call the builder takes. What the Messages API cannot carry, and the defaults the builder
    writes:

    - messages keep their role and items only (no usage, finish reason or timestamp); text and
      tool calls lose their fidelity, tool-call arguments and schemas come back as JSON
      (tuples become lists), a ``data:`` URI comes back with its payload encoded anew, a tool
      result without images has ``None``; thinking keeps a non-empty signature only; unsigned
      thinking is left out (anthropic-official) or comes back without fidelity
      (ant-messages), unsigned ``"_REDACTED_THINKING"`` is left out on both (05 §5);
    - ``max_tokens`` unset is ``DEFAULT_MAX_TOKENS``; a temperature or ``top_p`` the client
      fixes (1.0, not sent) is unset; ``seed`` is never sent; ``response_format`` is
      ``json_schema`` named ``FORMAT_NAME``, enforced (Anthropic's format has neither a name
      nor a ``strict``);
    - ``thinking_level`` is the level the model's generation row sends for it, read back
      (05 §2.1: Claude 4.6 runs ``xhigh`` at high, always-thinking models run ``none`` at
      low), a summary asked for alone is adaptive thinking, read as ``medium`` (08 D73);
      ``thinking_summary`` survives only on adaptive thinking (05 §3);
    - ``prompt_caching``: ``disable`` sends nothing and comes back unset; on a client that
      sends ``cache_control`` unset is ``enable``; on one that sends none (ant-messages)
      everything is unset;
    - ``fast_mode`` false is unset; ``image_config``, ``tts_config``, ``embedding_config``,
      ``trace_id``, ``extra_body`` and ``extra`` are not sent.
    """
    carried = tuple(
        UniMessage(
            message.role,
            tuple(
                kept
                for item in message.content_items
                if (kept := _carried(profile, item)) is not None
            ),
        )
        for message in messages
    )
    return carried, _normal_config(profile, model, config)


def _normal_config(profile: AnthropicProfile, model: str, config: UniConfig) -> UniConfig:
    """The config half of ``normalize_request``."""
    block = _thinking_block(_generation(profile, model), config)
    level = None
    if block is not None:
        effort = None if block.effort is None else _EFFORTS[block.effort]
        level = _thinking_level(block.type, effort, {})
    caching = None
    if profile.cache_control is not CacheControl.DEFAULT_ONLY:
        asked = config.prompt_caching or PromptCaching.ENABLE
        caching = None if asked is PromptCaching.DISABLE else asked
    asked_format = config.response_format
    return UniConfig(
        max_tokens=DEFAULT_MAX_TOKENS if config.max_tokens is None else config.max_tokens,
        temperature=None if profile.temperature_fixed else config.temperature,
        top_p=top_p_to_send(config, profile.sampling),
        stop_sequences=config.stop_sequences,
        response_format=None if asked_format is None else ResponseFormat(
            "json_schema", FORMAT_NAME, _json_copy(asked_format.schema)
        ),
        tools=None if config.tools is None else tuple(
            ToolSchema(tool.name, tool.description, _json_copy(tool.parameters))
            for tool in config.tools
        ),
        tool_choice=config.tool_choice,
        thinking_level=level,
        thinking_summary=(
            config.thinking_summary if block is not None and block.type == "adaptive" else None
        ),
        system_prompt=config.system_prompt,
        prompt_caching=caching,
        fast_mode=True if config.fast_mode else None,
    )
