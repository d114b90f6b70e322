"""Per-client data of the generateContent protocol (08 D63): one profile per client type.

One client type speaks generateContent, ``google-genai``, on the Gemini API or on Vertex AI
(08 D72); what a request carries is the same for every Gemini model class and is decided from
the model id (``thinking``), not from the client. The profile holds what an endpoint of the
protocol chooses: the API version in the path (04 §4, 08 D12) and, on Vertex AI, the project
the path names (``vertex``: known once the credentials are read, ``adapters.on_vertex``).
The machine reads none of it: one machine serves every client (08 D32).
"""

from __future__ import annotations

from typing import Final, final

import attrs

__all__ = ["API_VERSION", "GEMINI_API", "VERTEX_API_VERSION", "GenAIProfile", "vertex"]

#: The Gemini API version the pinned google-genai SDK speaks by default (04 §4, 08 D12).
API_VERSION: Final = "v1"
#: The Vertex AI API version the pinned google-genai SDK speaks by default (04 §4, 08 D72).
VERTEX_API_VERSION: Final = "v1beta1"


@final
@attrs.frozen
class GenAIProfile:
    """What differs between the clients of the generateContent protocol."""

    #: The path's API version: ``POST /<version>/models/{model}:streamGenerateContent``.
    api_version: str = API_VERSION
    #: On Vertex AI, the Google Cloud project: the path is then
    #: ``/<version>/projects/<project>/locations/<location>/publishers/google/models/...``.
    vertex_project: str | None = None
    #: On Vertex AI, the location: ``global``, or a regional host's region.
    vertex_location: str = "global"


#: google-genai on the Gemini API (the protocol name as a decode source too).
GEMINI_API: Final = GenAIProfile()


def vertex(project: str, location: str = "global") -> GenAIProfile:
    """google-genai's profile on Vertex AI for ``project`` in ``location`` (04 §4, 08 D72)."""
    return GenAIProfile(VERTEX_API_VERSION, project, location)
