"""The wire protocols this package speaks: one line per protocol module.

Adding a protocol means writing its module (ending in ``PROTOCOL = WireProtocol(...)``) and
adding it here; nothing else dispatches on protocol names.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from . import anthropic_messages, openai_chat, openai_responses
from ._spec import WireProtocol

_MODULES: Final[tuple[WireProtocol, ...]] = (
    anthropic_messages.PROTOCOL,
    openai_chat.PROTOCOL,
    openai_responses.PROTOCOL,
)

PROTOCOLS: Final[Mapping[str, WireProtocol]] = MappingProxyType({p.name: p for p in _MODULES})
