"""MMSP values: content items, usage, events, messages and config.

Every value is an ``attrs`` frozen, slotted class whose field names are the wire names of the
seeds (spec 01, 08 D3). ``mmsp_core.wire`` maps them to and from JSON. Item classes carry their
wire ``type`` as a class attribute; ``ITEM_CLASSES`` maps each wire type to its class.

Fidelity is an opaque JSON object (spec 01 §5). On the *client* stream an item's identity
travels as ``fidelity["item_id"]``; the finalizer strips it before anything reaches the public
stream (spec 02 §4, 09).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, Literal, TypeAlias, final

import attrs

__all__ = [
    "ITEM_CLASSES",
    "DeltaItem",
    "DoneItem",
    "EmbeddingConfig",
    "EmbeddingDelta",
    "EmbeddingDone",
    "EventType",
    "FinishReason",
    "ImageConfig",
    "ImageUrlDone",
    "InlineDataDelta",
    "InlineDataDone",
    "InlineThinkingDelta",
    "InlineThinkingDone",
    "Item",
    "PromptCaching",
    "ResponseFormat",
    "Role",
    "SpeakerConfig",
    "TextDelta",
    "TextDone",
    "ThinkingDelta",
    "ThinkingDone",
    "ThinkingLevel",
    "ToolCallDelta",
    "ToolCallDone",
    "ToolResultDone",
    "ToolSchema",
    "UniConfig",
    "UniEvent",
    "UniMessage",
    "UsageMetadata",
]

Role: TypeAlias = Literal["user", "assistant"]
EventType: TypeAlias = Literal["delta", "stop"]
Fidelity: TypeAlias = Mapping[str, Any]


class FinishReason(enum.StrEnum):
    """Why a response ended; the only four values of the public stream (seed "流式")."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALL = "tool_call"
    UNKNOWN = "unknown"


class ThinkingLevel(enum.StrEnum):
    """How much a model should think; every level works on every client (RFC-0003 §6.3)."""

    NONE = "none"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"
    MAX = "max"


class PromptCaching(enum.StrEnum):
    """Cache policy (spec 01 §1); absent means ``enable``."""

    ENABLE = "enable"
    DISABLE = "disable"
    ENHANCE = "enhance"


# --------------------------------------------------------------------------------------------
# Content items (spec 01 §4). One class per wire type; never subclass them.
# --------------------------------------------------------------------------------------------

@final
@attrs.frozen(slots=True)
class TextDelta:
    """A fragment of answer text."""

    type: ClassVar[str] = "text.delta"
    text: str
    fidelity: Fidelity | None = None


@final
@attrs.frozen(slots=True)
class TextDone:
    """A whole text item."""

    type: ClassVar[str] = "text.done"
    text: str
    fidelity: Fidelity | None = None


@final
@attrs.frozen(slots=True)
class ThinkingDelta:
    """A fragment of the model's thinking."""

    type: ClassVar[str] = "thinking.delta"
    thinking: str
    fidelity: Fidelity | None = None


@final
@attrs.frozen(slots=True)
class ThinkingDone:
    """A whole thinking item; its fidelity (a signature, ...) must be replayed unchanged."""

    type: ClassVar[str] = "thinking.done"
    thinking: str
    fidelity: Fidelity | None = None


@final
@attrs.frozen(slots=True)
class ToolCallDelta:
    """A fragment of a tool call: ``name`` and ``tool_call_id`` are set on the first only."""

    type: ClassVar[str] = "tool_call.delta"
    name: str
    tool_call_id: str
    arguments: str
    fidelity: Fidelity | None = None


@final
@attrs.frozen(slots=True)
class ToolCallDone:
    """A whole tool call with its arguments parsed into a JSON object."""

    type: ClassVar[str] = "tool_call.done"
    name: str
    tool_call_id: str
    arguments: Mapping[str, Any]
    fidelity: Fidelity | None = None


@final
@attrs.frozen(slots=True)
class InlineDataDelta:
    """A chunk of generated media (audio arrives in chunks; every image is an item)."""

    type: ClassVar[str] = "inline_data.delta"
    data: bytes
    mime_type: str
    fidelity: Fidelity | None = None


@final
@attrs.frozen(slots=True)
class InlineDataDone:
    """Whole media bytes: user input media or generated images and audio."""

    type: ClassVar[str] = "inline_data.done"
    data: bytes
    mime_type: str
    fidelity: Fidelity | None = None


