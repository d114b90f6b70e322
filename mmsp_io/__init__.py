"""mmsp_io: the I/O layer of MMSP over anyio and httpx, under asyncio and trio alike.

Most users import only this package (08 D1): ``AutoLLMClient`` streams any supported model,
``Timeouts`` and ``AbortSignal`` control a call, ``open_stream`` runs any pipeline over an
``httpx.AsyncClient``, and the values and errors a client user meets are re-exported from
``mmsp_core`` and ``adapters``.
"""

from adapters import list_supported_models
from mmsp_core import (
    AbortedError,
    ApiKeyRequiredError,
    ConcurrentCallError,
    EmptyResponseError,
    FinishReason,
    IncompleteStreamError,
    InvalidMessageError,
    MalformedEventError,
    MMSPError,
    PromptCaching,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamError,
    RoutingError,
    StreamLimitError,
    StreamProtocolError,
    StreamTimeoutError,
    ThinkingLevel,
    ToolCallArgumentParseError,
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
)

from .abort import AbortSignal
from .client import AutoLLMClient
from .driver import Timeouts, open_stream

__all__ = [
    "AbortSignal",
    "AbortedError",
    "ApiKeyRequiredError",
    "AutoLLMClient",
    "ConcurrentCallError",
    "EmptyResponseError",
    "FinishReason",
    "IncompleteStreamError",
    "InvalidMessageError",
    "MMSPError",
    "MalformedEventError",
    "PromptCaching",
    "ProviderConnectionError",
    "ProviderHTTPError",
    "ProviderStreamError",
    "RoutingError",
    "StreamLimitError",
    "StreamProtocolError",
    "StreamTimeoutError",
    "ThinkingLevel",
    "Timeouts",
    "ToolCallArgumentParseError",
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
    "list_supported_models",
    "normalize_legacy_messages",
    "open_stream",
]
