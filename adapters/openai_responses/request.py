"""Request builder of the OpenAI Responses clients (spec 04 §4, 05 §2.2, §2.6-§3, §4.2, §5).

Every client of this protocol builds the same body; what differs between them (effort rows,
temperature rule, ``tool_choice`` values, reasoning replay, image rules) is the client's
``ResponsesProfile``, whose generation rows are matched on the lower-cased id, first row wins
(05 §1, 08 D9). The id is sent exactly as given.

The body is ``POST /responses`` JSON in a fixed key order: ``model``, ``input``, ``stream``,
``store``, ``include`` (when the profile has one), then the mapped config keys (04 §4). Config
errors are raised before any message is looked at (02 §8). Messages are converted by
``adapters._build.walk_messages``: each item becomes a content part of the message item being
collected (text, images) or an input item of its own (reasoning, calls, results), and the
collected parts are flushed before any other item, so order is kept (05 §5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple, final

from mmsp_core.errors import (
    InvalidMessageError,
    UnsupportedContentError,
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

from .._build import Converters, MessageContext, WalkedMessage, walk_messages
from .._convert import arguments_json, check_tool_choice_list, model_key, parse_data_uri
from .._media import needs_high_detail
from .._sampling import check_sampling, top_p_to_send
from .machine import REASONING_FIDELITY_KEYS
from .profiles import Generation, ReasoningReplay, ResponsesProfile, Summary, Temperature

__all__ = ["build_request", "check_config"]

PATH: Final = "/responses"
HEADERS: Final = (("content-type", "application/json"), ("accept", "text/event-stream"))


def _temperature(client: str, profile: ResponsesProfile, temperature: float) -> float | None:
    """Return the temperature to send, ``None`` for none (05 §4.2).

    Raises:
        UnsupportedParameterError: a value the client does not take.
    """
    rule = profile.temperature
    if rule is Temperature.SENT:
        return temperature
    if rule is Temperature.ZERO_TO_ONE:
        if 0 <= temperature <= 1:
            return temperature
        detail = f"{profile.vendor} takes 0 to 1"
        raise UnsupportedParameterError(client, "temperature", detail=detail)
    if temperature == 1.0:
        return None
    raise UnsupportedParameterError(client, "temperature", detail="only 1.0 is accepted")


def _tool_choice(
    client: str, profile: ResponsesProfile, generation: Generation, choice: str | tuple[str, ...]
) -> Any:
    """Map ``tool_choice`` (05 §4.2, 08 D10).

    Raises:
        UnsupportedParameterError: a value or a list of names the client does not take.
    """
    if isinstance(choice, str):
        if choice in generation.tool_choices:
            return choice
        raise UnsupportedParameterError(client, "tool_choice", detail=f"{choice!r} is not sent")
    if not profile.tool_name_lists:
        raise UnsupportedParameterError(client, "tool_choice", detail="no list of tool names")
    return {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": name} for name in choice],
    }


def _reasoning(
    profile: ResponsesProfile, generation: Generation, config: UniConfig
) -> dict[str, str]:
    """The ``reasoning`` object: effort (05 §2) and summary (05 §3); never raises."""
    reasoning: dict[str, str] = {}
    if config.thinking_level is not None:
        reasoning["effort"] = generation.efforts[ThinkingLevel(config.thinking_level)]
    if config.thinking_summary and (
        profile.summary is Summary.ALWAYS
        or (profile.summary is Summary.WITH_EFFORT and config.thinking_level is not None)
    ):
        reasoning["summary"] = "concise"
    return reasoning


def _format(asked: ResponseFormat) -> dict[str, Any]:
    """``text.format`` (OpenAI's Responses reference): ``{"type": "json_schema", name, schema,
    strict}`` (flat, unlike Chat's) or ``{"type": "json_object"}``."""
    if asked.type == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "name": asked.name, "schema": asked.schema,
            "strict": asked.strict}


def _tool(name: str, description: str, parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "function", "name": name, "description": description}
    if parameters is not None:
        tool["parameters"] = parameters
    return tool


