"""The wire protocols this package speaks: one line per protocol package (08 D63).

Adding a protocol means writing its package (ending in ``PROTOCOL = WireProtocol(...)``), adding
it here, and adding a registry row per client type that speaks it (``adapters.clients``);
nothing else dispatches on protocol names. A protocol from outside the library uses
``adapters.register`` instead.
"""

from __future__ import annotations

from . import (
    _registry,
    anthropic_messages,
    google_genai,
    mmsp,
    openai_chat,
    openai_responses,
)

for _package in (
    anthropic_messages,
    openai_chat,
    openai_responses,
    google_genai,
    mmsp,
):
    _registry.register(_package.PROTOCOL)
