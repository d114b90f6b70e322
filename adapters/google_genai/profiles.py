"""Per-client data of the generateContent protocol (08 D63): one profile per client type.

One client type speaks generateContent today, ``google-genai`` on the Gemini API; what a
request carries is the same for every Gemini model class and is decided from the model id
(``thinking``), not from the client. The profile holds what an endpoint of the protocol
chooses: the API version in the path (04 §4, 08 D12; Vertex, out of scope, would use
``v1beta1``). The machine reads none of it: one machine serves every client (08 D32).
"""

from __future__ import annotations

from typing import Final, final

import attrs

__all__ = ["API_VERSION", "GEMINI_API", "GenAIProfile"]

#: The Gemini API version the pinned google-genai SDK speaks by default (04 §4, 08 D12).
API_VERSION: Final = "v1"


@final
@attrs.frozen
class GenAIProfile:
    """What differs between the clients of the generateContent protocol."""

    #: The path's API version: ``POST /<version>/models/{model}:streamGenerateContent``.
    api_version: str = API_VERSION


#: google-genai on the Gemini API (the protocol name as a decode source too).
GEMINI_API: Final = GenAIProfile()
