"""Per-client data of the Gemini Interactions protocol (08 D63): one profile per client type.

Only ``google-official`` speaks Interactions, so the profile holds little: the vendor the error
details name. The model-dependent rules (thinking levels per generation, the TTS and image
model classes, 05 §1, §2.3) are Google's and shared with generateContent; they are read from
the model id by the request builder, never from a client name.
"""

from __future__ import annotations

from typing import Final, final

import attrs

__all__ = ["OFFICIAL", "InteractionsProfile"]


@final
@attrs.frozen
class InteractionsProfile:
    """What a client of the Interactions protocol may change."""

    #: The vendor as the error details name it ("Gemini takes no temperature here").
    vendor: str


#: google-official: Google's own Gemini API (spec 04 §1).
OFFICIAL: Final = InteractionsProfile(vendor="Gemini")
