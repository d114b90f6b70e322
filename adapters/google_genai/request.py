"""generateContent requests: config mapping and message conversion (spec 04 §4, 05 §2.3, §4.4,
§5).

``POST /v1/models/{model}:streamGenerateContent?alt=sse`` with the key in ``x-goog-api-key``
(added by the I/O layer, never in the URL: 08 D17). Only ``contents``, ``systemInstruction``,
``tools`` and ``toolConfig`` are top-level; every generation setting sits inside
``generationConfig`` (a top-level ``thinkingConfig`` is an unknown field, HTTP 400).

The config is mapped first, so its errors come first (02 §8): any ``temperature``, a
``prompt_caching`` other than ``enable``, ``fast_mode`` and an empty ``tool_choice`` list
are ``UnsupportedParameterError`` on every model, and on a TTS model a ``tts_config`` that
is neither one voice nor two named speakers. The model's mode (``adapters._google.thinking``)
decides the rest: a TTS model gets ``responseModalities: ["AUDIO"]``, its speech settings and
``maxOutputTokens`` only; any other model its thinking level (``thinking_level_for``,
upper-cased; never raising), ``includeThoughts`` from ``thinking_summary``, tools, tool
choice and image settings.

Messages are walked with ``adapters._build.walk_messages``: one ``Content(role, parts)`` per
message (assistant -> ``model``), each item one part, with its signature as
``thoughtSignature``. In a model turn a signed text thought's signature moves onto the first
function call after it (else onto the next unsigned part), unsigned empty thoughts are
dropped and an unsigned first call gets the documented placeholder signature (05 §5). A tool
result is a ``functionResponse`` named after its call. Images are inline data only: a data URI
becomes ``inlineData``; http(s) images are fetched into data URIs by the I/O layer first (the
row's ``inlines_remote_images``, 08 D37), so one that still arrives here is refused. A TTS
request sends only the text of the last message. With two speakers that text is a script, one
``Name: line`` per turn (01 §3): every line that is not blank must open with a configured
speaker's label (``adapters._google.script``, shared with google-official's builder), else
``InvalidMessageError(item_type="text")`` (03 §2). A ``gemini-3.8`` speech model takes the
script split (05 §1): one text part per turn, its label removed (those models read no labels)
and its speaker in ``speechMetadata``; other speech models read the labelled script whole.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Final

from adapters._build import Converters, MessageContext, item_kind, walk_messages
from adapters._convert import check_tool_choice_list, model_key, parse_data_uri
from adapters._google.sampling import JSON_MIME_TYPE, sampling_of
from adapters._google.script import SCRIPT_SPLIT_TOKEN, script_turns
from adapters._google.thinking import Mode, model_mode, thinking_level_for
from adapters._google.vertex import vertex_path
from adapters._sampling import check_sampling
from mmsp_core.errors import (
    InvalidMessageError,
    RoutingError,
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
    TextDone,
    ThinkingDone,
    ToolCallDone,
    ToolResultDone,
    UniConfig,
    UniMessage,
)
from mmsp_core.request import HTTPRequest, encode_json_body

from .profiles import GenAIProfile

__all__ = [
    "DEFAULT_VOICE",
    "HEADERS",
    "PLACEHOLDER_SIGNATURE",
    "build_request",
    "check_config",
    "path",
]

HEADERS: Final = (("content-type", "application/json"), ("accept", "text/event-stream"))
PROTOCOL_LABEL: Final = "Gemini generateContent"
#: The voice of a TTS request without ``tts_config`` (05 §4.4).
DEFAULT_VOICE: Final = "Kore"
#: The signature Gemini documents for a model turn whose signature is lost (01 §5, 05 §5).
PLACEHOLDER_SIGNATURE: Final = "skip_thought_signature_validator"

_TOOL_MODES: Final = {"auto": "AUTO", "none": "NONE", "required": "ANY"}

JSON = dict[str, Any]


def path(profile: GenAIProfile, model: str) -> str:
    """The request path of ``model`` (04 §4), the id percent-encoded as one path segment; on
    Vertex AI under the profile's project (``vertex_path``, 08 D72)."""
    segment = urllib.parse.quote(model, safe="")
    models = f"/{profile.api_version}/models"
    if profile.vertex_project is not None:
        models = vertex_path(profile.api_version, profile.vertex_project,
                             profile.vertex_location) + "/models"
    return f"{models}/{segment}:streamGenerateContent?alt=sse"


# --------------------------------------------------------------------------------------------
# Config mapping (05 §2.3, §3, §4.4)
# --------------------------------------------------------------------------------------------