@final
@attrs.frozen(slots=True)
class InlineThinkingDelta:
    """An interim "thought image" of an image model."""

    type: ClassVar[str] = "inline_thinking.delta"
    data: bytes
    mime_type: str
    fidelity: Fidelity | None = None


@final
@attrs.frozen(slots=True)
class InlineThinkingDone:
    """A whole interim thought image."""

    type: ClassVar[str] = "inline_thinking.done"
    data: bytes
    mime_type: str
    fidelity: Fidelity | None = None


@final
@attrs.frozen(slots=True)
class EmbeddingDelta:
    """A whole embedding vector (one per input message)."""

    type: ClassVar[str] = "embedding.delta"
    embedding: tuple[float, ...]
    fidelity: None = None


@final
@attrs.frozen(slots=True)
class EmbeddingDone:
    """The embedding vector of one input message."""

    type: ClassVar[str] = "embedding.done"
    embedding: tuple[float, ...]
    fidelity: None = None


@final
@attrs.frozen(slots=True)
class ToolResultDone:
    """The result of a tool call, written by the user side (no delta form, no fidelity)."""

    type: ClassVar[str] = "tool_result.done"
    text: str
    tool_call_id: str
    images: tuple[str, ...] | None = None
    fidelity: None = None


@final
@attrs.frozen(slots=True)
class ImageUrlDone:
    """An image given by URL or ``data:`` URI, written by the user side (no fidelity)."""

    type: ClassVar[str] = "image_url.done"
    image_url: str
    fidelity: None = None


DeltaItem: TypeAlias = (
    TextDelta
    | ThinkingDelta
    | ToolCallDelta
    | InlineDataDelta
    | InlineThinkingDelta
    | EmbeddingDelta
)
DoneItem: TypeAlias = (
    TextDone
    | ThinkingDone
    | ToolCallDone
    | InlineDataDone
    | InlineThinkingDone
    | EmbeddingDone
    | ToolResultDone
    | ImageUrlDone
)
Item: TypeAlias = DeltaItem | DoneItem

ITEM_CLASSES: Final[Mapping[str, type[Item]]] = {
    cls.type: cls
    for cls in (
        TextDelta,
        TextDone,
        ThinkingDelta,
        ThinkingDone,
        ToolCallDelta,
        ToolCallDone,
        InlineDataDelta,
        InlineDataDone,
        InlineThinkingDelta,
        InlineThinkingDone,
        EmbeddingDelta,
        EmbeddingDone,
        ToolResultDone,
        ImageUrlDone,
    )
}


# --------------------------------------------------------------------------------------------
# Usage, events, messages (spec 01 §2, §3, §6)
# --------------------------------------------------------------------------------------------


@final
@attrs.frozen(slots=True)
class UsageMetadata:
    """Token counts of one request; ``None`` means the provider did not report that count."""

    cached_tokens: int | None = None
    prompt_tokens: int | None = None
    thoughts_tokens: int | None = None
    response_tokens: int | None = None

    def merge(self, later: UsageMetadata) -> UsageMetadata:
        """Return these counts with every count ``later`` reports replacing this one.

        Field by field, never summed: a later ``0`` replaces, a later ``None`` keeps the
        earlier value (RFC-0003 §4.2, spec 02 §6, 08 D7).
        """
        return UsageMetadata(
            self.cached_tokens if later.cached_tokens is None else later.cached_tokens,
            self.prompt_tokens if later.prompt_tokens is None else later.prompt_tokens,
            self.thoughts_tokens if later.thoughts_tokens is None else later.thoughts_tokens,
            self.response_tokens if later.response_tokens is None else later.response_tokens,
        )


@final
@attrs.frozen(slots=True)
class UniEvent:
    """One stream event.

    On the public stream a ``delta`` event holds exactly one item and a ``stop`` event none,
    with usage and finish reason (seed "流式"). On the client stream (what a machine yields)
    a delta event holds zero or more delta items, a ``stop`` event carries whatever part of
    usage or finish reason one wire event reported (and may hold items), and ``created_at`` is
    ``None`` (spec 02 §2.1).
    """

    event_type: EventType
    content_items: tuple[Item, ...] = ()
    usage_metadata: UsageMetadata | None = None
    finish_reason: FinishReason | None = None
    created_at: int | None = None
    role: Literal["assistant"] = "assistant"


