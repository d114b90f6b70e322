"""mmsp_io: the I/O layer of MMSP over anyio and httpx, under asyncio and trio alike.

Most users import only this package (08 D1): ``AutoLLMClient`` streams any supported model,
``Timeouts`` and ``AbortSignal`` control a call, ``open_stream`` runs any pipeline over an
``httpx.AsyncClient``, and the values, items and errors a client user meets are re-exported
from ``mmsp_core`` and ``adapters``.

``AutoLLMClient``, ``Timeouts``, ``RemoteImages`` (which remote images a client fetches),
``Telemetry`` (OpenTelemetry spans of calls, opt-in),
``open_stream``, ``fast_http_client`` (an ``httpx.AsyncClient`` on the library's fast HTTP/1.1
transport, 08 D79) and ``list_supported_models`` are loaded on first use (``mmsp_core.lazy``):
they bring in httpx and every protocol package, which a program that only needs the values and
errors never pays for (issue 9, docs/architecture.md "Import cost").
"""

from typing import TYPE_CHECKING, Final

from mmsp_core import (
    AbortedError,
    ApiKeyRequiredError,
    ConcurrentCallError,
    EmbeddingConfig,
    EmbeddingDelta,
    EmbeddingDone,
    EmptyResponseError,
    FinishReason,
    ImageConfig,
    ImageUrlDone,
    IncompleteStreamError,
    InlineDataDelta,
    InlineDataDone,
    InlineThinkingDelta,
    InlineThinkingDone,
    InvalidMessageError,
    MalformedEventError,
    MMSPError,
    PromptCaching,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamError,
    ResponseFormat,
    RoutingError,
    SpeakerConfig,
    StreamLimitError,
    StreamProtocolError,
    StreamTimeoutError,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ThinkingLevel,
    ToolCallArgumentParseError,
    ToolCallDelta,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UnknownEventError,
    UnsupportedContentError,
    UnsupportedOperationError,
    UnsupportedParameterError,
    UpstreamError,
    UsageMetadata,
    WireFormatError,
    concat_uni_events_to_uni_message,
    normalize_legacy_messages,
    to_wire,
)
from mmsp_core.lazy import on_first_use

from .abort import AbortSignal

if TYPE_CHECKING:
    from adapters import list_supported_models

    from ._telemetry import Telemetry
    from ._transport import fast_http_client
    from .client import AutoLLMClient
    from .driver import Timeouts, open_stream
    from .remote_images import RemoteImages

#: The names loaded on first use, each with the module that defines it (module doc).
_ON_FIRST_USE: Final = {
    "AutoLLMClient": "mmsp_io.client",
    "Timeouts": "mmsp_io.driver",
    "open_stream": "mmsp_io.driver",
    "RemoteImages": "mmsp_io.remote_images",
    "Telemetry": "mmsp_io._telemetry",
    "fast_http_client": "mmsp_io._transport",
    "list_supported_models": "adapters",
}

__all__ = [
    "AbortSignal",
    "AbortedError",
    "ApiKeyRequiredError",
    "AutoLLMClient",
    "ConcurrentCallError",
    "EmbeddingConfig",
    "EmbeddingDelta",
    "EmbeddingDone",
    "EmptyResponseError",
    "FinishReason",
    "ImageConfig",
    "ImageUrlDone",
    "IncompleteStreamError",
    "InlineDataDelta",
    "InlineDataDone",
    "InlineThinkingDelta",
    "InlineThinkingDone",
    "InvalidMessageError",
    "MMSPError",
    "MalformedEventError",
    "PromptCaching",
    "ProviderConnectionError",
    "ProviderHTTPError",
    "ProviderStreamError",
    "RemoteImages",
    "ResponseFormat",
    "RoutingError",
    "SpeakerConfig",
    "StreamLimitError",
    "StreamProtocolError",
    "StreamTimeoutError",
    "Telemetry",
    "TextDelta",
    "TextDone",
    "ThinkingDelta",
    "ThinkingDone",
    "ThinkingLevel",
    "Timeouts",
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
    "fast_http_client",
    "list_supported_models",
    "normalize_legacy_messages",
    "open_stream",
    "to_wire",
]


__getattr__, __dir__ = on_first_use(globals(), _ON_FIRST_USE, __all__)