def _config_body(
    client: str, profile: ResponsesProfile, model: str, config: UniConfig
) -> dict[str, Any]:
    """Return the body keys that come from ``config`` (05 §4.2), in body order.

    Raises:
        UnsupportedOperationError: the model belongs to another protocol (see
            ``_check_model``).
        UnsupportedParameterError: a value the client cannot send for this model.
    """
    key = model_key(model)
    _check_model(client, profile, model, key)
    generation = profile.generation(key)
    check_tool_choice_list(client, config)
    if config.prompt_caching not in (None, PromptCaching.ENABLE):
        raise UnsupportedParameterError(client, "prompt_caching", detail="only enable")
    if config.fast_mode and not generation.priority_tier:
        raise UnsupportedParameterError(client, "fast_mode", detail="no priority tier")
    check_sampling(client, config, profile.sampling)

    body: dict[str, Any] = {}
    if config.system_prompt is not None:
        body["instructions"] = config.system_prompt
    if config.max_tokens is not None:
        body["max_output_tokens"] = config.max_tokens
    if config.temperature is not None:
        temperature = _temperature(client, profile, config.temperature)
        if temperature is not None:
            body["temperature"] = temperature
    top_p = top_p_to_send(config, profile.sampling)
    if top_p is not None:
        body["top_p"] = top_p
    if config.response_format is not None:
        body["text"] = {"format": _format(config.response_format)}
    reasoning = _reasoning(profile, generation, config)
    if reasoning:
        body["reasoning"] = reasoning
    if config.tools is not None:
        body["tools"] = [_tool(t.name, t.description, t.parameters) for t in config.tools]
    if config.tool_choice is not None:
        body["tool_choice"] = _tool_choice(client, profile, generation, config.tool_choice)
    if config.fast_mode:
        body["service_tier"] = "priority"
    return body


def _check_model(client: str, profile: ResponsesProfile, model: str, key: str) -> None:
    """Refuse a model of another protocol (the profile's ``foreign_models``): an embedding id
    on openai-official is served by the openai-embedding protocol, not by Responses, so nothing
    is sent rather than a ``/responses`` body the API would refuse (04 §2). ``AutoLLMClient``
    routes such an id to that protocol itself (``adapters.route``); a pure caller names it.

    Raises:
        UnsupportedOperationError: naming the protocol that serves the model, to build its
            request with instead.
    """
    protocol = profile.foreign_protocol(key)
    if protocol is not None:
        raise UnsupportedOperationError(
            client,
            "streaming",
            detail=f"{model!r} is an embedding model, served by the {protocol} protocol and "
            f"not by Responses: build its request with client type {protocol!r} "
            f"(AutoLLMClient routes the id there itself)",
        )


def check_config(client: str, profile: ResponsesProfile, model: str, config: UniConfig) -> None:
    """Raise what ``build_request`` would raise for ``config`` alone (08 D37).

    Raises:
        UnsupportedOperationError: the model belongs to another protocol.
        UnsupportedParameterError: a value the client cannot send for this model (05 §4.2).
    """
    _config_body(client, profile, model, config)