@final
@attrs.frozen(slots=True)
class UniMessage:
    """A conversation message: ``content_items`` holds done items only (spec 01 §2).

    There is no ``system`` role: system text is ``UniConfig.system_prompt``. The class methods
    ``user``, ``assistant`` and ``tool_result`` build the common messages; they are ordinary
    values, checked like any other before a request (08 D58).
    """

    role: Role
    content_items: tuple[DoneItem, ...]
    usage_metadata: UsageMetadata | None = None
    finish_reason: FinishReason | None = None
    created_at: int | None = None

    @classmethod
    def user(cls, *content: str | DoneItem) -> UniMessage:
        """A user message; each string becomes a ``TextDone``, items are kept in order.

        ``UniMessage.user("Hi")`` is ``UniMessage("user", (TextDone("Hi"),))``;
        ``UniMessage.user("What is this?", ImageUrlDone(url))`` adds an image after the text.
        """
        return cls("user", _items_of(content))

    @classmethod
    def assistant(cls, *content: str | DoneItem) -> UniMessage:
        """An assistant message, as ``user`` builds a user message (to write a history by hand)."""
        return cls("assistant", _items_of(content))

    @classmethod
    def tool_result(
        cls, call: ToolCallDone, text: str, *, images: Sequence[str] | None = None
    ) -> UniMessage:
        """The user message that answers the tool call ``call`` with ``text``.

        It holds one ``ToolResultDone`` carrying ``call.tool_call_id``, which is how every
        provider pairs a result with its call; ``images`` are URLs or ``data:`` URIs shown with
        the result where the provider takes them (spec 01 §4).
        """
        shown = None if images is None else tuple(images)
        return cls("user", (ToolResultDone(text, call.tool_call_id, shown),))


def _items_of(content: tuple[str | DoneItem, ...]) -> tuple[DoneItem, ...]:
    return tuple(TextDone(part) if isinstance(part, str) else part for part in content)


# --------------------------------------------------------------------------------------------
# Config (spec 01 §7)
# --------------------------------------------------------------------------------------------


@final
@attrs.frozen(slots=True)
class ToolSchema:
    """A tool the model may call; ``parameters`` is a JSON-Schema object."""

    name: str
    description: str
    parameters: Mapping[str, Any] | None = None


@final
@attrs.frozen(slots=True)
class ImageConfig:
    """Image-generation options."""

    aspect_ratio: str | None = None
    image_size: str | None = None


@final
@attrs.frozen(slots=True)
class SpeakerConfig:
    """One voice of a speech request."""

    voice: str
    speaker: str | None = None


@final
@attrs.frozen(slots=True)
class EmbeddingConfig:
    """Embedding options."""

    dimensions: int | None = None


@final
@attrs.frozen(slots=True)
class ResponseFormat:
    """Structured output: the answer is JSON, as a normal ``text.done`` (08 D74).

    ``ResponseFormat("json_schema", name, schema)`` asks for JSON valid for the JSON-Schema
    object ``schema`` (``strict`` asks the provider to enforce it where it can);
    ``ResponseFormat("json_object")`` asks for any JSON object and takes neither a name nor a
    schema. Validating the answer is the caller's business.
    """

    type: Literal["json_schema", "json_object"] = "json_schema"
    name: str | None = None
    schema: Mapping[str, Any] | None = None
    strict: bool = True


@final
@attrs.frozen(slots=True, kw_only=True)
class UniConfig:
    """Request options; every key optional.

    Unknown keys are kept in ``extra`` (09): provider clients ignore them with a warning that
    names the close match ("did you mean 'max_tokens'?") and refuse them in strict mode; the
    mmsp client forwards them (08 D57).
    """

    max_tokens: int | None = None
    temperature: float | None = None
    #: Nucleus sampling, in (0, 1] (08 D74).
    top_p: float | None = None
    #: One to four non-empty strings that end the answer where they appear (08 D74).
    stop_sequences: tuple[str, ...] | None = None
    seed: int | None = None
    response_format: ResponseFormat | None = None
    tools: tuple[ToolSchema, ...] | None = None
    tool_choice: str | tuple[str, ...] | None = None
    thinking_level: ThinkingLevel | None = None
    thinking_summary: bool | None = None
    system_prompt: str | None = None
    prompt_caching: PromptCaching | None = None
    fast_mode: bool | None = None
    image_config: ImageConfig | None = None
    tts_config: tuple[SpeakerConfig, ...] | None = None
    embedding_config: EmbeddingConfig | None = None
    trace_id: str | None = None
    #: A JSON object merged into the request body after the mapping, objects recursively, for
    #: fields the mapping does not know; it may not overwrite what the mapping wrote (08 D57).
    extra_body: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict)
