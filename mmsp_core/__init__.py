"""mmsp_core: the pure core of MMSP: values, wire JSON, SSE decoding, finalizer, pipeline.

No I/O, no ``async``, no clock, no environment: bytes in, events out (see README.md).
Everything in ``__all__`` is public; the submodules are free to change.

The stream machinery (``StreamPipeline``, ``StreamItems``, the decoders, ``PassThrough``,
``JsonEventsMachine``, ``HTTPRequest``) is loaded on first use (``mmsp_core.lazy``): a program
that only builds values and reads errors does not import it (docs/architecture.md "Import
cost").
"""

from typing import TYPE_CHECKING, Final

from .errors import (
    AbortedError,
    ApiKeyRequiredError,
    ConcurrentCallError,
    EmptyResponseError,
    IncompleteStreamError,
    InvalidMessageError,
    MalformedEventError,
    MMSPError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamError,
    RoutingError,
    StreamLimitError,
    StreamProtocolError,
    StreamTimeoutError,
    ToolCallArgumentParseError,
    UnknownEventError,
    UnsupportedContentError,
    UnsupportedOperationError,
    UnsupportedParameterError,
    UpstreamError,
    WireFormatError,
)
from .lazy import on_first_use
from .messages import concat_uni_events_to_uni_message, normalize_legacy_messages
from .model import (
    DeltaItem,
    DoneItem,
    EmbeddingConfig,
    EmbeddingDelta,
    EmbeddingDone,
    FinishReason,
    ImageConfig,
    ImageUrlDone,
    InlineDataDelta,
    InlineDataDone,
    InlineThinkingDelta,
    InlineThinkingDone,
    Item,
    PromptCaching,
    ResponseFormat,
    SpeakerConfig,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDelta,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from .wire import (
    config_from_wire,
    error_from_wire,
    event_from_wire,
    message_from_wire,
    to_wire,
)

if TYPE_CHECKING:
    from .grammar import PassThrough
    from .items import StreamItems
    from .json_events import JsonEventsMachine
    from .pipeline import END, NEED_DATA, Machine, StreamPipeline
    from .request import HTTPRequest
    from .sse import BodyDecoder, SSEDecoder, SSEEvent

#: The names loaded on first use, each with the module that defines it (module doc).
_ON_FIRST_USE: Final = {
    "PassThrough": "mmsp_core.grammar",
    "StreamItems": "mmsp_core.items",
    "JsonEventsMachine": "mmsp_core.json_events",
    "END": "mmsp_core.pipeline",
    "NEED_DATA": "mmsp_core.pipeline",
    "Machine": "mmsp_core.pipeline",
    "StreamPipeline": "mmsp_core.pipeline",
    "HTTPRequest": "mmsp_core.request",
    "BodyDecoder": "mmsp_core.sse",
    "SSEDecoder": "mmsp_core.sse",
    "SSEEvent": "mmsp_core.sse",
}

__all__ = [
    "END",
    "NEED_DATA",
    "AbortedError",
    "ApiKeyRequiredError",
    "BodyDecoder",
    "ConcurrentCallError",
    "DeltaItem",
    "DoneItem",
    "EmbeddingConfig",
    "EmbeddingDelta",
    "EmbeddingDone",
    "EmptyResponseError",
    "FinishReason",
    "HTTPRequest",
    "ImageConfig",
    "ImageUrlDone",
    "IncompleteStreamError",
    "InlineDataDelta",
    "InlineDataDone",
    "InlineThinkingDelta",
    "InlineThinkingDone",
    "InvalidMessageError",
    "Item",
    "JsonEventsMachine",
    "MMSPError",
    "Machine",
    "MalformedEventError",
    "PassThrough",
    "PromptCaching",
    "ProviderConnectionError",
    "ProviderHTTPError",
    "ProviderStreamError",
    "ResponseFormat",
    "RoutingError",
    "SSEDecoder",
    "SSEEvent",
    "SpeakerConfig",
    "StreamItems",
    "StreamLimitError",
    "StreamPipeline",
    "StreamProtocolError",
    "StreamTimeoutError",
    "TextDelta",
    "TextDone",
    "ThinkingDelta",
    "ThinkingDone",
    "ThinkingLevel",
    "ToolCallArgumentParseError",
    "ToolCallDelta",
    "ToolCallDone",
    "ToolResultDone",
    "ToolSchema",
    "UniConfig",
    "UniEvent",
    "UniMessage",
    "UnknownEventError",
    "UnsupportedContentError",
    "UnsupportedOperationError",
    "UnsupportedParameterError",
    "UpstreamError",
    "UsageMetadata",
    "WireFormatError",
    "concat_uni_events_to_uni_message",
    "config_from_wire",
    "error_from_wire",
    "event_from_wire",
    "message_from_wire",
    "normalize_legacy_messages",
    "to_wire",
]

__getattr__, __dir__ = on_first_use(globals(), _ON_FIRST_USE, __all__)
