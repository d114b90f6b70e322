"""The internal record each wire-protocol module exports, and the ``Machine`` protocol.

A wire-protocol module (``anthropic_messages.py``, ``openai_chat.py``, ...) ends with one
``PROTOCOL = WireProtocol(...)`` constant; ``adapters._protocols`` lists those modules, so a new
protocol is a new module plus one line there, and nothing else dispatches on protocol names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, final

import attrs

from mmsp_core.model import DoneItem, FinishReason, UniConfig, UniMessage, UsageMetadata
from mmsp_core.pipeline import Machine
from mmsp_core.request import HTTPRequest

__all__ = ["BuildRequest", "CheckConfig", "Machine", "NewMachine", "Render", "WireProtocol"]


class NewMachine(Protocol):
    """Build a fresh machine for one response.

    ``client`` is the client type (or the protocol name when decoding without one); it names
    the source in errors and selects per-client machine options (MiniMax whole calls, 08 D32).
    ``base_url`` only feeds the OpenRouter usage fix (spec 06 §7).
    """

    def __call__(self, client: str, *, strict: bool, base_url: str | None) -> Machine: ...


class BuildRequest(Protocol):
    """Build the HTTP request for ``client`` (a client type of this protocol)."""

    def __call__(
        self, client: str, model: str, messages: Sequence[UniMessage], config: UniConfig
    ) -> HTTPRequest: ...


class CheckConfig(Protocol):
    """Raise what ``BuildRequest`` would raise for the config alone (08 D37)."""

    def __call__(self, client: str, model: str, config: UniConfig) -> None: ...


class Render(Protocol):
    """Write the body a real server of this protocol would send for these done items (D49)."""

    def __call__(
        self,
        items: Sequence[DoneItem],
        usage: UsageMetadata,
        finish_reason: FinishReason,
        *,
        model: str,
        fragment_size: int | None,
    ) -> bytes: ...


@final
@attrs.frozen
class WireProtocol:
    """Everything the public ``adapters`` functions need from one wire protocol."""

    #: The protocol name used as a ``decode`` source: ``"ant-messages"``, ``"openai-chat"``, ...
    name: str
    new_machine: NewMachine
    build_request: BuildRequest
    check_config: CheckConfig
    render: Render
    #: ``True`` when the response body is an event stream; ``False`` for one JSON body.
    event_stream: bool = True
