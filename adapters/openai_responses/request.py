"""Request builder of the OpenAI Responses clients (spec 04 §4, 05 §2.2, §2.6-§3, §4.2, §5).

Four client types speak this protocol: ``openai-official``, ``openai-responses`` (the
compatible client, also the protocol name), ``deepseek-official`` and ``minimax-official``.
What differs between them is written as explicit per-client rules below; model generations
are matched by version tokens on the lower-cased id, first row wins (05 §1, 08 D9), and the id
is sent exactly as given.

The body is ``POST /responses`` JSON in a fixed key order: ``model``, ``input``, ``stream``,
``store``, ``include`` (openai-official), then the mapped config keys (04 §4). Config errors are
raised before any message is looked at (02 §8).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

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

from .._convert import arguments_json, check_tool_choice_list, model_key, parse_data_uri
from .._media import needs_high_detail

__all__ = ["CLIENT_TYPES", "build_request", "check_config"]

OPENAI_OFFICIAL: Final = "openai-official"
OPENAI_RESPONSES: Final = "openai-responses"
DEEPSEEK_OFFICIAL: Final = "deepseek-official"
MINIMAX_OFFICIAL: Final = "minimax-official"

#: The client types this protocol serves (spec 04 §1).
CLIENT_TYPES: Final = (OPENAI_OFFICIAL, OPENAI_RESPONSES, DEEPSEEK_OFFICIAL, MINIMAX_OFFICIAL)

#: Clients that send image ``detail``, split assistant text by phase and replay reasoning
#: from its recorded channel (05 §5).
_OPENAI_CLIENTS: Final = frozenset({OPENAI_OFFICIAL, OPENAI_RESPONSES})

PATH: Final = "/responses"
HEADERS: Final = (("content-type", "application/json"), ("accept", "text/event-stream"))

_L = ThinkingLevel

#: Each level sent as itself.
_IDENTITY: Final[Mapping[ThinkingLevel, str]] = {level: level.value for level in ThinkingLevel}

#: The token of MiniMax M3.1-Flash in a lower-cased model id (05 §1).
_M31 = "m3.1"


class _EffortRow(NamedTuple):
    """One generation row of ``reasoning.effort`` (05 §2): it applies to ``clients`` when the
    lower-cased id contains every token of ``needs`` and none of ``refuses``."""

    clients: frozenset[str]
    needs: tuple[str, ...]
    refuses: tuple[str, ...]
    efforts: Mapping[ThinkingLevel, str]


#: The first matching row wins; the last row of each client matches every id.
_EFFORT_ROWS: Final = (
    # 05 §2.2: GPT-6 except Luna rejects "none" and runs at its lowest effort instead.
    _EffortRow(_OPENAI_CLIENTS, ("gpt-6",), ("gpt-6-luna",), {**_IDENTITY, _L.NONE: "low"}),
    _EffortRow(_OPENAI_CLIENTS, (), (), _IDENTITY),
    # 05 §2.6: every DeepSeek model.
    _EffortRow(
        frozenset({DEEPSEEK_OFFICIAL}), (), (), {**_IDENTITY, _L.MEDIUM: "high", _L.XHIGH: "high"}
    ),
    # 05 §2.7: MiniMax M3.1-Flash always reasons; M3 stops at high.
    _EffortRow(frozenset({MINIMAX_OFFICIAL}), (_M31,), (), {**_IDENTITY, _L.NONE: "low"}),
    _EffortRow(
        frozenset({MINIMAX_OFFICIAL}), (), (), {**_IDENTITY, _L.XHIGH: "high", _L.MAX: "high"}
    ),
)

#: DeepSeek ids that take no images: the last ``/``-segment of the lower-cased id (05 §1).
_DEEPSEEK_TEXT_ONLY: Final = re.compile(r"deepseek-v4-(flash|pro)(-\d{4})?")


def _check_client(client: str, model: str) -> None:
    if client not in CLIENT_TYPES:
        raise RoutingError(model, client, detail="not a client of the Responses protocol")


def _is_minimax_m31(key: str) -> bool:
    """MiniMax M3.1-Flash rules apply when the lower-cased id contains ``m3.1`` (05 §1)."""
    return _M31 in key


def _effort(client: str, key: str, level: ThinkingLevel) -> str:
    """Map a thinking level to ``reasoning.effort``; never raises (05 §1 rule 4)."""
    for row in _EFFORT_ROWS:
        if (
            client in row.clients
            and all(token in key for token in row.needs)
            and not any(token in key for token in row.refuses)
        ):
            return row.efforts[ThinkingLevel(level)]
    raise AssertionError(f"no effort row for {client}")  # the last row of each client is total


def _temperature(client: str, temperature: float) -> float | None:
    """Return the temperature to send, ``None`` for none (05 §4.2)."""
    if client == OPENAI_RESPONSES:
        return temperature
    if client == MINIMAX_OFFICIAL:
        if 0 <= temperature <= 1:
            return temperature
        raise UnsupportedParameterError(client, "temperature", detail="MiniMax takes 0 to 1")
    if temperature == 1.0:
        return None
    raise UnsupportedParameterError(client, "temperature", detail="only 1.0 is accepted")


def _tool_choice(client: str, key: str, choice: str | tuple[str, ...]) -> Any:
    """Map ``tool_choice`` (05 §4.2, 08 D10)."""
    if client in _OPENAI_CLIENTS:
        allowed: tuple[str, ...] = ("auto", "none", "required")
    elif client == DEEPSEEK_OFFICIAL:
        allowed = ("auto", "none")
    else:
        allowed = ("auto",) if _is_minimax_m31(key) else ("auto", "none")
    if isinstance(choice, str):
        if choice in allowed:
            return choice
        raise UnsupportedParameterError(client, "tool_choice", detail=f"{choice!r} is not sent")
    if client not in _OPENAI_CLIENTS:
        raise UnsupportedParameterError(client, "tool_choice", detail="no list of tool names")
    return {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": name} for name in choice],
    }


def _config_body(client: str, model: str, config: UniConfig) -> dict[str, Any]:
    """Return the body keys that come from ``config`` (05 §4.2), in body order.

    Raises:
        UnsupportedParameterError: a value the client cannot send for this model.
    """
    _check_client(client, model)
    key = model_key(model)
    check_tool_choice_list(client, config)
    if config.prompt_caching not in (None, PromptCaching.ENABLE):
        raise UnsupportedParameterError(client, "prompt_caching", detail="only enable")
    if config.fast_mode and (
        client == DEEPSEEK_OFFICIAL or (client == MINIMAX_OFFICIAL and _is_minimax_m31(key))
    ):
        raise UnsupportedParameterError(client, "fast_mode", detail="no priority tier")

    body: dict[str, Any] = {}
    if config.system_prompt is not None:
        body["instructions"] = config.system_prompt
    if config.max_tokens is not None:
        body["max_output_tokens"] = config.max_tokens
    if config.temperature is not None:
        temperature = _temperature(client, config.temperature)
        if temperature is not None:
            body["temperature"] = temperature
    reasoning = _reasoning(client, key, config)
    if reasoning:
        body["reasoning"] = reasoning
    if config.tools is not None:
        body["tools"] = [_tool(t.name, t.description, t.parameters) for t in config.tools]
    if config.tool_choice is not None:
        body["tool_choice"] = _tool_choice(client, key, config.tool_choice)
    if config.fast_mode:
        body["service_tier"] = "priority"
    return body


def _reasoning(client: str, key: str, config: UniConfig) -> dict[str, str]:
    """The ``reasoning`` object: effort (05 §2) and summary (05 §3)."""
    reasoning: dict[str, str] = {}
    if config.thinking_level is not None:
        reasoning["effort"] = _effort(client, key, config.thinking_level)
    summary = config.thinking_summary and (
        client in (OPENAI_OFFICIAL, DEEPSEEK_OFFICIAL)
        # OpenRouter reads an effort-less reasoning object as "disabled" (05 §3).
        or (client == OPENAI_RESPONSES and config.thinking_level is not None)
    )
    if summary:
        reasoning["summary"] = "concise"
    return reasoning


def _tool(name: str, description: str, parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "function", "name": name, "description": description}
    if parameters is not None:
        tool["parameters"] = parameters
    return tool


def check_config(client: str, model: str, config: UniConfig) -> None:
    """Raise what ``build_request`` would raise for ``config`` alone (08 D37).

    Raises:
        UnsupportedParameterError: a value the client cannot send for this model (05 §4.2).
    """
    _config_body(client, model, config)


def build_request(
    client: str, model: str, messages: Sequence[UniMessage], config: UniConfig
) -> HTTPRequest:
    """Build the streaming ``POST /responses`` request (spec 04 §4, 05 §4.2, §5).

    Raises:
        UnsupportedParameterError: a config value the client cannot send (checked first).
        InvalidMessageError: a message with nothing sendable, an unknown item kind, a tool
            result without ``tool_call_id`` or a malformed data URI.
        UnsupportedContentError: an image for a text-only DeepSeek model.
    """
    config_body = _config_body(client, model, config)
    body: dict[str, Any] = {
        "model": model,
        "input": _Input(client, model_key(model)).convert(messages),
        "stream": True,
        "store": False,
    }
    if client == OPENAI_OFFICIAL:
        body["include"] = ["reasoning.encrypted_content"]
    body.update(config_body)
    return HTTPRequest("POST", PATH, HEADERS, encode_json_body(body))


class _Input:
    """Message conversion to Responses input items (05 §5)."""

    def __init__(self, client: str, key: str) -> None:
        self._client = client
        self._openai = client in _OPENAI_CLIENTS
        self._high_detail = self._openai and "gpt-5.6" in key
        self._text_only = client == DEEPSEEK_OFFICIAL and bool(
            _DEEPSEEK_TEXT_ONLY.fullmatch(key.rsplit("/", 1)[-1])
        )

    def convert(self, messages: Sequence[UniMessage]) -> list[dict[str, Any]]:
        """Return the ``input`` list: per message, its items in order."""
        items: list[dict[str, Any]] = []
        for index, message in enumerate(messages):
            converted = self._message(message, index)
            if all(item["type"] == "reasoning" for item in converted):
                raise InvalidMessageError(
                    self._client, None, index, detail="nothing to send but thinking"
                )
            items += converted
        return items

    def _message(self, message: UniMessage, index: int) -> list[dict[str, Any]]:
        """Convert one message; consecutive text and images share one message item.

        The collected content is flushed before any other item, so order is kept; on the
        OpenAI clients assistant text is split by its ``fidelity["phase"]`` into message items
        that carry that phase.
        """
        out: list[dict[str, Any]] = []
        content: list[dict[str, Any]] = []
        phase: str | None = None

        def flush() -> None:
            if content:
                entry: dict[str, Any] = {"type": "message", "role": message.role}
                entry["content"] = list(content)
                if phase is not None:
                    entry["phase"] = phase
                out.append(entry)
                content.clear()

        for item in message.content_items:
            if isinstance(item, TextDone):
                item_phase = self._phase(message.role, item)
                if item_phase != phase:
                    flush()
                    phase = item_phase
                text_type = "input_text" if message.role == "user" else "output_text"
                content.append({"type": text_type, "text": item.text})
            elif isinstance(item, ImageUrlDone):
                content.append(self._image(item.image_url, index, "image_url"))
            else:
                flush()
                out.append(self._other(item, index))
        flush()
        return out

    def _phase(self, role: str, item: TextDone) -> str | None:
        if not self._openai or role != "assistant" or not item.fidelity:
            return None
        phase = item.fidelity.get("phase")
        return phase if isinstance(phase, str) and phase else None

    def _other(self, item: object, index: int) -> dict[str, Any]:
        if isinstance(item, ThinkingDone):
            return self._reasoning(item)
        if isinstance(item, ToolCallDone):
            return {
                "type": "function_call",
                "call_id": item.tool_call_id,
                "name": item.name,
                "arguments": arguments_json(item.arguments),
            }
        if isinstance(item, ToolResultDone):
            if not item.tool_call_id:
                raise InvalidMessageError(
                    self._client, "tool_result", index, detail="a tool result needs tool_call_id"
                )
            output: str | list[dict[str, Any]] = item.text
            if item.images:
                output = [{"type": "input_text", "text": item.text}] + [
                    self._image(url, index, "tool_result") for url in item.images
                ]
            return {"type": "function_call_output", "call_id": item.tool_call_id, "output": output}
        item_type = getattr(item, "type", type(item).__name__)
        raise InvalidMessageError(
            self._client, item_type, index, detail="the Responses API has no such input"
        )

    def _reasoning(self, item: ThinkingDone) -> dict[str, Any]:
        """Replay a thinking item as a reasoning item (05 §5).

        DeepSeek and MiniMax rebuild it from the text alone (MiniMax without ``summary``); the
        OpenAI clients send the text back through the channel that carried it, plus the
        recorded ``encrypted_content``, ``signature`` and ``format``. openai-official also
        reads a history without a channel but with encrypted content as a summary.
        """
        text = [{"type": "reasoning_text", "text": item.thinking}] if item.thinking else []
        if self._client == MINIMAX_OFFICIAL:
            return {"type": "reasoning", "content": text}
        reasoning: dict[str, Any] = {"type": "reasoning", "summary": []}
        fidelity = item.fidelity or {}
        if not self._openai:
            if text:
                reasoning["content"] = text
            return reasoning
        channel = fidelity.get("channel")
        as_summary = channel == "summary" or (
            self._client == OPENAI_OFFICIAL
            and channel is None
            and fidelity.get("encrypted_content") is not None
        )
        if as_summary and item.thinking:
            reasoning["summary"] = [{"type": "summary_text", "text": item.thinking}]
        elif text:
            reasoning["content"] = text
        for key in ("encrypted_content", "signature", "format"):
            if fidelity.get(key) is not None:
                reasoning[key] = fidelity[key]
        return reasoning

    def _image(self, url: str, index: int, item_type: str) -> dict[str, Any]:
        """An ``input_image`` part, with ``detail: "high"`` where GPT-5.6 needs it (05 §5).

        Raises:
            UnsupportedContentError: the model takes no images.
            InvalidMessageError: a malformed data URI.
        """
        if self._text_only:
            raise UnsupportedContentError(
                self._client, item_type, detail="this DeepSeek model takes text only"
            )
        part: dict[str, Any] = {"type": "input_image", "image_url": url}
        decoded = parse_data_uri(self._client, url, index)
        if self._high_detail and decoded is not None and needs_high_detail(decoded[1]):
            part["detail"] = "high"
        return part
