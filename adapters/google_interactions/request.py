"""Request builder of the Gemini Interactions API (spec 04 §4, 05 §2.3, §3, §4.4, §5).

The body is ``POST /v1/interactions`` JSON in a fixed key order (04 §4): ``model``, ``input``
(a list of steps), ``stream``, ``store: false``, then the mapped config keys
``system_instruction``, ``generation_config``, ``tools``, ``response_format``,
``service_tier``. The config is converted before any message is looked at, so its errors come
first (02 §8); the id is sent exactly as given and read only through the Gemini model classes
and thinking rows both Google clients share (``adapters._google.thinking``, 05 §1, §2.3): a speech
(TTS) model takes only speech settings, ``max_tokens`` and ``fast_mode``; an embedding model
belongs to the ``google-embedding`` protocol (08 D64) and no Interactions request is built.

Messages become steps (05 §5), converted item by item by ``adapters._build.walk_messages``
and assembled per message by ``_steps``:

- text and media of a message share one ``user_input`` (user) or ``model_output``
  (assistant) step: ``{"type": "text"}`` blocks (empty text skipped) and
  ``{"type": "image" | "audio" | "video" | "document", "data", "mime_type"}`` blocks from data
  URIs and replayed inline data (a URL that is not a data URI, which the I/O layer fetches
  first on this client (08 D37), is sent as ``uri``);
- thinking becomes ``{"type": "thought", "summary": [...], "signature"?}``: consecutive
  thoughts share a step that ends at the signed one; a thought image (``inline_thinking``) is
  an image block of the summary; thinking with neither text nor signature is left out;
- a signature on a non-thinking item (a generateContent history) goes to the turn's opening
  thought step when that step is unsigned, else it becomes a thought step of its own in front
  of the item;
- a tool call is ``{"type": "function_call", "name", "arguments", "id"?}`` (no ``id`` when it
  is the name, as generateContent histories have it); a tool result is
  ``{"type": "function_result", "name": <the call's name>, "result": <text, or blocks when
  there are images>, "call_id"?}``, the name looked up among the calls before it (the id
  itself when no call has it);
- a model turn whose thoughts do not come first, or that has output or calls but no signed
  thought, opens with ``{"type": "thought", "signature": SKIP_SIGNATURE}``, which Gemini
  accepts in place of a signature it cannot check.

A speech model gets the last message only, text only, as one step (05 §5); with two speakers
the text is a script, one ``Name: line`` per turn, every line that is not blank opening with a
configured speaker's label (01 §3, 03 §2; ``adapters._google.script``, shared with
generateContent), which a ``gemini-3.8`` speech model takes split into one text block per
turn, its label removed and its speaker in a ``speech_metadata`` annotation (05 §1,
``_speech_steps``).
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Mapping, Sequence
from typing import Any, Final, final

import attrs

from mmsp_core.errors import (
    InvalidMessageError,
    UnsupportedContentError,
    UnsupportedOperationError,
    UnsupportedParameterError,
)
from mmsp_core.model import (
    ImageUrlDone,
    InlineDataDone,
    InlineThinkingDone,
    Item,
    PromptCaching,
    SpeakerConfig,
    TextDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    UniConfig,
    UniMessage,
)
from mmsp_core.request import HTTPRequest, encode_json_body

from .._build import Converters, MessageContext, WalkedMessage, item_kind, walk_messages
from .._convert import check_tool_choice_list, model_key, parse_data_uri
from .._google.sampling import JSON_MIME_TYPE, sampling_of
from .._google.script import SCRIPT_SPLIT_TOKEN, script_turns
from .._google.thinking import Mode, model_mode, thinking_level_for
from .._sampling import check_sampling
from .profiles import InteractionsProfile

__all__ = ["API_VERSION", "DEFAULT_VOICE", "PATH", "SKIP_SIGNATURE", "build_request",
           "check_config"]

#: The Gemini API version in the path (04 §4 notes, 08 D12); a caller's ``base_url`` can
#: point elsewhere.
API_VERSION: Final = "v1"
PATH: Final = f"/{API_VERSION}/interactions"
HEADERS: Final = (("content-type", "application/json"), ("accept", "text/event-stream"))

#: The placeholder signature Gemini accepts on a model turn it cannot check (05 §5).
SKIP_SIGNATURE: Final = "skip_thought_signature_validator"
#: The voice of a speech request that names none, or names an empty list (05 §4.4).
DEFAULT_VOICE: Final = "Kore"

#: ``tool_choice`` strings -> ``generation_config.tool_choice`` (05 §4.4).
_TOOL_CHOICES: Final[Mapping[str, str]] = {"auto": "auto", "none": "none", "required": "any"}



# --------------------------------------------------------------------------------------------
# Config (05 §2.3, §3, §4.4)
# --------------------------------------------------------------------------------------------


def _speech_config(client: str, speakers: Sequence[SpeakerConfig] | None) -> list[dict[str, str]]:
    """``generation_config.speech_config`` of a speech model (05 §4.4).

    Raises:
        UnsupportedParameterError: ``tts_config`` with more than two entries, or two entries
            one of which names no speaker.
    """
    if not speakers:
        return [{"voice": DEFAULT_VOICE}]
    if len(speakers) == 1:
        return [{"voice": speakers[0].voice}]
    if len(speakers) != 2:
        raise UnsupportedParameterError(client, "tts_config", detail="one or two speakers")
    config = []
    for speaker in speakers:
        if not speaker.speaker:
            detail = "with two voices each needs its speaker"
            raise UnsupportedParameterError(client, "tts_config", detail=detail)
        config.append({"speaker": speaker.speaker, "voice": speaker.voice})
    return config


def _tool_choice(client: str, choice: str | tuple[str, ...]) -> Any:
    """``generation_config.tool_choice`` (05 §4.4).

    Raises:
        UnsupportedParameterError: a string ``tool_choice`` Gemini has no mode for.
    """
    if isinstance(choice, str):
        mode = _TOOL_CHOICES.get(choice)
        if mode is None:
            raise UnsupportedParameterError(client, "tool_choice", detail=f"{choice!r} is not sent")
        return mode
    return {"allowed_tools": {"mode": "any", "tools": list(choice)}}


def _tool(name: str, description: str, parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "function", "name": name, "description": description}
    if parameters is not None:
        tool["parameters"] = parameters
    return tool


def _sampling_fields(config: UniConfig) -> dict[str, Any]:
    """The ``generation_config`` fields of 08 D74 (the Interactions API reference):
    ``top_p``, ``stop_sequences`` and ``seed``."""
    fields: dict[str, Any] = {}
    if config.top_p is not None:
        fields["top_p"] = config.top_p
    if config.stop_sequences is not None:
        fields["stop_sequences"] = list(config.stop_sequences)
    if config.seed is not None:
        fields["seed"] = config.seed
    return fields


def _response_format(config: UniConfig) -> Any:
    """``response_format`` of a generating model, ``None`` for none (05 §4.4): the text entry
    (with ``mime_type: application/json`` and the ``schema`` for structured output, the
    Interactions API's text response format) alone, or with the image entry of
    ``image_config``."""
    text: dict[str, Any] = {"type": "text"}
    asked = config.response_format
    if asked is not None:
        text["mime_type"] = JSON_MIME_TYPE
        if asked.schema is not None:
            text["schema"] = asked.schema
    if config.image_config is None:
        return None if asked is None else text
    image: dict[str, Any] = {"type": "image"}
    if config.image_config.aspect_ratio is not None:
        image["aspect_ratio"] = config.image_config.aspect_ratio
    if config.image_config.image_size is not None:
        image["image_size"] = config.image_config.image_size
    return [text, image]


def _check_model(client: str, model: str) -> Mode:
    """The model's class (05 §2.3).

    Raises:
        UnsupportedOperationError: an embedding model, served by the ``google-embedding``
            protocol (08 D64), not by Interactions.
    """
    mode = model_mode(model)
    if mode is Mode.EMBEDDING:
        raise UnsupportedOperationError(
            client, "streaming",
            detail=f"{model!r} is an embedding model of the google-embedding protocol",
        )
    return mode


def _config_body(
    client: str, profile: InteractionsProfile, model: str, config: UniConfig
) -> dict[str, Any]:
    """Return the body keys that come from ``config`` (05 §4.4), in body order.

    Raises:
        UnsupportedOperationError: an embedding model (``_check_model``).
        UnsupportedParameterError: ``temperature`` (checked first), a ``prompt_caching`` other
            than ``enable``, an empty ``tool_choice`` list or a string Gemini has no mode for,
            a ``tts_config`` a speech model cannot take.
    """
    if config.temperature is not None:
        detail = f"{profile.vendor} takes no temperature here"
        raise UnsupportedParameterError(client, "temperature", detail=detail)
    mode = _check_model(client, model)
    check_tool_choice_list(client, config)
    if config.prompt_caching not in (None, PromptCaching.ENABLE):
        raise UnsupportedParameterError(client, "prompt_caching", detail="only enable")
    check_sampling(client, config, sampling_of(mode))

    body: dict[str, Any] = {}
    generation: dict[str, Any] = {}
    if config.max_tokens is not None:
        generation["max_output_tokens"] = config.max_tokens
    if mode is Mode.TTS:
        generation["speech_config"] = _speech_config(client, config.tts_config)
        body["generation_config"] = generation
        body["response_format"] = {"type": "audio"}
    else:
        if config.system_prompt is not None:
            body["system_instruction"] = config.system_prompt
        if config.thinking_level is not None:
            generation["thinking_level"] = thinking_level_for(
                model, ThinkingLevel(config.thinking_level)
            )
        if config.thinking_summary is not None:
            generation["thinking_summaries"] = "auto" if config.thinking_summary else "none"
        if config.tools is not None and config.tool_choice is not None:
            generation["tool_choice"] = _tool_choice(client, config.tool_choice)
        generation.update(_sampling_fields(config))
        if generation:
            body["generation_config"] = generation
        if config.tools is not None:
            body["tools"] = [_tool(t.name, t.description, t.parameters) for t in config.tools]
        response_format = _response_format(config)
        if response_format is not None:
            body["response_format"] = response_format
    if config.fast_mode:
        body["service_tier"] = "priority"
    return body


def check_config(
    client: str, profile: InteractionsProfile, model: str, config: UniConfig
) -> None:
    """Raise what ``build_request`` would raise for ``config`` alone (08 D37).

    Raises:
        UnsupportedOperationError: an embedding model.
        UnsupportedParameterError: a value Gemini cannot take (05 §4.4).
    """
    _config_body(client, profile, model, config)


def build_request(
    client: str,
    profile: InteractionsProfile,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    """Build the streaming ``POST /v1/interactions`` request (spec 04 §4, 05 §4.4, §5).

    Raises:
        UnsupportedOperationError: an embedding model.
        UnsupportedParameterError: a config value Gemini cannot take (checked first).
        InvalidMessageError: a message with nothing to send but thinking, an item kind this
            protocol cannot carry (``item_type`` its bare kind), a tool result without
            ``tool_call_id``, a malformed data URI, a two-speaker script without a label.
        UnsupportedContentError: anything but text in the last message for a speech model.
    """
    config_body = _config_body(client, profile, model, config)
    if model_mode(model) is Mode.TTS:
        steps = _speech_steps(client, model, messages, config)
    else:
        converter = _Converter(client)
        walked = walk_messages(
            client, messages, converter.table, protocol_label="The Interactions API"
        )
        steps = [step for message in walked for step in _message_steps(client, message)]
    body: dict[str, Any] = {"model": model, "input": steps, "stream": True, "store": False}
    body.update(config_body)
    return HTTPRequest("POST", PATH, HEADERS, encode_json_body(body))


def _speech_steps(
    client: str, model: str, messages: Sequence[UniMessage], config: UniConfig
) -> list[dict[str, Any]]:
    """The one step a speech model takes: the last message's text (05 §5).

    With two speakers the text is a script, one ``Name: line`` per turn (01 §3), checked by
    ``script_turns``. A model of the ``gemini-3.8`` speech generation reads it as one text
    block per turn, without the label, annotated ``{"type": "speech_metadata", "speaker"}``
    (05 §1's "script split"); other models read the script whole.

    Raises:
        UnsupportedContentError: an item of the last message that is not text.
        InvalidMessageError: no text to speak (``message_index``); two speakers and a line of
            the script that opens with neither speaker's label (``item_type="text"``, 03 §2).
    """
    index = len(messages) - 1
    last = messages[index]
    texts = []
    for item in last.content_items:
        if not isinstance(item, TextDone):
            raise UnsupportedContentError(
                client, item_kind(item), detail="a speech model takes text only"
            )
        if item.text:
            texts.append(item.text)
    if not texts:
        raise InvalidMessageError(client, None, index, detail="nothing to send: no text to speak")
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts]
    speakers = config.tts_config or ()
    if len(speakers) == 2:
        turns = script_turns(client, index, "".join(texts), [s.speaker or "" for s in speakers])
        if SCRIPT_SPLIT_TOKEN in model_key(model):
            blocks = [
                {"type": "text", "text": said,
                 "annotations": [{"type": "speech_metadata", "speaker": speaker}]}
                for speaker, said in turns
            ]
    step_type = "model_output" if last.role == "assistant" else "user_input"
    return [{"type": step_type, "content": blocks}]


# --------------------------------------------------------------------------------------------
# Messages (05 §5)
# --------------------------------------------------------------------------------------------


class _Kind(enum.Enum):
    #: A content block of the message's ``user_input`` / ``model_output`` step.
    CONTENT = "content"
    #: A part of a thought step: a summary block, and the step's signature.
    THOUGHT = "thought"
    #: A step of its own (a function call or result).
    STEP = "step"


@final
@attrs.frozen
class _Piece:
    """What one item converts to."""

    kind: _Kind
    #: The block or step; ``None`` for a piece that only carries a signature.
    value: dict[str, Any] | None
    signature: str | None = None


def _signature(fidelity: Mapping[str, Any] | None) -> str | None:
    """The signature recorded in ``fidelity``, when it is a non-empty string.

    (05 §5's bytes signatures of older histories cannot reach a builder here: fidelity holds
    JSON values only, and the preflight refuses anything else, 08 D55.)
    """
    signature = (fidelity or {}).get("signature")
    return signature if isinstance(signature, str) and signature else None


def _media_type(mime: str) -> str:
    """The content block type of a MIME type (05 §5)."""
    kind = mime.partition("/")[0].lower()
    return kind if kind in ("image", "audio", "video") else "document"


def _inline(data: bytes, mime: str) -> dict[str, Any]:
    return {"type": _media_type(mime), "data": base64.b64encode(data).decode("ascii"),
            "mime_type": mime}


@final
class _Converter:
    """The converters of one request; it remembers the calls seen to name their results."""

    __slots__ = ("_calls", "_client", "table")

    def __init__(self, client: str) -> None:
        self._client = client
        #: ``tool_call_id`` -> name of every call converted so far.
        self._calls: dict[str, str] = {}
        self.table: Converters[_Piece] = {
            TextDone: self._text,
            ImageUrlDone: self._image_url,
            InlineDataDone: self._inline_data,
            ThinkingDone: self._thinking,
            InlineThinkingDone: self._inline_thinking,
            ToolCallDone: self._call,
            ToolResultDone: self._result,
        }

    def _text(self, context: MessageContext, item: Item) -> _Piece | None:
        assert isinstance(item, TextDone)
        signature = _signature(item.fidelity)
        if not item.text:
            return None if signature is None else _Piece(_Kind.CONTENT, None, signature)
        return _Piece(_Kind.CONTENT, {"type": "text", "text": item.text}, signature)

    def _image_url(self, context: MessageContext, item: Item) -> _Piece:
        assert isinstance(item, ImageUrlDone)
        return _Piece(_Kind.CONTENT, self._image(item.image_url, context.index))

    def _inline_data(self, context: MessageContext, item: Item) -> _Piece:
        assert isinstance(item, InlineDataDone)
        block = _inline(item.data, item.mime_type)
        return _Piece(_Kind.CONTENT, block, _signature(item.fidelity))

    def _thinking(self, context: MessageContext, item: Item) -> _Piece | None:
        assert isinstance(item, ThinkingDone)
        signature = _signature(item.fidelity)
        if not item.thinking and signature is None:
            return None
        block = {"type": "text", "text": item.thinking} if item.thinking else None
        return _Piece(_Kind.THOUGHT, block, signature)

    def _inline_thinking(self, context: MessageContext, item: Item) -> _Piece:
        assert isinstance(item, InlineThinkingDone)
        block = _inline(item.data, item.mime_type)
        return _Piece(_Kind.THOUGHT, block, _signature(item.fidelity))

    def _call(self, context: MessageContext, item: Item) -> _Piece:
        assert isinstance(item, ToolCallDone)
        self._calls[item.tool_call_id] = item.name
        step: dict[str, Any] = {
            "type": "function_call", "name": item.name, "arguments": dict(item.arguments),
        }
        if item.tool_call_id and item.tool_call_id != item.name:
            step["id"] = item.tool_call_id
        return _Piece(_Kind.STEP, step, _signature(item.fidelity))

    def _result(self, context: MessageContext, item: Item) -> _Piece:
        """A ``function_result`` step: the text, or blocks when there are images.

        Raises:
            InvalidMessageError: no ``tool_call_id``; a malformed data URI.
        """
        assert isinstance(item, ToolResultDone)
        call_id = item.tool_call_id
        if not call_id:
            raise InvalidMessageError(
                self._client, "tool_result", context.index,
                detail="a tool result needs tool_call_id",
            )
        name = self._calls.get(call_id, call_id)
        result: str | list[dict[str, Any]] = item.text
        if item.images:
            result = [{"type": "text", "text": item.text}] + [
                self._image(url, context.index) for url in item.images
            ]
        step: dict[str, Any] = {"type": "function_result", "name": name, "result": result}
        if call_id != name:
            step["call_id"] = call_id
        return _Piece(_Kind.STEP, step)

    def _image(self, url: str, index: int) -> dict[str, Any]:
        """An image block: a data URI inline, any other URL by ``uri``.

        Raises:
            InvalidMessageError: a malformed data URI.
        """
        decoded = parse_data_uri(self._client, url, index)
        if decoded is None:
            return {"type": "image", "uri": url}
        mime, data = decoded
        return _inline(data, mime)


def _message_steps(client: str, message: WalkedMessage[_Piece]) -> list[dict[str, Any]]:
    """The steps of one message, in item order (module docstring; 05 §5).

    Raises:
        InvalidMessageError: the message sends nothing but thought steps (an empty text that
            only carried a signature is no content, 08 D67).
    """
    role = message.message.role
    output_type = "model_output" if role == "assistant" else "user_input"
    steps: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    thought: dict[str, Any] | None = None

    def flush() -> None:
        if content:
            steps.append({"type": output_type, "content": list(content)})
            content.clear()

    for piece in message.parts:
        if piece.kind is _Kind.THOUGHT:
            flush()
            if thought is None:
                thought = {"type": "thought", "summary": []}
                steps.append(thought)
            if piece.value is not None:
                thought["summary"].append(piece.value)
            if piece.signature is not None:
                thought["signature"] = piece.signature
                thought = None
            continue
        thought = None
        if piece.signature is not None:
            opening = steps[0] if steps else None
            if opening is not None and opening["type"] == "thought" and "signature" not in opening:
                opening["signature"] = piece.signature
            else:
                flush()
                steps.append({"type": "thought", "signature": piece.signature})
        if piece.kind is _Kind.STEP:
            flush()
        if piece.value is not None:
            (content if piece.kind is _Kind.CONTENT else steps).append(piece.value)
    flush()
    for step in steps:
        if step.get("summary") == []:
            del step["summary"]  # a thought that is only its signature
    if all(step["type"] == "thought" for step in steps):
        raise InvalidMessageError(
            client, None, message.index,
            detail="nothing to send but thoughts: an empty text only carries a signature",
        )
    if role == "assistant" and _needs_placeholder(steps):
        steps.insert(0, {"type": "thought", "signature": SKIP_SIGNATURE})
    return steps


def _needs_placeholder(steps: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a model turn must open with the placeholder signature (05 §5): its thoughts do
    not come first, or it has output or calls but no signed thought."""
    thoughts = [step for step in steps if step["type"] == "thought"]
    if thoughts and steps[0]["type"] != "thought":
        return True
    acts = any(step["type"] != "thought" for step in steps)
    return acts and not any("signature" in step for step in thoughts)