def build_request(
    client: str,
    profile: ResponsesProfile,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    """Build the streaming ``POST /responses`` request (spec 04 §4, 05 §4.2, §5).

    Raises:
        UnsupportedOperationError: the model belongs to another protocol (an embedding id on
            openai-official).
        UnsupportedParameterError: a config value the client cannot send (checked first).
        InvalidMessageError: a message with nothing to send but thinking, an item kind this
            protocol cannot carry (``item_type`` its bare kind), a tool result without
            ``tool_call_id`` or a malformed data URI.
        UnsupportedContentError: an image for a text-only model.
    """
    config_body = _config_body(client, profile, model, config)
    converters = _Converter(client, profile, model_key(model)).table
    walked: list[WalkedMessage[_Piece]] = walk_messages(
        client, messages, converters, protocol_label="The Responses API"
    )
    body: dict[str, Any] = {
        "model": model,
        "input": _input(walked),
        "stream": True,
        "store": False,
    }
    if profile.include:
        body["include"] = list(profile.include)
    body.update(config_body)
    return HTTPRequest("POST", PATH, HEADERS, encode_json_body(body))


# --------------------------------------------------------------------------------------------
# Messages (05 §5)
# --------------------------------------------------------------------------------------------


class _Content(NamedTuple):
    """A content part of the message item being collected."""

    part: dict[str, Any]
    #: A text's phase (``None``: none); a new phase starts a new message item.
    phase: str | None = None
    #: An image joins the message item of any phase.
    any_phase: bool = False


#: What a converter returns: a content part, or an input item of its own.
_Piece = _Content | dict[str, Any]


@final
class _Converter:
    """The converters of one request: what the profile and the model id decide (05 §5)."""

    __slots__ = ("_client", "_high_detail", "_profile", "_text_only", "table")

    def __init__(self, client: str, profile: ResponsesProfile, key: str) -> None:
        self._client = client
        self._profile = profile
        token = profile.high_detail_token
        self._high_detail = token is not None and token in key
        self._text_only = profile.text_only(key)
        self.table: Converters[_Piece] = {
            TextDone: self._text,
            ImageUrlDone: self._image_url,
            ThinkingDone: self._reasoning,
            ToolCallDone: self._call,
            ToolResultDone: self._result,
        }

    def _text(self, context: MessageContext, item: Item) -> _Piece:
        """User text is ``input_text``, assistant text ``output_text`` with its phase."""
        assert isinstance(item, TextDone)
        role = context.message.role
        if role == "user":
            return _Content({"type": "input_text", "text": item.text})
        phase = None
        if self._profile.phases and role == "assistant" and item.fidelity:
            recorded = item.fidelity.get("phase")
            phase = recorded if isinstance(recorded, str) and recorded else None
        return _Content({"type": "output_text", "text": item.text}, phase)

    def _image_url(self, context: MessageContext, item: Item) -> _Piece:
        assert isinstance(item, ImageUrlDone)
        return _Content(self._image(item.image_url, context.index, "image_url"), any_phase=True)

    def _call(self, context: MessageContext, item: Item) -> _Piece:
        assert isinstance(item, ToolCallDone)
        return {
            "type": "function_call",
            "call_id": item.tool_call_id,
            "name": item.name,
            "arguments": arguments_json(item.arguments),
        }

    def _result(self, context: MessageContext, item: Item) -> _Piece:
        """A ``function_call_output``: the text, or a content list when there are images.

        Raises:
            InvalidMessageError: no ``tool_call_id``; a malformed data URI.
            UnsupportedContentError: images for a text-only model.
        """
        assert isinstance(item, ToolResultDone)
        if not item.tool_call_id:
            raise InvalidMessageError(
                self._client, "tool_result", context.index,
                detail="a tool result needs tool_call_id",
            )
        output: str | list[dict[str, Any]] = item.text
        if item.images:
            output = [{"type": "input_text", "text": item.text}] + [
                self._image(url, context.index, "tool_result") for url in item.images
            ]
        return {"type": "function_call_output", "call_id": item.tool_call_id, "output": output}

    def _reasoning(self, context: MessageContext, item: Item) -> _Piece:
        """Replay a thinking item as a reasoning item, as the profile says (05 §5)."""
        assert isinstance(item, ThinkingDone)
        text = [{"type": "reasoning_text", "text": item.thinking}] if item.thinking else []
        replay = self._profile.replay
        if replay is ReasoningReplay.REBUILT_WITHOUT_SUMMARY:
            return {"type": "reasoning", "content": text}
        reasoning: dict[str, Any] = {"type": "reasoning", "summary": []}
        if replay is ReasoningReplay.REBUILT:
            if text:
                reasoning["content"] = text
            return reasoning
        fidelity = item.fidelity or {}
        channel = fidelity.get("channel")
        as_summary = channel == "summary" or (
            replay is ReasoningReplay.BY_CHANNEL_ENCRYPTED_AS_SUMMARY
            and channel is None
            and fidelity.get("encrypted_content") is not None
        )
        if as_summary and item.thinking:
            reasoning["summary"] = [{"type": "summary_text", "text": item.thinking}]
        elif text:
            reasoning["content"] = text
        for key in REASONING_FIDELITY_KEYS:
            if fidelity.get(key) is not None:
                reasoning[key] = fidelity[key]
        return reasoning

    def _image(self, url: str, index: int, item_type: str) -> dict[str, Any]:
        """An ``input_image`` part, with ``detail: "high"`` where the model needs it (05 §5).

        Raises:
            UnsupportedContentError: the model takes no images.
            InvalidMessageError: a malformed data URI.
        """
        if self._text_only:
            detail = f"this {self._profile.vendor} model takes text only"
            raise UnsupportedContentError(self._client, item_type, detail=detail)
        part: dict[str, Any] = {"type": "input_image", "image_url": url}
        decoded = parse_data_uri(self._client, url, index)
        if self._high_detail and decoded is not None and needs_high_detail(decoded[1]):
            part["detail"] = "high"
        return part


def _input(walked: Sequence[WalkedMessage[_Piece]]) -> list[dict[str, Any]]:
    """Assemble the ``input`` list: per message, its pieces in order.

    Consecutive content parts of a message share one message item, split where a text's
    phase changes. (``walk_messages`` has refused a message of only thinking, 08 D67.)
    """
    items: list[dict[str, Any]] = []
    for message in walked:
        role = message.message.role
        content: list[dict[str, Any]] = []
        phase: str | None = None
        for piece in message.parts:
            if not isinstance(piece, _Content):
                _flush(items, role, content, phase)
                items.append(piece)
                continue
            if not piece.any_phase and piece.phase != phase:
                _flush(items, role, content, phase)
                phase = piece.phase
            content.append(piece.part)
        _flush(items, role, content, phase)
    return items


def _flush(
    items: list[dict[str, Any]], role: str, content: list[dict[str, Any]], phase: str | None
) -> None:
    """Append the collected ``content`` as one message item, and empty it."""
    if content:
        entry: dict[str, Any] = {"type": "message", "role": role, "content": list(content)}
        if phase is not None:
            entry["phase"] = phase
        items.append(entry)
        content.clear()