def _check(client: str, config: UniConfig) -> None:
    """Refuse what generateContent cannot send on any model, in the order of 05 §4.4.

    Raises:
        UnsupportedParameterError: any ``temperature`` (checked first); ``prompt_caching``
            other than ``enable``; ``fast_mode``; an empty ``tool_choice`` list (08 D10).
    """
    if config.temperature is not None:
        raise UnsupportedParameterError(
            client, "temperature", detail="Gemini models take no temperature from MMSP"
        )
    if config.prompt_caching not in (None, PromptCaching.ENABLE):
        raise UnsupportedParameterError(
            client, "prompt_caching", detail=f"{client} accepts only 'enable'"
        )
    if config.fast_mode:
        raise UnsupportedParameterError(client, "fast_mode", detail=f"{client} has no fast mode")
    check_tool_choice_list(client, config)


def _speech_config(client: str, model: str, config: UniConfig) -> JSON:
    """``generationConfig.speechConfig`` of a TTS request (05 §4.4).

    Raises:
        UnsupportedParameterError: ``tts_config`` of another count than 0, 1 or 2, or two
            entries not both naming their ``speaker``.
    """
    speakers = config.tts_config or ()
    if len(speakers) <= 1:
        voice = speakers[0].voice if speakers else DEFAULT_VOICE
        return {"voiceConfig": _voice(voice)}
    if len(speakers) != 2:
        raise UnsupportedParameterError(
            client, "tts_config", detail=f"{model} speaks with one voice or two speakers"
        )
    if not all(speaker.speaker for speaker in speakers):
        raise UnsupportedParameterError(
            client, "tts_config", detail="each of two voices needs its speaker"
        )
    return {
        "multiSpeakerVoiceConfig": {
            "speakerVoiceConfigs": [
                {"speaker": speaker.speaker, "voiceConfig": _voice(speaker.voice)}
                for speaker in speakers
            ]
        }
    }


def _voice(name: str) -> JSON:
    return {"prebuiltVoiceConfig": {"voiceName": name}}


def _config_fields(client: str, model: str, config: UniConfig) -> JSON:
    """Return the body fields besides ``contents`` (05 §4.4).

    Raises:
        UnsupportedParameterError: see ``_check`` and, on a TTS model, ``_speech_config``.
        UnsupportedOperationError: an embedding model, served by the ``google-embedding``
            protocol (08 D64), not by generateContent.
    """
    mode = model_mode(model)
    if mode is Mode.EMBEDDING:
        raise UnsupportedOperationError(
            client, "streaming",
            detail=f"{model!r} is an embedding model of the google-embedding protocol",
        )
    _check(client, config)
    check_sampling(client, config, sampling_of(mode))
    generation: JSON = {}
    fields: JSON = {}
    if mode is Mode.TTS:
        generation["responseModalities"] = ["AUDIO"]
        generation["speechConfig"] = _speech_config(client, model, config)
        _put(generation, "maxOutputTokens", config.max_tokens)
        return {"generationConfig": generation}
    _put(generation, "maxOutputTokens", config.max_tokens)
    generation.update(_sampling_fields(config))
    thinking: JSON = {}
    if config.thinking_level is not None:
        level = thinking_level_for(model, config.thinking_level)
        if level is not None:
            thinking["thinkingLevel"] = level.upper()
    _put(thinking, "includeThoughts", config.thinking_summary)
    if thinking:
        generation["thinkingConfig"] = thinking
    if config.image_config is not None:
        image: JSON = {}
        _put(image, "aspectRatio", config.image_config.aspect_ratio)
        _put(image, "imageSize", config.image_config.image_size)
        generation["imageConfig"] = image
    if config.system_prompt:
        fields["systemInstruction"] = {"parts": [{"text": config.system_prompt}]}
    if config.tools is not None:
        declarations = []
        for tool in config.tools:
            declaration: JSON = {"name": tool.name, "description": tool.description}
            _put(declaration, "parameters", tool.parameters)
            declarations.append(declaration)
        fields["tools"] = [{"functionDeclarations": declarations}]
        choice = config.tool_choice
        if isinstance(choice, tuple):
            calling: JSON = {"mode": "ANY", "allowedFunctionNames": list(choice)}
            fields["toolConfig"] = {"functionCallingConfig": calling}
        elif choice is not None:
            mode_name = _TOOL_MODES.get(choice, choice.upper())
            fields["toolConfig"] = {"functionCallingConfig": {"mode": mode_name}}
    if generation:
        fields["generationConfig"] = generation
    return fields


def _sampling_fields(config: UniConfig) -> JSON:
    """The ``generationConfig`` fields of 08 D74 (generateContent's ``GenerationConfig``):
    ``topP``, ``stopSequences``, ``seed``, and for ``response_format`` the JSON MIME type with
    the schema as ``responseJsonSchema`` (a ``json_object`` format sends the MIME type alone;
    Gemini enforces a schema whatever ``strict`` says)."""
    fields: JSON = {}
    _put(fields, "topP", config.top_p)
    if config.stop_sequences is not None:
        fields["stopSequences"] = list(config.stop_sequences)
    _put(fields, "seed", config.seed)
    asked = config.response_format
    if asked is not None:
        fields["responseMimeType"] = JSON_MIME_TYPE
        _put(fields, "responseJsonSchema", asked.schema)
    return fields


