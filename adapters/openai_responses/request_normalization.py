"""What a Responses request body built by ``request.build_request`` reads back as with the
front door's ``reader.read_request`` (08 D73): the two are inverses up to this normalisation,
which the property test checks, ``read(build(x)) == normalize_request(x)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mmsp_core.model import (
    DoneItem,
    ResponseFormat,
    Role,
    TextDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    UniConfig,
    UniMessage,
)

from .._sampling import top_p_to_send
from .machine import REASONING_FIDELITY_KEYS
from .profiles import ReasoningReplay, ResponsesProfile, Summary, Temperature
from .reader import read_effort

__all__ = ["normalize_request"]



def normalize_request(
    profile: ResponsesProfile, model: str, messages: Sequence[UniMessage], config: UniConfig
) -> tuple[tuple[UniMessage, ...], UniConfig]:
    """What ``read_request`` gives back for the body ``build_request`` builds with ``profile``
    for ``model``, ``messages`` and ``config`` (which it accepted).

    What a Responses body cannot carry, or carries differently:

    - Messages: only their items travel; a message's usage, finish reason and timestamp do
      not. Reasoning items and function calls are the assistant's, function call outputs the
      user's, whatever message held them, and consecutive items of one role read back as one
      message.
    - Text fidelity: only an assistant text's ``phase`` (a non-empty string), on a profile
      that sends phases. Tool calls carry no fidelity; a tool result without images has
      ``images=None``.
    - Thinking: as the profile replays it (05 §5): the ``channel`` that carried a non-empty
      text (``summary``, else ``content``) and, when replayed by channel,
      ``encrypted_content``, ``signature`` and ``format`` when not null; nothing else.
    - Config: the keys the body carries, as the builder writes them: ``temperature`` and
      ``top_p`` only where the profile sends them, the ``thinking_level`` whose effort the
      generation writes (DeepSeek's ``medium`` is ``high``), ``thinking_summary`` only where a
      summary is sent, ``fast_mode`` only when true; ``system_prompt``, ``max_tokens``,
      ``tools``, ``tool_choice`` and ``response_format`` as given. Nothing else travels
      (``prompt_caching``, image, speech and embedding options, ``trace_id``, unknown keys).
    """
    read: list[tuple[Role, DoneItem]] = []
    for message in messages:
        for item in message.content_items:
            read.append(_normalize_item(profile, message.role, item))
    runs: list[tuple[Role, list[DoneItem]]] = []
    for role, item in read:
        if not runs or runs[-1][0] != role:
            runs.append((role, []))
        runs[-1][1].append(item)
    return (
        tuple(UniMessage(role, tuple(items)) for role, items in runs),
        _normalize_config(profile, model, config),
    )


def _normalize_item(profile: ResponsesProfile, role: Role, item: DoneItem) -> tuple[Role, DoneItem]:
    """One item as it reads back, with the role of the message it joins."""
    if isinstance(item, TextDone):
        phase = (item.fidelity or {}).get("phase")
        kept = profile.phases and role == "assistant" and isinstance(phase, str) and phase
        return role, TextDone(item.text, {"phase": phase} if kept else None)
    if isinstance(item, ThinkingDone):
        return "assistant", _normalize_thinking(profile, item)
    if isinstance(item, ToolCallDone):
        return "assistant", ToolCallDone(item.name, item.tool_call_id, item.arguments)
    if isinstance(item, ToolResultDone):
        return "user", ToolResultDone(item.text, item.tool_call_id, item.images or None)
    return role, item


def _normalize_thinking(profile: ResponsesProfile, item: ThinkingDone) -> ThinkingDone:
    """A thinking item as ``request`` replays it and the reader reads it back (05 §5)."""
    fidelity = item.fidelity or {}
    by_channel = profile.replay in (
        ReasoningReplay.BY_CHANNEL, ReasoningReplay.BY_CHANNEL_ENCRYPTED_AS_SUMMARY
    )
    kept: dict[str, Any] = {}
    if item.thinking:
        channel = fidelity.get("channel")
        as_summary = by_channel and (channel == "summary" or (
            profile.replay is ReasoningReplay.BY_CHANNEL_ENCRYPTED_AS_SUMMARY
            and channel is None and fidelity.get("encrypted_content") is not None
        ))
        kept["channel"] = "summary" if as_summary else "content"
    if by_channel:
        kept.update({key: fidelity[key] for key in REASONING_FIDELITY_KEYS
                     if fidelity.get(key) is not None})
    return ThinkingDone(item.thinking, kept or None)


def _normalize_config(profile: ResponsesProfile, model: str, config: UniConfig) -> UniConfig:
    """The config keys a body carries, as the reader reads them (``normalize_request``)."""
    generation = profile.generation(model.lower())
    level = config.thinking_level
    if level is not None:
        level = read_effort(generation.efforts[ThinkingLevel(level)])
    summary = config.thinking_summary and (
        profile.summary is Summary.ALWAYS
        or (profile.summary is Summary.WITH_EFFORT and config.thinking_level is not None)
    )
    temperature = config.temperature
    if profile.temperature is Temperature.ONLY_DEFAULT:
        temperature = None
    return UniConfig(
        max_tokens=config.max_tokens,
        temperature=None if temperature is None else float(temperature),
        top_p=top_p_to_send(config, profile.sampling),
        response_format=_normalize_format(config.response_format),
        tools=config.tools,
        tool_choice=config.tool_choice,
        thinking_level=level,
        thinking_summary=True if summary else None,
        system_prompt=config.system_prompt,
        fast_mode=True if config.fast_mode else None,
    )


def _normalize_format(asked: ResponseFormat | None) -> ResponseFormat | None:
    """A ``json_object`` format carries no name, schema or strictness."""
    if asked is not None and asked.type == "json_object":
        return ResponseFormat("json_object")
    return asked
