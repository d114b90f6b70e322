"""The wire protocols this package speaks: one line per protocol package (08 D63).

Adding a protocol means writing its package (ending in ``PROTOCOL = WireProtocol(...)``), adding
it here, and adding a registry row per client type that speaks it (``adapters._rows``);
nothing else dispatches on protocol names. A protocol from outside the library uses
``adapters.register`` instead.
"""

from __future__ import annotations

from . import (
    _registry,
    anthropic_messages,
    google_embedding,
    google_genai,
    google_interactions,
    mmsp,
    openai_chat,
    openai_embedding,
    openai_responses,
)

for _package in (
    anthropic_messages,
    openai_chat,
    openai_responses,
    openai_embedding,
    google_genai,
    google_embedding,
    google_interactions,
    mmsp,
):
    _registry.register(_package.PROTOCOL)
_registry.register(anthropic_messages.BEDROCK)  # a framing variant (08 D72)