def _put(fields: JSON, key: str, value: Any) -> None:
    if value is not None:
        fields[key] = value


# --------------------------------------------------------------------------------------------
# Message conversion (05 §5)
# --------------------------------------------------------------------------------------------


def _signed(part: JSON, fidelity: Mapping[str, Any] | None) -> JSON:
    """``part`` with the item's signature as ``thoughtSignature`` (base64 text, 01 §5; the
    preflight has refused fidelity that is not JSON, so raw bytes never reach here)."""
    signature = (fidelity or {}).get("signature")
    if isinstance(signature, str) and signature:
        part["thoughtSignature"] = signature
    return part


def _inline(mime: str, data: bytes) -> JSON:
    return {"inlineData": {"mimeType": mime, "data": base64.b64encode(data).decode("ascii")}}


def _image(client: str, url: str, index: int) -> JSON:
    """An image URL as an ``inlineData`` part.

    Raises:
        InvalidMessageError: not a ``data:`` URI, or a malformed one (``item_type="image_url"``).
    """
    parsed = parse_data_uri(client, url, index)
    if parsed is None:
        raise InvalidMessageError(
            client, "image_url", index,
            detail="Gemini takes images as inline data: pass a data: URI (AutoLLMClient "
            "fetches http(s) images)",
        )
    return _inline(*parsed)


def _text(context: MessageContext, item: Item) -> JSON:
    assert isinstance(item, TextDone)
    return _signed({"text": item.text}, item.fidelity)


def _thought(context: MessageContext, item: Item) -> JSON:
    assert isinstance(item, ThinkingDone)
    return _signed({"text": item.thinking, "thought": True}, item.fidelity)


def _inline_data(context: MessageContext, item: Item) -> JSON:
    assert isinstance(item, InlineDataDone)
    return _signed(_inline(item.mime_type, item.data), item.fidelity)


def _inline_thought(context: MessageContext, item: Item) -> JSON:
    assert isinstance(item, InlineThinkingDone)
    return _signed({**_inline(item.mime_type, item.data), "thought": True}, item.fidelity)


def _image_url(context: MessageContext, item: Item) -> JSON:
    assert isinstance(item, ImageUrlDone)
    return _image(context.client, item.image_url, context.index)


def _function_call(context: MessageContext, item: Item) -> JSON:
    assert isinstance(item, ToolCallDone)
    call: JSON = {"name": item.name, "args": dict(item.arguments)}
    if item.tool_call_id != item.name:
        call["id"] = item.tool_call_id
    return _signed({"functionCall": call}, item.fidelity)


def _function_response(names: Mapping[str, str]) -> Any:
    def convert(context: MessageContext, item: Item) -> JSON:
        """A ``functionResponse`` named after its call (the id itself when no call has it).

        Raises:
            InvalidMessageError: the result has no ``tool_call_id`` (05 §5), or a malformed
                image.
        """
        assert isinstance(item, ToolResultDone)
        if not item.tool_call_id:
            raise InvalidMessageError(
                context.client, "tool_result", context.index, detail="a tool result needs its id"
            )
        name = names.get(item.tool_call_id, item.tool_call_id)
        response: JSON = {"name": name, "response": {"result": item.text}}
        if item.tool_call_id != name:
            response["id"] = item.tool_call_id
        if item.images:
            response["parts"] = [_image(context.client, url, context.index) for url in item.images]
        return {"functionResponse": response}

    return convert


def _converters(names: Mapping[str, str]) -> Converters[JSON]:
    return {
        TextDone: _text,
        ThinkingDone: _thought,
        InlineDataDone: _inline_data,
        InlineThinkingDone: _inline_thought,
        ImageUrlDone: _image_url,
        ToolCallDone: _function_call,
        ToolResultDone: _function_response(names),
    }


def _call_names(messages: Sequence[UniMessage]) -> dict[str, str]:
    """Each tool call's id -> its function name, for the results that answer it."""
    return {
        item.tool_call_id: item.name
        for message in messages
        for item in message.content_items
        if isinstance(item, ToolCallDone)
    }


def _model_turn(parts: list[JSON]) -> list[JSON]:
    """Place a model turn's signatures as Gemini wants them back (05 §5).

    A signed text thought gives its signature to the first function call after it, else to
    the next unsigned part that is no thought (when one is unsigned); thoughts left empty and
    unsigned are dropped; an unsigned first function call gets ``PLACEHOLDER_SIGNATURE``.
    """
    for index, part in enumerate(parts):
        if not (part.get("thought") and "text" in part and "thoughtSignature" in part):
            continue
        later = parts[index + 1 :]
        target = next((p for p in later if "functionCall" in p), None)
        if target is None:
            target = next((p for p in later if not p.get("thought")), None)
        if target is not None and "thoughtSignature" not in target:
            target["thoughtSignature"] = part.pop("thoughtSignature")
    kept = [
        part
        for part in parts
        if not (part.get("thought") and part.get("text") == "" and "thoughtSignature" not in part)
    ]
    first_call = next((part for part in kept if "functionCall" in part), None)
    if first_call is not None and "thoughtSignature" not in first_call:
        first_call["thoughtSignature"] = PLACEHOLDER_SIGNATURE
    return kept


def _contents(client: str, messages: Sequence[UniMessage]) -> list[JSON]:
    """The ``contents`` of a generation request (05 §5).

    Raises:
        InvalidMessageError: see ``build_request``.
    """
    walked = walk_messages(
        client, messages, _converters(_call_names(messages)), protocol_label=PROTOCOL_LABEL
    )
    contents = []
    for message in walked:
        if message.message.role == "assistant":
            contents.append({"role": "model", "parts": _model_turn(message.parts)})
        else:
            contents.append({"role": "user", "parts": message.parts})
    return contents


def _speech_contents(
    client: str, model: str, messages: Sequence[UniMessage], config: UniConfig
) -> list[JSON]:
    """The ``contents`` of a TTS request: the text of the last message only (05 §5); with two
    speakers a script, split into one part per turn on a ``gemini-3.8`` model (module doc).

    Raises:
        UnsupportedContentError: a non-text item in the last message.
        InvalidMessageError: the last message has no text (``message_index``); with two
            speakers, a line without a speaker's label (``item_type="text"``, ``script_turns``).
    """
    index = len(messages) - 1
    last = messages[index]
    texts = []
    for item in last.content_items:
        if not isinstance(item, TextDone):
            raise UnsupportedContentError(
                client, item_kind(item), detail="a speech model reads only text"
            )
        texts.append(item.text)
    text = "".join(texts)
    if not text:
        raise InvalidMessageError(client, None, index, detail="nothing to speak: no text")
    parts: list[JSON] = [{"text": text}]
    speakers = config.tts_config or ()
    if len(speakers) == 2:
        turns = script_turns(client, index, text, [s.speaker or "" for s in speakers])
        if SCRIPT_SPLIT_TOKEN in model_key(model):
            parts = [{"text": said, "speechMetadata": {"speaker": speaker}}
                     for speaker, said in turns]
    return [{"role": "user", "parts": parts}]


# --------------------------------------------------------------------------------------------
# Entry points (adapters._spec.BuildRequest, CheckConfig)
# --------------------------------------------------------------------------------------------


def _genai_profile(client: str, profile: object, model: str) -> GenAIProfile:
    """The client row's profile.

    Raises:
        RoutingError: the row has no ``GenAIProfile``, so it is no generateContent client.
    """
    if not isinstance(profile, GenAIProfile):
        raise RoutingError(model, client, detail="not a Gemini generateContent client type")
    return profile


def check_config(client: str, profile: GenAIProfile, model: str, config: UniConfig) -> None:
    """Raise what ``build_request`` would raise for ``config`` alone (08 D37).

    Raises:
        UnsupportedParameterError: a value generateContent cannot send (05 §4.4).
        UnsupportedOperationError: an embedding model (``google-embedding``'s, 08 D64).
        RoutingError: the client row has no ``GenAIProfile``.
    """
    _genai_profile(client, profile, model)
    _config_fields(client, model, config)


def build_request(
    client: str,
    profile: GenAIProfile,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    """Build the ``streamGenerateContent`` request (04 §4); headers carry no key.

    The config is mapped first, then the messages (02 §8).

    Raises:
        UnsupportedParameterError, UnsupportedOperationError: see ``check_config``.
        RoutingError: the client row has no ``GenAIProfile``.
        InvalidMessageError: an item generateContent cannot carry (``item_type``), a tool
            result without its id, an image that is not a (well-formed) data URI, a message
            with nothing sendable (``message_index``; only thinking: 08 D67), a TTS
            request whose last message has no text, or a two-speaker script with a line
            that opens with no speaker's label (``item_type="text"``).
        UnsupportedContentError: a non-text item in the last message of a TTS request.
    """
    genai = _genai_profile(client, profile, model)
    fields = _config_fields(client, model, config)
    if model_mode(model) is Mode.TTS:
        contents = _speech_contents(client, model, messages, config)
    else:
        contents = _contents(client, messages)
    body = {"contents": contents, **fields}
    return HTTPRequest("POST", path(genai, model), HEADERS, encode_json_body(body))
